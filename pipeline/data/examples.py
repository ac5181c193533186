"""Raw CSV rows -> serialized tf.Examples, typed by the schema (as a serving client sends)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterable, Iterator, List, Sequence

from tensorflow_metadata.proto.v0 import schema_pb2

if TYPE_CHECKING:
    import tensorflow as tf

# TensorFlow is imported where a row becomes a tf.Example, not with this module: `tfxline predict`
# imports this module before its checks, and TensorFlow only after them, quietly (cli/quiet.py).


def row_to_example(row: Dict[str, str], types: Dict[str, int], columns: Sequence[str]) -> "tf.train.Example":
    """Empty cells are left out (missing), exactly like a client that omits a value."""
    import tensorflow as tf

    example = tf.train.Example()
    for name in columns:
        value = row.get(name, "")
        if value == "" or value is None:
            continue
        feature = example.features.feature[name]
        kind = types.get(name, schema_pb2.BYTES)
        if kind == schema_pb2.INT:
            feature.int64_list.value.append(int(float(value)))
        elif kind == schema_pb2.FLOAT:
            feature.float_list.value.append(float(value))
        else:
            feature.bytes_list.value.append(str(value).encode())
    return example


def serialize_rows(rows: Iterable[Dict[str, str]], schema: schema_pb2.Schema,
                   columns: Sequence[str]) -> List[bytes]:
    types = {f.name: f.type for f in schema.feature}
    return [row_to_example(r, types, columns).SerializeToString() for r in rows]


def read_csv_rows(path: str) -> Iterator[Dict[str, str]]:
    """The rows of a CSV file as dicts, read as the pipeline reads its data (UTF-8 with or
    without a BOM, any line ends, gzip, names stripped: pipeline.data.source.csv_reader)."""
    from tfxline.pipeline.data.source import csv_reader

    header, reader = csv_reader(path)
    for row in reader:
        if row and row != [""]:
            yield dict(zip(header, row))
