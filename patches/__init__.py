"""Every run-time patch this project makes to a third-party library, and nothing else: the
lowest layer (it imports only third-party libraries and the standard library).

patches/registry.py is the table (what each patches, why, the measured saving, the upstream
issue or pull request it stands in for, the versions it was tested on), rendered in
docs/runtime-patches.md. patches/guard.py is the one guard they all go through: a patch
applies only on the library versions it was tested on (one log line where it stands down), and
``TFXLINE_RUNTIME_PATCHES=off`` turns them all off. patches/executor.py applies the executors'
patches around a run.

This package imports nothing at import time: a TF-only bundle can import its modules too.
"""
