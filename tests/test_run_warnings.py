"""What a run's numbers may not mean (runs/warnings.py) and which columns the model leans on
(trainer/importance.py). On openintro's loans, a model reading sub_grade (which names the grade)
was blessed at accuracy 1.0000 and the summary said nothing; init had warned once."""
import numpy as np
import tensorflow as tf

from tfxline.runs import warnings
from tfxline.trainer import importance
from tfxline.trainer.model import Head, ModelInput, build_model, loss_and_metrics
from tfxline.transforms import features as F


def test_a_suspect_column_is_repeated_while_an_input_reads_it():
    suspects = {"sub_grade": "its value alone names the class in 100.0% of rows"}
    assert warnings.suspect_lines(suspects, ["income", "sub_grade"]) == [
        "sub_grade gives the label away (its value alone names the class in 100.0% of rows; tfxline init); the model "
        "reads it: remove it from features.inputs unless it is known when a prediction is asked for"]
    assert warnings.suspect_lines(suspects, ["income"]) == []  # left out: nothing to repeat


def test_a_near_perfect_metric_against_a_real_baseline_is_too_good():
    leaned = [["sub_grade", 0.84], ["income", 0.01]]
    line = warnings.too_good({"accuracy": 1.0, "accuracy_lift": 0.77}, leaned)
    assert "accuracy 1.0000 is too good to be true" in line and "sub_grade (0.84 lost without it)" in line
    assert warnings.too_good({"accuracy": 0.995, "accuracy_lift": 0.001}, leaned) == ""  # 99.4 % one class
    assert warnings.too_good({"auc": 0.93, "binary_accuracy": 0.995}, leaned) == ""
    assert "auc 0.9950" in warnings.too_good({"auc": 0.995}, [])
    assert "r2 0.9990" in warnings.too_good({"r2": 0.999, "rmse": 1.0}, leaned)


def test_permutation_importance_names_the_column_the_model_reads():
    tf.keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    n = 2000
    x, noise, kind = rng.normal(size=n), rng.normal(size=n), rng.integers(0, 3, n)
    y = (x + 0.3 * (kind == 1) > 0).astype(np.int64)
    spec = F.FeatureSpec(label=F.Label("y", "binary"), inputs=(
        F.InputFeature("x", "zscore"), F.InputFeature("x_bucket", "bucketize", column="x", num_buckets=4),
        F.InputFeature("noise", "zscore"), F.InputFeature("kind", "identity", num_buckets=3)))
    inputs = [ModelInput("x_xf"), ModelInput("x_bucket_xf", 4), ModelInput("noise_xf"), ModelInput("kind_xf", 3)]
    features = {"x_xf": x.astype(np.float32), "x_bucket_xf": np.digitize(x, [-0.7, 0, 0.7]).astype(np.int64),
                "noise_xf": noise.astype(np.float32), "kind_xf": kind}
    model = build_model(inputs, Head("binary"), hidden_units=(8,))
    loss, metrics = loss_and_metrics(Head("binary"))
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss=loss, metrics=metrics)
    model.fit(features, y, epochs=5, batch_size=256, verbose=0)
    validation = tf.data.Dataset.from_tensor_slices((features, y)).batch(500)
    leaned = importance.leaned_on(model, validation, 4, spec)
    assert [c for c, _ in leaned][:2] == ["x", "kind"] and leaned[0][1] > 0.2
    assert "noise" not in [c for c, d in leaned if d > 0.01]


def test_a_class_the_eval_split_lacks_is_named():
    metrics = {"accuracy": 0.8, "recall[a]": 0.9, "recall[b]": 0.7}
    assert "no row of class(es) 'c'" in warnings.missing_classes(metrics, ["a", "b", "c"])
    assert warnings.missing_classes(metrics, ["a", "b"]) == ""
    assert warnings.missing_classes({"auc": 0.8}, ["0", "1"]) == ""  # binary: its undefined metrics say so
