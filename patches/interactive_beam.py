"""No Interactive Beam in a notebook's cells: Beam's environment made as in a kernel without a
notebook.

In a Jupyter kernel (notebooks/), Beam makes its Interactive Beam environment when the first
pipeline is built (``apache_beam.utils.interactive_utils.alter_label_if_ipython``), and in a
notebook that environment displays a script in the running cell that loads jQuery and
DataTables from two CDNs, and sends Beam's log into the cells. TFX's components use no
Interactive Beam feature: :func:`interactive_beam_off` makes the environment first, with
``interactive_environment.is_in_notebook`` answering False meanwhile, as Beam makes it in a
kernel without a notebook (nothing displayed; its warnings about that, and about the
Interactive Beam extras not installed, not logged).
"""
from __future__ import annotations

import logging

from tfxline.patches import guard


def interactive_beam_off() -> None:
    """In IPython, before the first pipeline: Beam's Interactive Beam environment made without its
    notebook scripts. Outside IPython, and once the environment exists: nothing."""
    from apache_beam.utils import interactive_utils

    if not interactive_utils.is_in_ipython() or not guard.applies("interactive_beam"):
        return
    from apache_beam.runners.interactive import interactive_environment as ie

    # is_in_notebook: the name ie imported from interactive_utils, replaced where ie reads it
    logger, in_notebook = logging.getLogger(ie.__name__), ie.is_in_notebook  # pyright: ignore[reportPrivateImportUsage]
    level = logger.level
    logger.setLevel(logging.ERROR)
    ie.is_in_notebook = lambda: False  # pyright: ignore[reportPrivateImportUsage]
    try:
        ie.current_env()
    finally:
        ie.is_in_notebook = in_notebook  # pyright: ignore[reportPrivateImportUsage]
        logger.setLevel(level)
