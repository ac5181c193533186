"""Trainer benchmark on a run's taxi examples and Transform graph; prints figures (not a test).

    .venv/bin/python bench/trainer_bench.py [OUTPUT_ROOT]      # default: ./output

Prints, in one run on the same files:
  1. input pipeline examples/s (trainer.data.make_dataset, cached and uncached) vs TFX's
     TFXIO reader (what fn_args.data_accessor gives) and a plain TFRecordDataset
     read-parse-transform of the same files (the ceiling);
  2. training examples/s for float32 vs mixed_bfloat16 on this CPU;
  3. training steps/s with 1 and 2 logical CPU devices (MirroredStrategy), in subprocesses.
Results are also written to bench/results/trainer.json.
"""
import glob
import json
import os
import subprocess
import sys
import time

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

BATCH = 256
STEPS = 200


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


def input_pipeline(graph, examples):
    import tensorflow as tf
    import tensorflow_transform as tft

    from trainer import data

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
    return {"input_examples_per_s": round(examples_per_second(ours, 300)),
            "input_uncached_examples_per_s": round(examples_per_second(uncached, 300)),
            "tfxio_examples_per_s": round(examples_per_second(tfxio_ds, 300)),
            "raw_read_parse_examples_per_s": round(examples_per_second(raw, 300))}


def train_speed(graph, examples, precision, cpus=1):
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
from pipeline.config_loader import load_config
from pipeline.factory import trainer_custom_config
from trainer.run import run_fn
cfg = load_config(overrides=["runtime.precision={precision}", "runtime.strategy={'mirrored' if cpus > 1 else 'default'}",
                             "training.epochs=2", "training.early_stopping_patience=0", "training.batch_size={BATCH}"])
out = tempfile.mkdtemp()
run_fn(FnArgs(train_files=[{examples!r} + "/Split-train/*"], eval_files=[{validation!r} + "/*"],
       transform_output={graph!r}, serving_model_dir=out + "/serving", model_run_dir=out + "/run",
       train_steps={STEPS}, eval_steps=5, custom_config=trainer_custom_config(cfg)))
print("RESULT", open(out + "/run/training_run.json").read().replace(chr(10), " "))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    info = json.loads(out.split("RESULT", 1)[1])
    return info


def main():
    output_root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "output")
    graph, examples = transform_dirs(output_root)
    results = input_pipeline(graph, examples)
    results["input_ratio_to_raw"] = round(results["input_examples_per_s"] / results["raw_read_parse_examples_per_s"], 2)
    for precision in ("float32", "mixed_bfloat16"):
        info = train_speed(graph, examples, precision)
        results[f"train_examples_per_s_{precision}"] = info["examples_per_second"]
    for cpus in (1, 2):
        info = train_speed(graph, examples, "float32", cpus)
        results[f"train_steps_per_s_{cpus}_devices"] = round(info["steps"] / info["train_seconds"], 1)
    results["note"] = ("train figures include the first epoch's tracing and the per-epoch validation; "
                       "2 logical devices share the same 2 physical cores")
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    with open(os.path.join(os.path.dirname(__file__), "results", "trainer.json"), "w") as f:
        json.dump(results, f, indent=2)
    for k, v in results.items():
        print(f"{k:40s} {v}")


if __name__ == "__main__":
    main()
