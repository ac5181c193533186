"""The pushed model as TFLite, per quantization: file size, single-example latency (p50 / p99)
in the TFLite interpreter against the SavedModel's serving signature, and the task's metric
against the SavedModel's on the same eval rows (serving/tflite.py builds each one
exactly as a push with serving.tflite does, gate included).

    .venv/bin/python bench/tflite.py                         # the taxi default: runs it first
    .venv/bin/python bench/tflite.py --config penguin --config penguin_mass --write

Each config is run once into bench/.tflite/<config> (kept, so a second bench reuses it);
--write stores the figures in bench/results/tflite.json (tools/bench_tables.py renders the
table in docs/serving.md from it).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from cli.quiet import import_tensorflow_quietly, quiet_libraries  # noqa: E402

LATENCY_ROWS = 300


def ensure_run(config: str, output: str):
    from serving import push as serving_push
    from pipeline.config_loader import load_config

    cfg = load_config(config, overrides=[f"output_root={output}"])
    if not serving_push.versions(cfg.serving_dir):
        print(f"[{config}] running the pipeline into {output} ...", flush=True)
        subprocess.run([sys.executable, "-m", "cli.main", "run", "--config", config, "--output", output],
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


def bench_config(config: str, output: str) -> dict:
    import tensorflow as tf

    from serving import push as serving_push
    from serving import tflite as T
    from serving.batch_latency import eval_records
    from trainer.export import SERVING_SIGNATURE

    cfg = ensure_run(config, output)
    version = serving_push.versions(cfg.serving_dir)[-1]
    model_dir = os.path.join(cfg.serving_dir, str(version))
    examples_uri = serving_push.read_metadata(cfg.serving_dir, version)["data"]["examples_uri"]
    (transform_dir,) = sorted(glob.glob(os.path.join(cfg.pipeline_root, "Transform", "transform_graph", "*")))[-1:]
    evals = eval_records(examples_uri, T.PARITY_ROWS)
    train = eval_records(examples_uri, T.CALIBRATION_ROWS, split="train")
    serve = tf.saved_model.load(model_dir).signatures[SERVING_SIGNATURE]
    rows = evals[:LATENCY_ROWS]
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
    args = parser.parse_args(argv)
    from trainer.keras_compat import select_legacy_keras
    select_legacy_keras()  # before TensorFlow is imported, as the CLI does
    quiet_libraries()
    import_tensorflow_quietly()
    import tensorflow as tf

    results = {"machine": {"cpu": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                           "tensorflow": tf.__version__},
               "latency": f"single example, {LATENCY_ROWS} eval rows after 10 warm-up calls", "models": {}}
    for config in args.config or ["taxi"]:
        results["models"][config] = bench_config(config, os.path.join(ROOT, "bench", ".tflite", config))
    if args.write:
        with open(os.path.join(ROOT, "bench", "results", "tflite.json"), "w") as f:
            json.dump(results, f, indent=2, sort_keys=True)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
