"""Trainer throughput, GPU and CPU on the same machine: examples/s per precision, XLA,
steps_per_execution, batch and model width; prints a table (not a test).

    python bench/gpu_bench.py [--output OUTPUT_ROOT] [--seconds 4] [--devices gpu,cpu] [--quick]
    python bench/gpu_bench.py --output OUTPUT_ROOT --smoke     # CI: every row at batch <= 64, on the CPU

It retrains the model a pipeline run trained (its ``training_run.json`` names the model
inputs and cardinalities) on that run's train split as the model's features (GZIP TFRecords
under transformed_examples/, written by bench/materialize.py in gpu_machine.sh prepare), with
this project's input pipeline (trainer.data), model (trainer.model) and precision policy.
Only TensorFlow and tf_keras are imported on this path: no tft, tfx-bsl or TFX, so it runs
from the TF-only GPU bundle (../shared/gpu/README.md). Each device runs in its own process
(the CPU rows with the GPUs hidden); GPU rows are skipped, with a line saying so, where
TensorFlow sees no GPU. GPU utilisation is sampled with nvidia-smi during each timed row.

Rows: the input pipeline alone (the ceiling of every row that reads files); the default model
at batch 256 (the pipeline's batch) and 4096 (a batch that fills a GPU), float32 /
mixed_bfloat16 / mixed_float16, steps_per_execution 1 and 50, XLA on and off, without the
training-batch metrics (``runtime.train_metrics: false``: what AUC and accuracy cost), and
under OneDeviceStrategy ("one_device": what the Trainer's ``auto`` strategy picks on one GPU;
the other rows run without a strategy scope, as ``auto`` does on a CPU); a wide
model ([2048] x 3 hidden units) at batch 8192 with its achieved TFLOP/s, and (GPU only) the
device's own ceiling at that model's shapes: chained [8192, 2048] x [2048, 2048] matmuls per
precision ("matmul"), against which the wide rows' TFLOP/s are judged. GPU rows marked
"memory" repeat one batch, so the device's own speed shows apart from the input pipeline
(skipped on CPU, where both share the cores). "ops" counts the kernels one training step
launches (forward, backward, loss, metrics and the optimizer's update: every op of the
compiled step but constants, reads and plumbing; trainer.train_step.step_kernel_ops) and
"vars" the variables the optimizer updates: what a launch-bound GPU pays per step, the figure
the fused model and the fused optimizer were built to cut.
Results: bench/results/gpu_bench.json. --smoke runs every row at smoke_case's size (batch <= 64,
<= 2 steps per call; rows that become alike, once), on --devices cpu unless given, to a temporary file.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import threading
import time

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from bench import smoke  # noqa: E402
from bench.results_table import HEADER, record, row_error  # noqa: E402
from tfxline.trainer.settings import TRAINING_RUN_FILE  # noqa: E402  (no TensorFlow: the parent process stays light)
RESULTS = os.path.join(ROOT, "bench", "results", "gpu_bench.json")
WIDE = (2048, 2048, 2048)


def case(model, batch, precision="float32", spe=50, xla=False, source="files", metrics=True,
         strategy="default") -> dict:
    """One measurement: ``source`` "files" reads the cached TFRecords as training does,
    "memory" repeats one batch (what the device does without its input pipeline); ``model``
    "input" times the input pipeline alone (the ceiling of any "files" row); ``strategy`` a
    ``runtime.strategy`` value: "one_device" is what the Trainer's ``auto`` picks on one GPU
    (the batches go through tf.distribute's iterator, which copies them to the device)."""
    return {"model": model, "batch": batch, "precision": precision, "steps_per_execution": spe, "xla": xla,
            "source": source, "metrics": metrics, "strategy": strategy}


ROWS = [
    case("input", 256, spe=1), case("input", 4096, spe=1),
    case("default", 256, spe=1),
    case("default", 256, spe=1, strategy="one_device"),
    case("default", 256),
    case("default", 256, strategy="one_device"),
    case("default", 256, metrics=False),
    case("default", 256, "mixed_bfloat16"),
    case("default", 256, "mixed_float16"),
    case("default", 256, xla=True),
    case("default", 4096),
    case("default", 4096, strategy="one_device"),
    case("default", 4096, source="memory"),
    case("default", 4096, "mixed_bfloat16"),
    case("default", 4096, "mixed_float16"),
    case("default", 4096, xla=True),
    case("wide", 8192, spe=10),
    case("wide", 8192, "mixed_bfloat16", spe=10),
    case("wide", 8192, "mixed_float16", spe=10),
    case("wide", 8192, spe=10, source="memory"),
    case("wide", 8192, "mixed_bfloat16", spe=10, source="memory"),
    case("wide", 8192, "mixed_float16", spe=10, source="memory"),
    case("matmul", 8192, spe=50, source="memory"),
    case("matmul", 8192, "mixed_bfloat16", spe=50, source="memory"),
    case("matmul", 8192, "mixed_float16", spe=50, source="memory"),
]
QUICK = [r for r in ROWS if r["model"] in ("input", "default") and r["precision"] == "float32" and not r["xla"]]
SMOKE_BATCH, SMOKE_SPE, SMOKE_SECONDS = 64, 2, 0.1


def smoke_case(row: dict) -> dict:
    """A row at a smoke run's size: the same code path, a small batch, few steps per call."""
    return dict(row, batch=min(row["batch"], SMOKE_BATCH),
                steps_per_execution=min(row["steps_per_execution"], SMOKE_SPE))


SMOKE = [dict(r) for r in {tuple(smoke_case(r).items()): None for r in ROWS}]  # each once, in ROWS' order


def find_run(output_root: str):
    """(training_run.json of the newest Trainer run, its train split as the model's features)."""
    infos = sorted(glob.glob(os.path.join(output_root, "pipeline_root", "Trainer", "model_run", "*",
                                          TRAINING_RUN_FILE)), key=os.path.getmtime)
    infos = [p for p in infos if "model_inputs" in json.load(open(p))]
    examples = sorted(glob.glob(os.path.join(output_root, "pipeline_root", "Transform",
                                             "transformed_examples", "*", "Split-train")), key=os.path.getmtime)
    if not infos or not examples:
        sys.exit(f"no finished pipeline run with materialized features under {output_root}; run 'tfxline run', "
                 "then bench/materialize.py (bench/gpu_machine.sh prepare runs it)")
    with open(infos[-1]) as f:
        return json.load(f), os.path.join(examples[-1], "*")


def mlp_flops_per_example(input_width: int, hidden, out_units: int = 1) -> int:
    """Multiply-adds x 2 of the dense layers, forward + backward (x3)."""
    widths = [input_width, *hidden, out_units]
    return 6 * sum(a * b for a, b in zip(widths, widths[1:]))


class GpuSampler:
    """Mean GPU utilisation (nvidia-smi, every 200 ms) while running."""

    def __init__(self):
        self.samples, self._proc, self._thread = [], None, None

    def __enter__(self):
        try:
            self._proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-lms", "200"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return self
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return self

    def _read(self):
        for line in self._proc.stdout:
            try:
                self.samples.append(float(line.split(",")[0]))
            except ValueError:
                pass

    def __exit__(self, *exc):
        if self._proc:
            self._proc.terminate()
            self._proc.wait()

    @property
    def mean(self):
        return round(sum(self.samples) / len(self.samples), 1) if self.samples else None


def build_training(info, files, row: dict):
    """(compiled model to fit, the inner model, dataset) for one row, as the Trainer builds
    them: this project's input pipeline, model, optimizer and precision policy. The model is
    built under the row's precision policy, which the caller keeps set while it trains."""
    import tensorflow as tf

    from tfxline.trainer import data, precision
    from tfxline.trainer.model import Head, ModelInput, build_model, loss_and_metrics
    from tfxline.trainer.optimizer import optimizer
    from tfxline.trainer.strategy import create_strategy
    from tfxline.trainer.train_step import training_model

    kind, batch, policy = row["model"], row["batch"], row["precision"]
    inputs = [ModelInput(*mi) for mi in info["model_inputs"]]  # name, cardinality (text: length, tokens)
    head = Head(**info["head"])
    hidden = WIDE if kind == "wide" else tuple(info["model"]["hidden_units"])
    spec = {mi.name: tf.io.FixedLenFeature([], tf.int64 if mi.is_categorical else tf.float32) for mi in inputs}
    spec[info["label"]] = tf.io.FixedLenFeature([], tf.int64)
    ds = data.make_dataset([files], data.parser(spec), info["label"], batch, shuffle=True, seed=1)
    if kind == "input":
        return None, None, ds
    if row["source"] == "memory":
        ds = ds.take(1).cache().repeat()
    tf.keras.utils.set_random_seed(1)
    with create_strategy(row.get("strategy", "default")).scope():
        model = build_model(inputs, head, hidden, info["model"]["dropout"], info["model"]["embedding_max_dim"],
                            info["model"].get("batch_norm", False))
        loss, metrics = loss_and_metrics(head)
        trainable = training_model(model, train_metrics=row["metrics"])
        opt = precision.wrap_optimizer(optimizer(1e-3, info["model"].get("weight_decay", 0.0)), policy)
        trainable.compile(optimizer=opt, loss=loss, metrics=metrics,
                          steps_per_execution=row["steps_per_execution"], jit_compile=row["xla"])
    return trainable, model, ds


def measure(info, files, row: dict, seconds: float, on_gpu: bool) -> dict:
    from tfxline.trainer import precision
    from tfxline.trainer.keras_compat import keras
    from tfxline.trainer.train_step import step_kernel_ops

    kind, batch, spe, xla = (row[k] for k in ("model", "batch", "steps_per_execution", "xla"))
    if kind == "input":
        return measure_input(build_training(info, files, row)[2], row, seconds)
    if kind == "matmul":
        return measure_matmul(row, seconds, on_gpu)
    with precision.precision_policy(row["precision"]):
        trainable, model, ds = build_training(info, files, row)
        times = []

        class Timer(keras().callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                self.t = time.perf_counter()

            def on_epoch_end(self, epoch, logs=None):
                times.append(time.perf_counter() - self.t)

        trainable.fit(ds, steps_per_epoch=2 * spe, epochs=2, verbose=0, callbacks=[Timer()])  # compile, warm up
        per_step = times[-1] / (2 * spe)
        steps = max(spe, int(seconds / max(per_step, 1e-6)) // spe * spe)
        times.clear()
        with GpuSampler() if on_gpu else _Null() as sampler:
            trainable.fit(ds, steps_per_epoch=steps, epochs=1, verbose=0, callbacks=[Timer()])
    rate = steps * batch / times[-1]
    width = model.get_layer("deep_0").input.shape[-1]
    out = {**row, "examples_per_s": round(rate), "ms_per_step": round(1000 * times[-1] / steps, 3), "steps": steps,
           "gpu_util_percent": getattr(sampler, "mean", None), "variables": len(model.trainable_variables),
           # with steps_per_execution > 1 the loop's own few ops are in the count too
           "step_ops": None if xla else step_kernel_ops(trainable)}
    if kind == "wide":
        out["tflops"] = round(rate * mlp_flops_per_example(width, WIDE, model.output.shape[-1]) / 1e12, 2)
    return out


def measure_matmul(row: dict, seconds: float, on_gpu: bool) -> dict:
    """The device's own ceiling at the wide model's shapes: [batch, 2048] x [2048, 2048] matmuls,
    ``steps_per_execution`` chained in one call, in the row's compute dtype (float32 runs as
    TF32 on Ampere and later). A wide row's TFLOP/s over this is how close the model comes to
    what the hardware gives TensorFlow, measured, not read off a data sheet."""
    import tensorflow as tf

    dtype = {"float32": tf.float32, "mixed_bfloat16": tf.bfloat16, "mixed_float16": tf.float16}[row["precision"]]
    n, batch, chain = WIDE[0], row["batch"], row["steps_per_execution"]
    with tf.device("/gpu:0" if on_gpu else "/cpu:0"):
        x = tf.cast(tf.random.normal([batch, n], seed=1), dtype)
        w = tf.cast(tf.random.normal([n, n], stddev=n ** -0.5, seed=2), dtype)  # keeps |x| steady

    @tf.function
    def run(x):
        for _ in range(chain):
            x = tf.matmul(x, w)
        return tf.reduce_sum(tf.cast(x[:1, :1], tf.float32))  # a scalar back: the call has finished

    run(x).numpy()  # trace, autotune
    calls, start = 0, time.perf_counter()
    with GpuSampler() if on_gpu else _Null() as sampler:
        while calls == 0 or time.perf_counter() - start < seconds:
            run(x).numpy()
            calls += 1
    elapsed = time.perf_counter() - start
    matmuls = calls * chain
    return {**row, "examples_per_s": round(matmuls * batch / elapsed),
            "ms_per_step": round(1000 * elapsed / matmuls, 3),
            "steps": matmuls, "gpu_util_percent": getattr(sampler, "mean", None), "variables": None,
            "step_ops": None, "tflops": round(2 * batch * n * n * matmuls / elapsed / 1e12, 2)}


def measure_input(ds, row: dict, seconds: float) -> dict:
    """The input pipeline alone: batches per second from the cached TFRecords, nothing trained."""
    batch = row["batch"]
    it = iter(ds)
    for _ in range(20):  # fill the cache and the prefetch buffer
        next(it)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        next(it)
        n += 1
    elapsed = time.perf_counter() - start
    return {**row, "examples_per_s": round(n * batch / elapsed),
            "ms_per_step": round(1000 * elapsed / n, 3), "steps": n, "gpu_util_percent": None}


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def start_tensorflow():
    """TensorFlow imported quietly and set up as run_fn sets it up (GPU memory growth; AutoGraph
    must not convert tf_keras itself); returns the module. For this bench's workers and
    bench/step_profile.py."""
    from tfxline.cli.quiet import import_tensorflow_quietly, quiet_libraries

    quiet_libraries()
    import_tensorflow_quietly()
    import tensorflow as tf

    from tfxline.patches.autograph import skip_autograph_for_libraries
    from tfxline.trainer.strategy import enable_memory_growth

    enable_memory_growth()
    skip_autograph_for_libraries()
    return tf


def matches(row: dict, where: str) -> bool:
    """``--where key=value,...``: the row has each value (compared as text, case-insensitive)."""
    pairs = [p.split("=", 1) for p in where.split(",") if p]
    return all(str(row.get(k)).lower() == v.lower() for k, v in pairs)


def worker(args) -> None:
    """One device's rows, as JSON lines on stdout."""
    tf = start_tensorflow()
    on_gpu = args.worker == "gpu"
    if on_gpu and not tf.config.list_physical_devices("GPU"):
        print(json.dumps({"skipped": "gpu", "why": "TensorFlow sees no GPU on this machine"}), flush=True)
        return
    info, files = find_run(args.output)
    models = {"input", *args.models.split(",")}
    if "wide" in models:
        models.add("matmul")  # the wide rows' ceiling
    rows = SMOKE if args.smoke else QUICK if args.quick else ROWS
    for row in [r for r in rows if r["model"] in models and matches(r, args.where)]:
        if not on_gpu and row["source"] == "memory":
            continue  # on a CPU the model and the input pipeline share the cores: nothing to separate
        if not on_gpu and row["model"] == "wide":
            if row["precision"] != "float32":
                continue  # 16-bit matmuls of this size on a CPU: minutes per row, nothing learned
            row = dict(row, steps_per_execution=2)  # seconds per step here: a short execution
        try:
            result = measure(info, files, row, args.seconds, on_gpu)
        except Exception as e:  # reported in the row, the bench goes on
            result = dict(row, error=row_error(e))
        print(json.dumps(dict(result, device=args.worker)), flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", default="output", help="a pipeline run's output root")
    ap.add_argument("--seconds", type=float, default=4.0, help="timed training per row")
    ap.add_argument("--devices", default=None, help="gpu,cpu (--smoke: cpu)")
    ap.add_argument("--quick", action="store_true", help="float32 rows of the default model only")
    ap.add_argument("--models", default="default,wide", help="which models' rows to run")
    ap.add_argument("--where", default="", help="only the rows with these values, e.g. xla=true,batch=256")
    smoke.add_arguments(ap, RESULTS)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    results = smoke.results_path(args, RESULTS)
    devices = args.devices or ("cpu" if args.smoke else "gpu,cpu")
    seconds = SMOKE_SECONDS if args.smoke else args.seconds
    find_run(args.output)  # fail here, with the fix, not in every worker
    # Each row is printed, and the results file rewritten, as soon as it is measured: a run cut
    # off (the GPU machine's per-command limit) keeps every row it finished.
    rows = []
    print(HEADER, flush=True)
    for device in devices.split(","):
        env = dict(os.environ, **({"CUDA_VISIBLE_DEVICES": ""} if device == "cpu" else {}))
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", device, "--output", args.output,
               "--seconds", str(seconds), "--models", args.models, "--where", args.where] + (
               ["--quick"] if args.quick else []) + (["--smoke"] if args.smoke else [])
        with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True) as proc:
            for line in proc.stdout:
                if line.startswith("{"):
                    record(rows, json.loads(line), results)
        if proc.returncode:
            record(rows, {"device": device, "error": f"worker exited {proc.returncode}"}, results)
    print(f"results: {results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
