"""Each model measured at its own decision threshold: the Evaluator's metrics that depend on it
(accuracy, precision, recall, the share predicted positive; histogram_metrics.AT_THRESHOLD) get
the threshold the model's Trainer chose (trainer/decision.py), the candidate's and the serving
baseline's each their own. A model from before thresholds were chosen decides at 0.5.

TFMA takes one EvalConfig for both models; its MetricsSpec names the models it applies to
(``model_names``). So the threshold metrics move out of the shared spec into one spec per model,
named as TFX's Evaluator names them (TFMA's ``candidate`` / ``baseline`` when a baseline is
given: tfma.utils.update_eval_config_with_defaults, config_util.py:158-168 at TFMA 0.47.1);
with one model, TFMA renames every spec's models to '' and the one spec keeps them.
"""
from __future__ import annotations

import json
from typing import Dict, Optional

from tensorflow_model_analysis.proto import config_pb2 as tfma_pb2

from tfxline.components import histogram_metrics

CANDIDATE, BASELINE = "candidate", "baseline"  # tfma.CANDIDATE_KEY, tfma.BASELINE_KEY


def with_thresholds(eval_config: tfma_pb2.EvalConfig,
                    thresholds: Dict[str, Optional[float]]) -> tfma_pb2.EvalConfig:
    """``eval_config`` with each threshold metric set to its model's threshold. ``thresholds``:
    {CANDIDATE: t} without a baseline, {CANDIDATE: t, BASELINE: t'} with one (None: 0.5)."""
    out = tfma_pb2.EvalConfig()
    out.CopyFrom(eval_config)
    del out.metrics_specs[:]
    moved = []
    for spec in eval_config.metrics_specs:
        shared = out.metrics_specs.add()
        shared.CopyFrom(spec)
        del shared.metrics[:]
        for metric in spec.metrics:
            at_threshold = (metric.module == histogram_metrics.MODULE
                            and metric.class_name in histogram_metrics.AT_THRESHOLD)
            (moved if at_threshold else shared.metrics).append(metric)
        if not shared.metrics:
            del out.metrics_specs[-1]
    if not moved:
        return out
    single = len(thresholds) == 1
    for model, threshold in thresholds.items():
        spec = out.metrics_specs.add()
        if not single:
            spec.model_names.append(model)
        for metric in moved:
            copy = spec.metrics.add()
            copy.CopyFrom(metric)
            config = json.loads(metric.config) if metric.config else {}
            config["threshold"] = histogram_metrics.THRESHOLD if threshold is None else float(threshold)
            copy.config = json.dumps(config)
            if model != CANDIDATE:  # gates judge the candidate; the baseline's values are reported
                copy.ClearField("per_slice_thresholds")
                copy.ClearField("threshold")
    return out
