"""At most two glibc malloc arenas in a ``tfxline`` command's process (and its children).

glibc gives each thread that allocates while another holds an arena an arena of its own, up to
8 x the cores, and memory freed in one arena serves only that arena. TensorFlow's and Beam's
thread pools made a 300-column run peak at 2.01 GiB; with two arenas 1.85 GiB, the same wall
time (77.0 s and 76.5 s, one run each on 2 cores; docs/scale.md). Set before TensorFlow starts
a thread; a ``MALLOC_ARENA_MAX`` the user set is left as it is (glibc read it at start).
"""
from __future__ import annotations

import ctypes
import os

ARENAS = 2
_M_ARENA_MAX = -8   # glibc's malloc.h


def limit() -> bool:
    """Two arenas from now on, here and in child processes; False where this is not glibc or
    the user chose a number."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    os.environ["MALLOC_ARENA_MAX"] = str(ARENAS)   # Beam's worker processes, a notebook's kernel
    return bool(mallopt(_M_ARENA_MAX, ARENAS))
