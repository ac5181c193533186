"""One of the project's ExampleGen executors run as a local run calls it (no pipeline), for the
tests of ImageExampleGen and TextExampleGen: its examples by split, and the examples artifact
(its custom properties: the files ignored or left out)."""
import os

SPLITS = (("train", 7), ("eval", 3))


def run_example_gen(executor, data_dir, out_dir, pattern, custom_config):
    """({split: [tf.Example]}, the examples artifact) of ``executor`` on ``data_dir``'s ``pattern``."""
    import tensorflow as tf
    from tfx.proto import example_gen_pb2
    from tfx.types import standard_artifacts
    from tfx.utils import proto_utils

    from tfxline.patches import tfx_packaging
    from tfxline.pipeline.beam import stack_compat

    examples = standard_artifacts.Examples()
    examples.uri = str(out_dir)
    splits = example_gen_pb2.Output(split_config=example_gen_pb2.SplitConfig(splits=[
        example_gen_pb2.SplitConfig.Split(name=n, hash_buckets=b) for n, b in SPLITS]))
    props = {"input_base": str(data_dir), "output_config": proto_utils.proto_to_json(splits),
             "input_config": proto_utils.proto_to_json(example_gen_pb2.Input(splits=[
                 example_gen_pb2.Input.Split(name="single_split", pattern=pattern)])),
             "custom_config": proto_utils.proto_to_json(custom_config)}
    args = list(stack_compat.local_beam_args(["--direct_running_mode=in_memory", "--direct_num_workers=1"]))
    with tfx_packaging.no_sdist_for_local_runners():
        executor(executor.Context(beam_pipeline_args=args, tmp_dir=str(out_dir) + "-tmp")).Do(
            {}, {"examples": [examples]}, props)
    out = {}
    for split, _ in SPLITS:
        files = tf.io.gfile.glob(os.path.join(str(out_dir), f"Split-{split}", "*"))
        out[split] = [tf.train.Example.FromString(r.numpy())
                      for r in tf.data.TFRecordDataset(files, compression_type="GZIP")]
    return out, examples
