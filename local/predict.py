"""Batch prediction with the newest pushed model: a CSV of raw rows in, rows + predictions out.

The rows go through the same path as a TF Serving request: serialized raw tf.Examples
(serving columns only, no label) into the ``serving_default`` signature, whose Transform
layer computes the features.
"""
from __future__ import annotations

import csv
import json
import os
import sys
from typing import Dict, List, Optional, Sequence, TextIO, Tuple

import numpy as np

from tfxline import task_types
from tfxline.components.tfma_results import label_classes
from tfxline.local import predict_images, predict_text
from tfxline.pipeline.config import PipelineConfig
from tfxline.pipeline.data import source as data_source
from tfxline.pipeline.data.examples import read_csv_rows, serialize_rows
from tfxline.serving.native_stderr import TF_RUNTIME_NOISE, stderr_filtered
from tfxline.serving.release import serving_version_dir
from tfxline.task_types.decision import PREDICTED_CLASS

# Nothing here imports TensorFlow at module level: `tfxline predict` imports this module before
# its checks, and TensorFlow after them, quietly (cli/quiet.py), so it prints its own lines only.


def load_serving_fn(model_dir: str):
    import tensorflow as tf

    from tfxline.trainer import trees_ops
    from tfxline.trainer.export import SERVING_SIGNATURE

    trees_ops.load_inference_ops()  # a trees model's ops (none needed by a network)
    return tf.saved_model.load(model_dir).signatures[SERVING_SIGNATURE]


def predict_rows(serve, rows: List[Dict[str, str]], cfg: PipelineConfig, schema,
                 batch_size: int = 1024) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """(one output per row: P(positive) for binary, class probabilities, or the value; the
    served ``predicted_class`` per row, or None where the model serves none)."""
    import tensorflow as tf

    task = task_types.get(cfg.features.task)
    outputs, decided = [], []
    for start in range(0, len(rows), batch_size):
        batch = serialize_rows(rows[start:start + batch_size], schema, cfg.features.serving_columns)
        result = serve(examples=tf.constant(batch))
        outputs.append(result[task.output_key].numpy())
        if PREDICTED_CLASS in result and task.decides:
            decided.append(result[PREDICTED_CLASS].numpy())
    values = np.concatenate(outputs) if outputs else np.zeros((0,), np.float32)
    return values, (np.concatenate(decided) if decided else None)


def output_columns(cfg: PipelineConfig, values: np.ndarray, classes: Sequence[str] = (),
                   decided: Optional[np.ndarray] = None) -> List[Dict[str, object]]:
    """The task's prediction columns per row (its task type's): binary ``probability`` (of the
    positive class) and ``predicted_class`` (1 or 0 at the model's threshold); multi-class
    ``predicted_class`` (the label value, from the model's label vocabulary), its ``probability``
    and every class's, as JSON keyed by class; regression ``prediction``."""
    return task_types.get(cfg.features.task).prediction_columns(values, classes, decided)


def typed_row(row: Dict[str, str], schema) -> Dict[str, object]:
    """A CSV row's cells as JSON values: numbers where the schema types the column INT or FLOAT
    (integral floats such as 81.0 kept as written), null for an empty cell, text otherwise."""
    from tensorflow_metadata.proto.v0 import schema_pb2

    kinds = {f.name: f.type for f in schema.feature}
    out: Dict[str, object] = {}
    for name, cell in row.items():
        if cell == "":
            out[name] = None
        elif kinds.get(name) == schema_pb2.INT:
            out[name] = int(cell)
        elif kinds.get(name) == schema_pb2.FLOAT:
            out[name] = float(cell)
        else:
            out[name] = cell
    return out


def describe_predictions(cfg: PipelineConfig, extra: List[Dict[str, object]]) -> str:
    """One line on what was predicted, in the task's terms."""
    if not extra:
        return "no rows"
    return task_types.get(cfg.features.task).describe_predictions(extra)


def predict_csv(cfg: PipelineConfig, input_csv: str, output_path: str,
                model_dir: Optional[str] = None, stream: Optional[TextIO] = None) -> int:
    """``input_csv``: raw rows, or for an image model a folder of images or a CSV of their paths
    (local/predict_images.py), or for a text model a folder of .txt files or a CSV of their paths
    (local/predict_text.py)."""
    schema = data_source.load_schema(data_source.schema_path(cfg.data.schema))
    image = cfg.features.data_kind == "image"
    if image:
        rows, paths = predict_images.image_rows(input_csv, cfg)
        contents, model_rows = predict_images.read_images(paths), rows
    elif predict_text.reads_files(input_csv, cfg):  # .txt files: a folder, or a CSV of their paths
        rows, model_rows = predict_text.document_rows(input_csv, cfg)
    else:
        data_source.check_csv(data_source.csv_files(input_csv), schema, required=cfg.features.serving_columns)
        rows = model_rows = list(read_csv_rows(input_csv))
    model_dir = model_dir or serving_version_dir(cfg.serving_dir)
    with stderr_filtered(TF_RUNTIME_NOISE):  # e.g. grappler's cost model on a multi-class model's softmax
        values, decided = (predict_images.predict_images(model_dir, contents, task_types.get(cfg.features.task))
                           if image else predict_rows(load_serving_fn(model_dir), model_rows, cfg, schema))
    extra = output_columns(cfg, values, label_classes(model_dir), decided)
    if output_path == STDOUT:  # CSV on stdout, for a pipe; the summary line then goes to stderr
        write_predictions(sys.stdout, rows, extra, schema, jsonl=False, line_end="\n")
        sys.stdout.flush()
        stream = sys.stderr if stream else None
    else:
        tmp = output_path + ".tmp"
        os.makedirs(os.path.dirname(os.path.abspath(output_path)), exist_ok=True)
        with open(tmp, "w", newline="") as f:
            write_predictions(f, rows, extra, schema, jsonl=output_path.endswith((".jsonl", ".json")))
        os.replace(tmp, output_path)  # never a half-written output file
    if stream:
        where = "stdout" if output_path == STDOUT else output_path
        print(f"{len(rows)} predictions from {model_dir} -> {where}; {describe_predictions(cfg, extra)}",
              file=stream)
    return len(rows)


STDOUT = "-"  # --predictions -: the CSV on standard output


def write_predictions(f: TextIO, rows, extra, schema, jsonl: bool, line_end: str = "\r\n") -> None:
    """The input rows with their prediction columns: JSON lines (the row's values typed as its
    schema says) or CSV (every class's probability as one JSON cell; lines end as RFC 4180 says
    in a file, with a bare newline on stdout, for line tools)."""
    if jsonl:
        for row, more in zip(rows, extra):
            f.write(json.dumps({**typed_row(row, schema), **more}) + "\n")
        return
    fields = list(rows[0].keys()) + list(extra[0].keys()) if rows else []
    writer = csv.DictWriter(f, fieldnames=fields, lineterminator=line_end)
    writer.writeheader()
    for row, more in zip(rows, extra):
        writer.writerow({**row, **{k: json.dumps(v) if isinstance(v, dict) else v for k, v in more.items()}})
