"""The task type's interface: everything that differs between binary, multiclass and regression.

A task type is one object (``task_types.get(name)``); the layers above ask it instead of
switching on the task's name. This package imports no other package of the project (it is the
lowest layer): what it needs from above comes in as an argument, named below with its maker.
TensorFlow, Keras, numpy and scikit-learn are imported inside the methods that use them.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

# The train split's label mean and standard deviation, then its min and max (None: no rows read);
# trainer/data.py's label_moments.
LabelMoments = Tuple[float, float, Optional[float], Optional[float]]

class LabelError(ValueError):
    """The label column cannot train the configured task."""


class UnknownTask(ValueError):
    """A task or label transform no task type owns."""


@dataclasses.dataclass(frozen=True)
class TaskView:
    """What a task's evaluation shows downstream (components/task_metrics.py serves it)."""
    task: str
    main: str                  # the run's one number
    higher_is_better: bool
    headline: Tuple[str, ...]  # the console's and push metadata's metrics, in order

    def headline_metrics(self, metrics: Mapping[str, Any]) -> Dict[str, Any]:
        """The headline metrics present, then per-class recall (multi-class) in class order."""
        out = {k: metrics[k] for k in self.headline if k in metrics}
        out.update({k: v for k, v in metrics.items() if k.startswith("recall[")})
        return out


class TaskType:
    """One task type. Subclasses set the attributes and implement the methods that raise here.

    The arguments' kinds, by the module that makes them:
    ``label``    transforms.features.Label (``transform``, ``source``, ``positive``, ``log``, ...)
    ``values``   pipeline.data.labels.LabelValues: a label column's cells, counted
    ``columns``  transforms.preprocessing.COLUMNS: ``to_dense(x, default)``, ``as_float(x)``,
                 ``as_int(x)``, ``missing_default(x)`` on a raw column (sparse, dense or present-masked)
    ``ev``       pipeline.config.EvaluationConfig (the ``evaluation`` section)
    ``tfma``     pipeline.eval_config.MetricBuilder: ``metric``, ``threshold``, ``optional``,
                 ``lower_bound``, ``HIGHER``, ``LOWER``, ``HISTOGRAM_MODULE``, ``METRICS_MODULE``
    """

    name: str = ""
    # -- the label --------------------------------------------------------------------------
    label_transforms: Tuple[str, ...] = ()           # features.label transforms that make this task
    label_fields: Mapping[str, Tuple[str, ...]] = {}  # the keys each of them needs (beside name, transform)
    column_transform: str = ""     # the one that reads the label column as it is (what `tfxline init` writes)
    positive_label: bool = False   # its label names its positive value (features.label.positive)
    log_label: bool = False        # its label may be learnt in log space (features.label.log)
    predicts_classes: bool = True  # classes, not an amount
    decides: bool = False          # its model serves a decision at a threshold it chose (``decision``)
    # -- the model and its export ------------------------------------------------------------
    activation: str = "linear"     # the output layer's
    output_key: str = "probabilities"  # serving_default's output (and TFMA's prediction key)
    early_stopping_metric: str = "val_loss"
    # -- evaluation -------------------------------------------------------------------------
    main_metric: str = ""          # the run's one number (``tfxline runs``, history, worst slices)
    higher_is_better: bool = True
    headline: Tuple[str, ...] = ()
    default_gate: str = ""         # the metric gated with no number set (components/gates.py GATES)
    difference_unit: str = ""      # the unit of output_difference, for the TFLite parity message

    def __repr__(self) -> str:
        return f"<task type {self.name}>"

    @property
    def view(self) -> TaskView:
        return TaskView(self.name, self.main_metric, self.higher_is_better, self.headline)

    # -- the label --------------------------------------------------------------------------

    def transform_label(self, label, inputs: Mapping[str, Any], columns) -> Any:
        """The label tensor the model learns (int64 classes or float values), inside tft's
        ``preprocessing_fn``, from the raw ``inputs``."""
        raise NotImplementedError

    def label_in_its_unit(self, label, values: Any) -> Any:
        """The learnt label (or a prediction of it) back in the label's own unit."""
        return values

    def suggested_by(self, values) -> Optional[str]:
        """Why a column of these values is this task (``tfxline init`` asks the task types in
        registry order, the first answer wins); None when it is not."""
        return None

    def check_label(self, label, values, where: str) -> None:
        """Raise LabelError (its message starts with ``where``) when ``label`` cannot train this
        task on ``values``."""

    def flag_problem(self, column: str, values) -> Optional[str]:
        """Why ``tfxline init --task NAME`` cannot take this column ('column 'x' holds text'), or None."""
        return None

    def label_as_numbers(self, cells: Sequence[str], positive: Any = None) -> Optional[List[float]]:
        """The present label cells as numbers to correlate a feature with (init's leak warning);
        None where the label is no number."""
        return None

    # -- the model --------------------------------------------------------------------------

    def units(self, num_classes: int) -> int:
        """The output layer's width."""
        return 1

    def head_fields(self, classes: Callable[[], int],
                    label_moments: Optional[Callable[[], LabelMoments]]) -> Dict[str, Any]:
        """trainer.model.Head's fields beside the task: ``classes()`` reads the label vocabulary's
        size, ``label_moments()`` the train split's label mean and standard deviation, then its min
        and max (None: no train files given)."""
        return {}

    def loss_and_metrics(self, keras) -> Tuple[Any, List[Any]]:
        """(the Keras loss, the Keras metrics the model compiles with)."""
        raise NotImplementedError

    def early_stopping(self, classes_seen: Callable[[], Tuple[set, int]]) -> Tuple[str, str]:
        """(what early stopping watches, why it is not the usual metric or ''); ``classes_seen()``
        reads the validation labels once: (the values, the rows)."""
        return self.early_stopping_metric, ""

    def flat_output(self, outputs: Any) -> Any:
        """The model's float32 [batch, units] output as the signatures serve it: [batch] for one unit."""
        import tensorflow as tf
        return tf.reshape(outputs, [-1])

    def serving_output(self, label, outputs: Any) -> Any:
        """serving_default's output: flat, in the label's unit."""
        return self.label_in_its_unit(label, self.flat_output(outputs))

    def serving_outputs(self, label, outputs: Any, threshold: Optional[float] = None) -> Dict[str, Any]:
        """serving_default's outputs by name: ``output_key``'s (``serving_output``), and what a
        task adds with a decision threshold (binary: ``predicted_class``)."""
        return {self.output_key: self.serving_output(label, outputs)}

    def decision(self, probabilities, labels, objective: str) -> Optional[Dict[str, Any]]:
        """The decision rule chosen on the validation split's outputs and labels for ``objective``
        (evaluation.threshold), as the Trainer records it; None where the task has none."""
        return None

    def tuning_space(self) -> Dict[str, Tuple[Any, ...]]:
        """The Tuner's search space for the keys a config leaves unset (trainer/tuning_settings.py:
        learning_rate is a [low, high] log range, every other key a list of choices; batch_size's
        default is half, once and twice the configured batch, which the training length was sized for)."""
        return {"learning_rate": (5e-4, 2e-2), "hidden_layers": (1, 2, 3), "hidden_units": (32, 64, 128, 256),
                "dropout": (0.0, 0.1, 0.3), "embedding_max_dim": (4, 8, 16), "weight_decay": (0.0, 0.01, 0.1)}

    def metric_noise(self, metric: str, score: float, labels) -> float:
        """One standard error of ``metric`` (a Keras metric's name, without ``val_``) at ``score``
        on the rows whose labels are ``labels`` (a numpy array): how far two models' scores on
        these rows may differ by chance (the Tuner keeps the config's values unless a trial beats
        them by more). A proportion's sqrt(s(1-s)/n) for a metric in [0, 1] where higher is better
        (accuracy); else relative, s / sqrt(2n) (RMSE, a loss)."""
        import math

        n = max(1, len(labels))
        if 0.0 <= score <= 1.0 and metric not in ("loss", "rmse", "mae", "mse"):
            return math.sqrt(max(score * (1 - score), 1e-6) / n)
        return abs(score) / math.sqrt(2 * n)

    # -- evaluation -------------------------------------------------------------------------

    def tfma_metrics(self, ev, tfma) -> List[Any]:
        """The TFMA MetricConfigs of this task, its gates set from ``ev``."""
        raise NotImplementedError

    def main_metric_value(self, outputs, labels) -> float:
        """``main_metric`` computed on numpy outputs (as serving_default's) and labels."""
        raise NotImplementedError

    def output_difference(self, saved, tflite):
        """How far apart two models' outputs are, per output (TFLite parity)."""
        import numpy as np
        return np.abs(np.asarray(saved, np.float64) - np.asarray(tflite, np.float64))

    # -- batch prediction -------------------------------------------------------------------

    def prediction_columns(self, values, classes: Sequence[str] = (), decided=None) -> List[Dict[str, Any]]:
        """``tfxline predict``'s columns per row from serving_default's outputs (``classes``: the
        label vocabulary's values, in index order; ``decided``: its predicted_class, where the
        model serves one)."""
        raise NotImplementedError

    def describe_predictions(self, rows: List[Dict[str, Any]]) -> str:
        """One line on what was predicted (``rows``: prediction_columns' output, not empty)."""
        raise NotImplementedError


def count_text(values) -> Any:
    """A label's count of distinct values for a message: the number, or 'many'."""
    return "many" if values.many else len(values.counts)
