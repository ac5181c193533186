"""Where the data and schema are; the fast pre-flight check of the input is pipeline/data/check.py
(its functions are named here too, where the callers look for them).

Input is CSV (CsvExampleGen), TFRecord files of tf.Example (ImportExampleGen, GZIP when
the name ends in .gz), or a folder with one sub-folder per class of images or ``.txt`` files.
``data.path`` is a file, a directory (files matching ``data.pattern``), or
``package:<package>/<path>`` for data shipped inside an installed Python package, located through
the package and never downloaded. A pattern with TFX's span
placeholders ({SPAN}, {SPAN:N}, {YYYY}{MM}{DD}, {VERSION}) names daily partitions: TFX's own
ExampleGen utilities find the newest span (and its newest version), and that span's files are
what the pre-flight check reads and what ExampleGen ingests. A missing path or schema, or a
span that has not landed, is a ``DataError`` naming the fix.
"""
from __future__ import annotations

import glob
import os
import re
from importlib import resources
from typing import List, NamedTuple, Optional, Tuple

from google.protobuf import text_format
from tensorflow_metadata.proto.v0 import schema_pb2

# the pre-flight check and its error, where the callers find them
from tfxline.pipeline.data.check import DataError, check_csv, check_tfrecords, csv_lines, csv_reader, read_columns  # noqa: F401

FORMATS = ("csv", "tfrecord", "images", "text")
# images, text: <class>/<file> under the folder (components/image_example_gen.py, text_example_gen.py)
DEFAULT_PATTERNS = {"csv": "*.csv", "tfrecord": "*", "images": "*/*", "text": "*/*"}
CLASS_FOLDER_EXAMPLES = {"images": "cats/1.jpg, dogs/2.png", "text": "pos/1.txt, neg/2.txt"}
BAD_IMAGE_POLICIES = ("skip", "fail")
PACKAGE_PREFIX = "package:"


def input_kind(fmt: str) -> str:
    """What ``data.path`` names for a format, in a refusal's words."""
    if fmt in CLASS_FOLDER_EXAMPLES:
        return f"folder with one sub-folder of {'images' if fmt == 'images' else '.txt files'} per class"
    return f"{fmt.upper()} file or directory"


def default_data_path() -> str:
    """The Chicago taxi CSV shipped inside the installed tfx package."""
    path = resources.files("tfx") / "examples" / "chicago_taxi_pipeline" / "data" / "simple" / "data.csv"
    if not path.is_file():
        raise DataError(f"the taxi CSV is not in the installed tfx package ({path}); "
                        "reinstall tfx 1.16 or pass --data PATH")
    return str(path)


def resolve_data_path(path: str) -> str:
    """A filesystem path for ``data.path``: empty means the taxi CSV inside tfx;
    ``package:<package>/<path>`` is resolved inside that installed package."""
    if not path:
        return default_data_path()
    if not path.startswith(PACKAGE_PREFIX):
        return path
    package, _, inner = path[len(PACKAGE_PREFIX):].partition("/")
    try:
        root = resources.files(package)
    except (ModuleNotFoundError, TypeError):
        raise DataError(f"data path {path}: package {package!r} is not installed; install it, "
                        "or point data.path at a file or directory") from None
    return str(root / inner) if inner else str(root)


# TFX's span / date placeholders (tfx.components.example_gen.utils SPAN_FULL_REGEX, DATE_SPECS),
# matched here without importing TFX (config validation stays fast).
_SPAN_SPEC = re.compile(r"{SPAN(:\d+)?}|{YYYY}|{MM}|{DD}")


def has_span_spec(pattern: str) -> bool:
    return bool(_SPAN_SPEC.search(pattern or ""))


class DataLocation(NamedTuple):
    root: str             # ExampleGen's input_base
    pattern: str          # its split pattern, placeholders kept (ExampleGen resolves them)
    files: List[str]      # the files of the span a run reads now
    read_pattern: str     # the glob of those files (relative to root)
    span: Optional[int] = None      # None: the pattern has no span placeholder
    version: Optional[int] = None


def locate(path: str, fmt: str, pattern: str = "", span: Optional[int] = None) -> DataLocation:
    """Where the ExampleGen reads, and the files it will read now: the newest span's, or
    ``span``'s (a backfill; its newest version)."""
    if not os.path.exists(path):
        raise DataError(f"data path {path} does not exist; pass an existing {input_kind(fmt)} with --data (or "
                        "data.path in the config)")
    if span is not None and not has_span_spec(pattern or DEFAULT_PATTERNS[fmt]):
        raise DataError(f"--span {span} picks a span, but data.pattern {pattern or DEFAULT_PATTERNS[fmt]!r} names "
                        "none; set data.pattern with TFX's {SPAN} (or {YYYY}{MM}{DD}) placeholder, e.g. "
                        "span-{SPAN}/*.csv, or drop --span")
    if not os.path.isdir(path):
        if has_span_spec(pattern):
            raise DataError(f"data.pattern {pattern!r} names spans, but the data path {path} is a file; "
                            "point --data at the directory that holds the spans")
        return DataLocation(os.path.dirname(path), os.path.basename(path), [path], os.path.basename(path))
    pattern = pattern or DEFAULT_PATTERNS[fmt]
    found = version = None
    resolved = pattern
    if has_span_spec(pattern):
        resolved, found, version = newest_span(path, pattern, span)
    files = sorted(f for f in glob.glob(os.path.join(path, resolved)) if os.path.isfile(f))
    if not files and fmt in CLASS_FOLDER_EXAMPLES and resolved == DEFAULT_PATTERNS[fmt]:
        raise DataError(f"data directory {path} holds no class folders with files in them; put each class's files "
                        f"in a sub-folder named for the class (e.g. {CLASS_FOLDER_EXAMPLES[fmt]})")
    if not files:
        raise DataError(f"data directory {path} holds no files matching {resolved!r}; point --data at "
                        f"a {fmt.upper()} file or a directory of them, or set data.pattern")
    return DataLocation(path, pattern, files, resolved, found, version)


def newest_span(root: str, pattern: str, span: Optional[int] = None) -> Tuple[str, int, Optional[int]]:
    """(pattern with the newest span (or ``span``) and its newest version filled in, span,
    version), found by TFX's ExampleGen utilities, as ExampleGen's driver finds them (a static
    RangeConfig for ``span``)."""
    from tfx.components.example_gen import utils
    from tfx.proto import example_gen_pb2, range_config_pb2

    split = example_gen_pb2.Input.Split(name="single_split", pattern=pattern)
    only = None if span is None else range_config_pb2.RangeConfig(
        static_range=range_config_pb2.StaticRange(start_span_number=span, end_span_number=span))
    try:
        _, found, version = utils.calculate_splits_fingerprint_span_and_version(root, [split], only)
        return split.pattern, found, version
    except ValueError as e:
        if span is not None:
            _, newest, _ = newest_span(root, pattern)
            raise DataError(f"data directory {root} holds no span {span} matching data.pattern {pattern!r} (the "
                            f"newest there is span {newest}); pass a span that landed to --span") from None
        raise DataError(f"data directory {root} holds no span matching data.pattern {pattern!r} "
                        f"({str(e).splitlines()[0]}); write each span's files where the pattern says "
                        "(e.g. span-{SPAN}/data.csv) or fix data.pattern") from None


def csv_files(path: str) -> List[str]:
    return locate(path, "csv")[2]


def schema_path(name_or_path: str) -> str:
    if name_or_path.endswith(".pbtxt") or os.sep in name_or_path:
        path = name_or_path
    else:
        path = str(resources.files("tfxline.schema") / f"{name_or_path}.pbtxt")
    if not os.path.isfile(path):
        raise DataError(
            f"schema {path} does not exist; draft one from the data with "
            f"'tfxline schema draft --data PATH --output {path}', review it, and commit it")
    return path


def load_schema(path: str) -> schema_pb2.Schema:
    with open(path) as f:
        return text_format.Parse(f.read(), schema_pb2.Schema())
