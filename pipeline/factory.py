"""``create_pipeline``: the one pipeline definition, for the local runner and Kubeflow.

A pure factory: it reads nothing from the environment or the file system; the runner
passes in the config and every path (data, schema, pipeline root, serving directory) and
the metadata connection.
"""
from __future__ import annotations

import posixpath
from typing import Any, Mapping, NamedTuple, Optional, Sequence, Tuple

# TFX's own modules, not ``tfx.v1``: that package also imports the Google Cloud extensions
# (google.cloud.aiplatform: ~3 s of a local run's start for nothing it uses).
from tfx.components import ExampleValidator, StatisticsGen, Trainer, Transform
from tfx.components.schema_gen.import_schema_gen.component import ImportSchemaGen
from tfx.dsl.components.common.resolver import Resolver
from tfx.dsl.input_resolution.strategies.span_range_strategy import SpanRangeStrategy
from tfx.orchestration.pipeline import Pipeline
from tfx.proto import range_config_pb2, trainer_pb2, transform_pb2
from tfx.types import standard_artifacts
from tfx.types.channel import Channel

from tfxline.components.anomalies_gate import AnomaliesGate
from tfxline.components.drift_gate import SPAN_LEDGER, DriftGate
from tfxline.components.safe_pusher import SafePusher
from tfxline.components.serving_baseline import GatedEvaluator, ServingBaseline
from tfxline.components.text_drift import TEXT_DRIFT_PREFIX
from tfxline.pipeline.config import EVAL_SPLIT, TRAIN_SPLIT, PipelineConfig, steps
from tfxline.pipeline.eval_config import build_eval_config
from tfxline.pipeline.example_gens import DataRoot, example_gen_component
from tfxline.pipeline.pusher_settings import release_properties, tflite_properties
from tfxline.pipeline.tuning import tuned_hyperparameters, tuning_component
from tfxline.trainer.text_settings import PRETRAINED
from tfxline.transforms import image_files
from tfxline.transforms.preprocessing import RAW_TEXT

PREPROCESSING_FN = "tfxline.transforms.preprocessing.preprocessing_fn"
RUN_FN = "tfxline.trainer.run.run_fn"
BASELINE_ID = "ServingBaseline"
WINDOW_ID = "SpanWindow"


def span_window(example_gen, window: int):
    """The newest ``window`` spans that ExampleGen has ingested in this and earlier runs: TFX's
    Resolver with a rolling RangeConfig. LocalDagRunner only: TFX's Kubeflow V2 compiler does not
    compile this resolver strategy, and ``kubeflow.compile`` refuses a window in one line."""
    resolver = Resolver(
        strategy_class=SpanRangeStrategy,
        config={"range_config": range_config_pb2.RangeConfig(
            rolling_range=range_config_pb2.RollingRange(num_spans=window))},
        examples=Channel(type=standard_artifacts.Examples,
                                 producer_component_id=example_gen.id),
    ).with_id(WINDOW_ID)
    resolver.add_upstream_node(example_gen)  # today's span first
    return resolver


def drift_thresholds(cfg: PipelineConfig) -> dict:
    """The DriftGate's settings: the config's drift section and the columns it checks."""
    columns = set(cfg.features.raw_columns)
    image = cfg.features.image  # an image's bytes are no distribution to compare: its class, format and size are
    if image:
        columns.discard(image.source)
        if cfg.data.format == "images":  # ImageExampleGen's own columns
            columns |= set(image_files.metadata_columns(image.source).values())
    # free text: each value a document of its own, no distribution of values to compare; its tokens
    # are compared with the serving model's (components/text_drift.py)
    columns -= {f.source for f in cfg.features.text_inputs}
    drift = cfg.to_dict()["drift"]
    if not cfg.features.text_inputs:  # the text checks' keys only where there is text (a table's spec is as it was)
        drift = {k: v for k, v in drift.items() if not k.startswith(TEXT_DRIFT_PREFIX)}
    return dict(drift, columns=sorted(columns))


def trainer_custom_config(cfg: PipelineConfig) -> dict:
    """The Trainer's custom_config: only what it reads (PipelineConfig.trainer_settings), so a
    setting it does not read (Beam's args, Transform's statistics) never changes its cache key."""
    return cfg.trainer_settings.to_custom_config()


def statistics_options(cfg: PipelineConfig):
    """TFDV's options: for images, the image statistics (format, width and height: TFDV profiles
    image bytes only with semantic domain statistics on); None (TFDV's defaults) for tables."""
    if cfg.features.data_kind != "image":
        return None
    import tensorflow_data_validation as tfdv

    return tfdv.StatsOptions(enable_semantic_domain_stats=True)


class DataComponents(NamedTuple):
    """The DAG's first half: today's span in, its statistics and schema, and the two gates that
    stop a run before training."""
    example_gen: Any
    window: Any  # the SpanWindow resolver over the newest spans, or None (one span)
    statistics_gen: Any
    schema_gen: Any
    example_validator: Any
    anomalies_gate: Any
    drift_gate: Any

    @property
    def training_examples(self):
        """What Transform, the Trainer and the Pusher's record read: the window of spans, or today's."""
        return self.window.outputs["examples"] if self.window else self.example_gen.outputs["examples"]


def create_pipeline(
    cfg: PipelineConfig,
    *,
    data_root: DataRoot,
    data_pattern: str,
    schema_path: str,
    span: Optional[int] = None,
    pipeline_root: str,
    serving_dir: str,
    metadata_connection_config=None,
    beam_pipeline_args: Sequence[str] = (),
    enable_cache: bool = True,
    train_args=None,
    trainer_factory=None,
    run_metrics: Optional[dict] = None,
    component_beam_args: Optional[Mapping[str, Sequence[str]]] = None,
    data_digest: str = "",
    hyperparameters_uri: str = "",
    tuner_factory=None,
) -> Pipeline:
    """Build the pipeline.

    ``data_root`` and ``train_args`` may be RuntimeParameters (Kubeflow sets them at
    submission); ``span``: the span ExampleGen reads (None: the newest its driver finds);
    ``trainer_factory`` lets a runner supply a Trainer variant (for example
    Vertex AI Training) that takes the standard Trainer arguments; ``run_metrics``: the
    Pusher's exec properties that make it push the run's metrics (a compiled run's; a local run's
    runner pushes them itself, local/monitoring.py); ``component_beam_args``: Beam args of
    single components by id, after the pipeline's (pipeline/beam/engines.component_args);
    ``data_digest``: the content of the CSV files read now (a local run's), in ExampleGen's cache key;
    ``hyperparameters_uri``: the folder of the saved best hyperparameters ``tuning.reuse`` names
    (the runner resolves it: a local run's ``latest`` from its store); ``tuner_factory``: a Tuner
    variant, as ``trainer_factory`` (Vertex AI's parallel trials).
    """
    data = data_components(cfg, data_root=data_root, data_pattern=data_pattern, schema_path=schema_path, span=span,
                           pipeline_root=pipeline_root, serving_dir=serving_dir, run_metrics=run_metrics,
                           data_digest=data_digest)
    transform = transform_component(cfg, data)
    tuner = tuning_component(cfg, data.training_examples, data.schema_gen, transform,
                             *training_args(cfg, train_args), hyperparameters_uri, tuner_factory)
    trainer = trainer_component(cfg, data, transform, train_args, trainer_factory, tuner)
    baseline, evaluator, pusher = evaluation_components(cfg, data, transform, trainer, serving_dir, run_metrics)
    components = [data.example_gen] + ([data.window] if data.window else []) + [
        data.statistics_gen, data.schema_gen, data.example_validator, data.anomalies_gate, data.drift_gate,
        transform] + ([tuner] if tuner else []) + [trainer, baseline, evaluator, pusher]
    beam_args = component_beam_args or {}
    for component in components:
        if component.id in beam_args:
            component.with_beam_pipeline_args(list(beam_args[component.id]))
    return Pipeline(
        pipeline_name=cfg.name,
        pipeline_root=pipeline_root,
        components=components,
        enable_cache=enable_cache,
        metadata_connection_config=metadata_connection_config,
        beam_pipeline_args=list(beam_pipeline_args),
    )


def data_components(cfg: PipelineConfig, *, data_root: DataRoot, data_pattern: str, schema_path: str,
                    span: Optional[int], pipeline_root: str, serving_dir: str, run_metrics: Optional[dict],
                    data_digest: str) -> DataComponents:
    example_gen = example_gen_component(cfg, data_root, data_pattern, span, data_digest)
    # The data checks look at today's span; Transform and Trainer read the window of spans.
    window = span_window(example_gen, cfg.data.window) if cfg.data.window > 1 else None
    statistics_gen = StatisticsGen(examples=example_gen.outputs["examples"], stats_options=statistics_options(cfg))
    schema_gen = ImportSchemaGen(schema_file=schema_path)
    example_validator = ExampleValidator(
        statistics=statistics_gen.outputs["statistics"], schema=schema_gen.outputs["schema"])
    # the gates and the Pusher report a compiled run's end to Prometheus (run_metrics: None for a local run)
    anomalies_gate = AnomaliesGate(anomalies=example_validator.outputs["anomalies"],
                                   statistics=statistics_gen.outputs["statistics"],  # empty splits
                                   serving_dir=serving_dir, monitoring=run_metrics)
    drift_gate = DriftGate(statistics=statistics_gen.outputs["statistics"], schema=schema_gen.outputs["schema"],
                           examples=example_gen.outputs["examples"], serving_dir=serving_dir,
                           span_ledger=posixpath.join(str(pipeline_root), SPAN_LEDGER),
                           thresholds=drift_thresholds(cfg), monitoring=run_metrics)
    return DataComponents(example_gen, window, statistics_gen, schema_gen, example_validator, anomalies_gate,
                          drift_gate)


def transform_component_config(cfg: PipelineConfig) -> dict:
    """The Transform's custom_config: the feature spec, and whether the text inputs pass through as
    raw strings (a pretrained encoder tokenizes them itself: trainer/text_pretrained.py)."""
    out: dict = {"features": cfg.features.to_dict()}
    if cfg.model.text_encoder == PRETRAINED and cfg.features.text_inputs:
        out[RAW_TEXT] = True
    return out


def transform_component(cfg: PipelineConfig, data: DataComponents):
    transform = Transform(
        examples=data.training_examples, schema=data.schema_gen.outputs["schema"],
        preprocessing_fn=PREPROCESSING_FN, custom_config=transform_component_config(cfg),
        disable_statistics=not cfg.runtime.transform_statistics,
        # Analyze train only, and write no transformed examples: the Trainer runs the
        # Transform graph on the raw examples as it reads them (trainer/data.py), as the
        # exported model does for serving and the Evaluator.
        materialize=False,
        splits_config=transform_pb2.SplitsConfig(analyze=[TRAIN_SPLIT]),
        # No analyzer cache: nothing here feeds one back in (TFX reads it only through an
        # `analyzer_cache` input), and writing it was most of TFT's Beam graph (each of the 24
        # analyzers' cache entries a TFRecord write: 768 -> 437 leaf transforms; the Transform
        # ~6 s faster on 10k rows, docs/performance.md).
        # TF2 tracing (TFX's default), although a TF1 graph (force_tf_compat_v1) would make the
        # Transform ~4.5 s faster on 10k rows: tft.TFTransformOutput.transform_raw_features, the
        # API a TFX user calls on a Transform output, refuses a TF1 graph in eager mode.
        disable_analyzer_cache=True)
    transform.add_upstream_node(data.anomalies_gate)  # no training on data that fails validation
    transform.add_upstream_node(data.drift_gate)      # ... or that drifted from the serving model's data
    return transform


def training_args(cfg: PipelineConfig, train_args):
    """(TrainArgs, EvalArgs) of the Tuner's trials and the Trainer: fit on train, early-stop on
    validation; eval is the Evaluator's alone. The step budget (training.train_steps) as TFX's
    TrainArgs (pipeline/config/steps.py), unless a runtime ``train_args`` replaces it (it names no
    splits: TFX's default is train)."""
    return (train_args or trainer_pb2.TrainArgs(**steps.train_args(steps.step_budget(cfg.training)),
                                                splits=[TRAIN_SPLIT]),
            trainer_pb2.EvalArgs(num_steps=cfg.training.eval_steps, splits=[cfg.data.trainer_eval_split]))


def trainer_component(cfg: PipelineConfig, data: DataComponents, transform, train_args, trainer_factory,
                      tuner=None):
    """The Trainer: its settings in custom_config, the Tuner's (or reused) best hyperparameters
    laid over them (trainer/run.py)."""
    trainer_train_args, eval_args = training_args(cfg, train_args)
    trainer_kwargs = dict(
        run_fn=RUN_FN,
        examples=data.training_examples,
        transform_graph=transform.outputs["transform_graph"],
        schema=data.schema_gen.outputs["schema"],
        train_args=trainer_train_args,
        eval_args=eval_args,
        custom_config=trainer_custom_config(cfg),
    )
    if tuner is not None:
        trainer_kwargs["hyperparameters"] = tuned_hyperparameters(tuner)
    return (trainer_factory or Trainer)(**trainer_kwargs)


def evaluation_components(cfg: PipelineConfig, data: DataComponents, transform, trainer, serving_dir: str,
                          run_metrics: Optional[dict]) -> Tuple[Any, Any, Any]:
    """The serving baseline, the Evaluator that blesses against it, and the Pusher."""
    # The baseline is the model serving now, resolved in a container component (not TFX's
    # Resolver, which compiles to executors open-source KFP cannot run): components/serving_baseline.py
    baseline = ServingBaseline(candidate_model=trainer.outputs["model"], serving_dir=serving_dir).with_id(BASELINE_ID)
    evaluator = GatedEvaluator(
        examples=data.example_gen.outputs["examples"],
        model=trainer.outputs["model"],
        baseline_model=baseline.outputs["baseline_model"],
        eval_config=build_eval_config(cfg.evaluation, cfg.features),
        example_splits=[EVAL_SPLIT],  # held out: nothing trained or early-stopped on it
    ).with_id("Evaluator")
    pusher = SafePusher(
        model=trainer.outputs["model"],
        model_blessing=evaluator.outputs["blessing"],
        evaluation=evaluator.outputs["evaluation"],
        examples=data.training_examples,  # recorded: the spans the model was trained on
        statistics=data.statistics_gen.outputs["statistics"],  # the next runs' drift reference
        serving_dir=serving_dir,
        keep_versions=cfg.serving.keep_versions,
        task=cfg.features.task,
        release=release_properties(cfg),
        # serving.tflite: the TFLite model is rebuilt from the Transform's graph and checked here
        transform_graph=transform.outputs["transform_graph"] if tflite_properties(cfg) else None,
        tflite=tflite_properties(cfg),
        drift_anomalies=data.drift_gate.outputs["drift_anomalies"],  # the run's drift, for its metrics
        monitoring=run_metrics,
    ).with_id("Pusher")
    return baseline, evaluator, pusher
