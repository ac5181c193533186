"""The entry point imports TensorFlow without its C++ import-time noise, and lets anything
else it writes to stderr through."""
import os
import subprocess
import sys

import pytest

from tfxline.cli.quiet import TF_IMPORT_NOISE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIET_IMPORT = "from tfxline.cli.quiet import import_tensorflow_quietly; import_tensorflow_quietly(); print('ok')"


def run(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [env.pop("path", ""), ROOT])),
                                   **env))


def test_noise_is_dropped_and_other_lines_kept(tmp_path):
    # A stand-in TensorFlow whose import and first device lookup write, from the file
    # descriptor as C++ does, known noise lines and one line that must reach the user.
    fake = tmp_path / "tensorflow"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "import os, types\n"
        "os.write(2, b'E0000 cuda_fft.cc:479] Unable to register cuFFT factory: Attempting to register\\n')\n"
        "os.write(2, b'E0000 something real went wrong\\n')\n"
        "def list_physical_devices():  # TF 2.21 on a machine without a CUDA driver, at the first lookup\n"
        "    os.write(2, b'E0000 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to "
        "cuInit: UNKNOWN ERROR (303)\\n')\n"
        "config = types.SimpleNamespace(list_physical_devices=list_physical_devices)\n")
    result = run(QUIET_IMPORT, path=str(tmp_path))
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
    assert "something real went wrong" in result.stderr
    assert "Unable to register" not in result.stderr and "cuInit" not in result.stderr


def test_the_real_import_prints_no_known_noise():
    quiet = run(QUIET_IMPORT, TF_CPP_MIN_LOG_LEVEL="2")
    assert quiet.returncode == 0, quiet.stderr
    noise = [line for line in quiet.stderr.splitlines() if TF_IMPORT_NOISE.search(line)]
    assert not noise, noise



def serving_model(path, task):
    """A SavedModel with the serving signature of a model of the task: a binary one answering
    0.25; a multi-class one whose softmax takes logits of unknown rank (as grappler's cost model
    sees a model's softmax: it prints 'Error in PredictCost()' on stderr when it optimizes the graph)."""
    import tensorflow as tf

    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        def serve(self, examples):
            if task == "binary":
                return {"probabilities": tf.fill(tf.shape(examples), 0.25)}
            logits = tf.io.parse_tensor(tf.io.serialize_tensor(tf.ones([tf.shape(examples)[0], 3])), tf.float32)
            return {"probabilities": tf.nn.softmax(logits)}

    model = Model()
    tf.saved_model.save(model, str(path), signatures={"serving_default": model.serve})
    return str(path)


@pytest.mark.parametrize("config, task, said", [
    ("taxi", "binary", "mean probability 0.2500, 0.0% above 0.5"),
    ("penguin", "multiclass", "predicted classes: 0 5"),
])
def test_predict_prints_only_its_own_lines(tmp_path, config, task, said):
    """`tfxline predict` as a user runs it (a fresh process, no TF_CPP_MIN_LOG_LEVEL set): its one
    line on stdout and nothing on stderr. TensorFlow's import-time lines (cuFFT/cuDNN/cuBLAS
    factories registered twice, ...) once came first, when the command's module imported
    TensorFlow before the quiet import; a multi-class model added grappler's PredictCost line."""
    model = serving_model(tmp_path / "model", task)
    rows = tmp_path / "rows.csv"
    if config == "taxi":
        from tests.conftest import write_taxi_slice

        write_taxi_slice(rows, limit=5)
    else:
        rows.write_text("culmen_length_mm,culmen_depth_mm,flipper_length_mm,body_mass_g\n"
                        + "39.1,18.7,181,3750\n" * 5)
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run([sys.executable, "-m", "tfxline.cli.main", "predict", "--config", config, "--model-dir", model,
                           "--input", str(rows), "--predictions", str(tmp_path / "out.csv")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines() == [f"5 predictions from {model} -> {tmp_path / 'out.csv'}; {said}"]


def test_a_runs_native_noise_goes_to_its_log_and_the_rest_to_the_console(tmp_path):
    """While a pipeline runs (local/process.logging_to), what TensorFlow's C++ side writes
    to stderr past any log level, here grappler's real PredictCost line for a softmax, goes to the
    run's log; any other stderr line still reaches the console, as it is written."""
    code = f"""
import os, sys, io
from tfxline.cli.quiet import import_tensorflow_quietly, quiet_libraries
quiet_libraries()
import_tensorflow_quietly()
import tensorflow as tf
from tfxline.local.process import logging_to

@tf.function
def softmax(serialized):
    return tf.nn.softmax(tf.io.parse_tensor(serialized, tf.float32))

with logging_to({str(tmp_path / "run.log")!r}, io.StringIO()):
    softmax(tf.io.serialize_tensor(tf.ones([2, 3])))
    os.write(2, b"E0000 something real went wrong\\n")
    print("to the console", file=sys.stderr, flush=True)
print("ok")
"""
    done = run(code)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert done.stderr.splitlines() == ["E0000 something real went wrong", "to the console"]
    log = (tmp_path / "run.log").read_text()
    # TF 2.16's grappler writes the line for this softmax; TF 2.21's (the TFX 1.21 stack) writes
    # none: where the same graph outside the block shows it, the block put it in the log
    outside = code.replace(f"with logging_to({str(tmp_path / 'run.log')!r}, io.StringIO()):", "if True:")
    assert outside != code
    control = run(outside)
    assert control.returncode == 0, control.stderr
    if "Error in PredictCost()" in control.stderr:
        assert "Error in PredictCost() for the op: op: \"Softmax\"" in log
    else:
        assert "PredictCost" not in log


def test_a_notebooks_libraries_log_to_a_file_also_after_a_run(tmp_path):
    """cli/notebook.start_notebook in a session TensorFlow takes for an interactive one (sys.ps1
    set, as in a Jupyter kernel: TensorFlow then logs INFO lines to stdout): TensorFlow's, absl's
    and Python's warnings go to <work>/logs/notebook.log, not into the cells (stdout, stderr), and
    still do after a run (local/process.logging_to gives back absl's verbosity and the warnings
    capture it found)."""
    code = f"""
import io, sys, warnings
sys.ps1 = ">>> "
from tfxline.cli.notebook import start_notebook
path = start_notebook({str(tmp_path)!r})
import tensorflow as tf
from absl import logging as absl_logging
from tfxline.local.process import logging_to
tf.get_logger().info("tensorflow info line")
absl_logging.warning("absl warning line")
with logging_to({str(tmp_path / "run.log")!r}, io.StringIO()):
    absl_logging.info("absl info inside the run")
absl_logging.info("absl info after the run")
warnings.warn("a library warning")
print(path)
"""
    done = run(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(tmp_path / "logs" / "notebook.log")] and done.stderr == ""
    log = (tmp_path / "logs" / "notebook.log").read_text()
    for line in ("tensorflow info line", "absl warning line", "absl info after the run", "a library warning"):
        assert line in log
    assert "absl info inside the run" in (tmp_path / "run.log").read_text()


def test_the_cli_commands_import_no_tensorflow_before_the_quiet_import():
    """`tfxline init` and the pre-flight checks run before TensorFlow is imported quietly: a module
    that pulls Beam or TensorFlow in at import (a text folder's check once imported the ExampleGen's
    Beam module for one helper) printed cuFFT / cuDNN registration lines on every init."""
    code = ("import sys; import tfxline.cli.main, tfxline.cli.init_project, tfxline.pipeline.data.texts, "
            "tfxline.pipeline.data.images, tfxline.pipeline.data.check; "
            "print(sorted(m for m in ('tensorflow', 'apache_beam') if m in sys.modules))")
    result = run(code)
    assert result.returncode == 0 and result.stdout.strip() == "[]", (result.stdout, result.stderr[-2000:])
