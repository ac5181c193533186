"""The run-time patches of third-party libraries, one row each: the one source of truth for what
they patch, why, what they save, which upstream change they stand in for, and the library
versions they were tested on (the two locked stacks: requirements/tfx-1.16-py310.lock.txt and
requirements/tfx-1.21-py313.lock.txt; tests/test_runtime_patches.py checks the versions against
the locks, and docs/runtime-patches.md's table against :func:`markdown_table`).

A patch applies only where the installed distribution's version is one it was tested on
(patches/guard.py); on any other it stands down with one log line. To add a version: run the
patch's tests on it (the ``tests`` column) and add the version to ``tested`` here.
"""
from __future__ import annotations

import dataclasses
from typing import Dict, List, Tuple

BEAM = ("2.59.0", "2.77.0")
TENSORFLOW = ("2.16.2", "2.21.0")
BEAM_PR_9925 = "[apache/beam#9925](https://github.com/apache/beam/pull/9925) (closed as stale)"


@dataclasses.dataclass(frozen=True)
class Patch:
    name: str           # patches/<name>.py
    target: str         # what is replaced, dotted
    distribution: str   # the PyPI distribution whose version the guard reads
    tested: Tuple[str, ...]
    why: str
    saving: str
    upstream: str
    tests: str


PATCHES: Tuple[Patch, ...] = (
    Patch("beam_signatures", "apache_beam.transforms.core.get_function_args_defaults", "apache-beam", BEAM,
          "Beam inspects every DoFn method's signature each time a DoFn is built, converted or set up",
          "3.8 s of a 41 s taxi run (186,463 `inspect.signature` calls; the DoFn inspections 1.15 s after)",
          BEAM_PR_9925 + "; docs/upstream/beam-memoise.md", "tests/test_beam_overheads.py"),
    Patch("beam_option_views", "apache_beam.options.pipeline_options.PipelineOptions.view_as", "apache-beam", BEAM,
          "Beam builds and parses a new argparse parser for each options view, twice per transform applied",
          "1.3 s of a 36 s taxi run (3,257 views; 68 parses after)",
          BEAM_PR_9925 + "; docs/upstream/beam-memoise.md", "tests/test_beam_overheads.py"),
    Patch("tfx_packaging", "tfx.utils.dependency_utils.make_beam_dependency_flags", "tfx", ("1.16.0", "1.21.0"),
          "TFX builds an sdist of itself for Beam workers, in a temp folder it never removes, even for runners "
          "that install nothing (DirectRunner, FnApiRunner)",
          "~3.4 s and ~49 MB of /tmp per Beam component, four per taxi run",
          "none found (searched tensorflow/tfx issues for make_beam_dependency_flags and the ephemeral sdist)",
          "tests/test_beam_packaging.py"),
    Patch("tft_inspection", "tensorflow_transform.impl_helper.trace_preprocessing_function", "tensorflow-transform",
          ("1.16.0", "1.21.0"),
          "TFX's Transform executor traces the preprocessing_fn anew for each of its four inspections of it",
          "3 of 5 traces a Transform (~0.5-0.8 s each on the taxi features)",
          "none; nearest: [tensorflow/transform#276](https://github.com/tensorflow/transform/issues/276) "
          "(preprocessing_fn executed multiple times, closed without a change)", "tests/test_tft_inspection.py"),
    Patch("tft_graph_tools", "tensorflow_transform.graph_tools.get_dependent_inputs, _retrieve_source_keys; "
          "saved.saved_transform_io_v2._get_output_to_inputs_map, SavedModelLoader._get_fetches",
          "tensorflow-transform", ("1.16.0", "1.21.0"),
          "tf.Transform's column-dependency scans are quadratic in the columns: each output (control dependencies "
          "repeated per output) scans every input column, and each column is looked up in a list of sources; "
          "loading a Transform output walks its graph once per output and wraps the feeds again for each",
          "41 s of a 126 s Transform on 300 columns x 5,000 rows (10,026 outputs x 300 columns); 28 % of a "
          "166 s Trainer on 1,000 columns (1,333 walks of the graph per load); see docs/scale.md",
          "none found (nearest: [tensorflow/transform#57](https://github.com/tensorflow/transform/issues/57), "
          "800+ features, closed with a workaround); docs/upstream/tft-graph-tools.md",
          "tests/test_tft_graph_tools.py"),
    Patch("autograph", "tensorflow.python.autograph.core.config.CONVERSION_RULES", "tensorflow", TENSORFLOW,
          "AutoGraph converts tf_keras' and tf.Transform's own graph code (it skips only keras and tensorflow)",
          "55 s of a 58 s first epoch (tf_keras); 2.9 s of a taxi run (tf.Transform, 42 conversions)",
          "none found (searched tensorflow/tensorflow issues for AutoGraph DoNotConvert of libraries)",
          "tests/test_runtime_patches.py, tests/test_model.py"),
    Patch("interactive_beam", "apache_beam.runners.interactive.interactive_environment.is_in_notebook",
          "apache-beam", BEAM,
          "in a notebook, Beam's Interactive Beam environment loads jQuery and DataTables from two CDNs into "
          "the cell and logs into the cells, though TFX uses none of it",
          "no CDN script or Beam log lines in the notebook's cells (no time measured)",
          "none found (searched apache/beam issues for Interactive Beam's notebook scripts)",
          "tests/test_runtime_patches.py"),
    Patch("tf_deprecation", "tensorflow.python.util.deprecation._PRINT_DEPRECATION_WARNINGS", "tensorflow",
          TENSORFLOW,
          "TFDV's and TFMA's calls of deprecated TensorFlow functions print notices meant for their developers",
          "no deprecation notices on the console (no time measured)",
          "[tensorflow/tensorflow#27023](https://github.com/tensorflow/tensorflow/issues/27023) (closed: no "
          "public switch; the attribute is the workaround given in #35550)",
          "tests/test_quiet.py, tests/test_runtime_patches.py"),
    Patch("tf_custom_gradients", "tensorflow.python.framework.ops.gradient_registry (its CustomGradient-* entries)",
          "tensorflow", TENSORFLOW,
          "a tf.custom_gradient traced in a graph registers a gradient under a new name and never removes it, "
          "keeping the traced graph (the accumulation loop's functions) until TensorFlow is torn down at exit, "
          "where AtomicFunction.__del__ fails on TF 2.16",
          "no 'Exception ignored in AtomicFunction.__del__' tracebacks at exit; 69 functions alive at the exit of "
          "128 in-process TF tests before, 0 after",
          "none for the registry; the traceback: [tensorflow/datasets#5355]"
          "(https://github.com/tensorflow/datasets/issues/5355) (TF 2.17 returns early in __del__, which hides "
          "it and keeps the graphs)", "tests/test_clean_end.py"),
    Patch("beam_shared", "apache_beam.utils.shared._shared_map._keepalive", "apache-beam", BEAM,
          "Beam's Shared keeps the last object acquired (TFMA's loaded model, ~170 functions) for the life of "
          "the process, past a notebook's or the test process's run",
          "the Evaluator's model freed after a local run (in-process runs: notebooks, tests)",
          "none found (searched apache/beam issues for Shared keepalive)", "tests/test_clean_end.py"),
)
BY_NAME: Dict[str, Patch] = {p.name: p for p in PATCHES}

COLUMNS = ("patch", "patches", "tested on", "why", "measured saving", "stands in for upstream", "tests")


def markdown_table() -> str:
    """The table of docs/runtime-patches.md."""
    rows: List[str] = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for p in PATCHES:
        tested = ", ".join(f"{p.distribution} {v}" for v in p.tested)
        cells = (f"`patches/{p.name}.py`", f"`{p.target}`", tested, p.why, p.saving, p.upstream, p.tests)
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"
