"""The run-time patches' one guard (patches/guard.py): TFXLINE_RUNTIME_PATCHES=off leaves every
library as it is; a library version no patch was tested on makes that patch stand down with one
log line; the tested versions are the locks'; and the patches without a test file of their own
still do what they are for. (Beam's two, TFX's and TFT's: tests/test_beam_overheads.py,
tests/test_beam_packaging.py, tests/test_tft_inspection.py, tests/test_tft_graph_tools.py.)"""
import logging
import os
import re

import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.interactive import interactive_environment as ie
from apache_beam.transforms import core
from apache_beam.utils import interactive_utils, shared
from tensorflow.python.autograph.core import config as autograph_config
from tensorflow.python.framework import ops
from tensorflow.python.util import deprecation
from tensorflow_transform import graph_tools, impl_helper
from tfx.utils import dependency_utils

from tfxline.patches import (autograph, beam_shared, guard, interactive_beam, registry, tf_custom_gradients,
                             tf_deprecation)
from tfxline.patches.executor import executor_patches
from tests.conftest import ROOT

LOCKS = ("requirements/tfx-1.16-py310.lock.txt", "requirements/tfx-1.21-py313.lock.txt")
CUSTOM_GRADIENT = tf_custom_gradients.CUSTOM_GRADIENT_PREFIX + "tfxline-test"  # as tf.custom_gradient names them


def library_attributes():
    """Every attribute a patch replaces, as it is now."""
    return {"beam_signatures": core.get_function_args_defaults, "beam_option_views": PipelineOptions.view_as,
            "tfx_packaging": dependency_utils.make_beam_dependency_flags,
            "tft_inspection": impl_helper.trace_preprocessing_function,
            "tft_graph_tools": graph_tools.get_dependent_inputs,   # with _retrieve_source_keys
            "autograph": autograph_config.CONVERSION_RULES, "interactive_beam": ie.is_in_notebook,
            "tf_deprecation": deprecation._PRINT_DEPRECATION_WARNINGS,
            "tf_custom_gradients": ops.gradient_registry._registry.get(CUSTOM_GRADIENT),
            "beam_shared": shared._shared_map._keepalive}


def apply_everything():
    """Each patch as its callers apply it, with what each replaced seen from inside."""
    seen = {}
    with executor_patches(say=lambda line: seen.setdefault("said", line)):
        seen.update(library_attributes())
    autograph.skip_autograph_for_libraries()
    tf_deprecation.quiet_deprecation_notices()
    interactive_beam.interactive_beam_off()
    tf_custom_gradients.release()
    beam_shared.forget_kept_alive()
    return seen


@pytest.fixture
def in_ipython(monkeypatch):
    """As in a Jupyter kernel, with Beam's environment made by a stand-in that records whether
    Beam thought it was in a notebook."""
    asked = []
    monkeypatch.setattr(interactive_utils, "is_in_ipython", lambda: True)
    monkeypatch.setattr(ie, "current_env", lambda: asked.append(ie.is_in_notebook()))
    monkeypatch.setattr(ie, "is_in_notebook", lambda: True)
    monkeypatch.setattr(deprecation, "_PRINT_DEPRECATION_WARNINGS", True)
    monkeypatch.setattr(autograph_config, "CONVERSION_RULES", autograph_config.CONVERSION_RULES)
    monkeypatch.setattr(guard, "_told", set())
    monkeypatch.setattr(shared._shared_map, "_keepalive", ("key", object()))  # what a Shared acquisition leaves
    if CUSTOM_GRADIENT not in ops.gradient_registry._registry:  # a graph's custom gradient, as a trace registers it
        ops.RegisterGradient(CUSTOM_GRADIENT)(lambda op, grad: grad)
    yield asked
    ops.gradient_registry._registry.pop(CUSTOM_GRADIENT, None)


def test_off_leaves_every_library_attribute_untouched(monkeypatch, in_ipython):
    monkeypatch.setenv(guard.ENV_VAR, "off")
    before = library_attributes()
    seen = apply_everything()
    assert seen.pop("said") == "runtime patches: off (TFXLINE_RUNTIME_PATCHES=off)"
    assert all(seen[k] is before[k] for k in before), [k for k in before if seen[k] is not before[k]]
    after = library_attributes()
    assert all(after[k] is before[k] for k in before) and in_ipython == []


def test_on_by_default_on_a_tested_stack(monkeypatch):
    monkeypatch.delenv(guard.ENV_VAR, raising=False)
    assert guard.enabled() and guard.status() == "runtime patches: on"
    assert all(guard.tested_here(p.name) for p in registry.PATCHES), [
        (p.distribution, guard.installed_version(p.distribution)) for p in registry.PATCHES]


@pytest.mark.parametrize("name", sorted(registry.BY_NAME))
def test_an_untested_version_stands_the_patch_down_with_one_line(name, monkeypatch, in_ipython, caplog):
    monkeypatch.delenv(guard.ENV_VAR, raising=False)
    patch = registry.BY_NAME[name]
    real = guard.installed_version
    monkeypatch.setattr(guard, "installed_version", lambda d: "99.0.0" if d == patch.distribution else real(d))
    before = library_attributes()
    with caplog.at_level(logging.INFO, logger="tfxline.patches"):
        seen = apply_everything()
        apply_everything()  # asked again: still one line
    assert seen[name] is before[name] and library_attributes()[name] is before[name]
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    # one line for each patch of that library (Beam has three, TensorFlow two), however often asked
    assert sorted(line.split()[2] for line in lines) == sorted(
        p.name for p in registry.PATCHES if p.distribution == patch.distribution)
    assert [line for line in lines if line.split()[2] == name] == [f"runtime patch {name} stood down: {patch.distribution} is 99.0.0, tested on "
                     f"{', '.join(patch.tested)} only; {patch.target} is left as it is (to add this version, "
                     f"run {patch.tests} on it and add it to patches/registry.py)"]
    assert seen["said"].startswith("runtime patches: on except ") and name in seen["said"]


def test_the_tested_versions_are_the_locks():
    pins = {}
    for lock in LOCKS:
        for line in open(os.path.join(ROOT, lock)):
            if m := re.match(r"^([A-Za-z0-9_.-]+)==([^\s;\\]+)", line):
                pins.setdefault(m.group(1).lower().replace("_", "-"), set()).add(m.group(2))
    for p in registry.PATCHES:
        assert set(p.tested) == pins[p.distribution], (p.name, pins[p.distribution])


def test_the_docs_table_is_the_registry():
    text = open(os.path.join(ROOT, "docs", "runtime-patches.md")).read()
    assert registry.markdown_table() in text, "docs/runtime-patches.md: paste patches.registry.markdown_table()"


def test_autograph_skips_the_libraries_inside_and_puts_autographs_rules_back(monkeypatch):
    monkeypatch.delenv(guard.ENV_VAR, raising=False)
    rules = autograph_config.CONVERSION_RULES
    monkeypatch.setattr(autograph_config, "CONVERSION_RULES",
                        tuple(r for r in rules if getattr(r, "_prefix", None) not in autograph.AUTOGRAPH_SKIPPED))
    before = autograph_config.CONVERSION_RULES
    with autograph.libraries_not_converted():
        inside = autograph_config.CONVERSION_RULES
        with autograph.libraries_not_converted():  # nested (the Trainer's run_fn): the same rules
            assert autograph_config.CONVERSION_RULES is inside
        assert autograph_config.CONVERSION_RULES is inside
    assert [r._prefix for r in inside[:2]] == list(autograph.AUTOGRAPH_SKIPPED) and inside[2:] == before
    assert autograph_config.CONVERSION_RULES is before


def test_interactive_beam_is_made_as_outside_a_notebook(monkeypatch, in_ipython):
    monkeypatch.delenv(guard.ENV_VAR, raising=False)
    notebook = ie.is_in_notebook
    interactive_beam.interactive_beam_off()
    assert in_ipython == [False] and ie.is_in_notebook is notebook


def test_tensorflows_deprecation_notices_are_off(monkeypatch, in_ipython):
    monkeypatch.delenv(guard.ENV_VAR, raising=False)
    tf_deprecation.quiet_deprecation_notices()
    assert deprecation._PRINT_DEPRECATION_WARNINGS is False
