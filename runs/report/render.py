"""Fill the report template and write one self-contained HTML file (no external resource); or
render some of its sections as one fragment for a notebook cell (``fragment``)."""
from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Optional, Sequence

import jinja2
import markupsafe

from tfxline.runs import files
from tfxline.runs.report import collect as collect_lib
from tfxline.runs.report import svg

REPORT_FILE = "report.html"
DATA_FILE = "report.json"
SECTIONS = ("pipeline", "data", "tuning", "training", "evaluation", "serving", "lineage")  # in page order
FRAGMENT_CLASS = "tfxline-report"  # a fragment's element, which its CSS is scoped to
HISTOGRAM_WIDTH = 90  # a statistics table cell's histogram (three splits fit 1400 px)
TEMPLATES = os.path.join(os.path.dirname(__file__), "templates")  # package data (setup.py)


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
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["num"] = _number
    env.filters["short"] = lambda v: "–" if v is None else svg.tick(v)  # a number in a few characters: 12.3k
    env.filters["clip"] = lambda v, limit=32: svg.clip(str(v), limit)  # a long value, shortened
    # a name that may wrap after each underscore (a table column need not be as wide as it)
    env.filters["breakable"] = lambda v: markupsafe.Markup(str(markupsafe.escape(v)).replace("_", "_<wbr>"))
    return env


def charts(data: Dict[str, Any]) -> Dict[str, Any]:
    """The SVGs the template places, built from the collected data (of the sections ``data`` holds:
    a fragment may have only some)."""
    out: Dict[str, Any] = {"dag": "", "histograms": {}, "curves": [], "slices": "", "task": [], "history": ""}
    if "pipeline" in data:
        out["dag"] = svg.dag(data["pipeline"]["nodes"])
    for feature in data["data"]["features"] if "data" in data else ():
        for split, stats in feature["splits"].items():
            counts = [b["count"] for b in stats["histogram"]]
            out["histograms"][(feature["name"], split)] = svg.mini_histogram(
                counts, width=HISTOGRAM_WIDTH, title=f"{feature['name']} ({split}) histogram")
    curves = data["training"]["curves"] if "training" in data else {}
    for metric, series in sorted(curves.items(), key=lambda kv: kv[0] != "loss"):
        if metric == "learning_rate":
            continue
        out["curves"].append(svg.line_chart(series, title=f"{metric} per epoch"))
    if "evaluation" in data:
        out.update(evaluation_charts(data["evaluation"]))
    return out


def evaluation_charts(ev: Dict[str, Any]) -> Dict[str, Any]:
    """The metric per slice, worst first; the task's own charts; the main metric over the last runs."""
    out: Dict[str, Any] = {"slices": ""}
    metric = ev["slice_metric"]
    if ev["slices"]:
        items = [(s["slice"], s["metrics"][metric], f"(n={s['metrics'].get('example_count', 0):.0f})")
                 for s in ev["slices"]]
        hi = max(1.0, max(v for _, v, _ in items)) if metric not in ("auc", "accuracy") else 1.0
        out["slices"] = svg.bar_chart(items, title=f"{metric} per slice, worst first", hi=hi)
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
        out.append(svg.confusion_matrix(matrix["classes"], matrix["counts"],
                                        matrix.get("title") or "confusion matrix (eval split)"))
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


def fragment(data: Dict[str, Any], sections: Sequence[str] = SECTIONS) -> str:
    """Sections of the report as one HTML fragment, for a notebook cell (``IPython.display.HTML``):
    the page's own section templates and charts, its CSS scoped to the fragment (the notebook keeps
    its own look), no script, nothing fetched. ``data``: ``collect``'s or ``read_data``'s; it needs
    only the parts the sections named show (e.g. ``{"data": data.statistics_section(...)}``)."""
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise ValueError(f"no report section {', '.join(unknown)}; the sections are {', '.join(SECTIONS)}")
    data = {"run": {}, **data}
    env = _environment()
    # The class twice: a notebook's own style sheet reaches into outputs with two classes (JupyterLab
    # right-aligns their table cells with ':not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td');
    # as specific, the report's rules come later in the page and win.
    with open(os.path.join(TEMPLATES, "report.css"), encoding="utf-8") as f:
        css = scoped_css(f.read(), f".{FRAGMENT_CLASS}" * 2)
    return env.get_template("fragment.html.j2").render(
        d=data, charts=charts(data), sections=list(sections), css=css, scope=FRAGMENT_CLASS)


def scoped_css(css: str, scope: str) -> str:
    """Each rule of ``css`` limited to the elements inside ``scope`` (``body`` becomes ``scope``
    itself): the report's style sheet inside a page that has its own."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)

    def scoped(selector: str) -> str:
        selector = selector.strip()
        return scope if selector == "body" else f"{scope} {selector}"

    return "".join(f"{', '.join(scoped(s) for s in selectors.split(','))} {{{body}}}\n"
                   for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css))


def read_data(run_dir: str) -> Dict[str, Any]:
    """What a run's report shows: the data its page was written from (``report.json``), or
    collected again from the run's artifacts when that file is absent."""
    path = os.path.join(run_dir, DATA_FILE)
    if not os.path.isfile(path):
        return collect_lib.collect(run_dir)
    with open(path) as f:
        return json.load(f)


def write_report(run_dir: str, data: Optional[Dict[str, Any]] = None) -> str:
    """Collect (unless given) and write ``<run_dir>/report.html`` (and the data beside it
    as ``report.json``); each file appears whole or not at all."""
    data = data if data is not None else collect_lib.collect(run_dir)
    html = render(data)
    files.write_json_atomic(os.path.join(run_dir, DATA_FILE), data)
    path = os.path.join(run_dir, REPORT_FILE)
    files.write_text_atomic(path, html)
    return path
