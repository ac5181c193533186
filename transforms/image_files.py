"""Which files in an image folder are images: TensorFlow's decode_image reads JPEG, PNG, GIF and
BMP; everything else there (notes.txt, .DS_Store, Thumbs.db) is not read, only counted. No
TensorFlow here: the CLI's checks import it before TensorFlow starts (cli/quiet.py)."""
from __future__ import annotations

import os

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".gif", ".bmp")


def is_image_name(path: str) -> bool:
    """Whether a file's name says it is an image TensorFlow decodes (hidden files never are)."""
    name = os.path.basename(path)
    return not name.startswith(".") and name.lower().endswith(IMAGE_EXTENSIONS)


# What each image's example holds beside its bytes and class, for the statistics and the data gates
# (a new day's folder with new formats or sizes): the format from the file's first bytes, the
# decoded size. Named after the image column.
FORMAT, WIDTH, HEIGHT = "format", "width", "height"
MAGIC = ((b"\xff\xd8\xff", "JPEG"), (b"\x89PNG", "PNG"), (b"GIF8", "GIF"), (b"BM", "BMP"))


def metadata_columns(image_column: str) -> dict:
    """{format|width|height: its column's name}."""
    return {kind: f"{image_column}_{kind}" for kind in (FORMAT, WIDTH, HEIGHT)}


def format_of(data: bytes) -> str:
    """JPEG, PNG, GIF or BMP from an image's first bytes ("other" when none of them)."""
    return next((name for magic, name in MAGIC if data.startswith(magic)), "other")
