"""Fill the report template and write one self-contained HTML file (no external resource)."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

import jinja2
import markupsafe

from runs import files
from runs.report import collect as collect_lib
from runs.report import svg

REPORT_FILE = "report.html"
DATA_FILE = "report.json"
HISTOGRAM_WIDTH = 90  # a statistics table cell's histogram (three splits fit 1400 px)


def _number(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) >= 1000):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return str(value)


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(os.path.join(os.path.dirname(__file__), "templates")),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = _number
    env.filters["short"] = lambda v: "–" if v is None else svg.tick(v)  # a number in a few characters: 12.3k
    env.filters["clip"] = lambda v, limit=32: svg.clip(str(v), limit)  # a long value, shortened
    # a name that may wrap after each underscore (a table column need not be as wide as it)
    env.filters["breakable"] = lambda v: markupsafe.Markup(str(markupsafe.escape(v)).replace("_", "_<wbr>"))
    return env


def charts(data: Dict[str, Any]) -> Dict[str, Any]:
    """The SVGs the template places, built from the collected data."""
    out: Dict[str, Any] = {"dag": svg.dag(data["pipeline"]["nodes"]), "histograms": {}, "curves": []}
    for feature in data["data"]["features"]:
        for split, stats in feature["splits"].items():
            counts = [b["count"] for b in stats["histogram"]]
            out["histograms"][(feature["name"], split)] = svg.mini_histogram(
                counts, width=HISTOGRAM_WIDTH, title=f"{feature['name']} ({split}) histogram")
    for metric, series in sorted(data["training"]["curves"].items(), key=lambda kv: kv[0] != "loss"):
        if metric == "learning_rate":
            continue
        out["curves"].append(svg.line_chart(series, title=f"{metric} per epoch"))
    ev = data["evaluation"]
    metric = ev["slice_metric"]
    if ev["slices"]:
        items = [(s["slice"], s["metrics"][metric], f"(n={s['metrics'].get('example_count', 0):.0f})")
                 for s in ev["slices"]]
        hi = max(1.0, max(v for _, v, _ in items)) if metric not in ("auc", "accuracy") else 1.0
        out["slices"] = svg.bar_chart(items, title=f"{metric} per slice, worst first", hi=hi)
    else:
        out["slices"] = ""
    out["task"] = task_charts(ev)
    history = [h for h in ev.get("history", []) if h["value"] is not None]
    out["history"] = svg.line_chart(
        {ev["history_metric"]: [(i + 1, h["value"]) for i, h in enumerate(history)]},
        title=f"{ev['history_metric']} over the last {len(history)} runs (oldest first)",
        x_label="run") if len(history) >= 2 else ""
    return out


def task_charts(ev: Dict[str, Any]) -> List[str]:
    """A multi-class run's confusion matrix; a regression run's predicted vs actual and its
    residuals (label - prediction), over the evaluated sample."""
    matrix = ev.get("confusion_matrix") or {}
    sample = ev.get("prediction_sample") or {}
    out = []
    if matrix.get("classes"):
        out.append(svg.confusion_matrix(matrix["classes"], matrix["counts"], "confusion matrix (eval split)"))
    if sample.get("label"):
        labels, predictions = sample["label"], sample["prediction"]
        n = f"{len(labels)} eval rows"
        out.append(svg.scatter(labels, predictions, f"predicted vs actual ({n})", "actual", "predicted",
                               diagonal=True))
        out.append(svg.histogram([y - p for y, p in zip(labels, predictions)], f"residuals ({n})",
                                 "actual - predicted"))
    return out


def render(data: Dict[str, Any]) -> str:
    return _environment().get_template("report.html.j2").render(d=data, charts=charts(data))


def write_report(run_dir: str, data: Optional[Dict[str, Any]] = None) -> str:
    """Collect (unless given) and write ``<run_dir>/report.html`` (and the data beside it
    as ``report.json``); each file appears whole or not at all."""
    data = data if data is not None else collect_lib.collect(run_dir)
    html = render(data)
    files.write_json_atomic(os.path.join(run_dir, DATA_FILE), data)
    path = os.path.join(run_dir, REPORT_FILE)
    files.write_text_atomic(path, html)
    return path
