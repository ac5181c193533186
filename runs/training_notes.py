"""What the run summary says of a training, from its training_run.json (trainer/run.py): the
traced steps, a training cut short while still improving, its time budget, and the model family kept."""
from __future__ import annotations

from typing import Any, Dict

from tfxline.trainer.budget import suggested_minutes


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


def budget_note(info: Dict[str, Any]) -> str:
    """With training.time_budget_minutes: how long training took and how many passes fitted, and where
    the budget cut them, what all of them would take and how the watched metric moved over the last
    passes (what a bigger budget would buy); '' without a budget."""
    budget = info.get("budget")
    if not budget:
        return ""
    took = f"{info.get('train_seconds', 0.0) / 60:.1f} min for {budget['passes']} of {budget['planned_passes']} passes"
    metric = (info.get("early_stopping") or "val_loss").split(",")[0]
    if metric == "off":
        metric = "val_loss"
    if not budget["stopped_by_budget"]:
        ended = (f"early stopping ended it ({metric} best at pass {info.get('best_epoch')})"
                 if budget["passes"] < budget["planned_passes"] else "all of them ran")
        return f"{took}, within training.time_budget_minutes ({budget['minutes']:g}): {ended}"
    values = (info.get("history") or {}).get(metric) or []
    trend = f"; {metric} moved {values[-1] - values[-4]:+.3g} over the last 3 passes" if len(values) >= 4 else ""
    return (f"{took}: the most that fit training.time_budget_minutes ({budget['minutes']:g}) at "
            f"{budget['seconds_per_pass']:g} s a pass, the learning rate's decay fitted to them{trend}; all "
            f"{budget['planned_passes']} would take about {budget['all_passes_minutes']:g} min "
            f"(training.time_budget_minutes: {suggested_minutes(budget)})")


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
    refit = family.get("refit")
    # model.trees.refit: the kept trees trained again on the train and validation rows
    again = f"; its trees trained again on {refit['rows']} rows in {refit['seconds']:.1f} s" if refit else ""
    if not scores:  # one family trained (trees, or auto on text or images)
        trees = (info.get("trees") or {}).get("trees")
        size = f"{trees} trees, " if chosen == "trees" and trees else ""
        why = "" if configured == chosen else f" ({configured}: images and text keep the network)"
        return f"{chosen}{why}: {size}trained in {times.get(chosen, 0.0):.1f} s{again}{trees_reading(info)}"
    metric, noise, margin = family.get("metric", ""), family.get("noise") or 0.0, family.get("margin") or 0.0
    others = ", ".join(f"{name} {value:.4f}" for name, value in scores.items() if name != chosen)
    beyond = "beyond" if margin > noise else "within"
    return (f"{configured} kept {chosen}: validation {metric} {scores[chosen]:.4f}, {others} ({margin:.4f} ahead of "
            f"{family.get('runner_up')}, {beyond} one standard error {noise:.4f} on {family.get('validation_rows')} "
            f"rows{held_half(family)}); trained in {seconds}{again}{trees_reading(info)}")


READ_AS = {"category": "categories", "rate": "label rates"}  # model.trees.encoding's values, as the line says them


def trees_reading(info: Dict[str, Any]) -> str:
    """How the trees read the categorical columns, where both ways trained (model.trees.encoding
    auto), and on which rows that was chosen: '; the trees read categories as label rates, chosen on
    the other 254 rows, which early stopping read (categories 0.6324, label rates 0.6358)'; ''
    otherwise. With two families those are the watched half, never the held half the family
    choice's scores above are on; with one, every validation row."""
    trees = info.get("trees") or {}
    scores, chosen = trees.get("encoding_scores"), str(trees.get("encoding"))
    if not scores or chosen not in scores:
        return ""
    values = ", ".join(f"{READ_AS.get(w, w)} {v:.4f}" for w, v in scores.items())
    rows = trees.get("encoding_rows")
    where = (f"the other {rows} rows, which early stopping read" if (info.get("family") or {}).get("watched_rows")
             else f"{rows} validation rows")
    return f"; the trees read categories as {READ_AS.get(chosen, chosen)}, chosen on {where} ({values})"


def held_half(family: Dict[str, Any]) -> str:
    """Which validation rows the choice read: the half early stopping did not (trainer/inputs.py)."""
    watched = family.get("watched_rows")
    return f" held out of early stopping, which read the other {watched}" if watched else ""
