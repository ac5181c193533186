"""Atomic, versioned pushes: atomicity under a failing copy, retention, no overwrite."""
import os
import shutil

import pytest

from components import serving_push as sp


def test_push_creates_integer_version_with_metadata(model_files, tmp_path):
    serving = str(tmp_path / "serving" / "taxi")
    v = sp.push(model_files, serving, {"model_uri": "m1", "metrics": {"auc": 0.9}}, keep_versions=3, now=1000)
    assert v == 1000 and sp.versions(serving) == [1000]
    assert os.path.isfile(os.path.join(serving, "1000", "saved_model.pb"))
    meta = sp.read_metadata(serving, 1000)
    assert meta["metrics"]["auc"] == 0.9 and meta["version"] == 1000
    assert sp.find_pushed(serving, "m1") == 1000 and sp.find_pushed(serving, "m2") is None


def test_versions_always_increase_and_never_overwrite(model_files, tmp_path):
    serving = str(tmp_path / "s")
    first = sp.push(model_files, serving, {}, keep_versions=5, now=2000)
    second = sp.push(model_files, serving, {}, keep_versions=5, now=1500)  # clock went backwards
    assert second == first + 1
    assert sp.versions(serving) == [2000, 2001]


def test_failed_copy_leaves_no_partial_version_and_keeps_old_ones(model_files, tmp_path):
    serving = str(tmp_path / "s")
    sp.push(model_files, serving, {"model_uri": "good"}, keep_versions=5, now=10)
    before = sorted(os.listdir(serving))

    def copy_then_crash(src, dst):
        os.makedirs(dst)
        shutil.copy(os.path.join(src, "saved_model.pb"), dst)  # some files made it...
        raise OSError("disk full")                            # ...then the copy failed

    with pytest.raises(OSError, match="disk full"):
        sp.push(model_files, serving, {"model_uri": "bad"}, keep_versions=5, copytree=copy_then_crash, now=20)
    assert sorted(os.listdir(serving)) == before  # no partial or temporary directory visible
    assert sp.versions(serving) == [10]
    assert sp.read_metadata(serving, 10)["model_uri"] == "good"
    assert os.path.getsize(os.path.join(serving, "10", "variables", "variables.data-00000-of-00001")) == 4000


def test_crash_leftovers_are_hidden_from_tf_serving_and_cleaned(model_files, tmp_path):
    serving = tmp_path / "s"
    (serving / ".tmp-99-123").mkdir(parents=True)  # what a killed process would leave
    assert sp.versions(str(serving)) == []
    sp.push(model_files, str(serving), {}, keep_versions=2, now=100)
    assert sorted(os.listdir(serving)) == ["100"]


def test_retention_keeps_the_newest_n(model_files, tmp_path):
    serving = str(tmp_path / "s")
    n = 3
    for i in range(n + 2):
        sp.push(model_files, serving, {"i": i}, keep_versions=n, now=100 + i)
    assert sp.versions(serving) == [102, 103, 104]
    assert [sp.read_metadata(serving, v)["i"] for v in sp.versions(serving)] == [2, 3, 4]
    assert sorted(os.listdir(serving)) == ["102", "103", "104"]


def test_not_a_savedmodel_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(sp.PushError, match="not a SavedModel"):
        sp.push(str(tmp_path / "empty"), str(tmp_path / "s"), {}, keep_versions=1)
    assert not os.path.exists(tmp_path / "s" / "1")


def test_serving_version_dir_names_the_fix(tmp_path):
    from components.serving_release import serving_version_dir

    with pytest.raises(FileNotFoundError, match="tfxline run"):
        serving_version_dir(str(tmp_path / "none"))
