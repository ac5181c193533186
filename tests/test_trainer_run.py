"""run_fn for real on the shared run's examples and Transform graph, one fresh process per run:
strategies (default, one device, mirrored over 2 logical CPUs, multi-worker over two local
processes), precision policies, and kill-and-resume."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tfxline.pipeline.factory import trainer_custom_config
from tfxline.pipeline.config.load import load_config

pytestmark = pytest.mark.e2e
HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trainer_harness.py")


@pytest.fixture(scope="module")
def transform_output(pipeline_run):
    cfg, summary, _ = pipeline_run
    # The Trainer's inputs: ExampleGen's raw examples and the Transform graph it runs on them.
    return {"graph": summary.component("Transform").outputs["transform_graph"][0],
            "examples": summary.component("CsvExampleGen").outputs["examples"][0], "cfg": cfg}


def fn_args(t, out_dir, overrides=(), steps=60):
    cfg = load_config(overrides=[f"output_root={t['cfg'].output_root}", "training.epochs=3",
                                 "training.batch_size=64", *overrides])
    return {
        "train_files": [os.path.join(t["examples"], "Split-train", "*")],
        "eval_files": [os.path.join(t["examples"], f"Split-{t['cfg'].data.trainer_eval_split}", "*")],
        "transform_output": t["graph"],
        "examples_uri": t["examples"],
        "serving_model_dir": os.path.join(out_dir, "Trainer", "model", "1", "Format-Serving"),
        "model_run_dir": os.path.join(out_dir, "Trainer", "model_run", "1"),
        "train_steps": steps, "eval_steps": 5,
        "custom_config": trainer_custom_config(cfg),
    }


def start(args, tmp_path, name, env=None, logical_cpus=1):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(dict(args, logical_cpus=logical_cpus)))
    log = open(tmp_path / f"{name}.log", "w")
    return subprocess.Popen([sys.executable, HARNESS, str(path)], stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, **(env or {})})


def finish(proc, tmp_path, name, timeout=300):
    assert proc.wait(timeout=timeout) == 0, (tmp_path / f"{name}.log").read_text()[-3000:]


def run_info(args):
    with open(os.path.join(args["model_run_dir"], "training_run.json")) as f:
        return json.load(f)


def signature(model_dir):
    import tensorflow as tf

    sig = tf.saved_model.load(model_dir).signatures["serving_default"]
    inputs = {k: (v.dtype.name, v.shape.as_list()) for k, v in sig.structured_input_signature[1].items()}
    outputs = {k: (v.dtype.name, v.shape.as_list()) for k, v in sig.structured_outputs.items()}
    return inputs, outputs


@pytest.mark.parametrize("strategy, cpus, replicas, reader", [
    ("default", 1, 1, "tfrecord"), ("one_device", 1, 1, "tfxio"), ("mirrored", 2, 2, "tfxio")])
def test_strategies_train_and_export_the_same_signature(transform_output, tmp_path, strategy, cpus, replicas,
                                                        reader):
    """Each strategy, with both input readers (this project's tf.data and TFX's TFXIO accessor)."""
    args = fn_args(transform_output, str(tmp_path), [f"runtime.strategy={strategy}", f"training.reader={reader}"])
    finish(start(args, tmp_path, strategy, logical_cpus=cpus), tmp_path, strategy)
    info = run_info(args)
    assert info["replicas"] == replicas and info["reader"] == reader
    assert info["global_batch"] == 64 * replicas
    loss = info["history"]["loss"]
    assert loss[-1] < loss[0]
    inputs, outputs = signature(args["serving_model_dir"])
    assert inputs == {"examples": ("string", [None])}
    assert outputs == {"probabilities": ("float32", [None]), "predicted_class": ("int64", [None])}


def test_multi_worker_mirrored_over_two_local_processes(transform_output, tmp_path):
    import portpicker

    ports = [portpicker.pick_unused_port() for _ in range(2)]
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    procs, all_args = [], []
    for i in range(2):
        args = fn_args(transform_output, str(tmp_path / f"w{i}"), ["runtime.strategy=auto"], steps=30)
        all_args.append(args)
        tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})
        procs.append(start(args, tmp_path, f"worker{i}", env={"TF_CONFIG": tf_config}))
    for i, p in enumerate(procs):
        finish(p, tmp_path, f"worker{i}", timeout=400)
    chief = run_info(all_args[0])
    assert chief["strategy"] == "MultiWorkerMirroredStrategy" and chief["replicas"] == 2
    assert os.path.isfile(os.path.join(all_args[0]["serving_model_dir"], "saved_model.pb"))
    # Only the chief writes the model and the run info; worker 1 wrote to a temporary dir.
    assert not os.path.exists(all_args[1]["serving_model_dir"])
    assert not os.path.exists(os.path.join(all_args[1]["model_run_dir"], "training_run.json"))


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_precision_policies_export_float32(transform_output, tmp_path, policy):
    args = fn_args(transform_output, str(tmp_path), [f"runtime.precision={policy}"], steps=30)
    finish(start(args, tmp_path, policy), tmp_path, policy)
    assert run_info(args)["precision"] == policy
    _, outputs = signature(args["serving_model_dir"])
    assert outputs["probabilities"][0] == "float32"


def test_killed_trainer_resumes_the_same_training(transform_output, tmp_path):
    """SIGKILL after an epoch, start again (OneDeviceStrategy, what `auto` picks on one GPU): the
    resumed Trainer continues the same training
    (optimizer, dropout masks, input position, early stopping's counters and best weights),
    so it ends at the epoch, with the history and the model, the uninterrupted run gives."""
    from tfx.components.trainer.fn_args_utils import FnArgs

    from tfxline.trainer.resume import read_state
    from tfxline.trainer.run import backup_dir

    overrides = ["runtime.strategy=one_device", "training.epochs=8", "training.early_stopping_patience=2",
                 "model.dropout=0.2",
                 "model.learning_rate=0.01"]
    whole = fn_args(transform_output, str(tmp_path / "whole"), overrides, steps=1600)
    args = fn_args(transform_output, str(tmp_path / "killed"), overrides, steps=1600)
    uninterrupted = start(whole, tmp_path, "whole")
    backup = backup_dir(FnArgs(**{k: v for k, v in args.items() if k != "examples_uri"}))
    proc = start(args, tmp_path, "killed")
    deadline = time.time() + 240
    while time.time() < deadline and read_state(backup).get("epoch", 0) < 2:
        assert proc.poll() is None, (tmp_path / "killed.log").read_text()[-3000:]
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_at = read_state(backup)["epoch"]
    assert 2 <= killed_at < 8, "the kill came after the training had finished"
    finish(start(args, tmp_path, "resumed"), tmp_path, "resumed")
    finish(uninterrupted, tmp_path, "whole")
    resumed, expected = run_info(args), run_info(whole)
    assert resumed["resumed_at_epoch"] >= killed_at  # epochs already done were not repeated
    assert (resumed["epochs"], resumed["best_epoch"]) == (expected["epochs"], expected["best_epoch"])
    for key, values in expected["history"].items():
        np.testing.assert_allclose(resumed["history"][key], values, rtol=1e-4, err_msg=key)
    cfg = transform_output["cfg"]
    np.testing.assert_allclose(predictions(args["serving_model_dir"], cfg),
                               predictions(whole["serving_model_dir"], cfg), rtol=1e-4, atol=1e-6)
    assert not os.path.exists(backup)  # removed after the finished fit


def train_split_examples(pipeline_run):
    import tensorflow_data_validation as tfdv

    stats = pipeline_run[1].component("StatisticsGen").outputs["statistics"][0]
    return tfdv.load_stats_binary(os.path.join(stats, "Split-train", "FeatureStats.pb")).datasets[0].num_examples


def test_epochs_mode_passes_over_the_data_with_accumulation_and_xla(transform_output, pipeline_run, tmp_path):
    """training.mode=epochs: the length follows the data (full passes), not a step budget;
    with 2 accumulated micro-batches of 64 and the step XLA-compiled."""
    args = fn_args(transform_output, str(tmp_path), [
        "training.mode=epochs", "training.epochs=2", "training.early_stopping_patience=0",
        "training.gradient_accumulation_steps=2", "runtime.jit_compile=true"], steps=None)
    finish(start(args, tmp_path, "epochs"), tmp_path, "epochs")
    info = run_info(args)
    examples = train_split_examples(pipeline_run)
    assert info["mode"] == "epochs" and info["train_examples"] == examples
    assert info["global_batch"] == 128 and info["gradient_accumulation_steps"] == 2
    assert info["steps_per_epoch"] == -(-examples // 128)
    assert info["epochs"] == 2 and info["steps"] == 2 * info["steps_per_epoch"]
    assert info["jit_compile"] is True
    assert info["history"]["loss"][-1] < info["history"]["loss"][0]


def test_batch_scaling_trains_with_the_batch_and_learning_rate_the_data_allows(transform_output, pipeline_run,
                                                                              tmp_path):
    """training.batch_scaling=always on this CPU (auto grows the batch on GPUs and TPUs only):
    from a written batch of 1 the Trainer trains and validates with the grown batch, the
    square-root learning rate and the steps per epoch that batch gives."""
    from tfxline.trainer import batch

    examples = train_split_examples(pipeline_run)
    args = fn_args(transform_output, str(tmp_path), [
        "training.mode=epochs", "training.epochs=1", "training.batch_size=1", "training.batch_scaling=always",
        "training.early_stopping_patience=0"], steps=None)
    finish(start(args, tmp_path, "grown"), tmp_path, "grown")
    info = run_info(args)
    lr = load_config().model.learning_rate
    expected = batch.plan(1, lr, "always", "cpu", examples)
    assert expected.factor >= 2 and examples // expected.per_replica >= batch.MIN_STEPS_PER_EPOCH
    assert info["configured_batch_size"] == 1
    assert info["batch_size"] == info["global_batch"] == expected.per_replica
    assert info["steps_per_epoch"] == -(-examples // expected.per_replica)
    assert info["learning_rate"] == pytest.approx(lr * expected.factor ** 0.5)
    assert info["history"]["val_auc"][0] > 0.5


def test_same_seed_trains_the_same_model(transform_output, tmp_path):
    """Two processes, same inputs and seed: the same losses and the same predictions."""
    runs = []
    for name in ("seeded_a", "seeded_b"):
        args = fn_args(transform_output, str(tmp_path / name), ["training.seed=7"], steps=45)
        runs.append((args, start(args, tmp_path, name)))
    for (args, proc), name in zip(runs, ("seeded_a", "seeded_b")):
        finish(proc, tmp_path, name)
    assert run_info(runs[0][0])["early_stopping"] == "val_auc, patience 2"
    a, b = (run_info(args)["history"] for args, _ in runs)
    assert a["loss"] == b["loss"] and a["val_auc"] == b["val_auc"]
    cfg = transform_output["cfg"]
    assert predictions(runs[0][0]["serving_model_dir"], cfg) == predictions(runs[1][0]["serving_model_dir"], cfg)


def predictions(model_dir, cfg):
    import itertools

    from tfxline.pipeline.data import source as data_source
    from tfxline.local import predict

    rows = list(itertools.islice(predict.read_csv_rows(data_source.default_data_path()), 20))
    schema = data_source.load_schema(data_source.schema_path(cfg.data.schema))
    values, decided = predict.predict_rows(predict.load_serving_fn(model_dir), rows, cfg, schema)
    return values.tolist(), decided.tolist()


@pytest.mark.parametrize("split, key", [("train", "train_files"), ("validation", "eval_files")])
def test_an_empty_split_stops_the_trainer_with_its_name(transform_output, tmp_path, split, key):
    """Keras trains on without validation data, and so without early stopping, and without a
    word: the Trainer refuses an empty split and names it (the pipeline's AnomaliesGate stops
    such data earlier; this guards run_fn used on its own)."""
    import gzip

    empty = tmp_path / f"Split-{split}"
    empty.mkdir()
    gzip.open(empty / "data_tfrecord-00000-of-00001.gz", "wb").close()  # a valid file of no records
    args = dict(fn_args(transform_output, str(tmp_path / split)), **{key: [str(empty / "*")]})
    proc = start(args, tmp_path, split)
    assert proc.wait(timeout=300) != 0
    log = (tmp_path / f"{split}.log").read_text()
    assert "EmptySplitError" in log and "hold no rows" in log and str(empty) in log
    assert not os.path.exists(args["serving_model_dir"])


def test_validation_of_one_class_early_stops_on_the_loss(transform_output, tmp_path):
    """Validation rows of one class: Keras' AUC reads 0 every epoch, and early stopping on it
    would keep epoch 1's weights whatever came after. The Trainer watches val_loss instead and
    says why (training_run.json, the log)."""
    import tensorflow as tf
    import tensorflow_transform as tft

    from tfxline.trainer import data

    label = transform_output["cfg"].features.label.name
    split = transform_output["cfg"].data.trainer_eval_split
    files = tf.io.gfile.glob(os.path.join(transform_output["examples"], f"Split-{split}", "*"))
    records = [r.numpy() for r in tf.data.TFRecordDataset(files, compression_type="GZIP")]
    # The label is the Transform graph's (big_tipper from tips and fare), as the Trainer computes it.
    labels = data.transformed_decoder(tft.TFTransformOutput(transform_output["graph"]))(tf.constant(records))[label]
    negatives = [r for r, y in zip(records, tf.reshape(labels, [-1]).numpy()) if y == 0]
    folder = tmp_path / "Split-validation"
    folder.mkdir()
    with tf.io.TFRecordWriter(str(folder / "negatives.gz"), options="GZIP") as w:
        for record in negatives[:200]:
            w.write(record)
    args = dict(fn_args(transform_output, str(tmp_path / "one_class")), eval_files=[str(folder / "*")])
    finish(start(args, tmp_path, "one_class"), tmp_path, "one_class")
    info = run_info(args)
    assert info["early_stopping"] == ("val_loss, patience 2 (the 200 validation rows hold only label 0, "
                                      "where AUC is undefined; more validation rows (data.validation_buckets) "
                                      "bring back val_auc)")
    assert set(info["history"]["val_auc"]) == {0.0} and len(set(info["history"]["val_loss"])) > 1
    assert "early stopping watches val_loss" in (tmp_path / "one_class.log").read_text()
