"""Where a training step's time goes: the TensorFlow profiler around a few warm steps of the
Trainer's model, summarised per step (trainer/profile.py, what ``runtime.profile_steps`` uses in
the Trainer): ops per step, time waiting for input, and on a GPU the kernels, copies and the
device's busy fraction; then a verdict (input-bound, launch-bound, device-bound). Not a test;
the GPU rows need CUPTI on the library path (bench/gpu_machine.sh carries it) for the device side.

    python bench/step_profile.py [--output OUTPUT_ROOT] [--device gpu|cpu] [--steps 40]
                                 [--rows NAME,...] [--traces DIR]
    python bench/step_profile.py --output OUTPUT_ROOT --smoke    # CI: every row, batch <= 64, 2 steps

Rows (gpu_bench's model and input pipeline, float32 unless named):
  b256      the default model at the pipeline's batch, one step per call
  b256-1dev the same under OneDeviceStrategy (what the Trainer's strategy auto picks on one GPU:
            the batches go through tf.distribute's iterator to the device; the issue's case)
  b256-mem  one batch repeated from memory (the input pipeline out of the way)
  b256-spe  50 steps per call, no training metrics (the cheapest step Keras offers)
  b4096     a batch that fills a GPU, 50 steps per call
  b256-xla  XLA on (on the H100: 45 fused kernels per step where the graph runs 150)
The traces stay in --traces (TensorBoard's Profile tab reads them); the summaries are printed
and written to --results (--smoke: gpu_bench.smoke_case's sizes, SMOKE_STEPS, a temporary file).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import gpu_bench, smoke  # noqa: E402
from bench.results_table import row_error, write_results  # noqa: E402
from tfxline.trainer import profile  # noqa: E402

ROWS = {
    "b256": gpu_bench.case("default", 256, spe=1),
    "b256-1dev": gpu_bench.case("default", 256, spe=1, strategy="one_device"),
    "b256-mem": gpu_bench.case("default", 256, spe=1, source="memory"),
    "b256-spe": gpu_bench.case("default", 256, spe=50, metrics=False),
    "b4096": gpu_bench.case("default", 4096, spe=50),
    "b256-xla": gpu_bench.case("default", 256, spe=1, xla=True),
}
RESULTS = os.path.join(ROOT, "bench", "results", "step_profile.json")
SMOKE_STEPS = 2


def profile_fit(trainable, ds, log_dir: str, executions: int, warmup: int = 3) -> int:
    """Fit ``warmup`` + ``executions`` executions of the train function, the profiler on for
    the last ``executions`` (a warm iterator and compiled function). Returns the steps traced."""
    spe = trainable._steps_per_execution.numpy().item()
    total = warmup + executions
    callback = profile.profile_callback_class()(log_dir, executions, total, warmup)
    trainable.fit(ds, steps_per_epoch=total * spe, epochs=1, verbose=0, callbacks=[callback])
    return callback.steps


def profile_row(info, files, name: str, row: dict, steps: int, traces: str, gpu: bool) -> dict:
    from tfxline.trainer import precision

    spe = row["steps_per_execution"]
    executions = max(2, -(-steps // spe))
    log_dir = os.path.join(traces, name)
    with precision.precision_policy(row["precision"]):
        trainable, _, ds = gpu_bench.build_training(info, files, row)
        traced = profile_fit(trainable, ds, log_dir, executions)
    summary = profile.summarize(profile.load(profile.find_trace(log_dir)), gpu=gpu, steps=traced)
    return {"name": name, **row, **summary, "trace": log_dir}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", default="output", help="a pipeline run's output root")
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu",
                    help="cpu hides the GPUs; gpu on a machine without one profiles the CPU (said so)")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"which rows, of {', '.join(ROWS)}")
    ap.add_argument("--steps", type=int, default=40, help="steps profiled per row")
    ap.add_argument("--traces", default="", help="where the traces stay (default: a temporary folder)")
    smoke.add_arguments(ap, RESULTS)
    args = ap.parse_args(argv)
    results_path = smoke.results_path(args, RESULTS)
    rows = {n: gpu_bench.smoke_case(r) for n, r in ROWS.items()} if args.smoke else ROWS
    steps = SMOKE_STEPS if args.smoke else args.steps
    unknown = [r for r in args.rows.split(",") if r not in ROWS]
    if unknown:
        ap.error(f"unknown rows {unknown}; choose from {', '.join(ROWS)}")
    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    info, files = gpu_bench.find_run(args.output)
    tf = gpu_bench.start_tensorflow()
    device = "gpu" if tf.config.list_physical_devices("GPU") else "cpu"
    if device != args.device:
        print("TensorFlow sees no GPU here: profiling the CPU", flush=True)
    traces = args.traces or tempfile.mkdtemp(prefix="tfxline-profile-")
    results = []
    for name in args.rows.split(","):
        try:
            result = profile_row(info, files, name, rows[name], steps, traces, device == "gpu")
            result["device"] = device
            print(f"== {name} ({device}): " + profile.format_summary(result), flush=True)
        except Exception as e:  # reported in the row, the bench goes on
            result = {"name": name, **rows[name], "device": device, "error": row_error(e)}
            print(f"== {name} ({device}): {result['error']}", flush=True)
        results.append(result)
        write_results(results_path, results)  # after each row: a cut-off run keeps them
    print(f"results: {results_path}; traces: {traces}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
