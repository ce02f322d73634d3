"""Model selection on the path against brute-force refits."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from _reference import dense_filter_coefficients, gaussian_gram, problem
from jaxmtl.filters import Landweber, NuMethod, Tikhonov, TruncatedSVD
from jaxmtl.operators import separable_eigh
from jaxmtl.errors import ParameterError, ShapeError
from jaxmtl.selection import gcv_path, holdout_path, kfold_masks, kfold_path, loo_path
from jaxmtl.selection.criteria import fold_indices, fold_rows, fold_sizes


def test_closed_form_loo_equals_brute_force_for_tikhonov():
    _, K, A, Y = problem(n=20)
    n, d = Y.shape
    lams = np.array([1e-1, 1e-2, 1e-3])
    loo = np.asarray(loo_path(separable_eigh(K, A), jnp.asarray(Y), Tikhonov(), jnp.asarray(lams)))
    for k, lam in enumerate(lams):
        errs = []
        for i in range(n):
            idx = np.r_[0:i, i + 1:n]
            G = np.kron(K[np.ix_(idx, idx)], A) + n * lam * np.eye((n - 1) * d)
            C = np.linalg.solve(G, Y[idx].reshape(-1)).reshape(n - 1, d)
            errs.append(((K[i, idx] @ C @ A - Y[i]) ** 2).mean())
        assert loo[k] == pytest.approx(np.mean(errs), rel=1e-8)


@pytest.mark.parametrize("filt,params", [(Tikhonov(), [1e-1, 1e-3]), (TruncatedSVD(), [1e-2, 1e-1])])
def test_gcv_and_hat_loo_equal_dense_hat_matrix(filt, params):
    """For every filter, GCV and the hat-matrix LOO equal formulas on the explicit nd×nd hat."""
    _, K, A, Y = problem(n=15)
    n, d = Y.shape
    eig = separable_eigh(K, A)
    gcv = np.asarray(gcv_path(eig, jnp.asarray(Y), filt, jnp.asarray(params)))
    loo = np.asarray(loo_path(eig, jnp.asarray(Y), filt, jnp.asarray(params)))
    w, W = np.linalg.eigh(np.kron(K, A) / n)
    w = np.maximum(w, 0)
    for k, lam in enumerate(params):
        H = W @ np.diag(w * np.asarray(filt(jnp.asarray(w), lam))) @ W.T
        r = Y.reshape(-1) - H @ Y.reshape(-1)
        assert gcv[k] == pytest.approx((r @ r / (n * d)) / (1 - np.trace(H) / (n * d)) ** 2, rel=1e-8)
        E = [np.linalg.solve(np.eye(d) - H[i * d:(i + 1) * d, i * d:(i + 1) * d], r[i * d:(i + 1) * d])
             for i in range(n)]
        assert loo[k] == pytest.approx(np.mean(np.square(E)), rel=1e-7)


@pytest.mark.parametrize("filt,params", [(NuMethod(), np.arange(1, 16)), (Tikhonov(), np.geomspace(1e-4, 1, 5))])
def test_kfold_path_equals_refits_on_each_fold(filt, params):
    X, K, A, Y = problem(n=24)
    masks = kfold_masks(24, 4, seed=1)
    a, V = np.linalg.eigh(A)
    got = np.asarray(kfold_path(jnp.asarray(K), jnp.asarray(Y), jnp.asarray(a), jnp.asarray(V), filt,
                                jnp.asarray(params), jnp.asarray(masks)))
    assert got.shape == (4, len(params))
    for f, m in enumerate(masks):
        tr, va = np.where(m)[0], np.where(~m)[0]
        Kt = K[np.ix_(tr, tr)]
        tau = 1.0 / np.linalg.eigvalsh(np.kron(Kt, A) / len(tr)).max()
        for k, p in enumerate(params):
            C = dense_filter_coefficients(Kt, A, Y[tr], lambda w: np.asarray(filt(jnp.asarray(w), p, tau)))
            ref = ((K[np.ix_(va, tr)] @ C @ A - Y[va]) ** 2).mean()
            assert got[f, k] == pytest.approx(ref, rel=1e-7)
    # hold-out is the same computation on an explicit split
    tr, va = np.where(masks[0])[0], np.where(~masks[0])[0]
    hold = holdout_path(jnp.asarray(K[np.ix_(tr, tr)]), jnp.asarray(K[np.ix_(va, tr)]), jnp.asarray(Y[tr]),
                        jnp.asarray(Y[va]), jnp.asarray(a), jnp.asarray(V), filt, jnp.asarray(params))
    np.testing.assert_allclose(np.asarray(hold), got[0], rtol=1e-7)


def test_fold_indices_equal_traced_fold_rows_and_give_the_same_kfold_losses():
    """Unequal folds (23 rows, 5 folds): the NumPy row indices equal the traced ones, and
    kfold_path on them equals kfold_path on the masks."""
    X, K, A, Y = problem(n=23)
    masks = kfold_masks(23, 5, seed=3)
    a, V = np.linalg.eigh(A)
    rows = fold_indices(masks)
    traced = jax.vmap(lambda m: fold_rows(m, fold_sizes(masks), jnp.float64))(jnp.asarray(masks))
    for got, ref in zip(rows, traced):
        np.testing.assert_array_equal(got, np.asarray(ref))
    args = (jnp.asarray(K), jnp.asarray(Y), jnp.asarray(a), jnp.asarray(V), NuMethod(), jnp.arange(1, 12))
    np.testing.assert_allclose(np.asarray(kfold_path(*args, rows)), np.asarray(kfold_path(*args, jnp.asarray(masks))),
                               rtol=1e-12)
    with pytest.raises(ShapeError, match=r"boolean of shape \(k, n\)"):
        fold_indices(masks[0])
    with pytest.raises(ParameterError, match="training .* and held-out"):
        fold_indices(np.ones((2, 5), bool))


def test_kfold_masks_partition():
    m = kfold_masks(23, 5, seed=3)
    assert m.shape == (5, 23)
    assert np.all((~m).sum(axis=0) == 1)  # each sample held out exactly once


def test_repeated_kfold_masks_stack_independent_partitions():
    m = kfold_masks(23, 5, seed=3, n_repeats=3)
    assert m.shape == (15, 23)
    parts = m.reshape(3, 5, 23)
    assert np.all((~parts).sum(axis=1) == 1)  # each partition holds every sample out exactly once
    np.testing.assert_array_equal(parts[0], kfold_masks(23, 5, seed=3))  # the first is the unrepeated one
    assert not np.array_equal(parts[1], parts[0]) and not np.array_equal(parts[2], parts[1])
    with pytest.raises(ParameterError, match="n_repeats"):
        kfold_masks(23, 5, n_repeats=0)


def test_nu_method_reaches_landweber_best_in_far_fewer_steps():
    """Acceleration ([BRBV11] §3.3): the ν-method's t ≈ √(Landweber's t)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(120, 1))
    Xv = rng.uniform(-1, 1, size=(200, 1))
    f = lambda x: np.sin(4 * x[:, :1])
    Y = f(X) + 0.1 * rng.normal(size=(120, 1))
    K, Kv = gaussian_gram(X, X, 0.3), gaussian_gram(Xv, X, 0.3)
    eig = separable_eigh(K, np.eye(1))
    T = 3000
    errs = {}
    for filt in (Landweber(), NuMethod()):
        errs[filt.name] = np.asarray(
            jax.jit(lambda e, y, kv, yv: __import__("jaxmtl").paths.spectral_path(
                e, y, filt, jnp.arange(1, T + 1), K_eval=kv, Y_eval=yv, output="loss"))(
                eig, jnp.asarray(Y), jnp.asarray(Kv), jnp.asarray(f(Xv))))
    t_land = int(np.argmin(errs["landweber"])) + 1
    best = errs["landweber"].min()
    t_nu = int(np.argmax(errs["nu_method"] <= best * 1.001)) + 1
    assert errs["nu_method"].min() <= best * 1.001
    assert t_nu <= 3 * np.sqrt(t_land) and t_nu * 5 < t_land
