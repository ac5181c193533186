"""Daily spans, end to end on LocalDagRunner: span directories written by the test, one run a
day. The newest span is ingested once (a re-run is served from the cache), a window trains on
the newest N ingested spans (TFX's rolling range), each run records the spans it read, and a
span that drifted from the previous one stops before Transform."""
import contextlib
import io
import json
import re

import pytest

from components import serving_push
from pipeline import cli, local_runner
from pipeline.data_source import DataError
from pipeline.history import list_runs
from pipeline.console import format_summary
from pipeline.summary import collect_run
from tests.conftest import e2e_config, write_taxi_slice

pytestmark = pytest.mark.e2e
PATTERN = "span-{SPAN}/*.csv"


def write_span(root, span, mutate=None):
    # different rows each day (every 5th row from another offset), the same distribution
    return write_taxi_slice(root / f"span-{span}" / "data.csv", offset=span - 1, mutate=mutate)


def run(cfg):
    """The run's summary, and its console output: progress, then the end-of-run summary."""
    out = io.StringIO()
    summary = local_runner.run(cfg, stream=out)
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

    # Day 1: the first span; nothing to compare with; blessed on the value thresholds and pushed.
    write_span(data, 1)
    first, text = run(cfg)
    assert first.spans == [1] and "  data: span 1" in text and "file(s) (span 1) from" in text
    assert first.drift == "nothing to compare with: nothing serving yet"
    assert first.pushed, text
    pushed = serving_push.read_metadata(cfg.serving_dir, serving_push.versions(cfg.serving_dir)[-1])
    assert pushed["data"]["spans"] == [1] and pushed["data"]["span"] == 1

    # Day 2: the newest span only, compared with the previous span (which the serving model
    # was trained on: one comparison, not two of the same statistics).
    write_span(data, 2)
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
