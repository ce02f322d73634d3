"""The direct route (a Cholesky factor per grid point) against dense nd × nd references, and the
route choice of regularization_path: auto, forced, refused, and the float32 fallback."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmtl import GCV, Holdout, KFold, LeaveOneOut, regularization_path
from jaxmtl.errors import ParameterError, RouteFallbackWarning
from jaxmtl.filters import IteratedTikhonov, NuMethod, Tikhonov
from jaxmtl.kernels import Gaussian
from jaxmtl.operators import SeparableOperator
from jaxmtl.paths.direct import output_groups
from jaxmtl.paths.routes import TABLE, Problem, choose_route, route_costs
from jaxmtl.selection import kfold_masks

X64 = bool(jax.config.read("jax_enable_x64"))
RTOL = 1e-8 if X64 else 3e-3
LAMS = np.logspace(-3, 0, 4)


def _data(n=20, m=7, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + m, 2))
    Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1]), X[:, 0] * X[:, 1]][:, :d] + 0.1 * rng.normal(size=(n + m, d))
    kern = Gaussian(1.0)
    K, K_val = np.asarray(kern(X[:n], X[:n]), np.float64), np.asarray(kern(X[n:], X[:n]), np.float64)
    B = rng.normal(size=(d, d))
    return K, K_val, Y[:n], Y[n:], B @ B.T / d + 0.5 * np.eye(d)


def _dense_fit(K, A, Y, lam, order, n_pen=None):
    """(C, hat matrix H) of iterated Tikhonov on the nd × nd system (K ⊗ A + nλI), row-major vec."""
    n, d = Y.shape
    nlam = (n if n_pen is None else n_pen) * lam
    G = np.kron(K, A)
    Minv = np.linalg.inv(G + nlam * np.eye(n * d))
    c = np.zeros(n * d)
    for _ in range(order):
        c = Minv @ (Y.reshape(-1) + nlam * c)
    H = np.eye(n * d) - np.linalg.matrix_power(nlam * Minv, order)
    return c.reshape(n, d), H


def _dense_loss(crit, K, K_val, Y, Y_val, A, lam, order, masks=None):
    n, d = Y.shape
    if crit == "holdout":
        C, _ = _dense_fit(K, A, Y, lam, order)
        return np.mean((K_val @ C @ A - Y_val) ** 2)
    if crit == "kfold":
        losses = []
        for m in masks:
            C, _ = _dense_fit(K[m][:, m], A, Y[m], lam, order)
            losses.append(np.mean((K[~m][:, m] @ C @ A - Y[~m]) ** 2))
        return np.mean(losses)
    _, H = _dense_fit(K, A, Y, lam, order)
    R = Y.reshape(-1) - H @ Y.reshape(-1)
    if crit == "gcv":
        return np.sum(R**2) / (n * d) / (1 - np.trace(H) / (n * d)) ** 2
    E = np.stack([np.linalg.solve(np.eye(d) - H[i * d:(i + 1) * d, i * d:(i + 1) * d], R[i * d:(i + 1) * d])
                  for i in range(n)])  # leave-one-input-out residuals of the linear smoother
    return np.mean(E**2)


def _criterion(crit, K_val, Y_val, masks):
    return {"holdout": lambda: Holdout(K_val, Y_val), "kfold": lambda: KFold(masks), "loo": LeaveOneOut,
            "gcv": GCV}[crit]()


@pytest.mark.parametrize("filt", [Tikhonov(), IteratedTikhonov(order=3)], ids=["tikhonov", "iterated3"])
@pytest.mark.parametrize("crit", ["holdout", "kfold", "loo", "gcv"])
def test_direct_route_equals_dense_kron_solves(crit, filt):
    K, K_val, Y, Y_val, A = _data()
    order = getattr(filt, "order", 1)
    masks = kfold_masks(len(Y), 3)
    sel = regularization_path(K, Y, A, filt, LAMS, _criterion(crit, K_val, Y_val, masks), route="direct")
    assert sel.eig is None
    dense = [_dense_loss(crit, K, K_val, Y, Y_val, A, lam, order, masks) for lam in LAMS]
    np.testing.assert_allclose(sel.losses, dense, rtol=RTOL * 10)
    best = int(np.argmin(dense))
    assert int(sel.best) == best
    C, _ = _dense_fit(K, A, Y, LAMS[best], order)
    np.testing.assert_allclose(sel.coefficients(), C, rtol=RTOL * 100, atol=RTOL * 10)


def test_a_family_of_output_matrices_shares_the_factors_of_repeated_eigenvalues():
    K, K_val, Y, Y_val, _ = _data(d=3)
    V = np.linalg.qr(np.random.default_rng(1).normal(size=(3, 3)))[0]
    a = np.array([[1.0, 1.0, 1.0], [0.4, 0.4, 2.2], [0.7, 0.7, 1.6]])
    values, index = output_groups(jnp.asarray(a))
    assert values.shape == (5,) and np.allclose(np.asarray(values)[np.asarray(index)], a)
    sel = regularization_path(K, Y, (a, V), Tikhonov(), LAMS, Holdout(K_val, Y_val), route="direct")
    ref = regularization_path(K, Y, (a, V), Tikhonov(), LAMS, Holdout(K_val, Y_val), route="eigen")
    dense = [[_dense_loss("holdout", K, K_val, Y, Y_val, (V * aw) @ V.T, lam, 1) for lam in LAMS] for aw in a]
    np.testing.assert_allclose(sel.losses, dense, rtol=RTOL * 10)
    np.testing.assert_allclose(sel.losses, ref.losses, rtol=RTOL * 10)
    assert int(sel.best) == int(ref.best) and int(sel.best_output) == int(ref.best_output)
    np.testing.assert_allclose(sel.coefficients(), ref.coefficients(), rtol=RTOL * 100, atol=RTOL * 10)


def test_the_direct_route_runs_under_jit():
    K, K_val, Y, Y_val, A = _data()
    path = jax.jit(lambda K, Y: regularization_path(K, Y, A, Tikhonov(), LAMS, LeaveOneOut(), route="direct").losses)
    ref = regularization_path(K, Y, A, Tikhonov(), LAMS, LeaveOneOut(), route="eigen").losses
    np.testing.assert_allclose(path(K, Y), ref, rtol=RTOL * 10)


def test_a_failed_factor_falls_back_to_the_eigen_route_with_a_warning():
    K, K_val, Y, Y_val, A = _data()
    K_bad = K - 2.0 * np.eye(len(K))  # indefinite: a_j K + nλI has no Cholesky factor at small λ
    with pytest.warns(RouteFallbackWarning, match="Cholesky"):
        sel = regularization_path(K_bad, Y, A, Tikhonov(), LAMS, Holdout(K_val, Y_val), route="direct")
    ref = regularization_path(K_bad, Y, A, Tikhonov(), LAMS, Holdout(K_val, Y_val), route="eigen")
    assert np.all(np.isfinite(sel.losses)) and np.all(np.isfinite(sel.coefficients()))
    np.testing.assert_allclose(sel.losses, ref.losses, rtol=RTOL * 10)
    with warnings.catch_warnings():  # under jit: the same numbers (lax.cond), never a NaN
        warnings.simplefilter("ignore", RouteFallbackWarning)
        traced = jax.jit(lambda K: regularization_path(K, Y, A, Tikhonov(), LAMS, Holdout(K_val, Y_val),
                                                       route="direct").losses)(K_bad)
        jax.effects_barrier()
    np.testing.assert_allclose(traced, ref.losses, rtol=RTOL * 10)


def test_forced_routes_that_cannot_serve_are_refused_by_name():
    K, K_val, Y, Y_val, A = _data()
    with pytest.raises(ParameterError, match="route='direct'.*NuMethod"):
        regularization_path(K, Y, A, NuMethod(), jnp.arange(1, 6), Holdout(K_val, Y_val), route="direct")
    with pytest.raises(ParameterError, match="route='matrix_free'.*iterative filter.*Tikhonov"):
        regularization_path(K, Y, A, Tikhonov(), LAMS, Holdout(K_val, Y_val), route="matrix_free")
    with pytest.raises(ParameterError, match="route='matrix_free'.*Holdout or no criterion.*LeaveOneOut"):
        regularization_path(K, Y, A, NuMethod(), jnp.arange(1, 6), LeaveOneOut(), route="matrix_free")
    with pytest.raises(ParameterError, match="route='eigen' needs the \\(n, n\\) Gram"):
        regularization_path(SeparableOperator(K, A), Y, None, NuMethod(), jnp.arange(1, 6), route="eigen")
    with pytest.raises(ParameterError, match="route must be 'auto' or one of"):
        regularization_path(K, Y, A, Tikhonov(), LAMS, route="cholesky")


def test_a_forced_matrix_free_route_on_a_dense_gram_is_the_eigen_path_at_the_same_step():
    K, K_val, Y, Y_val, A = _data()
    tau = 0.5 / (np.linalg.eigvalsh(K)[-1] * np.linalg.eigvalsh(A)[-1] / len(K))
    steps = jnp.arange(1, 9)
    mf = regularization_path(K, Y, A, NuMethod(), steps, Holdout(K_val, Y_val), tau=tau, route="matrix_free")
    ref = regularization_path(K, Y, A, NuMethod(), steps, Holdout(K_val, Y_val), tau=tau, route="eigen")
    np.testing.assert_allclose(mf.losses, ref.losses, rtol=RTOL * 100)
    np.testing.assert_allclose(mf.coefficients(), ref.coefficients(), rtol=RTOL * 100, atol=RTOL * 10)


def test_auto_prices_the_whole_grid():
    """Few points: the factors are cheaper than one eigh; many points, folds and ω: the shared eigh wins."""
    for dtype in ("float32", "float64"):
        c = TABLE["cpu"][dtype]
        small = Problem(n=4000, d=2, points=1, criterion="holdout", m=1000, distinct=1)
        big = Problem(n=4000, d=2, points=60, criterion="kfold", m=800, folds=5, n_train=3200, omegas=6, distinct=12)
        assert route_costs(small, "direct", c) < route_costs(small, "eigen", c)
        assert route_costs(big, "eigen", c) < route_costs(big, "direct", c)
        more = Problem(n=4000, d=2, points=20, criterion="holdout", m=1000, distinct=1)
        assert route_costs(more, "direct", c) > route_costs(small, "direct", c)
        assert choose_route(small, dtype, device=jax.devices("cpu")[0]) == "direct"
        assert choose_route(big, dtype, device=jax.devices("cpu")[0]) == "eigen"


def test_auto_gives_the_eigen_routes_answer():
    K, K_val, Y, Y_val, A = _data()
    for params in (LAMS[:1], LAMS):
        auto = regularization_path(K, Y, A, Tikhonov(), params, GCV())
        ref = regularization_path(K, Y, A, Tikhonov(), params, GCV(), route="eigen")
        np.testing.assert_allclose(auto.losses, ref.losses, rtol=RTOL * 10)
        np.testing.assert_allclose(auto.coefficients(), ref.coefficients(), rtol=RTOL * 100, atol=RTOL * 10)


@pytest.mark.long  # compiles vmap(grad) of both routes: a minute on the shared 2-core machine
def test_the_direct_route_vmaps_and_differentiates_like_the_eigen_route():
    rng = np.random.default_rng(3)
    X, Xv = rng.normal(size=(16, 2)), rng.normal(size=(6, 2))
    Y, Yv = np.sin(X), np.sin(Xv)
    A = np.array([[1.0, 0.3], [0.3, 1.0]])

    def loss(log_width, route):
        kern = Gaussian(jnp.exp(log_width))
        sel = regularization_path(kern(X, X), Y, A, Tikhonov(), LAMS, Holdout(kern(Xv, X), Yv), route=route)
        return jnp.min(sel.losses)

    widths = jnp.linspace(-0.5, 0.5, 3)
    for fn in (jax.vmap, lambda f: jax.vmap(jax.grad(f))):
        direct = fn(lambda w: loss(w, "direct"))(widths)
        eigen = fn(lambda w: loss(w, "eigen"))(widths)
        np.testing.assert_allclose(direct, eigen, rtol=RTOL * 100, atol=RTOL)
