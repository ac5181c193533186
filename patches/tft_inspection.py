"""One trace of the preprocessing_fn for all of TFX's inspections of it, instead of four.

Before its Beam pipeline, TFX's Transform executor asks tf.Transform four questions about the
preprocessing_fn, and each answer traces it again as a fresh ``tf.function`` (TF2 mode): which
columns the analyzers read (``tft.get_analyze_input_columns``, twice: in ``Do`` to "fail
faster", then in ``_RunBeamImpl``), which columns the transform reads
(``tft.get_transform_input_columns``), and which analyzer cache entries exist
(``analysis_graph_builder.get_analysis_cache_entry_keys``, asked even with the cache off, for an
estimated stage count): tfx/components/transform/executor.py:1216, :1304, :1310, :967 (TFX 1.16
and 1.21 alike), which reach tensorflow_transform's inspect_preprocessing_fn.py:49, :96 and
beam/analysis_graph_builder.py:472 (TFT 1.16; :56, :113, :524 in TFT 1.21). On the taxi
features one trace is ~0.5-0.8 s.

All four go through ``impl_helper.trace_preprocessing_function`` without a ``base_temp_dir``
(the analysis itself passes one, beam/impl.py:1071, :1171 in 1.21, and is not shared). While
:func:`shared_inspection_traces` is active, such a call with the same preprocessing_fn object
and equal input specs as the previous one returns the previous trace. The one thing a consumer
changes in the traced graph is its collections: ``analysis_graph_builder.build`` clears the
analyzers' TENSOR_REPLACEMENTS collection (analysis_graph_builder.py:624, :680 in 1.21), which a later
column inspection reads; every collection is put back as traced before the trace is handed out
again. tests/test_tft_inspection.py checks every answer against an unshared trace.
"""
from __future__ import annotations

import contextlib
from typing import Any, Dict, Iterator, List, Optional, Tuple

from tfxline.patches import guard


class _Trace:
    """The newest inspection trace: what was traced, the result, and its collections as traced."""

    def __init__(self, fn, specs, use_tf_compat_v1: bool, result: Tuple[Any, Any, Any]):
        self.fn, self.specs, self.use_tf_compat_v1, self.result = fn, dict(specs), use_tf_compat_v1, result
        graph = result[0]
        self.collections: Dict[str, List[Any]] = {
            key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()}

    def matches(self, fn, specs, use_tf_compat_v1: bool) -> bool:
        return fn is self.fn and use_tf_compat_v1 == self.use_tf_compat_v1 and dict(specs) == self.specs

    def handed_out(self) -> Tuple[Any, Any, Any]:
        graph = self.result[0]
        for key in set(graph.get_all_collection_keys()) | set(self.collections):
            graph.clear_collection(key)
            for value in self.collections.get(key, ()):
                graph.add_to_collection(key, value)
        return self.result


@contextlib.contextmanager
def shared_inspection_traces() -> Iterator[None]:
    """While inside, tf.Transform's inspection traces of one preprocessing_fn are one trace.
    Only the newest trace is kept (a new preprocessing_fn or new specs replace it), and none
    after the context ends."""
    if not guard.applies("tft_inspection"):
        yield
        return
    from tensorflow_transform import impl_helper

    traced = impl_helper.trace_preprocessing_function
    newest: List[Optional[_Trace]] = [None]

    def trace_preprocessing_function(preprocessing_fn, input_specs, use_tf_compat_v1, base_temp_dir=None):
        if base_temp_dir is not None:  # the analysis' own trace (beam/impl.py): never shared
            return traced(preprocessing_fn, input_specs, use_tf_compat_v1, base_temp_dir)
        last = newest[0]
        if last is not None and last.matches(preprocessing_fn, input_specs, use_tf_compat_v1):
            return last.handed_out()
        result = traced(preprocessing_fn, input_specs, use_tf_compat_v1)
        newest[0] = _Trace(preprocessing_fn, input_specs, use_tf_compat_v1, result)
        return result

    impl_helper.trace_preprocessing_function = trace_preprocessing_function
    try:
        yield
    finally:
        impl_helper.trace_preprocessing_function = traced
        newest[0] = None
