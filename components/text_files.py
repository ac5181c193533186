"""Which files in a text folder are documents (``.txt``, as Keras's ``text_dataset_from_directory``
reads them: ``notes.md``, ``.DS_Store`` and the rest are only counted), and a document's bytes as
text: UTF-8 with or without a byte-order mark, a byte that is not UTF-8 named by its line and its
place in the line, in the words of the CSV check (pipeline/data/check.py csv_lines). No TensorFlow here:
the CLI's checks import it before TensorFlow starts (cli/quiet.py)."""
from __future__ import annotations

import codecs
import os

TEXT_EXTENSION = ".txt"


class NotUtf8Error(ValueError):
    """A file whose bytes are not UTF-8 (the message names the line and the byte)."""


def is_text_name(path: str) -> bool:
    """Whether a file's name says it is a document (hidden files never are)."""
    name = os.path.basename(path)
    return not name.startswith(".") and name.lower().endswith(TEXT_EXTENSION)


def decode(path: str, data: bytes) -> str:
    """A document's text: its bytes as UTF-8 (a byte-order mark dropped); NotUtf8Error naming the
    first byte that is not."""
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as e:
        at = skip + e.start  # in the file's bytes
        line_start = data.rfind(b"\n", 0, at) + 1
        line_no, byte_no = data.count(b"\n", 0, at) + 1, at - line_start + 1
        raise NotUtf8Error(f"{path} line {line_no} byte {byte_no} (0x{data[at]:02x}) is not UTF-8; save the file "
                           "as UTF-8 (from Latin-1 / Windows-1252: iconv -f cp1252 -t utf-8 IN > OUT)") from None
