"""The Training section (TensorBoard event files, training_run.json) and the Evaluation
section (TFMA metrics per slice, validation, and the thresholds the Evaluator ran with)."""
from __future__ import annotations

import json
from typing import Any, Dict, List

from tfxline.components import gates, serving_baseline, task_metrics, tfma_metrics, tfma_results
from tfxline.runs import store as store_lib
from tfxline.runs import summary as summary_lib
from tfxline.runs.report import gallery, text_examples
from tfxline.runs.report.artifacts import RunArtifacts
from tfxline.runs.training_notes import family_line
from tfxline.serving import storage
from tfxline.trainer.settings import TRAINING_RUN_FILE
from tfxline.trainer.text_settings import PRETRAINED


def training_section(run: RunArtifacts) -> Dict[str, Any]:
    model_run = run.artifact("Trainer", "model_run")
    deleted = model_run is not None and run.deleted(model_run)
    section: Dict[str, Any] = {"available": model_run is not None and not deleted, "deleted": deleted,
                               "curves": {}, "settings": {}, "logdir": model_run.uri if model_run else ""}
    if model_run is None or deleted:
        return section
    section["curves"] = tensorboard_scalars(model_run.uri)
    info_path = storage.join(model_run.uri, TRAINING_RUN_FILE)
    if storage.isfile(info_path):
        info = storage.read_json(info_path)
        section["note"] = summary_lib.training_length_note(info)  # stopped at its cap, still improving
        section["settings"] = {k: info.get(k) for k in (
            "strategy", "device", "replicas", "precision", "examples_per_second", "mode", "epochs",
            "best_epoch", "resumed_at_epoch", "steps", "global_batch", "learning_rate",
            "gradient_accumulation_steps", "jit_compile", "train_seconds", "early_stopping")}
        # ("batch_scaling" in runs recorded before the key was renamed)
        section["settings"]["batch_reason"] = info.get("batch_reason") or info.get("batch_scaling")
        section["profile"] = info.get("profile")  # runtime.profile_steps
        section["text_ngrams"] = info.get("text_ngrams") or []  # trainer/text_weights.py
        section["text_columns"] = info.get("text_columns") or []  # trainer/text_profile.py
        section["text_encoder"] = text_encoder_line(info)
        # model.family trees or auto: the candidates' validation scores, the one kept, the trees' importances
        section["family"], section["trees"] = info.get("family") or {}, info.get("trees") or {}
        section["family_line"] = family_line(info)
    return section


def text_encoder_line(info: Dict[str, Any]) -> str:
    """What read the text inputs ('' for a model without text): the encoder, and a pretrained one's
    folder and whether it was fine-tuned (trainer/text.py, trainer/text_pretrained.py)."""
    texts = [mi for mi in info.get("model_inputs") or [] if len(mi) > 2]
    model = info.get("model") or {}
    if not texts or not model.get("text_encoder"):
        return ""
    if model["text_encoder"] == PRETRAINED:
        how = "fine-tuned" if model.get("text_fine_tune") else "frozen"
        return (f"pretrained, from {model.get('text_saved_model')} ({how}), on the raw text: no n-gram ids, so no "
                "per-column profile or n-gram weights below")
    return f"{model['text_encoder']}, {model.get('text_dim')} wide"


def tensorboard_scalars(logdir: str) -> Dict[str, Dict[str, List[List[float]]]]:
    """{tag without 'epoch_': {'train' | 'validation': [[epoch, value], ...]}} from the
    TensorBoard event files the Trainer's Keras callback wrote."""
    import tensorflow as tf
    from tensorboard.backend.event_processing import event_accumulator

    curves: Dict[str, Dict[str, List[List[float]]]] = {}
    for split in ("train", "validation"):
        path = storage.join(logdir, split)
        if not storage.isdir(path):
            continue
        acc = event_accumulator.EventAccumulator(path, size_guidance={event_accumulator.TENSORS: 0,
                                                                      event_accumulator.SCALARS: 0})
        acc.Reload()
        tags = acc.Tags()
        for tag in tags.get("tensors", []):
            if not tag.startswith("epoch_"):
                continue
            points = [[e.step, float(tf.make_ndarray(e.tensor_proto))] for e in acc.Tensors(tag)]
            curves.setdefault(tag[len("epoch_"):], {})[split] = sorted(points)
        for tag in tags.get("scalars", []):
            if tag.startswith("epoch_"):
                points = [[e.step, float(e.value)] for e in acc.Scalars(tag)]
                curves.setdefault(tag[len("epoch_"):], {})[split] = sorted(points)
    return curves


def evaluation_section(run: RunArtifacts) -> Dict[str, Any]:
    evaluation = run.artifact("Evaluator", "evaluation")
    s = run.summary
    section: Dict[str, Any] = {"available": evaluation is not None, "overall": {}, "baseline_diff": {},
                               "slices": [], "thresholds": [], "blessed": s.blessed,
                               "failed_thresholds": list(s.failed_thresholds), "slice_metric": "",
                               "warnings": list(run.info.get("warnings") or []),  # runs/warnings.py
                               "slices_undefined": [], "baseline_uri": "", "baseline_version": None,
                               "baseline_model_uri": "", "undefined": {},
                               "history_metric": "", "history": [], "task": s.task,
                               "confusion_matrix": {"classes": [], "counts": []},
                               "prediction_sample": {"label": [], "prediction": []}}
    if evaluation is None:
        return section
    metrics = tfma_results.load_metrics(evaluation.uri)
    section["overall"] = metrics.get("overall", {}).get("value", {})
    section["undefined"] = tfma_results.undefined_metrics(section["overall"])
    section["baseline_diff"] = metrics.get("overall", {}).get("diff", {})
    baseline = run.input_artifact("Evaluator", "baseline_model")
    held = serving_baseline.describe_recorded(baseline) if baseline is not None else {}
    # the model serving when the run evaluated (a copy, and where it came from)
    if baseline is not None and held.get("found"):
        section["baseline_uri"] = baseline.uri
        section["baseline_version"] = held.get("serving_version")
        section["baseline_model_uri"] = held.get("source_model_uri", "")
    model = run.artifact("Trainer", "model")
    model_dir = summary_lib.serving_model_dir(model.uri) if model is not None and not run.deleted(model) else ""
    section.update(task_charts_data(evaluation.uri, model_dir))
    section["gallery"] = gallery.eval_gallery(run, model_dir)  # an image model's eval images, predicted
    section["texts"] = text_examples.eval_texts(run, model_dir)  # a text model's eval rows, predicted
    section["overall"].update(section.pop("class_recall"))
    if not section["confusion_matrix"]["classes"]:
        section["confusion_matrix"] = binary_confusion(section["overall"])
    view = task_metrics.view(s.task, section["overall"])
    section["task"] = view.task
    metric, higher_is_better = (view.main, view.higher_is_better) if view.main in section["overall"] else (
        "example_count", True)
    section["slice_metric"] = metric
    slices, undefined = [], []
    for name, m in metrics.items():
        if name == "overall" or metric not in m["value"]:
            continue
        # AUC is undefined on a slice whose labels are all one class (TFMA reports 0 there).
        one_class = metric == "auc" and not tfma_results.both_classes(m["value"])
        (undefined if one_class or m["value"][metric] is None else slices).append(
            {"slice": name, "metrics": m["value"]})
    slices.sort(key=lambda x: x["metrics"][metric] * (1 if higher_is_better else -1))  # worst first
    section["slices"], section["slices_undefined"] = slices, undefined
    section["thresholds"] = configured_thresholds(run.execution("Evaluator"))
    section["history_metric"], section["history"] = metric_history(run)
    return section


def task_charts_data(evaluation_uri: str, model_dir: str) -> Dict[str, Any]:
    """What the task's own charts draw: a multi-class run's confusion matrix (with each class's
    recall, for the overall table), a regression run's sample of (label, prediction) pairs.
    Each is empty where the evaluation has none (the other tasks)."""
    matrix = tfma_results.confusion_matrix(evaluation_uri)
    names = tfma_results.label_classes(model_dir)
    ids = sorted({i for pair in matrix for i in pair})
    name = lambda i: names[i] if 0 <= i < len(names) else ("no class" if i < 0 else str(i))  # noqa: E731
    return {
        "confusion_matrix": {"classes": [name(i) for i in ids],
                             "counts": [[matrix.get((a, p), 0.0) for p in ids] for a in ids]},
        "class_recall": tfma_results.class_recall(matrix, names),
        "prediction_sample": tfma_results.prediction_sample(evaluation_uri),
    }


def binary_confusion(overall: Dict[str, Any]) -> Dict[str, Any]:
    """A binary run's confusion matrix at the model's own threshold, from its eval metrics (rows,
    positive share, share predicted positive, recall); empty where they are not all there."""
    names = ("example_count", "mean_label", "predicted_positive_rate", "recall", "decision_threshold")
    if any(not isinstance(overall.get(n), (int, float)) for n in names):
        return {"classes": [], "counts": []}
    n = overall["example_count"]
    positives, called = overall["mean_label"] * n, overall["predicted_positive_rate"] * n
    tp = overall["recall"] * positives
    fp, fn = called - tp, positives - tp
    counts = [[round(n - positives - fp), round(fp)], [round(fn), round(tp)]]
    return {"classes": ["0", "1"], "counts": counts,
            "title": f"confusion matrix at the threshold {overall['decision_threshold']:.4g} (eval split)"}


HISTORY_RUNS = 20


def metric_history(run: RunArtifacts):
    """(main metric, [{run_id, value}] for the last HISTORY_RUNS runs up to this one, oldest
    first); value None where a run has no such value (failed before evaluating, undefined)."""
    from tfxline.runs import history

    metric = history.main_metric(run.summary.metrics, run.summary.task)
    if metric is None:
        return "", []
    ids = store_lib.run_ids(run.store, run.info["pipeline_name"])
    mine = ids.index(run.summary.run_id) if run.summary.run_id in ids else 0
    points = []
    for run_id in reversed(ids[mine:mine + HISTORY_RUNS]):
        s = summary_lib.collect_run(run.info["metadata_store"], run.info["pipeline_name"], run_id, store=run.store)
        defined = metric in s.metrics and metric not in tfma_results.undefined_metrics(s.metrics)
        points.append({"run_id": run_id, "value": s.metrics[metric] if defined else None})
    return metric, points


def configured_thresholds(execution) -> List[Dict[str, Any]]:
    """The EvalConfig's thresholds, as the Evaluator ran with them (its MLMD exec property)."""
    if execution is None or "eval_config" not in execution.custom_properties:
        return []
    from google.protobuf import json_format
    from tensorflow_model_analysis.proto import config_pb2

    config = json_format.Parse(execution.custom_properties["eval_config"].string_value,
                               config_pb2.EvalConfig(), ignore_unknown_fields=True)
    out = []
    for spec in config.metrics_specs:
        for metric in spec.metrics:
            thresholds = [t.threshold for t in metric.per_slice_thresholds]
            if metric.HasField("threshold"):
                thresholds.append(metric.threshold)
            name = json.loads(metric.config).get("name", "") if metric.config else ""
            if not name and metric.module == tfma_metrics.MODULE:  # our own metrics: their default name
                name = getattr(tfma_metrics, metric.class_name)().name
            for t in thresholds:
                row = {"metric": name or metric.class_name}
                rule = gates.value_rule(row["metric"], t.value_threshold)  # '> 0' for a strict floor
                if rule:
                    row["rule"] = rule
                change = t.change_threshold
                if change.HasField("absolute"):
                    row["change"] = f"{change.absolute.value:+g} vs baseline"
                elif change.HasField("relative"):
                    row["change"] = f"{change.relative.value:+.0%} vs baseline"
                out.append(row)
    return out
