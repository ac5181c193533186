"""What this project changes in TFX's executors, in whatever process runs them: a local run
(local/runner.py), a notebook's component runs (local/interactive.py) and a compiled pipeline's
container entrypoint (kubeflow/entrypoint.py) all enter :func:`executor_patches` around them.

- pipeline/beam_packaging.py: no sdist of TFX for Beam runners in this process.
- pipeline/tft_inspection.py: one trace of the preprocessing_fn for TFX's four inspections.
- pipeline/beam_signatures.py: Beam inspects each function's parameters once, not at every
  DoFn it meets (3.8 s of a taxi run).
- pipeline/beam_option_views.py: Beam makes each view of the pipeline's options once, not twice
  per transform applied (1.3 s).
- trainer/keras_compat.skip_autograph_for_libraries: AutoGraph leaves tf_keras' and
  tf.Transform's code as it is, in every component (TFMA's tf_keras metric wrappers, the
  Transform's analyzers, the Trainer), not only in the Trainer's run_fn. Process-wide and
  lasting (idempotent), unlike the two above.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from tfxline.pipeline import beam_option_views, beam_packaging, beam_signatures, tft_inspection


@contextlib.contextmanager
def executor_patches() -> Iterator[None]:
    from tfxline.trainer.keras_compat import skip_autograph_for_libraries

    skip_autograph_for_libraries()
    with beam_packaging.no_sdist_for_local_runners(), tft_inspection.shared_inspection_traces(), \
            beam_signatures.shared_signatures(), beam_option_views.shared_option_views():
        yield
