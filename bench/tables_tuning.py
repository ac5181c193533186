"""bench/tables.py --tune: what a tuned run records beside its score, and the one results row per
table that holds the untuned run and the tuned one.

A tuned run is ``tfxline init --tune`` then ``tfxline run``, in its own work folder: TFX's Tuner
(node ``Tuner``) writes ``tuning_run.json`` in its ``tuner_results`` folder (every trial, the best,
the seconds it took and what ended it: ``max_trials`` or the ``max_minutes`` budget); the
Trainer's ``training_run.json`` has ``tuned``, the values it trained with.

The goal of a tuned run (issue #64): AUC or accuracy at least the trees' − 0.01, RMSE at most
1.1 × the trees'.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional

TUNED_GOAL = "tuned model: AUC or accuracy >= trees - 0.01, RMSE <= 1.1 x trees"
TUNING_RUN_FILE = "tuning_run.json"      # trainer/tuning_settings.py's, beside TFX's tuner_results.json
TRAINING_RUN_FILE = "training_run.json"  # the Trainer's own record (trainer/run.py)


def within_reach(metric: str, model: float, trees: float) -> bool:
    """The tuned run's goal (issue #64)."""
    return model <= 1.1 * trees if metric == "rmse" else model >= trees - 0.01


def _json_in(component, key: str, name: str) -> Optional[dict]:
    for uri in (component.outputs.get(key) or []) if component else []:
        path = os.path.join(uri, name)
        if os.path.isfile(path):
            with open(path) as f:
                return json.load(f)
    return None


def seconds_of(run, node: str) -> Optional[float]:
    component = run.component(node)
    return round(component.seconds, 1) if component else None


def tuning_of(run, output_root: str) -> Dict[str, Any]:
    """What score() adds for any run: its wall time (as the local runner recorded it), the
    Trainer's, and when a Tuner ran, its record and the values the Trainer trained with
    (``tuning`` None when no Tuner ran)."""
    from tfxline.runs import history

    wall = history.read_recorded(output_root, run.run_id).get("wall_seconds")
    out: Dict[str, Any] = {"run_seconds": round(wall, 1) if wall else None,
                           "trainer_seconds": seconds_of(run, "Trainer"), "tuning": None}
    record = _json_in(run.component("Tuner"), "tuner_results", TUNING_RUN_FILE)
    if record is None:
        return out
    training = _json_in(run.component("Trainer"), "model_run", TRAINING_RUN_FILE) or {}
    out["tuner_seconds"] = seconds_of(run, "Tuner")
    out["tuned_values"] = training.get("tuned")
    out["tuning"] = {k: record.get(k) for k in ("algorithm", "objective", "direction", "max_trials", "max_minutes",
                                                 "seconds", "ended_by", "best", "trials", "failed", "baseline",
                                                 "kept_config")}
    return out


def tuned_entry(s: dict) -> dict:
    """A tuned run's score, as the ``tuned`` object of its table's results row."""
    tuning = s.get("tuning") or {}
    best = tuning.get("best") or {}
    return {
        "model": s["model"], "trees": s["trees"], "ratio": s["ratio"],
        "goal_met": within_reach(s["metric"], s["model"], s["trees"]),
        "blessed": s["blessed"], "pushed": s["pushed"], "run_id": s["run_id"], "overrides": s["overrides"],
        "epochs": s.get("epochs"), "best_epoch": s.get("best_epoch"),
        "run_seconds": s.get("run_seconds"), "trainer_seconds": s.get("trainer_seconds"),
        "tuner_seconds": s.get("tuner_seconds"),
        "seconds": tuning.get("seconds"), "trials": len(tuning.get("trials") or ()),
        "failed_trials": len(tuning.get("failed") or ()), "ended_by": tuning.get("ended_by"),
        "algorithm": tuning.get("algorithm"), "max_trials": tuning.get("max_trials"),
        "max_minutes": tuning.get("max_minutes"), "objective": tuning.get("objective"),
        "best_score": best.get("score"), "values": s.get("tuned_values") or best.get("values"),
        # the config's own values as a trial, and whether no trial beat them by enough (the Trainer kept them)
        "baseline_score": (tuning.get("baseline") or {}).get("score"),
        "baseline_noise": (tuning.get("baseline") or {}).get("noise"), "kept_config": bool(tuning.get("kept_config")),
        "trial_log": tuning.get("trials") or [],
    }


def row(untuned: Optional[dict], tuned: Optional[dict]) -> Optional[dict]:
    """One table's results row: the untuned run's score, with the tuned run's under ``tuned``
    (its goal, issue #64's, under ``tuned.goal_met``); None without an untuned score."""
    if untuned is None:
        return None
    out = {k: v for k, v in untuned.items() if k not in ("tuning", "tuned_values")}
    out["within_reach"] = within_reach(untuned["metric"], untuned["model"], untuned["trees"])
    if tuned is not None:
        out["tuned"] = tuned_entry(tuned)
    return out
