"""KServe finds the model where inferenceservice.yaml's storageUri says. What KServe does with a
storageUri, at kserve/kserve aaac4e294dae2c7b1aa1886447793f3aa1c30912:

- ``pvc://<claim>/<path>``: pkg/utils/storage.go:59-73 splits it into the claim and the path, and
  pkg/webhook/admission/pod/storage_initializer_injector.go:541-553 mounts the claim's <path> as
  the volume's subPath at /mnt/models (pkg/constants/constants.go:511): the pod sees that subtree
  only, so a link out of it dangles there;
- any other URI (``gs://...``): the storage initializer copies it (storage_initializer_injector.go
  :554-563), for gs:// every object under ``<prefix>/`` by its key below the prefix
  (python/storage/kserve_storage/kserve_storage.py:909-983); an object store holds no links;
- the TF Serving runtime serves ``--model_base_path=/mnt/models`` (config/runtimes/
  kserve-tensorflow-serving.yaml:26-32): TF Serving's latest numbered version below it.

Each test does what KServe does with the release's storageUri, then loads
``/mnt/models/<highest number>`` with TensorFlow and calls its serving signature.
"""
import os
import shutil

import pytest
import yaml

from tfxline.serving import kserve_files
from tfxline.serving import push as sp
from tfxline.serving import release as sr
from tfxline.serving import storage


def tiny_model(path, answer):
    """A real SavedModel with TF Serving's signature: serialized examples in, ``answer`` out."""
    import tensorflow as tf

    class Tiny(tf.Module):
        def __init__(self):
            super().__init__()
            self.answer = tf.Variable(answer)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        def serve(self, examples):
            return {"probabilities": tf.fill(tf.shape(examples), 1.0) * self.answer}
    model = Tiny()
    tf.saved_model.save(model, str(path), signatures={"serving_default": model.serve})
    return str(path)


def mount(claim_dirs, uri, mnt):
    """A pvc:// storageUri as the pod sees it: the claim's subPath at ``mnt``; a symbolic link is
    followed only where it stays inside the mounted subtree (elsewhere it dangles: left out)."""
    claim, _, sub_path = uri[len("pvc://"):].partition("/")  # storage.go:60-69
    root = os.path.realpath(os.path.join(claim_dirs[claim], sub_path))
    os.makedirs(mnt)
    for directory, dirs, names in os.walk(root, followlinks=True):
        if os.path.commonpath([os.path.realpath(directory), root]) != root:
            dirs[:] = []
            continue
        for name in names:
            source = os.path.join(directory, name)
            if os.path.commonpath([os.path.realpath(source), root]) != root or not os.path.exists(source):
                continue  # a link out of the mount
            target = os.path.join(mnt, os.path.relpath(source, root))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(source, target)
    return mnt


def download_gcs(buckets, uri, mnt):
    """kserve_storage.py:925-974: every object under ``<prefix>/``, at its key below the prefix
    (a bucket here is a folder; only regular files are objects)."""
    bucket, _, prefix = uri[len("gs://"):].partition("/")
    root = os.path.join(buckets[bucket], prefix)
    for directory, _, names in os.walk(root):
        for name in names:
            source = os.path.join(directory, name)
            if os.path.islink(source):
                continue
            key = os.path.relpath(source, buckets[bucket])
            target = os.path.join(mnt, key.replace(prefix, "", 1).lstrip("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copyfile(source, target)
    return mnt


def served(mnt):
    """What the runtime's TF Serving loads from --model_base_path=/mnt/models, called once."""
    import tensorflow as tf

    versions = sorted(int(d) for d in os.listdir(mnt) if d.isdigit())
    assert versions, f"no numbered version under {mnt}: {os.listdir(mnt)}"
    serve = tf.saved_model.load(os.path.join(mnt, str(versions[-1]))).signatures["serving_default"]
    return versions[-1], float(serve(examples=tf.constant([b""]))["probabilities"].numpy()[0])


def storage_uri(serving_dir):
    with open(os.path.join(sr.release_dir(serving_dir), sr.KSERVE_FILE)) as f:
        return yaml.safe_load(f)["spec"]["predictor"]["model"]["storageUri"]


def release_of_two(tmp_path, serving_dir, settings):
    """v1 stable (settled), v2 pushed as its canary (pending for TF Serving; the manifest names it)."""
    v1 = sp.push(tiny_model(tmp_path / "m1", 0.25), serving_dir, {"model_uri": "m1"}, keep_versions=5, now=100)
    sr.on_push(serving_dir, v1, "stable", 10, settings)
    sr.settle(serving_dir, settings)
    v2 = sp.push(tiny_model(tmp_path / "m2", 0.75), serving_dir, {"model_uri": "m2"}, keep_versions=5, now=200)
    sr.on_push(serving_dir, v2, "canary", 10, settings)
    return v1, v2


def test_a_pvc_storage_uri_mounts_a_loadable_version(tmp_path):
    claims = {"tfxline-serving": str(tmp_path / "claim")}
    d = str(tmp_path / "claim" / "taxi")
    settings = sr.Settings(model_name="taxi")  # storageUri pvc://tfxline-serving/taxi/kserve/<v>
    v1, v2 = release_of_two(tmp_path, d, settings)
    assert storage_uri(d) == f"pvc://tfxline-serving/taxi/kserve/{v2}"
    assert served(mount(claims, storage_uri(d), str(tmp_path / "pod2"))) == (v2, 0.75)
    sr.settle(d, settings)  # (TF Serving loaded v2)
    sr.promote(d, settings)
    assert served(mount(claims, storage_uri(d), str(tmp_path / "pod3"))) == (v2, 0.75)
    assert served(mount(claims, f"pvc://tfxline-serving/taxi/kserve/{v1}", str(tmp_path / "pod1"))) == (v1, 0.25)
    saved = os.path.join(kserve_files.kserve_dir(d, v2), str(v2), sp.SAVED_MODEL_FILE)
    assert os.stat(saved).st_ino == os.stat(os.path.join(d, str(v2), sp.SAVED_MODEL_FILE)).st_ino  # a hard link
    v3 = sp.push(tiny_model(tmp_path / "m3", 0.5), d, {"model_uri": "m3"}, keep_versions=1, now=300,
                 protect=sr.read(d).labelled)  # prunes v1, which no label names now
    sr.on_push(d, v3, "stable", 10, settings)
    assert sp.versions(d) == [v2, v3]
    assert sorted(os.listdir(os.path.join(d, kserve_files.KSERVE_DIR))) == [str(v2), str(v3)]


def test_a_link_out_of_the_mounted_tree_is_not_a_model(tmp_path):
    """The layout before: release/models/<v>/<v> a relative link to ../../../<v>: in the pod it
    dangles, and nothing loads (the stand-in fails where KServe fails)."""
    d = tmp_path / "claim" / "taxi"
    v = sp.push(tiny_model(tmp_path / "m", 0.25), str(d), {}, keep_versions=5, now=100)
    (d / "old" / "models" / str(v)).mkdir(parents=True)
    os.symlink(os.path.join("..", "..", "..", str(v)), d / "old" / "models" / str(v) / str(v))
    mnt = mount({"c": str(tmp_path / "claim")}, f"pvc://c/taxi/old/models/{v}", str(tmp_path / "pod"))
    with pytest.raises(AssertionError, match="no numbered version"):
        served(mnt)


def test_a_gs_storage_uri_copies_a_loadable_version(tmp_path, monkeypatch):
    """The serving directory on an object store (no links there: ``storage.links`` is false, so
    the release writes its files in place and copies each version's files)."""
    monkeypatch.setattr(storage, "links", lambda path: False)
    buckets = {"b": str(tmp_path / "bucket")}
    d = str(tmp_path / "bucket" / "serving" / "taxi")
    settings = sr.Settings(model_name="taxi", kserve_storage_uri="gs://b/serving/taxi")
    v1, v2 = release_of_two(tmp_path, d, settings)
    assert not os.path.islink(sr.release_dir(d)) and os.path.isfile(os.path.join(sr.release_dir(d), sr.STATE_FILE))
    saved = os.path.join(kserve_files.kserve_dir(d, v2), str(v2), sp.SAVED_MODEL_FILE)
    assert os.stat(saved).st_ino != os.stat(os.path.join(d, str(v2), sp.SAVED_MODEL_FILE)).st_ino  # a copy
    assert storage_uri(d) == f"gs://b/serving/taxi/kserve/{v2}"
    assert served(download_gcs(buckets, storage_uri(d), str(tmp_path / "pod2"))) == (v2, 0.75)
    sr.settle(d, settings)
    assert sr.read(d).canary == v2 and sr.read(d).stable == v1
