"""The Tuner: TFX's Tuner component with an executor that runs this project's tuner
(trainer/tune.py ``tuner_fn``), writes TFX's best_hyperparameters and tuner_results, and beside
them the record of every trial (tuning_run.json: the run report's trials table, the summary line).

TFX's stock executor raises on any ``tune_args`` (tfx components/tuner/executor.py:122-123 at
v1.16.0): local trials run one after another. Parallel trials are Vertex AI's
(kubeflow/vertex_tuning.py).
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List

from absl import logging
from tfx import types
from tfx.components.tuner import executor as tuner_executor
from tfx.components.tuner.component import Tuner
from tfx.dsl.components.base import executor_spec
from tfx.types import artifact_utils, standard_component_specs
from tfx.utils import io_utils

from tfxline.trainer import tuning_settings as T

TUNER_FN = "tfxline.trainer.tune.tuner_fn"


class TuningExecutor(tuner_executor.Executor):
    """Search, then write the best values, TFX's results table and this project's record."""

    def Do(self, input_dict: Dict[str, List[types.Artifact]], output_dict: Dict[str, List[types.Artifact]],
           exec_properties: Dict[str, Any]) -> None:
        if tuner_executor.get_tune_args(exec_properties):
            raise ValueError("tune_args (parallel trials) run on Vertex AI's Tuner only; a local Tuner runs its "
                             "trials one after another: leave tuning.parallel_trials at 1")
        from tfxline.trainer import tune

        try:
            tuner = tuner_executor.search(input_dict, exec_properties, self._get_tmp_dir(),
                                          print_tuning_summary=False)
        finally:
            tune.forget()
        # this project's TrialTuner (trainer/tune.py's tuner_fn made it) keeps a record of its trials
        record = tuner.record() if isinstance(tuner, tune.trial_tuner_class()) else None
        if record is not None and not record["best"]:
            raise tune.NoTrialFinished("tuning: no trial finished (the run's log has each trial's error); "
                                  "fix what it names, or turn tuning off (tuning.enabled: false)")
        tuner_executor.write_best_hyperparameters(tuner, output_dict)
        if record is not None:
            results = artifact_utils.get_single_uri(output_dict[standard_component_specs.TUNER_RESULTS_KEY])
            io_utils.write_string_file(os.path.join(results, T.TUNING_RUN_FILE), json.dumps(record, indent=2))
            logging.info("%s", T.summary_line(record))


class TunerComponent(Tuner):
    """TFX's Tuner, run by TuningExecutor."""
    EXECUTOR_SPEC = executor_spec.ExecutorClassSpec(TuningExecutor)
