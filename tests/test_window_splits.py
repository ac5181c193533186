"""A window of spans after a change of the split config: the spans earlier runs ingested keep
their day's splits, so a window reaching back to a span without the split the Trainer now
validates on is refused before anything runs, with the span and the way out named (TFX would
fail inside Transform: 'Split does not exist over all example artifacts'). On a real MLMD
store laid out as TFX records ExampleGen's outputs (tests/test_retention.py's Store)."""
import contextlib
import io
import json

import pytest
from ml_metadata.proto import metadata_store_pb2 as pb

from tfxline.cli import main as cli
from tfxline.local import runner as local_runner
from tfxline.pipeline.config.load import load_config
from tfxline.pipeline.data.source import DataError
from tests.conftest import write_taxi_slice
from tests.test_retention import Store

OLD, NEW = ["train", "eval"], ["train", "validation", "eval"]
WINDOW = ["data.pattern=span-{SPAN}/*.csv", "data.spans=window:3"]


def ingested(tmp_path, splits_by_span):
    """Daily runs whose ExampleGen wrote each span with the given splits (TFX's Examples type
    declares split_names as a property)."""
    s = Store(tmp_path)
    s.art_types["Examples"] = s.store.put_artifact_type(
        pb.ArtifactType(name="Examples", properties={"split_names": pb.STRING}))
    for span, splits in splits_by_span.items():
        [a] = s.store.get_artifacts_by_id([s.day(f"r{span}", span)["examples"]])
        a.properties["split_names"].string_value = json.dumps(splits)
        s.store.put_artifacts([a])
    return s


def config(tmp_path, *extra):
    return load_config(overrides=[f"output_root={tmp_path}", *WINDOW, *extra])


def test_a_window_reaching_back_to_a_span_without_the_validation_split_is_refused(tmp_path):
    ingested(tmp_path, {1: OLD, 2: OLD})
    with pytest.raises(DataError) as e:
        local_runner.check_window_splits(config(tmp_path), span=3)
    message = str(e.value)
    assert message.startswith("span 1 was ingested with the splits train, eval, without validation")
    assert "use a new --output, or --set data.spans=latest for the next 2 span(s)" in message
    assert "\n" not in message


def test_spans_with_the_splits_needed_pass(tmp_path):
    ingested(tmp_path, {1: OLD, 2: NEW, 3: NEW})
    local_runner.check_window_splits(config(tmp_path), span=4)  # the window: 2, 3 and today's 4


def test_which_spans_and_which_splits_are_checked(tmp_path):
    ingested(tmp_path, {1: OLD, 2: NEW})
    with pytest.raises(DataError, match="span 1 was ingested"):  # today's 3 trains with 1 and 2
        local_runner.check_window_splits(config(tmp_path), span=3)
    local_runner.check_window_splits(config(tmp_path, "data.spans=window:2"), span=3)  # 2 only
    local_runner.check_window_splits(config(tmp_path, "data.validation_buckets=0"), span=3)  # train, eval
    local_runner.check_window_splits(config(tmp_path, "data.spans=latest", "data.pattern="), span=3)
    local_runner.check_window_splits(config(tmp_path / "fresh"), span=3)  # no store yet


def test_a_backfill_checks_the_window_the_resolver_will_take(tmp_path):
    """--span 2 after spans 1, 3 and 4: the newest 3 ingested with 2 are 2, 3 and 4 (span 1
    is out of the window, span 4 in it although newer than today's)."""
    ingested(tmp_path, {1: OLD, 3: NEW, 4: NEW})
    local_runner.check_window_splits(config(tmp_path), span=2)
    (tmp_path / "b").mkdir()
    ingested(tmp_path / "b", {1: NEW, 3: NEW, 4: OLD})
    with pytest.raises(DataError, match="span 4 was ingested"):
        local_runner.check_window_splits(config(tmp_path / "b"), span=2)


def test_the_run_stops_before_anything_with_exit_2(tmp_path):
    ingested(tmp_path, {1: OLD, 2: OLD})
    write_taxi_slice(tmp_path / "data" / "span-3" / "day.csv", limit=200)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli.main(["run", "--data", str(tmp_path / "data"), "--output", str(tmp_path),
                         *[a for kv in WINDOW for a in ("--set", kv)]], stream=out)
    assert code == 2
    [line] = [x for x in err.getvalue().splitlines() if x.startswith("error:")]
    assert "span 1 was ingested with the splits train, eval, without validation" in line
    assert not (tmp_path / "runs").exists() and "[ start ]" not in out.getvalue()  # nothing ran
