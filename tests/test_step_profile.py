"""trainer/profile.py (runtime.profile_steps) and bench/step_profile.py: the per-step summary of
a profiler trace, on a hand-built trace with a GPU plane (known answers) and on real CPU
traces of the model; the bench on the TF-only path the GPU machine has. The two GPU machine
benches' smoke modes run here (tests/test_bench_smoke.py has the others): their JSON fits the
schema tools/bench_tables.py renders from, and renders."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

from bench import step_profile
from bench.step_profile import profile_fit
from tfxline.trainer import profile as X
from tfxline.patches.autograph import skip_autograph_for_libraries
from tfxline.trainer.model import Head, build_model, loss_and_metrics
from tests.synthetic import INPUTS, dataset

MS = 10 ** 9  # picoseconds per millisecond
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The GPU machine's bundle has TensorFlow and tf_keras only (../shared/gpu/README.md): run a
# script with this stack's other packages unimportable.
BLOCK = """
import importlib.abc, sys
BLOCKED = {"tensorflow_transform", "tfx", "tfx_bsl", "apache_beam", "tensorflow_model_analysis",
           "tensorflow_data_validation", "ml_metadata", "tensorflow_metadata", "pyarrow", "yaml", "kfp"}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError("not in the GPU bundle: " + name)
sys.meta_path.insert(0, Block())
"""
TF_ONLY = BLOCK + """
import runpy
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
skip_autograph_for_libraries()
# The GPU machine's TensorFlow is 2.21 (../shared/gpu/build_bundle.sh), the TFX 1.21 stack's: where
# CI runs both stacks' suites, its TF-only path runs in that suite only (tests/conftest.py: one_stack).
ON_THE_GPU_MACHINES_STACK = pytest.mark.one_stack(
    "1.21", why="the GPU machine's bundle is TensorFlow 2.21; on TF 2.16 this path runs nowhere")


def test_union_ps_merges_overlaps_and_clips_to_the_window():
    assert X.union_ps([(0, 10), (5, 15), (20, 30)], 0, 100) == 25
    assert X.union_ps([(0, 10), (2, 3)], 0, 100) == 10  # nested
    assert X.union_ps([(0, 10), (20, 30)], 5, 25) == 10  # clipped at both ends
    assert X.union_ps([], 0, 10) == 0


class Plane:
    """An XPlane under construction: events by name, in milliseconds from the line's start."""

    def __init__(self, space, name):
        self.plane = space.planes.add(name=name)
        self.ids = {}

    def line(self, name, events):
        line = self.plane.lines.add(name=name, timestamp_ns=1_000_000)
        for event, start_ms, duration_ms in events:
            if event not in self.ids:
                self.ids[event] = len(self.ids) + 1
                self.plane.event_metadata[self.ids[event]].name = event
            line.events.add(metadata_id=self.ids[event], offset_ps=int(start_ms * MS),
                            duration_ps=int(duration_ms * MS))


def trace(wait_ms=1.0, kernel_ms=2.0, cupti=True):
    """Three 10 ms steps; per step 5 host ops, ``wait_ms`` waiting for input, and on the GPU
    4 kernels (two streams, overlapping) and one host-to-device copy."""
    space = xplane_pb2.XSpace()
    host = Plane(space, "/host:CPU")
    host.line("python", [(X.STEP_EVENT, 10 * i, 10) for i in range(3)] + [("fit setup", -50, 40)])
    host.line("tf_Compute/1", [(f"dense_{j}/MatMul:MatMul", 10 * i + j, 0.5) for i in range(3) for j in range(5)]
              + [("ExecutorState::Process", 10 * i, 9) for i in range(3)])
    host.line("tf_data_iterator_get_next/2", [(X.INPUT_WAIT, 10 * i, wait_ms) for i in range(3)])
    # the same wait seen as the multi-device iterator's op: input, not an op, not counted twice
    host.line("tf_Compute/4", [("it:MultiDeviceIteratorGetNextFromShard", 10 * i, wait_ms) for i in range(3)])
    host.line("tf_data_private_threadpool/3", [("ParseExample:ParseExampleV2", 10 * i, 3) for i in range(3)])
    if cupti:
        gpu = Plane(space, "/device:GPU:0")
        gpu.line("Stream #1(Compute)", [(f"gemm_{j}", 10 * i + 1 + kernel_ms * j, kernel_ms)
                                        for i in range(3) for j in range(3)])
        gpu.line("Stream #2(Compute)", [e for i in range(3)
                                        for e in (("relu", 10 * i + 1, kernel_ms), ("MemcpyH2D", 10 * i, 0.5),
                                                  ("MemoryAlloc", 10 * i + 8, 1))])  # not device work
        gpu.line("CUPTI overhead", [("overhead", 10 * i + 8, 2) for i in range(3)])  # nor this
    return space


def test_summary_of_a_gpu_trace_per_step():
    s = X.summarize(trace(), steps_per_execution=1, gpu=True)
    assert s["steps"] == 3 and s["ms_per_step"] == 10.0
    assert s["host_ops_per_step"] == 5  # op events only: not the executor's wrappers, not tf.data's parse
    assert s["input_wait_fraction"] == pytest.approx(0.1)
    assert s["top_host_ops"][0][:2] == ["MatMul", 5.0]
    (gpu,) = s["devices"]
    assert gpu["kernels_per_step"] == 4 and gpu["copies_per_step"] == {"MemcpyH2D": 1.0}
    # per step: the copy [0, 0.5) and the kernels [1, 7) (the relu overlaps gemm_0): 6.5 of 10 ms
    assert gpu["busy_fraction"] == pytest.approx(0.65)
    assert s["verdict"].startswith("launch-bound")
    # steps_per_execution: each execution of the train function is that many steps
    assert X.summarize(trace(), steps_per_execution=5)["steps"] == 15
    assert X.summarize(trace(), steps=12)["ms_per_step"] == 2.5  # the steps the callback counted


def test_verdicts():
    assert X.summarize(trace(kernel_ms=2.8), gpu=True)["verdict"].startswith("device-bound")
    assert X.summarize(trace(wait_ms=4), gpu=True)["verdict"].startswith("input-bound")
    assert "CUPTI" in X.summarize(trace(cupti=False), gpu=True)["verdict"]
    assert X.summarize(trace(cupti=False))["verdict"].startswith("overhead-bound on the CPU")


def test_a_trace_without_keras_steps_is_refused():
    space = xplane_pb2.XSpace()
    Plane(space, "/host:CPU").line("python", [("something", 0, 1)])
    with pytest.raises(ValueError, match="no 'train_function' events"):
        X.summarize(space)


def _profile(tmp_path, ds):
    model = build_model(INPUTS, Head("binary"), hidden_units=(16, 8))
    loss, metrics = loss_and_metrics(Head("binary"))
    model.compile(optimizer="adam", loss=loss, metrics=metrics)
    steps = profile_fit(model, ds.repeat(), str(tmp_path), executions=4, warmup=2)
    assert steps == 4
    return X.summarize(X.load(X.find_trace(str(tmp_path))), steps=steps)


def test_real_cpu_trace_of_the_model(tmp_path):
    s = _profile(tmp_path / "fast", dataset(32))
    assert s["steps"] == 4
    assert 20 < s["host_ops_per_step"] < 400
    # Which kernels lead is the CPU's business (oneDNN names and ranks them differently on Intel
    # and AMD parts), so only the table's shape is asserted: named op types, each run at least
    # once a step, the most time first.
    top = s["top_host_ops"]
    assert top and all(isinstance(t, str) and t and n > 0 and us >= 0 for t, n, us in top)
    assert [us for _, _, us in top] == sorted((us for _, _, us in top), reverse=True)
    assert len({t for t, _, _ in top}) == len(top)
    # No verdict asserted: on a busy 2-core CI machine even this in-memory input waited 41 % of
    # a ~1 ms step (TFX 1.21 suite beside the host's). The verdicts' rules are checked on the
    # built traces above, and a real input-bound trace below.
    assert not s["devices"] and 0 <= s["input_wait_fraction"] < 1


def test_real_cpu_trace_of_a_slow_input_is_input_bound(tmp_path):
    def slow_label(y):
        time.sleep(0.05)  # 50 ms per batch: far longer than the step
        return y

    ds = dataset(32).map(lambda x, y: (x, tf.ensure_shape(
        tf.numpy_function(slow_label, [y], tf.int64, stateful=True), [32])))
    s = _profile(tmp_path / "slow", ds)
    assert s["verdict"].startswith("input-bound"), s


def tf_only(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-c", TF_ONLY, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def gpu_run(pipeline_run, tmp_path_factory):
    """What bench/gpu_machine.sh prepare carries to the GPU machine: the shared run's
    training_run.json and its train split as the model's features (bench/materialize.py, since
    the GPU bundle has no TFT to run the Transform graph)."""
    import glob
    import shutil

    from bench.materialize import materialize

    cfg, _, _ = pipeline_run
    root = tmp_path_factory.mktemp("gpu_run")
    info = sorted(glob.glob(os.path.join(cfg.output_root, "pipeline_root", "Trainer", "model_run", "*",
                                         "training_run.json")), key=os.path.getmtime)[-1]
    run_dir = root / "pipeline_root" / "Trainer" / "model_run" / "1"
    run_dir.mkdir(parents=True)
    shutil.copy(info, run_dir)
    assert materialize(cfg.output_root, str(root / "pipeline_root" / "Transform" / "transformed_examples" / "1" /
                                            "Split-train")) > 0
    return str(root)


def rendered(results, table):
    """The results file checked against its schema and rendered as the docs' table (a string)."""
    from tools import bench_tables

    bench_tables.check(results.name, json.loads(results.read_text()))
    text = bench_tables.render(table, str(results.parent))
    assert len(text.splitlines()) >= 3, text
    return text


@pytest.mark.e2e
@ON_THE_GPU_MACHINES_STACK
def test_the_gpu_path_runs_with_tensorflow_alone(gpu_run, tmp_path):
    """bench/step_profile.py --smoke (every row at a small batch, with gpu_bench's model and input
    code, the trainer modules they import) on the shared run's features, every non-TensorFlow
    package of the stack blocked."""
    results = tmp_path / "step_profile.json"
    proc = tf_only("bench/step_profile.py", "--smoke", "--output", gpu_run, "--device", "cpu",
                   "--results", str(results), "--traces", str(tmp_path / "traces"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = json.loads(results.read_text())["rows"]
    assert [r["name"] for r in rows] == list(step_profile.ROWS) and not [r for r in rows if "error" in r], rows
    for row in rows:  # each execution of the train function profiled is steps_per_execution steps
        assert row["steps"] >= 2 and row["steps"] % row["steps_per_execution"] == 0 and row["verdict"], row
        assert row["xla"] or row["host_ops_per_step"] > 50, row  # XLA's cluster is one op to the tracer
    assert "| b256-1dev |" in rendered(results, "step-profile-cpu")
    # control: the block is real
    script = tmp_path / "uses_tft.py"
    script.write_text("import tensorflow_transform\n")
    assert "not in the GPU bundle" in tf_only(str(script)).stderr


@pytest.mark.e2e
@ON_THE_GPU_MACHINES_STACK
def test_gpu_bench_smoke_keeps_each_row_it_prints(gpu_run, tmp_path):
    """bench/gpu_bench.py --smoke (every row once at a small batch) on the shared run's features
    with every non-TensorFlow package blocked in all its processes (a sitecustomize on PYTHONPATH
    reaches the worker processes too): the GPU rows are skipped with their line, the CPU's run,
    and each row is in the results file by the time its line is printed, so a run cut off at any
    point (the GPU machine's per-command limit) keeps every row it printed."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCK)
    results = tmp_path / "gpu_bench.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), ROOT]))
    cmd = [sys.executable, "bench/gpu_bench.py", "--smoke", "--devices", "gpu,cpu", "--output", gpu_run,
           "--results", str(results)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
    lines, held = [], []
    try:
        for line in proc.stdout:
            lines.append(line.rstrip())
            if len(lines) > 1 and not line.startswith("results: "):
                held.append(len(json.loads(results.read_text())["rows"]))
    finally:
        if proc.poll() is None:  # the test failed while it ran
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == 0 and lines[-1] == f"results: {results}", lines
    assert lines[0].startswith("device") and lines[1].startswith("gpu: skipped (TensorFlow sees no GPU"), lines
    assert held == sorted(held) and all(n >= i + 1 for i, n in enumerate(held)), held  # printed => in the file
    rows = json.loads(results.read_text())["rows"]
    cpu = [r for r in rows[1:] if r["device"] == "cpu"]
    assert len(cpu) == len(rows) - 1 and not [r for r in cpu if "error" in r], rows
    # on a CPU the "memory" rows and the 16-bit wide rows are left out (bench/gpu_bench.py's worker)
    assert {r["model"] for r in cpu} == {"input", "default", "wide"} and all(r["examples_per_s"] > 0 for r in cpu)
    assert all(r["step_ops"] > 50 for r in cpu if r["model"] != "input" and not r["xla"]), cpu
    assert "| cpu | wide | 64 |" in rendered(results, "gpu-bench-cpu")


def test_the_trainer_callback_keeps_the_profile_inside_one_epoch(tmp_path):
    """runtime.profile_steps' callback: asked for 5 executions from the second on, with 3 per
    epoch, it stops at the first epoch's end (validation never in the window): 2 traced."""
    model = build_model(INPUTS, Head("binary"), hidden_units=(8,))
    loss, metrics = loss_and_metrics(Head("binary"))
    model.compile(optimizer="adam", loss=loss, metrics=metrics)
    callback = X.profile_callback_class()(str(tmp_path), executions=5, executions_per_epoch=3, warmup=1)
    model.fit(dataset(32).repeat(), steps_per_epoch=3, epochs=2, validation_data=dataset(32), verbose=0,
              callbacks=[callback])
    assert (callback.calls, callback.profiled, callback.steps, callback.running) == (6, 2, 2, False)
    s = X.summarize(X.load(X.find_trace(str(tmp_path))), steps=callback.steps)
    assert s["steps"] == 2 and s["host_ops_per_step"] > 20
    # the window: the two traced executions of the train function, no test_function between
    assert X.summarize(X.load(X.find_trace(str(tmp_path))))["steps"] == 2


def test_gpu_bench_rows_by_where_and_the_matmul_ceiling():
    """--where picks rows by their values; a "matmul" row times chained matmuls and turns them
    into TFLOP/s (2 x batch x 2048^2 per matmul), here on the CPU at a small batch."""
    from bench import gpu_bench

    picked = [r for r in gpu_bench.ROWS if gpu_bench.matches(r, "xla=true,batch=256")]
    assert picked and all(r["xla"] and r["batch"] == 256 for r in picked)
    assert len([r for r in gpu_bench.ROWS if gpu_bench.matches(r, "")]) == len(gpu_bench.ROWS)
    row = gpu_bench.measure_matmul(gpu_bench.case("matmul", 16, spe=2, source="memory"), 0.05, on_gpu=False)
    assert row["steps"] % 2 == 0 and row["steps"] >= 2
    seconds = row["ms_per_step"] * row["steps"] / 1000
    assert row["tflops"] == pytest.approx(2 * 16 * 2048 ** 2 * row["steps"] / seconds / 1e12, rel=0.05, abs=0.01)
