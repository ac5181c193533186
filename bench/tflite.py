"""The pushed model as TFLite, per quantization: file size, single-example latency (p50 / p99)
in the TFLite interpreter against the SavedModel's serving signature, and the task's metric
against the SavedModel's on the same eval rows (serving/tflite.py builds each one
exactly as a push with serving.tflite does, gate included).

    .venv/bin/python bench/tflite.py                         # the taxi default: runs it first
    .venv/bin/python bench/tflite.py --config penguin --config penguin_mass --write
    .venv/bin/python bench/tflite.py --smoke --output DIR    # CI: a served run's model, 20 latency rows

Each config is run once into bench/.tflite/<config> (kept, so a second bench reuses it;
--output DIR: the run's output root, DIR/<config> with several configs);
--write stores the figures in bench/results/tflite.json (tools/bench_tables.py renders the
table in docs/serving.md from it), --results FILE elsewhere. --smoke times SMOKE_LATENCY_ROWS
examples per format and writes to a temporary file (bench/smoke.py).
"""
from __future__ import annotations

import argparse
import glob
import os
import platform
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import smoke  # noqa: E402
from tfxline.cli.quiet import import_tensorflow_quietly, quiet_libraries  # noqa: E402

LATENCY_ROWS = 300
SMOKE_LATENCY_ROWS = 20
RESULTS = os.path.join(ROOT, "bench", "results", "tflite.json")


def ensure_run(config: str, output: str, run_args=()):
    from tfxline.serving import push as serving_push
    from tfxline.pipeline.config.load import load_config

    cfg = load_config(config, overrides=[f"output_root={output}"])
    if not serving_push.versions(cfg.serving_dir):
        print(f"[{config}] running the pipeline into {output} ...", flush=True)
        subprocess.run([sys.executable, "-m", "tfxline.cli.main", "run", "--config", config, "--output", output, *run_args],
                       check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return cfg


def percentiles(seconds):
    import numpy as np
    ms = np.asarray(seconds) * 1000
    return round(float(np.percentile(ms, 50)), 3), round(float(np.percentile(ms, 99)), 3)


def single_example_latency(call, rows):
    for row in rows[:10]:
        call(row)  # warm-up
    times = []
    for row in rows:
        start = time.perf_counter()
        call(row)
        times.append(time.perf_counter() - start)
    return percentiles(times)


def bench_config(config: str, output: str, latency_rows: int = LATENCY_ROWS, run_args=()) -> dict:
    import tensorflow as tf

    from tfxline.serving import push as serving_push
    from tfxline.serving import tflite as T
    from tfxline.serving.batch_latency import eval_records
    from tfxline.trainer.export import SERVING_SIGNATURE

    cfg = ensure_run(config, output, run_args)
    version = serving_push.versions(cfg.serving_dir)[-1]
    model_dir = os.path.join(cfg.serving_dir, str(version))
    examples_uri = serving_push.read_metadata(cfg.serving_dir, version)["data"]["examples_uri"]
    (transform_dir,) = sorted(glob.glob(os.path.join(cfg.pipeline_root, "Transform", "transform_graph", "*")))[-1:]
    evals = eval_records(examples_uri, T.PARITY_ROWS)
    train = eval_records(examples_uri, T.CALIBRATION_ROWS, split="train")
    serve = tf.saved_model.load(model_dir).signatures[SERVING_SIGNATURE]
    rows = evals[:latency_rows]
    saved_p50, saved_p99 = single_example_latency(lambda r: serve(examples=tf.constant([r])), rows)
    saved_bytes = sum(os.path.getsize(p) for p in glob.glob(os.path.join(model_dir, "**"), recursive=True)
                      if os.path.isfile(p) and not p.endswith((T.FILE, serving_push.METADATA_FILE)))
    result = {"task": cfg.features.task, "eval_rows": len(evals), "savedmodel": {
        "bytes": saved_bytes, "p50_ms": saved_p50, "p99_ms": saved_p99}, "modes": {}}
    inputs = T.columns_from_examples(rows, cfg.features, transform_dir)
    for mode in T.MODES:
        try:
            exported = T.export(model_dir, transform_dir, cfg.features, mode, evals, train)
        except T.TFLiteError as e:
            result["modes"][mode] = {"refused": str(e)}
            print(f"[{config}] {mode:8s} refused: {e}", flush=True)
            continue
        runner = T.Runner(exported.content)
        p50, p99 = single_example_latency(
            lambda i: runner({k: v[i:i + 1] for k, v in inputs.items()}), list(range(len(rows))))
        p = exported.parity
        result["modes"][mode] = {"bytes": len(exported.content), "p50_ms": p50, "p99_ms": p99,
                                 "metric": p.metric, "tflite_metric": p.tflite_metric,
                                 "saved_model_metric": p.saved_model_metric, "max_abs_diff": p.max_abs_diff,
                                 "flex_ops": exported.flex_ops}
        print(f"[{config}] {mode:8s} {len(exported.content) / 1024:7.0f} KB  p50 {p50:.3f} ms  p99 {p99:.3f} ms  "
              f"{p.metric} {p.tflite_metric:.4f} (SavedModel {p.saved_model_metric:.4f})  "
              f"max diff {p.max_abs_diff:.3g}", flush=True)
    print(f"[{config}] SavedModel {saved_bytes / 1024:7.0f} KB  p50 {saved_p50:.3f} ms  p99 {saved_p99:.3f} ms",
          flush=True)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", help="a packaged config or YAML file (repeatable; default: taxi)")
    parser.add_argument("--write", action="store_true", help="store the figures in bench/results/tflite.json")
    parser.add_argument("--output", default=None,
                        help="the run's output root (several configs: DIR/<config>; default bench/.tflite/<config>)")
    smoke.add_arguments(parser, RESULTS)
    args = parser.parse_args(argv)
    results_path = smoke.results_path(args, RESULTS)
    write = args.write or args.smoke or args.results is not None
    configs = args.config or ["taxi"]
    latency_rows = SMOKE_LATENCY_ROWS if args.smoke else LATENCY_ROWS
    run_args = []
    if args.smoke and not args.output:  # a small run of its own, served whatever it scores
        args.output = os.path.join(os.path.dirname(results_path), "runs")
        data = ["--data", smoke.taxi_rows(os.path.join(args.output, "taxi.csv"))] if configs == ["taxi"] else []
        run_args = data + [a for s in smoke.SETTINGS + smoke.PUSHED for a in ("--set", s)]
    from tfxline.trainer.keras_compat import select_legacy_keras
    select_legacy_keras()  # before TensorFlow is imported, as the CLI does
    quiet_libraries()
    import_tensorflow_quietly()
    import tensorflow as tf

    results = {"machine": {"cpu": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                           "tensorflow": tf.__version__},
               "latency": f"single example, {latency_rows} eval rows after 10 warm-up calls", "models": {}}
    for config in configs:
        output = os.path.join(args.output or os.path.join(ROOT, "bench", ".tflite"), config)
        if args.output and len(configs) == 1:
            output = args.output
        results["models"][config] = bench_config(config, output, latency_rows, run_args)
    if args.smoke:
        results["smoke"] = True
    if write:
        smoke.write_json(results_path, results, sort_keys=True, newline=True)
        print(f"results: {results_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
