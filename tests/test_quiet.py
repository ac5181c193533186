"""The entry point imports TensorFlow without its C++ import-time noise, and lets anything
else it writes to stderr through."""
import os
import subprocess
import sys

from pipeline.quiet import TF_IMPORT_NOISE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUIET_IMPORT = "from pipeline.quiet import import_tensorflow_quietly; import_tensorflow_quietly(); print('ok')"


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
