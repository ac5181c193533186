"""The Trainer's SavedModel export with and without Keras's per-layer traces (trainer/export.py).

    .venv/bin/python bench/export_traces.py [--columns 300] [--rows 3500] [--repeats 2]

A wide table's model as the Trainer builds one: ``--columns`` float inputs, each reshaped and
concatenated into a dense layer (the network), a boosted forest of 100 trees over the same inputs
wrapped as trainer/trees.py wraps it (the trees), and their average (trainer/family.py). Each is
saved as trainer/export.py saves it (a ``serving_default`` signature on serialized tf.Examples),
once with Keras's per-layer traces (``save_traces=True``, tf_keras's default) and once without,
both with the model kept as one traced function on its inputs (``attach_model_function``, what
serving/tflite.py calls). Prints each save's seconds (the best of ``--repeats``) and checks that
both exports, loaded in this process, give the same outputs as the model in memory.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--columns", type=int, default=300)
    parser.add_argument("--rows", type=int, default=3500)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)

    import numpy as np
    import tensorflow as tf
    import ydf

    from tfxline.trainer import family
    from tfxline.trainer import trees as trees_lib
    from tfxline.trainer.export import attach_model_function, model_function
    from tfxline.trainer.keras_compat import keras

    ydf.verbose(0)
    k = keras()
    rng = np.random.default_rng(0)
    names = [f"c{i}_xf" for i in range(args.columns)]
    columns = {n: rng.normal(size=args.rows).astype("float32") for n in names}
    label = (columns[names[0]] + rng.normal(size=args.rows) > 0).astype("int64")

    def inputs():
        return {n: k.Input(shape=(), name=n, dtype="float32") for n in names}

    forest = ydf.GradientBoostedTreesLearner(label="y", num_trees=100, num_threads=1).train(
        {**columns, "y": label}, verbose=0)
    layer = trees_lib.output_layer(forest.to_tensorflow_function(squeeze_binary_classification=False),
                                   names, [1], name="trees_output")
    trees_in = inputs()
    trees = k.Model(trees_in, layer(trees_in), name="trees")
    net_in = inputs()
    x = k.layers.Concatenate()([k.layers.Reshape((1,))(net_in[n]) for n in names])
    x = k.layers.Dense(64, activation="relu")(k.layers.BatchNormalization()(x))
    network = k.Model(net_in, k.layers.Dense(1, activation="sigmoid")(x), name="network")
    models = {"network": network, "trees": trees, "average": family.average_model([network, trees])}

    spec = {n: tf.io.FixedLenFeature([], tf.float32) for n in names}
    rows = 16
    examples = [tf.train.Example(features=tf.train.Features(feature={
        n: tf.train.Feature(float_list=tf.train.FloatList(value=[float(columns[n][i])])) for n in names}))
        .SerializeToString() for i in range(rows)]
    batch = {n: tf.constant(columns[n][:rows]) for n in names}
    out = tempfile.mkdtemp(prefix="export-traces-")
    print(f"{args.columns} columns, {args.rows} rows; save seconds, best of {args.repeats}")
    failed = 0
    for name, model in models.items():
        expected = model(batch).numpy().reshape(-1)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
        def serve(serialized, model=model):
            return {"probabilities": model(tf.io.parse_example(serialized, spec))}

        timings = {}
        for traces in (True, False):
            best = float("inf")
            for r in range(args.repeats):
                target = os.path.join(out, f"{name}-{traces}-{r}")
                attach_model_function(model)  # as trainer/export.py does, with the traces or without
                started = time.monotonic()
                model.save(target, save_format="tf", signatures={"serving_default": serve},
                           include_optimizer=False, save_traces=traces)
                best = min(best, time.monotonic() - started)
            loaded = tf.saved_model.load(target)
            served = loaded.signatures["serving_default"](examples=tf.constant(examples))["probabilities"]
            called = model_function(loaded)(batch)
            same = (np.allclose(np.reshape(served, -1), expected, atol=1e-5)
                    and np.allclose(np.reshape(called, -1), expected, atol=1e-5))
            failed += not same
            timings[traces] = best
            print(f"  {name:8s} save_traces={str(traces):5s} {best:6.1f} s  outputs {'same' if same else 'DIFFER'}",
                  flush=True)
        print(f"  {name:8s} without traces: {timings[False] / timings[True]:.2f} x the time")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
