"""A class folder's layout, as Keras's ``image_dataset_from_directory`` and
``text_dataset_from_directory`` read it: ROOT/<class>/<file>. No Beam or TensorFlow here: the CLI's
pre-flight checks (pipeline/data/texts.py, images.py) import it before TensorFlow starts (cli/quiet.py)."""
from __future__ import annotations

import os


def class_of(path: str) -> str:
    """A file's class: the name of the folder it is in."""
    return os.path.basename(os.path.dirname(path))
