"""The pipeline's components run one at a time, for a notebook (notebooks/components.ipynb): how
to look at each output while working on the features or the ``preprocessing_fn``.

TFX's ``InteractiveContext`` runs the components of ``create_pipeline()`` as a local run builds
them (``local.runner.build_pipeline``: the same config, data, schema and Beam args), with what a
local run does to its process: the libraries' log in a file instead of the cells (``logging_to``),
TFX's executors as a local run patches them
(``patches.executor``), no Interactive Beam script from a CDN (``patches.interactive_beam``).
The context keeps its own ML Metadata store under the work directory; a component run again on the
same inputs and settings is served from its cache.
"""
from __future__ import annotations

import os
import sys
import time
from typing import List, Optional, TextIO, cast

from tfxline.local import runner
from tfxline.local.process import logging_to
from tfxline.patches.executor import executor_patches
from tfxline.patches.interactive_beam import interactive_beam_off
from tfxline.pipeline.config import PipelineConfig


class ComponentRunner:
    """``run("CsvExampleGen")``, then ``run("StatisticsGen")``...: each prints a line as a run's
    components do (done or cached, and its time) and returns TFX's ExecutionResult (shown in a
    notebook as a table of its inputs and outputs); ``artifact(id,
    key)`` is a component's output; ``use(cfg)`` rebuilds the pipeline from a changed config, whose
    components ``run`` runs from then on (those whose inputs and settings did not change come from
    the cache)."""

    def __init__(self, cfg: PipelineConfig, work_dir: str, stream: Optional[TextIO] = None):
        from tfx.orchestration import metadata
        from tfx.orchestration.experimental.interactive.interactive_context import InteractiveContext

        interactive_beam_off()
        self.work_dir, self._stream = work_dir, stream
        self.log_path = os.path.join(work_dir, "logs", "components.log")
        os.makedirs(work_dir, exist_ok=True)
        self.context = InteractiveContext(
            pipeline_name=cfg.name, pipeline_root=os.path.join(work_dir, "pipeline_root"),
            metadata_connection_config=metadata.sqlite_metadata_connection_config(
                os.path.join(work_dir, "metadata.sqlite")))
        self.use(cfg)

    @property
    def stream(self) -> TextIO:
        return self._stream or sys.stdout  # the cell's, when none was given

    def use(self, cfg: PipelineConfig) -> None:
        self.cfg = cfg
        self.paths = runner.resolve_inputs(cfg)  # the pre-flight check of a run: data and schema
        self.pipeline = runner.build_pipeline(cfg, self.paths)
        self.components = {c.id: c for c in self.pipeline.components}

    def run(self, component_id: str):
        if component_id not in self.components:
            raise KeyError(f"no component {component_id!r} in the pipeline; it has {', '.join(self.components)}")
        component = self.components[component_id]
        for key, channel in component.inputs.items():
            producer = getattr(channel, "producer_component_id", None)
            if producer in self.components and not channel.get():
                raise ValueError(f"{component_id} reads {key} from {producer}, which has not run since the "
                                 f"pipeline was built (use() builds it anew); run {producer} first")
        # the local run's (the FnApiRunner pinned): strings, no placeholders (those are a compiled run's)
        beam_args = cast(List[str], list(self.pipeline.beam_pipeline_args))
        started = time.monotonic()
        with logging_to(self.log_path, self.stream), executor_patches():
            result = self.context.run(component, beam_pipeline_args=beam_args)
        tag = "cached" if self.cached(result.execution_id) else " done "
        print(f"[{tag} ] {component_id} ({time.monotonic() - started:.1f}s)", file=self.stream, flush=True)
        return result

    def cached(self, execution_id: int) -> bool:
        """Whether the context's cache served the execution (same inputs and settings as an earlier one)."""
        from ml_metadata.metadata_store.metadata_store import MetadataStore
        from ml_metadata.proto import metadata_store_pb2

        store = MetadataStore(self.context.metadata_connection_config)
        [execution] = store.get_executions_by_id([execution_id])
        return execution.last_known_state == metadata_store_pb2.Execution.CACHED

    def artifact(self, component_id: str, key: str):
        """The component's output artifact ``key`` from its last run (None before it ran)."""
        found = self.components[component_id].outputs[key].get()
        return found[0] if found else None
