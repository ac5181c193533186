"""Write a run's split as the model's features, to gzipped TFRecords: what the Trainer computes
from ExampleGen's raw examples through the Transform graph (trainer/data.transformed_decoder).
For bench/gpu_bench.py on the GPU machine, whose TensorFlow bundle has no TFT to run the graph
(bench/gpu_machine.sh prepare calls this); not a test.

    .venv/bin/python bench/materialize.py OUTPUT_ROOT DEST_DIR [SPLIT]   # SPLIT: train
"""
import glob
import os
import sys

import numpy as np


def newest(pattern: str) -> str:
    found = sorted(glob.glob(pattern), key=os.path.getmtime)
    if not found:
        sys.exit(f"error: nothing matches {pattern}; run 'tfxline run' on that output root first")
    return found[-1]


def feature(values: np.ndarray):
    import tensorflow as tf

    values = values.reshape(-1)
    if values.dtype.kind in "iub":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values.tolist()))
    if values.dtype.kind == "f":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values.tolist()))
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=values.tolist()))


def materialize(output_root: str, dest: str, split: str = "train") -> int:
    import tensorflow as tf
    import tensorflow_transform as tft

    from tfxline.trainer import data

    root = os.path.join(output_root, "pipeline_root")
    graph = newest(os.path.join(root, "Transform", "transform_graph", "*"))
    examples = newest(os.path.join(root, "CsvExampleGen", "examples", "*"))
    decode = data.transformed_decoder(tft.TFTransformOutput(graph))
    files = data.list_files([os.path.join(examples, f"Split-{split}", "*")])
    os.makedirs(dest, exist_ok=True)
    rows = 0
    path = os.path.join(dest, "data_tfrecord-00000-of-00001.gz")
    with tf.io.TFRecordWriter(path + ".partial", tf.io.TFRecordOptions(compression_type="GZIP")) as writer:
        for batch in tf.data.TFRecordDataset(files, compression_type="GZIP").batch(4096).map(decode):
            columns = {k: v.numpy() for k, v in batch.items()}
            for i in range(len(next(iter(columns.values())))):
                writer.write(tf.train.Example(features=tf.train.Features(
                    feature={k: feature(v[i]) for k, v in columns.items()})).SerializeToString())
                rows += 1
    os.replace(path + ".partial", path)
    return rows


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    n = materialize(*sys.argv[1:])
    print(f"{n} rows -> {sys.argv[2]}")
