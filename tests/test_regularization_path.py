"""regularization_path: one convention for every route and criterion, checked against dense references."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmtl import GCV, Holdout, KFold, LeaveOneOut, regularization_path
from jaxmtl.errors import ParameterError, ShapeError
from jaxmtl.filters import NuMethod, Tikhonov
from jaxmtl.kernels import Gaussian, outputs
from jaxmtl.operators import SeparableOperator
from jaxmtl.selection import kfold_masks

X64 = bool(jax.config.read("jax_enable_x64"))
RTOL = 1e-8 if X64 else 2e-3


def _data(n=24, m=8, d=2):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n + m, 2))
    Y = np.c_[np.sin(X[:, 0]), np.sin(X[:, 0]) + 0.5 * X[:, 1]][:, :d] + 0.1 * rng.normal(size=(n + m, d))
    return X[:n], Y[:n], X[n:], Y[n:]


def _dense_tikhonov(K, A, Y, lam):
    """C with (K ⊗ A + nλI) vec C = vec Y (row-major vec), by one dense nd × nd solve."""
    n, d = Y.shape
    G = np.kron(np.asarray(K, np.float64), np.asarray(A, np.float64))
    return np.linalg.solve(G + n * lam * np.eye(n * d), np.asarray(Y, np.float64).reshape(-1)).reshape(n, d)


LAMS = np.logspace(-4, 0, 5)


def test_holdout_losses_and_selected_coefficients_equal_dense_solves():
    X_tr, Y_tr, X_val, Y_val = _data()
    kern = Gaussian(1.0)
    K, K_val = np.asarray(kern(X_tr, X_tr)), np.asarray(kern(X_val, X_tr))
    A = np.array([[1.0, 0.4], [0.4, 1.0]])
    sel = regularization_path(K, Y_tr, A, Tikhonov(), LAMS, Holdout(K_val, Y_val))
    dense = [np.mean((K_val @ _dense_tikhonov(K, A, Y_tr, lam) @ A - Y_val) ** 2) for lam in LAMS]
    np.testing.assert_allclose(sel.losses, dense, rtol=RTOL * 10)
    best = int(np.argmin(dense))
    assert int(sel.best) == best and float(sel.best_param) == pytest.approx(LAMS[best])
    assert bool(sel.on_edge) == (best in (0, len(LAMS) - 1))
    np.testing.assert_allclose(sel.coefficients(), _dense_tikhonov(K, A, Y_tr, LAMS[best]), rtol=RTOL * 100,
                               atol=RTOL * 10)


def test_kfold_is_the_mean_of_explicit_refits_per_fold():
    X_tr, Y_tr, _, _ = _data()
    K = np.asarray(Gaussian(1.0)(X_tr, X_tr))
    A = np.eye(2)
    masks = kfold_masks(len(Y_tr), 3)
    sel = regularization_path(K, Y_tr, A, Tikhonov(), LAMS, KFold(masks))
    for f, m in enumerate(masks):
        for p, lam in enumerate(LAMS):
            C = _dense_tikhonov(K[m][:, m], A, Y_tr[m], lam)
            loss = np.mean((K[~m][:, m] @ C @ A - Y_tr[~m]) ** 2)
            assert float(sel.fold_losses[f, p]) == pytest.approx(loss, rel=RTOL * 100)
    np.testing.assert_allclose(sel.losses, np.mean(np.asarray(sel.fold_losses), axis=0), rtol=1e-6)


def test_leave_one_out_equals_explicit_loop():
    X_tr, Y_tr, _, _ = _data(n=12)
    K = np.asarray(Gaussian(1.0)(X_tr, X_tr))
    A = np.array([[1.0, 0.3], [0.3, 1.0]])
    sel = regularization_path(K, Y_tr, A, Tikhonov(), LAMS[:3], LeaveOneOut())
    n = len(Y_tr)
    for p, lam in enumerate(LAMS[:3]):
        errs = []
        for i in range(n):
            keep = np.arange(n) != i
            # the closed form drops row i and keeps the normaliser n (the hat matrix of the full fit)
            C = np.linalg.solve(np.kron(K[keep][:, keep], A) + n * lam * np.eye((n - 1) * 2),
                                Y_tr[keep].reshape(-1)).reshape(n - 1, 2)
            errs.append(np.sum((K[i, keep] @ C @ A - Y_tr[i]) ** 2) / 2)
        assert float(sel.losses[p]) == pytest.approx(np.mean(errs), rel=RTOL * 1000)


def test_gcv_and_none_shapes_and_the_family_axis():
    X_tr, Y_tr, X_val, Y_val = _data()
    kern = Gaussian(1.0)
    K = kern(X_tr, X_tr)
    fam = outputs.common_similarity_eigh(2, jnp.linspace(0.0, 1.0, 4))
    sel = regularization_path(K, Y_tr, fam, NuMethod(), jnp.arange(1, 31), Holdout(kern(X_val, X_tr), Y_val))
    assert sel.losses.shape == (4, 30)
    o, t = np.unravel_index(int(np.argmin(sel.losses)), (4, 30))
    assert int(sel.best_output) == o and int(sel.best_param) == t + 1
    gcv = regularization_path(K, Y_tr, fam, Tikhonov(), LAMS, GCV())
    assert gcv.losses.shape == (4, 5) and np.all(np.isfinite(gcv.losses))
    none = regularization_path(K, Y_tr, np.eye(2), Tikhonov(), LAMS)
    assert np.all(np.isnan(none.losses)) and int(none.best) == len(LAMS) - 1


def test_matrix_free_route_equals_the_eigen_route_at_the_same_step_size():
    X_tr, Y_tr, X_val, Y_val = _data()
    kern = Gaussian(1.0)
    K, K_val = kern(X_tr, X_tr), kern(X_val, X_tr)
    A = outputs.common_similarity(2, 0.5)
    steps = jnp.arange(1, 41)
    mf = regularization_path(SeparableOperator(K, A), Y_tr, None, NuMethod(), steps,
                             Holdout(SeparableOperator(K_val, A), Y_val))
    eig = regularization_path(K, Y_tr, A, NuMethod(), steps, Holdout(K_val, Y_val), tau=mf.tau)
    np.testing.assert_allclose(mf.losses, eig.losses, rtol=RTOL * 1000, atol=1e-6 if X64 else 1e-4)
    assert int(mf.best_param) == int(eig.best_param)
    np.testing.assert_allclose(mf.coefficients(), eig.coefficients(), rtol=RTOL * 1000, atol=1e-6 if X64 else 1e-3)


def test_a_sweep_under_one_jit_reports_the_grid_edge_and_differentiates():
    """Widths × ω × steps under one jit (vmap over widths); the edge flag says a grid is too short."""
    X_tr, Y_tr, X_val, Y_val = _data()
    fam = outputs.common_similarity_eigh(2, jnp.linspace(0.0, 1.0, 3))

    def sweep(log_width, n_steps_grid):
        kern = Gaussian(jnp.exp(log_width))
        sel = regularization_path(kern(X_tr, X_tr), Y_tr, fam, NuMethod(), n_steps_grid,
                                  Holdout(kern(X_val, X_tr), Y_val))
        return jnp.min(sel.losses), sel.on_edge

    short = jax.jit(jax.vmap(lambda w: sweep(w, jnp.arange(1, 3))))(jnp.linspace(-1.0, 1.0, 3))
    assert bool(jnp.all(short[1]))  # two steps: the best step is always on the edge
    grad = jax.grad(lambda w: sweep(w, jnp.arange(1, 21))[0])(0.0)
    assert np.isfinite(float(grad))


def test_edge_warning_on_the_host():
    from jaxmtl.errors import GridEdgeWarning

    X_tr, Y_tr, X_val, Y_val = _data()
    kern = Gaussian(1.0)
    sel = regularization_path(kern(X_tr, X_tr), Y_tr, np.eye(2), NuMethod(), jnp.arange(1, 3),
                              Holdout(kern(X_val, X_tr), Y_val))
    with pytest.warns(GridEdgeWarning, match="edge of its grid"):
        sel.warn_if_on_edge("steps")


def test_bad_arguments_are_named_before_tracing():
    X_tr, Y_tr, X_val, Y_val = _data()
    K = Gaussian(1.0)(X_tr, X_tr)
    with pytest.raises(ShapeError, match="outputs must be a \\(2, 2\\)"):
        regularization_path(K, Y_tr, np.eye(3), Tikhonov(), LAMS)
    with pytest.raises(ShapeError, match="gram must be"):
        regularization_path(K[:5, :5], Y_tr, np.eye(2), Tikhonov(), LAMS)
    with pytest.raises(ParameterError, match="criterion must be"):
        regularization_path(K, Y_tr, np.eye(2), Tikhonov(), LAMS, "loo")
    with pytest.raises(ParameterError, match="iterative filter"):
        regularization_path(SeparableOperator(K, jnp.eye(2)), Y_tr, None, Tikhonov(), LAMS)
    with pytest.raises(ParameterError, match="KFold"):
        jax.jit(lambda m: KFold(m).masks)(jnp.asarray(kfold_masks(len(Y_tr), 3)))
