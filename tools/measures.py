"""The tree's measures (issue #51), checked by tests/test_layers.py and printed by
``python tools/measures.py``: each folder's share of the product code, files over
MAX_FILE_LINES lines, functions over MAX_FUNCTION_LINES lines, imports against LAYERS, and import cycles
between the modules of one folder (module-level and function-level imports alike)."""
from __future__ import annotations

import ast
import pathlib
import sys
from typing import Dict, Iterator, List, Set, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Lowest first: a package imports only itself and the packages before it. local and kubeflow
# are one rank (two orchestrators of the same pipeline: neither imports the other). patches
# (every run-time patch of a third-party library) and typed_config (how a config section is read
# and refused) are the lowest: they import only third-party libraries and the standard library.
LAYERS: Tuple[Tuple[str, ...], ...] = (
    ("patches", "typed_config"), ("task_types",), ("transforms",), ("trees",), ("trainer",), ("serving",), ("components",),
    ("pipeline",),
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


def module_name(path: pathlib.Path) -> str:
    """The dotted name a product file imports as: tfxline.pipeline.config for pipeline/config/__init__.py."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(["tfxline"] + (parts[:-1] if parts[-1] == "__init__" else parts))


def imported_modules(path: pathlib.Path, known: Set[str]) -> Iterator[str]:
    """The product modules (of ``known``) the file imports, wherever the import sits: ``from a import b``
    names module a.b when b is one, else a; relative imports are resolved against the file's package."""
    own = module_name(path).split(".")
    package = own if path.name == "__init__.py" else own[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    yield f"{base}.{alias.name}"
                elif base in known:
                    yield base


def import_cycles() -> List[str]:
    """Every loop of imports among the modules of one folder (subfolders included), as
    'a -> b -> a': a function-level import that only hides a loop from Python still counts."""
    modules = {module_name(p): p for p in product_files()}
    graph = {m: sorted({t for t in imported_modules(p, set(modules)) if t != m and t.split(".")[1] == m.split(".")[1]})
             for m, p in modules.items()}
    out: List[str] = []
    for component in strongly_connected(graph):
        if len(component) > 1:
            out.append(" -> ".join(shortest_loop(graph, min(component), set(component))))
    return sorted(out)


def strongly_connected(graph: Dict[str, List[str]]) -> List[List[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    out: List[List[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    out.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(graph[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return out


def shortest_loop(graph: Dict[str, List[str]], start: str, within: Set[str]) -> List[str]:
    """The shortest import path from ``start`` back to itself inside one component (breadth first)."""
    previous: Dict[str, str] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in graph[node]:
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return path[::-1] + [start]
            if child in within and child not in previous:
                previous[child] = node
                queue.append(child)
    return [start]


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
                + long_files() + long_functions() + layer_violations()
                + [f"import cycle: {c}" for c in import_cycles()])
    print("\n".join(problems) if problems else "all measures hold")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
