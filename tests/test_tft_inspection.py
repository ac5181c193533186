"""One trace of the preprocessing_fn for TFX's inspections of it (patches/tft_inspection.py):
every answer the same as tf.Transform's own, unshared, for each packaged config."""
import functools
import subprocess
import sys

import pytest
import tensorflow_transform as tft
from tensorflow_transform import impl_helper
from tensorflow_transform.beam import analysis_graph_builder
from tensorflow_transform.beam.analyzer_cache import DatasetKey
from tensorflow_transform.tf_metadata import schema_utils

from tfxline.patches import tft_inspection
from tfxline.pipeline.config.load import load_config
from tfxline.pipeline.data import source as data_source
from tests.conftest import ROOT
from tfxline.transforms import preprocessing


def inputs_of(config):
    """The preprocessing_fn as TFX's Transform calls it (custom_config bound) and the raw
    examples' type specs."""
    cfg = load_config(config)
    schema = data_source.load_schema(data_source.schema_path(cfg.data.schema))
    feature_spec = schema_utils.schema_as_feature_spec(schema).feature_spec
    fn = functools.partial(preprocessing.preprocessing_fn, custom_config={"features": cfg.features.to_dict()})
    return fn, impl_helper.get_type_specs_from_feature_specs(feature_spec)


def inspections(fn, specs):
    """TFX's Transform executor's questions, in its order (executor.py:1216, :1304, :1310,
    :967), then the analyzers' columns once more, after the cache-key inspection (it runs
    analysis_graph_builder.build, which clears a collection of the traced graph)."""
    keys = [DatasetKey("train")]
    return [
        sorted(tft.get_analyze_input_columns(fn, specs)),
        sorted(tft.get_analyze_input_columns(fn, specs)),
        sorted(tft.get_transform_input_columns(fn, specs)),
        sorted(analysis_graph_builder.get_analysis_cache_entry_keys(fn, specs, keys, False)),
        sorted(tft.get_analyze_input_columns(fn, specs)),
    ]


def check(config):
    """The assertions, in a process of their own per config: traces of two configs' preprocessing
    functions in one process meet in TensorFlow's shared resources (a vocabulary's hash table of
    the same name, other key types: "Conflicting key/value dtypes"), with or without sharing."""
    fn, specs = inputs_of(config)
    traces = []
    real = impl_helper._trace_preprocessing_fn_v2
    impl_helper._trace_preprocessing_fn_v2 = lambda *a: traces.append(1) or real(*a)

    alone = inspections(fn, specs)
    assert len(traces) == 5
    assert alone[0] and alone[2] and alone[3], alone  # analyzers, inputs and cache keys all found
    with tft_inspection.shared_inspection_traces():
        shared = inspections(fn, specs)
        assert len(traces) == 6  # one trace for all five answers
        # another preprocessing_fn (or other specs) is traced anew, never answered from the last
        other = functools.partial(fn.func, **fn.keywords)
        assert sorted(tft.get_transform_input_columns(other, specs)) == alone[2]
        assert len(traces) == 7
    assert shared == alone
    assert impl_helper.trace_preprocessing_function.__module__ == impl_helper.__name__  # put back
    tft.get_analyze_input_columns(fn, specs)
    assert len(traces) == 8  # nothing kept after the context


@pytest.mark.parametrize("config", ["taxi", "penguin", "penguin_mass"])
def test_shared_traces_answer_as_tft_does_in_one_trace(config):
    result = subprocess.run([sys.executable, "-c", f"from tests.test_tft_inspection import check; check({config!r})"],
                            capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
