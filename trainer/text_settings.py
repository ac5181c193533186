"""The model section's text keys checked together: ``text_encoder`` (trainer/text.py builds the
encoders), and the pretrained encoder's ``text_saved_model`` and ``text_fine_tune``
(trainer/text_pretrained.py). A pretrained encoder is a folder a run reads, never a download."""
from __future__ import annotations

from typing import Any, Iterator

from tfxline.typed_config.problems import Problem, bad

PRETRAINED = "pretrained"
TEXT_ENCODERS = ("bag", "transformer", PRETRAINED)
# where a run reads a SavedModel from: a path, or an object store TensorFlow's file system opens
READABLE_SCHEMES = ("gs://", "s3://", "hdfs://")


def bring_it() -> str:
    """The fix for an encoder named by a URL: fetch it once, point at the folder."""
    return ("a run never downloads: fetch it once where there is internet (a TF Hub model: add "
            "?tf-hub-format=compressed to its URL and untar it into a folder), copy the folder where the run "
            "reads (a path or gs://) and set model.text_saved_model to it")


def text_problems(model: Any) -> Iterator[Problem]:
    """The text keys of ``model`` (trainer/settings.ModelConfig), each problem one line."""
    encoder, path = model.text_encoder, model.text_saved_model
    if encoder not in TEXT_ENCODERS:
        yield bad(model, "text_encoder", f"use one of {', '.join(TEXT_ENCODERS)}")
        return
    if not model.text_dim >= 2:
        yield bad(model, "text_dim", "must be >= 2")
    if encoder != PRETRAINED:
        if path:
            yield bad(model, "text_saved_model", f"is read by text_encoder: {PRETRAINED} only (text_encoder is "
                                                 f"{encoder}); set text_encoder: {PRETRAINED}, or remove it")
        elif model.text_fine_tune:
            yield bad(model, "text_fine_tune", f"fine-tunes a text_encoder: {PRETRAINED} only (text_encoder is "
                                               f"{encoder}); remove it")
        return
    if not path:
        yield bad(model, "text_saved_model", f"text_encoder: {PRETRAINED} needs the folder of a TF2 SavedModel "
                                             "that maps a batch of strings to [batch, dim] vectors (a path or gs://)")
    elif "://" in path and not path.startswith(READABLE_SCHEMES):
        yield bad(model, "text_saved_model", f"{path} is a URL; {bring_it()}")
