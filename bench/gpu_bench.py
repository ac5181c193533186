"""Trainer throughput, GPU and CPU on the same machine: examples/s per precision, XLA,
steps_per_execution, batch and model width; prints a table (not a test).

    python bench/gpu_bench.py [--output OUTPUT_ROOT] [--seconds 4] [--devices gpu,cpu] [--quick]

It retrains the model a pipeline run trained (its ``training_run.json`` names the model
inputs and cardinalities) on that run's Transform output (the cached, GZIP TFRecords), with
this project's input pipeline (trainer.data), model (trainer.model) and precision policy.
Only TensorFlow and tf_keras are imported on this path: no tft, tfx-bsl or TFX, so it runs
from the TF-only GPU bundle (../shared/gpu/README.md). Each device runs in its own process
(the CPU rows with the GPUs hidden); GPU rows are skipped, with a line saying so, where
TensorFlow sees no GPU. GPU utilisation is sampled with nvidia-smi during each timed row.

Rows: the default model at batch 256 (the pipeline's batch) and 4096 (a batch that fills a
GPU), float32 / mixed_bfloat16 / mixed_float16, steps_per_execution 1 and 50, XLA on and off;
a wide model ([2048] x 3 hidden units) at batch 8192 with its achieved TFLOP/s. "graph ops"
and "variables" count what one training step launches (the forward graph's ops and the
variables the optimizer updates), the figure the fused model was built to cut.
Results: bench/results/gpu_bench.json.
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
RESULTS = os.path.join(ROOT, "bench", "results", "gpu_bench.json")
WIDE = (2048, 2048, 2048)

# (model, batch, precision, steps_per_execution, xla)
ROWS = [
    ("default", 256, "float32", 1, False),
    ("default", 256, "float32", 50, False),
    ("default", 256, "mixed_bfloat16", 50, False),
    ("default", 256, "mixed_float16", 50, False),
    ("default", 256, "float32", 50, True),
    ("default", 4096, "float32", 50, False),
    ("default", 4096, "mixed_bfloat16", 50, False),
    ("default", 4096, "mixed_float16", 50, False),
    ("default", 4096, "float32", 50, True),
    ("wide", 8192, "float32", 10, False),
    ("wide", 8192, "mixed_bfloat16", 10, False),
    ("wide", 8192, "mixed_float16", 10, False),
]
QUICK = [r for r in ROWS if r[0] == "default" and r[2] == "float32" and not r[4]]


def find_run(output_root: str):
    """(training_run.json of the newest Trainer run, train TFRecords of its Transform output)."""
    infos = sorted(glob.glob(os.path.join(output_root, "pipeline_root", "Trainer", "model_run", "*",
                                          "training_run.json")), key=os.path.getmtime)
    infos = [p for p in infos if "model_inputs" in json.load(open(p))]
    examples = sorted(glob.glob(os.path.join(output_root, "pipeline_root", "Transform",
                                             "transformed_examples", "*", "Split-train")), key=os.path.getmtime)
    if not infos or not examples:
        sys.exit(f"no finished pipeline run under {output_root}; run 'tfxline run --output {output_root}' first")
    with open(infos[-1]) as f:
        return json.load(f), os.path.join(examples[-1], "*")


def mlp_flops_per_example(input_width: int, hidden, out_units: int = 1) -> int:
    """Multiply-adds x 2 of the dense layers, forward + backward (x3)."""
    widths = [input_width, *hidden, out_units]
    return 6 * sum(a * b for a, b in zip(widths, widths[1:]))


def step_launch_counts(model) -> dict:
    import tensorflow as tf

    specs = {i.name: tf.TensorSpec([None], i.dtype) for i in model.inputs}
    graph = tf.function(model).get_concrete_function(specs).graph
    return {"graph_ops": len(graph.get_operations()), "variables": len(model.trainable_variables)}


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


def measure(info, files, row, seconds: float, on_gpu: bool) -> dict:
    import tensorflow as tf

    from trainer import data, precision
    from trainer.keras_compat import keras
    from trainer.model import Head, ModelInput, build_model, loss_and_metrics, optimizer

    kind, batch, policy, spe, xla = row
    inputs = [ModelInput(name, card) for name, card in info["model_inputs"]]
    head = Head(**info["head"])
    hidden = WIDE if kind == "wide" else tuple(info["model"]["hidden_units"])
    spec = {mi.name: tf.io.FixedLenFeature([], tf.int64 if mi.is_categorical else tf.float32) for mi in inputs}
    spec[info["label"]] = tf.io.FixedLenFeature([], tf.int64)
    ds = data.make_dataset([files], spec, info["label"], batch, shuffle=True, seed=1)
    tf.keras.utils.set_random_seed(1)
    with precision.precision_policy(policy):
        model = build_model(inputs, head, hidden, info["model"]["dropout"], info["model"]["embedding_max_dim"],
                            info["model"].get("batch_norm", False))
        loss, metrics = loss_and_metrics(head)
        model.compile(optimizer=precision.wrap_optimizer(optimizer(1e-3), policy), loss=loss, metrics=metrics,
                      steps_per_execution=spe, jit_compile=xla)
        times = []

        class Timer(keras().callbacks.Callback):
            def on_epoch_begin(self, epoch, logs=None):
                self.t = time.perf_counter()

            def on_epoch_end(self, epoch, logs=None):
                times.append(time.perf_counter() - self.t)

        model.fit(ds, steps_per_epoch=2 * spe, epochs=2, verbose=0, callbacks=[Timer()])  # compile, warm up
        per_step = times[-1] / (2 * spe)
        steps = max(spe, int(seconds / max(per_step, 1e-6)) // spe * spe)
        times.clear()
        with GpuSampler() if on_gpu else _Null() as sampler:
            model.fit(ds, steps_per_epoch=steps, epochs=1, verbose=0, callbacks=[Timer()])
    rate = steps * batch / times[-1]
    width = model.get_layer("deep_0").input.shape[-1]
    out = {"model": kind, "batch": batch, "precision": policy, "steps_per_execution": spe, "xla": xla,
           "examples_per_s": round(rate), "ms_per_step": round(1000 * times[-1] / steps, 3), "steps": steps,
           "gpu_util_percent": getattr(sampler, "mean", None), **step_launch_counts(model)}
    if kind == "wide":
        out["tflops"] = round(rate * mlp_flops_per_example(width, hidden, head.units) / 1e12, 2)
    return out


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def worker(args) -> None:
    """One device's rows, as JSON lines on stdout."""
    import tensorflow as tf

    from trainer.keras_compat import skip_autograph_for_tf_keras
    from trainer.strategy import enable_memory_growth

    enable_memory_growth()
    skip_autograph_for_tf_keras()  # as run_fn does: AutoGraph must not convert tf_keras itself
    on_gpu = args.worker == "gpu"
    if on_gpu and not tf.config.list_physical_devices("GPU"):
        print(json.dumps({"skipped": "gpu", "why": "TensorFlow sees no GPU on this machine"}), flush=True)
        return
    info, files = find_run(args.output)
    for row in [r for r in (QUICK if args.quick else ROWS) if r[0] in args.models.split(",")]:
        if not on_gpu and row[0] == "wide":
            if row[2] != "float32":
                continue  # 16-bit matmuls of this size on a CPU: minutes per row, nothing learned
            row = row[:3] + (2,) + row[4:]  # seconds per step here: a short execution
        try:
            result = measure(info, files, row, args.seconds, on_gpu)
        except Exception as e:  # a row that cannot run here (e.g. XLA without ptxas) is reported
            result = {"model": row[0], "batch": row[1], "precision": row[2], "steps_per_execution": row[3],
                      "xla": row[4], "error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
        print(json.dumps(dict(result, device=args.worker)), flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", default="output", help="a pipeline run's output root")
    ap.add_argument("--seconds", type=float, default=4.0, help="timed training per row")
    ap.add_argument("--devices", default="gpu,cpu")
    ap.add_argument("--quick", action="store_true", help="float32 rows of the default model only")
    ap.add_argument("--models", default="default,wide", help="which models' rows to run")
    ap.add_argument("--results", default=RESULTS)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    find_run(args.output)  # fail here, with the fix, not in every worker
    rows = []
    for device in args.devices.split(","):
        env = dict(os.environ, **({"CUDA_VISIBLE_DEVICES": ""} if device == "cpu" else {}))
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", device, "--output", args.output,
               "--seconds", str(args.seconds), "--models", args.models] + (["--quick"] if args.quick else [])
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
        for line in proc.stdout.splitlines():
            if line.startswith("{"):
                rows.append(json.loads(line))
        if proc.returncode:
            rows.append({"device": device, "error": f"worker exited {proc.returncode}"})
    print(table(rows))
    os.makedirs(os.path.dirname(args.results), exist_ok=True)
    with open(args.results, "w") as f:
        json.dump({"machine": machine(), "rows": rows}, f, indent=2)
    print(f"results: {args.results}")
    return 0


def machine() -> dict:
    import platform

    return {"cpus": os.cpu_count(), "platform": platform.platform()}


def table(rows) -> str:
    lines = [f"{'device':<7}{'model':<8}{'batch':>6} {'precision':<15}{'spe':>4} {'xla':<4}"
             f"{'examples/s':>11}{'ms/step':>9}{'ops':>6}{'vars':>5}{'gpu%':>6}{'TFLOP/s':>8}"]
    for r in rows:
        if "skipped" in r:
            lines.append(f"{r['skipped']}: skipped ({r['why']})")
        elif "error" in r and "model" not in r:
            lines.append(f"{r['device']}: {r['error']}")
        elif "error" in r:
            lines.append(f"{r['device']:<7}{r['model']:<8}{r['batch']:>6} {r['precision']:<15}"
                         f"{r['steps_per_execution']:>4} {'on' if r['xla'] else 'off':<4} {r['error']}")
        else:
            lines.append(f"{r['device']:<7}{r['model']:<8}{r['batch']:>6} {r['precision']:<15}"
                         f"{r['steps_per_execution']:>4} {'on' if r['xla'] else 'off':<4}{r['examples_per_s']:>11}"
                         f"{r['ms_per_step']:>9}{r['graph_ops']:>6}{r['variables']:>5}"
                         f"{'-' if r['gpu_util_percent'] is None else r['gpu_util_percent']:>6}"
                         f"{r.get('tflops', '-'):>8}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
