"""Run a compiled PipelineSpec YAML with kfp.local's DockerRunner (kfp >= 2.6), each task a
container of its image: tests/test_containers.py runs this inside the image (TFX 1.21's stack:
kfp 2.17, the docker SDK), with the host's Docker socket, so the tasks are sibling containers.

    python kfp_local_runner.py PIPELINE_YAML PIPELINE_ROOT '{"data_root": ..., "train_args": ...}' \
        ['{"cap_drop": ["ALL"], ...}']

The optional last argument: the docker SDK's containers.run arguments for every task's
container (DockerRunner's container_run_args), e.g. KFP 2.16+'s dropped capabilities.
"""
import json
import sys

from kfp import components, local


def main(spec_yaml: str, pipeline_root: str, arguments: str, container_run_args: str = "{}") -> None:
    local.init(runner=local.DockerRunner(**json.loads(container_run_args)), pipeline_root=pipeline_root,
               raise_on_error=True)
    pipeline = components.load_component_from_file(spec_yaml)
    pipeline(**json.loads(arguments))


if __name__ == "__main__":
    main(*sys.argv[1:5])
