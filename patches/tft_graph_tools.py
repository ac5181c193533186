"""tf.Transform's dependency scans in linear time, not quadratic in the number of columns.

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

Loading a Transform output (``tft.TransformFeaturesLayer``: the Trainer twice, the Evaluator, the
Pusher's checks) repeats the pattern (tensorflow_transform/saved/saved_transform_io_v2.py):

- ``_get_output_to_inputs_map`` walks the graph back from each output to its placeholders
  (saved_transform_io_v2.py:104-116), and ``_get_fetches`` sets each output's sources against
  the feeds, which it wraps again for every output (:196-206). Where the preprocessing builds
  its features as blocks (transforms/columns.py), every output of a block depends on the whole
  block: 1,333 walks of a 1,000-column graph were 28 % of the Trainer's 166 s.

The replacements return the same answers (tests/test_tft_graph_tools.py checks them against the
originals on a wide preprocessing graph): each distinct output is analyzed once, the sources
they depend on are gathered into one set, and the input columns are scanned once against it;
the saved graph is walked once for all outputs, each op's sources kept, and each distinct set of
sources set against the feeds once.
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


def linear_output_to_inputs_map(output_signature):
    """saved_transform_io_v2._get_output_to_inputs_map: the placeholders each output depends on
    (control dependencies ignored), from one walk of the graph that keeps each op's sources.
    Outputs with the same sources share one set (its readers only read it)."""
    from tensorflow.python.util import object_identity
    from tensorflow_transform.saved import saved_transform_io_v2 as io

    tensors, memo, shared = {}, {}, {}

    def sources_of(root) -> frozenset:
        stack = [root]
        while stack:
            op = stack[-1]
            if id(op) in memo:
                stack.pop()
                continue
            pending = [t.op for t in op.inputs if id(t.op) not in memo]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            parts = {id(memo[id(t.op)]): memo[id(t.op)] for t in op.inputs}
            if op.type == "Placeholder":
                tensors.update((id(t), t) for t in op.outputs)
                parts[0] = frozenset(id(t) for t in op.outputs)
            memo[id(op)] = (next(iter(parts.values())) if len(parts) == 1
                            else frozenset().union(*parts.values()))
        return memo[id(root)]

    result = {}
    for name, output in output_signature.items():
        found = frozenset().union(*(sources_of(io._as_operation(c)) for c in io._get_component_tensors(output)))
        if found not in shared:
            shared[found] = object_identity.ObjectIdentitySet(tensors[i] for i in found)
        result[name] = shared[found]
    return result


def linear_get_fetches(self, feeds):
    """SavedModelLoader._get_fetches: the outputs whose sources are all fed or captured, the feeds
    wrapped once and each distinct set of sources tested once."""
    from tensorflow.python.util import object_identity

    fed = object_identity.ObjectIdentitySet(feeds)
    captured = object_identity.ObjectIdentitySet(self._func_graph.internal_captures)
    answers = {}
    result = {}
    for name, output in self._structured_outputs.items():
        sources = self._output_to_inputs_map[name]
        if id(sources) not in answers:
            answers[id(sources)] = all(s in fed or s in captured for s in sources)
        if answers[id(sources)]:
            result[name] = output
    return result


@contextlib.contextmanager
def linear_dependency_scans() -> Iterator[None]:
    """While inside, tf.Transform's scans are the linear ones above."""
    if not guard.applies("tft_graph_tools"):
        yield
        return
    from tensorflow_transform import graph_tools
    from tensorflow_transform.saved import saved_transform_io_v2 as io

    originals = (graph_tools.get_dependent_inputs, graph_tools._retrieve_source_keys,
                 io._get_output_to_inputs_map, io.SavedModelLoader._get_fetches)
    graph_tools.get_dependent_inputs = linear_get_dependent_inputs
    graph_tools._retrieve_source_keys = linear_retrieve_source_keys
    io._get_output_to_inputs_map = linear_output_to_inputs_map
    io.SavedModelLoader._get_fetches = linear_get_fetches
    try:
        yield
    finally:
        (graph_tools.get_dependent_inputs, graph_tools._retrieve_source_keys,
         io._get_output_to_inputs_map, io.SavedModelLoader._get_fetches) = originals
