"""Beam's inspection of a function's parameters, once per function instead of at every use.

Beam asks for the parameters of each DoFn's methods over and over. ``userstate.get_dofn_specs``
(apache_beam/transforms/userstate.py:220 in Beam 2.59, :247 in 2.77) wraps every method in
``dir(dofn)`` (~40 on a DoFn) in a ``MethodWrapper`` (runners/common.py:161 in 2.59, :157 in
2.77), which calls ``core.get_function_args_defaults`` (transforms/core.py:377 in 2.59, :382 in
2.77), which calls ``inspect.signature``. A pipeline asks this of each DoFn when it is built, when
it is converted to the runner API and when the worker builds its bundle processor, so a taxi run
made 5,988 ``get_dofn_specs`` calls and 186,463 ``inspect.signature`` calls: 3.8 s of a 41 s run
(bench/e2e.py; docs/performance.md).

``get_function_args_defaults(f)``'s answer depends only on the function: a bound method's on its
``__func__`` (``inspect.signature`` drops the bound first parameter whatever it is bound to), a
plain function's on itself: its code, defaults, keyword defaults and ``__signature__``, and the
same of each function its ``__wrapped__`` chain leads to (``inspect.unwrap``). While
:func:`shared_signatures` is active, the answer for a Python function is kept (weakly, so a
lambda's goes with it) with all of those as they were, and given again while each is still the
same object. Anything else (a builtin, a callable object, a ``functools.partial``, a chain that
leads to one of them) is inspected as before. Each call gets its own lists, as before.
"""
from __future__ import annotations

import contextlib
import threading
import types
import weakref
from typing import Any, Iterator, List, Optional, Tuple

from tfxline.patches import guard

_MISSING = object()
_MAX_WRAPPED = 8  # a longer chain of wrapped functions is inspected each time


def _function_of(f) -> Any:
    """The Python function whose signature decides ``f``'s answer, or None where it is not one."""
    if isinstance(f, types.MethodType):
        f = f.__func__
    return f if isinstance(f, types.FunctionType) else None


def _identity(fn: types.FunctionType) -> Optional[Tuple[Any, ...]]:
    """What ``inspect.signature`` reads of a function and the functions it wraps, compared object
    by object; None where the chain leads to something that is not a Python function."""
    identity: List[Any] = []
    for _ in range(_MAX_WRAPPED):
        signature = fn.__dict__.get("__signature__", _MISSING)
        wrapped = fn.__dict__.get("__wrapped__", _MISSING)
        # not fn itself: the answers are kept weakly by the function, and hold this
        identity += [fn.__code__, fn.__defaults__, fn.__kwdefaults__, signature, wrapped]
        if wrapped is _MISSING or signature is not _MISSING:  # where inspect.unwrap stops
            return tuple(identity)
        if not isinstance(wrapped, types.FunctionType):
            return None
        fn = wrapped
    return None


class _Signatures:
    """get_function_args_defaults with the answers of Python functions kept."""

    def __init__(self, inspect_fn):
        self.inspect_fn = inspect_fn
        self.answers: "weakref.WeakKeyDictionary[Any, Tuple[Tuple[Any, ...], List[str], List[Any]]]" = \
            weakref.WeakKeyDictionary()
        self.lock = threading.Lock()

    def __call__(self, f) -> Tuple[List[str], List[Any]]:
        fn = _function_of(f)
        if fn is None:
            return self.inspect_fn(f)
        identity = _identity(fn)
        if identity is None:
            return self.inspect_fn(f)
        kept = self.answers.get(fn)
        if kept is not None and len(kept[0]) == len(identity) and all(a is b for a, b in zip(kept[0], identity)):
            return list(kept[1]), list(kept[2])
        args, defaults = self.inspect_fn(f)
        with self.lock:
            self.answers[fn] = (identity, list(args), list(defaults))
        return args, defaults


@contextlib.contextmanager
def shared_signatures() -> Iterator[None]:
    """While inside, Beam inspects each Python function's parameters once. Nothing is kept after."""
    if not guard.applies("beam_signatures"):
        yield
        return
    from apache_beam.transforms import core

    inspect_fn = core.get_function_args_defaults
    if isinstance(inspect_fn, _Signatures):  # nested: the outer one keeps the answers
        yield
        return
    core.get_function_args_defaults = _Signatures(inspect_fn)
    try:
        yield
    finally:
        core.get_function_args_defaults = inspect_fn
