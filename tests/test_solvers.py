"""Fixed-point and coordinate-descent solvers for any convex loss ([Din11] ch. 2) against
independent references: the closed forms of Table 2.1 in NumPy, scipy.optimize on the primal,
the library's Tikhonov solve, and scikit-learn's SVC / SVR."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy.optimize import brentq, minimize  # noqa: E402

from _reference import gaussian_gram, random_psd  # noqa: E402
from jaxmtl.errors import DivergenceError, LabelError, NonFiniteError, ParameterError, ShapeError  # noqa: E402
from jaxmtl.operators import DenseOperator, SeparableOperator, div_free, separable_solve  # noqa: E402
from jaxmtl.solvers import (  # noqa: E402
    LOSSES,
    coordinate_descent,
    coordinate_descent_path,
    fixed_point,
    fixed_point_path,
)
from jaxmtl.solvers.coordinate_descent import LinearColumns, SeparableColumns  # noqa: E402

TIGHT = 1e-12
EPS = 0.1


def small(n=14, seed=0, width=0.7):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    K = gaussian_gram(X, X, width)
    labels = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    target = np.sin(2 * X[:, 0]) + 0.2 * rng.standard_t(2, size=n)
    return X, K, labels, target


def targets(loss, labels, target):
    return labels if LOSSES[loss].labels else target


# ---- independent NumPy references --------------------------------------------------------------
def np_loss(loss, y, z, eps=EPS):
    r = y - z
    return {
        "hinge": lambda: np.maximum(1 - y * z, 0),
        "squared_hinge": lambda: 0.5 * np.maximum(1 - y * z, 0) ** 2,
        "square": lambda: 0.5 * r**2,
        "absolute": lambda: np.abs(r),
        "epsilon_insensitive": lambda: np.maximum(np.abs(r) - eps, 0),
        "huber": lambda: np.where(np.abs(r) <= eps, 0.5 * r**2, eps * (np.abs(r) - eps / 2)),
        "logistic": lambda: np.logaddexp(0, -y * z),
    }[loss]()


def np_resolvent(loss, v, y, a, C, eps=EPS):
    """−J_α(v) of Table 2.1 (with |αy − v| in the RLA / SVR rows), Huber, and logistic by brentq."""
    r = a * y - v
    if loss == "hinge":
        return y * np.minimum(C, np.maximum(a - y * v, 0))
    if loss == "squared_hinge":
        return y * np.maximum(a - y * v, 0) / (1 + a / C)
    if loss == "square":
        return r / (1 + a / C)
    if loss == "absolute":
        return np.sign(r) * np.minimum(C, np.abs(r))
    if loss == "epsilon_insensitive":
        return np.sign(r) * np.minimum(C, np.maximum(np.abs(r) - a * eps, 0))
    if loss == "huber":
        return np.sign(r) * np.minimum(np.abs(r) / (1 + a / C), C * eps)
    # logistic: −c ∈ ∂f(z) with z = (v + c)/α, i.e. c = C y σ(−y (v + c)/α)
    out = []
    for vi, yi in zip(v, y):
        g = lambda s: s - C / (1 + np.exp((yi * vi + s) / a))  # noqa: E731
        out.append(yi * brentq(g, 0.0, C, xtol=1e-15))
    return np.array(out)


def primal(loss, K, y, C, c, b=0.0):
    z = K @ c
    return C * np_loss(loss, y, z + b).sum() + 0.5 * c @ z


def scipy_optimum(loss, K, y, C, intercept=False):
    """min_c F(c) by BFGS (smooth losses) or SLSQP with slacks (hinge, absolute, SVR)."""
    n = len(y)
    m = 1 if intercept else 0
    if loss in ("hinge", "absolute", "epsilon_insensitive"):
        def obj(x):
            c, xi = x[:n], x[n + m:]
            return C * xi.sum() + 0.5 * c @ K @ c

        def cons(x):
            z = K @ x[:n] + (x[n] if intercept else 0.0)
            xi = x[n + m:]
            if loss == "hinge":
                return np.r_[xi, xi - (1 - y * z)]
            if loss == "absolute":
                return np.r_[xi - (y - z), xi - (z - y)]
            return np.r_[xi, xi - (y - z - EPS), xi - (z - y - EPS)]

        x0 = np.r_[np.zeros(n + m), np.full(n, 2.0)]
        res = minimize(obj, x0, constraints=[{"type": "ineq", "fun": cons}], method="SLSQP",
                       options={"ftol": 1e-14, "maxiter": 2000})
        return res.fun
    f = lambda x: primal(loss, K, y, C, x[:n], x[n] if intercept else 0.0)  # noqa: E731
    res = minimize(f, np.zeros(n + m), method="BFGS", options={"gtol": 1e-11, "maxiter": 20000})
    return res.fun


# ---- optimality (2.7), scipy optimum, agreement of the two solvers -----------------------------
@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_fixed_point_optimal_for_every_loss(loss):
    _, K, labels, target = small()
    y = targets(loss, labels, target)
    C = 2.0
    r = fixed_point(K, y, C, loss=loss, epsilon=EPS, tol=TIGHT)
    assert bool(r.converged)
    c = np.asarray(r.coef)
    # (2.7) holds for ANY α > 0 (Theorem 8): check it at two step sizes, with NumPy's resolvents
    L = np.linalg.eigvalsh(K)[-1]
    for a in (1.0 / L, 0.3 / L):
        fixed = np_resolvent(loss, a * K @ c - c, y, a, C)
        assert np.max(np.abs(fixed - c)) <= 1e-5 * max(np.max(np.abs(c)), 1e-3)
    # the primal objective is scipy's optimum, and the reported primal is F(c)
    ref = scipy_optimum(loss, K, y, C)
    F = primal(loss, K, y, C, c)
    assert abs(float(r.primal) - F) <= 1e-10 * abs(F)
    assert F <= ref + 1e-6 * abs(ref)
    assert abs(F - ref) <= 1e-6 * abs(ref)
    assert 0 <= float(r.gap) <= TIGHT * abs(F) * 1.0001


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_coordinate_descent_agrees_with_fixed_point(loss):
    _, K, labels, target = small(width=0.4)  # better conditioned: CD converges in few sweeps
    y = targets(loss, labels, target)
    fp = fixed_point(K, y, 1.5, loss=loss, epsilon=EPS, tol=TIGHT)
    cd = coordinate_descent(K, y, 1.5, loss=loss, epsilon=EPS, tol=TIGHT, max_iter=5000)
    assert bool(cd.converged) and bool(fp.converged)
    assert abs(float(cd.primal) - float(fp.primal)) <= 1e-9 * abs(float(fp.primal))
    np.testing.assert_allclose(K @ np.asarray(cd.coef), K @ np.asarray(fp.coef), atol=1e-4)


def test_plain_iteration_2_10_converges_too():
    _, K, labels, _ = small()
    acc = fixed_point(K, labels, 1.0, tol=1e-10)
    plain = fixed_point(K, labels, 1.0, tol=1e-10, accelerate=False, max_iter=200_000)
    assert bool(plain.converged)
    assert abs(float(plain.primal) - float(acc.primal)) <= 1e-8 * float(acc.primal)
    assert int(plain.n_iter) > int(acc.n_iter)


@pytest.mark.parametrize("loss", ["hinge", "squared_hinge", "logistic", "square"])
def test_intercept_is_optimal(loss):
    _, K, labels, target = small()
    y = targets(loss, labels, target)
    r = fixed_point(K, y, 2.0, loss=loss, fit_intercept=True, tol=TIGHT)
    c = np.asarray(r.coef)
    assert abs(c.sum()) <= 1e-9 * np.abs(c).sum()  # optimality in b: Σ c_i = 0
    ref = scipy_optimum(loss, K, y, 2.0, intercept=True)
    F = primal(loss, K, y, 2.0, c, float(r.intercept))
    assert abs(F - ref) <= 1e-6 * abs(ref)


# ---- references from other libraries -----------------------------------------------------------
def test_square_loss_is_the_library_tikhonov_solution():
    rng = np.random.default_rng(1)
    n, d = 20, 3
    X = rng.normal(size=(n, 2))
    K, A = gaussian_gram(X, X, 1.0), random_psd(d, rng)
    Y = rng.normal(size=(n, d))
    lam = 0.01
    ref = np.asarray(separable_solve(jnp.asarray(K), jnp.asarray(A), jnp.asarray(Y), lam))
    op = SeparableOperator(jnp.asarray(K), jnp.asarray(A))
    C = 1.0 / (n * lam)  # K C A + nλ C = Y  ⇔  (Γ + I/C) c = y
    for r in (fixed_point(op, Y, C, loss="square", tol=TIGHT),
              coordinate_descent(op, Y, C, loss="square", tol=TIGHT, max_iter=5000)):
        np.testing.assert_allclose(np.asarray(r.coef), ref, atol=1e-4 * np.abs(ref).max())


def test_hinge_matches_sklearn_svc_decision_values():
    from sklearn.svm import SVC

    _, K, labels, _ = small(n=40, seed=3, width=1.0)
    svc = SVC(kernel="precomputed", C=2.0, tol=1e-10).fit(K, labels)
    r = fixed_point(K, labels, 2.0, loss="hinge", fit_intercept=True, tol=TIGHT)
    ours = K @ np.asarray(r.coef) + float(r.intercept)
    np.testing.assert_allclose(ours, svc.decision_function(K), atol=1e-4)
    dual = np.zeros(len(labels))
    dual[svc.support_] = svc.dual_coef_[0]
    np.testing.assert_allclose(np.asarray(r.coef), dual, atol=1e-4)


def test_epsilon_insensitive_matches_sklearn_svr():
    from sklearn.svm import SVR

    _, K, _, target = small(n=40, seed=4, width=1.0)
    svr = SVR(kernel="precomputed", C=3.0, epsilon=EPS, tol=1e-10).fit(K, target)
    r = fixed_point(K, target, 3.0, loss="epsilon_insensitive", epsilon=EPS, fit_intercept=True, tol=TIGHT)
    np.testing.assert_allclose(K @ np.asarray(r.coef) + float(r.intercept), svr.predict(K), atol=1e-4)


# ---- matrix-valued kernels and structured operators ---------------------------------------------
def test_multioutput_hinge_on_separable_kernel_matches_dense_and_scipy():
    rng = np.random.default_rng(5)
    n, d = 8, 2
    X = rng.normal(size=(n, 2))
    K, A = gaussian_gram(X, X, 0.8), np.array([[1.0, 0.6], [0.6, 1.0]])
    Y = np.where(rng.normal(size=(n, d)) + X[:, :1] > 0, 1.0, -1.0)
    G = np.kron(K, A)  # row-major vec: entry (i, j) ↦ i·d + j
    op = SeparableOperator(jnp.asarray(K), jnp.asarray(A))
    fp = fixed_point(op, Y, 1.0, tol=TIGHT)
    cd_sep = coordinate_descent(SeparableColumns(jnp.asarray(K), jnp.asarray(A)), Y, 1.0, tol=TIGHT)
    cd_dense = coordinate_descent(DenseOperator(jnp.asarray(G), d), Y, 1.0, tol=TIGHT)
    ref = scipy_optimum("hinge", G, Y.reshape(-1), 1.0)
    for r in (fp, cd_sep, cd_dense):
        F = primal("hinge", G, Y.reshape(-1), 1.0, np.asarray(r.coef).reshape(-1))
        assert abs(F - ref) <= 1e-6 * ref
    np.testing.assert_allclose(np.asarray(cd_sep.coef), np.asarray(cd_dense.coef), atol=1e-8)


def test_structured_operator_through_products_and_dense_fallback():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(7, 2))
    op = div_free(X, 1.0)  # (7, 2) div-free field kernel: the fixed point uses products only
    V = rng.normal(size=(7, 2))
    fp = fixed_point(op, V, 2.0, loss="huber", epsilon=0.3, tol=TIGHT)
    cd = coordinate_descent(op, V, 2.0, loss="huber", epsilon=0.3, tol=TIGHT, max_iter=2000)  # dense fallback
    G = np.asarray(op.as_matrix())
    c = np.asarray(fp.coef).reshape(-1)
    F = 2.0 * np_loss("huber", V.reshape(-1), G @ c, eps=0.3).sum() + 0.5 * c @ G @ c
    assert abs(float(fp.primal) - F) <= 1e-10 * F
    assert abs(float(cd.primal) - F) <= 1e-8 * F


def test_linear_kernel_algorithm_2_matches_algorithm_1():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(14, 4))
    y = np.where(X @ np.array([1.0, -1.0, 0.5, 0.0]) + 0.3 * rng.normal(size=14) > 0, 1.0, -1.0)
    lin = coordinate_descent(LinearColumns(jnp.asarray(X), jnp.eye(1)), y, 0.5, tol=TIGHT)
    dense = coordinate_descent(X @ X.T, y, 0.5, tol=TIGHT)
    assert abs(float(lin.primal) - float(dense.primal)) <= 1e-10 * float(dense.primal)
    # the weight vector w = Xᵀc is unique (the primal (2.5) is strongly convex in w)
    np.testing.assert_allclose(X.T @ np.asarray(lin.coef), X.T @ np.asarray(dense.coef), atol=1e-6)


# ---- paths: warm starts over C, folds by masks ---------------------------------------------------
@pytest.mark.parametrize("path, single", [(fixed_point_path, fixed_point), (coordinate_descent_path, coordinate_descent)])
def test_path_equals_independent_solves(path, single):
    _, K, labels, _ = small(width=0.5)
    Cs = np.array([4.0, 0.5, 1.0])  # solved ascending, returned in the given order
    masks = np.ones((2, 14), bool)
    masks[0, :5] = False
    masks[1, 5:10] = False
    r = path(K, labels, Cs, tol=TIGHT, masks=masks)
    assert r.coef.shape == (2, 3, 14, 1)
    for k in range(2):
        for i, C in enumerate(Cs):
            ref = single(K, labels, C, tol=TIGHT, weights=masks[k].astype(float))
            assert abs(float(r.primal[k, i]) - float(ref.primal)) <= 1e-9 * float(ref.primal)
            assert np.all(np.asarray(r.coef[k, i, ~masks[k]]) == 0.0)  # held-out rows stay out


# ---- failures are reported, never silent -----------------------------------------------------
def test_non_convergence_is_reported():
    _, K, labels, _ = small()
    r = fixed_point(K, labels, 100.0, max_iter=3, tol=1e-12)
    assert not bool(r.converged) and int(r.n_iter) == 3 and float(r.gap) > 0


def test_divergence_raises():
    _, K, labels, _ = small()
    L = np.linalg.eigvalsh(K)[-1]
    with pytest.raises(DivergenceError, match="alpha"):
        fixed_point(K, labels, 1.0, loss="square", alpha=50.0 / L, accelerate=False, max_iter=5000)


@pytest.mark.parametrize("bad, error, match", [
    (dict(Y=np.array([0.0, 1.0] * 7)), LabelError, "-1 / \\+1"),
    (dict(C=0.0), ParameterError, "C must be positive"),
    (dict(C=-1.0), ParameterError, "C must be positive"),
    (dict(epsilon=-0.1, loss="epsilon_insensitive"), ParameterError, "epsilon"),
    (dict(epsilon=0.0, loss="huber"), ParameterError, "epsilon"),
    (dict(loss="hinge2"), ParameterError, "loss must be one of"),
    (dict(Y=np.ones(5)), ShapeError, "operator's shape"),
    (dict(Y=np.r_[np.nan, np.ones(13)], loss="square"), NonFiniteError, "Y"),
    (dict(tol=0.0), ParameterError, "tol"),
    (dict(max_iter=0), ParameterError, "max_iter"),
])
@pytest.mark.parametrize("solver", [fixed_point, coordinate_descent])
def test_bad_input_raises_before_tracing(solver, bad, error, match):
    _, K, labels, _ = small()
    kwargs = {"Y": labels, "C": 1.0, **bad}
    with pytest.raises(error, match=match):
        solver(K, kwargs.pop("Y"), kwargs.pop("C"), **kwargs)


def test_bad_operator_masks_and_intercept():
    _, K, labels, _ = small()
    with pytest.raises(ShapeError, match="square"):
        fixed_point(K[:, :5], labels)
    with pytest.raises(ParameterError, match="GramOperator"):
        fixed_point("K", labels)
    with pytest.raises(ParameterError, match="masks"):
        fixed_point_path(K, labels, [1.0], masks=np.ones((2, 3), bool))
    with pytest.raises(ParameterError, match="intercept"):
        coordinate_descent(K, labels, fit_intercept=True)
