"""Beam's views of a pipeline's options, made once per options object and class instead of at
every use.

``PipelineOptions.view_as(cls)`` (apache_beam/options/pipeline_options.py:441 in Beam 2.59, :630
in 2.77) builds a new ``cls`` each time, and each one builds an argparse parser of all that
class's options and parses the flags again (:223-232 in 2.59). Beam asks for a view twice per
transform it applies (``Pipeline.apply`` and ``_infer_result_type``, pipeline.py:648, :808 in
2.59), so a taxi run made 3,257 views: 1.3 s of a 36 s run (bench/e2e.py; docs/performance.md).

A view holds nothing of its own: it reads and writes the options' shared ``_all_options`` dict,
and its ``_visible_options`` come from parsing ``_flags``, which views share
(pipeline_options.py:215-249, :492-510 in 2.59). While :func:`shared_option_views` is active, the
view of an options object as a class is kept (weakly, with the options object) and handed out
again while the options still have the same ``_all_options`` dict and equal ``_flags``. What
``view_as`` also does to the options, putting the class's defaults into ``_all_options`` where
they are missing, is still done at each call. Options parsed from ``sys.argv`` (no flags) get a
new view each time, as before.
"""
from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, Dict, Iterator, Tuple

from tfxline.patches import guard


def _fill_defaults(options, view) -> None:
    """What ``view_as`` does to the options besides making the view (pipeline_options.py:463-477 in 2.59)."""
    for name in view._visible_option_list():
        if name not in options._all_options:
            options._all_options[name] = getattr(view._visible_options, name)


@contextlib.contextmanager
def shared_option_views() -> Iterator[None]:
    """While inside, ``PipelineOptions.view_as`` makes each options object's view of a class once.
    Nothing is kept after."""
    if not guard.applies("beam_option_views"):
        yield
        return
    from apache_beam.options.pipeline_options import PipelineOptions

    make_view = PipelineOptions.view_as
    if getattr(make_view, "shares_views", False):  # nested: the outer one keeps the views
        yield
        return
    kept: "weakref.WeakKeyDictionary[Any, Dict[type, Tuple[Any, Tuple[str, ...]]]]" = weakref.WeakKeyDictionary()
    lock = threading.Lock()

    def view_as(options, cls):
        flags = options.__dict__.get("_flags")
        if flags is None:  # parsed from sys.argv, which may have changed since
            return make_view(options, cls)
        view, flags_then = kept.get(options, {}).get(cls, (None, ()))
        if view is not None and view._all_options is options._all_options and tuple(flags) == flags_then:
            _fill_defaults(options, view)
            return view
        view = make_view(options, cls)
        with lock:
            kept.setdefault(options, {})[cls] = (view, tuple(flags))
        return view

    view_as.shares_views = True
    view_as.__doc__ = make_view.__doc__
    PipelineOptions.view_as = view_as  # pyright: ignore[reportAttributeAccessIssue] - the patch itself
    try:
        yield
    finally:
        PipelineOptions.view_as = make_view
