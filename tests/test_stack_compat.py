"""The stack differences that need code (pipeline/beam/stack_compat.py), on both branches."""
import apache_beam

from tfxline.pipeline.beam import stack_compat

IN_MEMORY = ("--direct_running_mode=in_memory", "--direct_num_workers=1")


def test_newer_beam_pins_the_fn_api_runner_for_in_memory_runs(monkeypatch):
    monkeypatch.setattr(stack_compat, "_beam_version", lambda: (2, 77))
    args = stack_compat.local_beam_args(IN_MEMORY)
    assert args == (f"--runner={stack_compat.FN_API_RUNNER}",) + IN_MEMORY
    # An explicit runner and the multi-processing mode stay as given.
    dataflow = ("--runner=DataflowRunner", "--project=p")
    assert stack_compat.local_beam_args(dataflow) == dataflow
    multi = ("--direct_running_mode=multi_processing", "--direct_num_workers=2")
    assert stack_compat.local_beam_args(multi) == multi


def test_older_beam_keeps_the_direct_runner(monkeypatch):
    monkeypatch.setattr(stack_compat, "_beam_version", lambda: (2, 59))
    assert stack_compat.local_beam_args(IN_MEMORY) == IN_MEMORY


def test_the_compiled_pipeline_pins_the_runner_whatever_beam_compiles_it(monkeypatch):
    """Its components run in the image (Beam 2.77), not on the compiling machine."""
    monkeypatch.setattr(stack_compat, "_beam_version", lambda: (2, 59))
    assert stack_compat.image_beam_args(IN_MEMORY) == (f"--runner={stack_compat.FN_API_RUNNER}",) + IN_MEMORY
    dataflow = ("--runner=DataflowRunner", "--project=p")
    assert stack_compat.image_beam_args(dataflow) == dataflow


def test_the_pinned_runner_exists_in_the_installed_beam():
    from apache_beam.runners.runner import create_runner

    assert type(create_runner(stack_compat.FN_API_RUNNER)).__name__ == "FnApiRunner"
    assert stack_compat._beam_version() >= (2, 59), apache_beam.__version__
