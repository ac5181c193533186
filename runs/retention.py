"""Retention: delete the bulky artifacts of old runs (``tfxline gc``, or after every run with
``retention.keep_runs``).

LocalDagRunner never deletes anything: every run writes a copy of the day's examples, the
Transform graph, a model, the baseline's copy of the serving model and TensorBoard logs
under the pipeline root, so a daily pipeline grows without bound. This keeps the artifacts of
the newest ``keep_runs`` complete runs (every component finished, blessed or not) and of every
run since (failed ones too: they are the ones someone debugs), and deletes the bulky artifacts
of older runs, following TFX's own garbage-collection states: an artifact is marked
MARKED_FOR_DELETION in MLMD, its directory is removed, then it is marked DELETED. TFX's cache
and input resolution only use LIVE artifacts, so a later run never reuses a deleted artifact:
it recomputes it. An interrupted collection is finished by the next one (MARKED_FOR_DELETION
is collected again).

A run going meanwhile on a shared store (MySQL) may pick an old artifact as a cached output or
a resolved input between this plan and the marking: it records an event on it a moment after
reading it LIVE. So a collection marks first, waits ``SETTLE_S`` on such a store, looks again,
and puts back to LIVE (and keeps) any artifact an execution took since the plan.

Deleted: the types in ``COLLECTED_TYPES`` (examples, transform graph and cache, models,
TensorBoard logs). Kept whatever their age: statistics, schemas, anomalies, evaluations,
blessings and pushed-model records (small; ``tfxline runs``, the drift gate and the history
chart read them), every artifact any kept run read or wrote, the ExampleGen examples of the
newest ``data.spans`` window (what the next run trains on), runs that may still be going (a
shared MySQL store), and anything outside the pipeline root. The serving directory has its own
retention (``serving.keep_versions``).
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import time
from typing import Dict, Iterable, List, Optional, Set, TextIO

from ml_metadata.proto import metadata_store_pb2

from tfxline.runs import store as store_lib

COLLECTED_TYPES = ("Examples", "TransformGraph", "TransformCache", "Model", "ModelRun")
_LIVE, _MARKED, _DELETED = (metadata_store_pb2.Artifact.LIVE, metadata_store_pb2.Artifact.MARKED_FOR_DELETION,
                            metadata_store_pb2.Artifact.DELETED)
_DONE = (metadata_store_pb2.Execution.COMPLETE, metadata_store_pb2.Execution.CACHED)
_FAILED = (metadata_store_pb2.Execution.FAILED, metadata_store_pb2.Execution.CANCELED)
# How long a collection that may overlap runs (a shared store) waits between marking and
# removing: TFX records the event on a cached output or resolved input milliseconds after it
# read the artifact LIVE (launcher: resolve, register the execution; look the cache up, publish).
SETTLE_S = 2.0


@dataclasses.dataclass
class Run:
    run_id: str
    state: str                 # complete | failed | unfinished
    execution_ids: List[int]


@dataclasses.dataclass
class Doomed:
    artifact: metadata_store_pb2.Artifact
    type_name: str
    run_id: str                # the run whose execution wrote it
    size: int                  # bytes on disk
    users: frozenset = frozenset()  # the executions with an event on it when planned


@dataclasses.dataclass
class Plan:
    keep_runs: int
    kept: List[Run]            # newest first
    old: List[Run]             # the runs whose artifacts may go, newest first
    doomed: List[Doomed]
    kept_spans: List[int]      # ExampleGen spans kept for the next run's window
    runs_may_be_going: bool = False
    spared: List[Doomed] = dataclasses.field(default_factory=list)  # taken by a run during the collection

    @property
    def size(self) -> int:
        return sum(d.size for d in self.doomed)


def runs_of(store, pipeline_name: str) -> List[Run]:
    """The pipeline's runs, newest first, each with its state from its executions."""
    out = []
    for run_id in store_lib.run_ids(store, pipeline_name):
        ctx = store.get_context_by_type_and_name("pipeline_run", run_id)
        executions = store.get_executions_by_context(ctx.id)
        states = {e.last_known_state for e in executions}
        state = ("failed" if states & set(_FAILED) else
                 "complete" if executions and states <= set(_DONE) else "unfinished")
        out.append(Run(run_id, state, [e.id for e in executions]))
    return out


def plan(store, pipeline_name: str, pipeline_root: str, keep_runs: int, window: int = 1,
         runs_may_be_going: bool = False) -> Plan:
    """What a collection keeping the newest ``keep_runs`` complete runs would delete.
    ``runs_may_be_going``: a run that has not finished may still be running (a shared MySQL
    store); with SQLite the caller holds the run lock, so an unfinished run is a dead one."""
    if keep_runs < 1:
        raise ValueError(f"keep_runs must be >= 1, got {keep_runs}")
    runs = runs_of(store, pipeline_name)
    complete = [i for i, r in enumerate(runs) if r.state == "complete"]
    cut = complete[keep_runs - 1] + 1 if len(complete) >= keep_runs else len(runs)
    kept, old = runs[:cut], runs[cut:]
    if runs_may_be_going:
        kept += [r for r in old if r.state == "unfinished"]
        old = [r for r in old if r.state != "unfinished"]
    protected = _touched(store, [i for r in kept for i in r.execution_ids])
    window_ids, kept_spans = _newest_spans(store, runs, window)
    protected |= window_ids
    written = _written_by(store, old)
    types = {t.id: t.name for t in store.get_artifact_types()}
    root = os.path.realpath(pipeline_root) + os.sep
    candidates = [a for a in store.get_artifacts_by_id(sorted(written))
                  if types.get(a.type_id) in COLLECTED_TYPES and a.state in (_LIVE, _MARKED)
                  and a.id not in protected and _inside(a.uri, root)]
    users = _users(store, [a.id for a in candidates])
    doomed = [Doomed(a, types[a.type_id], written[a.id], _size(a.uri), users.get(a.id, frozenset()))
              for a in candidates]
    return Plan(keep_runs, kept, old, doomed, kept_spans, runs_may_be_going)


def collect(store, plan_: Plan) -> List[str]:
    """Delete what ``plan_`` names: mark, look again, remove, mark deleted. An artifact an
    execution took since the plan goes back to LIVE and moves from ``plan_.doomed`` to
    ``plan_.spared``. Returns one line per artifact that could not be removed (it stays
    MARKED_FOR_DELETION; the next collection retries)."""
    if not plan_.doomed:
        return []
    artifacts = [d.artifact for d in plan_.doomed]
    for a in artifacts:
        a.state = _MARKED
    store.put_artifacts(artifacts)  # from here on TFX's cache and resolvers no longer see them
    if plan_.runs_may_be_going:
        time.sleep(SETTLE_S)
    users = _users(store, [a.id for a in artifacts])
    plan_.spared = [d for d in plan_.doomed if users.get(d.artifact.id, frozenset()) - d.users]
    if plan_.spared:
        for d in plan_.spared:
            d.artifact.state = _LIVE
        store.put_artifacts([d.artifact for d in plan_.spared])
        taken = {d.artifact.id for d in plan_.spared}
        plan_.doomed = [d for d in plan_.doomed if d.artifact.id not in taken]
        artifacts = [d.artifact for d in plan_.doomed]
    done, errors = [], []
    for a in artifacts:
        try:
            if os.path.isdir(a.uri):
                shutil.rmtree(a.uri)
            elif os.path.exists(a.uri):
                os.remove(a.uri)
        except OSError as e:
            errors.append(f"{a.uri}: {e.strerror or e}")
            continue
        a.state = _DELETED
        done.append(a)
    if done:
        store.put_artifacts(done)
    return errors


def describe(plan_: Plan, dry_run: bool = False) -> str:
    """One line: what was (or would be) deleted and what was kept."""
    verb = "would delete" if dry_run else "deleted"
    runs = len({d.run_id for d in plan_.doomed})
    kept = f"kept the newest {plan_.keep_runs} complete run(s) and the runs since ({len(plan_.kept)} run(s))"
    if plan_.kept_spans not in ([], [0]):  # [0]: data without spans
        kept += f" and the examples of span(s) {', '.join(map(str, plan_.kept_spans))}"
    if plan_.spared:
        kept += f"; kept {len(plan_.spared)} artifact(s) a run took during the collection"
    if not plan_.doomed:
        return f"retention: nothing to delete; {kept}"
    return (f"retention: {verb} {len(plan_.doomed)} artifact(s), {format_size(plan_.size)}, "
            f"of {runs} older run(s); {kept}")


def list_doomed(plan_: Plan, stream: TextIO) -> None:
    for d in sorted(plan_.doomed, key=lambda d: (d.run_id, d.artifact.uri)):
        print(f"  {d.run_id}  {d.type_name:<14} {format_size(d.size):>9}  {d.artifact.uri}", file=stream)


def format_size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"  # not reached


def _touched(store, execution_ids: Iterable[int]) -> Set[int]:
    """Every artifact the executions read or wrote."""
    ids = list(execution_ids)
    return {e.artifact_id for e in store.get_events_by_execution_ids(ids)} if ids else set()


def _users(store, artifact_ids: List[int]) -> Dict[int, frozenset]:
    """{artifact id: the executions with an event on it}."""
    out: Dict[int, set] = {}
    for e in store.get_events_by_artifact_ids(artifact_ids) if artifact_ids else []:
        out.setdefault(e.artifact_id, set()).add(e.execution_id)
    return {k: frozenset(v) for k, v in out.items()}


def _written_by(store, runs: List[Run]) -> Dict[int, str]:
    """{artifact id: run id} of the artifacts the runs' executions wrote (the oldest writer)."""
    out: Dict[int, str] = {}
    for run in runs:
        if run.execution_ids:
            for e in store.get_events_by_execution_ids(run.execution_ids):
                if e.type in store_lib.OUTPUT_EVENTS:
                    out[e.artifact_id] = run.run_id
    return out


def _newest_spans(store, runs: List[Run], window: int):
    """The newest live ExampleGen artifact of each of the newest ``window`` spans ingested:
    what the next run's window reads (a span ingested long ago stays in it while no newer
    span lands), and the spans."""
    newest = store_lib.ingested_spans(store, execution_ids={i for r in runs for i in r.execution_ids})
    spans = sorted(newest)[-window:]
    return {newest[s].id for s in spans}, spans


def _inside(uri: str, root: str) -> bool:
    return bool(uri) and os.path.realpath(uri).startswith(root)


def _size(uri: str) -> int:
    total = 0
    for folder, _, names in os.walk(uri):
        for name in names:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total if os.path.isdir(uri) else (os.path.getsize(uri) if os.path.isfile(uri) else 0)


def run_retention(cfg, stream: TextIO, keep_runs: Optional[int] = None, dry_run: bool = False) -> Plan:
    """Plan and (unless ``dry_run``) collect for a pipeline config; prints one line (and, dry,
    the list). The caller holds the run lock for a SQLite store."""
    store = store_lib.open_store(cfg.metadata_store, readonly=False)
    p = plan(store, cfg.name, cfg.pipeline_root, keep_runs or cfg.retention.keep_runs, window=cfg.data.window,
             runs_may_be_going=not isinstance(cfg.metadata_store, str))
    errors = [] if dry_run else collect(store, p)
    print(describe(p, dry_run), file=stream, flush=True)
    if dry_run:
        list_doomed(p, stream)
    for line in errors:
        print(f"retention: could not delete {line}; it stays marked for deletion and the next run retries",
              file=stream, flush=True)
    return p
