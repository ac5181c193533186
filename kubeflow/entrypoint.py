"""The command of every TFX task in the compiled pipeline (kubeflow/compile.py sets it).

It is TFX's own container entrypoint (``python -m
tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor``, what TFX compiles by
default), run unchanged, with the same arguments, inside
``pipeline.beam_packaging.no_sdist_for_local_runners()``.

Why: without it, every Beam component's pod (CsvExampleGen, StatisticsGen, Transform,
Evaluator) copied the image's TFX install and built an sdist of it (TFX's
``make_beam_dependency_flags``) for Beam workers to install, about 3.5 s each, before
running its Beam pipeline in the pod itself, where no worker installs anything. With a
remote runner in ``runtime.beam_args`` (Dataflow, Flink, Spark, Portable) TFX's packaging
runs as before. A compiled pipeline that names this command needs an image with this
project installed (kubeflow/Dockerfile), which every task's image is already.
"""
from __future__ import annotations

import runpy

TFX_ENTRYPOINT = "tfx.orchestration.kubeflow.v2.container.kubeflow_v2_run_executor"
COMMAND = ("python", "-m", "kubeflow.entrypoint")  # this module


def main() -> None:
    from pipeline.beam_packaging import no_sdist_for_local_runners

    with no_sdist_for_local_runners():
        runpy.run_module(TFX_ENTRYPOINT, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
