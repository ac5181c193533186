"""``tfxline serving``: the serving directory's versions, and the release moves (rollback,
canary, promote, settle) on it (runs/versions.py)."""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import TextIO

from tfxline.cli.common import EXIT_FAILED, EXIT_OK, BadInput, add_config_args, config_or_bad_input


def add_commands(sub) -> None:
    serving = sub.add_parser("serving", help="the serving directory's versions, newest first")
    add_config_args(serving)
    serving.set_defaults(func=cmd_serving)
    serving_sub = serving.add_subparsers(dest="serving_command")
    rollback = serving_sub.add_parser(
        "rollback", help="serve an older version again (copied in as a new version; the bad one is kept)")
    add_config_args(rollback, default=argparse.SUPPRESS)
    rollback.add_argument("--to", type=int, metavar="VERSION",
                          help="the version to serve again (default: the one that served before the current)")
    rollback.add_argument("--reason", default="", metavar="TEXT", help="recorded in the new version's metadata")
    rollback.add_argument("--dry-run", action="store_true", help="say what would be served, change nothing")
    canary = serving_sub.add_parser(
        "canary", help="serve VERSION to a share of the traffic beside the stable version (label 'canary')")
    add_config_args(canary, default=argparse.SUPPRESS)
    canary.add_argument("version", type=int, metavar="VERSION", help="a pushed version ('tfxline serving' lists them)")
    canary.add_argument("--percent", type=int, required=True, metavar="P", help="its share of the traffic, 1-99")
    promote = serving_sub.add_parser("promote", help="the canary becomes stable, with all the traffic")
    add_config_args(promote, default=argparse.SUPPRESS)
    settle = serving_sub.add_parser(
        "settle", help="move a pending move's labels, once TF Serving (--server, else serving.tf_serving_url) has "
                       "loaded its versions")
    add_config_args(settle, default=argparse.SUPPRESS)
    settle.add_argument("--without-server", action="store_true",
                        help="move them without asking TF Serving (no TF Serving reads this release, or you checked; "
                             "serving.tf_serving_url is not asked either)")
    for command in (rollback, canary, promote, settle):
        command.add_argument("--server", default="", metavar="URL",
                             help="TF Serving's REST address (e.g. http://localhost:8501): wait until it has loaded "
                                  "the new version, then move the labels (without it: they move with 'tfxline serving "
                                  "settle')")
        command.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                             help="how long --server is waited for (default 300)")


def cmd_serving(args, stream: TextIO) -> int:
    from tfxline.local.lock import one_run_at_a_time
    from tfxline.runs import versions
    from tfxline.serving.push import RollbackError
    from tfxline.serving.release import ReleaseError

    cfg = config_or_bad_input(args, tensorflow=False, data=False)  # these commands read and copy files
    command = getattr(args, "serving_command", None)
    try:
        if command is None:
            print(versions.format_versions(cfg.serving_dir, cfg.serving.tf_serving_url), file=stream, flush=True)
            return EXIT_OK
        # Not between a run's baseline and its push (SQLite: one run at a time per output root).
        lock = (contextlib.nullcontext() if getattr(args, "dry_run", False) or not os.path.isdir(cfg.output_root)
                else one_run_at_a_time(cfg, stream))
        with lock:
            if command == "canary":
                lines = versions.canary(cfg, args.version, args.percent, args.server, args.timeout)
            elif command == "promote":
                lines = versions.promote(cfg, args.server, args.timeout)
            elif command == "settle":
                lines = versions.settle(cfg, args.server, args.timeout, args.without_server)
            else:
                lines = versions.rollback(cfg, args.to, args.reason, args.dry_run, args.server, args.timeout)
    except (RollbackError, ReleaseError) as e:
        raise BadInput(str(e)) from None
    except versions.ServerError as e:  # the first phase is written; the move waits for TF Serving
        print(f"error: {e}", file=sys.stderr)
        return EXIT_FAILED
    print(lines, file=stream, flush=True)
    return EXIT_OK
