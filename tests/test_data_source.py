"""Locating the input: span patterns resolved by TFX's ExampleGen utilities (no pipeline run)."""
import pytest

from tfxline.pipeline.data import source as data_source
from tfxline.pipeline.data.source import DataError, has_span_spec, locate


def touch(path, text="a,b\n1,2\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_span_specs_are_recognised_without_tfx():
    assert has_span_spec("span-{SPAN}/*.csv") and has_span_spec("span-{SPAN:4}/x")
    assert has_span_spec("{YYYY}-{MM}-{DD}/*.csv")
    assert not has_span_spec("*.csv") and not has_span_spec("") and not has_span_spec("{VERSION}/x")


def test_the_newest_span_and_its_newest_version(tmp_path):
    for span in (1, 2, 10):  # numeric order, not text order: 10 is the newest
        touch(tmp_path / f"span-{span}" / "data.csv")
    found = locate(str(tmp_path), "csv", "span-{SPAN}/*.csv")
    assert (found.span, found.version) == (10, None)
    assert found.pattern == "span-{SPAN}/*.csv"  # ExampleGen gets the placeholders
    assert found.read_pattern == "span-10/*.csv" and found.files == [str(tmp_path / "span-10" / "data.csv")]
    touch(tmp_path / "v" / "span-3" / "ver-1" / "a.csv")
    touch(tmp_path / "v" / "span-3" / "ver-2" / "a.csv")
    versioned = locate(str(tmp_path / "v"), "csv", "span-{SPAN}/ver-{VERSION}/*.csv")
    assert (versioned.span, versioned.version) == (3, 2)


def test_no_span_and_a_span_pattern_on_a_file_are_named(tmp_path):
    with pytest.raises(DataError, match=r"holds no span matching data.pattern 'day-\{SPAN\}/\*.csv'"):
        locate(str(tmp_path), "csv", "day-{SPAN}/*.csv")
    with pytest.raises(DataError, match="names spans, but the data path .* is a file"):
        locate(touch(tmp_path / "one.csv"), "csv", "span-{SPAN}/*.csv")


def test_without_spans_nothing_changes(tmp_path):
    touch(tmp_path / "a.csv")
    found = locate(str(tmp_path), "csv")
    assert found.span is None and found.pattern == found.read_pattern == "*.csv"
    assert data_source.csv_files(str(tmp_path)) == [str(tmp_path / "a.csv")]


def test_a_chosen_span_for_a_backfill(tmp_path):
    for span in (1, 2, 10):
        touch(tmp_path / f"span-{span}" / "data.csv")
    found = locate(str(tmp_path), "csv", "span-{SPAN}/*.csv", span=2)
    assert (found.span, found.read_pattern) == (2, "span-2/*.csv")
    assert found.files == [str(tmp_path / "span-2" / "data.csv")] and found.pattern == "span-{SPAN}/*.csv"
    touch(tmp_path / "v" / "span-3" / "ver-1" / "a.csv")
    touch(tmp_path / "v" / "span-3" / "ver-2" / "a.csv")
    touch(tmp_path / "v" / "span-4" / "ver-1" / "a.csv")
    versioned = locate(str(tmp_path / "v"), "csv", "span-{SPAN}/ver-{VERSION}/*.csv", span=3)
    assert (versioned.span, versioned.version, versioned.read_pattern) == (3, 2, "span-3/ver-2/*.csv")
    touch(tmp_path / "d" / "2026-11-20" / "a.csv")
    touch(tmp_path / "d" / "2026-11-21" / "a.csv")
    dated = locate(str(tmp_path / "d"), "csv", "{YYYY}-{MM}-{DD}/*.csv", span=20777)  # days since 1970-01-01
    assert dated.read_pattern == "2026-11-20/*.csv"


def test_a_span_that_did_not_land_or_a_pattern_without_spans_is_named(tmp_path):
    for span in (1, 3):
        touch(tmp_path / f"span-{span}" / "data.csv")
    with pytest.raises(DataError, match=r"holds no span 2 matching data.pattern 'span-\{SPAN\}/\*.csv' "
                                        r"\(the newest there is span 3\); pass a span that landed to --span"):
        locate(str(tmp_path), "csv", "span-{SPAN}/*.csv", span=2)
    with pytest.raises(DataError, match=r"--span 1 picks a span, but data.pattern '\*.csv' names none"):
        locate(str(tmp_path), "csv", "", span=1)
