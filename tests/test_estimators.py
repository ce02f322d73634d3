"""Estimators: conventions, defaults that work, bad input (selection against brute force:
tests/test_selection_bruteforce.py)."""

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
import pytest

from jaxmtl import Gaussian, MultiClassClassifier, Tikhonov, VectorValuedRegressor
from jaxmtl.errors import LabelError, NonFiniteError, NotFittedError, OutputMatrixError, ParameterError, ShapeError


def regression_data(n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    Y = np.c_[np.sin(X[:, 0]) + X[:, 1], np.sin(X[:, 0]) - X[:, 1]] + 0.1 * rng.normal(size=(n, 2))
    return X, Y


def blobs(n_per=30, seed=0):
    rng = np.random.default_rng(seed)
    centers = np.array([[0, 0], [3, 0], [0, 3]])
    X = np.concatenate([c + rng.normal(size=(n_per, 2)) for c in centers])
    labels = np.repeat(np.array(["cat", "dog", "eel"]), n_per)
    return X, labels


def test_defaults_work_out_of_the_box():
    X, Y = regression_data(120)
    Xt, Yt = regression_data(200, seed=1)
    model = VectorValuedRegressor().fit(X, Y)
    assert model.score(Xt, Yt) > 0.85
    W = len(model.kernel_widths_)                    # the default grid and its refinement
    assert model.cv_scores_.shape == (W, 11, len(model.path_params_)) and W >= 6
    assert set(model.best_params_) >= {"kernel_width", "omega", "param"}
    assert model.predict(Xt).shape == (200, 2)
    y1 = VectorValuedRegressor().fit(X, Y[:, 0]).predict(Xt)
    assert y1.shape == (200,)


def test_tikhonov_estimator_matches_sklearn_kernel_ridge():
    kr = pytest.importorskip("sklearn.kernel_ridge")
    X, Y = regression_data(50)
    lam = 1e-2
    model = VectorValuedRegressor(kernel=Gaussian(1.5), output="independent", filter=Tikhonov(),
                                  lambdas=[lam], fit_intercept=False, selection="loo").fit(X, Y)
    ref = kr.KernelRidge(alpha=50 * lam, kernel="rbf", gamma=1 / (2 * 1.5**2)).fit(X, Y)
    Xt, _ = regression_data(10, seed=2)
    np.testing.assert_allclose(model.predict(Xt), ref.predict(Xt), rtol=1e-7, atol=1e-9)


def test_normalize_y_fits_standardised_outputs_and_predicts_in_their_units():
    """normalize_y: the fit of Y / s (s the outputs' std) with the scales folded back, against
    a NumPy refit at the selected point; an output in large units no longer decides ω."""
    X, Y = regression_data(60)
    Y = Y * np.array([1000.0, 0.01])
    Xt, _ = regression_data(9, seed=2)
    kw = {"kernel": Gaussian(1.5), "filter": Tikhonov(), "lambdas": np.geomspace(1e-4, 1e-1, 6), "n_folds": 3}
    scaled = VectorValuedRegressor(**kw).fit(X, Y)
    s = Y.std(0)
    ref = VectorValuedRegressor(normalize_y=False, **kw).fit(X, Y / s)
    assert scaled.best_params_ == ref.best_params_
    np.testing.assert_allclose(scaled.cv_scores_, ref.cv_scores_, rtol=1e-6)
    np.testing.assert_allclose(scaled.y_scale_, s, rtol=1e-12)
    # explicit refit: C = (Γ + nλI)⁻¹ vec((Y − ȳ)/s), predictions (K_t C A) s + ȳ
    om, lam = scaled.best_params_["omega"], scaled.best_params_["param"]
    A = (1 - om) * np.eye(2) + om * np.full((2, 2), 0.5)
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / (2 * 1.5**2))
    Kt = np.exp(-((Xt[:, None] - X[None]) ** 2).sum(-1) / (2 * 1.5**2))
    C = np.linalg.solve(np.kron(K, A) + 60 * lam * np.eye(120), ((Y - Y.mean(0)) / s).ravel()).reshape(60, 2)
    np.testing.assert_allclose(scaled.predict(Xt), (Kt @ C @ A) * s + Y.mean(0), rtol=1e-6)
    np.testing.assert_allclose(scaled.output_matrix_, A * np.outer(s, s), rtol=1e-10, atol=1e-9)
    raw = VectorValuedRegressor(normalize_y=False, **kw).fit(X, Y)
    np.testing.assert_allclose(raw.y_scale_, 1.0)
    with pytest.raises(ParameterError, match="normalize_y"):
        VectorValuedRegressor(normalize_y="yes").fit(X, Y)


# Selection against brute-force refits (k-fold, LOO, GCV, hold-out; Tikhonov and the ν-method):
# tests/test_selection_bruteforce.py.


def test_get_set_params_and_not_fitted():
    model = VectorValuedRegressor(n_folds=3)
    assert model.get_params()["n_folds"] == 3
    assert model.set_params(n_folds=4).n_folds == 4
    with pytest.raises(ParameterError, match="no parameter"):
        model.set_params(bogus=1)
    with pytest.raises(NotFittedError, match="fit"):
        model.predict(np.zeros((2, 3)))


def test_classifier_with_string_labels_and_both_codings():
    X, labels = blobs()
    Xt, lt = blobs(seed=1)
    for coding in ("one_vs_all", "simplex"):
        clf = MultiClassClassifier(coding=coding, n_steps=60).fit(X, labels)
        assert list(clf.classes_) == ["cat", "dog", "eel"]
        assert clf.score(Xt, lt) > 0.9
        assert clf.decision_function(Xt).shape == (90, 3)


def test_classifier_is_argmax_of_regression_on_codes():
    """Coding (30) then the argmax rule (31): same as regressing the codes by hand."""
    X, labels = blobs(15)
    settings = dict(kernel=Gaussian(1.0), output="independent", filter=Tikhonov(), lambdas=[1e-2],
                    selection="loo")
    clf = MultiClassClassifier(coding="simplex", **settings).fit(X, labels)
    codes = np.where(labels[:, None] == clf.classes_[None, :], 1.0, -0.5)
    reg = VectorValuedRegressor(**settings).fit(X, codes)
    np.testing.assert_allclose(clf.decision_function(X), reg.predict(X), rtol=1e-10)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(reg.predict(X), axis=1)])


@pytest.mark.parametrize(
    "kwargs,X,Y,err,match",
    [
        ({}, np.zeros((10, 2)), np.zeros((9, 1)), ShapeError, "rows"),
        ({}, np.full((10, 2), np.nan), np.zeros((10, 1)), NonFiniteError, "X"),
        ({}, np.zeros((10, 2)), np.r_[np.inf, np.zeros(9)], NonFiniteError, "y holds"),
        ({"output": np.array([[1.0, 2.0], [0.0, 1.0]])}, np.eye(10)[:, :2], np.zeros((10, 2)),
         OutputMatrixError, "symmetric"),
        ({"output": np.array([[1.0, 2.0], [2.0, 1.0]])}, np.eye(10)[:, :2], np.zeros((10, 2)),
         OutputMatrixError, "positive semidefinite"),
        ({"omegas": [0.5, 1.5]}, np.eye(10)[:, :2], np.zeros((10, 2)), ParameterError, "omegas"),
        ({"lambdas": [1.0, -1.0], "filter": "tikhonov"}, np.eye(10)[:, :2], np.zeros((10, 2)),
         ParameterError, "lambdas"),
        ({"lambdas": [], "filter": "tikhonov"}, np.eye(10)[:, :2], np.zeros((10, 2)),
         ShapeError, "lambdas"),
        ({"width_factors": [0.0]}, np.eye(10)[:, :2], np.zeros((10, 2)), ParameterError, "width"),
        ({"n_steps": 0}, np.eye(10)[:, :2], np.zeros((10, 2)), ParameterError, "n_steps"),
        ({"selection": "aic"}, np.eye(10)[:, :2], np.zeros((10, 2)), ParameterError, "selection"),
        ({"n_folds": 20}, np.eye(10)[:, :2], np.zeros((10, 2)), ParameterError, "n_folds"),
        ({"filter": "lasso"}, np.eye(10)[:, :2], np.zeros((10, 2)), ParameterError, "filter"),
        ({}, np.zeros((0, 2)), np.zeros((0, 1)), ShapeError, "empty"),
        ({}, np.array([["a", "b"]] * 10), np.zeros((10, 1)), TypeError, "real numbers"),
    ],
)
def test_bad_input_raises_clear_errors(kwargs, X, Y, err, match):
    with pytest.raises(err, match=match):
        VectorValuedRegressor(**kwargs).fit(X, Y)


def test_kernel_width_must_be_positive():
    with pytest.raises(ParameterError, match="sigma"):
        VectorValuedRegressor(kernel=Gaussian(-1.0)).fit(np.eye(5), np.zeros(5))


def test_classifier_bad_labels():
    X = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(LabelError, match="single class"):
        MultiClassClassifier().fit(X, ["a"] * 10)
    with pytest.raises(ShapeError, match="one label per input"):
        MultiClassClassifier().fit(X, ["a", "b"] * 4)
    with pytest.raises(ParameterError, match="coding"):
        MultiClassClassifier(coding=(0.0, 1.0)).fit(X, ["a", "b"] * 5)


def test_prediction_feature_mismatch():
    X, Y = regression_data(30)
    model = VectorValuedRegressor(n_steps=10, omegas=[0.0]).fit(X, Y)
    with pytest.raises(ShapeError, match="features"):
        model.predict(np.zeros((3, 5)))
