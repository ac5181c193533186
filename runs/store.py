"""The MLMD store: connecting to it (SQLite file or MySQL server) and reading its runs,
executions and artifacts. What a run *did* is runs.summary, built on this."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from ml_metadata.metadata_store.metadata_store import MetadataStore
from ml_metadata.proto import metadata_store_pb2


def connection_config(store: Any, readonly: bool = True) -> metadata_store_pb2.ConnectionConfig:
    """MLMD's connection config for ``PipelineConfig.metadata_store`` (a SQLite path, or
    {"mysql": {...}} with the password from its environment variable)."""
    from tfxline.pipeline.config import ConfigError

    config = metadata_store_pb2.ConnectionConfig()
    if isinstance(store, str):
        config.sqlite.filename_uri = store
        config.sqlite.connection_mode = (metadata_store_pb2.SqliteMetadataSourceConfig.READONLY if readonly else
                                         metadata_store_pb2.SqliteMetadataSourceConfig.READWRITE_OPENCREATE)
        return config
    m = store["mysql"]
    password = os.environ.get(m["password_env"])
    if password is None:
        raise ConfigError(f"the MySQL metadata store {describe_store(store)} needs its password in the "
                          f"environment variable {m['password_env']}; export it (the config never holds it)")
    config.mysql.host, config.mysql.port = m["host"], int(m["port"])
    config.mysql.database, config.mysql.user, config.mysql.password = m["database"], m["user"], password
    return config


def describe_store(store: Any) -> str:
    if isinstance(store, str):
        return store
    m = store["mysql"]
    return f"mysql://{m['user']}@{m['host']}:{m['port']}/{m['database']}"


def store_exists(store: Any) -> bool:
    """Whether there is a store to read (a server store is assumed to exist)."""
    return os.path.isfile(store) if isinstance(store, str) else True


def open_store(store: Any, readonly: bool = True) -> MetadataStore:
    return MetadataStore(connection_config(store, readonly=readonly))


def run_ids(store: MetadataStore, pipeline_name: str) -> List[str]:
    """The pipeline's runs in the MLMD store, newest first."""
    runs = store.get_contexts_by_type("pipeline_run")
    pipeline_ctx = store.get_context_by_type_and_name("pipeline", pipeline_name)
    if pipeline_ctx is None or not runs:
        return []
    in_pipeline = {e.id for e in store.get_executions_by_context(pipeline_ctx.id)}
    runs = [r for r in runs if in_pipeline & {e.id for e in store.get_executions_by_context(r.id)}]
    return [r.name for r in sorted(runs, key=lambda r: (r.create_time_since_epoch, r.id), reverse=True)]


def latest_run_id(store: MetadataStore, pipeline_name: str) -> Optional[str]:
    found = run_ids(store, pipeline_name)
    return found[0] if found else None


def spans_of(examples) -> List[int]:
    """The spans of MLMD Examples artifacts (a property in newer TFX, a custom property in 1.16)."""
    found = set()
    for a in examples:
        for props in (a.properties, a.custom_properties):
            if "span" in props:
                value = props["span"]
                found.add(int(value.string_value) if value.HasField("string_value") else value.int_value)
                break
    return sorted(found)


def split_names_of(artifact) -> List[str]:
    """The split names of an MLMD Examples artifact (TFX's ``split_names`` property, a JSON list)."""
    import json

    for props in (artifact.properties, artifact.custom_properties):
        if "split_names" in props:
            return list(json.loads(props["split_names"].string_value or "[]"))
    return []


def ingested_spans(store, pipeline_name: Optional[str] = None,
                   execution_ids: Optional[set] = None) -> Dict[int, metadata_store_pb2.Artifact]:
    """{span: the newest live Examples artifact an ExampleGen wrote for it} (data without spans
    is span 0): what TFX's span-window resolver reads for that span. Over one pipeline's
    ExampleGen executions, or only those in ``execution_ids``."""
    prefix = f"{pipeline_name}." if pipeline_name else ""
    gens = {e.id for ctx in store.get_contexts_by_type("node")  # named '<pipeline>.<node id>'
            if ctx.name.startswith(prefix) and ctx.name.endswith("ExampleGen")
            for e in store.get_executions_by_context(ctx.id) if execution_ids is None or e.id in execution_ids}
    if not gens:
        return {}
    outputs = [e.artifact_id for e in store.get_events_by_execution_ids(sorted(gens)) if e.type in OUTPUT_EVENTS]
    newest: Dict[int, metadata_store_pb2.Artifact] = {}
    for a in store.get_artifacts_by_id(outputs):
        if a.state == metadata_store_pb2.Artifact.LIVE:
            for span in spans_of([a]) or [0]:
                if span not in newest or a.id > newest[span].id:
                    newest[span] = a
    return newest


def _context_named(store, execution_id: int, type_name: str):
    """The execution's context of the type ``type_name`` ('node', 'pipeline_run'), or None."""
    for ctx in store.get_contexts_by_execution(execution_id):
        if (ctx.type or store.get_context_types_by_id([ctx.type_id])[0].name) == type_name:
            return ctx
    return None


def node_id_of(store, execution) -> str:
    ctx = _context_named(store, execution.id, "node")
    return ctx.name.split(".", 1)[-1] if ctx else (execution.name or str(execution.id))


def run_id_of(store, execution_id: int) -> str:
    """The run an execution belongs to ('' when its run's records are gone)."""
    run = _context_named(store, execution_id, "pipeline_run")
    return run.name if run else ""


def cached_from_run(store, execution) -> str:
    """The run whose execution made the outputs that a cached execution reuses (the first that
    completed with them: a cache hit of a cache hit names the run that did the work); '' when
    it is not known (no outputs, or that run's records are gone)."""
    outputs = [e.artifact_id for e in store.get_events_by_execution_ids([execution.id]) if e.type in OUTPUT_EVENTS]
    if not outputs:
        return ""
    producers = sorted({e.execution_id for e in store.get_events_by_artifact_ids(outputs)
                        if e.type in OUTPUT_EVENTS and e.execution_id != execution.id})
    for producer in sorted(store.get_executions_by_id(producers), key=lambda e: e.id):
        if producer.last_known_state == metadata_store_pb2.Execution.COMPLETE:
            run = _context_named(store, producer.id, "pipeline_run")
            return run.name if run else ""
    return ""


OUTPUT_EVENTS = (metadata_store_pb2.Event.OUTPUT, metadata_store_pb2.Event.DECLARED_OUTPUT)
INPUT_EVENTS = (metadata_store_pb2.Event.INPUT, metadata_store_pb2.Event.DECLARED_INPUT)


def execution_artifacts(store, execution_id: int, event_types=OUTPUT_EVENTS) -> Dict[str, list]:
    """{key: [MLMD Artifact]} of one execution's outputs (or, with INPUT_EVENTS, inputs)."""
    events = [e for e in store.get_events_by_execution_ids([execution_id]) if e.type in event_types]
    artifacts = {a.id: a for a in store.get_artifacts_by_id([e.artifact_id for e in events])}
    out: Dict[str, list] = {}
    for e in events:
        keys = [step.key for step in e.path.steps if step.key] or ["output"]
        if e.artifact_id in artifacts:
            for key in keys:  # an artifact given under two keys has one event naming both
                out.setdefault(key, []).append(artifacts[e.artifact_id])
    return out


def tfx_artifacts(store, execution_id: int, event_types=OUTPUT_EVENTS) -> Dict[str, list]:
    """{key: [tfx Artifact]} of one execution, typed, for TFX's artifact utilities."""
    from tfx.types import artifact_utils, standard_artifacts  # noqa: F401 (registers the types)

    out = execution_artifacts(store, execution_id, event_types)
    type_ids = {a.type_id for artifacts in out.values() for a in artifacts}
    types = {t.id: t for t in store.get_artifact_types_by_id(list(type_ids))}
    return {key: [artifact_utils.deserialize_artifact(types[a.type_id], a) for a in artifacts]
            for key, artifacts in out.items()}


def newest_tuned(store, pipeline_name: str) -> Optional[str]:
    """The folder of the newest live best_hyperparameters a Tuner of this pipeline wrote (a
    cached Tuner's count too: its artifact is the one it served), or None."""
    node = store.get_context_by_type_and_name("node", f"{pipeline_name}.Tuner")
    if node is None:
        return None
    ids = [e.id for e in store.get_executions_by_context(node.id)]
    outputs = [e.artifact_id for e in store.get_events_by_execution_ids(ids) if e.type in OUTPUT_EVENTS] if ids else []
    tuned = [a for a in store.get_artifacts_by_id(outputs) if a.state == metadata_store_pb2.Artifact.LIVE
             and store.get_artifact_types_by_id([a.type_id])[0].name == "HyperParameters"]
    return max(tuned, key=lambda a: a.id).uri if tuned else None
