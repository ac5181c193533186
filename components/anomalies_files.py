"""Where the data gates' anomalies lie inside their artifacts: TFX's file name for a split's
anomalies (ExampleValidator writes it and the AnomaliesGate reads it; the DriftGate writes its drift
measurements under the same name) and the one split the DriftGate compares. The gates and the run
metrics that read the DriftGate's output (components/metric_samples.py) all import it from here."""
from __future__ import annotations

from tfxline.serving import storage

ANOMALIES_FILE = "SchemaDiff.pb"
DRIFT_SPLIT = "train"  # the DriftGate compares the train splits' statistics


def drift_anomalies_path(drift_anomalies_uri: str) -> str:
    """The DriftGate's anomalies file in its output at ``drift_anomalies_uri`` (a local path or a URL)."""
    return storage.join(drift_anomalies_uri, f"Split-{DRIFT_SPLIT}", ANOMALIES_FILE)
