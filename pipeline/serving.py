"""The serving directory as a team sees it: ``tfxline serving`` (its versions, newest first,
which one TF Serving serves and where each came from) and ``tfxline serving rollback``.

No TensorFlow here: both read and copy files (``components.serving_push``).
"""
from __future__ import annotations

import getpass
from typing import Dict, List, Optional, Tuple

from components import serving_push
from pipeline.history import format_columns, metric_text

HEADER = ("version", "pushed (UTC)", "run", "spans", "metric", "state")


def _metric(meta: Dict) -> str:
    return metric_text(meta.get("metrics") or {}, meta.get("task", ""))[0]


def _state(version: int, newest: int, meta: Dict, rolled_back: Dict[int, int]) -> str:
    parts = ["serving"] if version == newest else []
    record = meta.get("rollback")
    if record:
        restored = f"restores {record['restored_version']}"
        parts.append(restored + (f" ({record['reason']})" if record.get("reason") else ""))
    if version in rolled_back:
        parts.append(f"rolled back by {rolled_back[version]}")
    return ", ".join(parts) or "-"


def version_rows(serving_dir: str) -> List[Tuple[str, ...]]:
    """One row per kept version, newest first (``HEADER``'s columns)."""
    metadata = serving_push.metadata_by_version(serving_dir)
    rolled_back = serving_push.rolled_back(metadata)
    newest = max(metadata, default=None)
    rows = []
    for v, meta in reversed(metadata.items()):
        pushed = (meta.get("rollback") or {}).get("at") or meta.get("pushed_at", "-")
        spans = ",".join(str(s) for s in (meta.get("data") or {}).get("spans", [])) or "-"
        rows.append((str(v), pushed.replace("T", " ").rstrip("Z"), meta.get("pipeline_run_id") or "-", spans,
                     _metric(meta), _state(v, newest, meta, rolled_back)))
    return rows


def format_versions(serving_dir: str) -> str:
    rows = version_rows(serving_dir)
    if not rows:
        return f"no pushed model in {serving_dir}; run 'tfxline run' until a model is blessed and pushed"
    return f"{serving_dir} (TF Serving serves the highest version)\n{format_columns(HEADER, rows)}"


def describe_version(serving_dir: str, version: int) -> str:
    meta = serving_push.read_metadata(serving_dir, version)
    details = [f"run {meta['pipeline_run_id']}"] if meta.get("pipeline_run_id") else []
    metric = _metric(meta)
    if metric != "-":
        details.append(metric)
    return f"version {version}" + (f" ({', '.join(details)})" if details else "")


def rollback(serving_dir: str, keep_versions: int, to: Optional[int], reason: str, dry_run: bool) -> str:
    """Serve an older version again; the lines to print. Raises ``RollbackError``."""
    current, target = serving_push.rollback_target(serving_dir, to)
    restored, bad = describe_version(serving_dir, target), describe_version(serving_dir, current)
    if dry_run:
        return (f"would roll back {serving_dir}: serve the model of {restored} again, as a new version, "
                f"instead of {bad}; nothing changed (--dry-run)")
    new, _, _ = serving_push.rollback(serving_dir, keep_versions, to=target, reason=reason, by=getpass.getuser())
    return "\n".join([
        f"rolled back {serving_dir}: version {new} serves the model of {restored}; "
        f"{bad} no longer serves and is kept for inspection",
        "  TF Serving loads the new version on its next poll of the directory; 'tfxline predict' uses it now",
        "  the next pipeline run's Evaluator compares its candidate with this model, and its drift check "
        "with this model's training data",
    ])
