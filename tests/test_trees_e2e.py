"""A trees model end to end (issue #73): one `tfxline run` of the taxi slice with model.family:
trees (the binary task: the decision threshold and its class output), read by every test here. The
suite's other runs train the network, or auto, whose winner depends on the data (init's runs:
tests/test_init_e2e.py); this run is the one whose pushed model is known to be trees, for what
only a trees model can show: the serving graph's ops and a fresh process loading it with
TensorFlow and the decision-forest op library alone (TF Serving's build links the same ops:
trainer/trees_ops.py cites the rule). Its categorical columns are read as rates
(model.trees.encoding: rate), so the graph served here carries the rate tables too (auto's choice
between the two readings: tests/test_trees_rates.py)."""
import glob
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import tfxline, write_taxi_slice

pytestmark = pytest.mark.e2e

# A fresh interpreter: TensorFlow, the op library by its path, nothing of YDF or TF-DF's Python.
FRESH_PROCESS = r"""
import json, os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.framework import op_def_registry

model_dir, library, records = sys.argv[1], sys.argv[2], sys.argv[3]
saved = saved_model_pb2.SavedModel()
with open(os.path.join(model_dir, "saved_model.pb"), "rb") as f:
    saved.ParseFromString(f.read())
ops = set()
for graph in (mg.graph_def for mg in saved.meta_graphs):
    ops |= {n.op for n in graph.node}
    ops |= {n.op for fn in graph.library.function for n in fn.node_def}
unregistered = sorted(op for op in ops if op_def_registry.get(op) is None)
try:
    tf.saved_model.load(model_dir)
    loads_without = True
except Exception as e:
    loads_without = "Op type not registered" not in str(e)
tf.load_op_library(library)
serve = tf.saved_model.load(model_dir).signatures["serving_default"]
examples = [r.numpy() for r in tf.data.TFRecordDataset(records, compression_type="GZIP").take(64)]
out = serve(examples=tf.constant(examples))
print(json.dumps({"unregistered": unregistered, "loads_without": loads_without,
                  "probabilities": out["probabilities"].numpy().tolist(),
                  "predicted_class": out["predicted_class"].numpy().tolist(),
                  "modules": sorted(m for m in sys.modules
                                    if m.split(".")[0] in ("ydf", "ydf_tf", "tensorflow_decision_forests"))}))
"""


@pytest.fixture(scope="module")
def trees_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("trees")
    data = write_taxi_slice(root / "taxi.csv")
    run = tfxline("run", "--data", data, "--output", str(root / "out"), "--set", "model.family=trees",
                  "--set", "model.trees.encoding=rate")
    assert run.returncode == 0, run.stderr[-3000:]
    return root, data, run


def pushed_model(root):
    (version,) = glob.glob(str(root / "out" / "serving" / "taxi" / "[0-9]*"))
    return version


def test_a_trees_run_is_blessed_and_pushed_and_says_what_it_trained(trees_run):
    root, _, run = trees_run
    assert "blessing: BLESSED" in run.stdout and "pushed to:" in run.stdout
    line = next(x for x in run.stdout.splitlines() if x.startswith("  model: "))
    assert line.startswith("  model: trees: ") and " trees, trained in " in line
    assert "[INFO" not in run.stdout + run.stderr  # YDF's C++ log lines went to the run's log
    assert "tensorboard:" not in run.stdout  # no network trained: no TensorBoard logs to point at
    (record,) = glob.glob(str(root / "out" / "pipeline_root" / "Trainer" / "model_run" / "*" / "training_run.json"))
    info = json.load(open(record))
    assert info["family"]["chosen"] == "trees" and info["epochs"] == 0 and info["trees"]["trees"] >= 1
    assert info["trees"]["encoding"] == "rate" and info["trees"]["rated"]  # the taxi's categorical columns
    assert info["trees"]["importance"] and info["leans_on"]  # the forest's own and the permutation importance
    assert 0.0 < info["decision"]["threshold"] < 1.0  # chosen on validation, as for a network
    report = next(x for x in run.stdout.splitlines() if x.startswith("  report: ")).split(": ", 1)[1]
    html = open(report).read()
    assert "<h3>Model family</h3>" in html and "<h3>What the trees lean on</h3>" in html
    top_column = info["trees"]["importance"][0][0]
    assert f"<td>{top_column}</td>" in html


def test_the_pushed_trees_model_serves_in_a_fresh_process_with_tensorflow_and_the_op_library_only(trees_run):
    """TF Serving's model server is TensorFlow plus TF-DF's inference kernel_and_op (trainer/trees_ops.py
    cites the BUILD rule): the graph needs no op beyond those, and loads with nothing else."""
    from tfxline.trainer import decision, trees_ops

    root, _, _ = trees_run
    model = pushed_model(root)
    examples = root / "out" / "pipeline_root" / "CsvExampleGen" / "examples"
    records = sorted(glob.glob(str(examples / "*" / "Split-eval" / "*")))
    assert records
    done = subprocess.run([sys.executable, "-c", FRESH_PROCESS, model, trees_ops.library_path(), records[0]],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["unregistered"] and set(out["unregistered"]) <= trees_ops.SERVING_OPS, out["unregistered"]
    assert "SimpleMLInferenceOpWithHandle" in out["unregistered"]
    assert out["loads_without"] is False  # without the op library it cannot load: the test can fail
    assert out["modules"] == []  # neither YDF's nor TF-DF's Python was imported
    threshold = decision.read(model)["threshold"]
    assert len(out["probabilities"]) == 64 and all(0.0 <= p <= 1.0 for p in out["probabilities"])
    assert out["predicted_class"] == [int(p >= threshold) for p in out["probabilities"]]


def test_predict_and_runs_show_read_the_trees_model(trees_run, tmp_path):
    root, data, _ = trees_run
    rows = tmp_path / "rows.csv"
    with open(data) as src:
        rows.write_text("".join(src.readlines()[:21]))
    out = tfxline("predict", "--data", data, "--output", str(root / "out"), "--set", "model.family=trees",
                  "--input", str(rows), "--predictions", str(tmp_path / "p.csv"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("20 predictions from ") and "[INFO" not in out.stdout + out.stderr
    header = (tmp_path / "p.csv").read_text().splitlines()[0]
    assert header.endswith("probability,predicted_class")
    shown = tfxline("runs", "show", "latest", "--data", data, "--output", str(root / "out"),
                    "--set", "model.family=trees")
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "model: trees: " in shown.stdout
