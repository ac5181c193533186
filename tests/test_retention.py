"""Retention (runs/retention.py) on a real MLMD SQLite store laid out as TFX lays out a
pipeline's runs: which artifacts a collection deletes, which it keeps, and what TFX's cache
makes of a collected execution. The same against real pipeline runs: tests/test_spans.py."""
import io
import os

import pytest
from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2 as pb

from tfxline.cli import main as cli
from tfxline.runs import retention

LIVE, MARKED, DELETED = pb.Artifact.LIVE, pb.Artifact.MARKED_FOR_DELETION, pb.Artifact.DELETED
COMPLETE, CACHED, FAILED, RUNNING = (pb.Execution.COMPLETE, pb.Execution.CACHED, pb.Execution.FAILED,
                                     pb.Execution.RUNNING)


class Store:
    """A pipeline's runs in a real MLMD store: contexts, executions, artifacts and events as
    LocalDagRunner records them, with artifact directories under ``root``."""

    def __init__(self, tmp_path, pipeline="taxi"):
        self.root = tmp_path / "pipeline_root"
        config = pb.ConnectionConfig()
        config.sqlite.filename_uri = str(tmp_path / "metadata.sqlite")
        config.sqlite.connection_mode = pb.SqliteMetadataSourceConfig.READWRITE_OPENCREATE
        self.config, self.store = config, metadata_store.MetadataStore(config)
        self.ctx_types = {n: self.store.put_context_type(pb.ContextType(name=n))
                          for n in ("pipeline", "pipeline_run", "node")}
        self.exec_type = self.store.put_execution_type(pb.ExecutionType(name="tfx.Component"))
        self.art_types = {}
        self.pipeline = self._context("pipeline", pipeline)
        self.clock, self.runs = 0, {}

    def _context(self, kind, name):
        [cid] = self.store.put_contexts([pb.Context(type_id=self.ctx_types[kind], name=name)])
        return cid

    def run(self, run_id):
        self.clock += 1
        ctx = pb.Context(type_id=self.ctx_types["pipeline_run"], name=run_id, create_time_since_epoch=self.clock)
        [self.runs[run_id]] = self.store.put_contexts([ctx])
        return run_id

    def execute(self, run_id, node, state=COMPLETE, inputs=(), outputs=(), reuse=()):
        """One execution of ``node`` in the run: reads ``inputs`` (artifact ids), writes new
        artifacts ``outputs`` [(type, span or None)] (directories created) and, as a cached
        execution does, records ``reuse`` (existing ids) as its outputs. Returns the new ids."""
        new = []
        for type_name, span in outputs:
            if type_name not in self.art_types:
                self.art_types[type_name] = self.store.put_artifact_type(pb.ArtifactType(name=type_name))
            a = pb.Artifact(type_id=self.art_types[type_name], state=LIVE)
            if span is not None:
                a.custom_properties["span"].int_value = span
            [aid] = self.store.put_artifacts([a])
            a.id, a.uri = aid, str(self.root / node / type_name / str(aid))
            os.makedirs(a.uri)
            (self.root / node / type_name / str(aid) / "data").write_bytes(b"x" * 1000)
            self.store.put_artifacts([a])
            new.append(aid)
        events = [(i, pb.Event.INPUT) for i in inputs] + [(i, pb.Event.OUTPUT) for i in list(new) + list(reuse)]
        [eid] = self.store.put_executions([pb.Execution(type_id=self.exec_type, last_known_state=state)])
        self.store.put_events([self._event(a, eid, t) for a, t in events])
        node_ctx = self.store.get_context_by_type_and_name("node", f"taxi.{node}") or None
        node_id = node_ctx.id if node_ctx else self._context("node", f"taxi.{node}")
        self.store.put_attributions_and_associations(
            [], [pb.Association(context_id=c, execution_id=eid) for c in (self.pipeline, self.runs[run_id], node_id)])
        return new

    def _event(self, artifact_id, execution_id, kind):
        """An event with TFX's path: the artifact's key (here its type's name) and index."""
        event = pb.Event(artifact_id=artifact_id, execution_id=execution_id, type=kind)
        type_id = self.store.get_artifacts_by_id([artifact_id])[0].type_id
        event.path.steps.add().key = self.store.get_artifact_types_by_id([type_id])[0].name.lower()
        event.path.steps.add().index = 0
        return event

    def day(self, run_id, span, state=COMPLETE, window=()):
        """A daily run: ExampleGen ingests ``span``; Transform reads it (and ``window``, older
        examples); a Trainer writes a model; StatisticsGen statistics. ``state``: how the
        Trainer ended."""
        self.run(run_id)
        [examples] = self.execute(run_id, "CsvExampleGen", outputs=[("Examples", span)])
        [stats] = self.execute(run_id, "StatisticsGen", inputs=[examples], outputs=[("ExampleStatistics", None)])
        graph, transformed = self.execute(run_id, "Transform", inputs=[examples, *window],
                                          outputs=[("TransformGraph", None), ("Examples", None)])
        [model] = self.execute(run_id, "Trainer", state=state, inputs=[graph, transformed], outputs=[("Model", None)])
        return {"examples": examples, "stats": stats, "graph": graph, "transformed": transformed, "model": model}

    def plan(self, keep, **kw):
        return retention.plan(self.store, "taxi", str(self.root), keep, **kw)

    def state(self, aid):
        return self.store.get_artifacts_by_id([aid])[0].state


def doomed_ids(plan):
    return {d.artifact.id for d in plan.doomed}


def test_keeps_the_newest_complete_runs_and_every_run_since(tmp_path):
    s = Store(tmp_path)
    d1, d2, d3 = s.day("r1", 1), s.day("r2", 2), s.day("r3", 3)
    d4 = s.day("r4", 4, state=FAILED)  # failed after the newest complete run: kept, for debugging
    p = s.plan(keep=2)
    assert [r.run_id for r in p.kept] == ["r4", "r3", "r2"] and [r.run_id for r in p.old] == ["r1"]
    # r1's examples, transform outputs and model go; its statistics stay (small, read by the history)
    assert doomed_ids(p) == {d1["examples"], d1["graph"], d1["transformed"], d1["model"]}
    assert not doomed_ids(p) & (set(d2.values()) | set(d3.values()) | set(d4.values()))
    assert p.size == 4 * 1000
    assert "would delete 4 artifact(s), 3.9 KB, of 1 older run(s)" in retention.describe(p, dry_run=True)
    # with one complete run kept, r2 goes too; with more than there are, nothing does
    assert doomed_ids(s.plan(keep=1)) == doomed_ids(p) | {d2[k] for k in ("examples", "graph", "transformed", "model")}
    assert doomed_ids(s.plan(keep=4)) == set()


def test_what_a_kept_run_read_is_kept_whoever_wrote_it(tmp_path):
    s = Store(tmp_path)
    d1, d2 = s.day("r1", 1), s.day("r2", 2)
    s.run("r3")  # the same day again: every component served from the cache records r2's outputs
    s.execute("r3", "CsvExampleGen", state=CACHED, reuse=[d2["examples"]])
    s.execute("r3", "Trainer", state=CACHED, reuse=[d2["model"]])
    d4 = s.day("r4", 3, window=[d1["examples"]])  # a window reaching back to span 1
    p = s.plan(keep=2)
    assert [r.run_id for r in p.kept] == ["r4", "r3"]
    assert d2["model"] not in doomed_ids(p) and d2["examples"] not in doomed_ids(p)  # r3 used them
    assert d1["examples"] not in doomed_ids(p)  # r4 read it
    assert d1["model"] in doomed_ids(p) and d2["graph"] in doomed_ids(p)
    assert not doomed_ids(p) & set(d4.values())


def test_the_newest_spans_of_the_window_are_kept_for_the_next_run(tmp_path):
    s = Store(tmp_path)
    days = [s.day(f"r{i}", i) for i in (1, 2, 3, 4)]
    assert days[2]["examples"] in doomed_ids(s.plan(keep=1, window=1))
    p = s.plan(keep=1, window=3)  # the next run trains on spans 2-4: their examples stay
    assert p.kept_spans == [2, 3, 4]
    assert {days[1]["examples"], days[2]["examples"]}.isdisjoint(doomed_ids(p))
    assert days[0]["examples"] in doomed_ids(p) and days[2]["model"] in doomed_ids(p)
    assert "and the examples of span(s) 2, 3, 4" in retention.describe(p)


def test_data_without_spans_keeps_only_the_newest_ingestion(tmp_path):
    s = Store(tmp_path)
    d1, d2, d3 = (s.day(f"r{i}", 0) for i in (1, 2, 3))
    p = s.plan(keep=1)
    assert d1["examples"] in doomed_ids(p) and d2["examples"] in doomed_ids(p)
    assert p.kept_spans == [0] and "span" not in retention.describe(p)


def test_unfinished_runs_and_foreign_paths_are_never_touched(tmp_path):
    s = Store(tmp_path)
    s.run("r0")  # a run whose Trainer never finished, older than the kept ones
    [stuck] = s.execute("r0", "Trainer", state=RUNNING, outputs=[("Model", None)])
    d1, _ = s.day("r1", 1), s.day("r2", 2)
    # an artifact outside the pipeline root (a model someone pointed the store at) is never deleted
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    a = s.store.get_artifacts_by_id([d1["model"]])[0]
    a.uri = str(outside)
    s.store.put_artifacts([a])
    assert stuck in doomed_ids(s.plan(keep=1))  # SQLite: the caller holds the run lock, so r0 is dead
    p = s.plan(keep=1, runs_may_be_going=True)  # a shared MySQL store: r0 may be someone's live run
    assert stuck not in doomed_ids(p) and "r0" in [r.run_id for r in p.kept]
    assert d1["model"] not in doomed_ids(p) and d1["graph"] in doomed_ids(p)
    with pytest.raises(ValueError, match="keep_runs must be >= 1"):
        s.plan(keep=0)


def test_collect_deletes_marks_and_tfx_cache_no_longer_serves_it(tmp_path, monkeypatch):
    from tfx.orchestration import metadata
    from tfx.orchestration.portable import cache_utils

    s = Store(tmp_path)
    d1, _ = s.day("r1", 1), s.day("r2", 2)
    transform_r1 = sorted(e.id for e in s.store.get_executions_by_context(s.runs["r1"]))[2]
    # the cache key TFX registered for r1's Transform (an execution_cache context)
    cache_type = s.store.put_context_type(pb.ContextType(name="execution_cache"))
    [cache_id] = s.store.put_contexts([pb.Context(type_id=cache_type, name="transform-key")])
    s.store.put_attributions_and_associations([], [pb.Association(context_id=cache_id, execution_id=transform_r1)])
    cache_key = s.store.get_contexts_by_id([cache_id])[0]
    with metadata.Metadata(s.config) as handle:
        assert cache_utils.get_cached_outputs(handle, cache_key) is not None
    # one directory cannot be removed (an I/O error; CI runs as root, which permissions do not
    # stop): it stays marked, and the next collection takes it again
    stubborn = s.store.get_artifacts_by_id([d1["model"]])[0].uri
    rmtree = retention.shutil.rmtree

    def failing_rmtree(path):
        if path == stubborn:
            raise PermissionError(13, "Permission denied", path)
        rmtree(path)

    monkeypatch.setattr(retention.shutil, "rmtree", failing_rmtree)
    errors = retention.collect(s.store, s.plan(keep=1))
    monkeypatch.undo()
    assert errors == [f"{stubborn}: Permission denied"]
    assert s.state(d1["model"]) == MARKED and os.path.isdir(stubborn)
    for key in ("examples", "graph", "transformed"):
        assert s.state(d1[key]) == DELETED
        assert not os.path.exists(s.store.get_artifacts_by_id([d1[key]])[0].uri)
    assert s.state(d1["stats"]) == LIVE
    with metadata.Metadata(s.config) as handle:  # TFX's cache: a collected execution is a miss
        assert cache_utils.get_cached_outputs(handle, cache_key) is None
    again = s.plan(keep=1)
    assert doomed_ids(again) == {d1["model"]}
    assert retention.collect(s.store, again) == [] and s.state(d1["model"]) == DELETED
    assert s.plan(keep=1).doomed == []


def test_an_artifact_a_going_run_takes_during_the_collection_is_kept(tmp_path, monkeypatch):
    """A shared store: a run going meanwhile reads r1's model as LIVE (a cache hit) just before
    the marking and records its cached execution while the collection waits: the model goes
    back to LIVE and stays on disk; the rest of r1 goes."""
    s = Store(tmp_path)
    d1, _ = s.day("r1", 1), s.day("r2", 2)
    p = s.plan(keep=1, runs_may_be_going=True)
    assert d1["model"] in doomed_ids(p)
    s.run("r3")
    waits = []

    def a_run_publishes_its_cache_hit(seconds):
        waits.append(seconds)
        assert s.state(d1["model"]) == MARKED  # marked before the wait
        s.execute("r3", "Trainer", state=CACHED, reuse=[d1["model"]])

    monkeypatch.setattr(retention.time, "sleep", a_run_publishes_its_cache_hit)
    assert retention.collect(s.store, p) == []
    assert waits == [retention.SETTLE_S]
    model = s.store.get_artifacts_by_id([d1["model"]])[0]
    assert model.state == LIVE and os.path.isdir(model.uri)
    assert [d.artifact.id for d in p.spared] == [d1["model"]] and d1["model"] not in doomed_ids(p)
    for key in ("examples", "graph", "transformed"):
        assert s.state(d1[key]) == DELETED
    assert "deleted 3 artifact(s)" in retention.describe(p)
    assert "kept 1 artifact(s) a run took during the collection" in retention.describe(p)
    # a SQLite store (the caller holds the run lock): no wait, the same look again
    (tmp_path / "locked").mkdir()
    q = Store(tmp_path / "locked")
    q.day("r1", 1), q.day("r2", 2)
    waits.clear()
    assert retention.collect(q.store, q.plan(keep=1)) == [] and waits == []


def test_gc_command_errors_are_one_line(tmp_path, capsys):
    out = ["--output", str(tmp_path / "nothing")]
    assert cli.main(["gc", *out], stream=io.StringIO()) == cli.EXIT_BAD_INPUT
    assert "say how many runs to keep: --keep-runs N, or retention.keep_runs" in capsys.readouterr().err
    assert cli.main(["gc", "--keep-runs", "0", *out], stream=io.StringIO()) == cli.EXIT_BAD_INPUT
    assert "--keep-runs must be >= 1, got 0" in capsys.readouterr().err
    assert cli.main(["gc", "--keep-runs", "2", *out], stream=io.StringIO()) == cli.EXIT_BAD_INPUT
    assert "no metadata store at" in capsys.readouterr().err
    assert cli.main(["gc", "--set", "retention.keep_runs=-1", *out], stream=io.StringIO()) == cli.EXIT_BAD_INPUT
    assert "bad config value for retention.keep_runs: -1; must be >= 0" in capsys.readouterr().err
