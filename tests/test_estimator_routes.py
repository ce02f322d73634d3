"""The estimators' selection on the direct route (a Cholesky factor per grid point) against the
eigen route and a dense nd × nd reference, and the route the cost model gives them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from jaxmtl import MultiClassClassifier, VectorValuedRegressor
from jaxmtl.errors import ParameterError, RouteFallbackWarning
from jaxmtl.filters import IteratedTikhonov, Tikhonov
from jaxmtl.models._grid_routes import grid_route

from conftest import X64  # the run's precision (a module imported earlier may have switched x64 on)

RTOL = 1e-8 if X64 else 3e-3


def _data(n=48, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1]) + 0.5 * np.sin(X[:, 0])] + 0.1 * rng.normal(size=(n, 2))
    return X, Y


def _same_selection(direct, eigen):
    """The same grid point, or (float32) one whose eigen-route loss is within tolerance of the best."""
    sd, se = np.asarray(direct.cv_scores_), np.asarray(eigen.cv_scores_)
    np.testing.assert_allclose(sd, se, rtol=RTOL * 10)
    if X64:
        assert direct.best_params_ == eigen.best_params_
    else:
        assert se.reshape(-1)[np.argmin(sd)] <= se.min() * (1 + RTOL)


@pytest.mark.parametrize("filt", ["tikhonov", IteratedTikhonov(order=2)], ids=["tikhonov", "iterated2"])
@pytest.mark.parametrize("selection", ["kfold", "holdout", "loo", "gcv"])
def test_vector_valued_direct_route_equals_eigen_route(selection, filt):
    X, Y = _data()
    kw = dict(filter=filt, selection=selection, family="common_similarity", width_factors=[0.5, 1.0],
              lambdas=np.logspace(-4, 0, 5), omegas=[0.0, 0.5, 0.9])
    direct = VectorValuedRegressor(route="direct", **kw).fit(X, Y)
    eigen = VectorValuedRegressor(route="eigen", **kw).fit(X, Y)
    assert (direct.route_, eigen.route_) == ("direct", "eigen")
    _same_selection(direct, eigen)
    if direct.best_params_ == eigen.best_params_:  # (float32: coefficients at λ = 1e-4 are ill-conditioned,
        if X64:                                      # the predictions are not)
            np.testing.assert_allclose(direct.coef_, eigen.coef_, rtol=RTOL * 100, atol=RTOL * 10)
        np.testing.assert_allclose(direct.predict(X), eigen.predict(X), rtol=RTOL * 100, atol=RTOL * 10)


@pytest.mark.parametrize("order", [1, 3])
def test_the_direct_refit_is_the_dense_kron_solve(order):
    """coef_ on the direct route = (K ⊗ A + nλI)⁻¹ … (iterated ν times) on the centred outputs."""
    X, Y = _data(n=30)
    filt = Tikhonov() if order == 1 else IteratedTikhonov(order=order)
    model = VectorValuedRegressor(route="direct", filter=filt, family="common_similarity", normalize_y=False,
                                  selection="gcv", width_factors=[1.0], lambdas=[1e-3, 1e-2, 1e-1],
                                  omegas=[0.3]).fit(X, Y)
    K = np.asarray(model.kernel_(X, X), np.float64)
    A = np.asarray(model.output_matrix_, np.float64)
    n, d = Y.shape
    nlam = n * model.best_params_["param"]
    M = np.kron(K, A) + nlam * np.eye(n * d)
    y = (Y - Y.mean(axis=0)).reshape(-1)
    c = np.zeros(n * d)
    for _ in range(order):
        c = np.linalg.solve(M, y + nlam * c)
    np.testing.assert_allclose(model.coef_, c.reshape(n, d), rtol=RTOL * 100, atol=RTOL * 10)


def test_classifier_direct_route_equals_eigen_route():
    X, Y = _data(n=60)
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0)
    kw = dict(filter="tikhonov", width_factors=[0.5, 1.0, 2.0], lambdas=np.logspace(-4, 0, 6))
    direct = MultiClassClassifier(route="direct", **kw).fit(X, y)
    eigen = MultiClassClassifier(route="eigen", **kw).fit(X, y)
    assert direct.route_ == "direct"
    _same_selection(direct, eigen)
    np.testing.assert_allclose(direct.cv_errors_, eigen.cv_errors_, atol=1e-12 if X64 else 0.05)
    if direct.best_params_ == eigen.best_params_:
        assert (direct.predict(X) == eigen.predict(X)).mean() >= (1.0 if X64 else 0.95)


def test_auto_takes_the_cheaper_route_and_the_defaults_stay_on_the_eigen_route():
    dt = np.float64 if X64 else np.float32
    one = np.ones((1, 2))
    folds = (np.zeros((5, 1600), np.int32), np.zeros((5, 400), np.int32))
    assert grid_route("auto", Tikhonov(), "gcv", 4000, one, 3, None, dt) == "direct"  # 3 factors < one eigh
    assert grid_route("auto", Tikhonov(), "kfold", 2000, np.ones((11, 2)) * np.linspace(0.1, 1, 11)[:, None], 30,
                      folds, dt) == "eigen"  # 5 folds × 30 λ × 11 distinct values: the shared eigh
    from jaxmtl.filters import NuMethod
    assert grid_route("auto", NuMethod(), "gcv", 4000, one, 3, None, dt) == "eigen"  # no direct form
    X, Y = _data(n=40)
    assert VectorValuedRegressor(family="common_similarity").fit(X, Y).route_ == "eigen"  # the ν-method default
    X, Y = _data(n=200)
    small = VectorValuedRegressor(filter="tikhonov", output="independent", family="common_similarity",
                                  selection="holdout", width_factors=[1.0], lambdas=[1e-2]).fit(X, Y)
    assert small.route_ == "direct"  # one λ, one distinct eigenvalue: one factor against one eigh


def test_a_route_that_cannot_serve_is_refused_by_name():
    X, Y = _data(n=20)
    with pytest.raises(ParameterError, match="route='direct'.*NuMethod"):
        VectorValuedRegressor(route="direct", family="common_similarity").fit(X, Y)
    with pytest.raises(ParameterError, match="route must be 'auto', 'eigen' or 'direct'; received 'qr'"):
        VectorValuedRegressor(route="qr", filter="tikhonov", family="common_similarity").fit(X, Y)


def test_a_failed_factor_falls_back_to_the_eigen_route_with_a_warning():
    """A kernel whose Gram is indefinite (a negative multiple of a Gaussian): no Cholesky factor at
    small λ, so the direct route hands the grid to the eigen route, which clips the spectrum."""
    from jaxmtl.kernels import Gaussian

    class Negative(Gaussian):
        def __call__(self, X1, X2):
            return -super().__call__(X1, X2)

    X, Y = _data(n=24)
    kw = dict(kernel=Negative(1.0), filter="tikhonov", family="common_similarity", selection="gcv",
              lambdas=[1e-4, 1e-3], omegas=[0.0])
    with pytest.warns(RouteFallbackWarning, match="Cholesky"):
        direct = VectorValuedRegressor(route="direct", **kw).fit(X, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eigen = VectorValuedRegressor(route="eigen", **kw).fit(X, Y)
    np.testing.assert_allclose(direct.cv_scores_, eigen.cv_scores_, rtol=RTOL * 10)
    assert np.all(np.isfinite(direct.coef_))
    np.testing.assert_allclose(direct.coef_, eigen.coef_, rtol=RTOL * 100, atol=RTOL * 10)
