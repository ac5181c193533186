"""``tfxline predict`` on documents in files, for a model with a text input: a folder of ``.txt``
files (searched through its sub-folders) or a CSV with a column of their paths (found as ``tfxline
init`` finds an image CSV's: the column whose cells name ``.txt`` files; relative paths are read
from the CSV's folder). One output row per file, in order: its path (and the CSV's other columns),
then the task's prediction columns.

Each file's text goes to the model as the text input's column of a raw row (the CSV's other
columns beside it), through ``serving_default`` as a CSV row would; a CSV that holds the text
input's column itself is read as rows, as before (local/predict.py). A file that is missing or not
UTF-8 refuses the whole input before anything is predicted, naming it (and the line and byte).
"""
from __future__ import annotations

import os
from typing import Dict, List, Tuple

from tfxline.components.text_files import TEXT_EXTENSION, NotUtf8Error, decode, is_text_name
from tfxline.pipeline.config import PipelineConfig
from tfxline.pipeline.data.check import DataError, path_column, read_columns

PATH = "path"  # a folder's output column: each file's path below the folder


def reads_files(input_path: str, cfg: PipelineConfig) -> bool:
    """Whether ``input_path`` names documents in files for a text model: a folder holding .txt files
    (and no CSV files of rows), or a CSV without the text input's column."""
    texts = cfg.features.text_inputs
    if not texts:
        return False
    if os.path.isdir(input_path):
        top = os.listdir(input_path)
        return (not any(f.lower().endswith((".csv", ".csv.gz")) for f in top)
                and any(is_text_name(f) for _, _, names in os.walk(input_path) for f in names))
    if not os.path.isfile(input_path):
        return False
    header = read_columns([input_path])[0]
    return not any(t.source in header for t in texts)


def document_rows(input_path: str, cfg: PipelineConfig) -> Tuple[List[Dict[str, str]], List[Dict[str, str]]]:
    """(the output rows' input columns, the model's raw rows: each file's text under the text input's
    column, a CSV's other columns beside it)."""
    texts = cfg.features.text_inputs
    if len(texts) != 1:
        raise DataError(f"the model reads {len(texts)} text inputs ({', '.join(t.source for t in texts)}); a file "
                        "gives one: pass a CSV with a column of each")
    column = texts[0].source
    rows, files = (folder_rows(input_path) if os.path.isdir(input_path) else csv_rows(input_path, column))
    given = set(rows[0]) | {column} if rows else {column}
    missing = [c for c in cfg.features.serving_columns if c not in given and c != PATH]
    if missing:
        raise DataError(f"the model reads {', '.join(missing)} beside the text, which {input_path} does not hold; "
                        f"pass a CSV with those columns and a column of .txt paths (or the text itself as {column!r})")
    contents = read_documents(files)
    return rows, [{**{k: v for k, v in row.items() if k != PATH}, column: text} for row, text in zip(rows, contents)]


def folder_rows(folder: str) -> Tuple[List[Dict[str, str]], List[str]]:
    files = sorted(os.path.join(d, f) for d, _, names in os.walk(folder) for f in names if is_text_name(f))
    if not files:
        raise DataError(f"{folder} holds no {TEXT_EXTENSION} files; pass a folder of .txt files or a CSV of their "
                        "paths")
    return [{PATH: os.path.relpath(f, folder)} for f in files], files


def csv_rows(path: str, text_column: str) -> Tuple[List[Dict[str, str]], List[str]]:
    header, columns = read_columns([path])
    found = path_column(header, columns, is_text_name)
    if found is None:
        raise DataError(f"{path} has no column {text_column!r} (the text input's) and no column of {TEXT_EXTENSION} "
                        f"file paths (columns: {', '.join(header)}); add one of them, or pass a folder of .txt files")
    rows = [dict(zip(header, cells)) for cells in zip(*columns)]
    base = os.path.dirname(os.path.abspath(path))
    return rows, [os.path.join(base, row[found]) for row in rows]


def read_documents(files: List[str]) -> List[str]:
    """Each file's text; DataError naming a file that is missing or not UTF-8."""
    contents = []
    for path in files:
        try:
            with open(path, "rb") as f:
                contents.append(decode(path, f.read()))
        except OSError as e:
            raise DataError(f"{path} cannot be read ({e.strerror}); fix the path or remove it, and predict "
                            "again") from None
        except NotUtf8Error as e:
            raise DataError(f"{e}; or remove it, and predict again") from None
    return contents
