"""Kernels against explicit loops and scikit-learn; blocking, gradients, batching, bad input."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from jaxmtl.errors import ParameterError, ShapeError
from jaxmtl.kernels import (
    Gaussian,
    Laplacian,
    Linear,
    Matern,
    Polynomial,
    SobolevSpline,
    knn_width,
    median_heuristic,
)

RNG = np.random.default_rng(0)
X1 = RNG.normal(size=(9, 3))
X2 = RNG.normal(size=(7, 3))


def loop_gram(f, A, B):
    return np.array([[f(a, b) for b in B] for a in A])


def matern(r, nu):
    if nu == 0.5:
        return np.exp(-r)
    if nu == 1.5:
        return (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)
    return (1 + np.sqrt(5) * r + 5 * r**2 / 3) * np.exp(-np.sqrt(5) * r)


CASES = [
    (Gaussian(0.7), lambda a, b: np.exp(-np.sum((a - b) ** 2) / (2 * 0.49))),
    (Laplacian(1.3), lambda a, b: np.exp(-np.linalg.norm(a - b) / 1.3)),
    (Linear(), lambda a, b: a @ b),
    (Polynomial(3, 0.5, 2.0), lambda a, b: (0.5 * a @ b + 2.0) ** 3),
    (Matern(0.5, 1.1), lambda a, b: matern(np.linalg.norm(a - b) / 1.1, 0.5)),
    (Matern(1.5, 1.1), lambda a, b: matern(np.linalg.norm(a - b) / 1.1, 1.5)),
    (Matern(2.5, 1.1), lambda a, b: matern(np.linalg.norm(a - b) / 1.1, 2.5)),
]


@pytest.mark.parametrize("kernel,ref", CASES)
def test_cross_gram_equals_loop_and_blocking(kernel, ref):
    expected = loop_gram(ref, X1, X2)
    np.testing.assert_allclose(kernel(jnp.asarray(X1), jnp.asarray(X2)), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(kernel.gram(jnp.asarray(X1), jnp.asarray(X2), block_size=4), expected,
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(kernel.diag(jnp.asarray(X1)), np.diag(loop_gram(ref, X1, X1)), rtol=1e-10)
    G = np.asarray(kernel.gram(jnp.asarray(X1)))
    assert np.linalg.eigvalsh(G).min() > -1e-10 * np.abs(G).max()


def test_against_scikit_learn():
    pw = pytest.importorskip("sklearn.metrics.pairwise")
    gp = pytest.importorskip("sklearn.gaussian_process.kernels")
    np.testing.assert_allclose(Gaussian(2.0)(X1, X2), pw.rbf_kernel(X1, X2, gamma=1 / 8), rtol=1e-10)
    np.testing.assert_allclose(Laplacian(2.0)(X1, X2),
                               np.exp(-np.sqrt(((X1[:, None] - X2[None]) ** 2).sum(-1)) / 2), rtol=1e-10)
    np.testing.assert_allclose(Polynomial(2, 0.3, 1.0)(X1, X2),
                               pw.polynomial_kernel(X1, X2, degree=2, gamma=0.3, coef0=1.0), rtol=1e-10)
    for nu in (0.5, 1.5, 2.5):
        np.testing.assert_allclose(Matern(nu, 0.8)(X1, X2), gp.Matern(0.8, nu=nu)(X1, X2), rtol=1e-8)


def test_sobolev_spline():
    x = np.linspace(0, 1, 6)[:, None]
    expected = loop_gram(lambda a, b: min(a[0], b[0]) * (1 - max(a[0], b[0])), x, x)
    np.testing.assert_allclose(SobolevSpline()(x, x), expected, rtol=1e-12)
    with pytest.raises(ShapeError, match="one input feature"):
        SobolevSpline()(X1, X1)


@pytest.mark.parametrize("make", [Gaussian, Laplacian, lambda s: Matern(1.5, s)])
def test_gradient_finite_at_duplicate_points(make):
    X = jnp.asarray(np.r_[X1, X1[:2]])
    g = jax.grad(lambda s: jnp.sum(make(s)(X, X)))(1.0)
    assert np.isfinite(float(g))


def test_vmap_over_widths_equals_loop():
    widths = jnp.array([0.5, 1.0, 2.0])
    batched = jax.vmap(lambda s: Gaussian(s)(jnp.asarray(X1), jnp.asarray(X2)))(widths)
    for k, s in enumerate([0.5, 1.0, 2.0]):
        np.testing.assert_allclose(batched[k], Gaussian(s)(X1, X2), rtol=1e-12)


@pytest.mark.parametrize(
    "make,match",
    [(lambda: Gaussian(0.0), "sigma"), (lambda: Gaussian(float("nan")), "sigma"),
     (lambda: Laplacian(-1), "sigma"), (lambda: Matern(1.0, 1.0), "nu"),
     (lambda: Matern(1.5, 0.0), "length_scale"), (lambda: Polynomial(0), "degree"),
     (lambda: Polynomial(2, gamma=-1.0), "gamma")],
)
def test_bad_hyperparameters(make, match):
    with pytest.raises(ParameterError, match=match):
        make()


def test_width_heuristics_against_brute_force():
    D = np.sqrt(((X1[:, None] - X1[None]) ** 2).sum(-1))
    assert median_heuristic(X1) == pytest.approx(np.median(D[np.triu_indices(9, 1)]))
    k = 3
    ref = np.mean([np.sort(np.delete(D[i], i))[:k].mean() for i in range(9)])
    assert knn_width(X1, k, block_size=4) == pytest.approx(ref)
    with pytest.raises(ParameterError, match="k"):
        knn_width(X1, 9)
