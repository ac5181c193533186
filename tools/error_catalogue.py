"""The error catalogue (docs/troubleshooting.md): every one-line error the project can raise for
bad input, bad config, bad data or a refused model, collected from the code (each ``raise`` of a
user-facing error class with its message), so a new error cannot ship undocumented
(tests/test_docs.py fails when the page differs from what this writes).

By the project's rule each message names the problem and, after a semicolon, the fix; the page
shows the message as written, ``{...}`` standing for what the run fills in.

    .venv/bin/python tools/error_catalogue.py            # rewrite docs/troubleshooting.md
    .venv/bin/python tools/error_catalogue.py --check    # exit 1 when it is stale
"""
from __future__ import annotations

import ast
import dataclasses
import glob
import os
import sys
import typing
from typing import Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
OUTPUT = os.path.join(ROOT, "docs", "troubleshooting.md")
from tools.measures import PACKAGES  # noqa: E402 - every product folder (the layers)
# The errors a user sees as the `error:` line (exit 2 for input and config, 1 for a refused or
# failed run), by class; where each is raised is collected from the code.
USER_ERRORS = {
    "ConfigError": "bad config (exit 2)",
    "DataError": "bad input data (exit 2)",
    "NotUtf8Error": "a .txt file that is not UTF-8 (exit 2: the pre-flight check; a compiled run's TextExampleGen)",
    "FeatureSpecError": "bad feature spec (exit 2)",
    "LabelError": "the label column cannot train the task (exit 2)",
    "BadInput": "bad command line (exit 2)",
    "SpecError": "compiled pipeline (exit 2)",
    "UnsupportedSpec": "compiled pipeline (exit 2)",
    "SubmitError": "submission (exit 2)",
    "RunCompiledError": "run-compiled setup (exit 2)",
    "RollbackError": "serving rollback (exit 2)",
    "ReleaseError": "serving release labels (exit 2)",
    "ServerError": "serving --server: TF Serving's model status (exit 1)",
    "PushError": "push (exit 1)",
    "DataAnomaliesError": "data gate (exit 1)",
    "DataDriftError": "drift gate (exit 1)",
    "EmptySplitError": "trainer (exit 1)",
    "StrategyError": "trainer (exit 1)",
    "CsvHeaderError": "CsvExampleGen (exit 1)",
    "TFLiteError": "TFLite model (the push refused, as for an unblessed model; int8 with strings: exit 2)",
    "AnalyzerValuesError": "TFLite model (the push refused)",
}


def message_text(node: ast.AST) -> str:
    """A message expression as written: literal text, ``{...}`` for what is filled in."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{...}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return message_text(node.left) + message_text(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
        return "{...}"
    return "{...}"


def collect() -> List[Tuple[str, str, int, str]]:
    """(error class, file, line, message) of every raise of a user-facing error with a message."""
    found = []
    for package in PACKAGES:
        for base, _, names in sorted(os.walk(os.path.join(ROOT, package))):
            for name in sorted(n for n in names if n.endswith(".py")):
                path = os.path.join(base, name)
                tree = ast.parse(open(path).read(), path)
                for node in ast.walk(tree):
                    if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                        continue
                    func = node.exc.func
                    cls = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                    if cls in USER_ERRORS and node.exc.args:
                        message = message_text(node.exc.args[0])
                        if message.strip("{}.") and message != "{...}":
                            found.append((cls, os.path.relpath(path, ROOT), node.lineno, message))
    found += config_checks()
    return sorted(found, key=lambda f: (list(USER_ERRORS).index(f[0]), f[1], f[2]))


# The files whose dataclasses are the config's sections (each with its rules, problems()).
SECTION_FILES = ("pipeline/config/__init__.py", "pipeline/config/sections.py", "pipeline/config/platform.py",
                 "trainer/settings.py", "trainer/text_settings.py", "trees/settings.py")
# ... and what is checked outside a section class: a section's problems() calls these functions on
# itself, or the class is a section nested in another (model.trees)
SECTION_OWNERS = {"text_problems": "model", "family_problems": "model", "TreesConfig": "model.trees"}


def config_checks() -> List[Tuple[str, str, int, str]]:
    """The config sections' rules: each ``bad(self, key, fix)`` or ``Problem(key, shown, fix)`` in a
    section class (SECTION_FILES) is one line, raised by typed_config/problems.check."""
    sections = config_section_names()
    rows = []
    for name in SECTION_FILES:
        path = os.path.join(ROOT, name)
        tree = ast.parse(open(path).read(), path)
        for owner in tree.body:
            owner_name = owner.name if isinstance(owner, (ast.ClassDef, ast.FunctionDef)) else ""
            section = sections.get(owner_name, SECTION_OWNERS.get(owner_name))
            for node in ast.walk(owner) if section is not None else ():
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                    continue
                if node.func.id == "bad" and len(node.args) == 3:
                    key, shown, fix = message_text(node.args[1]), "{...}", message_text(node.args[2])
                elif node.func.id == "Problem" and len(node.args) == 3:
                    key, shown, fix = (message_text(a) for a in node.args)
                else:
                    continue
                key = f"{section}.{key}" if section else key
                rows.append(("ConfigError", name, node.lineno, f"bad config value for {key}: {shown}; {fix}"))
    return rows


def config_section_names() -> Dict[str, str]:
    """Section class -> its key in PipelineConfig, and each dataclass a section extends (the
    Trainer's TrainerRuntime: runtime); PipelineConfig's own: ''."""
    from tfxline.pipeline.config import PipelineConfig

    hints = typing.get_type_hints(PipelineConfig)
    names = {base.__name__: key for key, tp in hints.items() if dataclasses.is_dataclass(tp) and key != "features"
             for base in tp.__mro__ if dataclasses.is_dataclass(base)}
    return dict(names, PipelineConfig="")


def render() -> str:
    out = ["# Troubleshooting: every error line", "",
           "<!-- Generated by tools/error_catalogue.py from the raise statements in the code; do not edit by hand. -->",
           "", "A run that cannot go on prints one `error:` line and exits non-zero: 2 for bad input or config "
           "(nothing ran), 1 for a run stopped by a gate or a failed component (`tfxline run` prefixes "
           "`pipeline failed:`). Each message names the problem and, after the semicolon, the fix. "
           "`{...}` stands for what the run fills in (a path, a column, a value).", ""]
    by_class: Dict[str, List[Tuple[str, int, str]]] = {}
    for cls, path, line, message in collect():
        by_class.setdefault(cls, []).append((path, line, message))
    for cls, rows in by_class.items():
        out += [f"## {USER_ERRORS[cls]}: `{cls}`", "", "| message | raised in |", "|---|---|"]
        for path, _, message in rows:
            text = message.replace("|", "\\|").replace("\n", " ")
            out.append(f"| {text} | `{path}` |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    from tools.generated_page import main

    sys.exit(main(OUTPUT, render, __doc__.splitlines()[0], "tools/error_catalogue.py"))
