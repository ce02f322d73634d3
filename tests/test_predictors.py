"""Fitted models as pytrees: predictor() equals predict, and works under jit, vmap and grad."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np

from _reference import gaussian_gram
from jaxmtl import Gaussian, MultiClassClassifier, VectorValuedRegressor


def data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, np.c_[np.sin(X[:, 0]), X[:, 1] ** 2]


def test_predictor_equals_predict_under_jit_and_vmap():
    X, Y = data()
    model = VectorValuedRegressor(n_steps=20).fit(X, Y)
    f = model.predictor()
    np.testing.assert_allclose(jax.jit(lambda model, x: model(x))(f, X[:7]), model.predict(X[:7]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jax.vmap(f.__call__)(X[:7]), model.predict(X[:7]), rtol=1e-12, atol=1e-12)
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
