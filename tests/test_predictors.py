"""Fitted models as pytrees: predictor() equals predict, and works under jit, vmap and grad."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np

from _reference import gaussian_gram
from test_export_all import term_scale
from jaxmtl import Gaussian, MultiClassClassifier, VectorValuedRegressor


def data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, np.c_[np.sin(X[:, 0]), X[:, 1] ** 2]


def test_predictor_equals_predict_under_jit_and_vmap():
    X, Y = data()
    model = VectorValuedRegressor(n_steps=20).fit(X, Y)
    f = model.predictor()
    # the same sum Σᵢ k(x, xᵢ) cᵢ in other orders: they may differ by its round-off, n·ε × Σᵢ |k(x, xᵢ) cᵢ|
    # (on these noiseless outputs the per-output family selects its smallest λ, 1.4·10⁻⁸: coefficients
    # of 10⁴ of both signs cancel to predictions of order 1, so the round-off is ~10⁻¹², not ~10⁻¹⁶)
    expected = model.predict(X[:7])
    bound = len(X) * np.finfo(np.float64).eps * term_scale(f, X[:7])[:, None]
    for F in (jax.jit(lambda model, x: model(x))(f, X[:7]), jax.vmap(f.__call__)(X[:7])):
        assert np.all(np.abs(np.asarray(F) - expected) <= bound), (np.abs(np.asarray(F) - expected).max(), bound.min())
    clf = MultiClassClassifier(n_steps=20).fit(X, np.where(X[:, 0] > 0, "a", "b"))
    scores = jax.jit(lambda model, x: model(x))(clf.predictor(), X[:5])
    np.testing.assert_allclose(scores[:, 1] - scores[:, 0], clf.decision_function(X[:5]), rtol=1e-10, atol=1e-12)


def test_gradient_with_respect_to_inputs_matches_the_closed_form():
    X, Y = data()
    sigma = 0.8
    model = VectorValuedRegressor(kernel=Gaussian(sigma), n_steps=20, output="independent").fit(X, Y)
    f = model.predictor()
    x = jnp.array([0.3, -0.2])
    grad = jax.grad(lambda z: f(z)[0])(x)
    # d/dx Σᵢ exp(−|x − xᵢ|²/2σ²) (C A)ᵢ₀ = Σᵢ −(x − xᵢ)/σ² k(x, xᵢ) (C A)ᵢ₀  (first output)
    k = gaussian_gram(np.asarray(x)[None], X, sigma)[0]
    C = (np.asarray(model.coef_) @ np.asarray(model.output_matrix_))[:, 0]
    expected = (-(np.asarray(x) - X) / sigma**2 * (k * C)[:, None]).sum(0)
    np.testing.assert_allclose(grad, expected, rtol=1e-10, atol=1e-12)


def test_predictor_before_fit_names_the_problem_and_an_approximate_fit_gives_its_feature_map():
    import pytest

    from jaxmtl import ApproximateKernelRegressor
    from jaxmtl.errors import NotFittedError
    from jaxmtl.models.predictor_kinds import FeaturePredictor

    for model in (VectorValuedRegressor(), ApproximateKernelRegressor()):
        with pytest.raises(NotFittedError):
            model.predictor()
    X, Y = data()
    model = ApproximateKernelRegressor(n_components=20, filter="tikhonov").fit(X, Y)
    f = model.predictor()
    assert isinstance(f, FeaturePredictor)
    # φ(x) C A + b by explicit NumPy products on the fitted map's own features
    Phi = np.asarray(model.feature_map_(jax.numpy.asarray(X[:5] - np.asarray(f.input_offset), f.dtype)), np.float64)
    expected = Phi @ np.asarray(model.coef_, np.float64) @ np.asarray(model.output_matrix_, np.float64) + model.y_mean_
    np.testing.assert_allclose(f(X[:5]), expected, rtol=1e-5, atol=1e-5)
