"""TFX's packaging of itself for Beam workers, skipped where no worker would install it.

Every Beam-based TFX executor (CsvExampleGen, StatisticsGen, Transform, Evaluator, ...) calls
``tfx.utils.dependency_utils.make_beam_dependency_flags`` before it runs its Beam pipeline.
Unless the Beam args already name a dependency (``--extra_package``, ``--setup_file``,
``--requirements_file``, ``--sdk_container_image``), that copies the whole TFX install into
a ``tempfile.mkdtemp()`` folder, runs ``setup.py sdist`` in a subprocess and adds
``--extra_package=<sdist>`` for remote workers to install. TFX never removes the folder
(the same code in TFX 1.16 and 1.21): about 49 MB and 3.4 s per Beam component on the 2-core
machine, four per taxi run, so a developer's /tmp filled by gigabytes a day of test runs.

The runners that execute the pipeline in this process or in local subprocesses of the same
Python (the DirectRunner and the FnApiRunner that local runs pin, see pipeline/beam/stack_compat.py) never
install extra packages: for them the sdist is skipped. Any other runner (Dataflow, Flink,
Spark, Portable, Prism) goes through TFX's own function unchanged.
"""
from __future__ import annotations

import contextlib
from typing import Iterator, List, Sequence

from tfxline.patches import guard

# Runners that run the Beam pipeline with this process's own Python packages.
LOCAL_RUNNERS = frozenset({"DirectRunner", "SwitchingDirectRunner", "BundleBasedDirectRunner", "FnApiRunner"})


def runs_locally(beam_pipeline_args: Sequence[str]) -> bool:
    """Whether these Beam args run on a runner that uses this process's packages (no
    ``--runner`` means Beam's DirectRunner)."""
    from apache_beam.options.pipeline_options import PipelineOptions

    runner = PipelineOptions(flags=list(beam_pipeline_args)).get_all_options().get("runner")
    return not runner or str(runner).rsplit(".", 1)[-1] in LOCAL_RUNNERS


@contextlib.contextmanager
def no_sdist_for_local_runners() -> Iterator[None]:
    """While inside, TFX's executors in this process skip the TFX sdist on local runners."""
    if not guard.applies("tfx_packaging"):
        yield
        return
    from tfx.utils import dependency_utils

    tfx_flags = dependency_utils.make_beam_dependency_flags

    def dependency_flags(beam_pipeline_args: List[str]) -> List[str]:
        if runs_locally(beam_pipeline_args):
            return beam_pipeline_args
        return tfx_flags(beam_pipeline_args)

    dependency_utils.make_beam_dependency_flags = dependency_flags
    try:
        yield
    finally:
        dependency_utils.make_beam_dependency_flags = tfx_flags
