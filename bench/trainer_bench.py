"""Trainer benchmark on a run's taxi examples and Transform graph; prints figures (not a test).

    .venv/bin/python bench/trainer_bench.py [OUTPUT_ROOT] [--results FILE]     # default: ./output
    .venv/bin/python bench/trainer_bench.py OUTPUT_ROOT --smoke    # CI: a few batches and steps each

Prints, in one run on the same files:
  1. input pipeline examples/s (trainer.data.make_dataset, cached and uncached) vs TFX's
     TFXIO reader (what fn_args.data_accessor gives) and a plain TFRecordDataset
     read-parse-transform of the same files (the ceiling);
  2. training examples/s for float32 vs mixed_bfloat16 on this CPU;
  3. training steps/s with 1 and 2 logical CPU devices (MirroredStrategy), in subprocesses.
Results are also written to bench/results/trainer.json (--smoke: SMOKE_BATCHES and SMOKE_STEPS,
one training process, SMOKE_TRAIN_RUN, for all four figures, to a temporary file).
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import smoke  # noqa: E402

BATCH = 256
STEPS = 200
BATCHES = 300  # timed per input pipeline
SMOKE_STEPS, SMOKE_BATCHES = 4, 3
# run_fn in a fresh process, in this order: (precision, logical CPU devices); the first two give
# examples/s per precision, the last two steps/s on 1 and 2 devices (MirroredStrategy)
TRAIN_RUNS = [("float32", 1), ("mixed_bfloat16", 1), ("float32", 1), ("float32", 2)]
SMOKE_TRAIN_RUN = ("mixed_bfloat16", 2)  # a precision set and the 2-device branch, in one process
RESULTS = os.path.join(ROOT, "bench", "results", "trainer.json")
INPUT = "ExampleGen's raw examples, parsed and run through the Transform graph (trainer/data.py)"


def transform_dirs(output_root):
    """(the newest Transform graph, the newest ExampleGen examples): what the Trainer reads."""
    graph = sorted(glob.glob(os.path.join(output_root, "pipeline_root", "Transform", "transform_graph", "*")))
    examples = sorted(glob.glob(os.path.join(output_root, "pipeline_root", "CsvExampleGen", "examples", "*")))
    if not graph or not examples:
        sys.exit(f"no Transform output under {output_root}; run 'tfxline run --output {output_root}' first")
    return graph[-1], examples[-1]


def examples_per_second(ds, batches):
    it = iter(ds)
    next(it)  # exclude start-up
    start = time.perf_counter()
    for _ in range(batches):
        next(it)
    return batches * BATCH / (time.perf_counter() - start)


def input_pipeline(graph, examples, batches=BATCHES):
    import tensorflow as tf
    import tensorflow_transform as tft

    from tfxline.trainer import data

    output = tft.TFTransformOutput(graph)
    decode = data.transformed_decoder(output)
    files = glob.glob(os.path.join(examples, "Split-train", "*"))
    from tfx_bsl.public import tfxio

    ours = data.make_dataset(files, decode, "big_tipper", BATCH, shuffle=True, seed=1)
    uncached = data.make_dataset(files, decode, "big_tipper", BATCH, shuffle=True, seed=1, cache=False)
    layer = output.transform_features_layer()
    tfxio_ds = tfxio.TFExampleRecord(files, schema=output.raw_metadata.schema).TensorFlowDataset(
        tfxio.TensorFlowDatasetOptions(batch_size=BATCH, shuffle=True, shuffle_seed=1, num_epochs=None)).map(layer)
    raw = tf.data.TFRecordDataset(files, compression_type="GZIP").repeat().batch(BATCH).map(decode)
    return {"input_examples_per_s": round(examples_per_second(ours, batches)),
            "input_uncached_examples_per_s": round(examples_per_second(uncached, batches)),
            "tfxio_examples_per_s": round(examples_per_second(tfxio_ds, batches)),
            "raw_read_parse_examples_per_s": round(examples_per_second(raw, batches))}


def train_speed(graph, examples, precision, cpus=1, steps=STEPS):
    """Run run_fn-equivalent training in a fresh process; return examples/s and steps/s."""
    # The split the pipeline's Trainer validates on: validation (eval in a run without one).
    validation = os.path.join(examples, "Split-validation")
    if not os.path.isdir(validation):
        validation = os.path.join(examples, "Split-eval")
    code = f"""
import os, json, glob, tempfile
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import tensorflow as tf
if {cpus} > 1:
    tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
        [tf.config.LogicalDeviceConfiguration() for _ in range({cpus})])
from tfx.components.trainer.fn_args_utils import FnArgs
from tfxline.pipeline.config.load import load_config
from tfxline.pipeline.factory import trainer_custom_config
from tfxline.trainer.run import run_fn
cfg = load_config(overrides=["runtime.precision={precision}",
                             "runtime.strategy={'mirrored' if cpus > 1 else 'default'}", "training.epochs=2",
                             "training.early_stopping_patience=0", "training.batch_size={BATCH}"])
with tempfile.TemporaryDirectory() as out:  # the model is not kept: its training_run.json is the result
    run_fn(FnArgs(train_files=[{examples!r} + "/Split-train/*"], eval_files=[{validation!r} + "/*"],
           transform_output={graph!r}, serving_model_dir=out + "/serving", model_run_dir=out + "/run",
           train_steps={steps}, eval_steps=5, custom_config=trainer_custom_config(cfg)))
    print("RESULT", open(out + "/run/training_run.json").read().replace(chr(10), " "))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode:
        sys.exit(f"training ({precision}, {cpus} CPU device(s)) failed (exit {proc.returncode}):\n"
                 f"{proc.stderr[-3000:]}")
    info = json.loads(proc.stdout.split("RESULT", 1)[1])
    return info


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", default="output", help="a pipeline run's output root")
    smoke.add_arguments(parser, RESULTS)
    args = parser.parse_args()
    results_path = smoke.results_path(args, RESULTS)
    batches, steps = (SMOKE_BATCHES, SMOKE_STEPS) if args.smoke else (BATCHES, STEPS)
    graph, examples = transform_dirs(os.path.abspath(args.output))
    results = input_pipeline(graph, examples, batches)
    results["input_ratio_to_raw"] = round(results["input_examples_per_s"] / results["raw_read_parse_examples_per_s"], 2)
    if args.smoke:  # one process runs every line of train_speed: the same code, no figures
        info = train_speed(graph, examples, *SMOKE_TRAIN_RUN, steps)
        runs = [(run, info) for run in TRAIN_RUNS]
    else:
        runs = [(run, train_speed(graph, examples, *run, steps)) for run in TRAIN_RUNS]
    for (precision, _), info in runs[:2]:
        results[f"train_examples_per_s_{precision}"] = info["examples_per_second"]
    for (_, cpus), info in runs[2:]:
        results[f"train_steps_per_s_{cpus}_devices"] = round(info["steps"] / info["train_seconds"], 1)
    results["note"] = ("train figures include the first epoch's tracing and the per-epoch validation; "
                       "2 logical devices share the same 2 physical cores")
    results["date"] = time.strftime("%Y-%m-%d")
    results["input"] = INPUT  # what the Trainer reads: a change of it makes these figures stale
    if args.smoke:
        results["smoke"] = True
    smoke.write_json(results_path, results)
    for k, v in results.items():
        print(f"{k:40s} {v}")
    print(f"results: {results_path}")


if __name__ == "__main__":
    main()
