"""A tuned run where a user looks, on literal records (no pipeline run): the end-of-run summary
(runs/console.py), the `tfxline runs` table (runs/history.py) and the report's Tuning section
(runs/report/tuning.py and its template); and the summary reading a Tuner's record, a Tuner
served from cache and a ReusedHyperparameters Importer from a real MLMD store laid out as
LocalDagRunner records them (tests/test_console.Runs)."""
import json
import re

from ml_metadata.proto import metadata_store_pb2 as pb

from tests.test_console import Runs, line
from tests.test_report_render import failed_early_run, section_of
from tfxline.runs import history, tuning
from tfxline.runs.console import format_summary, tuning_lines
from tfxline.runs.report import render
from tfxline.runs.report.tuning import tuning_section
from tfxline.runs.summary import ComponentRun, RunSummary, collect_run
from tfxline.trainer.tuning_settings import TUNING_RUN_FILE

VALUES = [{"learning_rate": 0.0052889, "hidden_layers": 1, "dropout": 0.0, "batch_norm": True},
          {"learning_rate": 0.00064, "hidden_layers": 2, "dropout": 0.3, "batch_norm": False},
          {"learning_rate": 0.0176, "hidden_layers": 1, "dropout": 0.1, "batch_norm": False}]


def record(ended_by="max_trials", failed=()):
    """A Tuner's tuning_run.json (trainer/tuning_settings.tuning_record's keys): trial 2 is the best."""
    trials = [{"trial": str(i), "score": score, "epochs": epochs, "best_epoch": epochs - 1, "seconds": seconds,
               "values": VALUES[i]}
              for i, (score, epochs, seconds) in enumerate([(0.9412, 4, 4.9), (0.9388, 10, 6.7), (0.9541, 3, 4.0)])]
    return {"algorithm": "bayesian", "objective": "val_auc", "direction": "max", "max_trials": 3, "max_minutes": 10.0,
            "seconds": 15.7, "ended_by": ended_by, "trials": trials, "failed": list(failed), "best": trials[2]}


BEST = "/root/Tuner/best_hyperparameters/8/best_hyperparameters.txt"


def summary(tuner_state="complete", cached_from="", **tuning_keys):
    """A run whose Tuner ended in ``tuner_state`` (None: no Tuner), its summary's ``tuning`` from ``tuning_keys``."""
    components = [ComponentRun("Transform", "complete", 1.0)]
    if tuner_state:
        components.append(ComponentRun(tuning.TUNER_ID, tuner_state, 15.7, cached_from=cached_from))
    components.append(ComponentRun("Trainer", "complete", 9.0))
    return RunSummary(run_id="r2", components=components, tuning=dict(tuning_keys))


def tuned(**kw):
    return summary(how=tuning.TUNED, record=record(), hyperparameters=BEST, values=VALUES[2], **kw)


def test_the_console_says_how_the_trainer_got_its_hyperparameters():
    assert tuning_lines(tuned()) == [
        "  tuning: 3 trials in 16s, best val_auc 0.9541: learning_rate=0.0176 hidden_layers=1 dropout=0.1 "
        "batch_norm=False",
        f"  best hyperparameters: {BEST}"]
    cached = tuning_lines(summary("cached", "r1", how=tuning.TUNED, record=record(), hyperparameters=BEST,
                                  values=VALUES[2]))
    assert cached[0] == ("  tuning: as searched in run r1 (Tuner served from cache): 3 trials in 16s, best val_auc "
                         "0.9541: learning_rate=0.0176 hidden_layers=1 dropout=0.1 batch_norm=False")
    over = tuning_lines(summary(how=tuning.TUNED, record=record("max_minutes"), hyperparameters=BEST, values={}))
    assert over[0].startswith("  tuning: 3 trials in 16s (the max_minutes budget ended it), best val_auc 0.9541")
    lost = tuning_lines(summary(how=tuning.TUNED, record={}, hyperparameters=BEST, values=VALUES[0]))
    assert lost[0] == (f"  tuning: its record ({TUNING_RUN_FILE}) is missing; best values learning_rate=0.00529 "
                       "hidden_layers=1 dropout=0 batch_norm=True")

    reused = summary(None, how=tuning.REUSED, record=record(), hyperparameters="/hp/best_hyperparameters.txt",
                     values=VALUES[2], tuned_in="r1")
    assert tuning_lines(reused) == [
        "  tuning: not searched: reused the best values of run r1's search (tuning.reuse): learning_rate=0.0176 "
        "hidden_layers=1 dropout=0.1 batch_norm=False",
        "  best hyperparameters: /hp/best_hyperparameters.txt"]
    from_file = summary(None, how=tuning.REUSED, record={}, hyperparameters="/hp/x.txt", values=VALUES[0], tuned_in="")
    assert tuning_lines(from_file)[0].startswith("  tuning: not searched: reused saved values (tuning.reuse): "
                                                 "learning_rate=0.00529")

    # untuned, or a Tuner that did not finish (the failure lines name it): no tuning line
    assert tuning_lines(summary(None)) == []
    assert tuning_lines(summary("failed", how=tuning.TUNED, record={}, hyperparameters="", values={})) == []
    text = format_summary(tuned()).splitlines()
    assert text.index(line(text, "  tuning: ")) == 2  # after the components line, before what training did
    assert not [t for t in format_summary(summary(None)).splitlines() if "tuning" in t]


def test_the_runs_table_has_a_tuned_column():
    assert history.tuned_marker(tuned()) == "3 trials"
    assert history.tuned_marker(summary("cached", "r1", how=tuning.TUNED, record=record())) == "cached"
    assert history.tuned_marker(summary(None, how=tuning.REUSED, record={}, values={})) == "reused"
    assert history.tuned_marker(summary("failed", how=tuning.TUNED, record={})) == "failed"
    assert history.tuned_marker(summary(None)) == "-"
    one = record()
    one["trials"] = one["trials"][:1]
    assert history.tuned_marker(summary(how=tuning.TUNED, record=one)) == "1 trial"

    rows = [history.row_of(s) for s in (tuned(), summary(None))]
    header, first, second = history.format_table(rows).splitlines()
    assert header.split() == ["run", "started", "spans", "status", "tuned", "metric", "pushed", "blessed"]
    column = header.index("tuned")
    assert first[column:].startswith("3 trials  ") and second[column:].startswith("-  ")


def test_the_report_shows_the_search_with_the_chosen_trial_marked():
    section = tuning_section(tuned())
    assert section["available"] and section["searched"] and not section["reused"]
    assert [t["chosen"] for t in section["trials"]] == [False, False, True]
    assert section["keys"] == ["learning_rate", "hidden_layers", "dropout", "batch_norm"]
    assert section["ended"] == "max_trials: 3 of 3 trials finished" and section["better"] == "higher is better"
    assert section["budget"] == "3 trials, 10 minutes"

    data = dict(failed_early_run(), tuning=section)
    page = render.render(data)
    html = section_of(page, "tuning")
    assert html == section_of(render.fragment(data, ["tuning"]), "tuning")
    assert '<a href="#tuning">' in page
    assert page.index('<section id="data">') < page.index('<section id="tuning">') < page.index('<section id="training">')
    rows = re.findall(r"<tr( class=\"chosen\")? data-trial=\"(\d)\">", html)
    assert rows == [("", "0"), ("", "1"), (' class="chosen"', "2")]
    assert "The Tuner searched in this run" in html and "bayesian" in html and "val_<wbr>auc" in html
    assert "max_trials: 3 of 3 trials finished" in html and "0.9541" in html and BEST in html
    assert "Failed trials" not in html

    # a search the budget ended, with failed trials; served from cache
    cut = summary("cached", "r1", how=tuning.TUNED, record=record("max_minutes", ["trial 3: ValueError: <nan> loss"]),
                  hyperparameters=BEST, values=VALUES[2])
    html = section_of(render.render(dict(failed_early_run(), tuning=tuning_section(cut))), "tuning")
    assert "served from cache: the search below ran in run r1" in html
    assert "the max_minutes budget (10 minutes) ran out after 3 finished trials" in html
    assert "Failed trials" in html and "trial 3: ValueError: &lt;nan&gt; loss" in html


def test_the_report_of_a_reused_or_untuned_run():
    reused = summary(None, how=tuning.REUSED, record={}, hyperparameters="/hp/best_hyperparameters.txt",
                     values=VALUES[0], tuned_in="")
    html = section_of(render.render(dict(failed_early_run(), tuning=tuning_section(reused))), "tuning")
    assert "tuning.reuse fed the Trainer saved values" in html and "Read from" in html
    assert "No record of the search" in html and "<th>trial</th>" not in html and "0.005289" in html

    for untuned in (summary(None), summary("failed", how=tuning.TUNED, record={})):
        assert tuning_section(untuned) == {"available": False}
        page = render.render(dict(failed_early_run(), tuning=tuning_section(untuned)))
        assert 'id="tuning"' not in page and "#tuning" not in page
    assert 'id="tuning"' not in render.render(failed_early_run())  # a report.json from before tuning


class TunedRuns(Runs):
    """Runs of a Tuner (or an Importer of its values) and a Trainer in a real MLMD store, the
    Tuner's files under ``root``."""

    def __init__(self, tmp_path):
        super().__init__(tmp_path)
        self.root = tmp_path / "pipeline_root"

    def output(self, node, key, eid, uri=None, reuse=None):
        """Records ``key`` as an output of execution ``eid``: a new artifact at ``uri`` (its files
        written by the caller), or the artifact ``reuse``, or an artifact already at ``uri``."""
        if reuse is None and uri is not None:
            found = self.store.get_artifacts_by_uri(str(uri))
            reuse = found[0].id if found else None
        if reuse is None:
            [reuse] = self.store.put_artifacts([pb.Artifact(type_id=self.art_type, uri=str(uri), state=pb.Artifact.LIVE)])
        event = pb.Event(artifact_id=reuse, execution_id=eid, type=pb.Event.OUTPUT)
        event.path.steps.add().key = key
        event.path.steps.add().index = 0
        self.store.put_events([event])
        return reuse

    def node(self, run, node, state):
        self.clock += 1
        [eid] = self.store.put_executions([pb.Execution(type_id=self.exec_type, last_known_state=state,
                                                        create_time_since_epoch=self.clock)])
        if node not in self.nodes:
            self.nodes[node] = self._context("node", f"taxi.{node}")
        self.store.put_attributions_and_associations(
            [], [pb.Association(context_id=c, execution_id=eid) for c in (self.pipeline, run, self.nodes[node])])
        return eid

    def tuned_run(self, run_id, cached=None, reuse_uri=None):
        """A run whose Tuner searches (writing its record and best values), is served from cache
        (``cached``: the first run's artifact ids) or, with ``reuse_uri``, an Importer of that folder."""
        self.clock += 1
        run = self._context("pipeline_run", run_id, create_time_since_epoch=self.clock)
        ids = {}
        if reuse_uri is not None:
            eid = self.node(run, tuning.REUSED_ID, pb.Execution.COMPLETE)
            ids["result"] = self.output(tuning.REUSED_ID, "result", eid, uri=reuse_uri)
        else:
            eid = self.node(run, tuning.TUNER_ID, pb.Execution.CACHED if cached else pb.Execution.COMPLETE)
            for key, folder, name, content in (("best_hyperparameters", "best_hyperparameters", tuning.BEST_FILE,
                                                {"space": [], "values": VALUES[2]}),
                                               ("tuner_results", "tuner_results", TUNING_RUN_FILE, record())):
                uri = self.root / "Tuner" / folder / str(eid)
                if not cached:
                    uri.mkdir(parents=True)
                    (uri / name).write_text(json.dumps(content))
                ids[key] = self.output(tuning.TUNER_ID, key, eid, uri=None if cached else uri,
                                       reuse=cached[key] if cached else None)
        self.node(run, "Trainer", pb.Execution.COMPLETE)
        return ids, collect_run(self.path, "taxi", run_id)


def test_the_summary_reads_a_search_a_cached_search_and_reused_values_from_mlmd(tmp_path):
    runs = TunedRuns(tmp_path)
    first, s1 = runs.tuned_run("r1")
    best = str(runs.root / "Tuner" / "best_hyperparameters")
    assert s1.tuning["how"] == tuning.TUNED and s1.tuning["record"] == record()
    assert s1.tuning["values"] == VALUES[2] and s1.tuning["hyperparameters"].startswith(best)
    assert history.row_of(s1).tuned == "3 trials"
    assert line(format_summary(s1).splitlines(), "  tuning: ").startswith("  tuning: 3 trials in 16s, best val_auc")

    _, s2 = runs.tuned_run("r2", cached=first)
    assert s2.tuning["record"] == record() and history.row_of(s2).tuned == "cached"
    assert line(format_summary(s2).splitlines(), "  tuning: ").startswith(
        "  tuning: as searched in run r1 (Tuner served from cache): 3 trials")

    # tuning.reuse: latest imports the Tuner's own folder: the run whose Tuner chose the values is known
    tuner_folder = runs.store.get_artifacts_by_id([first["best_hyperparameters"]])[0].uri
    _, s3 = runs.tuned_run("r3", reuse_uri=tuner_folder)
    assert s3.tuning["how"] == tuning.REUSED and s3.tuning["tuned_in"] == "r1" and s3.tuning["record"] == record()
    assert history.row_of(s3).tuned == "reused"
    assert line(format_summary(s3).splitlines(), "  tuning: ").startswith(
        "  tuning: not searched: reused the best values of run r1's search (tuning.reuse): learning_rate=0.0176")
    assert "the best of run r1's search" in tuning_section(s3)["source"]

    # a saved file: copied into its own folder, which no Tuner wrote
    copy = tmp_path / "hyperparameters" / "abc"
    copy.mkdir(parents=True)
    (copy / tuning.BEST_FILE).write_text(json.dumps({"values": VALUES[0]}))
    _, s4 = runs.tuned_run("r4", reuse_uri=copy)
    assert s4.tuning["tuned_in"] == "" and s4.tuning["record"] == {} and s4.tuning["values"] == VALUES[0]
    assert line(format_summary(s4).splitlines(), "  tuning: ").startswith(
        "  tuning: not searched: reused saved values (tuning.reuse): learning_rate=0.00529")


def test_the_literals_name_what_the_pipeline_and_tfx_write():
    """runs/tuning.py names the nodes and the file without importing TFX (trainer/tuning_settings.py's
    constants): they are the pipeline's node ids and the file TFX's Tuner writes."""
    from tfx.components.tuner import executor as tfx_tuner

    from tfxline.pipeline import tuning as pipeline_tuning

    assert (tuning.TUNER_ID, tuning.REUSED_ID) == (pipeline_tuning.TUNER_ID, pipeline_tuning.REUSED_ID)
    assert tuning.BEST_FILE == tfx_tuner._DEFAULT_BEST_HP_FILE_NAME


def test_a_search_that_kept_the_configs_own_values():
    """No trial beat the config's own values by more than twice their noise: the console, the
    report's rule line and the chosen row (the baseline, 'config') say so."""
    kept = record()
    kept["baseline"] = {"trial": "config", "score": 0.9500, "epochs": 5, "best_epoch": 4, "seconds": 5.0,
                        "values": {}, "noise": 0.0125, "rows": 522}
    kept.update(kept_config=True, margin_se=2.0, best=kept["baseline"])
    run = summary(how=tuning.TUNED, record=kept, hyperparameters=BEST, values={})
    assert tuning_lines(run)[0] == (
        "  tuning: 3 trials in 16s: none beat the config's own values (val_auc 0.9500) by more than 2 x its noise "
        "(±0.0125 on 522 validation rows): the Trainer keeps them")
    assert history.tuned_marker(run) == "3 trials, kept"
    section = tuning_section(run)
    assert section["trials"][0]["trial"] == "config" and section["trials"][0]["chosen"]
    assert not any(t["chosen"] for t in section["trials"][1:])
    assert section["rule"].endswith("none did, and the Trainer kept the config's own values.")
    assert "by more than 2 x its noise (±0.0125 on 522 validation rows)" in section["rule"]
