"""The pushed model as TFLite, for devices: raw feature values in, the Transform inside,
checked against the SavedModel on the eval split before it is pushed (serving.tflite).

Why not TFX's TFLite rewriter (or the converter on ``serving_default``): that signature parses
serialized tf.Examples (ParseExampleV2 has no TFLite builtin) and its vocabularies are tft
tables filled from asset files, which the converted model never initializes ("Table not
initialized" at the first call). Here the model is rebuilt for TFLite from the same parts:

* inputs: one dense tensor per raw column the model reads (``input_name``), of the
  column's type; a missing value is NaN (float), "" (string) or INT64_MIN (integer);
* the preprocessing: ``transforms.preprocessing`` itself, with the Transform's analyzer values
  as constants and vocabularies as in-graph tables (``transforms.analyzers.FrozenAnalyzers``);
* the trained Keras network from the SavedModel, unchanged;
* outputs: as ``serving_default``'s (``probabilities`` or ``predictions``).

Every op is a TFLite builtin except what tft's hashing needs (StringToHashBucketFast, with
AsString and StringJoin for crosses and integer out-of-vocabulary keys): those run as Select
TF ops (the Flex delegate); ``flex_ops`` lists them per model.

Quantization (``MODES``): ``none`` (float32), ``dynamic`` (int8 weights), ``float16``
(float16 weights), ``int8`` (weights and activations int8, calibrated on train rows; the
string preprocessing stays as it is). The parity gate (serving/tflite_parity.py) compares the
outputs with the SavedModel's on the eval rows.
"""
from __future__ import annotations

import dataclasses
import re
import shutil
import tempfile
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

import numpy as np

from tfxline import task_types
from tfxline.serving.tflite_parity import DEFAULT_TOLERANCE, Parity, parity, summary_line  # noqa: F401 - this module's API
from tfxline.transforms import features as F
from tfxline.transforms.image_input import image_input

OFF = "off"
MODES = ("none", "dynamic", "float16", "int8")
FILE = "model.tflite"
INT64_MISSING = np.iinfo(np.int64).min
PARITY_ROWS = 2000       # eval rows compared
IMAGE_PARITY_ROWS = 500  # eval images compared (one interpreter call each: serving/tflite_images.py)
CALIBRATION_ROWS = 200   # train rows the int8 quantization is calibrated on
CALIBRATION_BATCH = 20


class TFLiteError(RuntimeError):
    """The TFLite model could not be built or does not match the SavedModel; nothing pushed."""


def input_name(column: str) -> str:
    """The TFLite signature's input name of a raw column (op-name characters only)."""
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", column)
    return name if re.match(r"[A-Za-z0-9.]", name) else "x" + name


# ---- the model -------------------------------------------------------------------------

def build_module(model_dir: str, transform_dir: str, spec: F.FeatureSpec):
    """A tf.Module whose ``serve`` takes raw dense columns; its tables are tracked, so a
    SavedModel of it initializes them (TFLite's hash table builtins)."""
    import tensorflow as tf
    from tensorflow_transform.output_wrapper import TFTransformOutput

    from tfxline.trainer.export import model_function
    from tfxline.transforms.analyzers import FrozenAnalyzers
    from tfxline.transforms.preprocessing import Present, make_preprocessing_fn

    if spec.data_kind == F.IMAGE:  # decoded pixels in: serving/tflite_images.py
        from tfxline.serving import tflite_images
        return tflite_images.build_module(model_dir, spec, input_name(image_input(spec).feature.source))
    frozen = FrozenAnalyzers.load(transform_dir, spec)
    raw_spec = TFTransformOutput(transform_dir).raw_feature_spec()
    columns = list(spec.serving_columns)

    class TFLiteModule(tf.Module):  # what serve reads, tracked: a SavedModel of it initializes the tables
        model: Any
        tables: List[Any]
        serve: Any

    module = TFLiteModule()
    module.model = tf.saved_model.load(model_dir)
    module.tables = [frozen.table(f) for f in spec.inputs
                     if f.transform == "vocabulary" and raw_spec[f.source].dtype == tf.string]
    preprocess = make_preprocessing_fn(spec, frozen, with_label=False)
    names, task = spec.model_feature_names, task_types.get(spec.task)
    signature = [tf.TensorSpec([None], raw_spec[c].dtype, name=input_name(c)) for c in columns]

    @tf.function(input_signature=signature, autograph=False)
    def serve(*values):
        inputs = {c: Present(v, _present(v)) for c, v in zip(columns, values)}
        transformed = preprocess(inputs)
        outputs = tf.cast(model_function(module.model)({n: transformed[n] for n in names}), tf.float32)
        return {task.output_key: task.serving_output(spec.label, outputs)}  # as serving_default: the label's unit

    module.serve = serve
    return module


def _present(values):
    import tensorflow as tf
    if values.dtype == tf.string:
        return tf.not_equal(values, "")
    if values.dtype.is_floating:
        return tf.logical_not(tf.math.is_nan(values))
    return tf.not_equal(values, tf.constant(INT64_MISSING, values.dtype))


def string_columns(transform_dir: str, spec: F.FeatureSpec) -> List[str]:
    import tensorflow as tf
    from tensorflow_transform.output_wrapper import TFTransformOutput
    raw_spec = TFTransformOutput(transform_dir).raw_feature_spec()
    image = spec.image and spec.image.source  # decoded before the TFLite model: its input is pixels
    return [c for c in spec.serving_columns if raw_spec[c].dtype == tf.string and c != image]


def check_mode(mode: str, string_inputs: Sequence[str] = ()) -> None:
    """A mode this model can be converted in, or TFLiteError. TFLite's int8 calibrator cannot
    feed string inputs (TF 2.16: 'basic_string::_M_create', or a crash), so int8 needs a
    model without them."""
    if mode not in MODES:
        raise TFLiteError(f"unknown TFLite mode {mode!r}; fix: set serving.tflite to off or one of {', '.join(MODES)}")
    if mode == "int8" and string_inputs:
        raise TFLiteError(
            f"serving.tflite: int8 calibrates on train rows, and TFLite's calibrator cannot feed the string "
            f"input(s) {', '.join(string_inputs)}; fix: use serving.tflite: dynamic (int8 weights) or float16")


def convert(module, mode: str, calibration: Optional[Dict[str, np.ndarray]] = None) -> bytes:
    """The module's ``serve`` as a TFLite flatbuffer in ``mode``."""
    import tensorflow as tf

    check_mode(mode)
    workdir = tempfile.mkdtemp(prefix="tfxline-tflite-")
    try:
        # Through a SavedModel: its initializer fills the vocabulary tables (TFLite runs it once)
        tf.saved_model.save(module, workdir, signatures={"serving_default": module.serve})
        converter = tf.lite.TFLiteConverter.from_saved_model(workdir, signature_keys=["serving_default"])
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS, tf.lite.OpsSet.SELECT_TF_OPS]
        if mode != "none":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if mode == "float16":
            converter.target_spec.supported_types = [tf.float16]
        if mode == "int8":
            if not calibration:
                raise TFLiteError("int8 needs train rows to calibrate on and the train split has none; "
                                  "fix: use serving.tflite: dynamic")
            rows = len(next(iter(calibration.values())))
            converter.representative_dataset = lambda: (
                {input_name(k): v[i:i + CALIBRATION_BATCH] for k, v in calibration.items()}
                for i in range(0, rows, CALIBRATION_BATCH))
        from tfxline.serving.native_stderr import TFLITE_CONVERTER_NOISE, stderr_filtered
        try:
            with stderr_filtered(TFLITE_CONVERTER_NOISE):
                return converter.convert()
        except Exception as e:  # noqa: BLE001 - the converter raises many kinds
            raise TFLiteError(f"the TFLite converter failed ({mode}): {_first_line(e)}; "
                              "fix: set serving.tflite: off, or another mode") from e
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _first_line(e: BaseException) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__


class Runner:
    """A TFLite model's ``serving_default`` in the interpreter, on raw column batches."""

    def __init__(self, content: bytes):
        import tensorflow as tf
        self.interpreter = tf.lite.Interpreter(model_content=content)
        self.runner = self.interpreter.get_signature_runner("serving_default")

    def __call__(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        out = self.runner(**{input_name(c): v for c, v in inputs.items()})
        return np.asarray(next(iter(out.values())))

    def flex_ops(self) -> List[str]:
        """The ops that run as Select TF ops (outside TFLite's builtins), sorted."""
        ops = self.interpreter._get_ops_details()  # noqa: SLF001 - the only listing of a model's ops
        return sorted({o["op_name"][len("Flex"):] for o in ops if o["op_name"].startswith("Flex")})


# ---- data --------------------------------------------------------------------------------

def columns_from_examples(records: Sequence[bytes], spec: F.FeatureSpec, transform_dir: str) -> Dict[str, np.ndarray]:
    """The TFLite model's inputs from serialized raw tf.Examples (a missing value as the
    model's missing marker)."""
    import tensorflow as tf
    from tensorflow_transform.output_wrapper import TFTransformOutput

    if spec.data_kind == F.IMAGE:
        from tfxline.serving import tflite_images
        return tflite_images.columns_from_examples(records, spec)
    raw_spec = TFTransformOutput(transform_dir).raw_feature_spec()
    columns = list(spec.serving_columns)
    parsed = tf.io.parse_example(tf.constant(list(records)), {c: raw_spec[c] for c in columns})
    out = {}
    for c in columns:
        dtype = tf.as_dtype(raw_spec[c].dtype)
        missing = b"" if dtype == tf.string else (np.nan if dtype.is_floating else INT64_MISSING)
        column = parsed[c]
        if isinstance(column, tf.SparseTensor):  # a VarLenFeature: may be missing
            column = tf.sparse.to_dense(column, default_value=tf.constant(missing, dtype))
        dense = np.reshape(column.numpy(), [len(records), -1])
        first = dense[:, 0] if dense.shape[1] else np.full([len(records)], missing, dtype.as_numpy_dtype)
        out[c] = first.astype(object) if dtype == tf.string else first
    return out


def _rows(inputs: Mapping[str, np.ndarray], start: int, stop: int) -> Dict[str, np.ndarray]:
    return {k: v[start:stop] for k, v in inputs.items()}


def predict(runner: Runner, inputs: Mapping[str, np.ndarray], batch: int = 512) -> np.ndarray:
    n = len(next(iter(inputs.values())))
    return np.concatenate([runner(_rows(inputs, i, min(i + batch, n))) for i in range(0, n, batch)])


def saved_model_outputs(model_dir: str, records: Sequence[bytes], spec: F.FeatureSpec, batch: int = 512):
    """(serving_default's outputs, the labels from transform_features) on ``records``."""
    import tensorflow as tf

    from tfxline.trainer.export import SERVING_SIGNATURE, TRANSFORM_SIGNATURE
    loaded = tf.saved_model.load(model_dir)
    serve, transform = loaded.signatures[SERVING_SIGNATURE], loaded.signatures[TRANSFORM_SIGNATURE]
    outputs, labels = [], []
    for i in range(0, len(records), batch):
        chunk = tf.constant(list(records[i:i + batch]))
        outputs.append(serve(examples=chunk)[task_types.get(spec.task).output_key].numpy())
        labels.append(np.reshape(transform(examples=chunk)[spec.label.name].numpy(), [-1]))
    return np.concatenate(outputs), np.concatenate(labels)


@dataclasses.dataclass
class Export:
    content: bytes
    parity: Parity
    flex_ops: List[str]
    inputs: Dict[str, str]      # TFLite input name -> raw column
    seconds: float
    transform_dir: str = ""     # the Transform output whose values it holds

    def metadata(self) -> Dict[str, Any]:
        """What push_metadata.json records under ``tflite``."""
        return {"file": FILE, "mode": self.parity.mode, "bytes": len(self.content), "flex_ops": self.flex_ops,
                "inputs": self.inputs, "parity": self.parity.to_dict(), "seconds": round(self.seconds, 2),
                "transform_graph": self.transform_dir,
                "missing_values": {"float": "NaN", "string": "empty string", "int": str(INT64_MISSING)}}


def export(model_dir: str, transform_dir: str, spec: F.FeatureSpec, mode: str, eval_records: Sequence[bytes],
           train_records: Iterable[bytes] = (), tolerance: float = 0.0) -> Export:
    """Build, convert and check the TFLite model; TFLiteError when it fails the gate."""
    start = time.perf_counter()
    if not eval_records:
        raise TFLiteError("no eval rows to check the TFLite model on; fix: give the eval split rows "
                          "(data.eval_buckets) or set serving.tflite: off")
    check_mode(mode, string_columns(transform_dir, spec))
    module = build_module(model_dir, transform_dir, spec)
    train = list(train_records)[:CALIBRATION_ROWS]
    calibration = columns_from_examples(train, spec, transform_dir) if mode == "int8" and train else None
    content = convert(module, mode, calibration)
    image = spec.data_kind == F.IMAGE  # one image a call
    eval_records = list(eval_records)[:IMAGE_PARITY_ROWS if image else PARITY_ROWS]
    saved, labels = saved_model_outputs(model_dir, eval_records, spec)
    try:
        runner = Runner(content)
        lite = predict(runner, columns_from_examples(eval_records, spec, transform_dir), batch=1 if image else 512)
    except Exception as e:  # noqa: BLE001 - the interpreter raises RuntimeError / ValueError
        if "Select TensorFlow op" in str(e):
            raise TFLiteError(
                f"the TFLite model ({mode}) needs Select TF ops (a vocabulary with oov_buckets > 1 hashes its "
                "unseen values with tft's string hash), which this TensorFlow's TFLite interpreter cannot run "
                "(TF 2.20 and later ship it without them), so it cannot be checked; fix: oov_buckets: 1 on "
                "every vocabulary feature, or serving.tflite: off") from e
        raise TFLiteError(f"the TFLite model ({mode}) failed on the eval rows: {_first_line(e)}; "
                          "fix: set serving.tflite: off, or another mode") from e
    result = parity(mode, spec.task, saved, lite, labels, tolerance)
    exported = Export(content, result, runner.flex_ops(), {input_name(c): c for c in spec.serving_columns},
                      time.perf_counter() - start, transform_dir)
    if not result.ok:
        raise TFLiteError(f"the TFLite model ({mode}) does not match the SavedModel: {result.reason}; nothing "
                          "pushed; fix: use another serving.tflite mode, or raise serving.tflite_tolerance")
    return exported
