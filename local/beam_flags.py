"""A local run's Beam flags, kept out of TFX's cache key.

TFX keys each execution's cache on its executor spec among the rest
(tfx/orchestration/portable/cache_utils.py:114-115 at TFX 1.16 and 1.21), and a Beam component's
spec holds its Beam pipeline args. So a change of Beam flags alone (``beam.direct_num_workers``,
``runtime.beam_args``, or a machine with more cores, whose count sets the Evaluator's workers on a
large day) re-ran CsvExampleGen, StatisticsGen, Transform and
the Evaluator, and then, their outputs being new artifacts, the Trainer: the same model trained
again for flags that cannot change it.

Here each Beam arg of a local run's components becomes an environment-variable placeholder
(TFX's ``environment_variable``, tfx/dsl/placeholder/runtime_placeholders.py:95), which TFX's
Beam executor operator resolves when the executor starts (beam_executor_operator.py:89-98;
placeholder_utils.py:235 reads ``os.environ``). The spec then holds the variables' names, the
runner sets their values for the run (:func:`in_environment`). Adding or dropping a flag still
changes the key (the number of names). A compiled pipeline (kubeflow/compile.py) keeps its args
as they are: its tasks' caching is the cluster's, on the task spec.
"""
from __future__ import annotations

import contextlib
import os
from typing import Dict, Iterable, Iterator, Mapping

PREFIX = "TFXLINE_BEAM_ARG_"


def outside_the_cache_key(components: Iterable) -> Dict[str, str]:
    """Replace each Beam component's args (the pipeline's, then its own: TFX merged them when the
    pipeline was made) by placeholders named ``TFXLINE_BEAM_ARG_<component>_<i>``; return the
    names' values, for :func:`in_environment`."""
    from tfx.dsl.placeholder.runtime_placeholders import environment_variable

    values: Dict[str, str] = {}
    for component in components:
        args = getattr(component.executor_spec, "beam_pipeline_args", None)
        if not args:
            continue
        names = [f"{PREFIX}{component.id}_{i}" for i in range(len(args))]
        values.update(zip(names, args))
        component.executor_spec.beam_pipeline_args = [environment_variable(name) for name in names]
    return values


def args_of(values: Mapping[str, str], component_id: str) -> list:
    """A component's args, in order, from the values :func:`outside_the_cache_key` returned."""
    prefix = f"{PREFIX}{component_id}_"
    return [values[name] for name in sorted((n for n in values if n.startswith(prefix)),
                                            key=lambda n: int(n[len(prefix):]))]


@contextlib.contextmanager
def in_environment(values: Mapping[str, str]) -> Iterator[None]:
    """The args in this process's environment for the run (the executors resolve them there); the
    environment as it was afterwards."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
