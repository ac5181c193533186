"""Run trainer.run.run_fn in a fresh process, as TFX's Trainer would (used by the tests).

    python tests/trainer_harness.py ARGS.json

A fresh process per run because logical CPU devices (for MirroredStrategy) and TF_CONFIG
(for MultiWorkerMirroredStrategy) must be set before TensorFlow initialises.
"""
import json
import os
import sys

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(path):
    with open(path) as f:
        args = json.load(f)
    import tensorflow as tf

    cpus = int(args.pop("logical_cpus", 1))
    if cpus > 1:
        physical = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            physical, [tf.config.LogicalDeviceConfiguration() for _ in range(cpus)])
    from tfx.components.trainer.fn_args_utils import DataAccessor, FnArgs
    from tfx.components.util import tfxio_utils
    from tfx.types import standard_artifacts

    from tfxline.trainer.run import run_fn

    # The data accessor TFX's Trainer builds from the examples artifact (for reader=tfxio).
    examples = standard_artifacts.Examples()
    examples.uri = args.pop("examples_uri")
    examples.split_names = '["train", "eval"]'
    args["data_accessor"] = DataAccessor(
        tf_dataset_factory=tfxio_utils.get_tf_dataset_factory_from_artifact([examples], []),
        record_batch_factory=tfxio_utils.get_record_batch_factory_from_artifact([examples], []),
        data_view_decode_fn=None)
    run_fn(FnArgs(**args))


def run_fn_in_a_process(pipeline_root, example_gen: str, custom_config, work, timeout: int = 600):
    """run_fn in a fresh process over two logical CPUs, on a finished run's newest examples (of
    ``example_gen``) and Transform graph under ``pipeline_root``: its model and training_run.json
    land in ``work``/serving and ``work``/model_run. Returns the finished process."""
    import glob
    import subprocess

    examples = sorted(glob.glob(os.path.join(str(pipeline_root), example_gen, "examples", "*")))[-1]
    args = {"train_files": [os.path.join(examples, "Split-train", "*")],
            "eval_files": [os.path.join(examples, "Split-validation", "*")],
            "transform_output": sorted(glob.glob(os.path.join(str(pipeline_root), "Transform", "transform_graph",
                                                              "*")))[-1],
            "examples_uri": examples, "serving_model_dir": os.path.join(str(work), "serving"),
            "model_run_dir": os.path.join(str(work), "model_run"), "train_steps": 0, "eval_steps": 2,
            "custom_config": custom_config, "logical_cpus": 2}
    path = os.path.join(str(work), "args.json")
    with open(path, "w") as f:
        json.dump(args, f)
    return subprocess.run([sys.executable, os.path.abspath(__file__), path], capture_output=True, text=True,
                          timeout=timeout)


if __name__ == "__main__":
    main(sys.argv[1])
