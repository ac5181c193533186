"""TensorFlow's deprecation notices off: TFDV's and TFMA's calls of deprecated TF functions print
them, for those libraries' developers, not the user. TensorFlow has no public switch
(tensorflow/tensorflow#27023); its module flag ``deprecation._PRINT_DEPRECATION_WARNINGS`` is
the one its maintainers point to (#35550). Process-wide, at an entry point (cli/quiet.py).

Assigning a module attribute cannot fail, so an ``except AttributeError`` would never notice a
TensorFlow without the flag: the version guard is what keeps this to the TensorFlow releases it
was tested on, where ``deprecation`` reads the flag (tensorflow/python/util/deprecation.py).
"""
from __future__ import annotations

from tfxline.patches import guard


def quiet_deprecation_notices() -> None:
    if not guard.applies("tf_deprecation"):
        return
    try:
        from tensorflow.python.util import deprecation
    except ImportError:  # a stand-in TensorFlow without its Python internals: nothing prints notices
        return
    deprecation._PRINT_DEPRECATION_WARNINGS = False
