"""Mixed-effect multi-task learning ([Din11] ch. 5): Algorithm 4 and MixedEffectRegressor against
dense NumPy solves of (5.4) with the kernel matrix (5.5) built by explicit loops, and against
scikit-learn's KernelRidge in the pooled (α = 1) and separate (α = 0) limits."""

import jax

jax.config.update("jax_enable_x64", True)

import warnings

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge

from jaxmtl.errors import NonFiniteError, NotFittedError, ParameterError, TaskError
from jaxmtl.kernels import Gaussian, Linear
from jaxmtl.mixed_effect import ExponentialDot, algorithm4, mixed_effect_gram
from jaxmtl.mixed_effect.centralized import task_layout
from jaxmtl.models.mixed_effect import MixedEffectRegressor

KBAR, KTIL = Gaussian(1.3), Gaussian(0.6)


def _gauss(a, b, s):
    return np.exp(-np.sum((a - b) ** 2) / (2 * s * s))


def dense_K(X1, t1, X2, t2, alpha, kt_of=lambda t: 0.6):
    """(5.5) entry by entry: α K̄ + (1 − α)[tᵢ = tⱼ] K̃^{tᵢ}."""
    K = np.zeros((len(X1), len(X2)))
    for i in range(len(X1)):
        for j in range(len(X2)):
            K[i, j] = alpha * _gauss(X1[i], X2[j], 1.3)
            if t1[i] == t2[j]:
                K[i, j] += (1 - alpha) * _gauss(X1[i], X2[j], kt_of(t1[i]))
    return K


def data(seed=0, n=40, n_pool=6, n_tasks=4):
    """Inputs drawn from a small pool: repeats inside tasks and across tasks; unequal tasks."""
    rng = np.random.default_rng(seed)
    pool = rng.normal(size=(n_pool, 2))
    X = pool[rng.integers(0, n_pool, n)]
    t = np.minimum(rng.integers(0, n_tasks + 2, n), n_tasks - 1)
    return X, t, rng.normal(size=n), rng.uniform(0.3, 3.0, n), rng


@pytest.mark.parametrize("alpha", [0.0, 0.35, 1.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_algorithm4_equals_dense_solve_of_5_4(alpha, weighted):
    X, t, y, w, _ = data()
    w = w if weighted else np.ones_like(y)
    assert len(np.unique(X, axis=0)) < len(X)                             # repeats across tasks
    assert any(len(np.unique(X[t == j], axis=0)) < np.sum(t == j) for j in range(4))  # and inside one
    sol = algorithm4(X, y, t, alpha, 0.07, KBAR, KTIL, w=w)
    c = np.linalg.solve(dense_K(X, t, X, t, alpha) + 0.07 * np.diag(w), y)
    np.testing.assert_allclose(sol.coef, c, rtol=0, atol=1e-9)
    # č = Pᵀc (5.8): coefficients summed over each distinct input
    P = (X[:, None, :] == sol.X_unique[None, :, :]).all(-1).astype(float)
    np.testing.assert_allclose(sol.coef_unique, P.T @ c, atol=1e-9)


def test_algorithm4_task_kernel_mapping_and_several_outputs():
    X, t, y, w, rng = data(1, n=30)
    widths = {0: 0.4, 1: 0.9, 2: 2.0, 3: 0.6}
    Y = np.c_[y, rng.normal(size=len(y))]
    sol = algorithm4(X, Y, t, 0.5, 0.2, KBAR, {j: Gaussian(s) for j, s in widths.items()}, w=w)
    C = np.linalg.solve(dense_K(X, t, X, t, 0.5, widths.get) + 0.2 * np.diag(w), Y)
    np.testing.assert_allclose(sol.coef, C, atol=1e-9)


def test_equal_task_kernels_share_buckets_and_the_solution():
    """Distinct but equal kernel objects (one per task) are grouped into the same buckets as one
    shared kernel — one compiled shape, not one per task — and solve (5.4) alike."""
    X, t, y, w, _ = data(3, n=36, n_tasks=6)
    codes = np.unique(t, return_inverse=True)[1]
    shared = task_layout(codes, 6, lambda j: Gaussian(0.6))
    assert len(shared.buckets) == len(task_layout(codes, 6, lambda j: KTIL).buckets) < 6
    assert len(task_layout(codes, 6, lambda j: Gaussian(0.6 + j)).buckets) == 6
    sol = algorithm4(X, y, t, 0.4, 0.1, KBAR, {j: Gaussian(0.6) for j in range(6)}, w=w)
    c = np.linalg.solve(dense_K(X, t, X, t, 0.4) + 0.1 * np.diag(w), y)
    np.testing.assert_allclose(sol.coef, c, rtol=0, atol=1e-9)


def test_mixed_effect_gram_matches_loops():
    X, t, *_ = data(2, n=12)
    np.testing.assert_allclose(mixed_effect_gram(X, t, X, t, 0.3, KBAR, KTIL), dense_K(X, t, X, t, 0.3), atol=1e-13)


def test_pooled_and_separate_limits_equal_kernel_ridge():
    X, t, y, _, _ = data(3)
    K = lambda A, B: np.array([[_gauss(a, b, 1.3) for b in B] for a in A])
    Xq, tq = X[:7] + 0.1, t[:7]
    pooled = MixedEffectRegressor(alpha=1.0, lam=0.05, kernel=KBAR, fit_intercept=False).fit(X, y, t)
    ref = KernelRidge(alpha=0.05, kernel="precomputed").fit(K(X, X), y)
    np.testing.assert_allclose(pooled.predict(Xq, tq), ref.predict(K(Xq, X)), atol=1e-9)
    separate = MixedEffectRegressor(alpha=0.0, lam=0.05, kernel=KBAR, fit_intercept=False).fit(X, y, t)
    for j in range(4):
        m = t == j
        ref = KernelRidge(alpha=0.05, kernel="precomputed").fit(K(X[m], X[m]), y[m])
        np.testing.assert_allclose(separate.predict(Xq, np.full(7, j)), ref.predict(K(Xq, X[m])), atol=1e-9)


def test_estimator_solves_5_4_with_and_without_bias_and_weights():
    X, t, y, w, rng = data(4)
    s = 1.0 / w                                     # scikit-learn weights: wᵢ of (5.4) = 1/sᵢ
    Xq = rng.normal(size=(6, 2))
    tq = np.array([0, 1, 2, 3, 0, 1])
    K = dense_K(X, t, X, t, 0.4) + 0.1 * np.diag(w)
    Kq = dense_K(Xq, tq, X, t, 0.4)
    m = MixedEffectRegressor(alpha=0.4, lam=0.1, kernel=KBAR, task_kernel=KTIL, fit_intercept=False)
    m.fit(X, y, t, sample_weight=s)
    np.testing.assert_allclose(m.predict(Xq, tq), Kq @ np.linalg.solve(K, y), atol=1e-9)
    # unpenalized bias: the bordered system [[K + λW, 1], [1ᵀ, 0]] [c; b] = [y; 0]
    n = len(y)
    sol = np.linalg.solve(np.block([[K, np.ones((n, 1))], [np.ones((1, n)), np.zeros((1, 1))]]), np.r_[y, 0.0])
    mb = MixedEffectRegressor(alpha=0.4, lam=0.1, kernel=KBAR, task_kernel=KTIL).fit(X, y, t, sample_weight=s)
    assert mb.intercept_ == pytest.approx(sol[-1], abs=1e-9)
    np.testing.assert_allclose(mb.predict(Xq, tq), Kq @ sol[:-1] + sol[-1], atol=1e-9)
    g_bar, g_tilde = mb.predict_parts(Xq, tq)
    np.testing.assert_allclose(g_bar, 0.4 * np.array([[_gauss(a, b, 1.3) for b in X] for a in Xq]) @ sol[:-1]
                               + sol[-1], atol=1e-9)
    np.testing.assert_allclose(g_bar + g_tilde, mb.predict(Xq, tq), atol=1e-12)


def test_zero_weights_drop_examples_and_unknown_tasks_get_the_average_task():
    X, t, y, _, _ = data(5)
    s = np.ones_like(y)
    s[:5] = 0.0
    a = MixedEffectRegressor(alpha=0.5, lam=0.1, kernel=KBAR).fit(X, y, t, sample_weight=s)
    b = MixedEffectRegressor(alpha=0.5, lam=0.1, kernel=KBAR).fit(X[5:], y[5:], t[5:])
    np.testing.assert_allclose(a.predict(X[:4], t[:4]), b.predict(X[:4], t[:4]), atol=1e-10)
    g_bar, g_tilde = a.predict_parts(X[:4], np.array([99, 99, 0, 99]))
    np.testing.assert_array_equal(g_tilde[[0, 1, 3]], 0.0)
    np.testing.assert_allclose(a.predict(X[:4], [99] * 4), a.predict_parts(X[:4], t[:4])[0], atol=1e-12)


def test_grid_selection_scores_equal_explicit_refits():
    X, t, y, _, _ = data(6, n=30)
    alphas, lams = [0.2, 0.8], [0.01, 1.0]
    m = MixedEffectRegressor(kernel=KBAR, alphas=alphas, lams=lams, validation_fraction=0.3,
                             random_state=3, fit_intercept=False).fit(X, y, t)
    val = np.zeros(30, bool)
    val[np.random.default_rng(3).permutation(30)[:9]] = True
    tr = ~val
    for i, a in enumerate(alphas):
        for j, lam in enumerate(lams):
            K = lambda A, ta, B, tb: dense_K(A, ta, B, tb, a, lambda _: 1.3)
            c = np.linalg.solve(K(X[tr], t[tr], X[tr], t[tr]) + lam * np.eye(tr.sum()), y[tr])
            mse = np.mean((K(X[val], t[val], X[tr], t[tr]) @ c - y[val]) ** 2)
            assert m.cv_scores_[i, j] == pytest.approx(mse, rel=1e-8)
    i, j = np.unravel_index(np.argmin(m.cv_scores_), (2, 2))
    assert (m.alpha_, m.lam_) == (alphas[i], lams[j])
    pred = m.predict(X, t)
    assert m.score(X, y, t) == pytest.approx(1 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2), rel=1e-12)


def test_default_grid_is_15_by_15_and_exponential_kernel():
    rng = np.random.default_rng(7)
    items = np.abs(rng.normal(size=(12, 3)))
    items /= np.linalg.norm(items, axis=1, keepdims=True)
    idx = rng.integers(0, 12, 80)
    t = rng.integers(0, 10, 80)
    y = items[idx] @ np.array([1.0, -1.0, 0.5]) + 0.1 * rng.normal(size=(10, 3))[t] @ np.ones(3)
    m = MixedEffectRegressor(kernel=ExponentialDot(), task_kernel=Linear()).fit(items[idx], y, t)
    assert m.cv_scores_.shape == (15, 15) and np.all(np.isfinite(m.cv_scores_))
    assert m.lams_[0] == pytest.approx(1e-7) and m.lams_[-1] == pytest.approx(1.0)


@pytest.mark.parametrize("kwargs, fit_kw, err", [
    ({"alpha": 1.5}, {}, ParameterError),
    ({"alpha": -0.1}, {}, ParameterError),
    ({"lam": 0.0}, {}, ParameterError),
    ({"task_kernel": {0: KTIL}}, {}, TaskError),
    ({}, {"sample_weight": -np.ones(40)}, ParameterError),
    ({}, {"y_nan": True}, NonFiniteError),
])
def test_bad_input_raises_clear_errors(kwargs, fit_kw, err):
    X, t, y, _, _ = data()
    if fit_kw.pop("y_nan", False):
        y = y.copy()
        y[3] = np.nan
    with pytest.raises(err):
        MixedEffectRegressor(**{"alpha": 0.5, "lam": 0.1, **kwargs}).fit(X, y, t, **fit_kw)


def test_not_fitted_and_algorithm4_argument_errors():
    X, t, y, _, _ = data()
    with pytest.raises(NotFittedError):
        MixedEffectRegressor().predict(X, t)
    with pytest.raises(ParameterError, match="n_samples=1 leaves 1 training and 0 validation"):  # scikit-learn's words
        MixedEffectRegressor().fit(X[:1], y[:1], t[:1])
    with pytest.raises(ParameterError, match="alpha"):
        algorithm4(X, y, t, 2.0, 0.1, KBAR)
    with pytest.raises(ParameterError, match="w"):
        algorithm4(X, y, t, 0.5, 0.1, KBAR, w=np.r_[-1.0, np.ones(39)])


def _repeats_data(seed=0):
    """80 examples on 10 distinct inputs, 6 tasks: every task repeats inputs."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 10, (80, 1)) / 10.0
    t = rng.integers(0, 6, 80)
    return X, t, np.sin(6 * X[:, 0]) + 0.3 * t + 0.1 * rng.normal(size=80), rng


def _dense_with_bias(X, t, y, alpha, lam, Xq, tq, width):
    """Dense float64 solve of (5.4) bordered with the unpenalized bias, predictions at (Xq, tq)."""
    def k(A, ta, B, tb):
        g = np.exp(-((A[:, None, :] - B[None, :, :]) ** 2).sum(-1) / (2 * width**2))
        return alpha * g + (1 - alpha) * (ta[:, None] == tb[None, :]) * g
    n = len(y)
    M = np.block([[k(X, t, X, t) + lam * np.eye(n), np.ones((n, 1))], [np.ones((1, n)), np.zeros((1, 1))]])
    sol = np.linalg.solve(M, np.r_[y, 0.0])
    return k(Xq, tq, X, t) @ sol[:-1] + sol[-1]


def test_float32_with_repeated_inputs_at_small_lam_is_refused_warned_or_right():
    """float32 used to return NaN (α = 0) or errors of 1.0 (α = 0.5) and 108 (α = 1) at λ = 1e-7,
    a value of the default grid, on these data. Now: repeats merged (exact); pairs beyond float32's
    precision refused or warned by name (a grid of the user's warns); the default grid in float32
    searches only resolvable pairs, silently,
    and its fit agrees with the float64 dense solve at the pair it chose."""
    X, t, y, rng = _repeats_data()
    Xq, tq = rng.uniform(0, 1, (15, 1)), rng.integers(0, 6, 15)
    with jax.enable_x64(False):
        with pytest.raises(ParameterError, match="lam=1e-07.*float64"):
            MixedEffectRegressor(alpha=0.5, lam=1e-7, kernel=Gaussian(0.3)).fit(X, y, t)
        with pytest.warns(RuntimeWarning, match="float32's precision.*float64"):
            MixedEffectRegressor(alpha=1.0, lam=1e-3, kernel=Gaussian(0.3)).fit(X, y, t)
        with pytest.warns(RuntimeWarning, match="grid points are beyond float32's precision"):
            MixedEffectRegressor(kernel=Gaussian(0.3), lams=[1e-7, 1e-1]).fit(X, y, t)  # the user's grid
        with warnings.catch_warnings():                     # the default grid is cut silently
            warnings.simplefilter("error")
            model = MixedEffectRegressor(kernel=Gaussian(0.3)).fit(X, y, t)
        pred = model.predict(Xq, tq)
    assert np.isinf(model.cv_scores_[:, 0]).all() and np.isfinite(model.cv_scores_[:, -1]).all()
    ref = _dense_with_bias(X, t, y, model.alpha_, model.lam_, Xq, tq, 0.3)
    np.testing.assert_allclose(pred, ref, rtol=0, atol=1e-3)
    for alpha in (0.0, 0.5, 1.0):                           # float64: no warning, the dense solve at λ = 1e-7
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fit = MixedEffectRegressor(alpha=alpha, lam=1e-7, kernel=Gaussian(0.3)).fit(X, y, t)
        np.testing.assert_allclose(fit.predict(Xq, tq), _dense_with_bias(X, t, y, alpha, 1e-7, Xq, tq, 0.3),
                                   rtol=0, atol=1e-5)


def test_a_position_dependent_task_kernel_sees_the_inputs_as_given():
    """A Gaussian K̄ with a linear K̃: the inputs are not shifted (the linear kernel would change),
    so the fit is the dense solve of (5.4) with K̃(x, x') = x·x' on inputs far from the origin."""
    X, t, y, _, rng = data(5)
    X = X + 3.0
    Xq = rng.normal(size=(6, 2)) + 3.0
    tq = np.array([0, 1, 2, 3, 0, 1])

    def K(A, ta, B, tb):
        return 0.4 * np.array([[_gauss(a, b, 1.3) for b in B] for a in A]) + 0.6 * (A @ B.T) * (ta[:, None] == tb[None, :])

    m = MixedEffectRegressor(alpha=0.4, lam=0.1, kernel=KBAR, task_kernel=Linear(), fit_intercept=False).fit(X, y, t)
    c = np.linalg.solve(K(X, t, X, t) + 0.1 * np.eye(len(y)), y)
    np.testing.assert_allclose(m.predict(Xq, tq), K(Xq, tq, X, t) @ c, rtol=1e-8, atol=1e-8)
    assert m._input_offset_ is None


def test_lambda_path_grid_equals_dense_solves_of_5_4(monkeypatch):
    """With few repeats the grid is scored on the λ path (one eigendecomposition per α, every λ
    from it): its weighted validation MSE equals dense solves of (5.4) bordered with the bias, the
    kernel (5.5) built entry by entry, at every grid point; Algorithm 4 per point agrees."""
    from jaxmtl.models import mixed_effect as me

    rng = np.random.default_rng(11)
    X = rng.normal(size=(50, 2))
    X[40:] = X[:10]                                          # a few repeated inputs
    t = rng.integers(0, 3, 50)
    y = np.sin(X[:, 0]) + 0.3 * t + 0.1 * rng.normal(size=50)
    s = rng.uniform(0.5, 2.0, 50)                            # sample weights: wᵢ of (5.4) = 1/sᵢ
    alphas, lams = [0.0, 0.3, 1.0], [1e-3, 1e-1, 1.0]
    kw = dict(kernel=KBAR, task_kernel=KTIL, alphas=alphas, lams=lams, random_state=5)

    def per_point_only(*args, **kwargs):
        raise AssertionError("the λ path was expected")

    with monkeypatch.context() as mp:
        mp.setattr(me, "_grid_losses", per_point_only)
        m = MixedEffectRegressor(**kw).fit(X, y, t, sample_weight=s)
    val = np.zeros(50, bool)
    val[np.random.default_rng(5).permutation(50)[:10]] = True
    tr = ~val
    for i, a in enumerate(alphas):
        for j, lam in enumerate(lams):
            K = dense_K(X[tr], t[tr], X[tr], t[tr], a) + lam * np.diag(1.0 / s[tr])
            n = tr.sum()
            sol = np.linalg.solve(np.block([[K, np.ones((n, 1))], [np.ones((1, n)), np.zeros((1, 1))]]),
                                  np.r_[y[tr], 0.0])
            pred = dense_K(X[val], t[val], X[tr], t[tr], a) @ sol[:-1] + sol[-1]
            mse = np.sum(s[val] * (pred - y[val]) ** 2) / np.sum(s[val])
            assert m.cv_scores_[i, j] == pytest.approx(mse, rel=1e-8)
    monkeypatch.setattr(me, "_path_pays_off", lambda *args: False)
    np.testing.assert_allclose(MixedEffectRegressor(**kw).fit(X, y, t, sample_weight=s).cv_scores_, m.cv_scores_,
                               rtol=1e-8)
