"""What the run summary says of a training, from its training_run.json (trainer/run.py): the
traced steps, a training cut short while still improving, and the model family kept."""
from __future__ import annotations

from typing import Any, Dict


def step_profile_line(info: Dict[str, Any]) -> str:
    """'6.02 ms per step over 50 steps traced; compute-bound ...' from the Trainer's
    training_run.json when it profiled (runtime.profile_steps), else ''."""
    profile = info.get("profile")
    if not profile:
        return ""
    return f"{profile['ms_per_step']:g} ms per step over {profile['steps']} steps traced; {profile['verdict']}"


def training_length_note(info: Dict[str, Any]) -> str:
    """From training_run.json: a training that ran to its cap (epochs == max_epochs) with the metric
    early stopping watches best at that last epoch was still improving when it stopped; the note says
    so and names the key that raises the cap (training.epochs; in steps mode training.train_steps,
    where training.epochs only splits the budget into rounds). '' otherwise, and without early
    stopping, whose best epoch is the last by definition."""
    cap, watched = info.get("max_epochs"), info.get("early_stopping") or "off"
    if not cap or watched == "off" or not info.get("epochs") == info.get("best_epoch") == cap:
        return ""
    metric = watched.split(",")[0]
    if info.get("mode") == "steps":
        return (f"still improving when training stopped: {metric} was best at round {cap} of {cap}, the end of the "
                f"step budget ({info.get('steps')} steps); raise training.train_steps (--train-steps) to train longer")
    return (f"still improving when training stopped: {metric} was best at epoch {cap}, the last that "
            f"training.epochs ({cap}) allows; raise training.epochs to train longer")


def family_line(info: Dict[str, Any]) -> str:
    """model.family in one line: 'auto kept trees: validation auc 0.8421, network 0.8290, average
    0.8400 (0.0021 ahead, within one standard error 0.0130 on 1000 rows); trained in trees 4.1 s,
    network 31.2 s'; a trees-only run its forest's size; '' for the network alone (as before the
    family existed) or an older record."""
    family = info.get("family") or {}
    chosen, configured = family.get("chosen"), family.get("configured")
    if not chosen or configured in (None, "network"):
        return ""
    times = family.get("seconds") or {}
    seconds = ", ".join(f"{name} {s:.1f} s" for name, s in times.items())
    scores = family.get("scores")
    if not scores:  # one family trained (trees, or auto on text or images)
        trees = (info.get("trees") or {}).get("trees")
        size = f"{trees} trees, " if chosen == "trees" and trees else ""
        return f"{chosen} ({configured}): {size}trained in {times.get(chosen, 0.0):.1f} s"
    metric, noise, margin = family.get("metric", ""), family.get("noise") or 0.0, family.get("margin") or 0.0
    others = ", ".join(f"{name} {value:.4f}" for name, value in scores.items() if name != chosen)
    beyond = "beyond" if margin > noise else "within"
    return (f"{configured} kept {chosen}: validation {metric} {scores[chosen]:.4f}, {others} ({margin:.4f} ahead of "
            f"{family.get('runner_up')}, {beyond} one standard error {noise:.4f} on {family.get('validation_rows')} "
            f"rows); trained in {seconds}")
