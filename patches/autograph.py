"""AutoGraph leaves the code of libraries that are graph code already as it is.

AutoGraph converts every function a ``tf.function`` calls unless a rule says not to, and its
rules skip only ``keras`` and ``tensorflow`` (TF 2.16 and 2.21). Code of ``AUTOGRAPH_SKIPPED``
runs inside this project's tf.functions and needs no conversion. tf_keras: the first fit()
re-parsed the library's source, 55 s of a 58 s first epoch on the taxi model (cProfile).
tensorflow_transform: its SavedModel loader's functions, converted again each time the Transform
layer is called in a new function (the Trainer's datasets, the export's two signatures) and its
analyzers' inside each trace of the preprocessing_fn: 42 conversions, 2.9 s of a taxi run on a
busy 2-core machine; tf.Transform also traces as a TF1 graph (force_tf_compat_v1), where nothing
is converted. There is no public API for this: the rules are AutoGraph's module global
``CONVERSION_RULES``, which ``conversion.is_allowlisted`` reads at each conversion.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional, Tuple

from tfxline.patches import guard

AUTOGRAPH_SKIPPED = ("tf_keras", "tensorflow_transform")


def _rules_with_skips() -> Tuple[Any, Optional[tuple]]:
    """AutoGraph's config module (Any: its module global CONVERSION_RULES is set through it) and its
    rules with ``AUTOGRAPH_SKIPPED``'s added first (None: they are there already)."""
    from tensorflow.python.autograph.core import config as autograph_config

    rules = tuple(autograph_config.CONVERSION_RULES)
    have = {getattr(r, "_prefix", None) for r in rules}
    missing = tuple(autograph_config.DoNotConvert(name) for name in AUTOGRAPH_SKIPPED if name not in have)
    return autograph_config, (missing + rules if missing else None)


@contextlib.contextmanager
def libraries_not_converted() -> Iterator[None]:
    """While inside, AutoGraph leaves ``AUTOGRAPH_SKIPPED``'s code as it is; AutoGraph's own rules
    are put back after (a nested use changes nothing)."""
    if not guard.applies("autograph"):
        yield
        return
    autograph_config, rules = _rules_with_skips()
    if rules is None:
        yield
        return
    before = autograph_config.CONVERSION_RULES
    autograph_config.CONVERSION_RULES = rules
    try:
        yield
    finally:
        if autograph_config.CONVERSION_RULES is rules:
            autograph_config.CONVERSION_RULES = before


def skip_autograph_for_libraries() -> None:
    """The same for the rest of the process (idempotent): for tests and benches that trace the
    Trainer's functions outside a component run."""
    if not guard.applies("autograph"):
        return
    autograph_config, rules = _rules_with_skips()
    if rules is not None:
        autograph_config.CONVERSION_RULES = rules
