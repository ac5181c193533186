"""Commands on the user's data: ``tfxline init`` (a config and schema for a CSV), ``tfxline
schema draft`` and ``tfxline predict`` (raw rows through the pushed model)."""
from __future__ import annotations

from typing import TextIO

from tfxline.cli.common import EXIT_OK, BadInput, add_config_args, config_file, config_or_bad_input, quiet_tensorflow


def add_init(sub) -> None:
    init = sub.add_parser("init", help="write a config and a schema for your CSV, image folder or text "
                                       "folder, decided from the data")
    init.add_argument("--data", required=True, metavar="CSV|FOLDER",
                      help="the CSV (a file, .csv.gz, or a directory of them), or a folder of images or .txt "
                           "files with one sub-folder per class")
    init.add_argument("--label", metavar="COLUMN", help="the column to predict (a CSV's; an image or text folder's "
                                                        "classes are its sub-folders)")
    from tfxline.task_types import NAMES as TASKS  # no TensorFlow

    init.add_argument("--task", choices=TASKS,
                      help="default: from the label's values (two values: binary; text or a few whole numbers: "
                           "multiclass; other numbers: regression)")
    init.add_argument("--positive", metavar="VALUE",
                      help="binary: the positive value as the data writes it (needed unless it is yes/no, true/false, "
                           "y/n, 1/0 or positive/negative); a two-class text folder's positive sub-folder")
    init.add_argument("--dir", default=".", metavar="DIR", help="where config.yaml and schema.pbtxt go (default: here)")
    init.add_argument("--force", action="store_true", help="replace DIR's config.yaml and schema.pbtxt")
    init.add_argument("--tune", action="store_true",
                      help="tune the model's hyperparameters before training (TFX's Tuner), within a budget that "
                           "fits the table")
    init.set_defaults(func=cmd_init)


def add_schema(sub) -> None:
    schema = sub.add_parser("schema", help="draft a schema from data, for review")
    schema_sub = schema.add_subparsers(dest="schema_command", required=True)
    draft = schema_sub.add_parser("draft", help="infer a schema from the data (CSV or TFRecord) with TFDV")
    add_config_args(draft)
    draft.add_argument("--diff", action="store_true",
                       help="print the difference between the draft and the configured schema")
    draft.add_argument("--schema-output", metavar="FILE", help="write the draft schema here (a new file)")
    draft.add_argument("--force", action="store_true", help="let --schema-output replace an existing file")
    draft.set_defaults(func=cmd_schema_draft)


def add_predict(sub) -> None:
    pr = sub.add_parser("predict", help="predict a CSV of raw rows with the serving directory's stable model")
    add_config_args(pr)
    pr.add_argument("--input", required=True, metavar="CSV", help="raw rows (the label may be absent)")
    pr.add_argument("--predictions", required=True, metavar="FILE",
                    help="output: .csv, or .jsonl for JSON lines; - for CSV on standard output")
    pr.add_argument("--model-dir", help="a SavedModel directory (default: the release's stable version, a pending "
                                        "move's included)")
    pr.set_defaults(func=cmd_predict)


def cmd_init(args, stream: TextIO) -> int:
    from tfxline.cli import init_project
    from tfxline.pipeline.data.source import DataError

    quiet_tensorflow()  # the schema is drafted with TFDV
    try:
        return init_project.init(args.data, args.label, args.task, args.positive, args.dir, args.force, stream,
                                 tune=args.tune)
    except (init_project.InitError, DataError) as e:
        raise BadInput(str(e)) from None


def cmd_schema_draft(args, stream: TextIO) -> int:
    from tfxline.cli import schema_draft
    from tfxline.pipeline.data.source import DataError

    cfg = config_or_bad_input(args)
    try:
        return schema_draft.draft(cfg, out_path=args.schema_output, diff=args.diff, stream=stream, force=args.force)
    except DataError as e:
        raise BadInput(str(e)) from None


def cmd_predict(args, stream: TextIO) -> int:
    from tfxline.local.predict import predict_csv
    from tfxline.pipeline.data.source import DataError
    from tfxline.serving.release import ReleaseError

    cfg = config_or_bad_input(args, data=False)
    try:
        predict_csv(cfg, args.input, args.predictions, model_dir=args.model_dir, stream=stream)
    except ReleaseError as e:  # the serving directory's release.json cannot be read
        raise BadInput(str(e)) from None
    except (DataError, FileNotFoundError) as e:
        # without --config the packaged taxi config is read: say so, most models are not taxi's
        hint = ("" if config_file(args) else
                f" (read with the config of pipeline {cfg.name}: pass --config for your own)")
        raise BadInput(f"{e}{hint}") from None
    return EXIT_OK
