"""tfxline: the one top-level import name this project installs.

Its subpackages are the repository's top-level folders: ``tfxline.pipeline`` is ``pipeline/``,
``tfxline.trainer`` is ``trainer/``, and so on (setup.py maps them with ``package_dir``). An
installed wheel has them under ``tfxline/``; in a checkout they sit beside this folder, so its
``__path__`` names the checkout's root: the code imported is always this checkout's, whichever
folder Python was started in (a test, a Beam worker, a git worktree beside an editable install).
"""
import os as _os

_here = _os.path.dirname(_os.path.abspath(__file__))
if not _os.path.isdir(_os.path.join(_here, "pipeline")):  # a checkout: the folders are one level up
    __path__ = [_os.path.dirname(_here)]  # noqa: F811 - the package's search path, by design
