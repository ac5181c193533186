"""Quiet library output at an entry point: the import-time noise of TensorFlow's C++ side and
the Google client libraries' warnings, which are not the user's to act on. Standard library
only, so the TF-only GPU bundle's bench scripts use it too."""
from __future__ import annotations

import logging
import os
import re
import sys
import warnings

from tfxline.patches.tf_deprecation import quiet_deprecation_notices
from tfxline.serving.native_stderr import stderr_filtered


def quiet_libraries() -> None:
    """Process-wide, at an entry point: TensorFlow's C++ log below warnings, and the Google client
    libraries' import-time FutureWarnings about the Python and google-cloud-storage versions the
    locked stack pins (a page of them before the first line of output; not the user's to act on)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"google\.")
    warnings.filterwarnings("ignore", category=FutureWarning, message="You are using a non-supported Python version")
    # Beam's hint that python-snappy would make its TFRecord checksums faster (not in the lock).
    logging.getLogger("apache_beam.io.tfrecordio").setLevel(logging.ERROR)
    beam_dofns = logging.getLogger("apache_beam.runners.common")
    if not any(isinstance(f, InterruptionIsNoError) for f in beam_dofns.filters):
        beam_dofns.addFilter(InterruptionIsNoError())


class InterruptionIsNoError(logging.Filter):
    """Beam logs what a Ctrl-C or SIGTERM raises in a bundle as an error with its traceback, then
    passes it on as its own (DoFnRunner._reraise_augmented: apache_beam/runners/common.py:1606 in
    Beam 2.59, :1622 in 2.77). The command says in one line that it was interrupted
    (cli/main.py; a run's log has the traceback from local/runner.py): that record is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt))


# What TensorFlow's C++ side writes to stderr while it is imported, before any log level applies
# (absl logs before InitializeLog; the CUDA plugins registered twice by the CPU wheel; no CUDA
# driver on a CPU machine, which the run says anyway: the Trainer's device is in the summary;
# TF 2.21 says that at the first device lookup, as cuInit error 303, so the import looks once;
# and, on CPUs where TensorFlow turns oneDNN on by default (seen on an AMD EPYC with TF 2.21,
# whose absl logs ignore TF_CPP_MIN_LOG_LEVEL), that oneDNN's custom operations are on).
TF_IMPORT_NOISE = re.compile(
    r"Unable to register cu(FFT|DNN|BLAS) factory|All log messages before absl::InitializeLog|"
    r"cudart_stub\.cc.*Could not find cuda drivers|TF-TRT Warning: Could not find TensorRT|"
    r"failed call to cuInit: .*\(303\)|port\.cc:\d+\] oneDNN custom operations are on")


def import_tensorflow_quietly() -> None:
    """Import TensorFlow without its import-time noise (TF_IMPORT_NOISE; ``stderr_filtered``).
    Also silences TensorFlow's deprecation notices (TFDV's and TFMA's calls of deprecated TF
    functions: for their developers, not the user)."""
    if "tensorflow" not in sys.modules:
        with stderr_filtered(TF_IMPORT_NOISE):
            import tensorflow

            tensorflow.config.list_physical_devices()  # the platforms' start-up lines, here
    quiet_deprecation_notices()  # version-gated: patches/tf_deprecation.py
