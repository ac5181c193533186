"""The report page and its SVG charts on literal data (no pipeline run): a run that failed
before any data was read still renders, and the charts are well-formed on edge cases."""
import xml.etree.ElementTree as ET

import pytest

from tfxline.runs.report import render, svg


def failed_early_run():
    nodes = [{"id": "CsvExampleGen", "upstream": [], "level": 0, "state": "failed", "seconds": 1.2, "cached": False},
             {"id": "StatisticsGen", "upstream": ["CsvExampleGen"], "level": 1, "state": "not run",
              "seconds": None, "cached": False}]
    return {
        "run": {"pipeline_name": "taxi", "run_id": "r1", "started": "now", "wall_seconds": 1.5,
                "error": "ValueError: bad <csv> & more", "output_root": "/o", "spans": "span 3",
                "drift": "nothing to compare with: nothing serving yet"},
        "pipeline": {"nodes": nodes, "failed": ["CsvExampleGen"], "complete": False},
        "data": {"splits": [], "examples": {}, "features": [], "anomalies": [], "schema_path": "",
                 "schema_text": "", "available": False},
        "training": {"available": False, "curves": {}, "settings": {}, "logdir": ""},
        "evaluation": {"available": False, "overall": {}, "baseline_diff": {}, "slices": [],
                       "slices_undefined": [], "thresholds": [], "blessed": None, "failed_thresholds": [],
                       "slice_metric": "", "baseline_uri": ""},
        "serving": {"pushed": False, "destination": "", "inputs": {}, "outputs": {}, "request": "",
                    "curl": "", "model_name": "taxi",
                    "reason": "the run failed at CsvExampleGen, before the Pusher"},
        "lineage": [{"label": "Data (examples)", "producer": "CsvExampleGen", "uri": "", "id": None, "type": ""}],
    }


def test_a_run_that_failed_before_any_data_renders_every_section():
    html = render.render(failed_early_run())
    for section in ("error", "pipeline", "data", "training", "evaluation", "serving", "lineage"):
        assert f'<section id="{section}">' in html
    assert "bad &lt;csv&gt; &amp; more" in html  # escaped, not markup
    assert "No statistics" in html and "No training" in html and "No evaluation" in html
    assert "not pushed" in html and "the run failed at CsvExampleGen" in html
    assert 'data-state="failed"' in html and "not produced" in html
    assert "data: span 3" in html and "drift check: nothing to compare with" in html


def parse(svg_text):
    return ET.fromstring(svg_text)  # well-formed XML, or this raises


def test_charts_are_well_formed_on_edge_cases():
    assert svg.mini_histogram([]) == ""
    assert parse(svg.mini_histogram([0, 0, 0], title="a<b")).tag.endswith("svg")
    assert parse(svg.line_chart({"train": [(0, 0.5)]}, title="one point")) is not None
    assert svg.line_chart({}, title="none") == ""
    bars = parse(svg.bar_chart([("x=<1>", 0.4, "(n=3)"), ("y", 1.7, "")], title="t"))
    assert len([e for e in bars.iter() if e.tag.endswith("rect")]) == 2
    dag = parse(svg.dag(failed_early_run()["pipeline"]["nodes"]))
    assert len([e for e in dag.iter() if e.tag.endswith("line")]) == 1


def test_report_command_on_what_is_not_a_recorded_run(tmp_path, capsys):
    import json

    from tfxline.cli import main as cli

    def one_error_line(argv):
        assert cli.main(argv) == cli.EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: ")
        return err

    assert "no run.json" in one_error_line(["report", str(tmp_path)])
    run_dir = tmp_path / "runs" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"metadata_store": str(tmp_path / "gone.sqlite")}))
    assert "is gone" in one_error_line(["report", str(run_dir)])
    assert "no recorded run" in one_error_line(["report", "--output", str(tmp_path / "empty")])
    assert not (run_dir / "report.html").exists()


def test_axis_numbers_are_short_and_readable():
    """A tick shows at most 8 characters: SI suffixes for large numbers, a plain exponent past
    10^12 and below 0.001 (Python's '1.247e+16' was cut off on a narrow axis)."""
    shown = {v: svg.tick(v) for v in (0, 0.63, -0.5985, -0.005867, 12.345, 4521, 9999.6, 12345, -2.61e6, 597e6,
                                       1.48e9, 1.247e16, -1.247e16, 3.2e-5, 0.00099)}
    assert shown == {0: "0", 0.63: "0.63", -0.5985: "-0.5985", -0.005867: "-0.00587", 12.345: "12.35", 4521: "4521",
                     9999.6: "10k", 12345: "12.3k", -2.61e6: "-2.61M", 597e6: "597M", 1.48e9: "1.48G",
                     1.247e16: "1.25e16", -1.247e16: "-1.25e16", 3.2e-5: "3.2e-5", 0.00099: "9.9e-4"}
    assert all(len(t) <= 8 for t in shown.values())


def y_ticks(chart):
    return [t.text for t in parse(chart).iter() if t.tag.endswith("text") and "y" in t.get("class", "").split()]


def test_a_flat_series_is_drawn_around_its_value():
    """Two runs with the same value: the axis hugs it, the value on the middle tick (0.63 once
    spanned 0.13 to 1.13); a value between 0 and 1 keeps its axis there."""
    assert y_ticks(svg.line_chart({"accuracy": [(1, 0.63), (2, 0.63)]}, title="history")) == ["0.6174", "0.63", "0.6426"]
    assert y_ticks(svg.line_chart({"rmse": [(1, 2.9e7), (2, 2.9e7)]}, title="history")) == ["28.4M", "29M", "29.6M"]
    assert y_ticks(svg.line_chart({"auc": [(1, 1.0), (2, 1.0)]}, title="history")) == ["0.98", "0.99", "1"]


def test_the_y_axis_is_as_wide_as_its_labels():
    """The plot starts right of the widest y tick label (a loss near 1e16 once lost its first digits)."""
    chart = svg.line_chart({"train": [(0, 1.247e16), (1, 7.9e14)]}, title="loss")
    axis = next(e for e in parse(chart).iter() if e.tag.endswith("line"))
    assert y_ticks(chart) == ["7.9e14", "6.63e15", "1.25e16"]
    assert float(axis.get("x1")) >= max(len(t) for t in y_ticks(chart)) * svg.CHAR_W + 4


def test_confusion_matrix_names_long_classes_whole_or_told_apart():
    """Long class names: the row labels' column is as wide as the longest shown name, the column
    labels stand upright, each shortened name is still unique, and the whole name is its tooltip."""
    classes = ["Pygoscelis adeliae (Adélie, Torgersen Island colony)", "Pygoscelis antarcticus (Chinstrap, Dream)",
               "Pygoscelis papua (Gentoo penguin, Biscoe Island group)"]
    chart = parse(svg.confusion_matrix(classes, [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "confusion matrix"))
    names = [t for t in chart.iter() if t.tag.endswith("text") and "class-name" in t.get("class", "")]
    shown = [(t.text or "") + "".join(c.tail or "" for c in t) for t in names]
    assert len(set(shown)) == 3 and all(len(s) <= svg.MAX_LABEL for s in shown)
    assert [next(c for c in t if c.tag.endswith("title")).text for t in names] == classes * 2
    assert all("rotate(-90" in t.get("transform", "") for t in names if "column" in t.get("class"))
    first_cell = next(e for e in chart.iter() if e.tag.endswith("rect"))
    assert float(first_cell.get("x")) >= max(len(s) for s in shown) * svg.CHAR_W


def test_an_undefined_metric_against_the_baseline_renders(tmp_path):
    """A candidate that predicted no positives has no precision, so neither has its difference
    from the serving model: the row says so (the page crashed with 'must be real number, not
    NoneType', the console lost its report line, and the run's metrics their comparison)."""
    data = failed_early_run()
    data["evaluation"].update(
        available=True, blessed=False, overall={"auc": 0.733, "precision": None, "example_count": 600},
        undefined={"precision": "no positive predictions"}, baseline_diff={"auc": -0.229, "precision": None},
        failed_thresholds=["auc 0.7330 is 0.2290 below the serving model's 0.9620"])
    html = render.render(data)
    row = html[html.index('<tr data-metric="precision">'):]
    row = row[:row.index("</tr>")]
    assert "undefined: no positive predictions" in row and "undefined" in row.split('class="n"')[-1]
    assert '<tr data-metric="auc">' in html and "-0.2290" in html


def test_a_report_that_cannot_be_written_is_one_console_warning(capsys):
    import sys

    from tfxline.cli import run_command
    from tfxline.runs.summary import RunSummary

    run_command.print_summary(RunSummary(run_id="r1", components=[], report_error="TypeError: must be real number"), sys.stdout)
    out = capsys.readouterr().out
    assert "  warning: report not written (TypeError: must be real number); the run's result stands" in out
    assert "report: " not in out.replace("warning: report not written", "")


@pytest.mark.parametrize("task", ["binary", "multiclass", "regression"])
@pytest.mark.parametrize("with_baseline", [False, True])
def test_every_task_renders_with_every_metric_undefined(task, with_baseline):
    """#50: whatever the task, a candidate whose every headline metric is undefined (TFMA's NaN,
    read as None) renders, with a serving model to compare with (its differences undefined too)
    and without one."""
    from tfxline.components import task_metrics

    names = task_metrics.VIEWS[task].headline
    data = failed_early_run()
    data["evaluation"].update(
        available=True, blessed=False, task=task, overall={name: None for name in names},
        undefined={name: "no examples of one class" for name in names},
        baseline_diff={name: None for name in names} if with_baseline else {},
        baseline_version=3 if with_baseline else None, history_metric=names[0],
        history=[{"run_id": "r0", "value": None}, {"run_id": "r1", "value": None}],
        confusion_matrix={"classes": [], "counts": []}, prediction_sample={"label": [], "prediction": []},
        failed_thresholds=[f"{names[0]} is undefined"])
    html = render.render(data)
    for name in names:
        row = html[html.index(f'<tr data-metric="{name}">'):]
        assert "undefined" in row[:row.index("</tr>")], name


def section_of(html, section):
    start = html.index(f'<section id="{section}">')
    return html[start:html.index("</section>", start)]


def test_a_fragment_is_the_pages_own_sections_with_the_css_scoped_to_it():
    """What a notebook cell shows (render.fragment): the sections asked for, rendered by the page's
    own templates, under one element that every CSS rule is limited to (the notebook keeps its
    look), nothing else of the page, no script, nothing to fetch."""
    import re

    data = failed_early_run()
    html = render.fragment(data, ["pipeline", "lineage"])
    page = render.render(data)
    assert html.startswith(f'<div class="{render.FRAGMENT_CLASS}">') and html.rstrip().endswith("</div>")
    for section in ("pipeline", "lineage"):
        assert section_of(html, section) == section_of(page, section)
    for section in ("error", "data", "training", "evaluation", "serving"):
        assert f'<section id="{section}">' not in html
    assert "<header>" not in html and "<script" not in html.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//|@import|url\(\s*["']?(https?:)?//""", html)
    css = html[html.index("<style>") + len("<style>"):html.index("</style>")]
    selectors = [s.strip() for rule in re.findall(r"([^{}]+)\{", css) for s in rule.split(",")]
    assert selectors and all(s.startswith(f".{render.FRAGMENT_CLASS}.{render.FRAGMENT_CLASS}") for s in selectors)
    with pytest.raises(ValueError, match="no report section summary"):
        render.fragment(data, ["summary"])


def test_css_is_scoped_rule_by_rule():
    css = "/* a comment { x } */\nbody { margin: 0; }\nth, td.n { padding: 4px; }\nsvg .bar { fill: #5c6bc0; }\n"
    assert render.scoped_css(css, ".r") == (".r { margin: 0; }\n.r th, .r td.n { padding: 4px; }\n"
                                            ".r svg .bar { fill: #5c6bc0; }\n")


def test_a_fragment_of_statistics_alone_says_what_was_not_checked():
    """A notebook that ran StatisticsGen but not ExampleValidator (runs/report/data.statistics_section
    with no anomalies artifact) shows the data section alone: no claim that nothing was found."""
    section = dict(failed_early_run()["data"], validated=False)
    html = render.fragment({"data": section}, ["data"])
    assert "Not checked against the schema: ExampleValidator did not run." in html
    assert "found no anomalies" not in html
    assert "found no anomalies" in render.fragment({"data": dict(section, validated=True)}, ["data"])
