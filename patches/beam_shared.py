"""Beam's ``Shared`` lets go of the last object a component loaded when the run is done.

``apache_beam.utils.shared`` keeps the last object acquired through any ``Shared`` handle alive
for the life of the process (``_SharedMap._keepalive``, apache_beam/utils/shared.py:204 and 241
at Beam 2.59 and 2.77), so a second acquisition in the same process finds it. TFMA loads the
Evaluator's model through it: in a process that runs the pipeline and goes on (a notebook kernel,
the test process), that model, a SavedModel of ~170 functions, stays until the interpreter tears
TensorFlow down, where its functions' finalizers fail on TF 2.16 ("Exception ignored in
AtomicFunction.__del__"; patches/tf_custom_gradients.py says why that fails). After a local run
nothing is acquired again, so :func:`forget_kept_alive` drops the reference Beam keeps.
"""
from __future__ import annotations

from tfxline.patches import guard


def forget_kept_alive() -> None:
    """Drop the object Beam keeps alive after its last ``Shared`` acquisition; nothing where the
    patch stands down (the object then lives until the process ends, as Beam means it to)."""
    if not guard.applies("beam_shared"):
        return
    from apache_beam.utils import shared

    shared._shared_map._keepalive = (None, None)  # noqa: SLF001 - Beam has no API to release it
