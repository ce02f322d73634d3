"""Nyström, random features, blocked exact Grams, feature-space paths, Falkon and the approximate estimator,
against dense NumPy / scikit-learn references."""

from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.gaussian_process.kernels import Matern as SkMatern
from sklearn.kernel_ridge import KernelRidge

from conftest import FLOAT32_PROMISE
from jaxmtl.errors import NotFittedError, ParameterError, ShapeError
from jaxmtl.filters import NuMethod, Tikhonov
from jaxmtl.kernels import Gaussian, Laplacian, Matern, Polynomial
from jaxmtl.models.approximate import ApproximateKernelRegressor
from jaxmtl.operators import SeparableOperator, separable_eigh
from jaxmtl.operators.blocked import (
    BlockedCrossOperator,
    BlockedKernelOperator,
    blocked_kernel_matmul,
)
from jaxmtl.operators.nystrom import (
    FeatureOperator,
    NystromFeatures,
    feature_statistics,
    nystrom_centres,
    ridge_leverage_scores,
)
from jaxmtl.operators.random_features import RandomFourierFeatures
from jaxmtl.paths import iterative_path, spectral_path
from jaxmtl.paths.preconditioned import (
    falkon_path,
    feature_coefficients,
    feature_kfold_losses,
)

ROOT = Path(__file__).resolve().parent.parent
RNG = np.random.default_rng(0)
X = RNG.normal(size=(60, 3))
Y = np.c_[np.sin(X[:, 0]) + 0.1 * RNG.normal(size=60), np.cos(X[:, 1]), X[:, 2] ** 2 / 3]
A = np.array([[1.0, 0.4, 0.1], [0.4, 1.0, 0.2], [0.1, 0.2, 1.0]])


def gauss(X1, X2, s):
    d2 = ((X1[:, None, :] - X2[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * s * s))


# ----------------------------------------------------------------------------- Nyström
def test_nystrom_with_all_centres_is_exact():
    fm = NystromFeatures.fit(Gaussian(1.5), X, X.shape[0])
    np.testing.assert_allclose(np.asarray(fm.gram(X)), gauss(X, X, 1.5), atol=1e-10)
    Xe = RNG.normal(size=(7, 3))  # cross-Gram too: K_em K_mm⁺ K_mn = K_en when the centres are all rows
    np.testing.assert_allclose(np.asarray(fm.gram(Xe, X)), gauss(Xe, X, 1.5), atol=1e-10)


def test_nystrom_subset_is_the_nystrom_formula():
    idx = nystrom_centres(Gaussian(1.0), X, 15, random_state=3)
    fm = NystromFeatures.from_centres(Gaussian(1.0), X[idx])
    Knm = gauss(X, X[idx], 1.0)
    ref = Knm @ np.linalg.pinv(gauss(X[idx], X[idx], 1.0), rcond=1e-13, hermitian=True) @ Knm.T
    np.testing.assert_allclose(np.asarray(fm.gram(X)), ref, atol=1e-9)
    assert len(np.unique(idx)) == 15 and np.all(np.diff(idx) > 0)


def test_ridge_leverage_scores_exact_with_all_rows():
    lam, n = 1e-2, X.shape[0]
    K = gauss(X, X, 1.0)
    ref = np.diag(K @ np.linalg.inv(K + n * lam * np.eye(n)))
    np.testing.assert_allclose(ridge_leverage_scores(Gaussian(1.0), X, lam, block_size=7), ref, atol=1e-12)


def test_leverage_sampling_prefers_isolated_points():
    # 200 points in a tight cluster, 10 isolated: leverage scores single out the isolated ones.
    rng = np.random.default_rng(1)
    Xc = np.r_[0.01 * rng.normal(size=(200, 2)), 10 * np.eye(2)[None, 0] * np.arange(1, 11)[:, None]]
    counts = [np.sum(nystrom_centres(Gaussian(1.0), Xc, 15, "leverage", 1e-3, random_state=s) >= 200)
              for s in range(5)]
    uniform = [np.sum(nystrom_centres(Gaussian(1.0), Xc, 15, random_state=s) >= 200) for s in range(5)]
    assert np.mean(counts) >= 8 > np.mean(uniform) + 3


def test_nystrom_bad_inputs():
    with pytest.raises(ShapeError, match="n_components=61"):
        nystrom_centres(Gaussian(1.0), X, 61)
    with pytest.raises(ParameterError, match="sampling"):
        nystrom_centres(Gaussian(1.0), X, 5, sampling="greedy")
    with pytest.raises(ParameterError, match="ridge"):
        ridge_leverage_scores(Gaussian(1.0), X, -1.0)


# ----------------------------------------------------------------------------- random features
@pytest.mark.parametrize("kernel,ref", [
    (Gaussian(1.3), lambda a, b: gauss(a, b, 1.3)),
    (Laplacian(2.0), lambda a, b: np.exp(-np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1)) / 2.0)),
    (Matern(1.5, 1.7), lambda a, b: SkMatern(length_scale=1.7, nu=1.5)(a, b)),
    (Matern(2.5, 1.2), lambda a, b: SkMatern(length_scale=1.2, nu=2.5)(a, b)),
])
def test_random_features_converge_to_the_kernel(kernel, ref):
    Xs = X[:25]
    K = ref(Xs, Xs)
    errs = []
    for D in (100, 1000, 10000, 100000):
        rff = RandomFourierFeatures.fit(kernel, 3, 2 * D, random_state=7)
        errs.append(np.sqrt(np.mean((np.asarray(rff.gram(Xs)) - K) ** 2)))
    errs = np.array(errs)
    # Monte-Carlo error: RMS ≈ c/√D (c ≤ 1 since |cos| ≤ 1): check the rate and the level.
    assert np.all(errs[1:] < errs[:-1])
    assert errs[-1] < 0.01 and errs[-1] < 0.3 * errs[1]
    assert errs[-1] * np.sqrt(100000) < 1.5


def test_random_features_bad_inputs():
    with pytest.raises(ParameterError, match="even"):
        RandomFourierFeatures.fit(Gaussian(1.0), 3, 11)
    with pytest.raises(ParameterError, match="Polynomial"):
        RandomFourierFeatures.fit(Polynomial(2), 3, 10)
    with pytest.raises(ParameterError, match="single kernel sigma"):
        RandomFourierFeatures.fit(Gaussian(jnp.array([1.0, 2.0])), 3, 10)


# ----------------------------------------------------------------------------- operators and paths
def test_feature_operator_products_and_thin_eigen_path():
    fm = NystromFeatures.fit(Gaussian(1.0), X, 12, random_state=0)
    Phi = fm(X)
    op = FeatureOperator(Phi, jnp.asarray(A))
    Kt = np.asarray(Phi @ Phi.T)
    C = RNG.normal(size=(60, 3))
    np.testing.assert_allclose(np.asarray(op.mv(jnp.asarray(C))), Kt @ C @ A, atol=1e-12)
    Xe = RNG.normal(size=(9, 3))
    K_eval = fm(Xe) @ Phi.T
    for filt, params in ((Tikhonov(), jnp.array([1e-1, 1e-3])), (NuMethod(), jnp.arange(1, 21))):
        thin = spectral_path(op.eigh(), jnp.asarray(Y), filt, params, K_eval=K_eval)
        full = spectral_path(separable_eigh(jnp.asarray(Kt), jnp.asarray(A)), jnp.asarray(Y), filt, params,
                             K_eval=K_eval)
        np.testing.assert_allclose(np.asarray(thin), np.asarray(full), atol=1e-8)


def test_feature_statistics_match_dense_sums():
    fm = NystromFeatures.fit(Gaussian(1.0), X, 10)
    groups = np.arange(60) % 4
    st = feature_statistics(fm, X, Y, groups, 4, block_size=7)
    R = np.asarray(fm(X))
    for g in range(4):
        r = groups == g
        np.testing.assert_allclose(st.G[g], R[r].T @ R[r], atol=1e-11)
        np.testing.assert_allclose(st.B[g], R[r].T @ Y[r], atol=1e-11)
        np.testing.assert_allclose(st.S[g], Y[r].T @ Y[r], atol=1e-11)
        assert st.counts[g] == r.sum()


def test_feature_kfold_losses_against_explicit_tikhonov_loop():
    fm = NystromFeatures.fit(Gaussian(1.2), X, 20, random_state=2)
    Phi = np.asarray(fm(X))
    Kt = Phi @ Phi.T
    groups = np.arange(60) % 3
    st = feature_statistics(fm, X, Y, groups, 3)
    a, V = np.linalg.eigh(A)
    lams = np.array([1e-1, 1e-2, 1e-4])
    got = np.asarray(feature_kfold_losses(st, jnp.asarray(a[None]), jnp.asarray(V), Tikhonov(), jnp.asarray(lams)))
    for g in range(3):
        tr, te = groups != g, groups == g
        ntr = tr.sum()
        G = np.kron(Kt[np.ix_(tr, tr)], A)
        for p, lam in enumerate(lams):
            c = np.linalg.solve(G + ntr * lam * np.eye(G.shape[0]), Y[tr].reshape(-1)).reshape(ntr, 3)
            F = Kt[np.ix_(te, tr)] @ c @ A
            np.testing.assert_allclose(got[g, 0, p], np.mean((F - Y[te]) ** 2), rtol=1e-7)
    # refit on all rows = the dense Tikhonov solution, expressed on the centres
    coef = feature_coefficients(st, jnp.asarray(a), jnp.asarray(V), Tikhonov(), 1e-2)
    c = np.linalg.solve(np.kron(Kt, A) + 60 * 1e-2 * np.eye(180), Y.reshape(-1)).reshape(60, 3)
    np.testing.assert_allclose(np.asarray(fm(X) @ coef @ A), Kt @ c @ A, atol=1e-8)


def test_blocked_exact_equals_stored_exact():
    k = Gaussian(1.1)
    K = gauss(X, X, 1.1)
    op = BlockedKernelOperator(k, X, A, block_size=7)
    ref = SeparableOperator(jnp.asarray(K), jnp.asarray(A))
    C = RNG.normal(size=(60, 3))
    np.testing.assert_allclose(np.asarray(op.mv(jnp.asarray(C))), K @ C @ A, atol=1e-12)
    Xe = RNG.normal(size=(11, 3))
    ev = BlockedCrossOperator(k, Xe, X, A, block_size=4)
    np.testing.assert_allclose(np.asarray(ev.mv(jnp.asarray(C))), gauss(Xe, X, 1.1) @ C @ A, atol=1e-12)
    mask = jnp.asarray(np.arange(60) % 5 != 0)
    r1 = iterative_path(op, Y, "nu_method", 40, eval_op=op, Y_eval=Y, mask=mask)
    r2 = iterative_path(ref, Y, "nu_method", 40, eval_op=ref, Y_eval=Y, mask=mask)
    np.testing.assert_allclose(np.asarray(r1.coef), np.asarray(r2.coef), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(r1.losses), np.asarray(r2.losses), rtol=1e-10)
    with pytest.raises(ParameterError, match="block_size"):
        BlockedKernelOperator(k, X, A, block_size=0)
    with pytest.raises(ShapeError, match="square"):
        BlockedKernelOperator(k, X, np.ones((2, 3)))
    np.testing.assert_allclose(np.asarray(blocked_kernel_matmul(k, X, X, C, 100)), K @ C, atol=1e-12)


# ----------------------------------------------------------------------------- Falkon
def test_falkon_matches_direct_solve_and_steps_do_not_grow_with_conditioning():
    rng = np.random.default_rng(4)
    Xf = rng.uniform(-1, 1, size=(400, 2))
    Yf = np.c_[np.sin(3 * Xf[:, 0]), np.cos(2 * Xf[:, 1])] + 0.05 * rng.normal(size=(400, 2))
    Af = np.array([[1.0, 0.5], [0.5, 1.0]])
    Z = Xf[nystrom_centres(Gaussian(0.6), Xf, 100, random_state=0)]
    lams = np.array([1e-2, 1e-3, 1e-4])
    res = falkon_path(Gaussian(0.6), Z, Xf, Yf, Af, lams, 40, block_size=64)
    plain = falkon_path(Gaussian(0.6), Z, Xf, Yf, Af, lams, 40, block_size=64, preconditioned=False)
    Knm, Kmm = gauss(Xf, Z, 0.6), gauss(Z, Z, 0.6)
    a, V = np.linalg.eigh(Af)
    w, U = np.linalg.eigh(Kmm)
    Ur = U[:, w > 1e-8 * w.max()]  # K_mm is numerically singular: condition numbers on its range
    conds = []
    for p, lam in enumerate(lams):
        H = [a[j] * Knm.T @ Knm + 400 * lam * Kmm for j in range(2)]
        conds.append(max(np.linalg.cond(Ur.T @ h @ Ur) for h in H))
        Ct = np.column_stack([np.linalg.solve(H[j], Knm.T @ (Yf @ V)[:, j]) for j in range(2)])
        F_ref = Knm @ Ct @ V.T @ Af
        np.testing.assert_allclose(Knm @ np.asarray(res.coef[p]) @ Af, F_ref, atol=1e-5 * np.abs(F_ref).max())
    steps_to = lambda r: int(np.argmax(r < 1e-8)) + 1 if np.any(r < 1e-8) else 10**6
    pre = [steps_to(np.asarray(res.residuals[p]).max(0)) for p in range(3)]
    base = [steps_to(np.asarray(plain.residuals[p]).max(0)) for p in range(3)]
    assert conds[-1] > 50 * conds[0]  # the system's condition number grows 50×+ along the path …
    assert max(pre) <= 25 and max(pre) < 2.5 * min(pre)  # … the preconditioned steps barely move
    assert min(base) > 40  # plain CG on the same systems is not there after 40 steps


def _cholesky_preconditioned_cg(Knm, Kmm, Y, A, lams, steps):
    """[RCR17] Alg. 1 as written, one column at a time in NumPy float64: B = T⁻¹R⁻ᵀ/√n with
    K_mm + m·eps·I = L Lᵀ (T = Lᵀ) and R Rᵀ = a_j·TTᵀ/m + λ I (a Cholesky factor per λ and
    output direction), plain CG on Bᵀ H B from 0; returns (P, m, d) coefficients."""
    n, m = Knm.shape
    a, V = np.linalg.eigh(A)
    L = np.linalg.cholesky(Kmm + m * np.finfo(np.float64).eps * np.eye(m))
    Yr = Y @ V
    coef = np.zeros((len(lams), m, len(a)))
    for p, lam in enumerate(lams):
        for j, aj in enumerate(a):
            R = np.linalg.cholesky(aj * L.T @ L / m + lam * np.eye(m))
            B = np.linalg.solve(L.T, np.linalg.inv(R.T)) / np.sqrt(n)
            M = B.T @ (aj * Knm.T @ Knm + n * lam * Kmm) @ B
            rhs = B.T @ (Knm.T @ Yr[:, j])
            x, r = np.zeros(m), rhs.copy()
            d, rs = r.copy(), r @ r
            for _ in range(steps):
                Md = M @ d
                alpha = rs / (d @ Md)
                x, r = x + alpha * d, r - alpha * Md
                d, rs = r + (r @ r) / rs * d, r @ r
            coef[p, :, j] = B @ x
    return coef @ V.T


@pytest.mark.parametrize("x64", [True, False], ids=["float64", "float32"])
def test_falkon_eigen_root_preconditioner_gives_the_iterates_of_per_column_cholesky_factors(x64):
    """The preconditioner takes T = ΣQᵀ from K_mm + m·eps·I = QΣ²Qᵀ, so that every column's A (the
    root of a·TTᵀ/m + λI) is diagonal; [RCR17] take T = chol(K_mm + m·eps·I) and a Cholesky factor
    of a·TTᵀ/m + λI per column. BBᵀ is the same and CG is invariant under the orthogonal change between
    the two: after a few steps, short of convergence, the coefficients equal the explicit per-column
    loop's (float64 to 1e-10; float32 to its promise). The width keeps K_mm well conditioned (condition
    number about 400), so coefficients, not only predictions, are determined to those digits."""
    rng = np.random.default_rng(7)
    X = rng.uniform(-1, 1, size=(150, 2))
    Y = np.c_[np.sin(3 * X[:, 0]), np.cos(2 * X[:, 1])] + 0.05 * rng.normal(size=(150, 2))
    A = np.array([[1.0, 0.3], [0.3, 0.6]])
    Z, lams, steps = X[:25], np.array([1e-1, 1e-3]), 4
    ref = _cholesky_preconditioned_cg(gauss(X, Z, 0.2), gauss(Z, Z, 0.2), Y, A, lams, steps)
    with jax.enable_x64(x64):
        dt = jnp.float64 if x64 else jnp.float32
        res = falkon_path(Gaussian(0.2), jnp.asarray(Z, dt), jnp.asarray(X, dt), jnp.asarray(Y, dt),
                          jnp.asarray(A, dt), jnp.asarray(lams, dt), steps)
        got = np.asarray(res.coef, np.float64)
    assert got.dtype == np.float64 and np.asarray(res.coef).dtype == dt
    rel = np.abs(got - ref).max() / np.abs(ref).max()
    assert rel < (1e-10 if x64 else FLOAT32_PROMISE["rtol"]), rel
    converged = _cholesky_preconditioned_cg(gauss(X, Z, 0.2), gauss(Z, Z, 0.2), Y, A, lams, 60)
    assert np.abs(ref - converged).max() > 1e-3 * np.abs(converged).max()  # 4 steps: iterates, not the solution


# ----------------------------------------------------------------------------- estimator
def test_approximate_estimator_with_all_centres_equals_kernel_ridge():
    lams = np.geomspace(1e-5, 1e-1, 7)
    model = ApproximateKernelRegressor(Gaussian(1.5), n_components=60, output="independent", filter="tikhonov",
                                       lambdas=lams, n_folds=3, fit_intercept=False,
                                       normalize_y=False).fit(X, Y)
    from jaxmtl.selection import kfold_masks

    masks = kfold_masks(60, 3, 0)
    K = gauss(X, X, 1.5)
    scores = []
    for lam in np.sort(lams)[::-1]:  # the estimators sort λ decreasing
        fold_losses = []
        for m in masks:
            kr = KernelRidge(alpha=m.sum() * lam, kernel="precomputed").fit(K[np.ix_(m, m)], Y[m])
            fold_losses.append(np.mean((kr.predict(K[np.ix_(~m, m)]) - Y[~m]) ** 2))
        scores.append(np.mean(fold_losses))
    np.testing.assert_allclose(model.cv_scores_[0], scores, rtol=1e-6)
    best = np.sort(lams)[::-1][int(np.argmin(scores))]
    assert model.best_params_["param"] == pytest.approx(best)
    kr = KernelRidge(alpha=60 * best, kernel="precomputed").fit(K, Y)
    Xe = RNG.normal(size=(5, 3))
    np.testing.assert_allclose(model.predict(Xe), kr.predict(gauss(Xe, X, 1.5)), atol=1e-6)


@pytest.mark.slow  # two default width searches on 300 rows: ~30 s
def test_approximate_estimator_default_grid_is_close_to_exact():
    rng = np.random.default_rng(5)
    Xtr, Xte = rng.normal(size=(300, 3)), rng.normal(size=(200, 3))
    f = lambda Z: np.c_[np.sin(Z[:, 0]) + Z[:, 1] * Z[:, 2], np.cos(Z[:, 1]) - 0.5 * Z[:, 0]]
    Ytr = f(Xtr) + 0.1 * rng.normal(size=(300, 2))
    rf = ApproximateKernelRegressor(approximation="random_features", n_components=300, filter="tikhonov",
                                    n_folds=3).fit(Xtr, Ytr)  # the default, coarse-to-fine width search
    assert rf.score(Xte, f(Xte)) > 0.9
    assert rf.kernel_widths_.size > 6
    ny = ApproximateKernelRegressor(n_components=100, sampling="leverage", filter="tikhonov", n_folds=3,
                                    width_factors=[0.5, 1.0, 2.0]).fit(Xtr, Ytr)
    assert ny.score(Xte, f(Xte)) > 0.9
    assert ny.predict(Xte[:3]).shape == (3, 2) and ny.coef_.shape == (100, 2)


def test_approximate_estimator_errors():
    with pytest.raises(NotFittedError):
        ApproximateKernelRegressor().predict(X)
    with pytest.raises(ParameterError, match="approximation"):
        ApproximateKernelRegressor(approximation="sketch").fit(X, Y)
    with pytest.raises(ParameterError, match="n_components=61"):
        ApproximateKernelRegressor(n_components=61).fit(X, Y)
    with pytest.raises(ParameterError, match="even"):
        ApproximateKernelRegressor(approximation="random_features", n_components=11).fit(X, Y)
    with pytest.raises(ParameterError, match="Polynomial"):
        ApproximateKernelRegressor(Polynomial(2), approximation="random_features", n_components=10).fit(X, Y)
    with pytest.raises(ParameterError, match="selection"):
        ApproximateKernelRegressor(n_components=10, selection="loo").fit(X, Y)
    with pytest.raises(ParameterError, match="sampling"):
        ApproximateKernelRegressor(n_components=10, sampling="greedy").fit(X, Y)
    overlap = np.ones((2, 60), bool)
    overlap[:, :5] = False
    with pytest.raises(ParameterError, match="at most once"):
        ApproximateKernelRegressor(Gaussian(1.0), n_components=10, selection=overlap).fit(X, Y)



# ----------------------------------------------------------------------------- the exact estimators' option
def _exact_and_nystrom(**kw):
    from jaxmtl import VectorValuedRegressor

    # what the approximate route selects: the coupled family on one k-fold partition
    exact = VectorValuedRegressor(n_folds=3, family="common_similarity", n_repeats=1, **kw).fit(X, Y)
    approx = VectorValuedRegressor(n_folds=3, approximation="nystrom", n_components=60, **kw).fit(X, Y)
    assert not exact.approximate_ and approx.approximate_
    assert approx.best_params_ == exact.best_params_, kw
    iw = 0 if exact.kernel_widths_ is None else list(exact.kernel_widths_).index(exact.best_params_["kernel_width"])
    np.testing.assert_allclose(approx.cv_scores_, exact.cv_scores_[iw], rtol=1e-6)
    Xe = RNG.normal(size=(9, 3))
    np.testing.assert_allclose(approx.predict(Xe), exact.predict(Xe), atol=1e-7)
    assert approx.score(X, Y) == pytest.approx(exact.score(X, Y), abs=1e-9)
    return exact, approx


@pytest.mark.slow  # the default coarse-to-fine width search and a 40-step ν-method path: ~30 s
def test_vector_valued_nystrom_on_all_rows_equals_the_exact_estimator_default_widths():
    _exact_and_nystrom(n_steps=40)


def test_vector_valued_nystrom_on_all_rows_equals_the_exact_estimator():
    _exact_and_nystrom(filter="tikhonov", width_factors=[0.5, 1.0, 2.0])  # a width grid, default λ and ω grids
    exact, approx = _exact_and_nystrom(kernel=Gaussian(1.5), filter="tikhonov")
    Xe = RNG.normal(size=(7, 3))  # the approximate fit's predictor: its feature map, as predict applies it
    np.testing.assert_allclose(np.asarray(approx.predictor()(Xe)), approx.predict(Xe), rtol=1e-9, atol=1e-12)
    exact.set_params(approximation="random_features", n_components=40).fit(X, Y)  # refits switch cleanly
    assert exact.approximate_ and exact.coef_.shape == (40, 3)
    exact.set_params(approximation=None).fit(X, Y)
    assert not exact.approximate_ and exact.coef_.shape == (60, 3)


def test_classifier_nystrom_on_all_rows_equals_the_exact_classifier():
    from jaxmtl import MultiClassClassifier

    labels = np.array(["a", "b", "c"])[np.argmax(Y, axis=1)]
    kw = {"kernel": Gaussian(1.5), "filter": "tikhonov", "lambdas": [1e-2], "omegas": [0.5], "n_folds": 3}
    exact = MultiClassClassifier(**kw).fit(X, labels)
    approx = MultiClassClassifier(approximation="nystrom", n_components=60, **kw).fit(X, labels)
    Xe = RNG.normal(size=(20, 3))
    np.testing.assert_allclose(approx.decision_function(Xe), exact.decision_function(Xe), atol=1e-7)
    np.testing.assert_allclose(approx.predict_proba(Xe), exact.predict_proba(Xe), atol=1e-6)
    assert (approx.predict(Xe) == exact.predict(Xe)).all()
    rf = MultiClassClassifier(Gaussian(1.5), approximation="random_features", n_components=200, filter="tikhonov",
                              n_folds=3).fit(X, labels)
    assert rf.score(X, labels) > 0.7 and set(rf.predict(Xe)) <= set(labels)


def test_approximation_option_with_scikit_learn():
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score

    from jaxmtl import MultiClassClassifier, VectorValuedRegressor

    for cls in (VectorValuedRegressor, MultiClassClassifier):
        model = cls(approximation="nystrom", n_components=20)
        params = clone(model).get_params()
        assert params["approximation"] == "nystrom" and params["n_components"] == 20
        assert cls().get_params()["approximation"] is None and cls().get_params()["n_components"] is None
    scores = cross_val_score(VectorValuedRegressor(approximation="random_features", n_components=60,
                                                   filter="tikhonov", n_folds=2), X, Y[:, 0], cv=2)
    assert np.all(np.isfinite(scores))
    with pytest.raises(ParameterError, match="selection"):
        VectorValuedRegressor(approximation="nystrom", n_components=10, selection="loo").fit(X, Y)
    with pytest.raises(ParameterError, match="n_components"):
        VectorValuedRegressor(approximation="nystrom", n_components=61).fit(X, Y)
    with pytest.raises(ParameterError, match="approximation"):
        MultiClassClassifier(approximation="exact").fit(X, np.arange(60) % 2)
