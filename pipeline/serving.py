"""The serving directory as a team sees it: ``tfxline serving`` (its versions, newest first,
which ones serve under which label and where each came from), ``tfxline serving canary`` /
``promote`` (the release labels: components/serving_release.py) and ``tfxline serving rollback``.

No TensorFlow here: they read and copy files (``components.serving_push``, ``serving_release``).
"""
from __future__ import annotations

import getpass
import json
from typing import Dict, List, Optional, Tuple

from components import serving_push, serving_release
from pipeline.config import PipelineConfig
from pipeline.history import format_columns, metric_text

HEADER = ("version", "pushed (UTC)", "run", "spans", "metric", "state")


def _metric(meta: Dict) -> str:
    return metric_text(meta.get("metrics") or {}, meta.get("task", ""))[0]


def release_settings(cfg: PipelineConfig) -> serving_release.Settings:
    return serving_release.Settings(model_name=cfg.serving.model_name or cfg.name,
                                    base_path=cfg.serving.tf_serving_base_path,
                                    kserve_storage_uri=cfg.serving.kserve_storage_uri,
                                    batch_threads=cfg.serving.batch_threads)


def release_properties(cfg: PipelineConfig) -> Dict:
    """The Pusher's release parameters (components/safe_pusher.py), from the serving section."""
    settings = release_settings(cfg)
    return {"release": cfg.serving.release, "canary_percent": cfg.serving.canary_percent,
            "model_name": settings.model_name, "tf_serving_base_path": settings.base_path,
            "kserve_storage_uri": settings.kserve_storage_uri, "batch_threads": settings.batch_threads}


def tflite_properties(cfg: PipelineConfig) -> Dict:
    """The Pusher's TFLite parameters (components/tflite_export.py); none when it is off."""
    if cfg.serving.tflite == "off":
        return {}
    return {"tflite": cfg.serving.tflite, "tflite_tolerance": cfg.serving.tflite_tolerance,
            "features": json.dumps(cfg.features.to_dict(), sort_keys=True)}


def _labels(version: int, release: serving_release.Release, serving: Optional[int]) -> List[str]:
    if release.stable is None:  # no release yet: TF Serving's rule, the highest version
        return ["serving"] if version == serving else []
    parts = []
    if version == release.stable:
        parts.append("stable" + (f" {100 - release.canary_percent} %" if release.canary is not None else ""))
    if version == release.canary:
        parts.append(f"canary {release.canary_percent} %")
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


def format_versions(serving_dir: str) -> str:
    release = serving_release.read(serving_dir)
    rows = version_rows(serving_dir, release)
    if not rows:
        return f"no pushed model in {serving_dir}; run 'tfxline run' until a model is blessed and pushed"
    how = ("TF Serving serves the highest version; no release labels yet" if release.stable is None else
           f"labels in {serving_release.release_dir(serving_dir)}/{serving_release.MODELS_CONFIG}")
    lines = [f"{serving_dir} ({how})", format_columns(HEADER, rows)]
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


def _release_lines(serving_dir: str, release: serving_release.Release) -> List[str]:
    where = serving_release.release_dir(serving_dir)
    stable = f"stable: version {release.stable}"
    if release.canary is not None:
        stable += f" ({100 - release.canary_percent} %), canary: version {release.canary} ({release.canary_percent} %)"
    return [f"  {stable}",
            f"  written: {where}/{serving_release.MODELS_CONFIG} (TF Serving), "
            f"{serving_release.KSERVE_FILE} (KServe: kubectl apply -f), {serving_release.BATCHING_FILE}, "
            f"{serving_release.MONITORING_FILE}"]


def canary(cfg: PipelineConfig, version: int, percent: int) -> str:
    """Label ``version`` canary at ``percent``; the lines to print. Raises ``ReleaseError``."""
    release = serving_release.canary(cfg.serving_dir, version, percent, release_settings(cfg), by=getpass.getuser())
    return "\n".join([f"canary: version {version} serves {percent} % of the traffic beside stable version "
                      f"{release.stable}; 'tfxline serving promote' gives it all"] + _release_lines(cfg.serving_dir, release))


def promote(cfg: PipelineConfig) -> str:
    before = serving_release.read(cfg.serving_dir)
    release = serving_release.promote(cfg.serving_dir, release_settings(cfg), by=getpass.getuser())
    return "\n".join([f"promoted: version {release.stable} is stable with all the traffic (was version "
                      f"{before.stable}); 'tfxline serving rollback' serves version {before.stable}'s model again"]
                     + _release_lines(cfg.serving_dir, release))


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


def rollback(cfg: PipelineConfig, to: Optional[int], reason: str, dry_run: bool) -> str:
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
    return "\n".join([
        f"rolled back {serving_dir}: version {new} serves the model of {restored}; "
        f"{bad} no longer serves and is kept for inspection",
        "  TF Serving loads the new version on its next poll of the directory; 'tfxline predict' uses it now",
        "  the next pipeline run's Evaluator compares its candidate with this model, and its drift check "
        "with this model's training data",
    ] + _release_lines(serving_dir, release))
