"""Pre-flight checks of a local run beyond its data files (local/runner.resolve_inputs calls them):
each refuses, in one line with the fix, what would otherwise fail half-way through the run."""
from __future__ import annotations

import posixpath

from tfxline.components.run_metrics import first_line
from tfxline.pipeline.config import PipelineConfig
from tfxline.pipeline.data import source as data_source


def check_release(cfg: PipelineConfig) -> None:
    """The serving directory's release, which the baseline, the drift check and the push read:
    a damaged one is refused before the run (one line naming the file and the fix), not by the
    DriftGate half-way through it with a traceback in the log."""
    from tfxline.serving import release

    try:
        release.read(cfg.serving_dir)
    except release.ReleaseError as e:
        raise data_source.DataError(str(e)) from None


def check_tflite(cfg: PipelineConfig, schema) -> None:
    """serving.tflite: a mode this model can be converted in (int8 cannot calibrate string
    inputs), refused before the run rather than at its push."""
    from tensorflow_metadata.proto.v0 import schema_pb2

    from tfxline.serving import tflite

    if cfg.serving.tflite == tflite.OFF:
        return
    image = cfg.features.image  # decoded before the TFLite model: pixels in
    pixels = image.source if image else None
    strings = [f.name for f in schema.feature
               if f.name in cfg.features.serving_columns and f.type == schema_pb2.BYTES and f.name != pixels]
    try:
        tflite.check_mode(cfg.serving.tflite, strings)
    except tflite.TFLiteError as e:
        raise data_source.DataError(str(e)) from None


def check_text_encoder(cfg: PipelineConfig) -> None:
    """model.text_saved_model: the pretrained text encoder the Trainer will load, loaded here and
    called on two documents, so a folder that is not one, or an encoder that does not map a batch
    of strings to [batch, dim] vectors, is refused before the run (one line with the fix) rather
    than by a Trainer's traceback minutes in. Here, not at config load: predict and runs read the
    config of a model that carries its encoder, after the folder may be gone."""
    from tfxline.trainer.text_settings import PRETRAINED

    if cfg.model.text_encoder == PRETRAINED and cfg.features.text_inputs:
        check_encoder(cfg.model.text_saved_model)


def check_encoder(path: str) -> None:
    """Raises DataError (one line with the fix) unless ``path`` is a folder holding saved_model.pb,
    loaded, whose ``__call__`` maps two strings to a [2, dim] float tensor (trainer/text_pretrained.py's
    contract)."""
    import tensorflow as tf

    from tfxline.serving.native_stderr import TF_RUNTIME_NOISE, stderr_filtered

    try:
        with stderr_filtered(TF_RUNTIME_NOISE):  # oneDNN's notice about the encoder's int64 lookup
            _check_encoder(path)
    except tf.errors.OpError as e:  # an object store that cannot be reached, a folder not readable
        raise data_source.DataError(f"model.text_saved_model: {path} cannot be read ({first_line(e)}); fix the "
                                    "path or its access, or point at another folder") from None


def _check_encoder(path: str) -> None:
    import tensorflow as tf

    from tfxline.serving import storage

    where = f"model.text_saved_model: {path}"
    if storage.isfile(path) and posixpath.basename(path) == "saved_model.pb":
        raise data_source.DataError(f"{where} is the SavedModel's file; point at its folder, "
                                    f"{posixpath.dirname(path) or '.'}")
    if not storage.exists(path):
        raise data_source.DataError(f"{where} does not exist; point at the folder of a TF2 SavedModel "
                                    "(saved_model.pb and variables/ in it)")
    if not storage.isfile(storage.join(path, "saved_model.pb")):
        raise data_source.DataError(f"{where} holds no saved_model.pb; point at the SavedModel's folder (the one "
                                    "with saved_model.pb and variables/ in it)")
    try:
        encoder = tf.saved_model.load(path)
    except (ValueError, OSError) as e:
        raise data_source.DataError(f"{where} cannot be loaded ({first_line(e)}); fix the folder or point at "
                                    "another") from None
    if not callable(encoder):
        raise data_source.DataError(f"{where} has no __call__; save the encoder with tf.saved_model.save(obj, "
                                    "path), obj callable on a [batch] tf.string tensor")
    try:
        out = encoder(tf.constant(["a short document", ""]))
    except (TypeError, ValueError, tf.errors.OpError) as e:
        raise data_source.DataError(f"{where}: its __call__ does not take a [batch] tf.string tensor "
                                    f"({first_line(e)}); save an encoder that maps raw strings to vectors") from None
    shape, dtype = getattr(out, "shape", None), getattr(out, "dtype", None)
    if shape is None or dtype is None or not dtype.is_floating or len(shape) != 2 or shape[0] != 2:
        got = f"{dtype.name} {list(shape)}" if shape is not None and dtype is not None else type(out).__name__
        raise data_source.DataError(f"{where}: its __call__ gave {got} for 2 documents; save an encoder that "
                                    "returns [batch, dim] float vectors (its tokens' vectors pooled inside it)")
