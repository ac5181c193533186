"""CsvExampleGen's batch encoding (components/csv_example_gen.py, csv_records.py, example_encoder.py)
gives exactly TFX's examples: the same column types, and every record byte for byte TFX's
tf.Example serialized deterministically, which is what TFX hashes to pick a record's split.
So the splits, and everything downstream, are what TFX's own CsvExampleGen gives."""
import csv
import hashlib
import os

import apache_beam as beam
import numpy as np
import pytest
import tensorflow as tf
from apache_beam.runners.portability.fn_api_runner import fn_runner
from hypothesis import HealthCheck, example, given, settings, strategies as st
from tfx.components.example_gen.csv_example_gen import executor as tfx_csv
from tfx_bsl.coders import csv_decoder

from tfxline.components import csv_example_gen, csv_records, example_encoder, example_splits
from tfxline.pipeline.data import source as data_source

# Cells at the edges of TFX's type inference: signs, spaces and underscores that int() reads,
# int64's bounds and beyond (STRING), floats that look like ints, nan / inf, text, quotes,
# commas and newlines inside a field, and empty cells.
CELLS = ["", "0", "-7", "+3", " 12 ", "1_000", "9223372036854775807", "-9223372036854775808",
         "9223372036854775808", "99999999999999999999", "1.5", "-0.0", "1e3", "nan", "inf", "1e39",
         "3.4028235e38", "abc", "Ü", "a,b", 'say "hi"', "two\nlines"]
TABLES = st.integers(1, 5).flatmap(lambda cols: st.lists(
    st.lists(st.sampled_from(CELLS), min_size=cols, max_size=cols), min_size=1, max_size=8))


@settings(max_examples=400, deadline=None)
@given(cells=st.lists(st.sampled_from(CELLS), max_size=12))
def test_a_column_gets_the_type_tfx_infers_cell_by_cell(cells):
    encoded = [c.encode() for c in cells]
    want = max([csv_decoder._InferValueType(c) for c in encoded], default=csv_decoder.ColumnType.UNKNOWN)
    assert csv_example_gen.column_type(encoded) == want


def test_the_encoder_writes_protobufs_deterministic_serialization():
    rng = np.random.default_rng(0)
    n, columns, features = 500, [], [dict() for _ in range(500)]
    makers = {example_encoder.INT: lambda v: tf.train.Feature(int64_list=tf.train.Int64List(value=v)),
              example_encoder.FLOAT: lambda v: tf.train.Feature(float_list=tf.train.FloatList(value=v)),
              example_encoder.BYTES: lambda v: tf.train.Feature(bytes_list=tf.train.BytesList(value=v))}
    for k in range(2):
        present = rng.random(n) < 0.8
        m = int(present.sum())
        values = {example_encoder.INT: rng.integers(-2**63, 2**63 - 1, m, dtype=np.int64) if k else
                  rng.integers(-300, 300, m),
                  example_encoder.FLOAT: rng.standard_normal(m) * 1e6,
                  example_encoder.BYTES: [bytes(rng.integers(0, 256, rng.integers(0, 300))) for _ in range(m)]}
        for kind, vals in values.items():
            name = f"{kind}{k}" + "x" * 150 * k  # a key longer than 127 bytes: a 2-byte length
            columns.append(example_encoder.Column(name, kind, present, vals))
            it = iter(vals)
            for i in range(n):
                features[i][name] = makers[kind]([next(it)] if present[i] else [])
    columns.append(example_encoder.Column("empty", None, np.zeros(n, bool)))
    for f in features:
        f["empty"] = tf.train.Feature()
    want = [tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString(deterministic=True)
            for f in features]
    assert example_encoder.encode(columns) == want


def _records(transform, path):
    directory, name = os.path.split(path)
    prefix = os.path.join(directory, transform.__module__.split(".")[-1])
    with beam.Pipeline(runner=fn_runner.FnApiRunner()) as p:
        records = p | transform({"input_base": directory}, name)
        if transform is tfx_csv._CsvToExample:
            records |= beam.Map(lambda e: e.SerializeToString(deterministic=True))
        else:
            records |= beam.FlatMap(lambda batch: batch)
        _ = records | beam.io.WriteToTFRecord(prefix)
    return sorted(r.numpy() for r in tf.data.TFRecordDataset(tf.io.gfile.glob(prefix + "*")))


def _write(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([f"c{i}" for i in range(len(rows[0]))])
        writer.writerows(rows)
    return str(path)


@pytest.mark.e2e
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=TABLES)
@example(rows=[["", "1.5", "abc"], ["", "2", ""], ["", "", "two\nlines"]])  # an empty column
def test_csv_example_gen_writes_tfxs_examples_byte_for_byte(tmp_path_factory, rows):
    path = _write(tmp_path_factory.mktemp("csv") / "data.csv", rows)
    assert _records(csv_example_gen._CsvToExample, path) == _records(tfx_csv._CsvToExample, path)


@pytest.mark.e2e
def test_the_taxi_csv_encodes_as_tfx_does(tmp_path):
    """The default data, 2,000 rows of it, in batches of 300 (the last one partial)."""
    with open(data_source.default_data_path()) as f:
        lines = [next(f) for _ in range(2001)]
    path = tmp_path / "taxi.csv"
    path.write_text("".join(lines))
    batch_rows = csv_records.BATCH_ROWS
    csv_records.BATCH_ROWS = 300
    try:
        ours = _records(csv_example_gen._CsvToExample, str(path))
    finally:
        csv_records.BATCH_ROWS = batch_rows
    assert len(ours) == 2000
    assert ours == _records(tfx_csv._CsvToExample, str(path))


def _run_executor(executor_class, data_dir, out_dir, shard_bytes=None, component_args=(), extra_props=None,
                  artifact=None, split_key=""):
    from tfx.proto import example_gen_pb2
    from tfx.types import standard_artifacts
    from tfx.utils import proto_utils

    from tfxline.components import example_splits
    from tfxline.patches import tfx_packaging as beam_packaging
    from tfxline.pipeline.beam import stack_compat

    examples = standard_artifacts.Examples()
    examples.uri = str(out_dir)
    splits = example_gen_pb2.Output(split_config=example_gen_pb2.SplitConfig(splits=[
        example_gen_pb2.SplitConfig.Split(name=n, hash_buckets=b)
        for n, b in [("train", 7), ("validation", 1), ("eval", 2)]]))
    if split_key:  # a oneof: set only when named (an empty name is a feature TFX looks for)
        splits.split_config.partition_feature_name = split_key
    props = {"input_base": str(data_dir), "output_config": proto_utils.proto_to_json(splits),
             "input_config": proto_utils.proto_to_json(example_gen_pb2.Input(splits=[
                 example_gen_pb2.Input.Split(name="single_split", pattern="*.csv")])),
             "output_data_format": example_gen_pb2.FORMAT_TF_EXAMPLE, **(extra_props or {})}
    if artifact is not None:
        artifact.append(examples)
    # a local run's pipeline args, then the component's own (TFX's order)
    args = list(stack_compat.local_beam_args(["--direct_running_mode=in_memory", "--direct_num_workers=1"]))
    args += list(component_args)
    saved = example_splits.SHARD_INPUT_BYTES
    example_splits.SHARD_INPUT_BYTES = shard_bytes or saved
    try:  # as a local run does: no sdist of TFX (~50 MB left in /tmp by each call otherwise)
        with beam_packaging.no_sdist_for_local_runners():
            executor_class(executor_class.Context(beam_pipeline_args=args, tmp_dir=str(out_dir) + "-tmp")).Do(
                {}, {"examples": [examples]}, props)
    finally:
        example_splits.SHARD_INPUT_BYTES = saved
    out = {}
    for split in ("train", "validation", "eval"):
        files = sorted(tf.io.gfile.glob(os.path.join(str(out_dir), f"Split-{split}", "*")))
        records = [r.numpy() for r in tf.data.TFRecordDataset(files, compression_type="GZIP")]
        out[split] = (files, records)
    return out


@pytest.mark.e2e
def test_the_executor_writes_tfxs_splits_in_a_deterministic_shuffled_order(tmp_path):
    """The whole executor against TFX's own, on 2,000 taxi rows (each appears once): each split
    holds the same examples (a row's first copy is split by TFX's hash of its bytes), in an order
    that is shuffled (not the CSV's) and the same on every run, in memory or in Beam worker
    processes, in as many shards as the input size asks."""
    data = tmp_path / "data"
    data.mkdir()
    with open(data_source.default_data_path()) as f:
        (data / "taxi.csv").write_text("".join(next(f) for _ in range(2001)))
    ours = _run_executor(csv_example_gen.Executor, data, tmp_path / "ours", shard_bytes=100_000)
    again = _run_executor(csv_example_gen.Executor, data, tmp_path / "again", shard_bytes=100_000)
    tfx = _run_executor(tfx_csv.Executor, data, tmp_path / "tfx")
    # in two worker processes, as the auto mode runs large days' components: the same files
    workers = _run_executor(csv_example_gen.Executor, data, tmp_path / "workers", shard_bytes=100_000,
                            component_args=("--direct_running_mode=multi_processing", "--direct_num_workers=2"))
    names = csv_records.read_header(str(data / "taxi.csv"))
    columns, _ = csv_records.parse_records((data / "taxi.csv").read_text().splitlines(True)[1:], names)
    types = csv_example_gen._ColumnTypes(names, skip_blank_lines=True)
    in_csv_order = next(csv_example_gen._EncodeBatch().process(
        columns, types.extract_output(types.add_input({}, columns))))
    position = {r: i for i, r in enumerate(in_csv_order)}
    assert len(position) == len(in_csv_order)  # no row repeats another: each is split as TFX splits it
    for split in ours:
        files, records = ours[split]
        assert [os.path.basename(f) for f in files] == [f"data_tfrecord-0000{i}-of-00003.gz" for i in range(3)]
        assert records == again[split][1] == workers[split][1]
        want = sorted(tf.train.Example.FromString(r).SerializeToString(deterministic=True) for r in tfx[split][1])
        assert sorted(records) == want and len(records) > 100
        assert [position[r] for r in records] != sorted(position[r] for r in records)  # shuffled
    assert sum(len(ours[s][1]) for s in ours) == len(in_csv_order) == 2000
    for out in ("ours", "again", "workers"):  # the piece files went with the pipeline
        assert not os.path.exists(tmp_path / out / example_splits.PIECES_DIR)


def test_the_shuffle_between_the_stages_carries_file_names_not_records(tmp_path):
    """SplitBatch writes a bundle's records to one piece file per (split, shard) and passes on
    only the file names, so what Beam holds between the two stages does not grow with the rows;
    WriteShard writes a shard from its pieces in hash order, whichever bundle wrote them."""
    records = [f"record {i}".encode() for i in range(600)]
    split_dirs = [tmp_path / name for name in ("train", "eval")]
    for d in split_dirs:
        d.mkdir()
    pieces_dir = tmp_path / "pieces"
    pieces_dir.mkdir()
    fn = example_splits.SplitBatch(shards=2, pieces_dir=str(pieces_dir), buckets=[3, 4])
    pieces = []
    for bundle in (records[:250], records[250:]):  # two bundles: two pieces per (split, shard)
        fn.start_bundle()
        assert fn.process(bundle) is None  # nothing passes on per batch
        pieces += [wv.value for wv in fn.finish_bundle()]
    assert len(pieces) == 8 and all(isinstance(path, str) and os.path.exists(path) for _, path in pieces)
    grouped = {}
    for key, path in pieces:
        grouped.setdefault(key, []).append(path)
    write = example_splits.WriteShard([str(d) for d in split_dirs], 2)
    written = [count for key in sorted(grouped) for _, count in write.process((key, grouped[key]))]
    assert sum(written) == 600

    def order(r):
        return hashlib.sha256(r).digest()

    for split, d in enumerate(split_dirs):
        for shard in range(2):
            path = d / example_splits.shard_name(shard, 2)
            got = [r.numpy() for r in tf.data.TFRecordDataset(str(path), compression_type="GZIP")]
            assert got == sorted(got, key=order) and got
    example_splits.remove_pieces(str(pieces_dir))
    assert not pieces_dir.exists()


def test_rows_without_a_label_are_left_out(tmp_path):
    """data.missing_labels: drop. The ExampleGen leaves out the rows whose label cell is empty,
    counts them on its examples (the run's summary reads the count), and every other row lands
    in the split it lands in without the option (its bytes pick the split)."""
    from tfx.utils import proto_utils

    data = tmp_path / "data"
    data.mkdir()
    rows = ["id,grade,label"] + [f"{i},{i % 7}.0,{'' if i % 5 == 0 else 'yes' if i % 3 else 'no'}" for i in range(300)]
    (data / "t.csv").write_text("\n".join(rows) + "\n")
    config = csv_example_gen.custom_config(["label"])
    kept, everything = [], []
    dropped = _run_executor(csv_example_gen.Executor, data, tmp_path / "drop", artifact=kept,
                            extra_props={"custom_config": proto_utils.proto_to_json(config)})
    whole = _run_executor(csv_example_gen.Executor, data, tmp_path / "all", artifact=everything)
    assert kept[0].get_int_custom_property(csv_example_gen.DROPPED) == 60
    assert csv_example_gen.DROPPED not in everything[0].mlmd_artifact.custom_properties
    for split in ("train", "validation", "eval"):
        labelled = [r for r in whole[split][1]
                    if tf.train.Example.FromString(r).features.feature["label"].bytes_list.value]
        assert sorted(dropped[split][1]) == sorted(labelled)
    assert sum(len(dropped[s][1]) for s in dropped) == 240


def _split_of_each(out, column):
    """{split: [the column's values of its records]}"""
    def value(r):
        feature = tf.train.Example.FromString(r).features.feature[column]
        values = list(feature.bytes_list.value) or list(feature.int64_list.value)
        return values[0] if values else None
    return {split: [value(r) for r in out[split][1]] for split in out}


def test_copies_of_a_row_spread_over_the_splits(tmp_path):
    """A table of repeated rows (AER's Fertility: 13,065 distinct rows in 203,724): each copy is a
    row of its own, split by its bytes and its copy number, so a row's copies land in the splits
    as different rows would; TFX's hash of the record's bytes sent every copy to one split. A file
    grown at its end keeps its rows' splits (the serving model's eval rows stay eval rows)."""
    data = tmp_path / "data"
    data.mkdir()
    rows = ["kind,label"] + [f"k{i},{i % 2}" for i in range(20)] * 30  # 20 distinct rows, 30 copies each
    (data / "t.csv").write_text("\n".join(rows) + "\n")
    out = _run_executor(csv_example_gen.Executor, data, tmp_path / "out")
    splits_of = {}
    for split, records in out.items():
        for r in records[1]:
            splits_of.setdefault(r, set()).add(split)
    assert len(splits_of) == 20 and all(len(s) >= 2 for s in splits_of.values())  # TFX's: one split each
    assert 0.55 < len(out["train"][1]) / 600 < 0.85  # 7 of 10 buckets
    again = _run_executor(csv_example_gen.Executor, data, tmp_path / "again")
    assert {s: out[s][1] for s in out} == {s: again[s][1] for s in again}  # the same files, the same splits
    grown = tmp_path / "grown"
    grown.mkdir()
    (grown / "t.csv").write_text("\n".join(rows + [f"k{i},{i % 2}" for i in range(20)] * 10) + "\n")
    more = _run_executor(csv_example_gen.Executor, grown, tmp_path / "more")
    for split in out:  # each split of the grown file holds the first file's (and more)
        kept = list(more[split][1])
        for r in out[split][1]:
            kept.remove(r)


def test_a_split_key_keeps_each_group_in_one_split(tmp_path):
    """data.split_key (TFX's partition_feature_name): every row of a customer lands in one split;
    a row without a value is split as a row of its own."""
    data = tmp_path / "data"
    data.mkdir()
    rows = ["customer,x,label"] + [f"c{i % 40},{i},{i % 2}" for i in range(400)] + [f",{i},1" for i in range(50)]
    (data / "t.csv").write_text("\n".join(rows) + "\n")
    grouped = _split_of_each(_run_executor(csv_example_gen.Executor, data, tmp_path / "out", split_key="customer"),
                             "customer")
    groups = {}
    for split, customers in grouped.items():
        for c in customers:
            groups.setdefault(c, set()).add(split)
    assert all(len(s) == 1 for c, s in groups.items() if c) and len(groups) == 41
    assert len(groups[None]) > 1  # no value: each row as a row of its own
    assert sum(len(v) for v in grouped.values()) == 450
    assert len({s for c, s in groups.items() if c for s in s}) == 3  # 40 groups reach every split
