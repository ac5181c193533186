"""A recorded run (``<output>/runs/<run id>/run.json``) and its artifacts, through MLMD."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List

from ml_metadata.proto import metadata_store_pb2

from tfxline.runs import store as store_lib
from tfxline.runs import summary as summary_lib

RUN_INFO_FILE = "run.json"


def load_run_info(run_dir: str) -> Dict[str, Any]:
    path = os.path.join(run_dir, RUN_INFO_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{run_dir} is not a run directory (no {RUN_INFO_FILE}); "
                                "pass <output>/runs/<run id>, or omit it for the latest run")
    with open(path) as f:
        info = json.load(f)
    info.setdefault("metadata_store", info.get("metadata_path"))  # run.json of earlier versions
    return info


class RunArtifacts:
    """The run's executions and their output artifacts (as TFX Artifacts), by node id."""

    def __init__(self, info: Dict[str, Any]):
        self.info = info
        if not store_lib.store_exists(info["metadata_store"]):
            raise FileNotFoundError(f"the run's MLMD store {info['metadata_store']} is gone; "
                                    "a report needs the output directory the run wrote")
        self.store = store_lib.open_store(info["metadata_store"])
        self.summary = summary_lib.collect_run(info["metadata_store"], info["pipeline_name"],
                                               info["run_id"])
        self._cache: Dict[tuple, Dict[str, list]] = {}

    def _artifacts(self, node_id: str, events) -> Dict[str, list]:
        if (node_id, events) not in self._cache:
            component = self.summary.component(node_id)
            self._cache[(node_id, events)] = (
                store_lib.tfx_artifacts(self.store, component.execution_id, events) if component else {})
        return self._cache[(node_id, events)]

    def artifact(self, node_id: str, key: str):
        """The node's output artifact under ``key`` in this run (None if not produced)."""
        found = self._artifacts(node_id, store_lib.OUTPUT_EVENTS).get(key) or []
        return found[0] if found else None

    def input_artifact(self, node_id: str, key: str):
        """The artifact the node consumed under ``key`` in this run."""
        found = self._artifacts(node_id, store_lib.INPUT_EVENTS).get(key) or []
        return found[0] if found else None

    def deleted(self, artifact) -> bool:
        """Whether retention (runs/retention.py) deleted the artifact's files."""
        return artifact.mlmd_artifact.state != metadata_store_pb2.Artifact.LIVE

    def collected(self) -> List[str]:
        """The URIs of this run's outputs that retention deleted."""
        ids = [c.execution_id for c in self.summary.components]
        events = self.store.get_events_by_execution_ids(ids) if ids else []
        return sorted(a.uri for a in self.store.get_artifacts_by_id(
            [e.artifact_id for e in events if e.type in store_lib.OUTPUT_EVENTS])
            if a.state != metadata_store_pb2.Artifact.LIVE)

    def example_gen_id(self) -> str:
        return next((n["id"] for n in self.info["graph"] if n["id"].endswith("ExampleGen")), "")

    def execution(self, node_id: str):
        component = self.summary.component(node_id)
        return self.store.get_executions_by_id([component.execution_id])[0] if component else None
