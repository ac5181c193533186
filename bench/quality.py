"""Model quality: the pipeline's model next to gradient-boosted trees, on the same split.

    .venv/bin/python bench/quality.py [--output DIR] [--config taxi] [--set key=value ...] [--rerun]
    .venv/bin/python bench/quality.py --smoke [--output DIR]   # CI: a few trees, a temporary results file

Runs the pipeline into DIR (default output/quality) unless a finished run is there already
(``--rerun`` forces one), then scores, on the run's own eval split (ExampleGen's hash split):

* the run's trained model, through its exported ``serving_default`` signature with serialized
  raw tf.Examples of the serving columns, as a client calls it;
* scikit-learn's ``HistGradientBoostingClassifier`` fitted on the same run's train split, on
  the raw columns as they are: every column the model may read (string columns as
  categoricals), never the label's source columns.

Both sides select on the run's validation split and nothing else, so the eval split is
held out from both: the Trainer early-stops on it (the best epoch's weights), the trees take
the best of a small grid (learning rate x leaves x leaf size, ``TREE_GRID``) with the best
number of boosting rounds (up to ``TREE_ROUNDS``), each by validation AUC. A run without a
validation split (``data.validation_buckets=0``) early-stopped on eval; the trees then use
scikit-learn's own early stopping on 10% of train and the results say so.

The label of both is the one Transform computes (the transform graph applied to the raw
rows). Prints AUC, PR-AUC, accuracy and log loss overall and AUC per value of the slice
column (default: the first configured slice), and writes bench/results/quality.json.
Binary tasks only. scikit-learn is a TFX dependency already (in the lock), nothing extra.

--smoke: one point of the grid, SMOKE_TREE_ROUNDS rounds and SMOKE_BOOTSTRAP_ROUNDS resamples; the
run in --output is read as always (CI gives the test suite's shared run); without --output, one is
made beside the results file on 1,000 taxi rows with a few training steps.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from bench import smoke  # noqa: E402
from tfxline.pipeline.config import EVAL_SPLIT, TRAIN_SPLIT, VALIDATION_SPLIT  # noqa: E402
from tfxline.trainer.settings import TRAINING_RUN_FILE  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "quality.json")
TREE_ROUNDS = 1000
TREE_GRID = {"learning_rate": (0.03, 0.1), "max_leaf_nodes": (15, 31, 63), "min_samples_leaf": (20, 50)}
SMOKE_TREE_ROUNDS, SMOKE_TREE_GRID, SMOKE_BOOTSTRAP_ROUNDS = 20, {k: v[:1] for k, v in TREE_GRID.items()}, 20


def finished_run(cfg):
    """The newest run's summary when it trained a model, else None."""
    from tfxline.runs import store as store_lib
    from tfxline.runs import summary as summary_lib

    if not store_lib.store_exists(cfg.metadata_store):
        return None
    try:
        run = summary_lib.collect_run(cfg.metadata_store, cfg.name)
    except LookupError:
        return None
    return run if run.model_uri else None


def split_records(examples_uri: str, split: str):
    import tensorflow as tf

    files = sorted(glob.glob(os.path.join(examples_uri, f"Split-{split}", "*")))
    if not files:
        sys.exit(f"no {split} split under {examples_uri}")
    return [r.numpy() for r in tf.data.TFRecordDataset(files, compression_type="GZIP")]


def columns(records, names):
    """{column: list of python values (None when missing)} from serialized tf.Examples."""
    import tensorflow as tf

    out = {n: [] for n in names}
    for raw in records:
        feats = tf.train.Example.FromString(raw).features.feature
        for n in names:
            f = feats.get(n)
            kind = f.WhichOneof("kind") if f is not None else None
            values = list(getattr(f, kind).value) if kind else []
            v = values[0] if values else None
            out[n].append(v.decode() if isinstance(v, bytes) else v)
    return out


def labels(records, transform_graph: str, label: str) -> np.ndarray:
    """The label as Transform computes it: the transform graph applied to the raw rows."""
    import tensorflow as tf
    import tensorflow_transform as tft

    tft_output = tft.TFTransformOutput(transform_graph)
    layer = tft_output.transform_features_layer()
    spec = tft_output.raw_feature_spec()
    out = []
    for start in range(0, len(records), 2048):
        raw = tf.io.parse_example(tf.constant(records[start:start + 2048]), spec)
        out.append(layer(raw)[label].numpy())
    return np.concatenate(out).astype(np.int64)


def serving_requests(records, serving_columns):
    """Serialized tf.Examples of the serving columns only (what a client sends)."""
    import tensorflow as tf

    keep = set(serving_columns)
    out = []
    for raw in records:
        ex = tf.train.Example.FromString(raw)
        for name in [n for n in ex.features.feature if n not in keep]:
            del ex.features.feature[name]
        out.append(ex.SerializeToString())
    return out


def served_output(result):
    """The score among a serving_default call's outputs: ``probabilities`` (binary, multi-class) or
    ``predictions`` (regression), never the binary model's ``predicted_class`` beside it (the
    outputs' dict order differs from one load to the next)."""
    for key in ("probabilities", "predictions"):
        if key in result:
            return result[key]
    (only,) = result.values()
    return only


def model_scores(model_dir: str, requests) -> np.ndarray:
    import tensorflow as tf

    from tfxline.local.predict import load_serving_fn

    serve = load_serving_fn(model_dir)
    out = []
    for start in range(0, len(requests), 2048):
        result = serve(examples=tf.constant(requests[start:start + 2048]))
        out.append(served_output(result).numpy().reshape(-1))
    return np.concatenate(out)


def tree_matrix(cols, names, categories=None):
    """Numeric columns as float (NaN when missing); string columns as category codes."""
    categories = categories if categories is not None else {}
    matrix, is_cat = [], []
    for n in names:
        values = cols[n]
        if any(isinstance(v, str) for v in values):
            known = categories.setdefault(n, sorted({v for v in values if v is not None}))
            index = {v: i for i, v in enumerate(known)}
            matrix.append([index.get(v, np.nan) if v is not None else np.nan for v in values])
            is_cat.append(True)
        else:
            matrix.append([np.nan if v is None else float(v) for v in values])
            is_cat.append(False)
    return np.asarray(matrix, dtype=np.float64).T, np.asarray(is_cat), categories


def fit_trees(x_train, y_train, is_cat, x_val, y_val, grid=TREE_GRID, max_rounds=TREE_ROUNDS):
    """The gradient-boosted trees with the best validation AUC over ``grid`` and the number of
    rounds (scored after every round, up to ``max_rounds``). Returns (predict_proba, settings)."""
    import itertools

    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score

    if x_val is None:  # no validation split: scikit-learn's own early stopping on 10% of train
        trees = HistGradientBoostingClassifier(categorical_features=is_cat, max_iter=max_rounds,
                                               learning_rate=0.05, early_stopping=True, random_state=0)
        trees.fit(x_train, y_train)
        return (lambda x: trees.predict_proba(x)[:, 1]), {"selection": "10% of train", "rounds": trees.n_iter_}
    best = None
    for values in itertools.product(*grid.values()):
        params = dict(zip(grid, values))
        trees = HistGradientBoostingClassifier(categorical_features=is_cat, max_iter=max_rounds,
                                               early_stopping=False, random_state=0, **params)
        trees.fit(x_train, y_train)
        for rounds, p in enumerate(trees.staged_predict_proba(x_val), start=1):
            auc = roc_auc_score(y_val, p[:, 1])
            if best is None or auc > best[0]:
                best = (auc, rounds, params, trees)
    auc, rounds, params, trees = best

    def predict(x):  # the prediction after the best number of rounds
        for i, p in enumerate(trees.staged_predict_proba(x), start=1):
            if i == rounds:
                return p[:, 1]

    return predict, dict(params, selection="validation split", rounds=rounds, validation_auc=round(auc, 4))


def metrics(y: np.ndarray, p: np.ndarray, slice_values) -> dict:
    from sklearn.metrics import accuracy_score, average_precision_score, log_loss, roc_auc_score

    p = np.clip(p.astype(np.float64), 1e-7, 1 - 1e-7)
    out = {"auc": roc_auc_score(y, p), "pr_auc": average_precision_score(y, p),
           "accuracy": accuracy_score(y, p > 0.5), "log_loss": log_loss(y, p), "slices": {}}
    for value in sorted({v for v in slice_values if v is not None}):
        mask = np.asarray([v == value for v in slice_values])
        ys = y[mask]
        out["slices"][value] = {
            "n": int(mask.sum()), "positives": int(ys.sum()),
            "auc": roc_auc_score(ys, p[mask]) if 0 < ys.sum() < len(ys) else None}
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()}


BOOTSTRAP_ROUNDS = 1000


def paired_bootstrap(y: np.ndarray, p_model: np.ndarray, p_trees: np.ndarray, rounds=BOOTSTRAP_ROUNDS) -> dict:
    """Model minus trees per metric, with a 95% interval from resampling the eval rows (both
    scored on the same resample): a difference whose interval holds 0 is within the noise of
    this eval split. Lower is better for log loss, so a negative difference there favours the model."""
    from sklearn.metrics import accuracy_score, average_precision_score, log_loss, roc_auc_score

    scores = {"auc": roc_auc_score, "pr_auc": average_precision_score,
              "accuracy": lambda t, p: accuracy_score(t, p > 0.5), "log_loss": log_loss}
    p_model, p_trees = (np.clip(p.astype(np.float64), 1e-7, 1 - 1e-7) for p in (p_model, p_trees))
    rng = np.random.default_rng(0)
    diffs = {k: [] for k in scores}
    for _ in range(rounds):
        i = rng.integers(0, len(y), len(y))
        if 0 < y[i].sum() < len(i):
            for k, score in scores.items():
                diffs[k].append(score(y[i], p_model[i]) - score(y[i], p_trees[i]))
    out = {}
    for k, score in scores.items():
        lo, hi = np.percentile(diffs[k], [2.5, 97.5])
        out[k] = {"difference": round(float(score(y, p_model) - score(y, p_trees)), 4),
                  "low": round(float(lo), 4), "high": round(float(hi), 4)}
    return out


def fmt(v) -> str:
    return "-" if v is None else f"{v:.4f}"


def report(results, slice_column: str) -> str:
    model, trees = results["model"], results["trees"]
    lines = [f"{'metric':<12}{'model':>10}{'trees':>10}   model - trees, 95% paired bootstrap over the eval rows"]
    for key in ("auc", "pr_auc", "accuracy", "log_loss"):
        d = results["difference"][key]
        lines.append(f"{key:<12}{fmt(model[key]):>10}{fmt(trees[key]):>10}   "
                     f"{d['difference']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}]")
    lines.append(f"AUC per {slice_column} (eval rows, positives):")
    for value, m in sorted(model["slices"].items(), key=lambda kv: -kv[1]["n"]):
        t = trees["slices"][value]
        lines.append(f"  {value[:24]:<24}{m['n']:>6}{m['positives']:>6}{fmt(m['auc']):>10}{fmt(t['auc']):>10}")
    training, settings = results["training"], results["trees_settings"]
    held_out = ("eval held out from both" if results["validation_rows"]
                else "the model early-stopped on eval: its figures are optimistic")
    lines.append(f"rows: train {results['train_rows']}, validation {results['validation_rows']}, "
                 f"eval {results['eval_rows']} ({held_out})")
    lines.append(f"model: best epoch {training.get('best_epoch')} of {training.get('epochs')} run")
    lines.append("trees: " + ", ".join(f"{k} {v}" for k, v in settings.items() if k not in ("columns", "selection")))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", default="output/quality", help="the run's output root")
    ap.add_argument("--config", default=None, help="a packaged config name or a YAML path")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--rerun", action="store_true", help="run the pipeline even if a run is there")
    ap.add_argument("--slice", default=None, help="slice column (default: the first configured slice)")
    smoke.add_arguments(ap, RESULTS)
    args = ap.parse_args(argv)
    results_path = smoke.results_path(args, RESULTS)
    sets = args.set
    if args.smoke and args.output == ap.get_default("output"):  # a small run of its own, beside the results
        folder = os.path.dirname(results_path)
        args.output = os.path.join(folder, "run")
        sets = [f"data.path={smoke.taxi_rows(os.path.join(folder, 'taxi.csv'))}", *smoke.SETTINGS, *args.set]

    from tfxline.cli.quiet import import_tensorflow_quietly, quiet_libraries

    quiet_libraries()
    import_tensorflow_quietly()
    from tfxline.local import runner as local_runner
    from tfxline.pipeline.config.load import load_config
    from tfxline.transforms import features as F

    cfg = load_config(args.config, overrides=[f"output_root={args.output}", *sets])
    if cfg.features.task != F.TASK_BINARY:
        sys.exit(f"bench/quality.py compares binary classifiers; {cfg.name!r} is a {cfg.features.task} task")
    quiet_logs()
    run = None if args.rerun else finished_run(cfg)
    if run is None:
        run = local_runner.run(cfg, stream=sys.stdout)
    quiet_logs()  # the run is over; its log is in its log file
    example_gen = next(c for c in run.components if c.node_id.endswith("ExampleGen"))
    examples = example_gen.outputs["examples"][0]
    graph = run.component("Transform").outputs["transform_graph"][0]
    model_dir = os.path.join(run.model_uri, "Format-Serving")
    slice_column = args.slice or (cfg.evaluation.slices[0] if cfg.evaluation.slices else None)

    train, evals = split_records(examples, TRAIN_SPLIT), split_records(examples, EVAL_SPLIT)
    valid = split_records(examples, VALIDATION_SPLIT) if VALIDATION_SPLIT in cfg.data.splits else None
    label = cfg.features.label.name
    y_train, y_eval = labels(train, graph, label), labels(evals, graph, label)
    # Every raw column the trees may use: the data's columns minus the label's sources.
    all_columns = sorted({n for raw in train[:1] for n in _feature_names(raw)})
    tree_columns = [c for c in all_columns if c not in cfg.features.label.source_columns
                    or c in cfg.features.serving_columns]
    started = time.monotonic()
    p_model = model_scores(model_dir, serving_requests(evals, cfg.features.serving_columns))
    model_seconds = time.monotonic() - started

    x_train, is_cat, cats = tree_matrix(columns(train, tree_columns), tree_columns)
    x_eval, _, _ = tree_matrix(columns(evals, tree_columns), tree_columns, cats)
    x_val = tree_matrix(columns(valid, tree_columns), tree_columns, cats)[0] if valid else None
    y_val = labels(valid, graph, label) if valid else None
    started = time.monotonic()
    grid, rounds = (SMOKE_TREE_GRID, SMOKE_TREE_ROUNDS) if args.smoke else (TREE_GRID, TREE_ROUNDS)
    predict_trees, tree_settings = fit_trees(x_train, y_train, is_cat, x_val, y_val, grid, rounds)
    tree_seconds = time.monotonic() - started
    p_trees = predict_trees(x_eval)

    slice_values = columns(evals, [slice_column])[slice_column] if slice_column else [None] * len(evals)
    results = {
        "config": args.config or "taxi", "overrides": args.set, "run_id": run.run_id,
        "train_rows": len(train), "validation_rows": len(valid) if valid else 0, "eval_rows": len(evals),
        "eval_positive_rate": round(float(y_eval.mean()), 4),
        "model": metrics(y_eval, p_model, slice_values),
        "trees": metrics(y_eval, p_trees, slice_values),
        "difference": paired_bootstrap(y_eval, p_model, p_trees,
                                       SMOKE_BOOTSTRAP_ROUNDS if args.smoke else BOOTSTRAP_ROUNDS),
        "trees_settings": dict(tree_settings, columns=tree_columns), "trees_fit_seconds": round(tree_seconds, 1),
        "model_scoring_seconds": round(model_seconds, 1), "training": training_run(run),
    }
    if args.smoke:
        results["smoke"] = True
    print(report(results, slice_column))
    smoke.write_json(results_path, results)
    print(f"results: {results_path}")
    return 0


def quiet_logs() -> None:
    import logging

    import tensorflow as tf
    from absl import logging as absl_logging

    absl_logging.set_verbosity(absl_logging.WARNING)
    logging.getLogger().setLevel(logging.WARNING)
    tf.get_logger().setLevel(logging.ERROR)


def _feature_names(raw: bytes):
    import tensorflow as tf

    return list(tf.train.Example.FromString(raw).features.feature)


def training_run(run) -> dict:
    """The Trainer's own record of the run (epochs, steps, history), when there is one."""
    trainer = run.component("Trainer")
    for uri in (trainer.outputs.get("model_run") or []) if trainer else []:
        path = os.path.join(uri, TRAINING_RUN_FILE)
        if os.path.isfile(path):
            with open(path) as f:
                info = json.load(f)
            return {k: info.get(k) for k in ("mode", "epochs", "steps", "steps_per_epoch", "global_batch",
                                             "train_seconds", "best_epoch")} | {
                "val_auc": info.get("history", {}).get("val_auc")}
    return {}


if __name__ == "__main__":
    sys.exit(main())
