"""Serialized tf.Examples from columns, many rows at a time, byte for byte what
``tf.train.Example.SerializeToString(deterministic=True)`` writes for the same Example.

TFX's CsvExampleGen builds one ``tf.train.Example`` per row in Python and serialises it
twice (once, deterministically, for the hash that picks its split, once to write it): on a
1M-row CSV that was most of CsvExampleGen's 206 s (py-spy, docs/scale.md). Here the wire
format is written with numpy for whole columns: every row's bytes are the same as the
deterministic serialisation (features in name order), so the split hash, and hence every
split, is what TFX's executor gives. tfx_bsl's C++ ``RecordBatchToExamples`` is as fast but
writes the features in hash-map order, which would move rows between splits.

The format (tensorflow/core/example/{example,feature}.proto): ``Example.features`` (1) is a
``Features`` whose ``feature`` (1) map entries are ``{key (1): name, value (2): Feature}``;
a Feature's kind is ``bytes_list`` (1), ``float_list`` (2, packed float32) or ``int64_list``
(3, packed varints); each list's values are its field 1. A column holds at most one value per
row (CSV cells): a row without a value has the kind with an empty list, as TFX writes an
empty cell; a column of kind ``None`` (every cell empty) has a Feature with no kind.
"""
from __future__ import annotations

from typing import Any, List, NamedTuple, Optional, Sequence

import numpy as np

INT, FLOAT, BYTES = "int", "float", "bytes"
_LIST_FIELD = {BYTES: 0x0A, FLOAT: 0x12, INT: 0x1A}  # the Feature's field, wire type 2
_LEN = 0x0A  # field 1, length-delimited: Example.features, Features.feature, a list's values


class Column(NamedTuple):
    """One feature: ``present`` (bool per row) and ``values`` for the present rows only, in
    order (int64 / float array, or a list of bytes); ``kind`` None: no row has a value."""
    name: str
    kind: Optional[str]
    present: np.ndarray
    values: Any = None  # by kind: an int64 / float array, or a list of bytes


class Ragged(NamedTuple):
    """Bytes per row: row i is ``data[starts[i]:starts[i] + lengths[i]]``."""
    data: np.ndarray     # uint8
    lengths: np.ndarray  # int64

    @property
    def starts(self) -> np.ndarray:
        return np.cumsum(self.lengths) - self.lengths


def _const(piece: bytes, rows: np.ndarray) -> Ragged:
    """``piece`` on the rows where ``rows`` (bool) is true, nothing elsewhere."""
    chunk = np.frombuffer(piece, np.uint8)
    return Ragged(np.tile(chunk, int(rows.sum())), np.where(rows, len(chunk), 0).astype(np.int64))


def _varint(values: np.ndarray, rows: Optional[np.ndarray] = None) -> Ragged:
    """Protobuf varints of int64 values (negative ones as 10-byte two's complement); with
    ``rows``, values are for the true rows only and the other rows are empty."""
    u = np.asarray(values).astype(np.int64).view(np.uint64)
    count = np.ones(len(u), np.int64)  # 7-bit groups: one, plus one per threshold passed
    for b in range(1, 10):
        count += u >= np.uint64(1 << (7 * b))
    width = int(count.max()) if len(u) else 1
    if width == 1:  # every value below 128 (lengths, small ints): the byte itself
        data = u.astype(np.uint8)
    else:
        groups = np.stack([(u >> np.uint64(7 * b)) & np.uint64(0x7F) for b in range(width)], axis=1).astype(np.uint8)
        groups[np.arange(width) < (count - 1)[:, None]] |= 0x80
        data = groups[np.arange(width) < count[:, None]]
    lengths = count
    if rows is not None:
        lengths = np.zeros(len(rows), np.int64)
        lengths[rows] = count
    return Ragged(data, lengths)


def _strings(values: Sequence[bytes], rows: np.ndarray) -> Ragged:
    lengths = np.zeros(len(rows), np.int64)
    lengths[rows] = np.fromiter(map(len, values), np.int64, len(values))
    return Ragged(np.frombuffer(b"".join(values), np.uint8), lengths)


def concat(parts: Sequence[Ragged]) -> Ragged:
    """Row i of the result: row i of each part, in order (each byte copied once)."""
    lengths = _length(parts)
    out = np.empty(int(lengths.sum()), np.uint8)
    dest = np.cumsum(lengths) - lengths
    for p in parts:
        if len(p.data):
            shift = np.repeat(dest - p.starts, p.lengths)
            out[shift + np.arange(len(p.data))] = p.data
        dest = dest + p.lengths
    return Ragged(out, lengths)


def _length(parts: Sequence[Ragged]) -> np.ndarray:
    return np.sum([p.lengths for p in parts], axis=0)


# A message is a list of parts, concatenated once at the end: its length is the sum of its
# parts' lengths, so nesting costs no copy.
def _message(tag: int, body: List[Ragged], rows: Optional[np.ndarray] = None) -> List[Ragged]:
    """Field ``tag`` holding ``body`` (length-delimited), on every row or the true ``rows``."""
    n = len(body[0].lengths)
    everywhere = np.ones(n, bool) if rows is None else rows
    return [_const(bytes([tag]), everywhere), _varint(_length(body)[everywhere], everywhere)] + body


def _feature(column: Column) -> List[Ragged]:
    """The Feature message of every row."""
    n = len(column.present)
    if column.kind is None:
        return [Ragged(np.empty(0, np.uint8), np.zeros(n, np.int64))]
    present = np.asarray(column.present, bool)
    if column.kind == BYTES:
        value_list = _message(_LEN, [_strings(column.values, present)], present)
    elif column.kind == FLOAT:
        with np.errstate(over="ignore"):  # beyond float32: inf, as protobuf stores it
            data = np.asarray(column.values, np.float64).astype("<f4").view(np.uint8)
        value_list = [_const(bytes([_LEN, 4]), present), Ragged(data, np.where(present, 4, 0).astype(np.int64))]
    elif column.kind == INT:
        value_list = _message(_LEN, [_varint(column.values, present)], present)
    else:
        raise ValueError(f"column {column.name}: unknown kind {column.kind!r}")
    return _message(_LIST_FIELD[column.kind], value_list)


def encode(columns: Sequence[Column]) -> List[bytes]:
    """One serialized tf.Example per row, features in name order (deterministic)."""
    entries: List[Ragged] = []
    for column in sorted(columns, key=lambda c: c.name):
        key = column.name.encode()
        header = bytes([_LEN]) + _varint(np.array([len(key)])).data.tobytes() + key
        entries += _message(_LEN, [_const(header, np.ones(len(column.present), bool))]
                            + _message(0x12, _feature(column)))
    example = concat(_message(_LEN, entries))
    buf, ends = example.data.tobytes(), np.cumsum(example.lengths)
    return [buf[a:b] for a, b in zip((ends - example.lengths).tolist(), ends.tolist())]
