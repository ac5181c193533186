"""Pre-flight checks of a local run beyond its data files (local/runner.resolve_inputs calls them):
each refuses, in one line with the fix, what would otherwise fail half-way through the run."""
from __future__ import annotations

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
    """model.text_saved_model: a pretrained text encoder's folder the Trainer will load, refused
    before the run when it holds no SavedModel (a path or gs://), not by the Trainer's traceback.
    Here, not at config load: predict and runs read the config of a model that carries its encoder,
    after the folder may be gone."""
    from tfxline.serving import storage
    from tfxline.trainer.text_settings import PRETRAINED

    path = cfg.model.text_saved_model
    if cfg.model.text_encoder != PRETRAINED or not cfg.features.text_inputs:
        return
    if not storage.isfile(storage.join(path, "saved_model.pb")):
        raise data_source.DataError(f"model.text_saved_model: {path} holds no saved_model.pb; point at the "
                                    "SavedModel's folder (the one with saved_model.pb and variables/ in it)")
