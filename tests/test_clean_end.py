"""A process that trained through the trainer's code ends on its own output, without "Exception
ignored in: <function AtomicFunction.__del__>" tracebacks (issue #63): TensorFlow's gradient
registry keeps every graph a ``tf.custom_gradient`` was traced in (patches/tf_custom_gradients.py), here the
gradient-accumulation loop's, until TensorFlow's modules are torn down at exit."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Trains twice as the trainer does (our custom gradients inside the accumulation while loop): once
# inside tf_custom_gradients.released(), as run_fn does, then reads a split as it does (trainer/data.py's
# Dataset.reduce) and counts the functions still alive; once left to the end of the process. The exit's teardown collects garbage only when the allocator happens to
# (a long test run did; a short script mostly collects after sys.stderr is gone, silently): an
# object in the globals of ``os``, imported before TensorFlow and so torn down after it, collects
# there, every time.
CODE = """
import gc, os, sys
os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

class CollectDuringTeardown:
    def __del__(self, collect=gc.collect):
        collect()

os._collect_during_teardown = CollectDuringTeardown()

def train():
    from tfxline.patches.autograph import skip_autograph_for_libraries
    from tfxline.trainer.keras_compat import keras
    from tfxline.trainer.model import Head, build_model, loss_and_metrics
    from tfxline.trainer.train_step import training_model
    from tests.synthetic import INPUTS, dataset

    skip_autograph_for_libraries()
    trainable = training_model(build_model(INPUTS, Head("binary"), hidden_units=(8,)), 2)
    loss, metrics = loss_and_metrics(Head("binary"))
    trainable.compile(optimizer=keras().optimizers.Adam(0.01), loss=loss, metrics=metrics)
    trainable.fit(dataset(64), epochs=1, steps_per_epoch=2, verbose=0)

def read(path):  # the trainer's passes over a split (Dataset.reduce)
    import tensorflow as tf
    from tfxline.trainer import data

    with tf.io.TFRecordWriter(path, options="GZIP") as w:
        for v in range(10):
            w.write(tf.train.Example(features=tf.train.Features(feature={
                "y": tf.train.Feature(float_list=tf.train.FloatList(value=[v]))})).SerializeToString())
    assert data.count_records([path]) == 10
    data.label_moments([path], "y", data.parser({"y": tf.io.FixedLenFeature([], tf.float32)}))

from tfxline.patches import tf_custom_gradients
with tf_custom_gradients.released():
    train()
read(sys.argv[1])
gc.collect()
from tensorflow.python.eager.polymorphic_function.atomic_function import AtomicFunction
print("alive after release:", sum(type(o) is AtomicFunction for o in gc.get_objects()))
train()
print("trained")
"""


def test_a_process_that_trained_ends_without_tracebacks(tmp_path):
    done = subprocess.run([sys.executable, "-c", CODE, str(tmp_path / "split.gz")], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["alive after release: 0", "trained"], done.stdout + done.stderr[-3000:]
    assert "Exception ignored in" not in done.stderr, done.stderr[-3000:]
