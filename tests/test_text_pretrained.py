"""A pretrained text encoder (``model.text_encoder: pretrained``, trainer/text_pretrained.py): a
SavedModel folder the config names, never a URL; frozen unless fine-tuned; read on the raw text the
Transform passes through. One pipeline run of its own (the run is what is checked: its Transform
passes the text through as a string, which the text scenario's run, tests/test_text_e2e.py, does
not), with an encoder this test saves itself (tests/text_encoder.py)."""
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import tfxline
from tests.text_data import write_reviews
from tests.text_encoder import save_encoder

NNLM = "https://tfhub.dev/google/nnlm-en-dim50/2"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A review table's project as init writes it, and an encoder saved over its reviews."""
    from tfxline.cli import main as cli

    root = tmp_path_factory.mktemp("pretrained")
    data = root / "reviews.csv"
    write_reviews(str(data))
    assert cli.main(["init", "--data", str(data), "--label", "label", "--positive", "pos", "--dir",
                     str(root / "p")]) == 0
    return root, save_encoder(str(root / "encoder"), str(data), "review")


@pytest.mark.parametrize("overrides,message", [
    (["model.text_encoder=pretrained"], "text_saved_model: ''; text_encoder: pretrained needs the folder of a TF2 "
                                        "SavedModel that maps a batch of strings"),
    (["model.text_encoder=pretrained", f"model.text_saved_model={NNLM}"],
     f"{NNLM} is a URL; a run never downloads: fetch it once where there is internet"),
    (["model.text_saved_model=ENCODER"], "is read by text_encoder: pretrained only \\(text_encoder is bag\\)"),
    (["model.text_fine_tune=true"], "text_fine_tune: True; fine-tunes a text_encoder: pretrained only"),
    (["model.text_encoder=pretrained", "model.text_saved_model=ENCODER", "runtime.jit_compile=true"],
     "runtime.jit_compile: true: a pretrained text encoder tokenizes the raw text with string ops"),
])
def test_a_pretrained_encoder_is_a_folder_the_run_reads_never_a_url(project, overrides, message):
    from tfxline.pipeline.config import ConfigError
    from tfxline.pipeline.config.load import load_config

    root, encoder = project
    with pytest.raises(ConfigError, match=message):
        load_config(str(root / "p" / "config.yaml"), [o.replace("ENCODER", encoder) for o in overrides])


def test_a_run_refuses_a_folder_without_a_saved_model_before_it_starts(project):
    root, _ = project
    done = tfxline("run", "--config", str(root / "p" / "config.yaml"), "--set", "model.text_encoder=pretrained",
                   "--set", f"model.text_saved_model={root / 'nowhere'}")
    assert done.returncode == 2 and f"model.text_saved_model: {root / 'nowhere'} does not exist" in done.stderr, \
        done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "Unable to register" not in done.stderr, done.stderr[-2000:]
    assert not (root / "p" / "output" / "pipeline_root").exists()  # refused before anything ran


class TakesIds(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.int64)])
    def __call__(self, ids):
        return tf.ones([tf.shape(ids)[0], 4])


class GivesTokens(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def __call__(self, texts):
        return tf.ones([tf.shape(texts)[0], 3, 4])  # a vector per token, not pooled


class NotCallable(tf.Module):
    def __init__(self):
        super().__init__()
        self.table = tf.Variable(tf.ones([3, 4]))


@pytest.mark.parametrize("saved,says", [
    (TakesIds, ": its __call__ does not take a [batch] tf.string tensor ("),
    (GivesTokens, ": its __call__ gave float32 [2, 3, 4] for 2 documents; save an encoder that returns [batch, dim]"),
    (NotCallable, " has no __call__; save the encoder with tf.saved_model.save(obj, path), obj callable"),
    (None, " is the SavedModel's file; point at its folder, "),
])
def test_the_preflight_calls_the_encoder_once_and_names_what_is_wrong(project, tmp_path, saved, says):
    """What the Trainer would fail on minutes in (a traceback after the data components ran), said
    before the run: the encoder loaded and called on two documents (local/preflight.py)."""
    from tfxline.local.preflight import check_encoder
    from tfxline.pipeline.data.source import DataError

    _, encoder = project
    path = os.path.join(encoder, "saved_model.pb")
    if saved is not None:
        path = str(tmp_path / saved.__name__)
        tf.saved_model.save(saved(), path)
    with pytest.raises(DataError) as refused:
        check_encoder(path)
    assert str(refused.value).startswith(f"model.text_saved_model: {path}") and says in str(refused.value)
    check_encoder(encoder)  # the encoder the run below trains with


def test_the_transform_passes_the_text_through_for_it_and_only_for_it(project):
    from tfxline.pipeline.config.load import load_config
    from tfxline.pipeline.factory import trainer_custom_config, transform_component_config

    root, encoder = project
    config = str(root / "p" / "config.yaml")
    cfg = load_config(config, ["model.text_encoder=pretrained", f"model.text_saved_model={encoder}"])
    assert transform_component_config(cfg)["raw_text"] is True
    model = trainer_custom_config(cfg)["model"]
    assert (model["text_encoder"], model["text_saved_model"], model["text_fine_tune"]) == ("pretrained", encoder, False)
    assert "raw_text" not in transform_component_config(load_config(config))  # the bag's Transform as before
    from tfxline.kubeflow import compile as kfp_compile
    from tfxline.kubeflow import spec as kfp_spec

    job = kfp_compile.compile_pipeline(cfg, image="example/tfxline:test", pipeline_root="gs://bucket/root",
                                       output=str(root / "pipeline.json"))
    kfp_spec.check_open_source_kfp(job)
    compiled = json.dumps(job)
    assert "raw_text" in compiled and encoder in compiled  # the Transform's and the Trainer's settings
    assert "raw_text" not in transform_component_config(load_config("taxi", ["model.text_encoder=pretrained",
                                                                            f"model.text_saved_model={encoder}"]))


@pytest.mark.parametrize("fine_tune", [False, True])
def test_the_encoder_is_frozen_unless_fine_tuned(project, fine_tune):
    from tfxline.trainer.model import Head, ModelInput, build_model

    _, encoder = project
    inputs = [ModelInput("review_xf", raw_text=True), ModelInput("helpful_xf")]
    model = build_model(inputs, Head("binary"), hidden_units=(4,), text_encoder="pretrained",
                        text_saved_model=encoder, text_fine_tune=fine_tune)
    trainable = {v.name for v in model.trainable_variables}
    assert any("embeddings" in n for n in trainable) == fine_tune
    assert any("embeddings" in v.name for v in model.non_trainable_variables) != fine_tune
    out = model({"review_xf": tf.constant(["not good at all", ""]), "helpful_xf": tf.constant([1.0, 0.0])})
    assert out.shape == (2, 1) and out.dtype == tf.float32 and np.all(np.isfinite(out.numpy()))
    with pytest.raises(ValueError, match="text_encoder bag with the Transform's raw text"):
        build_model(inputs, Head("binary"), hidden_units=(4,), text_encoder="bag")


@pytest.mark.e2e
def test_a_fine_tuned_encoder_is_trained_pushed_and_served_without_its_folder(project, tmp_path):
    """init's project with the encoder set: blessed and pushed; the pushed model carries the
    encoder, its variables and its vocabulary asset, so predict answers in a fresh process after
    the encoder's folder is gone."""
    root, encoder = project
    config = str(root / "p" / "config.yaml")
    settings = ["--set", "model.text_encoder=pretrained", "--set", f"model.text_saved_model={encoder}",
                "--set", "model.text_fine_tune=true"]
    run = tfxline("run", "--config", config, *settings)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "blessing: BLESSED" in run.stdout and "pushed to: " in run.stdout, run.stdout
    # the console: no TensorFlow start-up lines (the pre-flight reads the folder without TensorFlow), no
    # oneDNN notice about the encoder's int64 lookup (serving/native_stderr.py)
    assert "Unable to register" not in run.stderr and "oneDNN" not in run.stderr, run.stderr[-2000:]
    eval_line = next(x for x in run.stdout.splitlines() if x.strip().startswith("eval (overall):"))
    # its n-grams' mean, fine-tuned: a bag with no per-n-gram weight (the bag encoder reads 0.75, TF-IDF + LR 0.82)
    assert float(eval_line.split("auc ", 1)[1].split(",")[0]) >= 0.65, eval_line
    runs = sorted((root / "p" / "output" / "pipeline_root" / "Trainer" / "model_run").iterdir(), key=os.path.getmtime)
    info = json.loads((runs[-1] / "training_run.json").read_text())
    assert ["review_xf", None] in [mi[:2] for mi in info["model_inputs"]] and info["jit_compile"] is False
    report = next(x for x in run.stdout.splitlines() if "report: " in x).split("report: ", 1)[1].strip()
    assert f"pretrained, from {encoder} (fine-tuned), on the raw text" in open(report, encoding="utf-8").read()
    pushed = next(x for x in run.stdout.splitlines() if "pushed to: " in x).split("pushed to: ", 1)[1].split(" (")[0]
    assets = [n for _, _, names in os.walk(os.path.join(pushed, "assets")) for n in names]
    assert any(n.endswith("vocabulary.txt") for n in assets), assets  # the encoder's, copied with the model
    shutil.rmtree(encoder)
    rows = tmp_path / "rows.csv"
    write_reviews(str(rows), rows=20, seed=3, with_label=False)
    predictions = tmp_path / "predictions.jsonl"
    done = tfxline("predict", "--config", config, *settings, "--input", str(rows), "--predictions",
                   str(predictions))
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(x) for x in predictions.read_text().splitlines()]
    assert len(lines) == 20 and all(0.0 <= x["probability"] <= 1.0 for x in lines)
