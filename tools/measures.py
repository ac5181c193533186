"""The tree's measures (issue #51), checked by tests/test_layers.py and printed by
``python tools/measures.py``: each folder's share of the product code, files over
MAX_FILE_LINES lines, functions over MAX_FUNCTION_LINES lines, and imports against LAYERS."""
from __future__ import annotations

import ast
import pathlib
import sys
from typing import Dict, Iterator, List, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Lowest first: a package imports only itself and the packages before it. local and kubeflow
# are one rank (two orchestrators of the same pipeline: neither imports the other). patches
# (every run-time patch of a third-party library) is the lowest: it imports only third-party
# libraries and the standard library.
LAYERS: Tuple[Tuple[str, ...], ...] = (
    ("patches",), ("task_types",), ("transforms",), ("trainer",), ("serving",), ("components",), ("pipeline",),
    ("runs",), ("local", "kubeflow"), ("cli",))
PACKAGES = tuple(p for rank in LAYERS for p in rank)
RANK = {p: i for i, rank in enumerate(LAYERS) for p in rank}
MAX_FOLDER_SHARE = 0.20
MAX_FILE_LINES = 300
MAX_FUNCTION_LINES = 80


def product_files() -> List[pathlib.Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if "__pycache__" not in p.parts)


def lines_of(path: pathlib.Path) -> int:
    return len(path.read_text().splitlines())


def folder_shares() -> Dict[str, float]:
    sizes = {pkg: 0 for pkg in PACKAGES}
    for path in product_files():
        sizes[path.relative_to(ROOT).parts[0]] += lines_of(path)
    total = sum(sizes.values()) or 1
    return {pkg: n / total for pkg, n in sizes.items()}


def long_files() -> List[str]:
    return [f"{p.relative_to(ROOT)}: {n} lines" for p in product_files() if (n := lines_of(p)) > MAX_FILE_LINES]


def long_functions() -> List[str]:
    out = []
    for path in product_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {n} lines")
    return out


def imports(path: pathlib.Path) -> Iterator[Tuple[int, str]]:
    """(line, dotted module) of every absolute import in the file, function-level ones included."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


def layer_violations() -> List[str]:
    """Imports against LAYERS, and any import of a folder by its bare name: the installed
    distribution has one top-level name, ``tfxline`` (setup.py), so ``import pipeline`` would
    find someone else's package, or nothing, outside a checkout."""
    out = []
    for path in product_files():
        own = path.relative_to(ROOT).parts[0]
        for line, module in imports(path):
            parts = module.split(".")
            if parts[0] in RANK or parts[0] == "schema":
                out.append(f"{path.relative_to(ROOT)}:{line} imports {module} (import it as tfxline.{module})")
                continue
            root = parts[1] if parts[0] == "tfxline" and len(parts) > 1 else None
            if root in RANK and root != own and RANK[root] >= RANK[own]:
                out.append(f"{path.relative_to(ROOT)}:{line} imports {module} ({root} is not below {own})")
    return out


def main() -> int:
    shares = folder_shares()
    print("product code by folder (limit %d%%):" % round(MAX_FOLDER_SHARE * 100))
    for pkg, share in sorted(shares.items(), key=lambda kv: -kv[1]):
        print(f"  {pkg:<11} {share:6.1%}")
    problems = ([f"{pkg}/ holds {s:.1%} of the product code" for pkg, s in shares.items() if s > MAX_FOLDER_SHARE]
                + long_files() + long_functions() + layer_violations())
    print("\n".join(problems) if problems else "all measures hold")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
