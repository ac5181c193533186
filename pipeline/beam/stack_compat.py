"""What differs between the two supported stacks and needs code, in one place.

  TFX 1.16 / Python 3.10: TF 2.16, tf_keras 2.16, TFMA 0.47, Beam 2.59, protobuf 3.20
  TFX 1.21 / Python 3.13: TF 2.21, tf_keras 2.21, TFMA 0.52, Beam 2.77, protobuf 6.33

Differences absorbed without a branch (the code uses what both stacks have):
  - TFMA 0.52 no longer re-exports its config protos as ``tfma.EvalConfig`` etc.:
    pipeline/eval_config.py imports them from ``tensorflow_model_analysis.proto.config_pb2``.
  - setuptools 80+ (TFX 1.21 stack) dropped the legacy ``setup.py develop`` install:
    tools/bootstrap.sh installs the project with ``--use-pep517`` on both.
  - TF 2.21 no longer depends on TensorBoard, which the Trainer's TensorBoard callback and
    the run report need: the TFX 1.21 lock pins it.
  - TFX 1.21's ``kfp`` extra is limited to Python < 3.12; kfp 2.17 installs beside it and is
    in the lock, so ``kfp.Client`` submission works on both.
The Keras choice is the same on both (tf_keras, see trainer/keras_compat.py).
"""
from __future__ import annotations

from typing import Sequence, Tuple

# Beam 2.68 made its DirectRunner try the Prism runner first.
PRISM_BY_DEFAULT_SINCE = (2, 68)
FN_API_RUNNER = "apache_beam.runners.portability.fn_api_runner.fn_runner.FnApiRunner"


def _beam_version() -> Tuple[int, int]:
    import apache_beam

    major, minor = apache_beam.__version__.split(".")[:2]
    return int(major), int(minor)


def local_beam_args(args: Sequence[str]) -> Tuple[str, ...]:
    """Beam args for a local run, keeping the runner the same on both stacks.

    From Beam 2.68 (TFX 1.21 stack) the DirectRunner first tries Prism, a Go binary it
    downloads from GitHub at run time; offline, each of a run's Beam pipelines waits for
    the failed download and then falls back (5 s per taxi run, measured), and online it
    would run on a runner nothing here was tested on. For the in-memory mode (the default)
    this pins the FnApiRunner, which is what Beam 2.59's DirectRunner (TFX 1.16 stack) runs
    these pipelines on. An explicit ``--runner`` and the multi-processing mode (whose worker
    processes get the pipeline options through the DirectRunner) are left as given.
    """
    args = tuple(args)
    if _beam_version() < PRISM_BY_DEFAULT_SINCE:
        return args
    return pin_fn_api_runner(args)


def image_beam_args(args: Sequence[str]) -> Tuple[str, ...]:
    """Beam args for the compiled Kubeflow / Vertex pipeline. Its components run in the
    pipeline image, whose Beam is the TFX 1.21 lock's (2.77, kubeflow/Dockerfile) whatever
    Beam compiled it: the same pin as a local run on that stack, so a cluster with internet
    access does not download Prism into every Beam component's pod and run on it."""
    return pin_fn_api_runner(args)


def pin_fn_api_runner(args: Sequence[str]) -> Tuple[str, ...]:
    """The in-memory mode on the FnApiRunner; any other runner or mode as given."""
    args = tuple(args)
    if any(a.startswith("--runner") for a in args) or "--direct_running_mode=in_memory" not in args:
        return args
    return (f"--runner={FN_API_RUNNER}",) + args
