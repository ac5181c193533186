"""Which pushed versions serve, and the files a model server reads to serve them (no TFX or
TensorFlow here: the CLI's ``tfxline serving canary / promote / rollback`` and the Pusher share it).

A serving directory holds the pushed versions (``<serving_dir>/<version>/``, components/
serving_push.py) and, once a release exists, ``<serving_dir>/release``: a symbolic link to a
hidden directory that holds, all written together:

- ``release.json``: the labels (``stable``, ``canary`` and its traffic percent), the settings the
  files were rendered with, and the history of every label move;
- ``models.config``: TF Serving's ModelServerConfig (``--model_config_file``): the model, its
  base path, the labelled versions as the loaded ones, and the labels ``stable`` / ``canary``;
- ``batching_parameters.txt``: TF Serving's BatchingParameters (``--enable_batching
  --batching_parameters_file``), chosen from the stable version's measured batch latency
  (``batching_choice``; the measurement is in its push_metadata.json);
- ``monitoring.config``: TF Serving's MonitoringConfig (``--monitoring_config_file``): the
  Prometheus endpoint;
- ``inferenceservice.yaml``: the KServe InferenceService (``canaryTrafficPercent``) for a cluster;
- ``models/<version>/<version>``: relative links to the labelled versions, one model base path per
  version as KServe's TF Serving runtime expects (it serves ``/mnt/models/<version>``).

A change writes a new hidden directory, then replaces the link in one rename: a crash at any
point leaves the old release whole (the next change removes the leftover directory). TF Serving
polls the config file (``--model_config_file_poll_wait_seconds``); the link needs a POSIX file
system (local disk, a Kubernetes volume), as the versions' atomic renames do.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

from components import serving_push

LINK = "release"
HIDDEN_PREFIX = ".release-"
STATE_FILE = "release.json"
MODELS_CONFIG = "models.config"
BATCHING_FILE = "batching_parameters.txt"
MONITORING_FILE = "monitoring.config"
KSERVE_FILE = "inferenceservice.yaml"
STABLE, CANARY = "stable", "canary"
RELEASES = (STABLE, CANARY)  # serving.release: what a push does to the labels
PROMETHEUS_PATH = "/monitoring/prometheus/metrics"
DEFAULT_BATCHING = {"max_batch_size": 128, "batch_timeout_micros": 1000}  # when nothing was measured


class ReleaseError(ValueError):
    """A label move that cannot be done as asked; the release is unchanged."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """How the files are rendered (the ``serving`` config section; recorded in release.json)."""
    model_name: str
    base_path: str = ""            # the serving directory as TF Serving sees it; empty: its absolute path
    kserve_storage_uri: str = ""   # the serving directory as KServe sees it; empty: pvc://tfxline-serving/<name>
    batch_threads: int = 0         # TF Serving's num_batch_threads; 0: this machine's CPU count


@dataclasses.dataclass(frozen=True)
class Release:
    stable: Optional[int] = None
    canary: Optional[int] = None
    canary_percent: int = 0
    history: Tuple[Dict[str, Any], ...] = ()

    @property
    def labelled(self) -> List[int]:
        return sorted({v for v in (self.stable, self.canary) if v is not None})

    def moved(self, event: str, by: str = "", reason: str = "", now: Optional[float] = None, **labels) -> "Release":
        """This release with ``labels`` changed and the move recorded in its history."""
        new = dataclasses.replace(self, **labels)
        record = {"event": event, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
                  "stable": new.stable, "canary": new.canary, "canary_percent": new.canary_percent}
        if by:
            record["by"] = by
        if reason:
            record["reason"] = reason
        return dataclasses.replace(new, history=self.history + (record,))


# --- reading -------------------------------------------------------------------------------------

def release_dir(serving_dir: str) -> str:
    return os.path.join(serving_dir, LINK)


def read(serving_dir: str) -> Release:
    """The current release; an empty one when the directory has none yet."""
    path = os.path.join(release_dir(serving_dir), STATE_FILE)
    if not os.path.isfile(path):
        return Release()
    with open(path) as f:
        state = json.load(f)
    return Release(stable=state.get(STABLE), canary=state.get(CANARY),
                   canary_percent=int(state.get("canary_percent") or 0), history=tuple(state.get("history", ())))


def serving_version(serving_dir: str, release: Optional[Release] = None) -> Optional[int]:
    """The version the model server serves by default: the ``stable`` label, or without a release
    the highest version (TF Serving's rule for a bare ``--model_base_path``). ``release``: the
    one already read, if any."""
    stable = (release or read(serving_dir)).stable
    if stable is not None:
        return stable
    found = serving_push.versions(serving_dir)
    return found[-1] if found else None


def serving_version_dir(serving_dir: str) -> str:
    """The directory of ``serving_version``; FileNotFoundError when nothing was pushed."""
    version = serving_version(serving_dir)
    if version is None:
        raise FileNotFoundError(
            f"no pushed model in {serving_dir}; run 'tfxline run' until a model is blessed and pushed")
    return os.path.join(serving_dir, str(version))


def previous_stable(release: Release, exclude: Optional[int] = None) -> Optional[int]:
    """The stable version before the current one, from the history (for a rollback)."""
    for record in reversed(release.history):
        v = record.get(STABLE)
        if v is not None and v != release.stable and v != exclude:
            return v
    return None


# --- the label moves -----------------------------------------------------------------------------

def _known(serving_dir: str, version: int) -> None:
    found = serving_push.versions(serving_dir)
    if version not in found:
        raise ReleaseError(f"version {version} is not in {serving_dir} (it holds "
                           f"{', '.join(map(str, found)) or 'no version'}); 'tfxline serving' lists them")


def canary(serving_dir: str, version: int, percent: int, settings: Settings, by: str = "",
           now: Optional[float] = None) -> Release:
    """Label ``version`` canary with ``percent`` of the traffic; stable keeps the rest."""
    if not 0 < percent < 100:
        raise ReleaseError(f"--percent {percent} is outside 1-99; give the canary's share of the traffic "
                           "(promote moves it to 100)")
    _known(serving_dir, version)
    current = read(serving_dir)
    stable = serving_version(serving_dir)
    if stable is None or stable == version:
        raise ReleaseError(f"version {version} has no stable version beside it to share traffic with; "
                           "a canary needs a stable version that is not itself (promote or push one first)")
    return write(serving_dir, current.moved("canary", by=by, now=now, stable=stable, canary=version,
                                            canary_percent=percent), settings)


def promote(serving_dir: str, settings: Settings, by: str = "", now: Optional[float] = None) -> Release:
    """The canary becomes stable, with all the traffic."""
    current = read(serving_dir)
    if current.canary is None:
        raise ReleaseError(f"no canary in {serving_dir} to promote; start one with "
                           "'tfxline serving canary VERSION --percent P'")
    _known(serving_dir, current.canary)
    return write(serving_dir, current.moved("promote", by=by, now=now, stable=current.canary, canary=None,
                                            canary_percent=0), settings)


def on_push(serving_dir: str, version: int, release_mode: str, percent: int, settings: Settings,
            now: Optional[float] = None) -> Release:
    """What a pipeline push does to the labels: ``stable`` makes the new version stable (the
    canary, if any, ends); ``canary`` starts it as the canary at ``percent`` when a stable one
    exists (a first push is stable)."""
    current = read(serving_dir)
    stable = current.stable
    if stable is None:  # no release yet: what served before this push was the highest older version
        stable = max((v for v in serving_push.versions(serving_dir) if v < version), default=None)
    if release_mode == CANARY and stable is not None and stable != version:
        new = current.moved("push as canary", now=now, stable=stable, canary=version, canary_percent=percent)
    else:
        new = current.moved("push", now=now, stable=version, canary=None, canary_percent=0)
    return write(serving_dir, new, settings)


def on_rollback(serving_dir: str, new_version: int, restored: int, settings: Settings, by: str = "",
                reason: str = "", now: Optional[float] = None) -> Release:
    """After ``serving_push.rollback`` copied ``restored`` in as ``new_version``: it is stable,
    and no canary runs."""
    current = read(serving_dir)
    return write(serving_dir, current.moved(f"rollback to {restored}", by=by, reason=reason, now=now,
                                            stable=new_version, canary=None, canary_percent=0), settings)


# --- writing -------------------------------------------------------------------------------------

def write(serving_dir: str, release: Release, settings: Settings,
          step: Callable[[str], None] = lambda name: None) -> Release:
    """Render every file of ``release`` into a new hidden directory, then point the link at it
    in one rename. ``step(name)`` runs after each file (tests inject a crash there)."""
    for v in release.labelled:
        _known(serving_dir, v)
    hidden = os.path.join(serving_dir, f"{HIDDEN_PREFIX}{time.time_ns()}-{uuid.uuid4().hex[:8]}")
    os.makedirs(hidden)
    try:
        metadata = {v: serving_push.read_metadata(serving_dir, v) for v in release.labelled}
        files = render(serving_dir, release, settings, metadata)
        for name, text in files.items():
            with open(os.path.join(hidden, name), "w") as f:
                f.write(text)
            step(name)
        for v in release.labelled:  # KServe's base path per version: models/<v>/<v> -> <serving_dir>/<v>
            os.makedirs(os.path.join(hidden, "models", str(v)))
            os.symlink(os.path.join("..", "..", "..", str(v)), os.path.join(hidden, "models", str(v), str(v)))
        step("models")
        link = os.path.join(serving_dir, f".{LINK}.{uuid.uuid4().hex[:8]}")
        os.symlink(os.path.basename(hidden), link)
        step("link")
        os.replace(link, release_dir(serving_dir))  # the commit: one rename
    except BaseException:
        shutil.rmtree(hidden, ignore_errors=True)
        raise
    remove_old(serving_dir)
    return release


def remove_old(serving_dir: str) -> None:
    """Hidden release directories and links the current link does not point at (a crash's
    leftovers included)."""
    current = os.path.realpath(release_dir(serving_dir)) if os.path.islink(release_dir(serving_dir)) else ""
    for name in os.listdir(serving_dir):
        path = os.path.join(serving_dir, name)
        if name.startswith(HIDDEN_PREFIX) and os.path.realpath(path) != current:
            shutil.rmtree(path, ignore_errors=True)
        elif name.startswith(f".{LINK}.") and os.path.islink(path):
            os.unlink(path)


# --- rendering -----------------------------------------------------------------------------------

def render(serving_dir: str, release: Release, settings: Settings,
           metadata: Dict[int, Dict[str, Any]]) -> Dict[str, str]:
    """{file name: its text} for ``release`` (pure: no file is touched)."""
    batching = batching_choice((metadata.get(release.stable) or {}).get("batching"), settings.batch_threads)
    state = {STABLE: release.stable, CANARY: release.canary, "canary_percent": release.canary_percent,
             "model_name": settings.model_name, "settings": dataclasses.asdict(settings),
             "batching": batching, "history": list(release.history)}
    return {
        STATE_FILE: json.dumps(state, indent=2, sort_keys=True) + "\n",
        MODELS_CONFIG: models_config(serving_dir, release, settings),
        BATCHING_FILE: batching_parameters(batching),
        MONITORING_FILE: monitoring_config(),
        KSERVE_FILE: inference_service(release, settings),
    }


def base_path(serving_dir: str, settings: Settings) -> str:
    return settings.base_path or os.path.abspath(serving_dir)


def models_config(serving_dir: str, release: Release, settings: Settings) -> str:
    """TF Serving's ModelServerConfig in text format: the labelled versions are the ones loaded."""
    lines = ["# TF Serving's --model_config_file, written by tfxline (components/serving_release.py)",
             "model_config_list {", "  config {", f"    name: {_quote(settings.model_name)}",
             f"    base_path: {_quote(base_path(serving_dir, settings))}", '    model_platform: "tensorflow"']
    if release.labelled:
        lines.append("    model_version_policy {")
        lines.append("      specific {")
        lines += [f"        versions: {v}" for v in release.labelled]
        lines += ["      }", "    }"]
    for label, v in ((STABLE, release.stable), (CANARY, release.canary)):
        if v is not None:
            lines.append(f"    version_labels {{ key: {_quote(label)} value: {v} }}")
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def batching_choice(measured: Optional[Dict[str, Any]], batch_threads: int) -> Dict[str, Any]:
    """TF Serving's batching settings from the model's measured latency per batch size
    ({"latency_ms": {batch: p50 ms}}, measured at push by components.batch_latency):

    - max_batch_size: the smallest measured batch whose cost per example is within 10 % of the
      cheapest measured (larger batches buy little more throughput, and every request in them
      waits for the whole batch);
    - batch_timeout_micros: the latency of a batch of one: a lone request waits at most about as
      long again as it takes to run;
    - allowed_batch_sizes: the measured sizes up to max_batch_size (a batch is padded to the next);
    - num_batch_threads: ``serving.batch_threads``, or this machine's CPU count.
    """
    threads = batch_threads or os.cpu_count() or 1
    latency = {int(b): float(ms) for b, ms in ((measured or {}).get("latency_ms") or {}).items()}
    if not latency:
        return dict(DEFAULT_BATCHING, num_batch_threads=threads, allowed_batch_sizes=[],
                    how="not measured (a version pushed before the measurement); TF Serving's usual starting values")
    per_example = {b: ms / b for b, ms in latency.items()}
    best = min(per_example.values())
    max_batch = min(b for b, cost in per_example.items() if cost <= 1.1 * best)
    timeout = max(100, int(round(latency.get(1, min(latency.values())) * 1000)))
    how = (f"measured p50 ms per batch {', '.join(f'{b}: {latency[b]:.2f}' for b in sorted(latency))}; "
           f"max_batch_size {max_batch}: the smallest batch within 10 % of the cheapest cost per example "
           f"({best * 1000:.1f} us); batch_timeout_micros {timeout}: a batch of one's latency")
    return {"max_batch_size": max_batch, "batch_timeout_micros": timeout, "num_batch_threads": threads,
            "allowed_batch_sizes": sorted(b for b in latency if b <= max_batch), "how": how}


def batching_parameters(choice: Dict[str, Any]) -> str:
    lines = ["# TF Serving's --batching_parameters_file (with --enable_batching), written by tfxline",
             f"# {choice['how']}",
             f"max_batch_size {{ value: {choice['max_batch_size']} }}",
             f"batch_timeout_micros {{ value: {choice['batch_timeout_micros']} }}",
             f"num_batch_threads {{ value: {choice['num_batch_threads']} }}",
             "max_enqueued_batches { value: 100 }"]
    lines += [f"allowed_batch_sizes: {b}" for b in choice.get("allowed_batch_sizes", [])]
    return "\n".join(lines) + "\n"


def monitoring_config() -> str:
    return ("# TF Serving's --monitoring_config_file, written by tfxline: Prometheus scrapes\n"
            f"# http://<host>:<rest_api_port>{PROMETHEUS_PATH}\n"
            f'prometheus_config {{\n  enable: true\n  path: "{PROMETHEUS_PATH}"\n}}\n')


def storage_uri(settings: Settings) -> str:
    return (settings.kserve_storage_uri or f"pvc://tfxline-serving/{settings.model_name}").rstrip("/")


def inference_service(release: Release, settings: Settings) -> str:
    """KServe's InferenceService: the predictor serves the canary's version at
    ``canaryTrafficPercent`` (KServe keeps the previous revision, the stable one, on the rest),
    or the stable version alone. Applied after each move, it is what KServe's canary rollout
    expects."""
    import yaml

    version = release.canary if release.canary is not None else release.stable
    predictor: Dict[str, Any] = {"model": {
        "modelFormat": {"name": "tensorflow"},
        "storageUri": f"{storage_uri(settings)}/{LINK}/models/{version}" if version is not None else storage_uri(settings),
    }}
    if release.canary is not None:
        predictor["canaryTrafficPercent"] = release.canary_percent
    annotations = {f"tfxline/{label}-version": str(v) for label, v in ((STABLE, release.stable), (CANARY, release.canary))
                   if v is not None}
    manifest = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
                "metadata": {"name": _k8s_name(settings.model_name), "annotations": annotations},
                "spec": {"predictor": predictor}}
    return "# kubectl apply -f inferenceservice.yaml (written by tfxline)\n" + yaml.safe_dump(manifest, sort_keys=False)


def _k8s_name(name: str) -> str:
    """A DNS-1035 label, as KServe requires of an InferenceService's name."""
    out = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
    return (out if out[:1].isalpha() else f"m-{out}")[:63].rstrip("-") or "model"


def _quote(text: str) -> str:
    return json.dumps(text)
