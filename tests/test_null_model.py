"""t = 0 / λ = ∞ on the path: selection can choose "no model" (predict the training mean)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from jaxmtl import VectorValuedRegressor
from jaxmtl.datasets import load_mulan
from jaxmtl.models._null_model import keep_null, null_losses
from jaxmtl.paths.eigen import mse_loss
from jaxmtl.selection import kfold_masks
from jaxmtl.selection.criteria import fold_indices


def test_null_fold_losses_equal_an_explicit_loop():
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(20, 2)) + 3.0
    mean = Y.mean(axis=0)
    masks = kfold_masks(20, 4)
    _, held, _, vh = fold_indices(masks)  # as the grid's scoring program receives them
    got = null_losses(Y - mean, mean, held, vh, mse_loss)
    want = [np.mean((Y[~m] - mean) ** 2) for m in masks]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    every_row = null_losses(Y - mean, mean, np.arange(20)[None], np.ones((1, 20), bool), mse_loss)  # LOO / GCV
    np.testing.assert_allclose(every_row, [np.mean((Y - mean) ** 2)], rtol=1e-5)


def test_the_paired_one_standard_error_rule():
    null = np.array([1.0, 1.2, 0.8, 1.1, 0.9])
    assert keep_null(null, null - 0.01 * np.array([1, -1, 1, -1, 1]), 0.998)  # lead far below its noise
    assert not keep_null(null, null - 0.3, 0.7)  # a lead of 0.3 on every fold
    assert keep_null(np.array([1.0]), None, 1.0) and not keep_null(np.array([1.0]), None, 0.99)


@pytest.fixture(scope="module")
def sf1():
    d = load_mulan("sf1")
    X = (d.X - d.X.mean(axis=0)) / np.where(d.X.std(axis=0) > 0, d.X.std(axis=0), 1.0)
    return X[:200], d.Y[:200]


def test_no_signal_selects_the_training_mean(sf1):
    """sf1's inputs with its targets shuffled: no model can beat the mean, and selection keeps it."""
    X, Y = sf1
    Y = Y[np.random.default_rng(0).permutation(len(Y))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = VectorValuedRegressor(family="common_similarity", random_state=0).fit(X, Y)
    assert model.best_params_["param"] == 0
    np.testing.assert_allclose(model.predict(X[:7]), np.tile(Y.mean(axis=0), (7, 1)), rtol=1e-5, atol=1e-5)
    assert model.best_score_ == pytest.approx(model.null_score_)
    masks = model._masks(len(Y))
    Z = (Y - Y.mean(axis=0)) / Y.std(axis=0)  # normalize_y: losses in units of each output's variance
    explicit = np.mean([np.mean(Z[~m] ** 2) for m in masks])
    assert model.null_score_ == pytest.approx(explicit, rel=1e-4)


def test_signal_keeps_the_path(sf1):
    X, _ = sf1
    Y = np.c_[np.sin(X[:, 0]), X[:, 1] - X[:, 2]] + 0.1 * np.random.default_rng(1).normal(size=(len(X), 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = VectorValuedRegressor(family="common_similarity", random_state=0).fit(X, Y)
    assert model.best_params_["param"] > 0
    assert model.best_score_ < 0.5 * model.null_score_


def test_no_signal_per_output_family_keeps_every_training_mean(sf1):
    """The per-output family applies the rule to each output (paired over the parts of its held-out
    rows): on shuffled targets every output keeps its mean, t = 0 / λ = ∞ of the default filter."""
    X, Y = sf1
    Y = Y[np.random.default_rng(0).permutation(len(Y))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = VectorValuedRegressor(family="independent", random_state=0).fit(X, Y)
    np.testing.assert_array_equal(model.output_params_, np.full(Y.shape[1], 0 if model.filter_.iterative else np.inf))
    assert np.all(np.asarray(model.coef_) == 0)
    np.testing.assert_allclose(model.predict(X[:7]), np.tile(Y.mean(axis=0), (7, 1)), rtol=1e-5, atol=1e-5)
