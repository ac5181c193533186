"""Batch prediction with the newest pushed model: a CSV of raw rows in, rows + predictions out.

The rows go through the same path as a TF Serving request: serialized raw tf.Examples
(serving columns only, no label) into the ``serving_default`` signature, whose Transform
layer computes the features.
"""
from __future__ import annotations

import csv
import json
import os
from typing import Dict, List, Optional, TextIO

import numpy as np

from components.serving_push import latest_version_dir
from pipeline import data_source
from pipeline.config import PipelineConfig
from pipeline.examples import read_csv_rows, serialize_rows
from trainer.export import SERVING_SIGNATURE
from transforms import features as F


def load_serving_fn(model_dir: str):
    import tensorflow as tf

    return tf.saved_model.load(model_dir).signatures[SERVING_SIGNATURE]


def predict_rows(serve, rows: List[Dict[str, str]], cfg: PipelineConfig, schema, batch_size: int = 1024):
    """One output per row: P(positive) for binary, class probabilities, or the value."""
    import tensorflow as tf

    outputs = []
    for start in range(0, len(rows), batch_size):
        batch = serialize_rows(rows[start:start + batch_size], schema, cfg.features.serving_columns)
        result = serve(examples=tf.constant(batch))
        outputs.append(next(iter(result.values())).numpy())
    return np.concatenate(outputs) if outputs else np.zeros((0,), np.float32)


def output_columns(cfg: PipelineConfig, values: np.ndarray) -> List[Dict[str, object]]:
    if cfg.features.task == F.TASK_BINARY:
        return [{"probability": float(v)} for v in values]
    if cfg.features.task == F.TASK_MULTICLASS:
        return [{"predicted_class": int(np.argmax(v)), "probabilities": json.dumps([float(x) for x in v])}
                for v in values]
    return [{"prediction": float(v)} for v in values]


def predict_csv(cfg: PipelineConfig, input_csv: str, output_path: str,
                model_dir: Optional[str] = None, stream: Optional[TextIO] = None) -> int:
    schema = data_source.load_schema(data_source.schema_path(cfg.data.schema))
    data_source.check_csv(data_source.csv_files(input_csv), schema, required=cfg.features.serving_columns)
    model_dir = model_dir or latest_version_dir(cfg.serving_dir)
    rows = list(read_csv_rows(input_csv))
    values = predict_rows(load_serving_fn(model_dir), rows, cfg, schema)
    extra = output_columns(cfg, values)
    tmp = output_path + ".tmp"
    os.makedirs(os.path.dirname(os.path.abspath(output_path)), exist_ok=True)
    with open(tmp, "w", newline="") as f:
        if output_path.endswith((".jsonl", ".json")):
            for row, more in zip(rows, extra):
                f.write(json.dumps({**row, **more}) + "\n")
        else:
            fields = list(rows[0].keys()) + list(extra[0].keys()) if rows else []
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            for row, more in zip(rows, extra):
                writer.writerow({**row, **more})
    os.replace(tmp, output_path)  # never a half-written output file
    if stream:
        print(f"{len(rows)} predictions from {model_dir} -> {output_path}", file=stream)
    return len(rows)
