import pytest

from tfxline.transforms import features as F
from tfxline.transforms.features import FeatureSpec, FeatureSpecError

LABEL = {"name": "y", "transform": "ratio_threshold", "numerator": "tips", "denominator": "fare",
         "threshold": 0.2}


def spec(inputs, crosses=(), label=LABEL):
    return FeatureSpec.from_dict({"label": label, "inputs": list(inputs), "crosses": list(crosses)})


def test_valid_spec_orders_model_features():
    s = spec([{"name": "fare", "transform": "zscore"},
              {"name": "a", "transform": "bucketize", "num_buckets": 4},
              {"name": "b", "transform": "identity", "num_buckets": 24}],
             [{"name": "a_x_b", "inputs": ["a", "b"], "hash_buckets": 10}])
    assert s.model_feature_names == ("fare_xf", "a_xf", "b_xf", "a_x_b_xf")
    assert s.raw_columns == ("fare", "a", "b", "tips")
    assert s.serving_columns == ("fare", "a", "b")
    assert FeatureSpec.from_dict(s.to_dict()) == s


def test_a_column_can_feed_several_features():
    s = spec([{"name": "fare", "transform": "log_zscore"},
              {"name": "fare_bucket", "column": "fare", "transform": "bucketize", "num_buckets": 8}])
    assert s.model_feature_names == ("fare_xf", "fare_bucket_xf")
    assert s.serving_columns == ("fare",) and s.raw_columns == ("fare", "tips")
    assert "column" not in s.to_dict()["inputs"][0]  # unset: the feature's own name
    assert FeatureSpec.from_dict(s.to_dict()) == s


@pytest.mark.parametrize("inputs, crosses, label, message", [
    ([{"name": "a", "transform": "sqrt"}], [], LABEL, "unknown transform 'sqrt'"),
    ([{"name": "a", "transform": "zscore"}, {"name": "a", "transform": "zscore"}], [], LABEL,
     "duplicate feature name 'a'"),
    ([{"name": "a", "transform": "zscore"}], [{"name": "c", "inputs": ["a", "a"]}], LABEL,
     "not a categorical input"),
    ([{"name": "a", "transform": "zscore", "colour": 1}], [], LABEL,
     r"^unknown config key features.inputs\[0\].colour; allowed keys in features.inputs\[0\]: augment, column,"),
    ([{"transform": "zscore"}], [], LABEL, r"^config key features.inputs\[0\].name is required; add name: "),
    ([{"name": "a", "transform": "vocabulary", "top_k": "many"}], [], LABEL,
     r"^bad config value for features.inputs\[0\].top_k: expected an integer, got 'many'; write a whole number$"),
    ([{"name": "a", "transform": "zscore"}], [], {"name": "y", "transform": "ratio_threshold", "numerator": "n"},
     "needs 'denominator'"),
    ([{"name": "a", "transform": "zscore"}], [], {"name": "y", "transform": "magic", "column": "a"},
     "unknown transform 'magic'"),
    ([{"name": "a", "transform": "zscore"}], [], {"name": "y", "transform": "binary", "column": "a"},
     "label leak"),
    ([], [], LABEL, "at least one input"),
    ([{"name": "a", "transform": "zscore"}, {"name": "a_log", "column": "y_src", "transform": "log_zscore"}], [],
     {"name": "y", "transform": "binary", "column": "y_src"}, "label leak"),
])
def test_invalid_specs_are_rejected(inputs, crosses, label, message):
    with pytest.raises(FeatureSpecError, match=message):
        spec(inputs, crosses, label)


@pytest.mark.parametrize("transform, task", [
    ("binary", F.TASK_BINARY), ("class_vocabulary", F.TASK_MULTICLASS), ("regression", F.TASK_REGRESSION)])
def test_a_label_reads_the_column_of_its_own_name_unless_told(transform, task):
    inputs = [{"name": "a", "transform": "zscore"}]
    spec = F.FeatureSpec.from_dict({"label": {"name": "y", "transform": transform}, "inputs": inputs})
    assert spec.task == task and spec.label.source_columns == ("y",) and spec.raw_columns == ("a", "y")
    assert "y" not in spec.serving_columns
    spec = F.FeatureSpec.from_dict({"label": {"name": "y", "transform": transform, "column": "z"}, "inputs": inputs})
    assert spec.label.source_columns == ("z",) and spec.raw_columns == ("a", "z")
    with pytest.raises(F.FeatureSpecError, match="label name 'a' is also an input feature"):
        F.FeatureSpec.from_dict({"label": {"name": "a", "transform": transform}, "inputs": inputs})


def test_columns_absent_from_schema_are_named():
    s = spec([{"name": "fare", "transform": "zscore"}, {"name": "speed", "transform": "zscore"}])
    with pytest.raises(FeatureSpecError, match="speed"):
        s.validate(schema_columns=["fare", "tips"])


def test_a_misspelt_column_gets_the_schemas_close_name():
    """A typo in the config (a new user's 'occupaton'): the schema's close name is suggested, a
    name with no close one gets no guess."""
    s = spec([{"name": "fare", "transform": "zscore"}, {"name": "occupaton", "transform": "vocabulary"}])
    with pytest.raises(FeatureSpecError) as e:
        s.validate(schema_columns=["fare", "occupation", "tips"])
    assert str(e.value) == ("features: column(s) occupaton are not in the schema; fix the names in the config "
                            "(did you mean 'occupation'?), or add the columns to the data and its schema")
    s = spec([{"name": "Fare", "transform": "zscore"}, {"name": "speed", "transform": "zscore"}])
    with pytest.raises(FeatureSpecError, match=r"Fare, speed are not in the schema; fix the names in the config "
                                               r"\(did you mean 'Fare' -> 'fare'\?\), or add"):
        s.validate(schema_columns=["fare", "tips"])
