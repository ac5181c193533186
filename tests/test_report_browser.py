"""The report in a real browser: headless Chromium (Debian's, /usr/bin/chromium, driven by
Playwright) opens the file:// page of the shared run and of the failed run. No console
error, no request that is not the page itself, every section present and filled in.
The layout at 1400 px on literal data (no pipeline run: these are unit tests): long class
names, large and tiny numbers, a wide statistics table, a flat history. Full-page
screenshots are kept in test-artifacts/py<version>/."""
import json
import os
import sys

import pytest

from tfxline.runs.report import render
from tests.conftest import missing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# One folder per Python (stack): the suite also runs in the Debian 13 root on the same tree.
ARTIFACTS = os.path.join(ROOT, "test-artifacts", "py%d%d" % sys.version_info[:2])
CHROMIUM = os.environ.get("TFXLINE_CHROMIUM", "/usr/bin/chromium")
# Headless, and nothing in the background: this machine's network is closed, and a page
# that is self-contained must not need it.
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        missing(f"Chromium not found at {CHROMIUM}: apt-get install chromium (or set TFXLINE_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def open_report(browser, path, screenshot):
    """Load the page; return (page, console errors, requests, failed requests)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors, requests, failed = [], [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.goto("file://" + path, wait_until="load")
    os.makedirs(ARTIFACTS, exist_ok=True)
    page.screenshot(path=os.path.join(ARTIFACTS, screenshot), full_page=True)
    return page, errors, requests, failed


def assert_only_the_page_was_loaded(path, errors, requests, failed):
    assert errors == []
    assert failed == []
    assert requests == ["file://" + path]


def section_text(page, section):
    locator = page.locator(f"section#{section}")
    assert locator.count() == 1 and locator.is_visible(), section
    return locator.inner_text()


@pytest.mark.e2e
@pytest.mark.one_stack("1.16", why="the report page in Chromium; the report's data is read on both stacks in test_report.py")
def test_report_of_the_shared_run_in_chromium(browser, pipeline_run):
    cfg, summary, _ = pipeline_run
    with open(os.path.join(os.path.dirname(summary.report_path), render.DATA_FILE)) as f:
        data = json.load(f)
    page, errors, requests, failed = open_report(browser, summary.report_path, "report.png")
    assert_only_the_page_was_loaded(summary.report_path, errors, requests, failed)
    for section in ("pipeline", "data", "training", "evaluation", "serving", "lineage"):
        assert len(section_text(page, section)) > 80, section
    assert page.locator("section#pipeline svg.dag g.node").count() == len(data["pipeline"]["nodes"])
    assert page.locator("section#data table.features tr[data-feature]").count() == len(data["data"]["features"])
    assert page.locator("section#data svg.hist").count() >= len(data["data"]["features"])
    assert page.locator("section#training svg.chart").count() >= 2
    assert page.locator("section#evaluation svg.chart rect.bar").count() == len(data["evaluation"]["slices"])
    assert "blessed" in section_text(page, "evaluation")
    assert "b64" in page.locator("section#serving pre.request").inner_text()
    assert summary.pushed_to in section_text(page, "serving")
    assert page.locator("section#lineage tr").count() == 1 + len(data["lineage"])
    page.close()


@pytest.mark.e2e
@pytest.mark.one_stack("1.16", why="the report page in Chromium; the report's data is read on both stacks in test_report.py")
def test_report_of_the_failed_run_in_chromium(browser, anomalies_run):
    _, _, stdout, _ = anomalies_run
    path = next(l.split("report: ", 1)[1] for l in stdout.splitlines() if l.startswith("report: "))
    page, errors, requests, failed = open_report(browser, path, "report-failed.png")
    assert_only_the_page_was_loaded(path, errors, requests, failed)
    assert "violates the schema" in page.locator("section#error").inner_text()
    assert page.locator("section#data table.anomalies tr.anomalous").count() >= 1
    assert "not pushed" in section_text(page, "serving")
    assert page.locator('section#pipeline svg.dag g.node[data-state="failed"]').count() == 1
    page.close()


@pytest.mark.e2e
@pytest.mark.one_stack("1.16", why="the report page in Chromium; the report's data is read on both stacks in test_report.py")
@pytest.mark.parametrize("runs, screenshot", [("multiclass_runs", "report-multiclass.png"),
                                              ("regression_runs", "report-regression.png")])
def test_each_tasks_own_charts_in_chromium(browser, request, runs, screenshot):
    """A multi-class run's confusion matrix (a cell per actual x predicted class, counts adding up
    to the eval rows); a regression run's predicted vs actual (a point per sampled row) and its
    residual histogram."""
    cfg, (summary, _), _, _ = request.getfixturevalue(runs)
    path = os.path.join(cfg.output_root, "runs", summary.run_id, render.REPORT_FILE)
    with open(os.path.join(os.path.dirname(path), render.DATA_FILE)) as f:
        ev = json.load(f)["evaluation"]
    page, errors, requests, failed = open_report(browser, path, screenshot)
    assert_only_the_page_was_loaded(path, errors, requests, failed)
    charts = page.locator("section#evaluation .task-charts svg")
    if runs == "multiclass_runs":
        classes = ev["confusion_matrix"]["classes"]
        assert charts.count() == 1 and charts.first.is_visible()
        cells = page.locator("section#evaluation svg[aria-label^='confusion matrix'] rect.cell")
        assert cells.count() == len(classes) ** 2
        shown = sum(int(t) for t in page.locator("section#evaluation svg[aria-label^='confusion matrix'] "
                                                 "text.count").all_text_contents())  # SVG: no innerText
        assert shown == int(summary.metrics["example_count"])
    else:
        assert charts.count() == 2
        points = page.locator("section#evaluation svg[aria-label^='predicted vs actual'] circle")
        assert points.count() == len(ev["prediction_sample"]["label"]) > 0
        bins = page.locator("section#evaluation svg[aria-label^='residuals'] rect.bin")
        assert 0 < bins.count() <= 30 and all(page.locator("section#evaluation .task-charts svg").nth(i).is_visible()
                                              for i in range(2))
    page.close()


# --- The layout, on literal data ------------------------------------------------------------

LONG_CLASSES = ["Pygoscelis adeliae (Adélie, Torgersen Island colony)",
                "Pygoscelis antarcticus (Chinstrap, Dream Island)",
                "Pygoscelis papua (Gentoo penguin, Biscoe Island group)",
                "Aptenodytes forsteri (Emperor, Ross Sea ice shelf)"]
SPLITS = {"train": 833, "validation": 117, "eval": 250}


def numeric_stats(low, mean, high, count):
    step = (high - low) / 7
    return {"type": "float", "count": count, "missing_pct": 0.0, "min": low, "mean": mean, "max": high,
            "histogram": [{"low": low + i * step, "high": low + (i + 1) * step, "count": c}
                          for i, c in enumerate((1, 4, 9, 12, 9, 4, 1))]}


def string_stats(values, count):
    return {"type": "string", "count": count, "missing_pct": 1.25, "unique": len(values),
            "top_values": [{"value": v, "count": 300 - i} for i, v in enumerate(values[:3])],
            "histogram": [{"label": v, "count": 300 - i} for i, v in enumerate(values)]}


def literal_report(task):
    """A whole report's data as runs/report/collect.py returns it: a multi-class run with
    long class names and a flat history, or a regression run with labels in the hundreds of
    millions (a loss near 1e16); both with three splits of wide statistics."""
    features = {
        "island_of_the_sighting_recorded": lambda n: string_stats(["Torgersen", "Dream", "Biscoe"], n),
        "species": lambda n: string_stats(LONG_CLASSES, n),
        "price_eur": lambda n: numeric_stats(61017284.0, 411866181.3, 793159744.0, n),
        "bill_depth_mm": lambda n: numeric_stats(11.0, 15.51, 19.9, n),
        "tiny_rate": lambda n: numeric_stats(0.0000121, 0.000342, 0.00213, n),
    }
    epochs = range(10)
    if task == "multiclass":
        curves = {"loss": {"train": [[e, 1.1 / (e + 1)] for e in epochs],
                           "validation": [[e, 0.6 / (e + 1)] for e in epochs]},
                  "accuracy": {"train": [[e, 0.5 + 0.04 * e] for e in epochs],
                               "validation": [[e, 0.75 + 0.02 * e] for e in epochs]}}
        n = len(LONG_CLASSES)
        evaluation = {"overall": {"accuracy": 0.63, "example_count": 250.0, "loss": 0.9},
                      "slice_metric": "accuracy", "history_metric": "accuracy",
                      "history": [{"run_id": "r1", "value": 0.63}, {"run_id": "r2", "value": 0.63}],
                      "confusion_matrix": {"classes": LONG_CLASSES,
                                           "counts": [[50.0 if i == j else 4.0 for j in range(n)] for i in range(n)]},
                      "prediction_sample": {"label": [], "prediction": []},
                      "slices": [{"slice": f"island_of_the_sighting_recorded={island}",
                                  "metrics": {"accuracy": 0.6 + 0.01 * i, "example_count": 80.0}}
                                 for i, island in enumerate(["Torgersen", "Dream", "Biscoe"])]}
    else:
        curves = {"loss": {"train": [[e, 1.247e16 / (e + 1) ** 2] for e in epochs],
                           "validation": [[e, 6.1e15 / (e + 1) ** 2] for e in epochs]},
                  "rmse": {"train": [[e, 1.117e8 / (e + 1)] for e in epochs],
                           "validation": [[e, 7.8e7 / (e + 1)] for e in epochs]}}
        labels = [61017284.0 + 7.3e6 * i for i in range(100)]
        evaluation = {"overall": {"rmse": 29217822.49, "mae": 23858569.8, "r2": 0.9652, "example_count": 231.0},
                      "slice_metric": "rmse", "history_metric": "rmse",
                      "history": [{"run_id": "r1", "value": 29217822.49}, {"run_id": "r2", "value": 29217822.49}],
                      "confusion_matrix": {"classes": [], "counts": []},
                      "prediction_sample": {"label": labels, "prediction": [y * 1.01 + 2e6 for y in labels]},
                      "slices": [{"slice": f"district={d}", "metrics": {"rmse": 2.9e7 + 1e6 * i, "example_count": 60.0}}
                                 for i, d in enumerate(["north", "south", "east", "west"])]}
    evaluation.update({"available": True, "blessed": True, "failed_thresholds": [], "undefined": {},
                       "baseline_diff": {}, "slices_undefined": [], "baseline_uri": "", "baseline_version": None,
                       "baseline_model_uri": "", "task": task,
                       "thresholds": [{"metric": evaluation["slice_metric"], "rule": ">= 0.3"}]})
    nodes = [{"id": "CsvExampleGen", "upstream": [], "level": 0, "state": "complete", "seconds": 1.2, "cached": False},
             {"id": "StatisticsGen", "upstream": ["CsvExampleGen"], "level": 1, "state": "cached", "seconds": 0.0,
              "cached": True}]
    return {
        "run": {"pipeline_name": "wide", "run_id": "r2", "started": "now", "wall_seconds": 30.0, "error": "",
                "output_root": "/o", "spans": "", "drift": "nothing to compare with: nothing serving yet"},
        "pipeline": {"nodes": nodes, "failed": [], "complete": True},
        "data": {"splits": list(SPLITS), "examples": dict(SPLITS), "anomalies": [], "schema_path": "/o/schema.pbtxt",
                 "schema_text": "feature {}", "available": True,
                 "features": [{"name": name, "type": make(1)["type"], "anomalous": False,
                               "splits": {split: make(n) for split, n in SPLITS.items()}}
                              for name, make in sorted(features.items())]},
        "training": {"available": True, "deleted": False, "curves": curves, "logdir": "/o/model_run", "profile": None,
                     "settings": {"strategy": "DefaultStrategy", "device": "cpu", "replicas": 1, "precision": "float32",
                                  "examples_per_second": 3254.0, "epochs": 10, "best_epoch": 7, "resumed_at_epoch": 0,
                                  "steps": 270, "global_batch": 32, "train_seconds": 2.66, "learning_rate": 0.01,
                                  "batch_reason": "", "early_stopping": ""}},
        "evaluation": evaluation,
        "serving": {"pushed": True, "destination": "/o/serving/wide/1", "inputs": {}, "outputs": {}, "request": "",
                    "curl": "", "model_name": "wide", "reason": ""},
        "lineage": [{"label": "Data (examples)", "producer": "CsvExampleGen", "uri": "/o/examples/1", "id": 1,
                     "type": "Examples"}],
    }


def tick_value(text):
    """The number an axis tick shows: '0.63', '-1.5k', '597M', '1.25e16', '3.2e-5'."""
    scale = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    text = text.replace("\u2212", "-")
    return float(text[:-1]) * scale[text[-1]] if text[-1] in scale else float(text)


# Every <text> of every chart: what it shows (not its tooltip), its box and whether that box
# lies inside its <svg>'s (SVG has no innerText).
SVG_TEXTS = """() => [...document.querySelectorAll('svg')].flatMap((svg, i) => {
  const box = svg.getBoundingClientRect();
  return [...svg.querySelectorAll('text')].map(t => {
    const r = t.getBoundingClientRect();
    return {svg: i, chart: svg.getAttribute('aria-label'), cls: t.getAttribute('class') || '',
            text: [...t.childNodes].filter(n => n.nodeType === Node.TEXT_NODE).map(n => n.textContent).join(''),
            left: r.left, right: r.right, top: r.top, bottom: r.bottom,
            inside: r.left >= box.left - 0.5 && r.right <= box.right + 0.5 && r.top >= box.top - 0.5
                    && r.bottom <= box.bottom + 0.5};
  });
})"""


def overlap(a, b):
    return a["left"] < b["right"] - 0.5 and b["left"] < a["right"] - 0.5 and \
        a["top"] < b["bottom"] - 0.5 and b["top"] < a["bottom"] - 0.5


@pytest.fixture(params=["multiclass", "regression"])
def literal_page(request, browser, tmp_path):
    path = str(tmp_path / "report.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(render.render(literal_report(request.param)))
    page, errors, requests, failed = open_report(browser, path, f"report-literal-{request.param}.png")
    assert_only_the_page_was_loaded(path, errors, requests, failed)
    yield request.param, page, page.evaluate(SVG_TEXTS)
    page.close()


def test_every_chart_text_is_inside_its_chart(literal_page):
    """No tick label, class name or slice name is cut off at a chart's edge (a loss near 1e16
    once showed '247e+16' on an axis too narrow for '1.247e+16')."""
    _, _, texts = literal_page
    outside = [(t["chart"], t["text"]) for t in texts if not t["inside"]]
    assert outside == []


def test_axis_ticks_are_short_numbers(literal_page):
    """Large and small numbers on an axis read as 597M, 12.5k, 1.25e16, 3.2e-5: never
    Python's '1.247e+16', never more than 8 characters."""
    _, _, texts = literal_page
    ticks = [t["text"] for t in texts if "axis-value" in t["cls"].split()]
    assert ticks and all(len(t) <= 8 and "e+" not in t for t in ticks), ticks
    for t in ticks:
        tick_value(t)  # each parses as a number


@pytest.mark.parametrize("literal_page", ["multiclass"], indirect=True)
def test_confusion_matrix_class_names_do_not_overlap(literal_page):
    """Long class names across the top and down the side: each shown apart from the others
    and told apart (no two read the same)."""
    _, _, texts = literal_page
    names = [t for t in texts if (t["chart"] or "").startswith("confusion matrix") and "class-name" in t["cls"].split()]
    assert len(names) == 2 * len(LONG_CLASSES)
    for across in ("column", "row"):
        shown = [t for t in names if across in t["cls"].split()]
        assert len({t["text"] for t in shown}) == len(LONG_CLASSES), [t["text"] for t in shown]
    clashes = [(a["text"], b["text"]) for i, a in enumerate(names) for b in names[i + 1:] if overlap(a, b)]
    assert clashes == []


def test_the_statistics_table_fits_a_1400_px_window(literal_page):
    """Three splits of statistics, long string values and nine-digit numbers: no horizontal
    scrolling at 1400 px."""
    _, page, _ = literal_page
    table, box = page.evaluate("""() => {
      const t = document.querySelector('section#data table.features');
      return [t.getBoundingClientRect().width, t.parentElement.clientWidth]; }""")
    assert table <= box, f"the statistics table is {table:.0f} px wide in a {box} px section"
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400


def test_a_flat_history_is_drawn_around_its_value(literal_page):
    """Two runs with the same value: the y axis hugs the value (0.63 once showed 0.13 to 1.13)."""
    task, _, texts = literal_page
    value = literal_report(task)["evaluation"]["history"][0]["value"]
    ticks = [tick_value(t["text"]) for t in texts if (t["chart"] or "").startswith(f"{task == 'regression' and 'rmse' or 'accuracy'} over")
             and "y" in t["cls"].split() and "axis-value" in t["cls"].split()]
    assert ticks and min(ticks) < value < max(ticks)
    assert all(abs(t - value) <= 0.1 * value for t in ticks), ticks
