"""Strip the notebooks' outputs before a commit: every code cell's outputs and execution count,
the cells' run metadata (timings, scroll state) and the notebook's machine-specific metadata
(Python version, widget state). The cells' source, ids and tags are kept, written as Jupyter
writes a notebook (nbformat's JSON: indent 1, sorted keys), so a stripped notebook opens and
saves unchanged. Standard library only.

    python3 tools/strip_notebooks.py            # notebooks/*.ipynb, stripped in place
    python3 tools/strip_notebooks.py --check    # exit 1 naming those with outputs; change nothing
    python3 tools/strip_notebooks.py A.ipynb    # those files

tests/test_notebooks.py fails on a committed notebook with outputs; `make notebook-strip` runs this.
"""
from __future__ import annotations

import glob
import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEPT_CELL_METADATA = ("tags",)


def strip(nb: Dict[str, Any]) -> Dict[str, Any]:
    for cell in nb.get("cells", []):
        cell["metadata"] = {k: v for k, v in cell.get("metadata", {}).items() if k in KEPT_CELL_METADATA}
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    metadata = nb.get("metadata", {})
    nb["metadata"] = {k: v for k, v in metadata.items() if k == "kernelspec"}
    if "language_info" in metadata:
        nb["metadata"]["language_info"] = {"name": metadata["language_info"].get("name", "python")}
    return nb


def stripped(text: str) -> str:
    """The notebook JSON ``text``, stripped, as Jupyter writes it."""
    return json.dumps(strip(json.loads(text)), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    paths: List[str] = [a for a in args if a != "--check"] or sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))
    changed = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        clean = stripped(text)
        if clean == text:
            continue
        changed.append(path)
        if not check:
            with open(path, "w", encoding="utf-8") as f:
                f.write(clean)
    for path in changed:
        print(f"{'has outputs' if check else 'stripped'}: {os.path.relpath(path)}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
