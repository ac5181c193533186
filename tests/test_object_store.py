"""Our components on an object store, through TensorFlow's own gs:// file system against a GCS
on loopback (tests/gcs_server.py): a KFP pipeline root is gs://, s3:// or minio://
(kubeflow/pipelines backend/src/v2/config/env.go:130-153) and Vertex AI hands out gs:// URIs,
so the Pusher, the release, the baseline, the drift check and the run's metrics must work
there, where there is no os.path, no directory rename and no link."""
import json

import pytest

from tfxline.serving import push as sp
from tfxline.serving import release as sr
from tfxline.serving import storage

SETTINGS = sr.Settings(model_name="taxi", kserve_storage_uri="gs://models/taxi", batch_threads=2)


def test_the_store_is_tensorflows_own_gs_file_system(gcs):
    import tensorflow as tf

    root = gcs("probe")
    storage.write_text(f"{root}/a/b.txt", "x")
    assert tf.io.gfile.exists(f"{root}/a/b.txt") and storage.listdir(root) == ["a"]
    assert storage.isdir(f"{root}/a") and storage.isfile(f"{root}/a/b.txt") and not storage.isfile(f"{root}/a")
    assert not storage.renames_atomically(root) and not storage.links(root)


def test_a_push_to_gs_publishes_complete_versions_and_prunes(gcs, model_files):
    serving = gcs("serving")
    first = sp.push(model_files, serving, {"model_uri": "m1"}, keep_versions=2, now=100)
    sp.push(model_files, serving, {"model_uri": "m2"}, keep_versions=2, now=200)
    third = sp.push(model_files, serving, {"model_uri": "m3"}, keep_versions=2, now=300)
    assert first == 100 and third == 300 and sp.versions(serving) == [200, 300]
    assert storage.listdir(serving) == ["200", "300"]  # the staging copies deleted, 100 pruned whole
    assert storage.files(f"{serving}/300") == sorted(["push_metadata.json", "saved_model.pb", "variables/variables.index",
                                                      "variables/variables.data-00000-of-00001"])
    assert sp.read_metadata(serving, 300)["model_uri"] == "m3" and sp.find_pushed(serving, "m2") == 200
    assert storage.read_bytes(f"{serving}/300/variables/variables.data-00000-of-00001") == b"data" * 1000


def test_on_gs_saved_model_pb_is_the_last_file_in(gcs, model_files, monkeypatch):
    """No rename on an object store: the version is copied in with saved_model.pb last, so a
    server listing it early finds no saved_model.pb, never one without its variables."""
    order = []
    real = storage.copy_file
    monkeypatch.setattr(storage, "copy_file", lambda src, dst: (order.append(dst), real(src, dst)))
    serving = gcs("order")
    version = sp.push(model_files, serving, {}, keep_versions=2, now=100)
    published = [p[len(f"{serving}/{version}/"):] for p in order if p.startswith(f"{serving}/{version}/")]
    assert published[-2:] == ["push_metadata.json", "saved_model.pb"] and len(published) == 4


def test_the_release_on_gs_loads_then_labels_and_kserve_gets_files(gcs, model_files):
    serving = gcs("release")
    v1 = sp.push(model_files, serving, {"model_uri": "m1"}, keep_versions=5, now=100)
    sr.on_push(serving, v1, sr.STABLE, 10, SETTINGS)
    sr.settle(serving, SETTINGS)
    v2 = sp.push(model_files, serving, {"model_uri": "m2"}, keep_versions=5, now=200)
    release = sr.on_push(serving, v2, sr.CANARY, 10, SETTINGS)
    assert release.pending is not None and sr.serving_version(serving) == v1
    config = storage.read_text(f"{serving}/{sr.LINK}/{sr.MODELS_CONFIG}")
    assert f"versions: {v1}" in config and f"versions: {v2}" in config and f'value: {v2}' not in config
    sr.settle(serving, SETTINGS)
    config = " ".join(storage.read_text(f"{serving}/{sr.LINK}/{sr.MODELS_CONFIG}").split())
    assert f'version_labels {{ key: "stable" value: {v1} }}' in config
    assert f'version_labels {{ key: "canary" value: {v2} }}' in config
    manifest = storage.read_text(f"{serving}/{sr.LINK}/{sr.KSERVE_FILE}")
    assert f"storageUri: gs://models/taxi/kserve/{v2}" in manifest
    # what KServe's storage initializer copies from that prefix: the version's files, and no link
    assert storage.files(sr.kserve_dir(serving, v2)) == [f"{v2}/{n}" for n in storage.files(f"{serving}/{v2}")]
    assert json.loads(storage.read_text(f"{serving}/{sr.LINK}/{sr.STATE_FILE}"))["canary"] == v2


@pytest.mark.e2e
def test_the_pusher_baseline_drift_gate_and_run_metrics_on_gs(gcs, pipeline_run):
    """The executors of the Pusher, the baseline and the drift check on the shared run's real
    artifacts, with the model, the serving directory, the span ledger and their outputs on gs://,
    as a compiled run on Vertex AI or KFP has them."""
    from tfx.types import artifact_utils, standard_artifacts

    from tfxline.components import drift_gate, metric_samples, safe_pusher, serving_baseline
    from tfxline.pipeline.data import source as data_source
    from tfxline.pipeline.factory import drift_thresholds

    cfg, _, _ = pipeline_run
    local = sp.versions(cfg.serving_dir)[-1]
    meta = sp.read_metadata(cfg.serving_dir, local)
    root = gcs("run")
    model = standard_artifacts.Model()
    model.uri = f"{root}/Trainer/model/7"
    storage.copytree(f"{cfg.serving_dir}/{local}", f"{model.uri}/Format-Serving")
    storage.remove(f"{model.uri}/Format-Serving/{sp.METADATA_FILE}")
    blessing = standard_artifacts.ModelBlessing()
    blessing.set_int_custom_property("blessed", 1)
    examples = standard_artifacts.Examples()
    examples.uri, examples.span = meta["data"]["examples_uri"], 0
    examples.split_names = artifact_utils.encode_split_names(["train", "eval"])
    statistics = standard_artifacts.ExampleStatistics()
    statistics.uri = meta["data"]["statistics_uri"]
    statistics.split_names = artifact_utils.encode_split_names(["train", "eval"])
    serving = f"{root}/serving/taxi"

    pushed = standard_artifacts.PushedModel()
    safe_pusher.Executor().Do({"model": [model], "model_blessing": [blessing], "examples": [examples],
                               "statistics": [statistics]}, {"pushed_model": [pushed]},
                              {"serving_dir": serving, "keep_versions": 3, "model_name": "taxi"})
    (version,) = sp.versions(serving)
    assert pushed.get_int_custom_property("pushed") == 1
    assert pushed.get_string_custom_property("pushed_destination") == f"{serving}/{version}"
    assert sp.read_metadata(serving, version)["model_uri"] == model.uri
    assert set(sp.read_metadata(serving, version)["batching"]["latency_ms"]) == {"1", "8", "32", "128", "512"}
    assert pushed.get_string_custom_property("release") == "stable: predict and the next run's baseline use it"
    assert storage.isfile(f"{serving}/{sr.LINK}/{sr.MODELS_CONFIG}")

    baseline = standard_artifacts.Model()
    baseline.uri = f"{root}/ServingBaseline/baseline_model/8"
    serving_baseline.Executor().Do({"candidate_model": [model]}, {"baseline_model": [baseline]}, {"serving_dir": serving})
    assert serving_baseline.describe(baseline.uri)["serving_version"] == version
    assert storage.isfile(f"{baseline.uri}/Format-Serving/saved_model.pb")

    schema = standard_artifacts.Schema()
    schema.uri = f"{root}/ImportSchemaGen/schema/5"  # one file, as ImportSchemaGen leaves it
    storage.write_text(f"{schema.uri}/schema.pbtxt", storage.read_text(data_source.schema_path("taxi")))
    drift = standard_artifacts.ExampleAnomalies()
    drift.uri = f"{root}/DriftGate/drift_anomalies/9"
    drift_gate.Executor().Do({"statistics": [statistics], "schema": [schema], "examples": [examples]},
                             {"drift_anomalies": [drift]},
                             {"serving_dir": serving, "span_ledger": f"{root}/spans",
                              "thresholds": json.dumps(drift_thresholds(cfg))})
    assert drift.get_string_custom_property("compared_with") == f"serving version {version}'s training data"
    assert storage.listdir(f"{root}/spans") == ["0.json"]
    assert metric_samples.drift_samples(drift.uri)  # read back from gs://
    names = {s.name for s in metric_samples.serving_samples(serving)}
    assert names == {"tfxline_serving_version", "tfxline_last_successful_push_timestamp_seconds"}


def test_a_text_folder_on_gs_reads_as_the_same_folder_on_disk(gcs, tmp_path):
    """TextExampleGen on a class folder of .txt files on gs:// (issue #72, item 2; a Kubeflow or
    Vertex run's data is there): the same examples in the same splits as from the folder on disk,
    the strays (README.md; a hidden .DS_Store) left out and counted the same way."""
    import os

    import tensorflow as tf

    from tests.example_gen_runs import run_example_gen
    from tests.text_folder_data import text_folder
    from tfxline.components import text_example_gen

    local = tmp_path / "docs"
    text_folder(str(local), per_class=12, copies=2)
    root = gcs("texts")
    for base, _, names in os.walk(local):
        for name in names:
            path = os.path.join(base, name)
            tf.io.gfile.copy(path, f"{root}/{os.path.relpath(path, local)}")
    config = text_example_gen.custom_config("review", "kind")
    on_disk, disk_examples = run_example_gen(text_example_gen.Executor, str(local), tmp_path / "out", "*/*", config)
    # read from gs:// (TensorFlow's file system, through TFX's fileio); written on disk: Beam's own GCS
    # client, which would write a gs:// output, waits ~20 s for credentials the loopback store never asks
    on_gs, gs_examples = run_example_gen(text_example_gen.Executor, root, tmp_path / "from-gs", "*/*", config)

    def texts(out):  # each split's (text, class) pairs (a record's bytes: its map's order varies)
        def pair(e):
            return tuple(e.features.feature[c].bytes_list.value[0] for c in ("review", "kind"))

        return {split: sorted(pair(e) for e in got) for split, got in out.items()}

    assert texts(on_gs) == texts(on_disk) and sum(len(v) for v in on_gs.values()) == 3 * 12 + 2
    assert gs_examples.get_int_custom_property("ignored_files") == disk_examples.get_int_custom_property(
        "ignored_files") == 1
