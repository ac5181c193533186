"""tf.Transform's two dependency scans in linear time, not quadratic in the number of columns.

Before its Beam pipeline, TFX's Transform asks which input columns the analyzers read
(``tft.get_analyze_input_columns``), and tf.Transform fingerprints every analyzer while it writes
each phase's graph. Both scans are quadratic in the columns (tensorflow_transform/graph_tools.py,
TFT 1.16 and 1.21 alike):

- ``get_dependent_inputs`` asks the graph analyzer about each output in turn, and each answer
  scans every input column. The outputs include the traced function's control dependencies,
  one per stateful op per output, repeated: on a 300-column table 10,026 outputs x 300 columns,
  41 s of the Transform's 126 s (inspect_preprocessing_fn.py:73 -> graph_tools.py:801-802).
- ``_retrieve_source_keys`` tests each input column against a list of the analyzer's sources
  with ``in`` (graph_tools.py:902-909), once per analyzer output.

The replacements return the same answers (tests/test_tft_graph_tools.py checks them against the
originals on a wide preprocessing graph): each distinct output is analyzed once, the sources
they depend on are gathered into one set, and the input columns are scanned once against it.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from tfxline.patches import guard


def linear_get_dependent_inputs(graph, input_tensors, output_tensors):
    """graph_tools.get_dependent_inputs: the same dict, each distinct output analyzed once."""
    from tensorflow_transform import analyzer_nodes, graph_tools, tf_utils

    outputs = output_tensors if isinstance(output_tensors, list) else list(output_tensors.values())
    sinks = graph.get_collection(analyzer_nodes.TENSOR_REPLACEMENTS)
    analyzer = graph_tools._QuietInitializableGraphAnalyzer(graph, input_tensors, [(s.tensor, False) for s in sinks])
    sources, seen = set(), set()
    for output in outputs:
        key = tf_utils.hashable_tensor_or_op(output)
        if key in seen:
            continue
        seen.add(key)
        sources.update(_dependent_sources(analyzer, output))
    return {name: tensor for name, tensor in input_tensors.items()
            if any(tf_utils.hashable_tensor_or_op(c) in sources for c in graph_tools._decompose_tensor_or_op(tensor))}


def _dependent_sources(analyzer, tensor_or_op):
    """What InitializableGraphAnalyzer.get_dependent_inputs gathers before it scans the inputs
    (graph_tools.py:739-749): the same type check, the same sources."""
    import tensorflow as tf
    from tensorflow_transform import graph_tools

    if not isinstance(tensor_or_op, (tf.Tensor, tf.SparseTensor, tf.RaggedTensor, tf.Operation)):
        raise TypeError(f"Expected Tensor, SparseTensor, RaggedTensor or Operation got {tensor_or_op} of "
                        f"type {type(tensor_or_op)}")
    found = set()
    for component in graph_tools._decompose_tensor_or_op(tensor_or_op):
        found.update(analyzer._graph_analyzer.analyze_tensor(component).dependent_sources)
    return found


def linear_retrieve_source_keys(sourced_tensors, structured_inputs):
    """graph_tools._retrieve_source_keys with a set of the sources, not a list."""
    from tensorflow_transform import graph_tools, tf_utils

    sources = graph_tools.retrieve_sources([t.op for t in sourced_tensors], ignore_control_dependencies=True)
    hashable = {tf_utils.hashable_tensor_or_op(s) for s in sources}
    return {key for key, value in structured_inputs.items()
            if any(tf_utils.hashable_tensor_or_op(v) in hashable for v in graph_tools._decompose_tensor_or_op(value))}


@contextlib.contextmanager
def linear_dependency_scans() -> Iterator[None]:
    """While inside, tf.Transform's two scans are the linear ones above."""
    if not guard.applies("tft_graph_tools"):
        yield
        return
    from tensorflow_transform import graph_tools

    originals = graph_tools.get_dependent_inputs, graph_tools._retrieve_source_keys
    graph_tools.get_dependent_inputs = linear_get_dependent_inputs
    graph_tools._retrieve_source_keys = linear_retrieve_source_keys
    try:
        yield
    finally:
        graph_tools.get_dependent_inputs, graph_tools._retrieve_source_keys = originals
