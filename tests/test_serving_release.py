"""The release labels (stable / canary) and the files a model server reads (serving/release.py,
release_state.py, tf_serving_files.py, kserve_files.py): each file parsed with TF Serving's own
protos or validated against KServe's published InferenceService schema; label moves atomic under
an injected crash; bad input refused in one line with nothing changed."""
import gzip
import json
import os

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from tensorflow_serving.config import model_server_config_pb2

from tfxline.serving import push as sp
from tfxline.serving import kserve_files, tf_serving_files
from tfxline.serving import release as sr
from tests.conftest import ROOT
from tests.test_rollback import run_cli

DATA = os.path.join(ROOT, "tests", "data")
SETTINGS = sr.Settings(model_name="taxi", batch_threads=4)


def tf_serving_message(name: str):
    """A message class from TF Serving's own protos (tests/data/README.md)."""
    with open(os.path.join(DATA, "tf_serving", "serving_config.pb"), "rb") as f:
        files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for proto in files.file:
        pool.Add(proto)
    descriptor = pool.FindMessageTypeByName(name)
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(pool).GetPrototype(descriptor)


def parsed(serving_dir):
    release = sr.release_dir(serving_dir)

    def read(name):
        with open(os.path.join(release, name)) as f:
            return f.read()
    models = text_format.Parse(read(sr.MODELS_CONFIG), model_server_config_pb2.ModelServerConfig())
    batching = text_format.Parse(read(sr.BATCHING_FILE), tf_serving_message("tensorflow.serving.BatchingParameters")())
    monitoring = text_format.Parse(read(sr.MONITORING_FILE),
                                   tf_serving_message("tensorflow.serving.MonitoringConfig")())
    import yaml
    return models, batching, monitoring, yaml.safe_load(read(sr.KSERVE_FILE))


def pushed(model_files, serving_dir, n, batching=None):
    for i in range(n):
        meta = {"model_uri": f"m{i}", "pipeline_run_id": f"r{i}"}
        if batching:
            meta["batching"] = batching
        sp.push(model_files, serving_dir, meta, keep_versions=5, now=100 + i)
    return sp.versions(serving_dir)


def snapshot(serving_dir):
    """Everything a model server or a later command reads: versions, the link, every release file."""
    out = {"versions": sp.versions(serving_dir), "entries": sorted(os.listdir(serving_dir))}
    release = sr.release_dir(serving_dir)
    if os.path.islink(release):
        out["link"] = os.readlink(release)
        for name in sorted(os.listdir(release)):
            path = os.path.join(release, name)
            if os.path.isfile(path):
                with open(path) as f:
                    out[name] = f.read()
    return out


def labels(serving_dir):
    (config,) = parsed(serving_dir)[0].model_config_list.config
    return list(config.model_version_policy.specific.versions), dict(config.version_labels)


def test_canary_promote_and_rollback_move_the_labels(model_files, tmp_path):
    d = str(tmp_path / "serving" / "taxi")
    measured = {"latency_ms": {"1": 0.8, "8": 1.0, "32": 1.6, "128": 4.2, "512": 16.0}}
    v1, v2 = pushed(model_files, d, 2, batching=measured)
    assert sr.serving_version(d) == v2  # no release yet: the highest, as TF Serving's bare base path
    sr.on_push(d, v1, "stable", 10, SETTINGS)
    assert labels(d) == ([v1], {})  # loads v1 first: no label may name a version TF Serving has not loaded
    assert sr.serving_version(d) == v1  # what the first move makes stable
    sr.settle(d, SETTINGS)
    assert labels(d) == ([v1], {"stable": v1})
    sr.canary(d, v2, 10, SETTINGS, by="ana")
    assert labels(d) == ([v1, v2], {"stable": v1}) and sr.read(d).pending["event"] == "canary"
    sr.settle(d, SETTINGS)
    models, batching, monitoring, isvc = parsed(d)
    (config,) = models.model_config_list.config
    assert config.name == "taxi" and config.base_path == os.path.abspath(d) and config.model_platform == "tensorflow"
    assert labels(d) == ([v1, v2], {"stable": v1, "canary": v2})
    assert isvc["spec"]["predictor"]["canaryTrafficPercent"] == 10
    assert isvc["spec"]["predictor"]["model"]["storageUri"] == f"pvc://tfxline-serving/taxi/kserve/{v2}"
    assert os.listdir(kserve_files.kserve_dir(d, v2)) == [str(v2)]  # KServe's base path for the version: it alone
    assert monitoring.prometheus_config.enable and monitoring.prometheus_config.path == tf_serving_files.PROMETHEUS_PATH
    # batching from v1's (stable's) measurement: batch 128 costs 0.033 ms per example, 512 0.031
    assert batching.max_batch_size.value == 128 and batching.batch_timeout_micros.value == 800
    assert batching.num_batch_threads.value == 4 and list(batching.allowed_batch_sizes) == [1, 8, 32, 128]
    assert sr.serving_version(d) == v1  # the baseline, drift reference and predict take stable

    sr.promote(d, SETTINGS, by="ana")  # both versions are loaded: one write
    models, _, _, isvc = parsed(d)
    assert labels(d) == ([v2], {"stable": v2}) and sr.read(d).pending is None
    assert "canaryTrafficPercent" not in isvc["spec"]["predictor"]
    assert isvc["metadata"]["annotations"] == {"tfxline/stable-version": str(v2)}
    assert isvc["spec"]["predictor"]["model"]["storageUri"].endswith(f"/kserve/{v2}")
    assert sr.serving_version(d) == v2

    from tfxline.runs import versions as serving
    current, target = serving.rollback_target(d, None)
    assert (current, target) == (v2, v1)  # the stable version before the promote
    new, _, restored = sp.rollback(d, 5, to=target, current=current, protect=sr.read(d).labelled)
    sr.on_rollback(d, new, restored, SETTINGS, by="ana", reason="bad tips")
    # TF Serving's stable label stays on v2 until settled; the release (baseline, drift, predict) serves new
    assert labels(d) == ([v2, new], {"stable": v2}) and sr.serving_version(d) == new
    sr.settle(d, SETTINGS)
    assert labels(d) == ([new], {"stable": new})
    assert sp.read_metadata(d, new)["model_uri"] == "m0"  # the previous stable's model serves again
    events = [r["event"] for r in sr.read(d).history]
    assert events == ["push", "canary", "promote", f"rollback to {v1}"]
    assert not [n for n in os.listdir(d) if n.startswith((sr.HIDDEN_PREFIX, ".release."))
                and os.path.realpath(os.path.join(d, n)) != os.path.realpath(sr.release_dir(d))]


@pytest.mark.parametrize("crash_after", ["kserve", "batching_parameters.txt", "monitoring.config",
                                         "inferenceservice.yaml", "models.config", "release.json", "link"])
def test_a_crash_mid_move_leaves_the_old_release(model_files, tmp_path, crash_after):
    d = str(tmp_path / "serving")
    v1, v2 = pushed(model_files, d, 2)
    sr.on_push(d, v1, "stable", 10, SETTINGS)
    sr.settle(d, SETTINGS)
    before = snapshot(d)

    def step(name):
        if name == crash_after:
            raise KeyboardInterrupt(f"killed after {name}")
    moved = sr.Release(stable=v1, canary=v2, canary_percent=20)
    with pytest.raises(KeyboardInterrupt):
        sr.write(d, moved, SETTINGS, step=step)
    after = snapshot(d)
    leftovers = set(after.pop("entries")) - set(before["entries"])
    assert after == {k: v for k, v in before.items() if k != "entries"}  # the old release, whole
    assert not {n for n in leftovers if n.startswith(sr.HIDDEN_PREFIX)}  # cleaned on the way out
    sr.canary(d, v2, 20, SETTINGS)  # and the next move works, leaving nothing behind
    assert sr.read(d).target[1] == v2
    assert [n for n in os.listdir(d) if n.startswith(".")] == [os.readlink(sr.release_dir(d))]


def test_a_crash_between_link_and_rename_leaves_no_second_link(model_files, tmp_path):
    """Killed for real (no cleanup ran) after the new link was made: the next move removes it."""
    d = str(tmp_path / "serving")
    v1, v2 = pushed(model_files, d, 2)
    sr.on_push(d, v1, "stable", 10, SETTINGS)
    sr.settle(d, SETTINGS)
    os.symlink(".release-stale", os.path.join(d, ".release.dead"))
    os.makedirs(os.path.join(d, ".release-stale"))
    sr.canary(d, v2, 5, SETTINGS)
    assert sorted(n for n in os.listdir(d) if n.startswith(".")) == [os.readlink(sr.release_dir(d))]


def test_pushes_follow_serving_release(model_files, tmp_path):
    d = str(tmp_path / "serving")
    (v1,) = pushed(model_files, d, 1)
    release = sr.on_push(d, v1, "canary", 10, SETTINGS)  # a first push has no stable beside it: stable
    assert release.target == (v1, None, 0) and sr.push_summary(release, v1) == (
        "stable: predict and the next run's baseline use it")
    sr.settle(d, SETTINGS)
    v2 = sp.push(model_files, d, {"model_uri": "m1"}, keep_versions=5, now=200)
    release = sr.on_push(d, v2, "canary", 15, SETTINGS)
    assert (release.stable, release.target) == (v1, (v1, v2, 15))
    assert sr.push_summary(release, v2).startswith(f"canary at 15 % beside stable version {v1} once its label moves")
    v3 = sp.push(model_files, d, {"model_uri": "m2"}, keep_versions=5, now=300, protect=sr.read(d).labelled)
    release = sr.on_push(d, v3, "stable", 10, SETTINGS)  # replaces the pending canary move
    assert (release.stable, release.target) == (v1, (v3, None, 0)) and labels(d) == ([v1, v3], {"stable": v1})
    sr.settle(d, SETTINGS)
    assert (sr.read(d).stable, sr.read(d).canary) == (v3, None) and labels(d) == ([v3], {"stable": v3})


def test_pruning_keeps_the_labelled_versions(model_files, tmp_path):
    d = str(tmp_path / "serving")
    v1, v2 = pushed(model_files, d, 2)
    sr.on_push(d, v1, "stable", 10, SETTINGS)
    for i in range(3):
        sp.push(model_files, d, {"model_uri": f"n{i}"}, keep_versions=2, now=300 + i, protect=sr.read(d).labelled)
    assert sp.versions(d) == [v1, 301, 302]  # v1 is stable: kept beyond keep_versions


@pytest.mark.one_stack("1.21", why="a JSON schema check of our manifest; no TensorFlow in it")
def test_the_kserve_manifest_is_valid_for_kserves_published_schema(model_files, tmp_path):
    # jsonschema comes with the TFX 1.16 stack's kfp 2.5 only; the manifest is PyYAML output,
    # the same on both stacks, so the host stack's run of this test covers it.
    jsonschema = pytest.importorskip("jsonschema", reason="not in this stack's lock (TFX 1.16's has it)")
    import yaml

    with gzip.open(os.path.join(DATA, "kserve", "inferenceservice-v1beta1.schema.json.gz")) as f:
        schema = json.load(f)

    def strict(node):  # kubectl apply --validate=strict: an unknown field is an error, not pruned
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node and \
                    not node.get("x-kubernetes-preserve-unknown-fields"):
                node.setdefault("additionalProperties", False)
            for v in node.values():
                strict(v)
        elif isinstance(node, list):
            for v in node:
                strict(v)
    strict(schema)
    d = str(tmp_path / "serving")
    v1, v2 = pushed(model_files, d, 2)
    sr.on_push(d, v1, "stable", 10, sr.Settings(model_name="Taxi_Tips 2", kserve_storage_uri="gs://b/serving/taxi/"))
    sr.settle(d, sr.Settings(model_name="Taxi_Tips 2", kserve_storage_uri="gs://b/serving/taxi/"))
    sr.canary(d, v2, 30, sr.Settings(model_name="Taxi_Tips 2", kserve_storage_uri="gs://b/serving/taxi/"))
    manifest = yaml.safe_load(open(os.path.join(sr.release_dir(d), sr.KSERVE_FILE)))
    jsonschema.validate(manifest, schema)
    assert manifest["metadata"]["name"] == "taxi-tips-2"  # a DNS-1035 label
    assert manifest["spec"]["predictor"]["model"]["storageUri"] == f"gs://b/serving/taxi/kserve/{v2}"
    bad = json.loads(json.dumps(manifest))
    bad["spec"]["predictor"]["canaryTrafficPercentage"] = 30  # a typo the schema must catch
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_batching_without_a_measurement_says_so():
    choice = tf_serving_files.batching_choice(None, 2)
    assert choice["max_batch_size"] == 128 and "not measured" in choice["how"]
    text = tf_serving_files.batching_parameters(choice)
    parsed_ = text_format.Parse(text, tf_serving_message("tensorflow.serving.BatchingParameters")())
    assert parsed_.num_batch_threads.value == 2 and not parsed_.allowed_batch_sizes


def test_the_commands_canary_settle_promote_rollback(model_files, tmp_path, capsys):
    out_root = tmp_path / "out"
    d = str(out_root / "serving" / "taxi")
    v1, v2 = pushed(model_files, d, 2)
    sr.on_push(d, v1, "stable", 10, SETTINGS)
    sr.settle(d, SETTINGS)
    code, out, err = run_cli(["serving", "canary", str(v2), "--percent", "10", "--output", str(out_root)], capsys)
    assert (code, err) == (0, "") and f"canary: version {v2} serves 10 % of the traffic beside stable version {v1} " \
                                      "once settled" in out
    assert f"  pending: canary (stable {v1}, canary {v2} at 10 %): predict and the next run use version {v1} " \
           "already; the labels move once TF Serving has loaded it ('tfxline serving settle --server URL'), or at " \
           "once with 'tfxline serving settle --without-server'" in out
    code, out, _ = run_cli(["serving", "--output", str(out_root)], capsys)
    rows = out.splitlines()
    assert rows[2].startswith(str(v2)) and rows[2].endswith("pending canary 10 %")
    assert rows[3].startswith(str(v1)) and rows[3].endswith("stable") and rows[4].startswith("pending: canary")
    code, out, err = run_cli(["serving", "settle", "--output", str(out_root)], capsys)
    assert code == 2 and err.startswith("error: settle needs --server URL") and out == ""
    code, out, err = run_cli(["serving", "settle", "--without-server", "--output", str(out_root)], capsys)
    assert (code, err) == (0, "") and out.startswith(f"settled: canary: stable {v1}, canary {v2} at 10 % (not checked")
    code, out, _ = run_cli(["serving", "--output", str(out_root)], capsys)
    rows = out.splitlines()
    assert rows[2].endswith("canary 10 %") and rows[3].endswith("stable 90 %")
    code, out, err = run_cli(["serving", "settle", "--output", str(out_root)], capsys)
    assert (code, err) == (0, "") and out.startswith("nothing to settle in ")
    code, out, err = run_cli(["serving", "promote", "--output", str(out_root)], capsys)
    assert (code, err) == (0, "") and f"promoted: version {v2} is stable" in out and "pending" not in out
    code, out, err = run_cli(["serving", "rollback", "--output", str(out_root)], capsys)
    assert (code, err) == (0, "") and "holds the model of version 100 (run r0)" in out
    new = sr.read(d).target[0]
    assert f"version {v2} (run r1) serves until the stable label moves to version {new}" in out
    assert sr.read(d).stable == v2
    assert f"TF Serving loads version {new} when it next reads models.config" in out
    run_cli(["serving", "settle", "--without-server", "--output", str(out_root)], capsys)
    assert sp.read_metadata(d, sr.read(d).stable)["model_uri"] == "m0"


@pytest.mark.parametrize("argv, message", [
    (["canary", "7", "--percent", "10"], "error: version 7 is not in "),
    (["canary", "101", "--percent", "0"], "error: --percent 0 is outside 1-99"),
    (["canary", "101", "--percent", "100"], "error: --percent 100 is outside 1-99"),
    (["canary", "101", "--percent", "150"], "error: --percent 150 is outside 1-99"),
    (["canary", "100", "--percent", "10"], "error: version 100 has no stable version beside it"),
    (["promote"], "error: no canary in "),
])
def test_bad_moves_are_one_line_and_change_nothing(model_files, tmp_path, capsys, argv, message):
    out_root = tmp_path / "out"
    d = str(out_root / "serving" / "taxi")
    v1, v2 = pushed(model_files, d, 2)
    sr.on_push(d, v2, "stable", 10, SETTINGS)  # stable 101: a canary of 100 would be an older model, fine
    if argv[:2] == ["canary", "100"]:
        sr.on_push(d, v1, "stable", 10, SETTINGS)  # now stable is 100 itself
    sr.settle(d, SETTINGS)
    before = snapshot(d)
    code, out, err = run_cli(["serving", *argv, "--output", str(out_root)], capsys)
    assert code == 2 and err.startswith(message) and len(err.strip().splitlines()) == 1 and out == ""
    assert snapshot(d) == before


def test_the_pusher_writes_the_release_and_a_failed_measurement_does_not_block_it(model_files, tmp_path, monkeypatch):
    """The Pusher's executor on real TFX artifacts: a blessed model is pushed and labelled stable;
    a latency measurement that fails is a warning and TF Serving's usual batching values."""
    import shutil

    from tfx.types import standard_artifacts

    from tfxline.components import safe_pusher
    from tfxline.serving import batch_latency

    def broken(model_dir, records):
        raise RuntimeError("no eval rows")
    monkeypatch.setattr(batch_latency, "eval_records", lambda uri: [b"x"])
    monkeypatch.setattr(batch_latency, "measure", broken)
    model = standard_artifacts.Model()
    model.uri = str(tmp_path / "model")
    shutil.copytree(model_files, os.path.join(model.uri, "Format-Serving"))
    blessing = standard_artifacts.ModelBlessing()
    blessing.set_int_custom_property("blessed", 1)
    examples = standard_artifacts.Examples()
    examples.uri, examples.span = str(tmp_path / "examples"), 3
    pushed = standard_artifacts.PushedModel()
    d = str(tmp_path / "serving" / "taxi")
    safe_pusher.Executor().Do({"model": [model], "model_blessing": [blessing], "examples": [examples]},
                              {"pushed_model": [pushed]},
                              {"serving_dir": d, "keep_versions": 5, "release": "stable", "canary_percent": 10,
                               "model_name": "taxi", "batch_threads": 2})
    (version,) = sp.versions(d)
    assert pushed.get_string_custom_property("pushed_version") == str(version)
    assert "batching" not in sp.read_metadata(d, version)
    _, batching, _, _ = parsed(d)
    assert batching.max_batch_size.value == 128 and batching.num_batch_threads.value == 2
    assert sr.read(d).target[0] == version and sr.read(d).pending["event"] == "push"


@pytest.mark.parametrize("damage, problem", [
    (lambda text: text[:len(text) // 2], "it is not valid JSON ("),
    (lambda text: text.replace('"stable": 100', '"stable": 999'), "its stable is version 999, which is not in "),
    (lambda text: text.replace('"stable": 100', '"stable": "100"'), 'its stable is "100", not a version number'),
], ids=["truncated", "a version not on disk", "not a number"])
@pytest.mark.parametrize("argv", [["serving"], ["serving", "canary", "101", "--percent", "10"], ["serving", "promote"],
                                  ["serving", "rollback"], ["serving", "settle", "--without-server"], ["predict"]],
                         ids=lambda argv: " ".join(argv[:2]))
def test_a_damaged_release_is_one_line_naming_the_file_and_changes_nothing(model_files, tmp_path, capsys, argv,
                                                                          damage, problem):
    from tests.conftest import write_taxi_slice

    out_root = tmp_path / "out"
    d = str(out_root / "serving" / "taxi")
    v1, _ = pushed(model_files, d, 2)
    sr.on_push(d, v1, "stable", 10, SETTINGS)
    sr.settle(d, SETTINGS)
    path = os.path.join(os.path.realpath(sr.release_dir(d)), sr.STATE_FILE)
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(damage(text))
    if argv == ["predict"]:
        argv = ["predict", "--input", write_taxi_slice(tmp_path / "rows.csv", limit=3),
                "--predictions", str(tmp_path / "p.csv")]
    before = snapshot(d)
    code, out, err = run_cli([*argv, "--output", str(out_root)], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: the release {sr.release_dir(d)}/{sr.STATE_FILE} cannot be used: {problem}")
    assert err.rstrip().endswith(f"nothing was changed; fix: restore it, or delete {sr.release_dir(d)} to start a new "
                                 "release (the versions stay; the next push, or 'tfxline serving rollback --to "
                                 "VERSION', labels one stable)")
    assert snapshot(d) == before and not os.path.exists(tmp_path / "p.csv")


def test_batch_latency_times_at_least_5_and_at_most_30_calls_per_batch_size():
    """The push-time latency measurement (serving/batch_latency.py): a fast signature stops at 30
    timed calls, a slow one at the budget but never below 5 calls."""
    import time

    from tfxline.serving.batch_latency import MAX_CALLS, MIN_CALLS, timed_calls

    calls = []
    times = timed_calls(lambda: calls.append(1))
    assert len(times) == len(calls) == MAX_CALLS == 30
    slow = timed_calls(lambda: time.sleep(0.02), budget_s=0.0)
    assert len(slow) == MIN_CALLS == 5 and min(slow) >= 0.02
