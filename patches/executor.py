"""What this project changes in TFX's executors, in whatever process runs them: a local run
(local/runner.py), a notebook's component runs (local/interactive.py) and a compiled pipeline's
container entrypoint (kubeflow/entrypoint.py) all enter :func:`executor_patches` around them.
Each patch is undone when the context ends; each applies only on the library versions it was
tested on, and none with ``TFXLINE_RUNTIME_PATCHES=off`` (patches/guard.py).

- patches/tfx_packaging.py: no sdist of TFX for Beam runners in this process.
- patches/tft_inspection.py: one trace of the preprocessing_fn for TFX's four inspections.
- patches/tft_graph_tools.py: tf.Transform's column-dependency scans in linear time (41 s of a
  300-column Transform; 28 % of a 1,000-column Trainer, in each load of the Transform output).
- patches/beam_signatures.py: Beam inspects each function's parameters once, not at every
  DoFn it meets (3.8 s of a taxi run).
- patches/beam_option_views.py: Beam makes each view of the pipeline's options once, not twice
  per transform applied (1.3 s).
- patches/autograph.py: AutoGraph leaves tf_keras' and tf.Transform's code as it is, in every
  component (TFMA's tf_keras metric wrappers, the Transform's analyzers, the Trainer), not only
  in the Trainer's run_fn.
"""
from __future__ import annotations

import contextlib
import logging
from typing import Callable, Iterator, Optional

from tfxline.patches import (
    autograph,
    beam_option_views,
    beam_signatures,
    guard,
    tft_graph_tools,
    tft_inspection,
    tfx_packaging,
)


@contextlib.contextmanager
def executor_patches(say: Optional[Callable[[str], None]] = None) -> Iterator[None]:
    """The patches above while inside. ``say``: where the line ``runtime patches: on`` (or
    ``off``) goes; the ``tfxline.patches`` logger's INFO by default, which a run's log file
    records (local/process.logging_to)."""
    (say or logging.getLogger("tfxline.patches").info)(guard.status())
    with tfx_packaging.no_sdist_for_local_runners(), tft_inspection.shared_inspection_traces(), \
            tft_graph_tools.linear_dependency_scans(), \
            beam_signatures.shared_signatures(), beam_option_views.shared_option_views(), \
            autograph.libraries_not_converted():
        yield
