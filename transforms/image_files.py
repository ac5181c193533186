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
