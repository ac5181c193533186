"""The report page and its SVG charts on literal data (no pipeline run): a run that failed
before any data was read still renders, and the charts are well-formed on edge cases."""
import xml.etree.ElementTree as ET

from pipeline.report import render, svg


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

    from pipeline import cli

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
