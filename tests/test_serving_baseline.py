"""The gate's baseline (components/serving_baseline.py), executors called directly."""
import json
import os

from tfx.types import standard_artifacts

from tfxline.components import serving_baseline as sb
from tfxline.serving.push import METADATA_FILE


def fake_version(serving_dir, version, model_uri):
    d = os.path.join(serving_dir, str(version))
    os.makedirs(os.path.join(d, "variables"))
    open(os.path.join(d, "saved_model.pb"), "wb").write(b"pb-%d" % version)
    json.dump({"model_uri": model_uri, "version": version}, open(os.path.join(d, METADATA_FILE), "w"))


def resolve(serving_dir, out_dir):
    out = standard_artifacts.Model()
    out.uri = str(out_dir)
    candidate = standard_artifacts.Model()
    candidate.uri = "/candidate"
    sb.Executor().Do({sb.CANDIDATE_KEY: [candidate]}, {sb.BASELINE_KEY: [out]}, {"serving_dir": str(serving_dir)})
    return out


def test_nothing_serving_gives_an_artifact_without_a_model(tmp_path):
    out = resolve(tmp_path / "serving", tmp_path / "baseline")
    assert sb.describe(out.uri) == {"found": False, "serving_dir": str(tmp_path / "serving")}
    assert not sb.has_model(out) and out.get_int_custom_property("baseline_found") == 0
    assert not os.path.exists(os.path.join(out.uri, "Format-Serving"))


def test_the_newest_complete_version_is_copied_in(tmp_path):
    serving = tmp_path / "serving"
    fake_version(serving, 100, "/models/a")
    fake_version(serving, 200, "/models/b")
    os.makedirs(serving / ".tmp-300-1")  # a push in progress is not a version
    out = resolve(serving, tmp_path / "baseline")
    info = sb.describe(out.uri)
    assert info["found"] and info["serving_version"] == 200 and info["source_model_uri"] == "/models/b"
    copied = os.path.join(out.uri, "Format-Serving")
    assert open(os.path.join(copied, "saved_model.pb"), "rb").read() == b"pb-200"
    assert sb.has_model(out) and out.get_string_custom_property("serving_version") == "200"


def test_evaluator_drops_a_baseline_without_a_model(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(sb.evaluator_executor.Executor, "Do", lambda self, i, o, e: seen.append(sorted(i)))
    empty = resolve(tmp_path / "none", tmp_path / "b1")
    fake_version(tmp_path / "serving", 7, "/models/x")
    serving = resolve(tmp_path / "serving", tmp_path / "b2")
    model = standard_artifacts.Model()
    for baseline in (empty, serving):
        sb.EvaluatorExecutor().Do({"model": [model], "baseline_model": [baseline]}, {}, {})
    assert seen == [["model"], ["baseline_model", "model"]]
