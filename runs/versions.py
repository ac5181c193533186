"""The serving directory as a team sees it: ``tfxline serving`` (its versions, newest first,
which ones serve under which label and where each came from), ``tfxline serving canary`` /
``promote`` (the release labels: serving/release.py), ``tfxline serving rollback`` and
``tfxline serving settle`` (a pending move's labels, once TF Serving has loaded its versions).

With ``--server URL`` a move waits for TF Serving's model status (GET /v1/models/<name>,
http_rest_api_handler.cc:180-202 at TF Serving 9d981c5c; the JSON of apis/get_model_status.proto)
to report the move's versions AVAILABLE, then settles it.

No TensorFlow here: they read and copy files (serving/push.py, serving/release.py).
"""
from __future__ import annotations

import getpass
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Optional, Tuple

from tfxline.pipeline.config import PipelineConfig
from tfxline.pipeline.pusher_settings import release_settings
from tfxline.runs.history import format_columns, metric_text
from tfxline.serving import push as serving_push
from tfxline.serving import release as serving_release

HEADER = ("version", "pushed (UTC)", "run", "spans", "metric", "state")
WAIT_S = 300  # --timeout's default: TF Serving's config poll (docs: 30 s), its file-system poll, the load


class ServerError(RuntimeError):
    """TF Serving did not load a pending move's versions (in time); the move stays pending."""


def _metric(meta: Dict) -> str:
    return metric_text(meta.get("metrics") or {}, meta.get("task", ""))[0]


def _labels(version: int, release: serving_release.Release, serving: Optional[int]) -> List[str]:
    if release.stable is None and release.pending is None:  # no release yet: TF Serving's rule, the highest
        return ["serving"] if version == serving else []
    parts = []
    if version == release.stable:
        parts.append("stable" + (f" {100 - release.canary_percent} %" if release.canary is not None else ""))
    if version == release.canary:
        parts.append(f"canary {release.canary_percent} %")
    stable, canary_version, percent = release.target
    if release.pending is not None and version == stable and version != release.stable:
        parts.append("pending stable" + (f" {100 - percent} %" if canary_version is not None else ""))
    if release.pending is not None and version == canary_version and version != release.canary:
        parts.append(f"pending canary {percent} %")
    return parts


def _state(version: int, labels: List[str], meta: Dict, rolled_back: Dict[int, int]) -> str:
    parts = list(labels)
    record = meta.get("rollback")
    if record:
        restored = f"restores {record['restored_version']}"
        parts.append(restored + (f" ({record['reason']})" if record.get("reason") else ""))
    if version in rolled_back:
        parts.append(f"rolled back by {rolled_back[version]}")
    return ", ".join(parts) or "-"


def version_rows(serving_dir: str, release: Optional[serving_release.Release] = None) -> List[Tuple[str, ...]]:
    """One row per kept version, newest first (``HEADER``'s columns)."""
    metadata = serving_push.metadata_by_version(serving_dir)
    rolled_back = serving_push.rolled_back(metadata)
    release = release or serving_release.read(serving_dir)
    serving = serving_release.serving_version(serving_dir, release)
    rows = []
    for v, meta in reversed(metadata.items()):
        pushed = (meta.get("rollback") or {}).get("at") or meta.get("pushed_at", "-")
        spans = ",".join(str(s) for s in (meta.get("data") or {}).get("spans", [])) or "-"
        rows.append((str(v), pushed.replace("T", " ").rstrip("Z"), meta.get("pipeline_run_id") or "-", spans,
                     _metric(meta), _state(v, _labels(v, release, serving), meta, rolled_back)))
    return rows


def format_versions(serving_dir: str, server: str = "") -> str:
    """``tfxline serving``'s table; ``server``: serving.tf_serving_url (a pending move's line names it)."""
    release = serving_release.read(serving_dir)
    rows = version_rows(serving_dir, release)
    if not rows:
        return (f"no pushed model in {serving_dir}: no run of this config has pushed one yet; run 'tfxline run "
                "--config YOUR_CONFIG' (the same config); a run that is not blessed names the gate and its key on its "
                "blessing: line ('tfxline runs show' prints it again)")
    how = ("TF Serving serves the highest version; no release labels yet"
           if release.stable is None and release.pending is None else
           f"labels in {serving_release.release_dir(serving_dir)}/{serving_release.MODELS_CONFIG}")
    lines = [f"{serving_dir} ({how})", format_columns(HEADER, rows)]
    if release.pending is not None:
        lines.append(_pending_line(release, release.pending, server))
    moves = [r for r in release.history if r.get("event") != "push"][-5:]
    if moves:
        lines.append("release history (newest last):")
        lines += [f"  {r['at'].replace('T', ' ').rstrip('Z')}  {r['event']}: stable {r.get('stable')}"
                  + (f", canary {r['canary']} at {r['canary_percent']} %" if r.get("canary") is not None else "")
                  + (f" (by {r['by']})" if r.get("by") else "") + (f": {r['reason']}" if r.get("reason") else "")
                  for r in moves]
    return "\n".join(lines)


def describe_version(serving_dir: str, version: int) -> str:
    meta = serving_push.read_metadata(serving_dir, version)
    details = [f"run {meta['pipeline_run_id']}"] if meta.get("pipeline_run_id") else []
    metric = _metric(meta)
    if metric != "-":
        details.append(metric)
    return f"version {version}" + (f" ({', '.join(details)})" if details else "")


def _pending_line(release: serving_release.Release, pending: Dict[str, Any], server: str = "") -> str:
    """What 'pending stable' / 'pending canary' mean, and the command that settles them: with
    ``server`` (serving.tf_serving_url) the one TF Serving reads the release, else either form."""
    stable, canary_version, percent = release.target
    target = f"stable {stable}" + (f", canary {canary_version} at {percent} %" if canary_version is not None else "")
    waiting = ", ".join(str(v) for v in release.labelled if v not in release.in_force)
    if server:
        how = f"('tfxline serving settle', which asks TF Serving at {server})"
    else:
        how = f"('tfxline serving settle --server URL'), or at once with '{serving_release.NO_SERVER}' where no TF " \
              "Serving reads this release"
    return (f"pending: {pending['event']} ({target}): predict and the next run use version {stable} already; "
            f"the labels move once TF Serving has loaded {'it' if ',' not in waiting else 'them'} {how}")


def _release_lines(serving_dir: str, release: serving_release.Release, server: str = "") -> List[str]:
    where = serving_release.release_dir(serving_dir)
    stable = f"stable: version {release.stable}"
    if release.canary is not None:
        stable += f" ({100 - release.canary_percent} %), canary: version {release.canary} ({release.canary_percent} %)"
    lines = [f"  {stable}"] if release.stable is not None else []
    if release.pending is not None:
        lines.append(f"  {_pending_line(release, release.pending, server)}")
    return lines + [f"  written: {where}/{serving_release.MODELS_CONFIG} (TF Serving), "
                    f"{serving_release.KSERVE_FILE} (KServe: kubectl apply -f), {serving_release.BATCHING_FILE}, "
                    f"{serving_release.MONITORING_FILE}"]


def _finish(cfg: PipelineConfig, release: serving_release.Release, server: str, timeout: float) -> List[str]:
    """With ``server``: wait for the pending move's versions there, then settle it."""
    if release.pending is None or not server:
        return []
    return [settle(cfg, server, timeout)]


def canary(cfg: PipelineConfig, version: int, percent: int, server: str = "", timeout: float = WAIT_S) -> str:
    """Label ``version`` canary at ``percent``; the lines to print. Raises ``ReleaseError``."""
    release = serving_release.canary(cfg.serving_dir, version, percent, release_settings(cfg), by=getpass.getuser())
    return "\n".join([f"canary: version {version} serves {percent} % of the traffic beside stable version "
                      f"{release.target[0]}" + (" once settled" if release.pending else "")
                      + "; 'tfxline serving promote' gives it all"]
                     + _release_lines(cfg.serving_dir, release, cfg.serving.tf_serving_url)
                     + _finish(cfg, release, server, timeout))


def promote(cfg: PipelineConfig, server: str = "", timeout: float = WAIT_S) -> str:
    before = serving_release.read(cfg.serving_dir)
    release = serving_release.promote(cfg.serving_dir, release_settings(cfg), by=getpass.getuser())
    return "\n".join([f"promoted: version {release.target[0]} is stable with all the traffic (was version "
                      f"{before.stable}); 'tfxline serving rollback' serves version {before.stable}'s model again"]
                     + _release_lines(cfg.serving_dir, release, cfg.serving.tf_serving_url)
                     + _finish(cfg, release, server, timeout))


def rollback_target(serving_dir: str, to: Optional[int]):
    """(the version serving now, the one to serve again): by default the stable version before
    the current one when a release records it, else serving_push's rule."""
    release = serving_release.read(serving_dir)
    current = serving_release.serving_version(serving_dir, release)
    if to is None and release.stable is not None:
        previous = serving_release.previous_stable(release)
        if previous in serving_push.versions(serving_dir):
            to = previous
    return serving_push.rollback_target(serving_dir, to, current)


def rollback(cfg: PipelineConfig, to: Optional[int], reason: str, dry_run: bool, server: str = "",
             timeout: float = WAIT_S) -> str:
    """Serve an older version again; the lines to print. Raises ``RollbackError``."""
    serving_dir, keep_versions = cfg.serving_dir, cfg.serving.keep_versions
    current, target = rollback_target(serving_dir, to)
    restored, bad = describe_version(serving_dir, target), describe_version(serving_dir, current)
    if dry_run:
        return (f"would roll back {serving_dir}: serve the model of {restored} again, as a new version, "
                f"instead of {bad}; nothing changed (--dry-run)")
    by = getpass.getuser()
    new, _, _ = serving_push.rollback(serving_dir, keep_versions, to=target, reason=reason, by=by, current=current,
                                      protect=serving_release.read(serving_dir).labelled)
    release = serving_release.on_rollback(serving_dir, new, target, release_settings(cfg), by=by, reason=reason)
    waits = release.pending is not None and release.stable is not None
    return "\n".join([
        f"rolled back {serving_dir}: version {new} holds the model of {restored}; "
        + (f"{bad} serves until the stable label moves to version {new}, then no longer serves and is kept for "
           "inspection" if waits else f"{bad} no longer serves and is kept for inspection"),
        f"  TF Serving loads version {new} when it next reads models.config (--model_config_file_poll_wait_seconds) "
        "and the file system; the stable label moves to it only after that (a label may only name a loaded version)"
        if waits else f"  version {new} is stable",
        f"  'tfxline predict', the next pipeline run's Evaluator (its baseline) and its drift check use version {new} "
        "now",
    ] + _release_lines(serving_dir, release, cfg.serving.tf_serving_url) + _finish(cfg, release, server, timeout))


def settle(cfg: PipelineConfig, server: str, timeout: float = WAIT_S, without_server: bool = False) -> str:
    """Move a pending move's labels onto its versions: after ``server`` (else serving.tf_serving_url)
    reports them AVAILABLE, or at once with ``without_server``. Raises ``ReleaseError``, ``ServerError``."""
    server = server or ("" if without_server else cfg.serving.tf_serving_url)
    release = serving_release.read(cfg.serving_dir)
    settings = release_settings(cfg)
    if release.pending is None:
        return f"nothing to settle in {cfg.serving_dir}: no label move is pending"
    stable, canary_version, _ = release.target
    versions = [v for v in (stable, canary_version) if v is not None]
    if not server and not without_server:
        raise serving_release.ReleaseError(
            f"settle needs --server URL (or serving.tf_serving_url), TF Serving's REST address (e.g. "
            f"http://localhost:8501), to check that version "
            f"{', '.join(map(str, versions))} is loaded before the labels move to it (TF Serving refuses a label on a "
            "version it has not loaded, and then fails every poll of the config); or pass --without-server when no "
            "TF Serving reads this release")
    if server:
        wait_until_available(server, settings.model_name, versions, timeout)
    settled = serving_release.settle(cfg.serving_dir, settings)
    checked = f"TF Serving at {server} has version {', '.join(map(str, versions))} AVAILABLE" if server else \
        "not checked with a server (--without-server)"
    canary = f", canary {settled.canary} at {settled.canary_percent} %" if settled.canary is not None else ""
    return "\n".join([f"settled: {release.pending['event']}: stable {settled.stable}{canary} ({checked})"]
                     + _release_lines(cfg.serving_dir, settled))


def model_status(server: str, model_name: str) -> Dict[int, Tuple[str, str]]:
    """{version: (state, error message)} from TF Serving's GET /v1/models/<name>: the JSON of
    GetModelStatusResponse (``model_version_status[].version`` an int64 as a string, ``state``
    an enum name, ``status.error_message``). {} while TF Serving has no version of the model
    (404: it has not read a config naming it yet)."""
    url = f"{server.rstrip('/')}/v1/models/{urllib.parse.quote(model_name, safe='')}"
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            body = json.load(response)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return {}
        raise ServerError(f"TF Serving at {server} answered {url} with HTTP {e.code} ({e.read()[:200]!r}); "
                          "check --server names its REST port (--rest_api_port)") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise ServerError(f"cannot read TF Serving's model status at {url} ({getattr(e, 'reason', e)}); check "
                          "--server names its REST address (--rest_api_port), e.g. http://localhost:8501") from None
    return {int(s["version"]): (s.get("state", ""), (s.get("status") or {}).get("error_message", ""))
            for s in body.get("model_version_status", [])}


def wait_until_available(server: str, model_name: str, versions: List[int], timeout: float,
                         every: float = 2.0) -> None:
    """Until TF Serving reports every one of ``versions`` AVAILABLE; ``ServerError`` when one
    failed to load (state END with an error) or ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    while True:
        states = model_status(server, model_name)
        failed = [(v, states[v][1]) for v in versions if v in states and states[v][0] == "END" and states[v][1]]
        if failed:
            v, error = failed[0]
            raise ServerError(f"TF Serving could not load version {v} of model {model_name}: {error}; the labels stay "
                              "where they are; fix the model, or roll back: 'tfxline serving rollback'")
        if all(states.get(v, ("",))[0] == "AVAILABLE" for v in versions):
            return
        if time.monotonic() >= deadline:
            seen = ", ".join(f"{v}: {states[v][0] if v in states else 'not seen'}" for v in versions)
            raise ServerError(f"version {', '.join(map(str, versions))} of model {model_name} not AVAILABLE at "
                              f"{server} after {timeout:g} s ({seen}); the move stays pending: check that TF Serving "
                              "reads this release's models.config, then run 'tfxline serving settle --server URL' "
                              "again")
        time.sleep(every)
