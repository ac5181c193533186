"""Atomic, versioned pushes: atomicity under a failing copy, retention, no overwrite."""
import os
import shutil

import pytest

from tfxline.serving import push as sp


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
    from tfxline.serving.release import serving_version_dir

    with pytest.raises(FileNotFoundError, match="tfxline run"):
        serving_version_dir(str(tmp_path / "none"))


# --- what a polling server sees while a push runs ---------------------------------------------
# TF Serving's file system source takes every child of the base path whose name parses as an
# integer as a version (tensorflow/serving 9d981c5c, sources/storage_path/
# file_system_storage_path_source.cc:87-89, ParseVersionNumber = absl::SimpleAtoi, which also
# takes surrounding whitespace and a sign) and loads it. The poller below lists the directory as
# that source does, as fast as it can, while pushes run in another thread, and records what
# each numeric child held at that moment.

def _simple_atoi(name: str):
    try:
        return int(name.strip())
    except ValueError:
        return None


def _poll_while(push_some, serving: str):
    import threading

    seen, done = [], threading.Event()

    def poll():
        while not done.is_set():
            for child in (os.listdir(serving) if os.path.isdir(serving) else []):
                if _simple_atoi(child) is None:
                    continue
                root = os.path.join(serving, child)
                held = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)
                if os.path.isdir(root):  # not pruned (hidden by a rename) while it was listed
                    seen.append((child, tuple(held)))

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        push_some()
    finally:
        done.set()
        poller.join()
    return seen


MODEL_FILES = ("push_metadata.json", "saved_model.pb", "variables/variables.data-00000-of-00001",
               "variables/variables.index")


def _slow_copytree(src, dst):
    """storage.copytree, one file at a time with a pause: the poller gets to look in between."""
    import time
    from tfxline.serving import storage

    for name in storage.files(src):
        os.makedirs(os.path.dirname(os.path.join(dst, name)), exist_ok=True)
        shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))
        time.sleep(0.01)


def test_a_polling_server_never_sees_a_partial_version(model_files, tmp_path):
    serving = str(tmp_path / "s")
    seen = _poll_while(lambda: [sp.push(model_files, serving, {}, keep_versions=2, copytree=_slow_copytree,
                                        now=100 + i) for i in range(4)], serving)
    assert seen, "the poller saw no version at all"
    partial = {(v, held) for v, held in seen if held != MODEL_FILES}
    assert not partial  # locally a version appears by one rename, and is hidden before it is deleted


def test_without_a_directory_rename_saved_model_pb_is_the_last_file_in(model_files, tmp_path, monkeypatch):
    """Where a directory cannot be renamed (Cloud Storage FUSE without --rename-dir-limit answers
    ENOTSUP), the version is copied in file by file: a server that lists it early finds no
    saved_model.pb (its load fails and is retried, --max_num_load_retries), never a
    saved_model.pb without its variables or metadata."""
    import errno
    from tfxline.serving import storage

    def no_dir_rename(src, dst):
        raise OSError(errno.ENOTSUP, "Operation not supported", dst)

    monkeypatch.setattr(storage, "rename_dir", no_dir_rename)
    real_copy = storage.copy_file

    def slow_copy(src, dst):
        import time
        real_copy(src, dst)
        time.sleep(0.01)

    monkeypatch.setattr(storage, "copy_file", slow_copy)
    serving = str(tmp_path / "s")
    seen = _poll_while(lambda: [sp.push(model_files, serving, {}, keep_versions=2, now=100 + i) for i in range(3)],
                       serving)
    assert any(held != MODEL_FILES for _, held in seen), "the copy was never caught half-way: the test saw nothing"
    # The versions that appeared and stay: never listed with a saved_model.pb before their last
    # file. (Version 100, pruned in place, loses saved_model.pb first, then the rest; a walk of it
    # that read its top level before the removal and its variables/ after can list the one without
    # the other: a server has it loaded already, and drops it when it disappears.)
    kept = {str(v) for v in sp.versions(serving)}
    assert all(held == MODEL_FILES for v, held in seen if v in kept and "saved_model.pb" in held)
    assert sp.versions(serving) == [101, 102]
    assert sorted(os.listdir(serving)) == ["101", "102"]  # staging copies removed, the pruned one gone


def test_a_version_cut_short_is_not_a_version_and_the_next_push_removes_it(model_files, tmp_path):
    serving = tmp_path / "s"
    sp.push(model_files, str(serving), {"model_uri": "good"}, keep_versions=5, now=10)
    (serving / "11" / "variables").mkdir(parents=True)  # an object-store copy cut short: no saved_model.pb
    assert sp.versions(str(serving)) == [10]
    assert sp.push(model_files, str(serving), {}, keep_versions=5, now=5) == 12  # 11 is never reused
    assert sorted(os.listdir(serving)) == ["10", "12"]
