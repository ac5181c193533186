"""The Tuning section: where the Trainer's hyperparameters came from (this run's search, a search
served from cache, or saved values tuning.reuse named), the search's trials with the chosen one
marked, its settings and why it ended, and the trials that failed. From the run summary's
``tuning`` (runs/tuning.py), so a literal summary renders it; not shown for an untuned run."""
from __future__ import annotations

from typing import Any, Dict, List

from tfxline.runs import tuning as tuning_lib
from tfxline.runs.summary import RunSummary, cached_from, earlier_run


def tuning_section(summary: RunSummary) -> Dict[str, Any]:
    t = summary.tuning
    tuner = summary.component(tuning_lib.TUNER_ID)
    reused = t.get("how") == tuning_lib.REUSED
    finished = reused or (tuner is not None and tuner.state in ("complete", "cached"))
    section: Dict[str, Any] = {"available": bool(t) and finished}
    if not section["available"]:
        return section
    record = t.get("record") or {}
    section.update(source=source(summary), reused=reused, hyperparameters=t.get("hyperparameters", ""),
                   values=dict(t.get("values") or {}), searched=bool(record), failed=list(record.get("failed") or []))
    if record:
        section.update(search_settings(record), trials=trials(record))
        section["keys"] = list(dict.fromkeys(k for trial in section["trials"] for k in trial["values"]))
    return section


def source(summary: RunSummary) -> str:
    """Where the values came from, in words."""
    t = summary.tuning
    if t.get("how") == tuning_lib.REUSED:
        origin = f"the best of {earlier_run(t['tuned_in'])}'s search (below)" if t.get("tuned_in") else "saved values"
        return f"Not searched in this run: tuning.reuse fed the Trainer {origin}."
    cached = cached_from(summary, tuning_lib.TUNER_ID)
    if cached is not None:
        return f"The Tuner was served from cache: the search below ran in {earlier_run(cached)}."
    return "The Tuner searched in this run; the Trainer trained on its best values."


def search_settings(record: Dict[str, Any]) -> Dict[str, Any]:
    """The objective, algorithm and budget, and why the search ended."""
    minutes = record.get("max_minutes") or 0
    budget = f"{record.get('max_trials')} trials" + (f", {minutes:g} minutes" if minutes else ", no time limit")
    count = len(record.get("trials") or [])
    if record.get("ended_by") == "max_minutes":
        ended = f"the max_minutes budget ({minutes:g} minutes) ran out after {count} finished trials"
    else:
        ended = f"max_trials: {count} of {record.get('max_trials')} trials finished"
    better = {"max": "higher is better", "min": "lower is better"}.get(record.get("direction") or "", "")
    base = record.get("baseline") or {}
    rule = (f"A trial replaces the config's own values only when it beats their "
            f"{base.get('score', 0):.4f} by more than {record.get('margin_se', 2):g} x its noise "
            f"(±{base.get('noise', 0):.4f} on {base.get('rows', 0)} validation rows)") if base else ""
    if rule and record.get("kept_config"):
        rule += ": none did, and the Trainer kept the config's own values."
    elif rule:
        rule += "."
    return {"objective": record.get("objective", ""), "better": better, "algorithm": record.get("algorithm", ""),
            "budget": budget, "ended": ended, "seconds": record.get("seconds"), "rule": rule}


def trials(record: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The config's own values (the baseline, as trial 'config') and each trial in the order it ran,
    the chosen one (the record's best) marked."""
    best = record.get("best") or {}
    baseline = [record["baseline"]] if record.get("baseline") else []
    return [{"trial": str(trial.get("trial", "")), "score": trial.get("score"), "epochs": trial.get("epochs"),
             "best_epoch": trial.get("best_epoch"), "seconds": trial.get("seconds"),
             "values": dict(trial.get("values") or {}),
             "chosen": bool(best) and str(trial.get("trial")) == str(best.get("trial"))}
            for trial in baseline + list(record.get("trials") or [])]
