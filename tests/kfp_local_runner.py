"""Run a compiled PipelineSpec YAML with kfp.local's DockerRunner (kfp >= 2.6), each task a
container of its image: tests/test_containers.py runs this inside the image (TFX 1.21's stack:
kfp 2.17, the docker SDK), with the host's Docker socket, so the tasks are sibling containers.

    python kfp_local_runner.py PIPELINE_YAML PIPELINE_ROOT '{"data_root": ..., "train_args": ...}'
"""
import json
import sys

from kfp import components, local


def main(spec_yaml: str, pipeline_root: str, arguments: str) -> None:
    local.init(runner=local.DockerRunner(), pipeline_root=pipeline_root, raise_on_error=True)
    pipeline = components.load_component_from_file(spec_yaml)
    pipeline(**json.loads(arguments))


if __name__ == "__main__":
    main(*sys.argv[1:4])
