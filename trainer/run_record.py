"""What training_run.json records of a training (trainer/run.py writes it; the run report, the run
summary and the bench scripts read it): how it ran, the network's fit where one trained (a trees-only
run records no epochs), and what rebuilds the model without tft or the config (bench/gpu_bench.py)."""
from __future__ import annotations

import dataclasses
from typing import Any, Dict

from tfxline.trainer import strategy as strategy_lib
from tfxline.trainer.settings import TrainerSettings


def training_info(settings: TrainerSettings, strategy, policy: str, sizes, inputs, net,
                  resumable: bool) -> Dict[str, Any]:
    """``net``: the network's run (trainer/run.py NetworkRun), None where only trees trained."""
    record = {
        "strategy": strategy_lib.strategy_kind(strategy),
        "replicas": sizes.replicas,
        "precision": policy,
        "mode": sizes.mode,
        "reader": settings.training.reader,
        "cached": inputs.cache,
        "train_data_bytes": inputs.data_bytes,
        "device": sizes.device,
        "batch_size": sizes.batch.per_replica,
        "configured_batch_size": settings.training.batch_size,
        "batch_reason": sizes.batch.reason,  # why this batch (training.batch_scaling's rule)
        "class_weight": {str(k): round(v, 4) for k, v in (inputs.class_weight or {}).items()} or None,
        "learning_rate": sizes.batch.learning_rate,
        "gradient_accumulation_steps": sizes.accumulation,
        "global_batch": sizes.global_batch,
        "train_examples": sizes.train_examples,
        "steps_per_epoch": sizes.steps_per_epoch,
        "resumable": resumable,
        "max_epochs": sizes.epochs,
        "label": settings.features.label.name,
        "model": dataclasses.asdict(settings.model),
    }
    return {**record, **(network_info(net, sizes) if net is not None else no_network())}


def network_info(net, sizes) -> Dict[str, Any]:
    built, cbs, history, seconds = net.built, net.callbacks, net.history, net.seconds
    epochs_run = len(next(iter(history.values()), []))
    return {
        "jit_compile": built.xla,
        "steps_per_execution": built.per_call,
        "frozen_epochs": built.frozen_epochs,  # an image backbone from a weights file: epochs it stayed frozen
        "resumed_at_epoch": cbs.first_epoch,
        "steps": sizes.steps_per_epoch * epochs_run,
        "epochs": epochs_run,
        "best_epoch": (cbs.early_stopping.best_epoch + 1) if cbs.early_stopping else epochs_run,
        "early_stopping": cbs.early_stopping_info,  # what it watched, and why when not the usual metric
        "budget": cbs.budget.record() if cbs.budget else None,  # training.time_budget_minutes: the passes that fit
        "train_seconds": round(seconds, 2),
        "examples_per_second": round(sizes.steps_per_epoch * (epochs_run - cbs.first_epoch) * sizes.global_batch
                                     / max(seconds, 1e-9), 1),
        "history": {k: [float(x) for x in v] for k, v in history.items()},
        "profile": net.step_profile,  # runtime.profile_steps: the traced steps, summarised
        # What bench/gpu_bench.py needs to rebuild this model without tft or the config.
        "head": dataclasses.asdict(built.head),
        "model_inputs": [[mi.name, mi.cardinality] + ([mi.length, mi.tokens] if mi.is_text else [])
                         for mi in built.inputs],
    }


def no_network() -> Dict[str, Any]:
    """A trees-only run: no epochs, no step history (the forest's own figures are under ``trees``)."""
    return {"jit_compile": False, "steps_per_execution": 1, "frozen_epochs": 0, "resumed_at_epoch": 0, "steps": 0,
            "epochs": 0, "best_epoch": 0, "early_stopping": "off", "budget": None, "train_seconds": 0.0,
            "examples_per_second": 0.0,
            "history": {}, "profile": None, "head": None, "model_inputs": []}
