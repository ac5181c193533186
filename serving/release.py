"""Which pushed versions serve, and the files a model server reads to serve them (no TFX or
TensorFlow here: the CLI's ``tfxline serving canary / promote / rollback / settle`` and the Pusher
share it). Files go through serving/storage.py: the serving directory may be a local path or an
object-store URI (gs://...).

A serving directory holds the pushed versions (``<serving_dir>/<version>/``, components/
serving_push.py), once a release exists ``<serving_dir>/release/`` with, written together:

- ``release.json``: the labels in force (``stable``, ``canary`` and its traffic percent), the move
  waiting for its versions to load (``pending``), the settings the files were rendered with, and
  the history of every label move;
- ``models.config``: TF Serving's ModelServerConfig (``--model_config_file``): the model, its
  base path, the versions to load (``specific``: the labelled ones and the pending move's) and
  the labels in force;
- ``batching_parameters.txt``: TF Serving's BatchingParameters (``--enable_batching
  --batching_parameters_file``), chosen from the stable version's measured batch latency
  (``batching_choice``; the measurement is in its push_metadata.json);
- ``monitoring.config``: TF Serving's MonitoringConfig (``--monitoring_config_file``): the
  Prometheus endpoint;
- ``inferenceservice.yaml``: the KServe InferenceService (``canaryTrafficPercent``) for a cluster,

and ``<serving_dir>/kserve/<version>/<version>/``: each labelled version's files (hard links on a
local disk, copies on an object store), the tree a KServe ``storageUri`` names: KServe mounts a
``pvc://`` path at /mnt/models or copies a ``gs://`` prefix there, and its TF Serving runtime
serves ``--model_base_path=/mnt/models`` (a numbered version below it). Nothing in it links out of
it. It is removed when its version is pruned.

**Two phases.** TF Serving assigns a label only to a version it has loaded (server_core.cc:574-584
at TF Serving 9d981c5c; tests/tf_serving_rules.py), and it reads the labels of a config *before*
it loads the config's new versions; a config that fails leaves the new versions unloaded, so the
same file fails at every poll after. So a move onto a version TF Serving has not loaded is written
twice: first a models.config that loads it (added to ``specific``) with the labels where they were
(the move is ``pending`` in release.json), then, once TF Serving reports it AVAILABLE, ``settle``
moves the labels (and unloads what no label names). A move between loaded versions (a promote) is
one write. The KServe manifest names the move's target at once: KServe sends traffic to a new
revision only once it is ready.

Writing: on a local disk ``release`` is a symbolic link to a hidden directory; a change writes a
new hidden directory, then replaces the link in one rename, so a crash at any point leaves the old
release whole (the next change removes the leftover directory). An object store has no links or
renames: there each file is one object, whole or absent, written in ``WRITE_ORDER`` (release.json
last), so a crash leaves the previous release.json, and the next change writes every file again.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Tuple

from serving import push as serving_push
from serving import storage

LINK = "release"
HIDDEN_PREFIX = ".release-"
STATE_FILE = "release.json"
MODELS_CONFIG = "models.config"
BATCHING_FILE = "batching_parameters.txt"
MONITORING_FILE = "monitoring.config"
KSERVE_FILE = "inferenceservice.yaml"
KSERVE_DIR = "kserve"
WRITE_ORDER = (BATCHING_FILE, MONITORING_FILE, KSERVE_FILE, MODELS_CONFIG, STATE_FILE)
STABLE, CANARY = "stable", "canary"
RELEASES = (STABLE, CANARY)  # serving.release: what a push does to the labels
PROMETHEUS_PATH = "/monitoring/prometheus/metrics"
DEFAULT_BATCHING = {"max_batch_size": 128, "batch_timeout_micros": 1000}  # when nothing was measured
SETTLE = "tfxline serving settle --server http://<tf-serving-host>:8501"  # what finishes a pending move
NO_SERVER = "--without-server where no TF Serving reads this release"  # its other form


class ReleaseError(ValueError):
    """A label move that cannot be done as asked, or a release that cannot be read; the release
    is unchanged."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """How the files are rendered (the ``serving`` config section; recorded in release.json)."""
    model_name: str
    base_path: str = ""            # the serving directory as TF Serving sees it; empty: its absolute path
    kserve_storage_uri: str = ""   # the serving directory as KServe sees it; empty: pvc://tfxline-serving/<name>
    batch_threads: int = 0         # TF Serving's num_batch_threads; 0: this machine's CPU count

    @classmethod
    def from_properties(cls, properties: Dict[str, Any]) -> "Settings":
        """From the Pusher's release parameters (pipeline/pusher_settings.py makes them)."""
        return cls(model_name=properties.get("model_name") or "model",
                   base_path=properties.get("tf_serving_base_path") or "",
                   kserve_storage_uri=properties.get("kserve_storage_uri") or "",
                   batch_threads=int(properties.get("batch_threads") or 0))


@dataclasses.dataclass(frozen=True)
class Release:
    stable: Optional[int] = None      # the labels in force (in models.config)
    canary: Optional[int] = None
    canary_percent: int = 0
    history: Tuple[Dict[str, Any], ...] = ()
    pending: Optional[Dict[str, Any]] = None  # the move waiting for its versions to load: its history record

    @property
    def in_force(self) -> List[int]:
        return sorted({v for v in (self.stable, self.canary) if v is not None})

    @property
    def target(self) -> Tuple[Optional[int], Optional[int], int]:
        """(stable, canary, canary percent) once the pending move is settled."""
        if self.pending is None:
            return self.stable, self.canary, self.canary_percent
        return self.pending.get(STABLE), self.pending.get(CANARY), int(self.pending.get("canary_percent") or 0)

    @property
    def labelled(self) -> List[int]:
        """The versions models.config loads: the labelled ones and the pending move's (never pruned)."""
        stable, canary, _ = self.target
        return sorted(set(self.in_force) | {v for v in (stable, canary) if v is not None})


def _record(event: str, stable: Optional[int], canary: Optional[int], canary_percent: int, by: str = "",
            reason: str = "", now: Optional[float] = None) -> Dict[str, Any]:
    record = {"event": event, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
              STABLE: stable, CANARY: canary, "canary_percent": canary_percent}
    if by:
        record["by"] = by
    if reason:
        record["reason"] = reason
    return record


# --- reading -------------------------------------------------------------------------------------

def release_dir(serving_dir: str) -> str:
    return storage.join(serving_dir, LINK)


def read(serving_dir: str) -> Release:
    """The current release; an empty one when the directory has none yet. A release.json that
    cannot be read, or that names a version not in the directory, is a ``ReleaseError`` naming
    the file and the fix."""
    where = release_dir(serving_dir)
    path = storage.join(where, STATE_FILE)
    if not storage.isfile(path):
        if storage.links(where) and os.path.islink(storage.local(where)):
            _damaged(serving_dir, where, f"it links to {os.readlink(storage.local(where))}, which holds no {STATE_FILE}")
        if storage.exists(where):
            _damaged(serving_dir, where, f"it holds no {STATE_FILE}")
        return Release()
    try:
        state = json.loads(storage.read_text(path))
    except ValueError as e:
        reason = f"{e.msg} at line {e.lineno} column {e.colno}" if isinstance(e, json.JSONDecodeError) else str(e)
        _damaged(serving_dir, path, f"it is not valid JSON ({reason})")
    try:
        release = _from_state(state)
    except ValueError as e:
        _damaged(serving_dir, path, str(e))
    found = serving_push.versions(serving_dir)
    for what, version in _named_versions(release):
        if version not in found:
            _damaged(serving_dir, path, f"its {what} is version {version}, which is not in {serving_dir} (it holds "
                                        f"{', '.join(map(str, found)) or 'no version'})")
    return release


def _damaged(serving_dir: str, path: str, problem: str) -> None:
    raise ReleaseError(f"the release {path} cannot be used: {problem}; nothing was changed; fix: restore it, or delete "
                       f"{release_dir(serving_dir)} to start a new release (the versions stay; the next push, or "
                       "'tfxline serving rollback --to VERSION', labels one stable)")


def _from_state(state: Any) -> Release:
    if not isinstance(state, dict):
        raise ValueError(f"it holds {type(state).__name__}, not an object")
    stable, canary, percent = _labels(state, "")
    history = state.get("history", [])
    if not isinstance(history, list) or not all(isinstance(r, dict) for r in history):
        raise ValueError("its history is not a list of moves")
    pending = state.get("pending")
    if pending is not None:
        if not isinstance(pending, dict):
            raise ValueError("its pending move is not an object")
        _labels(pending, "pending ")
    return Release(stable=stable, canary=canary, canary_percent=percent, history=tuple(history), pending=pending)


def _labels(state: Dict[str, Any], what: str) -> Tuple[Optional[int], Optional[int], int]:
    def version(key: str) -> Optional[int]:
        value = state.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"its {what}{key} is {json.dumps(value)}, not a version number")
        return value
    stable, canary, percent = version(STABLE), version(CANARY), state.get("canary_percent") or 0
    if isinstance(percent, bool) or not isinstance(percent, int) or not 0 <= percent < 100:
        raise ValueError(f"its {what}canary_percent is {json.dumps(percent)}, not a share of 0-99")
    if canary is not None and (stable is None or canary == stable or not percent):
        raise ValueError(f"its {what}canary {canary} has no stable version beside it, or no traffic share")
    return stable, canary, percent


def _named_versions(release: Release) -> List[Tuple[str, int]]:
    stable, canary, _ = release.target
    named = [(STABLE, release.stable), (CANARY, release.canary), (f"pending {STABLE}", stable),
             (f"pending {CANARY}", canary)]
    return [(what, v) for what, v in named if v is not None]


def serving_version(serving_dir: str, release: Optional[Release] = None) -> Optional[int]:
    """The version the release serves by default: the stable one of its target, a pending move's
    included (the pipeline blessed and pushed it: the next run's baseline and drift reference,
    and what ``predict`` runs; TF Serving's label follows once ``settle`` moves it); without a
    release the highest version (TF Serving's rule for a bare ``--model_base_path``).
    ``release``: the one already read, if any."""
    release = release or read(serving_dir)
    stable = release.target[0]
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
    return storage.join(serving_dir, str(version))


def previous_stable(release: Release, exclude: Optional[int] = None) -> Optional[int]:
    """The stable version before the current one, from the history (for a rollback)."""
    for record in reversed(release.history):
        v = record.get(STABLE)
        if v is not None and v != release.stable and v != exclude:
            return v
    return None


# --- the label moves -----------------------------------------------------------------------------

def _known(serving_dir: str, version: int, found: Optional[List[int]] = None) -> None:
    """ReleaseError unless ``version`` is in the serving directory (``found``: its versions, when
    already listed)."""
    found = serving_push.versions(serving_dir) if found is None else found
    if version not in found:
        raise ReleaseError(f"version {version} is not in {serving_dir} (it holds "
                           f"{', '.join(map(str, found)) or 'no version'}); 'tfxline serving' lists them")


def _move(serving_dir: str, current: Release, record: Dict[str, Any], settings: Settings) -> Release:
    """Move the labels as ``record`` says: at once when TF Serving has every version of it
    loaded (the labelled ones), else pending (models.config loads the new versions first). A
    pending move is replaced."""
    wanted = {v for v in (record[STABLE], record[CANARY]) if v is not None}
    if wanted <= set(current.in_force):
        return write(serving_dir, Release(stable=record[STABLE], canary=record[CANARY],
                                          canary_percent=record["canary_percent"],
                                          history=current.history + (record,)), settings)
    return write(serving_dir, dataclasses.replace(current, pending=record), settings)


def canary(serving_dir: str, version: int, percent: int, settings: Settings, by: str = "",
           now: Optional[float] = None) -> Release:
    """Label ``version`` canary with ``percent`` of the traffic; stable keeps the rest."""
    if not 0 < percent < 100:
        raise ReleaseError(f"--percent {percent} is outside 1-99; give the canary's share of the traffic "
                           "(promote moves it to 100)")
    _known(serving_dir, version)
    current = read(serving_dir)
    stable = serving_version(serving_dir, current)
    if stable is None or stable == version:
        raise ReleaseError(f"version {version} has no stable version beside it to share traffic with; "
                           "a canary needs a stable version that is not itself (promote or push one first)")
    return _move(serving_dir, current, _record("canary", stable, version, percent, by=by, now=now), settings)


def promote(serving_dir: str, settings: Settings, by: str = "", now: Optional[float] = None) -> Release:
    """The canary becomes stable, with all the traffic."""
    current = read(serving_dir)
    if current.canary is None:
        pending = current.target[1] if current.pending else None
        raise ReleaseError(f"no canary in {serving_dir} to promote; "
                           + (f"version {pending}'s canary move is pending: finish it first with '{SETTLE}'"
                              if pending is not None else "start one with 'tfxline serving canary VERSION --percent P'"))
    return _move(serving_dir, current, _record("promote", current.canary, None, 0, by=by, now=now), settings)


def on_push(serving_dir: str, version: int, release_mode: str, percent: int, settings: Settings,
            now: Optional[float] = None) -> Release:
    """What a pipeline push does to the labels: ``stable`` makes the new version stable (the
    canary, if any, ends); ``canary`` starts it as the canary at ``percent`` when a stable one
    exists (a first push is stable). The new version is not loaded yet: the move is pending
    (``push_summary`` says how it finishes)."""
    current = read(serving_dir)
    stable = serving_version(serving_dir, current) if (current.stable is not None or current.pending) else None
    if stable is None:  # no release yet: what served before this push was the highest older version
        stable = max((v for v in serving_push.versions(serving_dir) if v < version), default=None)
    if release_mode == CANARY and stable is not None and stable != version:
        record = _record("push as canary", stable, version, percent, now=now)
    else:
        record = _record("push", version, None, 0, now=now)
    return _move(serving_dir, current, record, settings)


def push_summary(release: Release, version: int) -> str:
    """One line on what a push did to the release (for the Pusher's PushedModel and the run's
    summary)."""
    stable, canary_version, percent = release.target
    what = (f"canary at {percent} % beside stable version {stable}" if canary_version == version
            else "stable")
    if release.pending is None:
        return f"version {version} is {what}"
    return (f"version {version} becomes {what} once TF Serving has loaded it; then move the labels: {SETTLE} "
            f"(or {NO_SERVER}; models.config loads it now, the labels stay where they are)")


def on_rollback(serving_dir: str, new_version: int, restored: int, settings: Settings, by: str = "",
                reason: str = "", now: Optional[float] = None) -> Release:
    """After ``serving_push.rollback`` copied ``restored`` in as ``new_version``: it becomes
    stable, and no canary runs (pending until TF Serving has loaded it)."""
    current = read(serving_dir)
    return _move(serving_dir, current, _record(f"rollback to {restored}", new_version, None, 0, by=by, reason=reason,
                                               now=now), settings)


def settle(serving_dir: str, settings: Settings, now: Optional[float] = None) -> Release:
    """The pending move's labels in force, once TF Serving has loaded its versions (the caller
    checks: runs/versions.py asks TF Serving); models.config stops loading what no label
    names. The release unchanged when nothing is pending."""
    current = read(serving_dir)
    if current.pending is None:
        return current
    record = dict(current.pending, settled_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)))
    return write(serving_dir, Release(stable=record[STABLE], canary=record[CANARY],
                                      canary_percent=int(record["canary_percent"] or 0),
                                      history=current.history + (record,)), settings)


# --- writing -------------------------------------------------------------------------------------

def write(serving_dir: str, release: Release, settings: Settings,
          step: Callable[[str], None] = lambda name: None) -> Release:
    """Render every file of ``release`` and publish them together (module docstring): the KServe
    trees first, then the release files. ``step(name)`` runs after each (tests inject a crash)."""
    found = serving_push.versions(serving_dir)  # listed once: on an object store each listing is requests
    for v in release.labelled:
        _known(serving_dir, v, found)
    metadata = {v: serving_push.read_metadata(serving_dir, v) for v in release.labelled}
    files = render(serving_dir, release, settings, metadata)
    sync_kserve(serving_dir, release.labelled, found)
    step(KSERVE_DIR)
    if storage.links(serving_dir):
        _publish_by_link(serving_dir, files, step)
    else:
        storage.makedirs(release_dir(serving_dir))
        for name in WRITE_ORDER:
            storage.write_text(storage.join(release_dir(serving_dir), name), files[name])
            step(name)
    return release


def _publish_by_link(serving_dir: str, files: Dict[str, str], step: Callable[[str], None]) -> None:
    hidden = storage.join(serving_dir, f"{HIDDEN_PREFIX}{time.time_ns()}-{uuid.uuid4().hex[:8]}")
    storage.makedirs(hidden)
    try:
        for name in WRITE_ORDER:
            storage.write_text(storage.join(hidden, name), files[name])
            step(name)
        link = storage.join(serving_dir, f".{LINK}.{uuid.uuid4().hex[:8]}")
        os.symlink(os.path.basename(hidden), storage.local(link))
        step("link")
        os.replace(storage.local(link), storage.local(release_dir(serving_dir)))  # the commit: one rename
    except BaseException:
        storage.rmtree(hidden)
        raise
    remove_old(serving_dir)


def remove_old(serving_dir: str) -> None:
    """Hidden release directories and links the current link does not point at (a crash's
    leftovers included)."""
    link = storage.local(release_dir(serving_dir))
    current = os.path.realpath(link) if os.path.islink(link) else ""
    for name in storage.listdir(serving_dir):
        path = storage.join(serving_dir, name)
        if name.startswith(HIDDEN_PREFIX) and os.path.realpath(storage.local(path)) != current:
            storage.rmtree(path)
        elif name.startswith(f".{LINK}.") and os.path.islink(storage.local(path)):
            storage.remove(path)


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


# --- rendering -----------------------------------------------------------------------------------

def render(serving_dir: str, release: Release, settings: Settings,
           metadata: Dict[int, Dict[str, Any]]) -> Dict[str, str]:
    """{file name: its text} for ``release`` (pure: no file is touched)."""
    stable = release.stable if release.stable is not None else release.target[0]
    batching = batching_choice((metadata.get(stable) or {}).get("batching"), settings.batch_threads)
    state = {STABLE: release.stable, CANARY: release.canary, "canary_percent": release.canary_percent,
             "pending": release.pending, "model_name": settings.model_name, "settings": dataclasses.asdict(settings),
             "batching": batching, "history": list(release.history)}
    return {
        STATE_FILE: json.dumps(state, indent=2, sort_keys=True) + "\n",
        MODELS_CONFIG: models_config(serving_dir, release, settings),
        BATCHING_FILE: batching_parameters(batching),
        MONITORING_FILE: monitoring_config(),
        KSERVE_FILE: inference_service(release, settings),
    }


def base_path(serving_dir: str, settings: Settings) -> str:
    """TF Serving wants an absolute path or a URI (server_core.cc:141-149)."""
    return settings.base_path or (serving_dir if storage.is_uri(serving_dir) else os.path.abspath(storage.local(serving_dir)))


def models_config(serving_dir: str, release: Release, settings: Settings) -> str:
    """TF Serving's ModelServerConfig in text format: ``specific`` loads the labelled versions and
    the pending move's; the labels are those in force (each names a loaded version)."""
    lines = ["# TF Serving's --model_config_file, written by tfxline (serving/release.py)",
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
    ({"latency_ms": {batch: p50 ms}}, measured at push by serving.batch_latency):

    - max_batch_size: the smallest measured batch whose cost per example is within 10 % of the
      cheapest measured (larger batches buy little more throughput, and every request in them
      waits for the whole batch);
    - batch_timeout_micros: the latency of a batch of one: a lone request waits at most about as
      long again as it takes to run;
    - allowed_batch_sizes: the measured sizes up to max_batch_size (a batch is padded to the next);
    - num_batch_threads: ``serving.batch_threads``, or this machine's CPU count.
    """
    threads = batch_threads or os.cpu_count() or 1
    threads_from = "serving.batch_threads" if batch_threads else "the CPU count of the machine that wrote it"
    latency = {int(b): float(ms) for b, ms in ((measured or {}).get("latency_ms") or {}).items()}
    if not latency:
        return dict(DEFAULT_BATCHING, num_batch_threads=threads, threads_from=threads_from, allowed_batch_sizes=[],
                    how="not measured (a version pushed before the measurement); TF Serving's usual starting values")
    per_example = {b: ms / b for b, ms in latency.items()}
    best = min(per_example.values())
    max_batch = min(b for b, cost in per_example.items() if cost <= 1.1 * best)
    timeout = max(100, int(round(latency.get(1, min(latency.values())) * 1000)))
    how = (f"measured p50 ms per batch {', '.join(f'{b}: {latency[b]:.2f}' for b in sorted(latency))}; "
           f"max_batch_size {max_batch}: the smallest batch within 10 % of the cheapest cost per example "
           f"({best * 1000:.1f} us); batch_timeout_micros {timeout}: a batch of one's latency")
    return {"max_batch_size": max_batch, "batch_timeout_micros": timeout, "num_batch_threads": threads,
            "threads_from": threads_from, "allowed_batch_sizes": sorted(b for b in latency if b <= max_batch), "how": how}


def batching_parameters(choice: Dict[str, Any]) -> str:
    lines = ["# TF Serving's --batching_parameters_file (with --enable_batching), written by tfxline",
             f"# {choice['how']}",
             f"# Tuned where it was written, not on the serving host: num_batch_threads is {choice['threads_from']}, "
             "the latencies were measured in-process on the pushing machine.",
             "# Re-tune on the serving host: serving.batch_threads = its CPU cores (the next label move rewrites this "
             "file), then under real traffic try batch_timeout_micros 0 and 1000-10000",
             "# and keep the best tail latency (TF Serving's tensorflow_serving/batching/README.md, Performance Tuning).",
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
    """KServe's InferenceService for the release's target (a pending move included: KServe sends
    traffic to a new revision only once it is ready): the predictor serves the canary's version at
    ``canaryTrafficPercent`` (KServe keeps the previous revision, the stable one, on the rest), or
    the stable version alone, from its ``kserve/<v>`` folder. Applied after each move, it is what
    KServe's canary rollout expects."""
    import yaml

    stable, canary_version, percent = release.target
    version = canary_version if canary_version is not None else stable
    predictor: Dict[str, Any] = {"model": {
        "modelFormat": {"name": "tensorflow"},
        "storageUri": f"{storage_uri(settings)}/{KSERVE_DIR}/{version}" if version is not None else storage_uri(settings),
    }}
    if canary_version is not None:
        predictor["canaryTrafficPercent"] = percent
    annotations = {f"tfxline/{label}-version": str(v) for label, v in ((STABLE, stable), (CANARY, canary_version))
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
