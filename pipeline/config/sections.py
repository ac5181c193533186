"""The sections of a pipeline config about its data, gates and serving: ``data``, ``evaluation``,
``drift``, ``serving`` and ``retention``. Each dataclass checks its own values (``problems()``,
beside the fields); ``pipeline.config.PipelineConfig`` composes them with the others.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterator, Mapping, Tuple

from tfxline.pipeline.data.labels import MISSING_LABELS
from tfxline.pipeline.data.source import BAD_IMAGE_POLICIES, FORMATS, has_span_spec
from tfxline.serving.release import RELEASES
from tfxline.serving.tflite import MODES as TFLITE_MODES
from tfxline.serving.tflite import OFF as TFLITE_OFF
from tfxline.task_types.decision import parse_objective
from tfxline.typed_config.problems import ConfigError, Problem, bad
from tfxline.typed_config.read import FROM_YAML, from_yaml

# ExampleGen's split names (TFX's defaults for train and eval).
TRAIN_SPLIT, VALIDATION_SPLIT, EVAL_SPLIT = "train", "validation", "eval"
SPANS_FIX = "use latest, or {window: N} (window:N on the command line) with N >= 1"


def spans_from_yaml(spans: Any, where: str) -> Any:
    """data.spans as YAML writes it ({window: N}) in the config's one string form (window:N)."""
    if isinstance(spans, Mapping):
        if set(spans) != {"window"} or isinstance(spans["window"], bool) or not isinstance(spans["window"], int):
            raise ConfigError(f"bad config value for data.spans: {dict(spans)!r}; {SPANS_FIX}")
        return f"window:{spans['window']}"
    return spans


def _spans_ok(spans: str) -> bool:
    if spans == "latest":
        return True
    kind, _, n = spans.partition(":")
    return kind == "window" and n.isdigit() and int(n) >= 1


@dataclasses.dataclass(frozen=True)
class DataConfig:
    # A file or a directory; empty means the Chicago taxi CSV that ships inside the
    # installed tfx package. "package:<package>/<path>" names data inside any installed
    # Python package (located through the package, never downloaded).
    path: str = ""
    # csv (CsvExampleGen), tfrecord (ImportExampleGen: TFRecords of tf.Example, GZIP when
    # the file name ends in .gz), images (a folder with one sub-folder of photos per class:
    # components/image_example_gen.py) or text (a folder with one sub-folder of .txt files per
    # class, read as the text input's column and the label's: components/text_example_gen.py).
    format: str = "csv"
    # For a directory: the files to read, a glob relative to it (default *.csv for csv,
    # * for tfrecord, */* (class/file) for images and text). TFX's span placeholders make it
    # daily data: {SPAN} (or {SPAN:4} for zero-padded, or the date specs {YYYY}{MM}{DD}) and
    # optionally {VERSION}, e.g.
    # "span-{SPAN}/*.csv"; each span is a partition that lands once (a new version replaces it).
    pattern: str = ""
    # Which spans a run trains on (a pattern with {SPAN}): "latest" (the newest span), or
    # "window:N" ({window: N} in YAML): the newest span and the N-1 before it that earlier runs
    # ingested (TFX's rolling RangeConfig). Each run ingests the newest span once; a span
    # already ingested comes from the cache.
    spans: str = dataclasses.field(default="latest", metadata={FROM_YAML: spans_from_yaml})
    # A schema name in the schema/ package (schema/<name>.pbtxt) or a .pbtxt path.
    schema: str = "taxi"
    # ExampleGen's hash split, train : validation : eval buckets (70% / 10% / 20%). The
    # Trainer fits on train and picks its epoch (early stopping) on validation; the Evaluator
    # judges and gates on eval, which nothing trained or selected on. validation_buckets: 0
    # drops the validation split and early stopping then watches eval (optimistic figures).
    train_buckets: int = 7
    validation_buckets: int = 1    # the validation split's buckets (see train_buckets; 0: none)
    eval_buckets: int = 2          # the eval split's buckets (see train_buckets)
    # A column whose rows stay together in one split (a customer, a patient, a store): every row
    # of a group is trained on or evaluated on, never both. Empty: a row's split follows its bytes
    # (TFX's hash) and, for a repeated row, its copy's number in its file, so copies of a row
    # spread over the splits as different rows do; a row keeps its split on every run.
    split_key: str = ""
    # Rows whose label is empty (CSV): drop leaves them out of training and evaluation (CsvExampleGen
    # skips them; the run's summary and report give their count); fail refuses the file before the run
    missing_labels: str = "drop"
    # Images (format images) that do not decode (a truncated JPEG): skip leaves them out, counted and
    # named in the run's log and summary; fail refuses the folder before the run, naming the first
    bad_images: str = "skip"

    @property
    def splits(self) -> Tuple[str, ...]:
        """ExampleGen's output splits, in order."""
        return (TRAIN_SPLIT, VALIDATION_SPLIT, EVAL_SPLIT) if self.validation_buckets else (TRAIN_SPLIT, EVAL_SPLIT)

    @property
    def trainer_eval_split(self) -> str:
        """The split the Trainer validates on (early stopping): validation when there is one."""
        return VALIDATION_SPLIT if self.validation_buckets else EVAL_SPLIT

    @property
    def window(self) -> int:
        """How many of the newest spans a run trains on (1 for "latest")."""
        kind, _, n = self.spans.partition(":")
        return int(n) if kind == "window" and n.isdigit() else 1

    def problems(self) -> Iterator[Problem]:
        if self.format not in FORMATS:
            yield bad(self, "format", f"use one of {', '.join(FORMATS)}")
        if self.bad_images not in BAD_IMAGE_POLICIES:
            yield bad(self, "bad_images", f"use one of {', '.join(BAD_IMAGE_POLICIES)}")
        if self.format in ("images", "text") and self.split_key:
            yield bad(self, "split_key", f"a {'document' if self.format == 'text' else 'image'}'s split follows its "
                                         "bytes (copies of a file stay in one split); remove data.split_key")
        if self.missing_labels not in MISSING_LABELS:
            yield bad(self, "missing_labels", f"use one of {', '.join(MISSING_LABELS)}")
        if not _spans_ok(self.spans):
            yield bad(self, "spans", SPANS_FIX)
        if not (self.window == 1 or has_span_spec(self.pattern)):
            yield bad(self, "spans", "a window of spans needs TFX's {SPAN} placeholder in data.pattern, "
                                     "e.g. span-{SPAN}/*.csv")
        if not (self.train_buckets >= 1 and self.eval_buckets >= 1):
            yield bad(self, "train_buckets", "train_buckets and eval_buckets must both be >= 1")
        if not self.validation_buckets >= 0:
            yield bad(self, "validation_buckets",
                      "must be >= 0 (0: no validation split; early stopping then watches eval)")


@dataclasses.dataclass(frozen=True)
class EvaluationConfig:
    """The blessing gates on the eval split (pipeline/eval_config.py). The feature spec's task
    picks which apply; the others are ignored. Value thresholds judge every run; change
    thresholds compare with the model serving now, and the first model (nothing serving) is
    judged on its value thresholds alone. Each task has a gate on by default (min_auc,
    min_accuracy_lift, min_r2) that refuses a model no better than the trivial one, so a config
    that sets no number blesses a reasonable first model. A not-blessed run names the failed
    gate and the key to change in one line."""
    # binary
    # AUC at least this. 0.5 is chance; 0.55 is 4 standard errors above it on the taxi eval split
    # (~3,000 rows, 22% positive) and ~1.5 on a 400-row one: weak but real ranking is blessed
    min_auc: float = 0.55
    max_auc_drop: float = 0.01     # AUC at most this far below the serving model's (absolute)
    # binary and multiclass
    min_accuracy: float = 0.0      # accuracy at least this (0: no floor)
    # multiclass
    # accuracy minus the eval split's commonest-class share (accuracy_lift) above this; 0: strictly
    # better than always predicting the commonest class; negative allows worse
    min_accuracy_lift: float = 0.0
    max_accuracy_drop: float = 0.01  # multiclass accuracy at most this far below the serving model's (absolute)
    # regression (errors in the label's unit)
    min_r2: float = 0.0            # R² above this; 0: strictly better than always predicting the mean
    max_rmse: float = 0.0          # RMSE at most this (0: no ceiling)
    max_mae: float = 0.0           # MAE at most this (0: no ceiling)
    max_error_increase: float = 0.1  # RMSE at most this fraction above the serving model's (0.1: 10 %)
    slices: Tuple[str, ...] = ("payment_type", "trip_start_hour")  # reported per value, not gated
    # binary: the decision threshold, chosen by the Trainer on the validation split and served as
    # predicted_class beside the probability: f1 (the best F1), recall:R (the highest threshold
    # with recall >= R), precision:P (the lowest with precision >= P), or a fixed number in (0, 1).
    # Accuracy, precision and recall are measured at it; a model that predicts one class only at
    # its threshold on the eval split is not blessed (task_types/decision.py)
    threshold: str = "f1"
    # {column: why}: what `tfxline init` found giving the label away (it leaves such columns out);
    # each run's summary and report warn while an input reads one of them (runs/warnings.py)
    suspect_columns: Dict[str, str] = dataclasses.field(default_factory=dict)

    def problems(self) -> Iterator[Problem]:
        try:
            parse_objective(self.threshold)
        except ValueError as e:
            yield bad(self, "threshold", str(e))
        if not 0.0 <= self.min_auc <= 1.0:
            yield bad(self, "min_auc", "must be in [0, 1]")
        if not 0.0 <= self.min_accuracy <= 1.0:
            yield bad(self, "min_accuracy", "must be in [0, 1]")
        if not self.max_auc_drop >= 0.0:
            yield bad(self, "max_auc_drop", "must be >= 0")
        if not 0.0 <= self.max_accuracy_drop <= 1.0:
            yield bad(self, "max_accuracy_drop", "must be in [0, 1]")
        if not self.min_r2 < 1.0:
            yield bad(self, "min_r2", "must be < 1 (R² must be above it; 0: better than predicting the mean; "
                                      "negative allows worse)")
        if not -1.0 <= self.min_accuracy_lift < 1.0:
            yield bad(self, "min_accuracy_lift", "must be in [-1, 1) (0: strictly better than always predicting the "
                                                 "commonest class; negative allows worse)")
        if not self.max_rmse >= 0.0:
            yield bad(self, "max_rmse", "must be >= 0 (0: no ceiling)")
        if not self.max_mae >= 0.0:
            yield bad(self, "max_mae", "must be >= 0 (0: no ceiling)")
        if not self.max_error_increase >= 0.0:
            yield bad(self, "max_error_increase", "must be >= 0 (a fraction of the serving model's RMSE: "
                                                  "0.1 allows 10 % more)")


@dataclasses.dataclass(frozen=True)
class DriftConfig:
    """Stop before training when the new data's distribution moved away from the data the
    serving model was trained on (components/drift_gate.py, TFDV's drift comparators).
    Every feature column is checked; 0 turns one feature's check off. Defaults measured on
    taxi samples: two 3,000-row samples of the same data differ by at most 0.16 (JSD over
    quantile bins, on the integer community areas; 0.06 on fare) / 0.04 (L-infinity); fare x 50
    gives 0.75, cash trips only 0.35 on payment_type. Samples of a few hundred rows differ by
    up to 0.25: raise the thresholds there."""
    enabled: bool = True                 # false: no drift check (the run says it was not checked)
    numeric_threshold: float = 0.2       # Jensen-Shannon divergence (quantile bins), numeric features
    categorical_threshold: float = 0.15  # L-infinity distance, categorical features
    features: Dict[str, float] = dataclasses.field(default_factory=dict)  # per-feature thresholds
    # Free text, by its tokens against the serving model's (components/text_drift.py; measured on
    # public reviews: a holdout 0.012 L-infinity and +0.01 out-of-vocabulary, tweets 0.18, +0.17, x0.3)
    text_token_threshold: float = 0.05  # L-infinity distance of the tokens' shares ([UNK] among them)
    text_oov_rise: float = 0.1          # rise of the out-of-vocabulary share of the tokens
    text_length_ratio: float = 1.5      # mean tokens a document, new over the serving model's, either way

    def problems(self) -> Iterator[Problem]:
        # Both measures are at most 1, reached by data with nothing in common (TFDV 1.16, checked
        # on disjoint samples), and a check stops a run above its threshold: 1 or more never does.
        for key in ("numeric_threshold", "categorical_threshold"):
            if not 0 < getattr(self, key) < 1:
                yield bad(self, key, "must be > 0 and < 1 (the measure is at most 1; drift.enabled=false turns "
                                     "the check off)")
        for key in ("text_token_threshold", "text_oov_rise"):
            if not 0 < getattr(self, key) < 1:
                yield bad(self, key, "must be > 0 and < 1 (a share; drift.features.<column>: 0 turns one text "
                                     "column's checks off)")
        if not self.text_length_ratio > 1:
            yield bad(self, "text_length_ratio", "must be > 1 (a ratio either way: 1.5 stops at 1.5 x or 1 / 1.5 x)")
        if not all(0 <= v < 1 for v in self.features.values()):
            yield bad(self, "features", "thresholds must be >= 0 and < 1 (0: not checked; the measure is at most 1)")



def tflite_mode(raw: Any, where: str) -> str:
    """serving.tflite as written, YAML's boolean false (an unquoted ``off``) read as off."""
    return TFLITE_OFF if raw is False else from_yaml(str, raw, where)

@dataclasses.dataclass(frozen=True)
class ServingConfig:
    serving_root: str = ""         # empty means <output_root>/serving
    model_name: str = ""           # empty means the pipeline name
    keep_versions: int = 5         # pushed versions kept in the serving directory (and the stable and canary ones)
    # What a push does to the release labels (docs/serving.md): stable (the new version is the
    # stable one: predict and the next run's baseline use it; TF Serving's label follows once it
    # has loaded it: 'tfxline serving settle') or canary (it serves canary_percent of the traffic
    # beside the stable one until 'tfxline serving promote'; a first push is stable)
    release: str = "stable"
    canary_percent: int = 10       # the traffic share of a canary that a push starts (serving.release: canary)
    tf_serving_base_path: str = ""  # the serving directory as TF Serving sees it (models.config); empty: its path here
    # The REST address of a TF Serving that reads this release (e.g. http://localhost:8501): a run's
    # summary then says how a push's labels move there ('tfxline serving settle', which asks it
    # when no --server is given). Empty: none does, and a push says only where it went
    tf_serving_url: str = ""
    kserve_storage_uri: str = ""   # the serving directory as KServe sees it; empty: pvc://tfxline-serving/<model name>
    batch_threads: int = 0         # TF Serving's num_batch_threads in batching_parameters.txt; 0: this machine's CPUs
    # A TFLite model (model.tflite) beside each pushed SavedModel, for devices (docs/serving.md):
    # off, or its quantization: none (float32), dynamic (int8 weights), float16, int8 (weights and
    # activations, calibrated on train rows; models with string inputs cannot be calibrated)
    # YAML 1.1 reads an unquoted off (and --set serving.tflite=off) as the boolean false: read as off
    tflite: str = dataclasses.field(default="off", metadata={FROM_YAML: lambda raw, where: tflite_mode(raw, where)})
    # how far the TFLite model may stray from the SavedModel on the eval rows before the push is
    # refused; 0: the mode's default (none 1e-4, dynamic 0.1, float16 0.1: the largest output
    # difference; int8 0.02: the drop of auc / accuracy, or the relative rise of rmse)
    tflite_tolerance: float = 0.0

    def problems(self) -> Iterator[Problem]:
        if not self.keep_versions >= 1:
            yield bad(self, "keep_versions", "must be >= 1")
        if self.release not in RELEASES:
            yield bad(self, "release", f"use one of {', '.join(RELEASES)}")
        if not 0 < self.canary_percent < 100:
            yield bad(self, "canary_percent", "must be in 1-99 (the canary's share of the traffic)")
        if self.tf_serving_url and not self.tf_serving_url.startswith(("http://", "https://")):
            yield bad(self, "tf_serving_url", "give TF Serving's REST address, http://HOST:PORT (e.g. "
                                              "http://localhost:8501), or leave it empty when none reads the release")
        if not self.batch_threads >= 0:
            yield bad(self, "batch_threads", "must be >= 0 (0: this machine's CPU count)")
        if self.tflite not in (TFLITE_OFF,) + TFLITE_MODES:
            yield bad(self, "tflite", f"use {TFLITE_OFF} or a quantization: {', '.join(TFLITE_MODES)}")
        if not self.tflite_tolerance >= 0:
            yield bad(self, "tflite_tolerance", "must be >= 0 (0: the mode's default)")


@dataclasses.dataclass(frozen=True)
class RetentionConfig:
    """Local runs: after each run, delete the bulky artifacts (examples, transform outputs,
    models, TensorBoard logs) of runs older than the newest ``keep_runs`` complete ones
    (runs/retention.py; ``tfxline gc`` does it on demand). 0 keeps everything, as TFX does."""
    keep_runs: int = 0             # how many complete runs keep their artifacts (0: every run)

    def problems(self) -> Iterator[Problem]:
        if not self.keep_runs >= 0:
            yield bad(self, "keep_runs", "must be >= 0 (0 keeps every run's artifacts)")
