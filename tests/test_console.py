"""The end-of-run summary (runs/console.py) of runs whose components MLMD's cache served,
read from a real MLMD SQLite store laid out as LocalDagRunner records a cache hit: the cached
execution's outputs are the artifacts an earlier execution made. The counts add up, and a
cached DriftGate, ServingBaseline or Pusher says whose result it shows, not what it would
find now."""
from ml_metadata import metadata_store
from ml_metadata.proto import metadata_store_pb2 as pb

from tfxline.runs.console import format_summary
from tfxline.runs.summary import collect_run

COMPLETE, CACHED = pb.Execution.COMPLETE, pb.Execution.CACHED


class Runs:
    """Runs of a three-component pipeline (DriftGate, ServingBaseline, Evaluator, Pusher) in a
    real MLMD store: each component runs (new output artifact) or is served from cache (the
    output of the execution it reuses)."""

    def __init__(self, tmp_path):
        config = pb.ConnectionConfig()
        config.sqlite.filename_uri = self.path = str(tmp_path / "metadata.sqlite")
        config.sqlite.connection_mode = pb.SqliteMetadataSourceConfig.READWRITE_OPENCREATE
        self.store = metadata_store.MetadataStore(config)
        self.ctx_types = {n: self.store.put_context_type(pb.ContextType(name=n))
                          for n in ("pipeline", "pipeline_run", "node")}
        self.exec_type = self.store.put_execution_type(pb.ExecutionType(name="tfx.Component"))
        self.art_type = self.store.put_artifact_type(pb.ArtifactType(name="Artifact"))
        self.pipeline = self._context("pipeline", "taxi")
        self.nodes, self.clock = {}, 0

    def _context(self, kind, name, **kw):
        [cid] = self.store.put_contexts([pb.Context(type_id=self.ctx_types[kind], name=name, **kw)])
        return cid

    def execute(self, run, node, key, reuse=None, **properties):
        """``node`` in ``run``: writes a new ``key`` artifact with ``properties``, or, served from
        cache, records the artifact ``reuse`` as its output. Returns the artifact's id."""
        self.clock += 1
        if reuse is None:
            artifact = pb.Artifact(type_id=self.art_type, uri=f"/root/{node}/{key}/{self.clock}", state=pb.Artifact.LIVE)
            for name, value in properties.items():
                if isinstance(value, int):
                    artifact.custom_properties[name].int_value = value
                else:
                    artifact.custom_properties[name].string_value = value
            [reuse] = self.store.put_artifacts([artifact])
        state = COMPLETE if not self.store.get_events_by_artifact_ids([reuse]) else CACHED
        [eid] = self.store.put_executions([pb.Execution(type_id=self.exec_type, last_known_state=state,
                                                        create_time_since_epoch=self.clock)])
        event = pb.Event(artifact_id=reuse, execution_id=eid, type=pb.Event.OUTPUT)
        event.path.steps.add().key = key
        event.path.steps.add().index = 0
        self.store.put_events([event])
        if node not in self.nodes:
            self.nodes[node] = self._context("node", f"taxi.{node}")
        self.store.put_attributions_and_associations(
            [], [pb.Association(context_id=c, execution_id=eid) for c in (self.pipeline, run, self.nodes[node])])
        return reuse

    def run(self, run_id, drift=None, baseline=None, evaluator=None, pusher=None, serving_version=""):
        """One run; each argument None: that component runs, else the artifact id it reuses."""
        self.clock += 1
        run = self._context("pipeline_run", run_id, create_time_since_epoch=self.clock)
        ids = {"drift": self.execute(run, "DriftGate", "drift_anomalies", drift,
                                     compared_with="nothing to compare with: nothing serving yet"),
               "baseline": self.execute(run, "ServingBaseline", "baseline_model", baseline,
                                        serving_version=serving_version),
               "evaluator": self.execute(run, "Evaluator", "blessing", evaluator, blessed=1),
               "pusher": self.execute(run, "Pusher", "pushed_model", pusher, pushed=1,
                                      pushed_destination="/serving/taxi/100")}
        return ids, format_summary(collect_run(self.path, "taxi", run_id)).splitlines()


def line(lines, start):
    return next(l for l in lines if l.startswith(start))


def test_a_run_served_from_cache_counts_each_component_once_and_says_whose_results_it_shows(tmp_path):
    runs = Runs(tmp_path)
    first, lines = runs.run("r1")
    assert line(lines, "  components:").startswith("  components: 4 ran, 0 served from cache;")
    assert line(lines, "  drift:") == "  drift: nothing to compare with: nothing serving yet"
    assert line(lines, "  baseline:") == "  baseline: none (nothing serving yet): judged on the value thresholds"
    assert line(lines, "  pushed to:") == "  pushed to: /serving/taxi/100"

    # Unchanged data, a new model: the DriftGate is served from cache; the baseline is resolved
    # again (version 100 serves now). The drift line must not claim that nothing serves.
    second, lines = runs.run("r2", drift=first["drift"], serving_version="100")
    assert line(lines, "  components:").startswith("  components: 3 ran, 1 served from cache;")
    assert line(lines, "  drift:") == ("  drift: as checked in run r1 (DriftGate served from cache): "
                                       "nothing to compare with: nothing serving yet")
    assert line(lines, "  baseline:") == "  baseline: serving version 100"

    # Everything from the cache: nothing ran, nothing was pushed again; each reused result names
    # the run that made it (r1's DriftGate result, reused by r2 too, is still r1's).
    _, lines = runs.run("r3", **second)
    assert line(lines, "  components:").startswith("  components: 0 ran, 4 served from cache;")
    assert line(lines, "  drift:").startswith("  drift: as checked in run r1 (DriftGate served from cache): ")
    assert line(lines, "  baseline:") == "  baseline: as resolved in run r2 (served from cache): serving version 100"
    assert line(lines, "  pushed to:") == ("  pushed to: /serving/taxi/100 by run r2 "
                                           "(Pusher served from cache: nothing new pushed)")


def progress_of(*messages):
    """(the console, the ProgressHandler) after ``messages`` were logged through it, as LocalDagRunner's are."""
    import io
    import logging

    from tfxline.local.process import ProgressHandler

    out = io.StringIO()
    handler = ProgressHandler(out)
    log = logging.getLogger("tfx.test.progress")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        for message in messages:
            log.info(message)
    finally:
        log.removeHandler(handler)
    return out, handler


def test_a_failed_component_is_marked_on_the_console():
    """The run's progress lines end with the component that failed, not its '[ start ]' alone."""
    out, handler = progress_of("Component CsvExampleGen is running.", "Component CsvExampleGen is finished.",
                               "Component Evaluator is running.")
    handler.failed()  # what the local runner calls when the run raises
    lines = out.getvalue().splitlines()
    assert lines[0] == "[ start ] CsvExampleGen" and lines[1].startswith("[ done  ] CsvExampleGen")
    assert lines[2] == "[ start ] Evaluator" and lines[3].startswith("[failed ] Evaluator (")
    assert len(lines) == 4


def test_the_task_of_a_run_is_read_from_any_custom_config():
    """#52: TFX's own taxi example records custom_config as JSON null (its Trainer has none):
    reading such a run (bench/e2e.py summarises one) says no task instead of crashing."""
    from tfxline.runs.summary import _task_of

    def execution(custom_config):
        e = pb.Execution()
        e.custom_properties["custom_config"].string_value = custom_config
        return e

    assert _task_of(execution("null")) == "" and _task_of(execution("[]")) == "" and _task_of(execution("{}")) == ""
    assert _task_of(execution('{"features": null}')) == ""
    assert _task_of(pb.Execution()) == ""
