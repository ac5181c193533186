"""A small synthetic taxi-like data set for trainer unit tests that compare two trainings."""
import numpy as np
import tensorflow as tf

from tfxline.trainer.model import ModelInput

INPUTS = [ModelInput("fare"), ModelInput("miles"), ModelInput("payment_type", 5), ModelInput("hour", 24)]
ROWS = 512


def dataset(batch_size: int) -> tf.data.Dataset:
    """The same ROWS rows every time (seeded); the label depends on fare and payment_type."""
    rng = np.random.default_rng(7)
    fare = rng.normal(size=ROWS).astype("float32")
    x = {"fare": fare, "miles": rng.normal(size=ROWS).astype("float32"),
         "payment_type": rng.integers(0, 5, ROWS), "hour": rng.integers(0, 24, ROWS)}
    y = ((fare + (x["payment_type"] == 1)) > 0.5).astype("int64")
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size, drop_remainder=True)


def max_diff(a, b) -> float:
    """The largest absolute difference between two lists of weight arrays."""
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))
