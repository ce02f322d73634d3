"""Kernels against explicit loops and scikit-learn; blocking, gradients, batching, bad input."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from jaxmtl.errors import ParameterError, ShapeError
from jaxmtl.kernels import Gaussian, Laplacian, Linear, Matern, Polynomial, SobolevSpline, knn_width, median_heuristic

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


# --- further checks: scikit-learn equivalents, blocking edge cases, batching, stability -----

import equinox as eqx

from jaxmtl.kernels import Kernel, squared_distances


def test_more_scikit_learn_equivalents():
    pw = pytest.importorskip("sklearn.metrics.pairwise")
    gp = pytest.importorskip("sklearn.gaussian_process.kernels")
    np.testing.assert_allclose(Linear()(X1, X2), pw.linear_kernel(X1, X2), rtol=1e-12)
    np.testing.assert_allclose(Gaussian(0.6)(X1, X2), gp.RBF(0.6)(X1, X2), rtol=1e-10)
    # The Euclidean Laplacian kernel is scikit-learn's Matérn 1/2 (its laplacian_kernel is L1).
    np.testing.assert_allclose(Laplacian(1.7)(X1, X2), gp.Matern(1.7, nu=0.5)(X1, X2), rtol=1e-10)
    np.testing.assert_allclose(squared_distances(X1, X2), pw.euclidean_distances(X1, X2, squared=True),
                               rtol=1e-10, atol=1e-12)


ALL_KERNELS = [c[0] for c in CASES] + [SobolevSpline()]


@pytest.mark.parametrize("kernel", ALL_KERNELS)
@pytest.mark.parametrize("block_size", [1, 3, 7, 40, 100])
def test_blocked_gram_equals_unblocked(kernel, block_size):
    X = np.random.default_rng(1).uniform(size=(40, 1 if isinstance(kernel, SobolevSpline) else 3))
    full = np.asarray(kernel(X, X))
    np.testing.assert_allclose(kernel.gram(X, block_size=block_size), full, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(kernel.gram(X, X[:11], block_size=block_size), full[:, :11],
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(kernel.diag(X), np.diag(full), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kernel", ALL_KERNELS)
def test_gram_is_psd_on_random_data(kernel):
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(60, 1)) if isinstance(kernel, SobolevSpline) else rng.normal(size=(60, 4))
    G = np.asarray(kernel.gram(X))
    np.testing.assert_allclose(G, G.T, atol=1e-12 * np.abs(G).max())
    assert np.linalg.eigvalsh(G).min() > -1e-10 * np.abs(G).max()


def test_sobolev_spline_matches_step_function_form_and_accepts_1d():
    x = np.random.default_rng(3).uniform(size=8)
    s = np.random.default_rng(4).uniform(size=5)
    ref = loop_gram(lambda a, b: (a >= b) * (1 - a) * b + (a < b) * (1 - b) * a, x, s)
    np.testing.assert_allclose(SobolevSpline()(x, s), ref, rtol=1e-12)
    np.testing.assert_allclose(SobolevSpline().diag(x), x * (1 - x), rtol=1e-12)
    with pytest.raises(ShapeError):
        SobolevSpline().gram(X1, block_size=2)
    with pytest.raises(ShapeError):
        SobolevSpline().diag(X1)


def test_feature_mismatch_and_rank_raise_shape_error():
    with pytest.raises(ShapeError, match="features"):
        Gaussian(1.0)(X1, X2[:, :2])
    with pytest.raises(ShapeError):
        Linear()(np.zeros((2, 2, 2)), np.zeros((2, 2)))


@pytest.mark.parametrize("make", [Gaussian, Laplacian, lambda s: Matern(0.5, s), lambda s: Matern(2.5, s)])
def test_gradients_finite_at_duplicates_wrt_width_and_inputs(make):
    X = jnp.asarray(np.r_[X1, X1[:3]])
    g = jax.grad(lambda s: jnp.sum(make(s).gram(X, block_size=5)))(0.9)
    assert np.isfinite(float(g))
    gx = jax.grad(lambda Z: jnp.sum(make(0.9)(Z, Z)))(X)
    assert np.all(np.isfinite(np.asarray(gx)))
    # gradient wrt the width agrees with a central difference
    f = lambda s: float(jnp.sum(make(s)(X, X)))
    assert float(g) == pytest.approx((f(0.9 + 1e-6) - f(0.9 - 1e-6)) / 2e-6, rel=1e-5)


@pytest.mark.parametrize("make", [Gaussian, Laplacian, lambda s: Matern(1.5, s),
                                  lambda s: Polynomial(3, s, 1.0)])
def test_vmap_over_a_batch_of_kernels_and_stacked_widths(make):
    widths = jnp.array([0.5, 1.0, 2.0])
    kernels = jax.vmap(make)(widths)  # one kernel pytree with a batched leaf
    batched = jax.vmap(lambda k: k(X1, X2))(kernels)
    blocked = jax.vmap(lambda k: k.gram(X1, X2, block_size=4))(kernels)
    for j, s in enumerate([0.5, 1.0, 2.0]):
        np.testing.assert_allclose(batched[j], make(s)(X1, X2), rtol=1e-12)
        np.testing.assert_allclose(blocked[j], make(s)(X1, X2), rtol=1e-12)
    if make is Gaussian:
        stacked = Gaussian(np.array([0.5, 1.0, 2.0]))
        np.testing.assert_allclose(jax.vmap(lambda k: k(X1, X2))(stacked), batched, rtol=1e-12)


def test_kernels_are_pytrees_under_jit_and_filter_grad():
    k = Polynomial(2, 0.5, 1.0)
    leaves = jax.tree_util.tree_leaves(k)
    assert len(leaves) == 2  # gamma, coef0; the degree is static
    np.testing.assert_allclose(jax.jit(lambda kk, A: kk(A, A))(k, X1), k(X1, X1), rtol=1e-12)
    np.testing.assert_allclose(jax.jit(lambda s: Gaussian(s)(X1, X2))(0.7), Gaussian(0.7)(X1, X2), rtol=1e-12)
    grads = eqx.filter_grad(lambda kk: jnp.sum(kk(X1, X2)))(Gaussian(0.7))
    assert np.isfinite(float(grads.sigma))
    with pytest.raises(TypeError):
        Kernel()


def test_squared_distances_stable_far_from_origin():
    rng = np.random.default_rng(5)
    A = rng.normal(size=(6, 3))
    B = rng.normal(size=(5, 3))
    ref = ((A[:, None] - B[None]) ** 2).sum(-1)
    got = np.asarray(squared_distances(A + 1e6, B + 1e6))
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
    assert np.all(np.asarray(squared_distances(X1, X1)) >= 0)


@pytest.mark.parametrize(
    "make,match",
    [(lambda: Gaussian(float("inf")), "sigma"), (lambda: Gaussian(np.array([1.0, -1.0])), "sigma"),
     (lambda: Gaussian("wide"), "sigma"), (lambda: Laplacian(np.nan), "sigma"),
     (lambda: Matern(2.0), "nu"), (lambda: Matern("1.5"), "nu"), (lambda: Polynomial(2.0), "degree"),
     (lambda: Polynomial(True), "degree"), (lambda: Polynomial(2, coef0=-1.0), "coef0"),
     (lambda: Gaussian(1.0).gram(X1, block_size=0), "block_size"),
     (lambda: median_heuristic(X1, max_points=1), "max_points"), (lambda: knn_width(X1, 0), "k")],
)
def test_more_bad_arguments(make, match):
    with pytest.raises(ParameterError, match=match):
        make()


def test_width_heuristics_subsampling_and_blocks():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(57, 2)) + 100.0
    idx = np.linspace(0, 56, 20).round().astype(int)
    S = X[idx]
    D = np.sqrt(((S[:, None] - S[None]) ** 2).sum(-1))
    assert median_heuristic(X, max_points=20) == pytest.approx(np.median(D[np.triu_indices(20, 1)]), rel=1e-9)
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    for k in (1, 5, 56):
        ref = np.mean([np.sort(np.delete(D[i], i))[:k].mean() for i in range(57)])
        for b in (1, 10, 1024):
            assert knn_width(X, k, block_size=b) == pytest.approx(ref, rel=1e-9)
    assert median_heuristic(X[:1]) == 1.0


@pytest.mark.parametrize("kernel", [Laplacian(1.3), Matern(0.5, 1.1), Matern(1.5, 1.1)])
def test_coincident_points_give_exactly_one(kernel):
    X = np.r_[X1, X1[:2] * 1.0]
    G = np.asarray(kernel(X, X))
    np.testing.assert_array_equal(np.diag(G), 1.0)
    np.testing.assert_array_equal(G[:2, -2:], G[-2:, -2:])
