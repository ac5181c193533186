"""tf.Transform's column-dependency scans in linear time (patches/tft_graph_tools.py): every answer
the same as tf.Transform's own on a wide preprocessing graph (text, code and number columns,
vocabularies and quantiles: the control dependencies that made the scan quadratic), the same
for a saved Transform output loaded back (each output's sources, what each set of feeds can
fetch), and the originals back after the context."""
import functools
import subprocess
import sys

import tensorflow as tf
import tensorflow_transform as tft
from tensorflow_transform import graph_tools, impl_helper

from tfxline.patches import tft_graph_tools
from tfxline.transforms import preprocessing
from tfxline.transforms.features import FeatureSpec
from tests.conftest import ROOT

COLUMNS = 24


def wide():
    """A preprocessing_fn over COLUMNS columns as `tfxline init` writes them, and its input specs."""
    inputs, specs = [], {"y": tf.io.VarLenFeature(tf.int64)}
    for i in range(COLUMNS):
        kind = ("text", "code", "num")[i % 3]
        name = f"{kind}_{i}"
        specs[name] = tf.io.VarLenFeature({"text": tf.string, "code": tf.int64, "num": tf.float32}[kind])
        if kind == "text":
            inputs.append({"name": name, "transform": "vocabulary", "top_k": 20})
        elif kind == "code":
            inputs.append({"name": name, "transform": "identity", "num_buckets": 12, "default": 11})
        else:
            inputs += [{"name": name, "transform": "log_zscore"},
                       {"name": f"{name}_bucket", "column": name, "transform": "bucketize", "num_buckets": 8}]
    spec = FeatureSpec.from_dict({"label": {"name": "y", "transform": "binary", "positive": 1}, "inputs": inputs})
    fn = functools.partial(preprocessing.preprocessing_fn, custom_config={"features": spec.to_dict()})
    return fn, impl_helper.get_type_specs_from_feature_specs(specs)


def answers(fn, specs):
    """The analyzers' and the transform's columns (TFX's questions), and every analyzer's
    fingerprint (what tf.Transform writes each phase with)."""
    graph, structured_inputs, _ = impl_helper.trace_preprocessing_function(fn, specs, use_tf_compat_v1=False)
    fingerprints = graph_tools.get_analyzers_fingerprint(graph, structured_inputs)
    return (sorted(tft.get_analyze_input_columns(fn, specs)), sorted(tft.get_transform_input_columns(fn, specs)),
            {name: sorted(f.source_keys) for name, f in fingerprints.items()})


def check():
    """The assertions, in a process of their own: traces of other preprocessing functions in the
    test process meet these in TensorFlow's shared resources (a vocabulary's hash table of the same
    name and other key types: "Conflicting key/value dtypes"), as tests/test_tft_inspection.py says."""
    fn, specs = wide()
    originals = graph_tools.get_dependent_inputs, graph_tools._retrieve_source_keys
    theirs = answers(fn, specs)
    with tft_graph_tools.linear_dependency_scans():
        assert graph_tools.get_dependent_inputs is tft_graph_tools.linear_get_dependent_inputs
        ours = answers(fn, specs)
    assert (graph_tools.get_dependent_inputs, graph_tools._retrieve_source_keys) == originals   # put back
    assert ours == theirs
    analyzed, transformed, fingerprints = ours
    assert len(analyzed) == 2 * COLUMNS // 3   # text and number columns feed analyzers; codes none
    assert len(transformed) == COLUMNS + 1 and len(fingerprints) >= 5
    check_loaded(fn, specs)


def check_loaded(fn, specs):
    """A Transform output of ``fn`` loaded as TFX's components load it, with tft's scans and ours."""
    import tempfile

    import tensorflow_transform.beam as tft_beam
    from tensorflow_transform.saved import saved_transform_io_v2 as io
    from tensorflow_transform.tf_metadata import dataset_metadata, schema_utils

    feature_spec = {name: tf.io.VarLenFeature(spec.dtype) for name, spec in specs.items()}
    rows = [{name: [{tf.string: b"ab"[i % 2:i % 2 + 1], tf.int64: i % 5, tf.float32: i * 0.5}[spec.dtype]]
             for name, spec in feature_spec.items()} for i in range(40)]
    out = tempfile.mkdtemp()
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(feature_spec))
    with tft_beam.Context(temp_dir=tempfile.mkdtemp()):
        transform_fn = (rows, metadata) | tft_beam.AnalyzeDataset(fn)
        _ = transform_fn | tft_beam.WriteTransformFn(out)

    def scans():
        loader = io.SavedModelLoader(f"{out}/transform_fn")
        inputs = list(loader._func_graph.inputs)
        sources = {name: sorted(t.name for t in found) for name, found in loader._output_to_inputs_map.items()}
        return sources, [sorted(loader._get_fetches_keys(inputs[:n])) for n in (0, len(inputs) // 3, len(inputs))]

    theirs = scans()
    with tft_graph_tools.linear_dependency_scans():
        ours = scans()
    assert ours == theirs
    assert len(theirs[0]) == len(specs) + COLUMNS // 3   # every column, a bucket of each number, the label
    assert theirs[1][0] == [] and len(theirs[1][2]) == len(theirs[0])   # nothing fed, nothing; all fed, all


def test_the_linear_scans_answer_as_tft_does():
    result = subprocess.run([sys.executable, "-c", "from tests.test_tft_graph_tools import check; check()"],
                            capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


def test_a_bad_output_is_refused_as_tft_refuses_it():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
        for scan in (graph_tools.get_dependent_inputs, tft_graph_tools.linear_get_dependent_inputs):
            try:
                scan(graph, {"x": x}, ["not a tensor"])
            except TypeError as e:
                assert "Expected Tensor" in str(e)
            else:
                raise AssertionError(f"{scan} accepted a string output")
