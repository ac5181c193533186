"""TFRecord input (data.format: tfrecord) and package: data paths: the pre-flight checks
give one-line errors naming the file and the fix."""
import gzip

import pytest
import tensorflow as tf

from tfxline.pipeline.data import source as data_source
from tfxline.cli import main as cli
from tfxline.pipeline.config import ConfigError
from tfxline.pipeline.config.load import load_config
from tfxline.pipeline.data.source import DataError

SCHEMA = data_source.load_schema(data_source.schema_path("penguin"))
REQUIRED = ("culmen_length_mm", "species")


def write_examples(path, examples, gzip_it=True):
    options = tf.io.TFRecordOptions(compression_type="GZIP" if gzip_it else "")
    with tf.io.TFRecordWriter(str(path), options) as w:
        for e in examples:
            w.write(e.SerializeToString())
    return str(path)


def example(**features):
    ex = tf.train.Example()
    for name, value in features.items():
        f = ex.features.feature[name]
        if isinstance(value, int):
            f.int64_list.value.append(value)
        elif isinstance(value, float):
            f.float_list.value.append(value)
        else:
            f.bytes_list.value.append(value.encode())
    return ex


def test_package_paths_resolve_inside_the_installed_package():
    path = data_source.resolve_data_path("package:tfx/components/testdata/penguin/data")
    root, pattern, files = data_source.locate(path, "tfrecord", "Split-*/*")[:3]
    assert root == path and len(files) == 2 and all(f.endswith(".gz") for f in files)
    assert data_source.check_tfrecords(files, SCHEMA, REQUIRED) == 334


def test_good_records_pass(tmp_path):
    f = write_examples(tmp_path / "a.gz", [example(culmen_length_mm=0.5, species=1)] * 3)
    assert data_source.check_tfrecords([f], SCHEMA, REQUIRED) == 3


def write_bytes(path, data):
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("make, message", [
    (lambda d: write_bytes(d / "x.gz", gzip.compress(b"not a tfrecord at all")),
     "is not a readable GZIP TFRecord file"),
    # plain TFRecords under a .gz name: read as GZIP, and fail clearly
    (lambda d: write_examples(d / "plain.gz", [example(culmen_length_mm=0.5, species=1)], gzip_it=False),
     "is not a readable GZIP TFRecord file"),
    (lambda d: write_bytes(d / "raw.tfrecord", b"\x00" * 40), "is not a readable TFRecord file"),
    (lambda d: write_examples(d / "t.gz", [example(culmen_length_mm="long", species=1)]),
     "feature 'culmen_length_mm' holds bytes_list, the schema says float_list"),
    (lambda d: write_examples(d / "m.gz", [example(culmen_length_mm=0.5)]),
     "has feature(s) species"),
    (lambda d: write_bytes(d / "e.gz", b""), "is empty"),
    (lambda d: write_bytes(d / "short.gz", gzip.compress(b"tiny")), "no complete record in"),
])
def test_bad_records_name_the_problem(tmp_path, make, message):
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)")):
        data_source.check_tfrecords([make(tmp_path)], SCHEMA, REQUIRED)


def test_unknown_package_and_format_are_config_errors():
    with pytest.raises(ConfigError, match="package 'no_such_pkg' is not installed"):
        load_config(overrides=["data.path=package:no_such_pkg/data"])
    with pytest.raises(ConfigError, match="data.format"):
        load_config(overrides=["data.format=parquet"])


def test_cli_reports_a_bad_tfrecord_file_in_one_line(tmp_path, capsys):
    bad = write_bytes(tmp_path / "part.gz", gzip.compress(b"garbage, not TFRecord framing"))
    code = cli.main(["run", "--config", "penguin", "--data", bad, "--output", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_INPUT
    lines = [l for l in err.splitlines() if l.startswith("error:")]
    assert len(lines) == 1 and "part.gz is not a readable GZIP TFRecord file" in lines[0]
    assert not (tmp_path / "o" / "metadata.sqlite").exists()
