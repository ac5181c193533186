"""Daily spans, end to end on LocalDagRunner: span directories written by the test, one run a
day (the first one a backfill: --span picks an older span). The newest span is ingested once
(a re-run is served from the cache), a window trains on the newest N ingested spans (TFX's
rolling range), each run records the spans it read, and a span that drifted from the previous
one stops before Transform."""
import contextlib
import io
import json
import os
import re

import pytest

from tfxline.serving import push as serving_push
from tfxline.cli import main as cli
from tfxline.local import runner as local_runner
from tfxline.pipeline.data.source import DataError
from tfxline.runs.history import list_runs
from tfxline.runs.console import format_summary
from tfxline.runs.summary import collect_run
from tests.conftest import e2e_config, write_taxi_slice

pytestmark = [pytest.mark.e2e, pytest.mark.one_stack(
    "1.21", why="a week of spans is our own day logic over the pipeline; its pipeline paths run on both stacks in test_e2e.py and test_window_splits.py")]
PATTERN = "span-{SPAN}/*.csv"


def write_span(root, span, mutate=None):
    # different rows each day (every 5th row from another offset), the same distribution
    return write_taxi_slice(root / f"span-{span}" / "data.csv", offset=span - 1, mutate=mutate)


def run(cfg, span=None):
    """The run's summary, and its console output: progress, then the end-of-run summary."""
    out = io.StringIO()
    summary = local_runner.run(cfg, stream=out, span=span)
    return summary, out.getvalue() + format_summary(summary)


def states(summary):
    return {c.node_id: c.state for c in summary.components}


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    data, output = tmp_path_factory.mktemp("spans"), tmp_path_factory.mktemp("spans-out")
    return data, output, e2e_config(data, output, f"data.pattern={PATTERN}")


def test_a_day_at_a_time(days):
    data, output, cfg = days
    with pytest.raises(DataError, match=r"holds no span matching data.pattern 'span-\{SPAN\}/\*.csv'"):
        local_runner.resolve_inputs(cfg)  # nothing landed yet: the pre-flight check says so

    # Day 1, run late: spans 1 and 2 have landed, the backfill (--span 1) ingests span 1 as its
    # day would have (nothing to compare with; blessed on the value thresholds and pushed).
    write_span(data, 1)
    write_span(data, 2)
    first, text = run(cfg, span=1)
    assert first.spans == [1] and "  data: span 1" in text and "(span 1 from --span); log: " in text
    assert first.drift == "nothing to compare with: nothing serving yet"
    assert first.pushed, text
    pushed = serving_push.read_metadata(cfg.serving_dir, serving_push.versions(cfg.serving_dir)[-1])
    assert pushed["data"]["spans"] == [1] and pushed["data"]["span"] == 1

    # Day 2: the newest span only, compared with the previous span (which the serving model
    # was trained on: one comparison, not two of the same statistics).
    second, text = run(cfg)
    assert second.spans == [2] and states(second)["CsvExampleGen"] == "complete"
    assert second.drift == "the previous span (span 1)" and "drift: none vs the previous span (span 1)" in text
    ledger = json.loads((output / "pipeline_root" / "spans" / "2.json").read_text())
    assert ledger["span"] == 2 and ledger["pipeline_run_id"] == second.run_id

    # The same day again: nothing new to ingest, the whole run comes from the cache.
    again, text = run(cfg)
    assert again.spans == [2] and again.run_id != second.run_id
    assert set(states(again).values()) == {"cached"}, states(again)

    # A window of two days: Transform and the Trainer read spans 1 and 2 (the ingested ones),
    # the data checks and the Evaluator today's span; ExampleGen itself is cached.
    window = e2e_config(data, output, f"data.pattern={PATTERN}", "data.spans={window: 2}")
    both, text = run(window)
    assert both.spans == [1, 2] and "  data: spans 1, 2" in text
    assert "(span 2, training on the newest 2 spans)" in text
    assert states(both)["CsvExampleGen"] == "cached" and states(both)["Transform"] == "complete"
    assert states(both)["SpanWindow"] in ("complete", "cached")
    if both.pushed:
        pushed = serving_push.read_metadata(cfg.serving_dir, serving_push.versions(cfg.serving_dir)[-1])
        assert pushed["data"]["spans"] == [1, 2]
    rows = {r.run_id: r for r in list_runs(cfg.metadata_store, cfg.name)}
    assert rows[both.run_id].spans == "1,2" and rows[first.run_id].spans == "1"

    # Day 3 = day 2 with fare x 50: stopped before Transform, the previous span named.
    write_span(data, 3, mutate=lambda row: dict(row, fare=str(float(row["fare"] or 0) * 50)))
    versions = serving_push.versions(cfg.serving_dir)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(["run", "--data", str(data), "--output", str(output), "--set", f"data.pattern={PATTERN}",
                         "--train-steps", "10"], stream=io.StringIO())
    assert code == cli.EXIT_FAILED
    errors = [line for line in err.getvalue().splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "the data of span 3 drifted" in errors[0], errors
    assert re.search(r"fare: Jensen-Shannon divergence 0\.\d+ vs the previous span \(span 2\) > 0\.2", errors[0])
    stopped = collect_run(cfg.metadata_store, cfg.name)
    assert stopped.spans == [3] and "Transform" not in states(stopped)
    assert serving_push.versions(cfg.serving_dir) == versions  # nothing pushed


def test_retention_after_the_week(days):
    """tfxline gc on the week above, then a run that collects after itself: the bulky
    artifacts of old runs go, what the kept runs and the next window read stays, the history
    still reads every run, and the pipeline runs on (TFX sees only the live artifacts)."""
    data, output, cfg = days
    week = [r.run_id for r in list_runs(cfg.metadata_store, cfg.name)][::-1]
    assert len(week) == 5, "run the whole module: this test collects the runs of test_a_day_at_a_time"
    first, second, _, both, stopped = (collect_run(cfg.metadata_store, cfg.name, r) for r in week)
    history = {r.run_id: (r.metric, r.blessed) for r in list_runs(cfg.metadata_store, cfg.name)}
    args = ["gc", "--data", str(data), "--output", str(output), "--set", f"data.pattern={PATTERN}", "--keep-runs", "1"]

    out = io.StringIO()
    assert cli.main(args + ["--dry-run"], stream=out) == cli.EXIT_OK
    text = out.getvalue()
    assert re.search(r"retention: would delete \d+ artifact\(s\), [\d.]+ [KM]B, of 2 older run\(s\); kept the "
                     r"newest 1 complete run\(s\) and the runs since \(2 run\(s\)\)", text), text
    assert first.model_uri in text and second.model_uri in text and both.model_uri not in text
    assert os.path.isdir(first.model_uri)  # a dry run deletes nothing

    out = io.StringIO()
    assert cli.main(args, stream=out) == cli.EXIT_OK
    assert "retention: deleted" in out.getvalue(), out.getvalue()

    def uris(summary, node, key):
        return summary.component(node).outputs.get(key, [])

    for old in (first, second):
        assert not os.path.exists(old.model_uri)
        assert not any(map(os.path.exists, uris(old, "Transform", "transform_graph")))
        assert all(map(os.path.isdir, uris(old, "StatisticsGen", "statistics")))  # small: kept
    # what the kept window run read and wrote, and every span's examples (read by a kept run, or the newest)
    assert os.path.isdir(both.model_uri) and all(map(os.path.isdir, uris(both, "Transform", "transform_graph")))
    for summary in (first, second, stopped):
        assert all(map(os.path.isdir, uris(summary, "CsvExampleGen", "examples")))
    # the history reads every run as before (evaluations and MLMD properties are kept)
    assert {r.run_id: (r.metric, r.blessed) for r in list_runs(cfg.metadata_store, cfg.name)} == history
    assert second.baseline_version and collect_run(
        cfg.metadata_store, cfg.name, second.run_id).baseline_version == second.baseline_version
    # a collected run's report from when it ran is kept; without it, a reduced one says what went
    first_dir = os.path.join(cfg.output_root, "runs", first.run_id)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert cli.main(["report", first_dir], stream=io.StringIO()) == cli.EXIT_BAD_INPUT
    assert f"artifact(s) of run {first.run_id} (tfxline gc); its report from when it ran" in err.getvalue()
    os.remove(os.path.join(first_dir, "report.html"))
    assert cli.main(["report", first_dir], stream=io.StringIO()) == cli.EXIT_OK
    with open(os.path.join(first_dir, "report.html")) as f:
        page = f.read()
    assert "Deleted by retention" in page and "(deleted by retention)" in page

    # The next day's run on the newest window, collecting after itself: SpanWindow and the
    # cache see only live artifacts, so it recomputes what it needs; then span 1 (out of the
    # window, read by no kept run) and the week's models go.
    window = e2e_config(data, output, f"data.pattern={PATTERN}", "data.spans={window: 2}", "drift.enabled=false",
                        "retention.keep_runs=1")
    after, text = run(window)
    assert after.spans == [2, 3] and states(after)["Transform"] == "complete", states(after)
    assert re.search(r"retention: deleted \d+ artifact\(s\), .* of 2 older run\(s\); kept the newest 1 complete "
                     r"run\(s\) and the runs since \(1 run\(s\)\) and the examples of span\(s\) 2, 3", text), text
    assert os.path.isdir(after.model_uri) and not os.path.exists(both.model_uri)
    assert not any(map(os.path.exists, uris(first, "CsvExampleGen", "examples")))
    for summary in (second, stopped):
        assert all(map(os.path.isdir, uris(summary, "CsvExampleGen", "examples")))
