"""A run's tuning, read back from MLMD and the Tuner's files: the record of the search
(tuning_run.json, trainer/tuning_settings.tuning_record) when its Tuner ran or was served from
cache, or the saved best hyperparameters its Importer fed the Trainer instead (tuning.reuse),
with the run whose Tuner chose them when the store knows it. The console (runs/console.py),
``tfxline runs`` (runs/history.py) and the report (runs/report/tuning.py) show what this reads."""
from __future__ import annotations

from typing import Any, Dict, Optional

from ml_metadata.proto import metadata_store_pb2

from tfxline.runs import store as store_lib
from tfxline.serving import storage

# the console, history and report name the Importer's node id through this module
from tfxline.trainer.tuning_settings import (
    BEST_FILE,
    REUSED_ID,  # noqa: F401
    TUNER_ID,
    TUNING_RUN_FILE,
    best_values,
)

TUNED, REUSED = "tuned", "reused"  # how a run's Trainer got its hyperparameters


def tuning_of(store, node_id: str, outputs: Dict[str, list]) -> Dict[str, Any]:
    """What the summary holds of a Tuner's or a ReusedHyperparameters Importer's execution
    (``outputs``: its MLMD output artifacts by key): ``how`` (tuned | reused), ``record`` (the
    search's tuning_run.json, {} when it wrote none: it failed, or it is gone), ``hyperparameters``
    (the best_hyperparameters.txt the Trainer read, '' when none), ``values`` (the chosen values);
    a reused run's also ``tuned_in``: the run whose Tuner wrote them ('' when none did: a file)."""
    if node_id == TUNER_ID:
        best = outputs.get("best_hyperparameters") or []
        results = outputs.get("tuner_results") or []
        path = best_file(best[0].uri) if best else ""
        return {"how": TUNED, "record": read_record(results[0].uri) if results else {},
                "hyperparameters": path, "values": read_values(path)}
    imported = outputs.get("result") or []
    path = best_file(imported[0].uri) if imported else ""
    tuner = tuner_execution(store, imported[0].uri) if imported else None
    record = {}
    if tuner is not None:
        results = store_lib.execution_artifacts(store, tuner.id).get("tuner_results") or []
        record = read_record(results[0].uri) if results else {}
    return {"how": REUSED, "record": record, "hyperparameters": path, "values": read_values(path),
            "tuned_in": store_lib.run_id_of(store, tuner.id) if tuner is not None else ""}


def best_file(uri: str) -> str:
    """The best_hyperparameters.txt of a HyperParameters artifact (a folder holding it)."""
    return uri if uri.endswith(BEST_FILE) else storage.join(uri, BEST_FILE)


def read_record(tuner_results_uri: str) -> Dict[str, Any]:
    """The Tuner's tuning_run.json beside TFX's tuner_results.json; {} when it is missing or unreadable."""
    return _read_object(storage.join(tuner_results_uri, TUNING_RUN_FILE))


def read_values(path: str) -> Dict[str, Any]:
    """The values of a best_hyperparameters.txt (keras-tuner's HyperParameters config); {} when
    missing or unreadable."""
    return best_values(_read_object(path)) if path else {}


def _read_object(path: str) -> Dict[str, Any]:
    try:
        data = storage.read_json(path) if storage.isfile(path) else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def tuner_execution(store, uri: str) -> Optional[metadata_store_pb2.Execution]:
    """The completed Tuner execution that wrote the HyperParameters at ``uri`` (an Importer of
    `latest` imports the Tuner's own folder), None when no Tuner did (a saved file's copy)."""
    ids = [a.id for a in store.get_artifacts_by_uri(uri)]
    producers = sorted({e.execution_id for e in store.get_events_by_artifact_ids(ids)
                        if e.type in store_lib.OUTPUT_EVENTS}) if ids else []
    for execution in sorted(store.get_executions_by_id(producers), key=lambda e: e.id) if producers else ():
        if (execution.last_known_state == metadata_store_pb2.Execution.COMPLETE
                and store_lib.node_id_of(store, execution) == TUNER_ID):
            return execution
    return None
