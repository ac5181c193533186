"""The notebooks' entry point (notebooks/*.ipynb): in a Jupyter kernel, the process settings the
``tfxline`` command's ``main`` makes, and the libraries' log in a file instead of the cells."""
from __future__ import annotations

import logging
import os

LOG_FILE = "notebook.log"


def start_notebook(work_dir: str) -> str:
    """A notebook's first cell, before anything imports TensorFlow: tf_keras as the one Keras
    (trainer/keras_compat.py) and the libraries' start-up noise left out (cli/quiet.py), as the
    command does. Then the log: TensorFlow, seeing an interactive session, logs INFO lines to
    stdout, and the Python libraries (TFX, TFT, Beam, through absl and logging) log to stderr, both
    into the cells; here, as in a run (local/process.logging_to), those lines go to
    ``<work_dir>/logs/notebook.log`` (returned), and a cell shows what its code prints and displays.
    A pipeline run still writes its own log, which its first line names."""
    from tfxline.trainer.keras_compat import select_legacy_keras

    select_legacy_keras()
    from tfxline.cli.quiet import import_tensorflow_quietly, quiet_libraries

    quiet_libraries()
    import_tensorflow_quietly()
    import tensorflow as tf

    tf.get_logger()  # made now, with the console handler it gives itself in a session like this one
    path = os.path.join(work_dir, "logs", LOG_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    root = logging.getLogger()
    for logger in (root, logging.getLogger("tensorflow")):
        for handler in [h for h in logger.handlers if isinstance(h, logging.StreamHandler)
                        and not isinstance(h, logging.FileHandler)]:
            logger.removeHandler(handler)
    logging.getLogger("tensorflow").setLevel(logging.NOTSET)  # its own INFO level, set for a session like this
    if not any(isinstance(h, logging.FileHandler) and h.baseFilename == os.path.abspath(path) for h in root.handlers):
        handler = logging.FileHandler(path)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)  # the libraries' Python warnings too
    return path
