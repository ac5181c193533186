"""tfxline: the one top-level import name this project installs.

Its subpackages are the repository's top-level folders: ``tfxline.pipeline`` is ``pipeline/``,
``tfxline.trainer`` is ``trainer/``, and so on. An installed wheel has them under ``tfxline/``
(setup.py maps them with ``package_dir``); in a checkout, ``tfxline/<folder>`` is a committed
relative symlink to ``../<folder>`` for each folder of setup.py's PACKAGES, so Python, a Beam
worker, the image (kubeflow/Dockerfile copies the links with the folders) and static tools
(jedi, pyright: go-to-definition, the type check of ``make lint``) all find the checkout's code
under the same names, with nothing computed at import time (issue #74).
"""
