"""`tfxline init` then `tfxline run`, as the docs tell a new user, on three public tables with
empty cells and text labels, one per task (tests/data/tables: R datasets written by pandas):
each model is blessed and pushed on the first run, with the config exactly as init wrote it,
and the pushed model predicts the table's own rows (issue #48)."""
import csv
import json
import os

import pytest

from tests.conftest import tfxline
from tests.test_init import BIRTHS, CHILE, MORTGAGE

pytestmark = [pytest.mark.e2e, pytest.mark.one_stack(
    "1.21", why="init is pure Python; the three tasks' pipelines run on the host stack in test_tasks_e2e.py")]

TABLES = {
    # table, label, what the run's summary must say beyond BLESSED
    "binary": (MORTGAGE, "deny", "auc"),
    "multiclass": (CHILE, "vote", "168 rows without a label left out of training and evaluation"),
    "regression": (BIRTHS, "weight", "r2"),
}


@pytest.mark.parametrize("task", list(TABLES))
def test_init_then_run_is_blessed_and_pushed_first_time(tmp_path, task):
    data, label, expected = TABLES[task]
    project, output = tmp_path / "project", tmp_path / "out"
    made = tfxline("init", "--data", data, "--label", label, "--dir", str(project))
    assert made.returncode == 0, made.stderr
    assert f"label {label}: {task}" in made.stdout
    run = tfxline("run", "--config", str(project / "config.yaml"), "--output", str(output))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "blessing: BLESSED" in run.stdout, run.stdout
    assert "pushed to: " in run.stdout and expected in run.stdout, run.stdout
    report = [line.split("report: ", 1)[1] for line in run.stdout.splitlines() if "report: " in line][-1]
    with open(report.strip()) as f:
        html = f.read()
    if task == "multiclass":  # the report counts the rows left out too
        assert "168 rows without a label left out of training and evaluation" in html
    # the pushed model takes the table's raw rows, empty cells and all, without the label; from the
    # second row on, one more cell empty in each, so every column, full in the table or not, is
    # left out of some request (the drafted schema makes every column optional)
    rows = tmp_path / "rows.csv"
    with open(data, newline="") as f, open(rows, "w", newline="") as out:
        reader = csv.DictReader(f)
        inputs = [c for c in reader.fieldnames if c != label]
        writer = csv.DictWriter(out, inputs)
        writer.writeheader()
        for i, row in zip(range(25), reader):
            writer.writerow({k: "" if i and k == inputs[(i - 1) % len(inputs)] else v
                             for k, v in row.items() if k != label})
    predictions = tmp_path / "predictions.jsonl"
    done = tfxline("predict", "--config", str(project / "config.yaml"), "--output", str(output),
                   "--input", str(rows), "--predictions", str(predictions))
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert len(lines) == 25
    key = {"binary": "probability", "multiclass": "predicted_class", "regression": "prediction"}[task]
    assert all(key in line for line in lines)
    if task == "multiclass":  # the label's own values, never the empty label as a class
        assert {line["predicted_class"] for line in lines} <= {"Y", "N", "U", "A"}
        # JSON lines keep types: every class's probability an object, numbers as numbers, empty as null
        assert set(lines[0]["probabilities"]) == {"Y", "N", "U", "A"}
        assert lines[0]["age"] == 65.0 and lines[0]["region"] == "N"
        assert all(line["income"] is None or isinstance(line["income"], float) for line in lines)
    assert os.listdir(output / "serving")
