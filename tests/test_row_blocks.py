"""Predictions in fixed-size row blocks (jaxmtl.models._row_blocks): the blocked evaluation equals
one call on all rows, a row's prediction is bit for bit the same whatever batch it comes in (in
float32, where XLA's products of different batch shapes round differently), and predicting batches
of any size compiles no new program."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _estimators import fit_data, make, tasks_of

from jaxmtl.kernels.scalar import Gaussian
from jaxmtl.models._row_blocks import BLOCK_ROWS, in_row_blocks

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"  # one event per XLA compilation


@jax.jit
def _affine(X, W, b):
    return X @ W + b, jnp.sum(X, axis=1)


@pytest.mark.parametrize("m", [0, 1, 5, 8, 9, 20])
def test_blocks_equal_one_call_with_padding_stripped(m):
    rng = np.random.default_rng(m)
    X, W, b = rng.normal(size=(m, 3)), rng.normal(size=(3, 2)), rng.normal(size=2)
    codes = rng.integers(0, 4, size=m)
    F, s = in_row_blocks(lambda B, c: _affine(B, W, b + c[:, None]), X, codes, block_rows=8)
    assert F.shape == (m, 2) and s.shape == (m,) and isinstance(F, np.ndarray)
    np.testing.assert_allclose(F, X @ W + b + codes[:, None], rtol=1e-6, atol=1e-6)  # the explicit formula
    np.testing.assert_allclose(s, X.sum(axis=1), rtol=1e-6, atol=1e-6)


def _fitted(name, **params):
    return _fit_once(name, tuple(sorted(params.items())))


@functools.cache
def _fit_once(name, params):
    """``name`` fitted in float32 on 40 rows (each setting once per session; predicting leaves it unchanged)."""
    fit_args, _ = fit_data(name, n=40)
    return make(name, dtype="float32", **dict(params)).fit(*fit_args)


def _predict(model, name, X):
    if name in ("MultiTaskRegressor", "MixedEffectRegressor"):
        return model.predict(X, tasks_of(X))
    if name.endswith("Classifier"):
        return model.decision_function(X)
    return model.predict(X)


# The families scikit-learn's check_estimator does not see (it runs every estimator's FAST setting,
# in float32 in the float32 run, with -m slow), and the default of the first example.
CASES = [("VectorValuedRegressor", {"family": "common_similarity"}),
         ("VectorValuedRegressor", {"family": "independent"}), ("MultiTaskRegressor", {"family": "independent"}), ("VectorFieldRegressor", {"kind": "div_curl"}),
         ("MixedEffectRegressor", {}), ("ApproximateKernelRegressor", {"approximation": "random_features"})]


@pytest.mark.parametrize("name,params", CASES, ids=[f"{n}-{p}" if p else n for n, p in CASES])
def test_float32_row_predictions_do_not_depend_on_the_batch(name, params):
    model = _fitted(name, **params)
    X = np.random.default_rng(1).uniform(-2, 2, size=(BLOCK_ROWS + 44, 2))
    full = _predict(model, name, X)
    perm = np.random.default_rng(2).permutation(len(X))
    np.testing.assert_array_equal(_predict(model, name, X[perm]), full[perm])
    for rows in (slice(0, 1), slice(7, 10), slice(250, 290)):
        np.testing.assert_array_equal(_predict(model, name, X[rows]), full[rows])


def test_blocked_predictions_match_the_dense_formula():
    # coupled family: K(X − s, X_fit) C A + mean; independent family: a Gaussian width per output
    # (s: the host-side centring of the inputs, X_fit stored centred)
    X0 = np.random.default_rng(3).uniform(-2, 2, size=(BLOCK_ROWS + 3, 2))
    for family in ("common_similarity", "independent"):
        model = _fitted("VectorValuedRegressor", family=family)
        Xf, C = np.asarray(model.X_fit_, np.float64), np.asarray(model.coef_, np.float64)
        shift = getattr(model, "_input_offset_", None)
        X = X0 if shift is None else X0 - np.asarray(shift, np.float64)
        if family == "independent":
            G = np.stack([np.asarray(Gaussian(float(w))(X, Xf), np.float64) @ C[:, j]
                          for j, w in enumerate(model.output_widths_)], axis=1)
        else:
            G = np.asarray(model.kernel_(X, Xf), np.float64) @ C
        dense = G @ np.asarray(model.output_matrix_, np.float64) + model.y_mean_
        np.testing.assert_allclose(model.predict(X0), dense, rtol=2e-5, atol=2e-5 * np.abs(dense).max())


def test_multitask_independent_predictions_match_each_tasks_own_model():
    model = _fitted("MultiTaskRegressor", family="independent")
    X = np.random.default_rng(4).uniform(-2, 2, size=(30, 2))
    t = tasks_of(X)
    shift = getattr(model, "_input_offset_", None)
    Xs = X if shift is None else X - np.asarray(shift, np.float64)  # X_fit is stored centred
    Xt, Ct = np.asarray(model.X_fit_, np.float64), np.asarray(model.coef_, np.float64)
    expected = [float(np.asarray(Gaussian(float(model.task_widths_[k]))(x[None], Xt[k]), np.float64)[0] @ Ct[k])
                + model.task_means_[k] + model.y_mean_ for x, k in zip(Xs, t)]
    np.testing.assert_allclose(model.predict(X, t), expected, rtol=1e-4, atol=1e-4)  # float32 fit and predict


def test_predicting_batches_of_any_size_compiles_no_new_program():
    model = _fitted("VectorValuedRegressor", family="common_similarity")
    X = np.random.default_rng(5).uniform(-2, 2, size=(600, 2))
    model.predict(X[:2])  # the block program, compiled once for this model
    compiled = []

    def listener(event, duration, **kwargs):
        if event == BACKEND_COMPILE:
            compiled.append(event)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        for m in (1, 3, 17, BLOCK_ROWS, BLOCK_ROWS + 1, 600):
            model.predict(X[:m])
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert compiled == []
