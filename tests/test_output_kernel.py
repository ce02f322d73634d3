"""Output kernel learning ([DOGP11] Algorithm 1) and its estimators against independent references:
dense NumPy solves of the nd × nd system, scipy.optimize minimisers of objective (3), the
paper's optimality conditions, brute-force k-fold loops."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest
from _reference import gaussian_gram
from scipy.optimize import minimize

import jaxmtl
from jaxmtl.datasets.okl_sims import OKL_SIM_GROUPS, make_okl_sim
from jaxmtl.errors import LabelError, NotFittedError, ParameterError, ShapeError
from jaxmtl.kernels import Gaussian, Linear
from jaxmtl.learning.output_kernel import (
    okl_path,
    output_kernel_learning,
    output_kernel_update,
    sylvester_step,
)
from jaxmtl.models.output_kernel import OutputKernelClassifier, OutputKernelRegressor, output_correlation


# ----------------------------------------------------------------- NumPy references
def Q_np(K, Y, C, L, lam):
    """Objective (3), dense."""
    R = Y - K @ C @ L
    return np.sum(R * R) / (2 * lam) + np.sum((C.T @ K @ C) * L) / 2 + np.sum(L * L) / 2


def C_np(K, Y, L, lam):
    """C from (L ⊗ K + λI) vec C = vec Y (column-major vec), the paper's naive system (§4.1)."""
    n, d = Y.shape
    vecC = np.linalg.solve(np.kron(L.T, K) + lam * np.eye(n * d), Y.reshape(-1, order="F"))
    return vecC.reshape(n, d, order="F")


def reference_minimiser(K, Y, lam, seed=0):
    """argmin over PSD L of f(L) = min_C Q(L, C) by BFGS on L = BBᵀ (scipy), C by the dense solve."""
    d = Y.shape[1]

    def fun(b):
        B = b.reshape(d, d)
        L = B @ B.T
        C = C_np(K, Y, L, lam)
        f = 0.5 * np.sum(Y * C) + 0.5 * np.sum(L * L)
        gL = L - 0.5 * C.T @ K @ C  # ∇f (envelope theorem)
        return f, (2 * gL @ B).ravel()

    b0 = np.random.default_rng(seed).normal(size=d * d) * 0.1 + np.eye(d).ravel()
    out = minimize(fun, b0, jac=True, method="BFGS", options={"gtol": 1e-12, "maxiter": 5000})
    B = out.x.reshape(d, d)
    L = B @ B.T
    return L, C_np(K, Y, L, lam)


def small_problem(n=10, d=3, seed=0, lam=0.3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    K = gaussian_gram(X, X, 1.0)
    Y = np.c_[np.sin(X[:, 0]), np.sin(X[:, 0]) + 0.2 * X[:, 1], X[:, 1]][:, :d] + 0.1 * rng.normal(size=(n, d))
    return X, K, Y, lam


def assert_round_trip(model, path, X, methods=("predict",)):
    """``jaxmtl.save`` then ``jaxmtl.load``: same class, output kernel, λ and identical outputs."""
    jaxmtl.save(model, path)
    loaded = jaxmtl.load(path)
    assert type(loaded) is type(model) and loaded.get_params().keys() == model.get_params().keys()
    np.testing.assert_array_equal(loaded.output_kernel_, model.output_kernel_)
    assert loaded.lambda_ == model.lambda_
    for name in methods:
        a, b = getattr(model, name)(X), getattr(loaded, name)(X)
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------- core: Algorithm 1
def test_objective_is_non_increasing_and_equals_dense_objective():
    _, K, Y, lam = small_problem(seed=1, lam=0.05)
    values, L = [], np.zeros((3, 3))
    for _ in range(8):  # one iteration at a time, warm-started: the iterates of one run
        res = output_kernel_learning(K, Y, lam, max_iter=1, tol=1e-300, L0=L)
        L = np.asarray(res.output_kernel)
        values.append(Q_np(K, Y, C_np(K, Y, L, lam), L, lam))  # Q(L_k, C(L_k)), dense NumPy
        assert float(res.objective[0]) == pytest.approx(values[-1], rel=1e-10)
        np.testing.assert_allclose(np.asarray(res.coef), C_np(K, Y, L, lam), atol=1e-9)
    assert np.all(np.diff(values) <= 1e-12 * abs(values[0])), values
    res = output_kernel_learning(K, Y, lam, max_iter=300, tol=1e-12)
    obj = np.asarray(res.objective)[: int(res.n_iter)]
    assert np.all(np.diff(obj) <= 1e-12 * abs(obj[0]))


@pytest.mark.parametrize("seed,lam", [(0, 0.3), (2, 1e-3), (3, 10.0)])
def test_fixed_point_satisfies_the_optimality_conditions(seed, lam):
    _, K, Y, _ = small_problem(seed=seed)
    res = output_kernel_learning(K, Y, lam, max_iter=2000, tol=1e-12)
    assert bool(res.converged)
    C, L = np.asarray(res.coef), np.asarray(res.output_kernel)
    scale = np.linalg.norm(Y)
    # eq. (6): Y − λC − KCL = 0, hence ∂Q/∂C = −K(Y − λC − KCL)L/λ = 0
    np.testing.assert_allclose(Y - lam * C - K @ C @ L, 0, atol=1e-9 * scale)
    # ∂Q/∂L = −CᵀK(Y − λC/2 − KCL)/λ + L = 0 (proof of Lemma 4.1), i.e. L = ½CᵀKC
    grad_L = -C.T @ K @ (Y - lam * C / 2 - K @ C @ L) / lam + L
    np.testing.assert_allclose(grad_L, 0, atol=1e-7 * max(1.0, np.abs(L).max()))
    np.testing.assert_allclose(L, L.T, atol=1e-12)
    assert np.linalg.eigvalsh(L).min() >= -1e-10 * np.abs(L).max()
    # global (Theorem 3.3): equal to an independent BFGS minimiser of f(L) = min_C Q(L, C)
    L_ref, C_ref = reference_minimiser(K, Y, lam)
    np.testing.assert_allclose(L, L_ref, atol=1e-6 * max(1.0, np.abs(L_ref).max()))
    assert Q_np(K, Y, C, L, lam) <= Q_np(K, Y, C_ref, L_ref, lam) * (1 + 1e-10)


@pytest.mark.parametrize("rank_L", [3, 1])
def test_sylvester_step_equals_dense_kron_solve(rank_L):
    _, K, Y, lam = small_problem(n=9, seed=4)
    rng = np.random.default_rng(5)
    B = rng.normal(size=(3, rank_L))
    L = B @ B.T
    s, U = np.linalg.eigh(K)
    C = np.asarray(sylvester_step(jnp.asarray(np.maximum(s, 0)), jnp.asarray(U), jnp.asarray(Y), jnp.asarray(L), lam))
    np.testing.assert_allclose(C, C_np(K, Y, L, lam), rtol=0, atol=1e-8 * np.abs(C).max())
    np.testing.assert_allclose(K @ C @ L + lam * C, Y, atol=1e-9)


def test_l_step_equals_a_numerical_minimiser_of_objective_3():
    _, K, Y, lam = small_problem(n=6, seed=9, lam=0.5)
    rng = np.random.default_rng(7)
    B = rng.normal(size=(3, 3))
    L_p = B @ B.T / 3
    C = C_np(K, Y, L_p, lam)  # C solves eq. (6) for L_p, as Lemma 4.1 assumes
    L = np.asarray(output_kernel_update(jnp.asarray(K), jnp.asarray(C), jnp.asarray(L_p), lam))
    iu = np.triu_indices(3)

    def sym(v):
        M = np.zeros((3, 3))
        M[iu] = v
        return M + np.triu(M, 1).T

    out = minimize(lambda v: Q_np(K, Y, C, sym(v), lam), L_p[iu], method="BFGS", options={"gtol": 1e-12})
    assert np.linalg.eigvalsh(sym(out.x)).min() > 1e-3  # here the minimiser over symmetric L is PSD
    np.testing.assert_allclose(L, sym(out.x), atol=1e-6)
    assert np.linalg.eigvalsh(L).min() >= -1e-12
    # the paper's eq. (8) minimises over all matrices: lower Q, but not symmetric (see the module docstring)
    E = K @ C
    L_paper = L_p + lam * np.linalg.solve(E.T @ E + lam * np.eye(3), 0.5 * E.T @ C - L_p)
    assert np.abs(L_paper - L_paper.T).max() > 1e-6
    assert Q_np(K, Y, C, L_paper, lam) <= Q_np(K, Y, C, L, lam) + 1e-12
    assert Q_np(K, Y, C, L, lam) < Q_np(K, Y, C, 0.5 * (L_paper + L_paper.T), lam)


def l_step_np(K, Y, C, lam):
    """argmin over symmetric L of Q(L, C), dense: the symmetric part of ∇_L Q set to zero,
    L + (AL + LA)/(2λ) = sym(EᵀY)/λ − ½CᵀKC with E = KC, A = EᵀE, as one d² × d² linear system."""
    E = K @ C
    A, d = E.T @ E, Y.shape[1]
    M = np.eye(d * d) + (np.kron(np.eye(d), A) + np.kron(A, np.eye(d))) / (2 * lam)
    R = 0.5 * (E.T @ Y + Y.T @ E) / lam - 0.5 * C.T @ K @ C
    return np.linalg.solve(M, R.reshape(-1, order="F")).reshape(d, d, order="F")


@pytest.mark.parametrize("seed", [0, 1])
def test_every_iteration_takes_lemma_4_1_l_step_or_better(seed):
    """Each iteration keeps the better of the L step (Lemma 4.1, symmetric) and the cube-root step, so
    f(L_{t+1}) ≤ f(L step from L_t) at every t, not only the first; at this λ the L step is the better
    candidate, so the iterates are exactly the L steps (dense reference) — replacing the L step after the
    first iteration (by the cube-root step, or by no step) breaks both."""
    _, K, Y, _ = small_problem(seed=seed)
    lam = 3.0
    f = lambda L: 0.5 * np.sum(Y * C_np(K, Y, L, lam)) + 0.5 * np.sum(L * L)  # min over C of objective (3)
    its = [np.zeros((3, 3))] + [np.asarray(output_kernel_learning(K, Y, lam, max_iter=t, tol=1e-300).output_kernel)
                                for t in range(1, 5)]
    for t in range(4):
        L_ref = l_step_np(K, Y, C_np(K, Y, its[t], lam), lam)
        assert np.linalg.eigvalsh(L_ref).min() > 0  # the symmetric minimiser is PSD here: the PSD one too
        assert f(its[t + 1]) <= f(L_ref) + 1e-12 * abs(f(L_ref))
        np.testing.assert_allclose(its[t + 1], L_ref, atol=1e-10 * np.abs(L_ref).max())
        assert f(its[t + 1]) < f(its[t]) * (1 - 1e-9)  # not converged yet: each step matters


def test_l_step_stays_psd_and_decreases_q_when_the_step_leaves_the_cone():
    found = 0
    step = jax.jit(output_kernel_update)
    for seed in range(10):
        rng = np.random.default_rng(seed)
        n, d = 8, 4
        B = rng.normal(size=(n, 3))
        K = B @ B.T
        Y = rng.normal(size=(n, d)) * 10
        lam = 1e-3
        M = rng.normal(size=(d, 2))
        L_p = M @ M.T  # singular PSD: a full step may leave the cone
        C = C_np(K, Y, L_p, lam)
        L = np.asarray(step(jnp.asarray(K), jnp.asarray(C), jnp.asarray(L_p), lam))
        assert np.linalg.eigvalsh(L).min() >= -1e-9 * np.abs(L).max()
        assert Q_np(K, Y, C, L, lam) <= Q_np(K, Y, C, L_p, lam) * (1 + 1e-9)
        found += 1
    assert found == 10


def test_centred_codes_force_l_times_ones_to_zero_and_the_correlation_reads_it():
    """Centred class codes have Y·1 = 0, and then L·1 = 0 at the optimum (the default centring);
    uncentred 0/1 codes (the paper's model) do not. output_correlation equals L_ij/√(L_ii L_jj)."""
    rng = np.random.default_rng(21)
    X = rng.normal(size=(24, 2))
    K = gaussian_gram(X, X, 1.0)
    Y = np.eye(4)[rng.integers(0, 4, 24)]  # one-vs-all codes a = 1, b = 0
    for Yk, centred in ((Y - Y.mean(0), True), (Y, False)):
        L = np.asarray(output_kernel_learning(K, Yk, 0.05, max_iter=2000, tol=1e-12).output_kernel)
        L_ref, _ = reference_minimiser(K, Yk, 0.05)
        np.testing.assert_allclose(L, L_ref, atol=1e-6 * np.abs(L_ref).max())
        ones = np.abs(L @ np.ones(4)).max() / np.abs(L).max()
        assert (ones < 1e-8) if centred else (ones > 0.1)
        R = output_correlation(L)
        for i in range(4):
            for j in range(4):
                assert abs(R[i, j] - L[i, j] / np.sqrt(L[i, i] * L[j, j])) < 1e-12
    assert np.all(output_correlation(np.diag([1.0, 0.0]))[1] == 0)  # a zero diagonal entry gives 0, not NaN


def test_low_rank_variant_equals_full_rank_when_the_rank_is_full():
    _, K, Y, lam = small_problem(seed=8, lam=0.2)
    full = output_kernel_learning(K, Y, lam, max_iter=1000, tol=1e-12)
    low = output_kernel_learning(K, Y, lam, max_iter=1000, tol=1e-12, rank=3)
    L_ref, C_ref = reference_minimiser(K, Y, lam)
    for res in (full, low):
        np.testing.assert_allclose(np.asarray(res.output_kernel), L_ref, atol=1e-6)
        np.testing.assert_allclose(np.asarray(res.coef), C_ref, atol=1e-5 * np.abs(C_ref).max())


def test_low_rank_variant_solves_its_restricted_problem():
    _, K, Y, lam = small_problem(seed=9, lam=0.2)
    low = output_kernel_learning(K, Y, lam, max_iter=1000, tol=1e-12, rank=1)
    C, L = np.asarray(low.coef), np.asarray(low.output_kernel)
    W = np.linalg.svd(Y, full_matrices=False)[2][:1].T  # NumPy's top right singular vector
    np.testing.assert_allclose(L, W @ W.T @ L @ W @ W.T, atol=1e-10)  # L = W M Wᵀ
    np.testing.assert_allclose(K @ C @ L + lam * C, Y, atol=1e-8)  # eq. (6)
    m = float((W.T @ L @ W)[0, 0])
    ms = np.linspace(0.5 * m, 1.5 * m, 41)  # optimal along its one free parameter
    qs = [Q_np(K, Y, C_np(K, Y, v * W @ W.T, lam), v * W @ W.T, lam) for v in ms]
    assert Q_np(K, Y, C, L, lam) <= min(qs) + 1e-9
    L_full, C_full = reference_minimiser(K, Y, lam)
    assert Q_np(K, Y, C, L, lam) >= Q_np(K, Y, C_full, L_full, lam) - 1e-9


def test_float32_runs_and_agrees_with_float64_reference():
    _, K, Y, lam = small_problem(seed=10, lam=0.3)
    res = output_kernel_learning(K.astype(np.float32), Y.astype(np.float32), lam, max_iter=300, tol=1e-5)
    assert res.coef.dtype == jnp.float32 and res.output_kernel.dtype == jnp.float32
    L_ref, _ = reference_minimiser(K, Y, lam)
    np.testing.assert_allclose(np.asarray(res.output_kernel), L_ref, atol=2e-3 * np.abs(L_ref).max())


def test_okl_path_predictions_equal_independent_minimisers():
    X, K, Y, _ = small_problem(n=12, seed=11)
    X_new = np.random.default_rng(12).normal(size=(5, 2))
    K_eval = gaussian_gram(X_new, X, 1.0)
    lams = np.array([3.0, 0.3, 0.03])
    s, U = np.linalg.eigh(K)
    F = np.asarray(okl_path(jnp.asarray(np.maximum(s, 0)), jnp.asarray(U), jnp.asarray(Y), jnp.asarray(lams),
                            jnp.asarray(K_eval), 1000, 1e-12))
    for i, lam in enumerate(lams):
        L_ref, C_ref = reference_minimiser(K, Y, lam)
        np.testing.assert_allclose(F[i], K_eval @ C_ref @ L_ref, atol=1e-6)


def test_core_rejects_bad_arguments():
    K, Y = np.eye(3), np.ones((3, 2))
    with pytest.raises(ShapeError):
        output_kernel_learning(np.eye(4), Y, 1.0)
    with pytest.raises(ParameterError):
        output_kernel_learning(K, Y, -1.0)
    with pytest.raises(ParameterError):
        output_kernel_learning(K, Y, 1.0, rank=3)
    with pytest.raises(ShapeError):
        output_kernel_learning(K, Y, 1.0, L0=np.eye(3))


# ----------------------------------------------------------------- data: sim0–sim3
def test_okl_sims_follow_the_paper():
    for name, groups in OKL_SIM_GROUPS.items():
        data = make_okl_sim(name, rng=0)
        q = len(groups)
        assert data.X.shape == (500 * q, 100)
        D = np.linalg.norm(data.means[:, None] - data.means[None], axis=-1)
        np.testing.assert_allclose(D[~np.eye(q, dtype=bool)], np.sqrt(2))  # simplex edges √2
        np.testing.assert_allclose(data.means.mean(0), 0, atol=1e-12)  # centred at the origin
        for k, labels in enumerate(groups):
            got = data.y[data.component == k]
            counts = np.array([np.sum(got == lab) for lab in labels])
            assert counts.sum() == 500 and counts.max() - counts.min() <= 1  # balanced split
        centred = data.X - data.means[data.component]
        assert abs(centred.std() - 1) < 0.01
    assert make_okl_sim("sim1", rng=0).bayes_ceiling == 0.875
    with pytest.raises(ParameterError):
        make_okl_sim("sim9")


# ----------------------------------------------------------------- estimators
def test_regressor_with_fixed_kernel_and_lambda_equals_the_reference(tmp_path):
    X, K, Y, lam = small_problem(n=14, seed=13, lam=0.1)
    model = OutputKernelRegressor(kernel=Gaussian(1.0), lambdas=[lam], fit_intercept=False, tol=1e-12,
                                  max_iter=2000).fit(X, Y)
    L_ref, C_ref = reference_minimiser(K, Y, lam)
    np.testing.assert_allclose(model.output_kernel_, L_ref, atol=1e-6)
    core = output_kernel_learning(K, Y, lam, max_iter=2000, tol=1e-12)
    np.testing.assert_allclose(np.asarray(model.coef_), np.asarray(core.coef), atol=1e-10)
    X_new = np.random.default_rng(14).normal(size=(4, 2))
    np.testing.assert_allclose(model.predict(X_new), gaussian_gram(X_new, X, 1.0) @ C_ref @ L_ref, atol=1e-6)
    assert model.lambda_ == lam and model.output_kernel_.shape == (3, 3)
    np.testing.assert_allclose(model.output_correlation_, output_correlation(L_ref), atol=1e-5)
    assert model.predict(X_new).dtype == np.float64
    assert_round_trip(model, tmp_path / "okl.npz", X_new)


def test_kfold_scores_equal_a_brute_force_loop():
    X, K, Y, _ = small_problem(n=16, seed=15)
    lams = [1.0, 0.1]
    masks = np.zeros((3, 16), bool)
    for f in range(3):  # unequal folds (6, 5, 5 held out): the gathered fold Grams are padded
        masks[f] = np.arange(16) % 3 != f
    model = OutputKernelRegressor(kernel=Gaussian(1.0), lambdas=lams, selection=masks, tol=1e-12,
                                  max_iter=2000).fit(X, Y)
    Yc = Y - Y.mean(0)  # centred on the mean of all rows, as the estimator does
    expected = []
    for lam in lams:
        losses = []
        for m in masks:
            L, C = reference_minimiser(K[np.ix_(m, m)], Yc[m], lam)
            F = K[np.ix_(~m, m)] @ C @ L
            losses.append(np.mean((F - Yc[~m]) ** 2))
        expected.append(np.mean(losses))
    np.testing.assert_allclose(model.cv_scores_[0], expected, rtol=1e-6)
    assert model.lambda_ == lams[int(np.argmin(expected))]


@pytest.mark.slow  # compiles the selection for the default kernel grid (~15 s on 2 cores)
def test_classifier_beats_chance_and_finds_the_split_classes():
    data = make_okl_sim("sim3", rng=0, n_per_class=100, dim=10)
    X, y = data.X[:200], data.y[:200]
    model = OutputKernelClassifier(kernel=Linear(), n_folds=3).fit(X, y)
    acc = model.score(data.X[200:], data.y[200:])
    assert acc > 0.3  # chance: 0.2 (five labels); the ceiling is 0.67
    L = model.output_kernel_
    np.testing.assert_allclose(L, L.T, atol=1e-10)
    assert np.linalg.eigvalsh(L).min() >= -1e-8 * np.abs(L).max()
    # labels of the same Gaussian ({1, 2} and {3, 4}): each the other's most similar label
    off = L - np.diag(np.diag(L)) - 1e9 * np.eye(5)
    assert off[1].argmax() == 2 and off[2].argmax() == 1 and off[3].argmax() == 4 and off[4].argmax() == 3
    proba = model.predict_proba(X[:5])
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert set(model.predict(X).tolist()) <= set(range(5))


@pytest.mark.slow  # compiles the selection for the default kernel grid (~15 s on 2 cores)
def test_classifier_string_labels_binary_and_default_kernel(tmp_path):
    rng = np.random.default_rng(16)
    X = rng.normal(size=(40, 2))
    y = np.where(X[:, 0] > 0, "yes", "no")
    model = OutputKernelClassifier(n_folds=2).fit(X, y)
    assert model.decision_function(X).shape == (40,)
    assert model.score(X, y) > 0.85 and model.predict(X).dtype == y.dtype
    assert model.best_params_["kernel_width"] is not None and model.cv_scores_.shape == (5, 15)
    assert_round_trip(model, tmp_path / "okl.npz", X, ("predict", "predict_proba", "decision_function"))


@pytest.mark.slow  # compiles the selection for the default kernel grid (~15 s on 2 cores)
def test_estimators_follow_sklearn_conventions(tmp_path):
    from sklearn.base import clone

    model = OutputKernelClassifier(kernel=Linear(), lambdas=[1.0, 0.1], rank=2, coding="simplex")
    params = model.get_params()
    assert params["rank"] == 2 and params["coding"] == "simplex"
    twin = clone(model)
    assert twin.get_params()["lambdas"] == [1.0, 0.1] and twin is not model
    reg = OutputKernelRegressor().set_params(n_folds=3, kernel=Gaussian(2.0), lambdas=[1.0, 0.01])
    assert reg.n_folds == 3
    X, _, Y, _ = small_problem(n=20, seed=17)
    fitted = clone(reg).set_params(rank=1).fit(X, Y)
    assert fitted.predict(X).shape == (20, 3)
    assert_round_trip(fitted, tmp_path / "low_rank.npz", X)
    f = fitted.predictor()
    np.testing.assert_allclose(np.asarray(f(jnp.asarray(X))), fitted.predict(X), atol=1e-10)
    assert fitted.predict(X[:, :]).shape == (20, 3)
    one_d = OutputKernelRegressor(kernel=Gaussian(1.0), lambdas=[0.1]).fit(X, Y[:, 0])
    assert one_d.predict(X).shape == (20,)


def test_estimators_reject_bad_input():
    X, _, Y, _ = small_problem(n=12, seed=18)
    with pytest.raises(NotFittedError):
        OutputKernelRegressor().predict(X)
    for method in ("predict", "decision_function", "predict_proba"):  # NotFittedError, not AttributeError
        with pytest.raises(NotFittedError):
            getattr(OutputKernelClassifier(), method)(X)
    with pytest.raises(ParameterError):
        OutputKernelRegressor(lambdas=[-1.0]).fit(X, Y)
    with pytest.raises(ParameterError):
        OutputKernelRegressor(rank=5).fit(X, Y)
    with pytest.raises(ParameterError):
        OutputKernelRegressor(selection="loo").fit(X, Y)
    with pytest.raises(ParameterError):
        OutputKernelRegressor(kernel="rbf").fit(X, Y)
    with pytest.raises(ParameterError):
        OutputKernelRegressor(max_iter=0).fit(X, Y)
    with pytest.raises(ShapeError):
        OutputKernelRegressor().fit(X, Y[:5])
    with pytest.raises(LabelError):
        OutputKernelClassifier().fit(X, np.zeros(12))
    with pytest.raises(LabelError):
        OutputKernelClassifier().fit(X, np.linspace(0, 1, 12))
    with pytest.raises(ParameterError):
        OutputKernelClassifier(coding="x").fit(X, np.arange(12) % 2)
    model = OutputKernelRegressor(kernel=Gaussian(1.0), lambdas=[0.1]).fit(X, Y)
    with pytest.raises(ShapeError):
        model.predict(X[:, :1])


def test_plot_output_kernel_draws_the_matrix():
    import matplotlib

    matplotlib.use("Agg")
    from jaxmtl.plotting import plot_output_kernel

    L = np.array([[1.0, 0.5], [0.5, 2.0]])
    ax = plot_output_kernel(L, class_names=["a", "b"])
    np.testing.assert_allclose(ax.images[0].get_array(), L)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    with pytest.raises(ShapeError):
        plot_output_kernel(np.ones((2, 3)))
    with pytest.raises(NotFittedError):
        plot_output_kernel(OutputKernelClassifier())


@pytest.mark.slow  # two default-grid selections (~30 s on 2 cores)
def test_default_widths_above_the_subsample_size_are_searched_on_a_subsample_first():
    from jaxmtl.models._spectral import WIDTH_SUBSAMPLE
    from jaxmtl.models.output_kernel import DEFAULT_WIDTH_FACTORS

    data = make_okl_sim("sim3", rng=1, n_per_class=150, dim=10)
    X, y = data.X[:WIDTH_SUBSAMPLE + 20], data.y[:WIDTH_SUBSAMPLE + 20]
    model = OutputKernelClassifier(n_folds=3, random_state=2).fit(X, y)
    rows = np.sort(np.random.default_rng(2).choice(len(y), WIDTH_SUBSAMPLE, replace=False))
    median = np.median(np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))[np.triu_indices(len(y), 1)])
    sub = OutputKernelClassifier(n_folds=3, random_state=2,
                                 kernel=None, width_factors=np.asarray(DEFAULT_WIDTH_FACTORS) * median
                                 / np.median(np.sqrt(((X[rows, None] - X[None, rows]) ** 2).sum(-1))
                                             [np.triu_indices(WIDTH_SUBSAMPLE, 1)])).fit(X[rows], y[rows])
    best = sub.best_params_["kernel_width"]
    np.testing.assert_allclose(model.kernel_widths_, best * np.array([0.5, 1.0, 2.0]), rtol=1e-6)
    assert model.cv_scores_.shape == (3, 15)
