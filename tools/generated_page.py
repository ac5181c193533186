"""The command line of a generated docs page (tools/config_reference.py, tools/error_catalogue.py):
write the page, or with --check exit 1 when the file differs from what the code generates."""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable


def main(output: str, render: Callable[[], str], description: str, script: str) -> int:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help=f"exit 1 when {os.path.basename(output)} is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        current = open(output).read() if os.path.exists(output) else ""
        if current != text:
            print(f"{output} is stale; run: .venv/bin/python {script}", file=sys.stderr)
            return 1
        return 0
    os.makedirs(os.path.dirname(output), exist_ok=True)
    with open(output, "w") as f:
        f.write(text)
    print(f"wrote {output}")
    return 0
