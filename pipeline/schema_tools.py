"""Draft a schema from data with TFDV, to review against the curated one in schema/."""
from __future__ import annotations

import difflib
import os
from typing import Optional, TextIO

from google.protobuf import text_format

from pipeline import data_source
from pipeline.config import PipelineConfig
from pipeline.data_source import DataError


def infer_schema(location: str, fmt: str = "csv"):
    import tensorflow_data_validation as tfdv

    if fmt == "csv":
        stats = tfdv.generate_statistics_from_csv(location)
    else:
        stats = tfdv.generate_statistics_from_tfrecord(location)
    return tfdv.infer_schema(stats)


def draft(cfg: PipelineConfig, out_path: Optional[str], diff: bool, stream: TextIO) -> int:
    found = data_source.locate(data_source.resolve_data_path(cfg.data.path), cfg.data.format, cfg.data.pattern)
    schema = infer_schema(found.files[0] if len(found.files) == 1 else os.path.join(found.root, found.read_pattern),
                          cfg.data.format)
    text = text_format.MessageToString(schema)
    if out_path:
        os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
        with open(out_path, "w") as f:
            f.write(text)
        print(f"draft schema written to {out_path}; review it, then set data.schema to it", file=stream)
    if diff:
        try:
            current_path = data_source.schema_path(cfg.data.schema)
        except DataError:
            current_path = None
        current = (text_format.MessageToString(data_source.load_schema(current_path))
                   if current_path else "")
        lines = difflib.unified_diff(current.splitlines(), text.splitlines(),
                                     fromfile=current_path or "(no schema)", tofile="draft", lineterm="")
        print("\n".join(lines) or "draft equals the curated schema", file=stream)
    if not out_path and not diff:
        print(text, file=stream)
    return 0
