"""The multi-task and vector-field estimators with no arguments, on unequal tasks, against baselines.

(The estimators live in jaxmtl.models.multitask and jaxmtl.models.fields; these tests check the
behaviour the issue asks for: defaults that work on standardised inputs, better than a trivial
baseline, and a clear error for each bad input.)
"""

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
import pytest

from jaxmtl import MultiTaskRegressor, VectorFieldRegressor
from jaxmtl.datasets import grid_2d, make_multitask_toy, vector_field_1
from jaxmtl.errors import NonFiniteError, ShapeError, TaskError


def test_multitask_defaults_on_unequal_tasks_beat_per_task_means():
    full = make_multitask_toy(30, 0)
    keep = np.ones(len(full.x), bool)
    keep[np.flatnonzero(full.tasks == 3)[8:]] = False  # task 3 has 8 examples, the others 30
    x, y, t = full.x[keep], full.y[keep], full.tasks[keep]
    mu, sd = x.mean(), x.std()
    test = make_multitask_toy(60, 1)
    model = MultiTaskRegressor().fit((x - mu) / sd, y, t)
    pred = model.predict((test.x - mu) / sd, test.tasks)
    means = np.array([y[t == k].mean() for k in range(4)])[test.tasks]
    mse = np.mean((pred - test.f) ** 2)
    assert mse < 0.2 * np.mean((means - test.f) ** 2)
    assert 0.0 <= model.best_params_["omega"] <= 1.0 and model.coef_.shape == (len(x), 1)
    assert model.n_features_in_ == 1
    with pytest.raises(TaskError, match="not seen"):
        model.predict(test.x[:2], [0, 9])
    with pytest.raises(ShapeError, match="one entry per input"):
        MultiTaskRegressor().fit(x, y, t[:-1])
    with pytest.raises(NonFiniteError):
        MultiTaskRegressor().fit(np.r_[[[np.inf]], x[1:]], y, t)


def test_vector_field_defaults_on_standardised_inputs_beat_zero_field():
    X = grid_2d(12)
    V, _, _ = vector_field_1(X, 0.4)
    rng = np.random.default_rng(0)
    idx = rng.choice(len(X), 70, replace=False)
    rest = np.setdiff1d(np.arange(len(X)), idx)
    mu, sd = X[idx].mean(0), X[idx].std(0)
    model = VectorFieldRegressor().fit((X[idx] - mu) / sd, V[idx])
    pred = model.predict((X[rest] - mu) / sd)
    assert np.mean((pred - V[rest]) ** 2) < 0.1 * np.mean(V[rest] ** 2)
    curl, div = model.predict_parts((X[rest] - mu) / sd)
    np.testing.assert_allclose(curl + div, pred, atol=1e-10)
    assert 0.0 <= model.gamma_ <= 1.0
    with pytest.raises(ShapeError, match="R\\^p to R\\^p"):
        VectorFieldRegressor().fit(X[idx], np.c_[V[idx], V[idx, :1]])


def test_same_task_part_is_blocks_or_dense_mask_with_equal_products():
    """Balanced tasks use per-task blocks, very unequal ones the dense mask; both give Q_ω C."""
    import jax.numpy as jnp

    from jaxmtl.models.multitask import _operator, _same_task

    rng = np.random.default_rng(0)
    for tasks in (np.repeat(np.arange(4), 5), np.r_[np.zeros(40, int), np.arange(1, 9)]):
        n = len(tasks)
        K = rng.normal(size=(n, n))
        C = rng.normal(size=(n, 1))
        same = _same_task(tasks, tasks)
        assert (same[2] is None) == (len(np.unique(np.bincount(tasks))) == 1)
        ref = (0.3 * K + 0.7 * K * (tasks[:, None] == tasks[None, :])) @ C
        np.testing.assert_allclose(_operator(jnp.asarray(K), 0.3, *same).mv(jnp.asarray(C)), ref, atol=1e-12)
