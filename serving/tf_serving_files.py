"""The files TF Serving reads from a release (serving/release.py writes them together;
docs/serving.md, "Release labels"): ``models.config`` (``--model_config_file``),
``batching_parameters.txt`` (``--enable_batching --batching_parameters_file``) and
``monitoring.config`` (``--monitoring_config_file``). Text from values: no file is touched here."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Sequence, Tuple

from tfxline.serving import storage

MODELS_CONFIG = "models.config"
BATCHING_FILE = "batching_parameters.txt"
MONITORING_FILE = "monitoring.config"
PROMETHEUS_PATH = "/monitoring/prometheus/metrics"
DEFAULT_BATCHING = {"max_batch_size": 128, "batch_timeout_micros": 1000}  # when nothing was measured


def base_path(serving_dir: str, configured: str) -> str:
    """The serving directory as TF Serving sees it: ``configured`` (serving.tf_serving_base_path),
    else its absolute path or URI, as TF Serving wants (server_core.cc:141-149)."""
    return configured or (serving_dir if storage.is_uri(serving_dir) else os.path.abspath(storage.local(serving_dir)))


def models_config(model_name: str, base: str, versions: Sequence[int],
                  labels: Sequence[Tuple[str, Optional[int]]]) -> str:
    """TF Serving's ModelServerConfig in text format: ``specific`` loads ``versions`` (the
    labelled ones and a pending move's); ``labels``: (label, version) in force, each naming a
    loaded version (None: no such label)."""
    lines = ["# TF Serving's --model_config_file, written by tfxline (serving/release.py)",
             "model_config_list {", "  config {", f"    name: {_quote(model_name)}",
             f"    base_path: {_quote(base)}", '    model_platform: "tensorflow"']
    if versions:
        lines.append("    model_version_policy {")
        lines.append("      specific {")
        lines += [f"        versions: {v}" for v in versions]
        lines += ["      }", "    }"]
    for label, v in labels:
        if v is not None:
            lines.append(f"    version_labels {{ key: {_quote(label)} value: {v} }}")
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def batching_choice(measured: Optional[Dict[str, Any]], batch_threads: int) -> Dict[str, Any]:
    """TF Serving's batching settings from the model's measured latency per batch size
    ({"latency_ms": {batch: p50 ms}}, measured at push by serving.batch_latency):

    - max_batch_size: the smallest measured batch whose cost per example is within 10 % of the
      cheapest measured (larger batches buy little more throughput, and every request in them
      waits for the whole batch);
    - batch_timeout_micros: the latency of a batch of one: a lone request waits at most about as
      long again as it takes to run;
    - allowed_batch_sizes: the measured sizes up to max_batch_size (a batch is padded to the next);
    - num_batch_threads: ``serving.batch_threads``, or this machine's CPU count.
    """
    threads = batch_threads or os.cpu_count() or 1
    threads_from = "serving.batch_threads" if batch_threads else "the CPU count of the machine that wrote it"
    latency = {int(b): float(ms) for b, ms in ((measured or {}).get("latency_ms") or {}).items()}
    if not latency:
        return dict(DEFAULT_BATCHING, num_batch_threads=threads, threads_from=threads_from, allowed_batch_sizes=[],
                    how="not measured (a version pushed before the measurement); TF Serving's usual starting values")
    per_example = {b: ms / b for b, ms in latency.items()}
    best = min(per_example.values())
    max_batch = min(b for b, cost in per_example.items() if cost <= 1.1 * best)
    timeout = max(100, int(round(latency.get(1, min(latency.values())) * 1000)))
    how = (f"measured p50 ms per batch {', '.join(f'{b}: {latency[b]:.2f}' for b in sorted(latency))}; "
           f"max_batch_size {max_batch}: the smallest batch within 10 % of the cheapest cost per example "
           f"({best * 1000:.1f} us); batch_timeout_micros {timeout}: a batch of one's latency")
    return {"max_batch_size": max_batch, "batch_timeout_micros": timeout, "num_batch_threads": threads,
            "threads_from": threads_from, "allowed_batch_sizes": sorted(b for b in latency if b <= max_batch),
            "how": how}


def batching_parameters(choice: Dict[str, Any]) -> str:
    lines = ["# TF Serving's --batching_parameters_file (with --enable_batching), written by tfxline",
             f"# {choice['how']}",
             f"# Tuned where it was written, not on the serving host: num_batch_threads is {choice['threads_from']}, "
             "the latencies were measured in-process on the pushing machine.",
             "# Re-tune on the serving host: serving.batch_threads = its CPU cores (the next label move rewrites this "
             "file), then under real traffic try batch_timeout_micros 0 and 1000-10000",
             "# and keep the best tail latency (TF Serving's tensorflow_serving/batching/README.md, "
             "Performance Tuning).",
             f"max_batch_size {{ value: {choice['max_batch_size']} }}",
             f"batch_timeout_micros {{ value: {choice['batch_timeout_micros']} }}",
             f"num_batch_threads {{ value: {choice['num_batch_threads']} }}",
             "max_enqueued_batches { value: 100 }"]
    lines += [f"allowed_batch_sizes: {b}" for b in choice.get("allowed_batch_sizes", [])]
    return "\n".join(lines) + "\n"


def monitoring_config() -> str:
    return ("# TF Serving's --monitoring_config_file, written by tfxline: Prometheus scrapes\n"
            f"# http://<host>:<rest_api_port>{PROMETHEUS_PATH}\n"
            f'prometheus_config {{\n  enable: true\n  path: "{PROMETHEUS_PATH}"\n}}\n')


def _quote(text: str) -> str:
    return json.dumps(text)
