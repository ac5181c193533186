"""The fused Adam/AdamW against Keras' own: the same weights after training from the same start
(with and without weight decay, on a cosine schedule), and far fewer kernel ops per step."""
import pytest
import tensorflow as tf

from tfxline.patches.autograph import skip_autograph_for_libraries
from tfxline.trainer.keras_compat import keras
from tfxline.trainer.model import Head, build_model, loss_and_metrics
from tfxline.trainer.optimizer import NO_DECAY, learning_rate_schedule, optimizer
from tfxline.trainer.train_step import step_kernel_ops, training_model
from tests.synthetic import INPUTS, ROWS, dataset, max_diff

BATCH = 64
skip_autograph_for_libraries()


def keras_adam(schedule, weight_decay):
    k = keras()
    if not weight_decay:
        return k.optimizers.Adam(schedule)
    opt = k.optimizers.AdamW(schedule, weight_decay=weight_decay)
    opt.exclude_from_weight_decay(var_names=list(NO_DECAY))
    return opt


def train(make_optimizer, initial, weight_decay, epochs=3, train_metrics=True):
    model = build_model(INPUTS, Head("binary"), hidden_units=(16, 8), batch_norm=True)
    model.set_weights(initial)
    schedule = learning_rate_schedule(0.02, decay_steps=epochs * ROWS // BATCH, warmup_steps=2)
    trainable = training_model(model, 1, train_metrics)
    loss, metrics = loss_and_metrics(Head("binary"))
    trainable.compile(optimizer=make_optimizer(schedule, weight_decay), loss=loss, metrics=metrics)
    trainable.fit(dataset(BATCH), epochs=epochs, verbose=0)
    return model, trainable


@pytest.fixture(scope="module")
def initial():
    tf.keras.utils.set_random_seed(11)
    return build_model(INPUTS, Head("binary"), hidden_units=(16, 8), batch_norm=True).get_weights()


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_fused_optimizer_trains_the_weights_keras_adam_does(initial, weight_decay):
    fused, _ = train(optimizer, initial, weight_decay)
    reference, _ = train(keras_adam, initial, weight_decay)
    assert max_diff(initial, reference.get_weights()) > 1e-2  # it did train
    assert max_diff(fused.get_weights(), reference.get_weights()) < 2e-5
    if weight_decay:  # control: the decay changes the weights, so the comparison can fail
        undecayed, _ = train(optimizer, initial, 0.0)
        assert max_diff(fused.get_weights(), undecayed.get_weights()) > 1e-3


def test_biases_and_normalization_are_not_decayed():
    opt = optimizer(0.01, weight_decay=0.1)
    model = build_model(INPUTS, Head("binary"), hidden_units=(8,), batch_norm=True)
    decayed = {v.name.split("/")[-1].split(":")[0] for v in model.trainable_variables if opt.decays(v)}
    kept = {v.name.split("/")[-1].split(":")[0] for v in model.trainable_variables if not opt.decays(v)}
    assert decayed == {"table", "kernel"} and kept == {"bias", "gamma", "beta"}
    assert not optimizer(0.01).decays(model.trainable_variables[0])
    with pytest.raises(ValueError, match="weight_decay"):
        optimizer(0.01, weight_decay=-1)


def test_a_step_launches_one_fused_update_per_variable(initial):
    fused_model, fused = train(optimizer, initial, 0.1, epochs=1, train_metrics=False)
    _, reference = train(keras_adam, initial, 0.1, epochs=1, train_metrics=False)
    variables = len(fused_model.trainable_variables)
    fused_ops, reference_ops = step_kernel_ops(fused), step_kernel_ops(reference)
    step = fused.train_function._list_all_concrete_functions()[-1].graph
    assert [op.type for op in step.get_operations()].count("ResourceApplyAdam") == variables
    assert fused_ops < 0.6 * reference_ops, (fused_ops, reference_ops)
