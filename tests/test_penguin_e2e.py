"""The second dataset, by configuration only: pipeline/configs/penguin.yaml on the penguin
TFRecords shipped in tfx (multi-class, ImportExampleGen, epochs mode). Its own pipeline run,
because it is a different input format, task shape, head and gate; the data is 334 rows.

The run is a `tfxline run --config penguin` process, as a user starts it: TFT names its
vocabulary tables by analyzer position, so a second pipeline with other feature types in the
same Python process as the shared taxi run would collide with that run's tables."""
import glob
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from pipeline import data_source
from pipeline.config_loader import load_config
from pipeline.summary import collect_run

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def penguin_run(tmp_path_factory):
    output = str(tmp_path_factory.mktemp("penguin"))
    cfg = load_config("penguin", overrides=[f"output_root={output}"])
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", "--config", "penguin",
                           "--output", output], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return cfg, collect_run(cfg.metadata_path, cfg.name), proc.stdout


def test_penguin_pipeline_runs_blesses_and_pushes(penguin_run):
    cfg, summary, out = penguin_run
    states = {c.node_id: c.state for c in summary.components}
    assert states["ImportExampleGen"] == "complete" and "CsvExampleGen" not in states
    assert all(states[n] == "complete" for n in ("Transform", "Trainer", "Evaluator", "Pusher")), states
    assert summary.metrics["accuracy"] >= cfg.evaluation.min_accuracy
    assert summary.blessed is True and summary.pushed
    assert "2 TFRECORD file(s)" in out


def test_penguin_model_serves_class_probabilities_without_the_label(penguin_run):
    cfg, summary, _ = penguin_run
    model_dir = sorted(glob.glob(os.path.join(cfg.serving_dir, "*")))[-1]
    serve = tf.saved_model.load(model_dir).signatures["serving_default"]
    files = glob.glob(os.path.join(data_source.resolve_data_path(cfg.data.path), "Split-eval", "*"))
    raw = [r.numpy() for r in tf.data.TFRecordDataset(files, compression_type="GZIP").take(30)]
    labels, stripped = [], []
    for record in raw:  # what a client sends: the measurements, no species
        example = tf.train.Example.FromString(record)
        labels.append(example.features.feature["species"].int64_list.value[0])
        del example.features.feature["species"]
        stripped.append(example.SerializeToString())
    probabilities = serve(examples=tf.constant(stripped))["probabilities"].numpy()
    assert probabilities.shape == (30, 3) and probabilities.dtype == np.float32
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    # Classes are the label vocabulary (by frequency); map back through the Transform's
    # vocabulary file and check the predictions are mostly right.
    import tensorflow_transform as tft

    graph = summary.component("Transform").outputs["transform_graph"][0]
    from transforms.features import LABEL_VOCABULARY

    vocab = tft.TFTransformOutput(graph).vocabulary_by_name(LABEL_VOCABULARY)
    predicted = [int(vocab[i]) for i in probabilities.argmax(axis=1)]
    assert np.mean(np.array(predicted) == np.array(labels)) > 0.85
