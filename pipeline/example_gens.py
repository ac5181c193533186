"""The pipeline's ExampleGen, by ``data.format``: CsvExampleGen (csv), TFX's ImportExampleGen
(tfrecord), ImageExampleGen (images) or TextExampleGen (text), with the split config every one of
them hashes into train / validation / eval and the span it reads.
"""
from __future__ import annotations

from typing import Optional, Union

from tfx.components import ImportExampleGen
from tfx.orchestration.data_types import RuntimeParameter
from tfx.proto import example_gen_pb2, range_config_pb2

from tfxline.components import csv_example_gen, image_example_gen, text_example_gen
from tfxline.components.csv_example_gen import CsvExampleGen
from tfxline.components.image_example_gen import ImageExampleGen
from tfxline.components.text_example_gen import TextExampleGen
from tfxline.pipeline.config import EVAL_SPLIT, TRAIN_SPLIT, VALIDATION_SPLIT, PipelineConfig

# Where the data is: a path, or a compiled pipeline's runtime parameter (kubeflow/compile.py's data_root).
DataRoot = Union[str, RuntimeParameter]


def example_gen_configs(cfg: PipelineConfig, data_pattern: str):
    input_config = example_gen_pb2.Input(splits=[
        example_gen_pb2.Input.Split(name="single_split", pattern=data_pattern)])
    buckets = {TRAIN_SPLIT: cfg.data.train_buckets, VALIDATION_SPLIT: cfg.data.validation_buckets,
               EVAL_SPLIT: cfg.data.eval_buckets}
    split_config = example_gen_pb2.SplitConfig(splits=[
        example_gen_pb2.SplitConfig.Split(name=name, hash_buckets=buckets[name]) for name in cfg.data.splits])
    if cfg.data.split_key:  # a group column: its rows in one split (a oneof: set only when named)
        split_config.partition_feature_name = cfg.data.split_key
    output_config = example_gen_pb2.Output(split_config=split_config)
    return input_config, output_config


def span_range(span: Optional[int]) -> Optional[range_config_pb2.RangeConfig]:
    """ExampleGen reads exactly ``span`` (the one the pre-flight check read), or the newest
    span its driver finds when None."""
    if span is None:
        return None
    return range_config_pb2.RangeConfig(static_range=range_config_pb2.StaticRange(
        start_span_number=span, end_span_number=span))


def example_gen_component(cfg: PipelineConfig, data_root: DataRoot, data_pattern: str, span: Optional[int],
                          data_digest: str):
    input_config, output_config = example_gen_configs(cfg, data_pattern)
    example_gen_class = {"csv": CsvExampleGen,  # TFX's, reading headers as CSV (BOM, spaces, gzip)
                         "tfrecord": ImportExampleGen, "images": ImageExampleGen,
                         "text": TextExampleGen}[cfg.data.format]
    extra, image = {}, cfg.features.image
    if cfg.data.format == "images" and image:  # a class folder's files; bad images skipped or refused
        extra["custom_config"] = image_example_gen.custom_config(
            image.source, cfg.features.label.source, cfg.data.bad_images, data_digest)
    if cfg.data.format == "text":  # a class folder's .txt files: the text input's column and the label's
        extra["custom_config"] = text_example_gen.custom_config(
            cfg.features.text_inputs[0].source, cfg.features.label.source, data_digest)
    if cfg.data.format == "csv":  # rows without a label: left out; the data's content: in the cache key
        drop = cfg.features.label.source_columns if cfg.data.missing_labels == "drop" else ()
        extra["custom_config"] = csv_example_gen.custom_config(drop, data_digest)
    return example_gen_class(input_base=data_root, input_config=input_config,
                             output_config=output_config, range_config=span_range(span), **extra)
