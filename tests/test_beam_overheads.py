"""Beam's inspections kept while a component runs (patches/beam_signatures.py,
patches/beam_option_views.py): every answer the same as Beam's own, each asked of Beam once, and
a real pipeline with state, timers and side inputs runs the same inside them."""
import functools

import apache_beam as beam
from apache_beam.coders import VarIntCoder
from apache_beam.options.pipeline_options import (DirectOptions, PipelineOptions, SetupOptions,
                                                  StandardOptions, TypeOptions)
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms import core, userstate

from tfxline.patches.beam_option_views import shared_option_views
from tfxline.patches.beam_signatures import shared_signatures
from tfxline.patches.executor import executor_patches
from tfxline.pipeline.beam import stack_compat

COUNT = userstate.ReadModifyWriteStateSpec("count", VarIntCoder())
FLUSH = userstate.TimerSpec("flush", userstate.TimeDomain.WATERMARK)


class CountPerKey(beam.DoFn):
    """A stateful DoFn with a timer: Beam finds both through its methods' default arguments."""

    def process(self, element, count=beam.DoFn.StateParam(COUNT), flush=beam.DoFn.TimerParam(FLUSH)):
        count.write((count.read() or 0) + 1)
        flush.set(0)

    @userstate.on_timer(FLUSH)
    def on_flush(self, count=beam.DoFn.StateParam(COUNT), key=beam.DoFn.KeyParam):
        yield key, count.read()


def plain(a, b=2, *args, c=3, **kwargs):
    return a


class Callable:
    def __call__(self, x, y=1):
        return x


def callables():
    return [plain, lambda x, y=5: x, CountPerKey().process, CountPerKey().on_flush, CountPerKey().setup,
            functools.partial(plain, 1), len, Callable(), str.strip, TypeOptions.from_dictionary]


def counting(monkeypatch):
    """Counts the calls that reach Beam's own get_function_args_defaults."""
    calls = []
    inspect_fn = core.get_function_args_defaults

    def counted(f):
        calls.append(f)
        return inspect_fn(f)

    monkeypatch.setattr(core, "get_function_args_defaults", counted)
    return calls


def test_answers_are_beams_and_python_functions_are_inspected_once(monkeypatch):
    expected = [core.get_function_args_defaults(f) for f in callables()]
    calls = counting(monkeypatch)
    with shared_signatures():
        fs = callables()
        first = [core.get_function_args_defaults(f) for f in fs]
        asked = len(calls)
        again = [core.get_function_args_defaults(f) for f in fs]
    assert first == expected and again == expected
    # asked again: the partial, the builtins and the callable object (no Python function to key on)
    assert len(calls) - asked == 4
    assert core.get_function_args_defaults is not None and not hasattr(core.get_function_args_defaults, "answers")


def test_bound_methods_share_their_function_and_each_caller_gets_its_own_lists(monkeypatch):
    calls = counting(monkeypatch)
    with shared_signatures():
        args, defaults = core.get_function_args_defaults(CountPerKey().process)
        args.append("mutated")
        defaults.clear()
        again = core.get_function_args_defaults(CountPerKey().process)  # another instance's bound method
    assert again[0] == ["element", "count", "flush"] and len(again[1]) == 2
    assert len(calls) == 1


def test_a_changed_function_is_inspected_again(monkeypatch):
    def fn(a, b=1):
        return a

    calls = counting(monkeypatch)
    with shared_signatures():
        assert core.get_function_args_defaults(fn) == (["a", "b"], [1])
        fn.__defaults__ = (7,)
        assert core.get_function_args_defaults(fn) == (["a", "b"], [7])
        def inner(x, y=4):
            return x

        fn.__wrapped__ = inner  # inspect.signature follows __wrapped__: so does what is kept
        assert core.get_function_args_defaults(fn) == (["x", "y"], [4])
        assert core.get_function_args_defaults(fn) == (["x", "y"], [4])
        inner.__defaults__ = (5,)
        assert core.get_function_args_defaults(fn) == (["x", "y"], [5])
        fn.__wrapped__ = functools.partial(inner, 1)  # a chain to no Python function: read each time
        assert core.get_function_args_defaults(fn) == core.get_function_args_defaults(fn) == (["y"], [5])
    assert len(calls) == 6


def test_answers_go_with_their_functions():
    import gc

    with shared_signatures():
        answers = core.get_function_args_defaults.answers
        core.get_function_args_defaults(lambda x, y=1: x)
        gc.collect()
        assert len(answers) == 0


def test_dofn_specs_are_beams():
    outside = userstate.get_dofn_specs(CountPerKey())
    with shared_signatures():
        inside = [userstate.get_dofn_specs(CountPerKey()) for _ in range(2)]
    assert inside == [outside, outside] and outside == ({COUNT}, {FLUSH})


def test_nested_contexts_keep_one_layer_and_restore_beams_own():
    inspect_fn, view_as = core.get_function_args_defaults, PipelineOptions.view_as
    with shared_signatures(), shared_option_views():
        layer = core.get_function_args_defaults, PipelineOptions.view_as
        with shared_signatures(), shared_option_views():
            assert (core.get_function_args_defaults, PipelineOptions.view_as) == layer
        assert (core.get_function_args_defaults, PipelineOptions.view_as) == layer
    assert core.get_function_args_defaults is inspect_fn and PipelineOptions.view_as is view_as


def test_views_read_and_write_the_same_options(monkeypatch):
    made = []
    view_as = PipelineOptions.view_as
    monkeypatch.setattr(PipelineOptions, "view_as", lambda self, cls: made.append(cls) or view_as(self, cls))
    options = PipelineOptions(["--runner=DirectRunner", "--direct_num_workers=2", "--experiments=a"])
    with shared_option_views():
        standard = options.view_as(StandardOptions)
        assert options.view_as(StandardOptions) is standard and standard.runner == "DirectRunner"
        direct = options.view_as(DirectOptions)
        assert direct.direct_num_workers == 2
        direct.direct_num_workers = 3  # a write through one view: seen by the others and the options
        assert options.view_as(DirectOptions).direct_num_workers == 3
        assert options.get_all_options()["direct_num_workers"] == 3
        assert options.view_as(TypeOptions).pipeline_type_check is True
        del options._all_options["pipeline_type_check"]  # view_as puts a class's defaults back each time
        assert options.view_as(TypeOptions).pipeline_type_check is True
        options._flags.append("--save_main_session")  # other flags: parsed again
        assert options.view_as(SetupOptions).save_main_session is True
        assert options.view_as(SetupOptions).save_main_session is True
    assert made == [StandardOptions, DirectOptions, TypeOptions, SetupOptions]
    assert options.view_as(StandardOptions) is not options.view_as(StandardOptions)


def test_options_without_flags_get_a_new_view_each_time():
    with shared_option_views():
        options = PipelineOptions()
        options._flags = None  # parsed from sys.argv: not kept
        assert options.view_as(StandardOptions) is not options.view_as(StandardOptions)


def test_a_pipeline_with_state_timers_and_side_inputs_runs_the_same_inside():
    def run():
        args = stack_compat.local_beam_args(["--direct_running_mode=in_memory", "--direct_num_workers=1"])
        with beam.Pipeline(options=PipelineOptions(args)) as p:
            side = p | "side" >> beam.Create([10])
            counts = (p | beam.Create([("a", 1), ("b", 2), ("a", 3)]) | beam.ParDo(CountPerKey())
                      | beam.Map(lambda kv, plus: (kv[0], kv[1] + plus), plus=beam.pvalue.AsSingleton(side)))
            assert_that(counts, equal_to([("a", 12), ("b", 11)]))

    run()
    with executor_patches():
        run()


