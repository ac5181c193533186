"""What KServe reads from a serving directory (docs/serving.md): ``inferenceservice.yaml`` in the
release (serving/release.py writes it with the others), and ``<serving_dir>/kserve/<v>/<v>/``,
each labelled version's files (hard links on a local disk, copies on an object store), the tree a
KServe ``storageUri`` names: KServe mounts a ``pvc://`` path at /mnt/models or copies a ``gs://``
prefix there, and its TF Serving runtime serves ``--model_base_path=/mnt/models`` (a numbered
version below it). Nothing in it links out of it; it goes when its version is pruned."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from tfxline.serving import push as serving_push
from tfxline.serving import storage

KSERVE_FILE = "inferenceservice.yaml"
KSERVE_DIR = "kserve"


def kserve_dir(serving_dir: str, version: int) -> str:
    """What a storageUri names for ``version``: a folder holding only ``<version>/``."""
    return storage.join(serving_dir, KSERVE_DIR, str(version))


def sync_kserve(serving_dir: str, versions: List[int], found: List[int]) -> None:
    """``kserve/<v>/<v>/`` for each of ``versions`` (hard links where the disk has them, else
    copies, saved_model.pb last as in a push: a copy cut short is redone), and no folder for a
    version no longer in the serving directory (``found``: its versions)."""
    root = storage.join(serving_dir, KSERVE_DIR)
    for name in storage.listdir(root):
        if not name.isdigit() or int(name) not in found:
            storage.rmtree(storage.join(root, name))
    for v in versions:
        tree = storage.join(kserve_dir(serving_dir, v), str(v))
        if not storage.isfile(storage.join(tree, serving_push.SAVED_MODEL_FILE)):
            storage.rmtree(kserve_dir(serving_dir, v))
            storage.copytree(serving_push.version_dir(serving_dir, v), tree, last=serving_push.LAST_FILES,
                             hardlink=True)


def storage_uri(configured: str, model_name: str) -> str:
    """The serving directory as KServe sees it: ``configured`` (serving.kserve_storage_uri), else
    pvc://tfxline-serving/<model name>."""
    return (configured or f"pvc://tfxline-serving/{model_name}").rstrip("/")


def inference_service(model_name: str, uri: str, stable: Optional[int], canary: Optional[int], percent: int) -> str:
    """KServe's InferenceService for the release's target (a pending move included: KServe sends
    traffic to a new revision only once it is ready): the predictor serves the ``canary``
    version at ``canaryTrafficPercent`` (KServe keeps the previous revision, the stable one, on the
    rest), or the ``stable`` version alone, from its ``kserve/<v>`` folder under ``uri`` (the
    storage URI). Applied after each move, it is what KServe's canary rollout expects."""
    import yaml

    version = canary if canary is not None else stable
    predictor: Dict[str, Any] = {"model": {
        "modelFormat": {"name": "tensorflow"},
        "storageUri": f"{uri}/{KSERVE_DIR}/{version}" if version is not None else uri,
    }}
    if canary is not None:
        predictor["canaryTrafficPercent"] = percent
    annotations = {f"tfxline/{label}-version": str(v) for label, v in (("stable", stable), ("canary", canary))
                   if v is not None}
    manifest = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
                "metadata": {"name": _k8s_name(model_name), "annotations": annotations},
                "spec": {"predictor": predictor}}
    return "# kubectl apply -f inferenceservice.yaml (written by tfxline)\n" + yaml.safe_dump(manifest, sort_keys=False)


def _k8s_name(name: str) -> str:
    """A DNS-1035 label, as KServe requires of an InferenceService's name."""
    out = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
    return (out if out[:1].isalpha() else f"m-{out}")[:63].rstrip("-") or "model"
