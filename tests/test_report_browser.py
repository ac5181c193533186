"""The report in a real browser: headless Chromium (Debian's, /usr/bin/chromium, driven by
Playwright) opens the file:// page of the shared run and of the failed run. No console
error, no request that is not the page itself, every section present and filled in.
Full-page screenshots are kept in test-artifacts/py<version>/."""
import json
import os
import sys

import pytest

from pipeline.report import render
from tests.conftest import missing

pytestmark = pytest.mark.e2e

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
