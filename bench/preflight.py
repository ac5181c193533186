"""How long `tfxline run` takes to refuse a bad CSV or a bad label (the pre-flight check), in a
fresh process as a user runs it: one line per case, with the exit code and the error line. The
check runs before TFX and TensorFlow load, so each case is the CLI's start plus reading the file.

    .venv/bin/python bench/preflight.py [--repeat 3]
    .venv/bin/python bench/preflight.py --smoke    # CI: each case once, 200-row label tables; exit 1
                                                   # when a case is not refused (exit 2 and an error line)

It writes no results file (docs/performance.md quotes no figure of it in a table).
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


SMOKE_LABEL_ROWS = 200
REFUSED = 2  # tfxline's exit code for a run refused before it starts


def cases(d: str, label_rows: int = 15_002):
    from tfxline.pipeline.data import source as data_source

    with open(data_source.default_data_path(), newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]

    def write(name, lines, **kw):
        path = os.path.join(d, name)
        with open(path, "w", newline="", **kw) as f:
            csv.writer(f).writerows(lines)
        return path

    missing = [c for c in header if c != "company"]
    keep = [header.index(c) for c in missing]
    text = [r[:] for r in body]
    text[-1][header.index("fare")] = "twelve"
    return {name: (path, []) for name, path in {
        "empty file": write("empty.csv", []),
        "header only": write("header.csv", [header]),
        "missing column (15,002 rows)": write("missing.csv", [missing] + [[r[i] for i in keep] for r in body]),
        "text in a numeric column, last row": write("text.csv", [header] + text),
        "semicolon-delimited": write("semi.csv", [[";".join(header)]]),
        "Latin-1 bytes": _latin1(d, header, body),
    }.items()} | label_cases(d, write, label_rows)


def label_cases(d, write, rows=15_002):
    """The label checks (pipeline/data/labels.py) on a 15,002-row table, the bad value in its last row."""
    schema = os.path.join(d, "label.pbtxt")
    with open(schema, "w") as f:
        f.write('feature { name: "x" type: INT }\nfeature { name: "y" type: BYTES }\n')

    def table(name, values, last):
        return write(name, [["x", "y"]] + [[i, values[i % len(values)]] for i in range(rows - 1)] + [[rows, last]])

    def run(transform, *sets):
        args = ["--set", f"data.schema={schema}", "--set", "evaluation.slices=[]", "--set",
                f"features={{label: {{name: y, transform: {transform}}}, inputs: [{{name: x, transform: zscore}}]}}"]
        return args + [a for s in sets for a in ("--set", s)]

    return {
        "binary label, a third value": (table("l3.csv", ["yes", "no"], "maybe"),
                                        run("binary", 'features.label.positive="yes"')),
        "binary label, no positive: set": (table("lp.csv", ["yes", "no"], "no"), run("binary")),
        "multi-class label, one class": (table("l1.csv", ["a"], "a"), run("class_vocabulary")),
        "regression label, text": (table("lt.csv", ["1.5", "2"], "n/a"), run("regression")),
        "empty labels, missing_labels: fail": (table("le.csv", ["a", "b", ""], "a"),
                                               run("class_vocabulary", "data.missing_labels=fail")),
    }


def _latin1(d, header, body):
    path = os.path.join(d, "latin1.csv")
    rows = [header] + [r[:] for r in body[:100]]
    rows[50][header.index("company")] = "Taxi Affiliation Services Café"
    with open(path, "w", newline="", encoding="latin-1") as f:
        csv.writer(f).writerows(rows)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="each case once on small label tables; exit 1 "
                                                              "when one is not refused")
    args = parser.parse_args()
    tfxline = os.path.join(os.path.dirname(sys.executable), "tfxline")
    not_refused = []
    with tempfile.TemporaryDirectory() as d:
        for name, (path, extra) in cases(d, SMOKE_LABEL_ROWS if args.smoke else 15_002).items():
            times, out = [], None
            for _ in range(1 if args.smoke else args.repeat):
                started = time.monotonic()
                out = subprocess.run([tfxline, "run", "--data", path, "--output", os.path.join(d, "out"), *extra],
                                     capture_output=True, text=True)
                times.append(time.monotonic() - started)
            line = (out.stderr.strip().splitlines() or ["(no error line)"])[-1]
            print(f"{name:38s} median {statistics.median(times):5.2f} s  exit {out.returncode}  {line[:110]}")
            if out.returncode != REFUSED or not line.startswith("error: "):
                not_refused.append(name)
    if args.smoke and not_refused:
        sys.exit(f"error: not refused before the run (exit {REFUSED} and an error line): {', '.join(not_refused)}")


if __name__ == "__main__":
    main()
