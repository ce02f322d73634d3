"""RLS2 ([Din11] ch. 3–4) against independent references: NumPy loops and closed forms, scipy's SLSQP,
scikit-learn's KernelRidge, Lasso and GaussianProcessRegressor."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from jaxmtl.datasets._uci import load_uci, uci_names  # noqa: E402
from jaxmtl.errors import LabelError, NonFiniteError, NotFittedError, ParameterError, ShapeError  # noqa: E402
from jaxmtl.kernels import Gaussian, Polynomial  # noqa: E402
from jaxmtl.mkl.bayes import degrees_of_freedom, plot_profiles, predictive  # noqa: E402
from jaxmtl.mkl.dictionaries import dictionary, linear_dictionary, standard_dictionary  # noqa: E402
from jaxmtl.mkl.rls2 import (  # noqa: E402
    initial_kernel,
    kkt_conditions,
    linear_coefficients,
    rls2_path,
    rls2_solve,
    rls2_step,
)
from jaxmtl.mkl.simplex import simplex_qp  # noqa: E402
from jaxmtl.models.rls2 import RLS2Classifier, RLS2Regressor  # noqa: E402

TIGHT = dict(tol=1e-12, max_iter=20_000, smo_tol=1e-14)


def numpy_grams(D, X, scale):
    out = []
    for k, b in enumerate(D):
        Z = X if b.columns is None else X[:, list(b.columns)]
        out.append(scale[k] * np.asarray(b.kernel(Z, Z)))
    return np.stack(out)


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] ** 2 + 0.1 * rng.normal(size=30)
    y = y - y.mean()
    D = standard_dictionary(2)
    s = D.scaling(X)
    return X, y, D, s, D.stack(X, scale=s), numpy_grams(D, X, s)


def objective(Ks, y, lam, d, c):  # (4.1) in NumPy
    K = np.einsum("k,kij->ij", d, Ks)
    return np.sum((y - K @ c) ** 2) / (2 * lam) + 0.5 * c @ K @ c


# ---- dictionaries ----
def test_standard_dictionary_sizes_match_table_4_2():
    assert [len(standard_dictionary(p)) for p in (13, 8, 33, 60)] == [182, 117, 442, 793]


def test_stacks_equal_numpy_loop_dense_and_lazy(problem):
    X, _, D, s, st, Ks = problem
    np.testing.assert_allclose(np.asarray(st.dense), Ks, atol=1e-13)
    lazy = D.stack(X, scale=s, store="lazy")
    C = np.random.default_rng(1).normal(size=(30, 2))
    np.testing.assert_allclose(np.asarray(lazy.products(C)), np.einsum("kij,jt->kit", Ks, C), atol=1e-12)
    d = np.random.default_rng(2).random(len(D))
    np.testing.assert_allclose(np.asarray(lazy.combine(d)), np.einsum("k,kij->ij", d, Ks), atol=1e-12)
    np.testing.assert_allclose(np.trace(Ks, axis1=1, axis2=2), 1.0, atol=1e-12)  # rule (4.14)


def test_dense_combine_of_a_sparse_d_reads_its_support(problem):
    _, _, D, _, st, Ks = problem
    d = np.zeros(len(D))
    d[[0, 7, 30]] = [0.5, 0.2, 0.3]
    np.testing.assert_allclose(np.asarray(st.combine(jnp.asarray(d))), np.einsum("k,kij->ij", d, Ks), atol=1e-13)


def test_factorized_products_equal_dense_and_ranks_are_exact(problem):
    X, _, D, s, st, Ks = problem
    fac = st.factorize(1e-13)
    # (F, F): a bucket of factors of width r_b; (K, None): kernels of high rank kept dense (width n)
    widths = np.concatenate([np.full(F.shape[0], F.shape[2] if G is not None else F.shape[1]) for F, G in fac.factors])
    widths = widths[list(fac.bucket_order)]
    names = D.names()
    one_feature_poly = [i for i, nm in enumerate(names) if nm.startswith("Polynomial") and "[x" in nm]
    rank = np.array([np.linalg.matrix_rank(Ks[i], tol=1e-10 * np.trace(Ks[i])) for i in one_feature_poly])
    np.testing.assert_array_equal(rank, [2, 3, 4, 2, 3, 4])  # (1 + x x')^q on one feature: rank q + 1
    assert np.all(widths[one_feature_poly] >= rank) and widths.min() >= 1
    assert any(G is None for _, G in fac.factors)  # the all-feature Gaussian of width 0.5 stays dense
    C = np.random.default_rng(3).normal(size=(30, 2))
    np.testing.assert_allclose(np.asarray(fac.products(C)), np.einsum("kij,jt->kit", Ks, C), atol=1e-10)
    rows, cols = np.arange(0, 30, 2), np.arange(1, 30, 3)
    sub = fac.take(rows, cols)
    np.testing.assert_allclose(np.asarray(sub.products(C[cols])), np.einsum("kij,jt->kit", Ks[:, rows][:, :, cols],
                                                                             C[cols]), atol=1e-10)
    with pytest.raises(ParameterError, match="tol"):
        st.factorize(0.0)
    with pytest.raises(ShapeError, match="square"):
        st.take(rows, cols).factorize()


@pytest.mark.slow
def test_path_on_factorized_stack_equals_dense_path(problem):
    _, y, _, _, st, _ = problem
    lams = np.geomspace(10.0, 1e-3, 6)
    p_dense, p_fac = rls2_path(st, y[:, None], lams, **TIGHT), rls2_path(st.factorize(1e-13), y[:, None], lams, **TIGHT)
    np.testing.assert_allclose(np.asarray(p_fac.d), np.asarray(p_dense.d), atol=1e-7)


def test_scalings_follow_section_4_4(problem):
    X = problem[0]
    np.testing.assert_allclose(linear_dictionary(2).scaling(X), 1 / np.sum(X**2, 0))  # (4.12)
    D = dictionary([Polynomial(2)])
    K = np.asarray(Polynomial(2)(X, X))
    np.testing.assert_allclose(D.scaling(X, "centered_trace"), [1 / (np.trace(K) - K.mean() * 30)])
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    ref = 0.0
    for c in (1, -1):
        idx = np.flatnonzero(y == c)
        ref += np.mean([K[i, i] - np.mean(K[i, idx]) for i in idx])
    np.testing.assert_allclose(D.scaling(X, "fisher", y=y), [1 / ref])


def test_simplex_qp_matches_slsqp():
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    V = rng.normal(size=(12, 6))
    u = rng.normal(size=12)
    Q, b = V.T @ V, V.T @ u
    d = np.asarray(simplex_qp(jnp.asarray(Q), jnp.asarray(b), jnp.ones(6) / 6, tol=1e-14))
    ref = minimize(lambda x: np.sum((V @ x - u) ** 2), np.ones(6) / 6, method="SLSQP", bounds=[(0, 1)] * 6,
                   constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}], options={"ftol": 1e-15}).x
    np.testing.assert_allclose(d, ref, atol=1e-6)
    assert abs(d.sum() - 1) < 1e-14 and d.min() >= 0


# ---- Algorithm 3 ----
def test_start_rule_is_lemma_6_the_kernel_of_largest_alignment(problem):
    """Lemma 6: as λ → ∞ the solution is d = e_i, i = argmax_k yᵀ𝐊ᵏy; Algorithm 3 starts there."""
    X, y, D, s, st, Ks = problem
    rng = np.random.default_rng(3)
    Y = np.stack([y, rng.normal(size=30)], 1)
    B = rng.normal(size=(2, 2))
    A = B @ B.T + 0.1 * np.eye(2)
    w = (rng.random(30) < 0.7).astype(float)
    for Yk, Ak, wk in ((y[:, None], None, None), (Y, A, None), (Y, A, w)):
        Yw = Yk * (1.0 if wk is None else wk[:, None])
        align = [np.trace(Yw.T @ K @ Yw @ (np.eye(Yk.shape[1]) if Ak is None else Ak)) for K in Ks]  # loop reference
        i = int(np.argmax(align))
        assert align[i] > np.sort(align)[-2] and int(np.argmin(align)) != i  # a unique, informative maximiser
        np.testing.assert_array_equal(np.asarray(initial_kernel(st, jnp.asarray(Yk), Ak, wk)), np.eye(len(Ks))[i])
    # the limit itself: at a very large λ, Algorithm 3 stays at the start and c → y/λ
    lam = 1e8
    r = rls2_solve(st, y[:, None], lam, **TIGHT)
    i = int(np.argmax(np.einsum("i,kij,j->k", y, Ks, y)))
    np.testing.assert_array_equal(np.asarray(r.d), np.eye(len(Ks))[i])
    np.testing.assert_allclose(np.asarray(r.C)[:, 0] * lam, y, atol=1e-6 * np.abs(y).max())


def test_each_alternation_does_not_increase_the_objective(problem):
    _, y, _, _, st, Ks = problem
    lam = 0.05
    step = jax.jit(lambda d: rls2_step(st, jnp.asarray(y)[:, None], lam, d, smo_tol=1e-14))
    d = np.ones(len(Ks)) / len(Ks)
    values = []
    for _ in range(8):
        d_new, C, _ = step(jnp.asarray(d))
        c = np.asarray(C)[:, 0]
        np.testing.assert_allclose(c, np.linalg.solve(np.einsum("k,kij->ij", d, Ks) + lam * np.eye(30), y), atol=1e-9)
        values += [objective(Ks, y, lam, d, c), objective(Ks, y, lam, np.asarray(d_new), c)]
        d = np.asarray(d_new)
    assert np.all(np.diff(values) <= 1e-10 * abs(values[0]))
    assert values[-1] < values[0]


def test_kkt_conditions_hold_at_convergence(problem):
    _, y, _, _, st, Ks = problem
    lam = 0.05
    r = rls2_solve(st, y[:, None], lam, **TIGHT)
    d, c = np.asarray(r.d), np.asarray(r.C)[:, 0]
    kkt = kkt_conditions(st, y[:, None], lam, r.d, r.C)
    assert kkt["stationarity"] < 1e-10 and kkt["simplex"] < 1e-12 and kkt["negativity"] == 0
    assert kkt["alignment_gap"] < 1e-6
    align = np.einsum("i,kij,j->k", c, Ks, c)  # independent: gradient −aₖ/2 of (4.3)
    assert np.all(align[d > 0] >= align.max() * (1 - 1e-6)) and 0 < np.count_nonzero(d) < len(d)


def test_one_basis_kernel_is_kernel_ridge_regression(problem):
    from sklearn.kernel_ridge import KernelRidge

    X, y, *_ = problem
    D = dictionary([Gaussian(0.8)])
    K = np.asarray(Gaussian(0.8)(X, X))
    r = rls2_solve(D.stack(X), y[:, None], 0.3, **TIGHT)
    ref = KernelRidge(alpha=0.3, kernel="precomputed").fit(K, y)
    np.testing.assert_allclose(np.asarray(r.C)[:, 0], ref.dual_coef_, atol=1e-10)
    assert float(r.d[0]) == 1.0


def test_linear_rls2_is_the_weighted_lasso_of_scikit_learn():
    from sklearn.linear_model import Lasso

    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 6)) * np.array([1, 3, 0.5, 1, 2, 1])
    y = X[:, 0] - 0.5 * X[:, 1] + 0.2 * rng.normal(size=40)
    y = y - y.mean()
    D = linear_dictionary(6)
    s = D.scaling(X)
    lam = 0.2
    r = rls2_solve(D.stack(X, scale=s), y[:, None], lam, **TIGHT)
    w = linear_coefficients(X, s, r.d, r.C)[:, 0]
    tau = np.sum(np.abs(w) / np.sqrt(s))  # (4.9): the squared ℓ1 penalty's subgradient is τ·∂‖·‖₁
    ref = Lasso(alpha=lam * tau / 40, fit_intercept=False, tol=1e-14, max_iter=10**6).fit(X * np.sqrt(s), y)
    np.testing.assert_allclose(w, ref.coef_ * np.sqrt(s), atol=1e-6)
    sel = np.asarray(r.d) > 0  # Lemma 8 (4.10): ridge on the selected, rescaled features
    Xt = X[:, sel] * (s * np.asarray(r.d))[sel]
    wt = np.linalg.solve(Xt.T @ Xt + lam * np.diag((s * np.asarray(r.d))[sel]), Xt.T @ y)
    np.testing.assert_allclose(Xt @ wt, X @ w, atol=1e-8)


def test_warm_started_path_equals_cold_starts(problem):
    _, y, _, _, st, _ = problem
    lams = np.geomspace(10.0, 1e-3, 5)
    p = rls2_path(st, y[:, None], lams, **TIGHT)
    for i, lam in enumerate(np.asarray(p.lambdas)):
        cold = rls2_solve(st, y[:, None], lam, **TIGHT)
        np.testing.assert_allclose(np.asarray(p.C[i]), np.asarray(cold.C), atol=1e-6 * np.abs(cold.C).max())
    assert np.all(np.diff(np.asarray(p.lambdas)) < 0)


def test_multi_output_kernels_k_kron_a_against_dense_kronecker(problem):
    X, y, D, s, st, Ks = problem
    Y = np.stack([y, np.cos(X[:, 1])], 1)
    A = np.array([[1.0, 0.5], [0.5, 2.0]])
    lam = 0.1
    r = rls2_solve(st, Y, lam, A=A, **TIGHT)
    d = np.asarray(r.d)
    G = np.kron(np.einsum("k,kij->ij", d, Ks), A)  # row-major vec: Γ = K ⊗ A
    np.testing.assert_allclose(np.asarray(r.C).ravel(), np.linalg.solve(G + lam * np.eye(60), Y.ravel()), atol=1e-9)
    c = np.asarray(r.C).ravel()
    align = np.array([c @ np.kron(K, A) @ c for K in Ks])
    assert np.all(align[d > 0] >= align.max() * (1 - 1e-6))


# ---- Bayesian view (§4.2) and degrees of freedom (4.11) ----
def test_predictive_variance_matches_gaussian_process_regression(problem):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF

    X, y, *_ = problem
    D = dictionary([Gaussian(0.8)])
    lam = 0.2
    Xn = np.linspace(-2, 2, 7)[:, None] * np.ones((1, 2))
    r = rls2_solve(D.stack(X), y[:, None], lam, **TIGHT)
    post = predictive(D.stack(X), D.stack(Xn, X), D.diagonal(Xn), r.d, y[:, None], lam)
    gp = GaussianProcessRegressor(RBF(0.8), alpha=lam, optimizer=None).fit(X, y)
    mean, sd = gp.predict(Xn, return_std=True)
    np.testing.assert_allclose(np.asarray(post.mean)[:, 0], mean, atol=1e-9)
    np.testing.assert_allclose(np.sqrt(np.asarray(post.var_f))[:, 0], sd, atol=1e-7)
    np.testing.assert_allclose(np.asarray(post.var_y) - np.asarray(post.var_f), lam)


def test_degrees_of_freedom_equal_formula_4_11():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(25, 4))
    y = X[:, 0] + 0.1 * rng.normal(size=25)
    D = linear_dictionary(4)
    s = D.scaling(X)
    st = D.stack(X, scale=s)
    lam = 0.05
    r = rls2_solve(st, y[:, None], lam, **TIGHT)
    g = s * np.asarray(r.d)
    sel = g > 0
    Xt = X[:, sel] * g[sel]
    ref = np.trace(Xt @ np.linalg.solve(Xt.T @ Xt + lam * np.diag(g[sel]), Xt.T))
    assert abs(float(degrees_of_freedom(st, r.d, lam)) - ref) < 1e-9
    assert 0 <= ref <= 4


def test_plot_profiles_draws_one_line_per_selected_coefficient():
    import matplotlib

    matplotlib.use("Agg")
    ax = plot_profiles([0.5, 1.0, 2.0], np.array([[0, 0.1], [0, 0.3], [0.2, 0.5]]), names=["a", "b"], chosen_df=1.0)
    assert len(ax.get_lines()) == 2 + 2  # two profiles, the zero line and the chosen model


# ---- estimators ----
# The regressor's fits below share their shapes (40 rows of 2 features, 6 λ, 3 folds): the module
# compiles the estimator's path once; a test on other shapes compiles it anew.
def test_regressor_selects_lambda_by_cross_validation_and_predicts():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(40, 2))
    y = 3 + np.sin(2 * X[:, 0]) + 0.05 * rng.normal(size=40)
    m = RLS2Regressor(n_lambdas=6, cv=3, single_kernels=False).fit(X, y)
    assert m.fit(X, y) is m and m.n_features_in_ == 2 and m.d_.shape == (39,)
    assert abs(m.d_.sum() - 1) < 1e-9 and m.n_kernels_ == np.count_nonzero(m.d_)
    assert m.path_["best_index"] == int(np.argmin(m.path_["cv_score"]))
    assert m.lambda_ == m.path_["lambdas"][m.path_["best_index"]]
    assert m.n_iter_ == m.path_["n_iter"][m.path_["best_index"]] >= 1  # scikit-learn's n_iter_ of max_iter
    # independent prediction: the dictionary's kernels evaluated in NumPy on standardised inputs
    Xs = (X - X.mean(0)) / X.std(0)
    Kx = np.einsum("k,kij->ij", m.d_, numpy_grams(m.dictionary_, Xs, m.scale_))
    np.testing.assert_allclose(m.predict(X), Kx @ m.dual_coef_[:, 0] + y.mean(), atol=1e-8)
    assert m.score(X, y) > 0.95
    mean, sd = m.predict(X[:3], return_std=True)
    np.testing.assert_allclose(mean, m.predict(X[:3]))
    assert np.all(sd >= np.sqrt(m.lambda_))


def single_kernel_cv_reference(m, X, y, k, rows=None):
    """CV error (n_kernels_on_all_features, L) of scikit-learn's KernelRidge with each all-feature basis kernel
    alone, fold by fold and λ by λ (the folds rebuilt from ``random_state``), and those kernels' indices;
    on the subset ``rows`` of the rows (inputs standardised and Grams scaled on all rows, as the estimator)."""
    from sklearn.kernel_ridge import KernelRidge

    Ks = numpy_grams(m.dictionary_, (X - X.mean(0)) / X.std(0), m.scale_)
    if rows is not None:
        Ks, y = Ks[:, rows][:, :, rows], y[rows]
    n = len(y)
    fold = np.random.default_rng(m.random_state).permutation(np.arange(n) % k)
    idx = [j for j, b in enumerate(m.dictionary_) if b.columns is None]
    out = np.zeros((len(idx), len(m.path_["lambdas"])))
    for a, j in enumerate(idx):
        for i, lam in enumerate(m.path_["lambdas"]):
            for f in range(k):
                tr, te = fold != f, fold == f
                mu = y[tr].mean()
                krr = KernelRidge(alpha=lam, kernel="precomputed").fit(Ks[j][np.ix_(tr, tr)], y[tr] - mu)
                out[a, i] += np.mean((krr.predict(Ks[j][np.ix_(te, tr)]) + mu - y[te]) ** 2) / k
    return out, idx, Ks


def test_single_kernel_selection_equals_a_kernel_ridge_loop():
    """The dictionary's kernels on all features, each alone, cross-validated on the same folds and λ grid
    (scikit-learn KernelRidge loop as reference); one of them replaces the RLS2 path when its CV error is
    lower — here a smooth function of both features, where the path overfits its per-feature weights."""
    from sklearn.kernel_ridge import KernelRidge

    rng = np.random.default_rng(8)
    X = rng.normal(size=(40, 2))
    y = np.sin(X[:, 0] + X[:, 1]) + 0.3 * rng.normal(size=40)
    m = RLS2Regressor(n_lambdas=6, lambda_range=(1e-3, 1e2), cv=3).fit(X, y)
    ref, idx, Ks = single_kernel_cv_reference(m, X, y, 3)
    np.testing.assert_allclose(m.single_kernel_cv_, ref, rtol=1e-6)
    a, i = np.unravel_index(np.argmin(ref), ref.shape)
    assert ref[a, i] < m.path_["cv_score"].min()  # the single kernel wins on this set
    assert m.selected_kernel_ == m.kernel_names_[idx[a]] and m.lambda_ == m.path_["lambdas"][i]
    np.testing.assert_array_equal(m.d_, np.eye(len(m.d_))[idx[a]])
    assert m.n_iter_ == 1  # one solve with the weights fixed
    krr = KernelRidge(alpha=m.lambda_, kernel="precomputed").fit(Ks[idx[a]], y - y.mean())
    np.testing.assert_allclose(m.predict(X), krr.predict(Ks[idx[a]]) + y.mean(), atol=1e-8)
    off = RLS2Regressor(n_lambdas=6, lambda_range=(1e-3, 1e2), cv=3, single_kernels=False).fit(X, y)
    assert off.selected_kernel_ is None and off.single_kernel_cv_ is None and off.n_kernels_ > 1
    # where one feature carries the signal, the path's per-feature kernels win and are kept
    y1 = np.sin(2 * X[:, 0]) + 0.05 * rng.normal(size=40)
    m1 = RLS2Regressor(n_lambdas=6, lambda_range=(1e-3, 1e2), cv=3).fit(X, y1)
    assert m1.selected_kernel_ is None and m1.path_["cv_score"].min() < m1.single_kernel_cv_.min()


def test_single_kernels_screened_on_a_subsample_equal_kernel_ridge_loops(monkeypatch):
    """Above SINGLE_KERNEL_SUBSAMPLE rows the all-feature kernels are screened on a random subsample (its own
    folds): those scores equal a KernelRidge loop on the same subsample; the SINGLE_KERNEL_FINALISTS best are
    then cross-validated on all rows (equal to the loop on all rows), and the selection is the brute-force one."""
    import jaxmtl.models.rls2 as rls2_models
    from sklearn.kernel_ridge import KernelRidge

    monkeypatch.setattr(rls2_models, "SINGLE_KERNEL_SUBSAMPLE", 24)
    rng = np.random.default_rng(9)
    X = rng.normal(size=(40, 2))
    y = np.sin(X[:, 0] + X[:, 1]) + 0.3 * rng.normal(size=40)
    m = RLS2Regressor(n_lambdas=6, lambda_range=(1e-3, 1e2), cv=3, random_state=4).fit(X, y)
    rows = m.single_kernel_screen_rows_
    np.testing.assert_array_equal(rows, np.sort(np.random.default_rng(4).choice(40, 24, replace=False)))
    ref_sub, idx, _ = single_kernel_cv_reference(m, X, y, 3, rows)
    np.testing.assert_allclose(m.single_kernel_screen_cv_, ref_sub, rtol=1e-6)
    ref_all, _, Ks = single_kernel_cv_reference(m, X, y, 3)
    finalists = np.sort(np.argsort(ref_sub.min(1))[:rls2_models.SINGLE_KERNEL_FINALISTS])
    np.testing.assert_allclose(m.single_kernel_cv_[finalists], ref_all[finalists], rtol=1e-6)
    assert np.isnan(np.delete(m.single_kernel_cv_, finalists, axis=0)).all()
    a, i = np.unravel_index(np.argmin(ref_all[finalists]), (len(finalists), len(m.path_["lambdas"])))
    if ref_all[finalists[a], i] < m.path_["cv_score"].min():  # brute force: the best finalist, refitted on all rows
        k = idx[finalists[a]]
        assert m.selected_kernel_ == m.kernel_names_[k] and m.lambda_ == m.path_["lambdas"][i]
        krr = KernelRidge(alpha=m.lambda_, kernel="precomputed").fit(Ks[k], y - y.mean())
        np.testing.assert_allclose(m.predict(X), krr.predict(Ks[k]) + y.mean(), atol=1e-8)
    else:
        assert m.selected_kernel_ is None
    assert m.selected_kernel_ is not None  # on this set a single kernel wins: the branch above is the one tested


def test_fold_paths_on_their_own_rows_equal_paths_on_the_fold_alone():
    """The k-fold score of the RLS2 path (each fold's c-steps factor its own rows) equals rls2_path run on the
    fold's training rows alone (the sub-stack of those rows, mean of those outputs) and predicted at the rest."""
    rng = np.random.default_rng(10)
    X = rng.normal(size=(40, 2))
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=40)
    m = RLS2Regressor(n_lambdas=6, lambda_range=(1e-3, 1e2), cv=3, single_kernels=False).fit(X, y)
    Xs = (X - X.mean(0)) / X.std(0)
    st = m.dictionary_.stack(Xs, scale=m.scale_)
    fold = np.random.default_rng(0).permutation(np.arange(40) % 3)
    ref = np.zeros(6)
    for f in range(3):
        tr, te = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
        mu = y[tr].mean()
        p = rls2_path(st.take(tr, tr), (y[tr] - mu)[:, None], m.path_["lambdas"])
        F = np.einsum("lk,kij,ljt->li", np.asarray(p.d), np.asarray(st.take(te, tr).matrices()), np.asarray(p.C))
        ref += np.mean((F + mu - y[te]) ** 2, axis=1) / 3
    np.testing.assert_allclose(m.path_["cv_score"], ref, rtol=1e-6)


@pytest.mark.slow  # two more compilations of the fold-vmapped path (~30 s on 2 busy cores)
def test_classifier_binary_and_one_versus_all():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(36, 2))
    y = np.where(X[:, 0] + X[:, 1] > 0, "yes", "no")
    c = RLS2Classifier(n_lambdas=5, cv=3).fit(X, y)
    assert list(c.classes_) == ["no", "yes"] and c.predict(X).dtype == y.dtype
    np.testing.assert_array_equal(c.predict(X), np.where(c.decision_function(X) >= 0, "yes", "no"))
    assert c.score(X, y) > 0.9
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    c3 = RLS2Classifier(n_lambdas=5, cv=3).fit(X, y3)
    F = c3.decision_function(X)
    assert c3.d_.shape == (3, 39) and F.shape == (36, 3)
    np.testing.assert_array_equal(c3.predict(X), np.argmax(F, 1))
    assert c3.score(X, y3) > 0.8


def test_bad_input_raises_named_errors_before_fitting():
    X, y = np.random.default_rng(8).normal(size=(10, 2)), np.arange(10.0)
    with pytest.raises(ParameterError, match="lam"):
        RLS2Regressor(lam=-1).fit(X, y)
    with pytest.raises(ParameterError, match="kernels"):
        RLS2Regressor(kernels="cubic").fit(X, y)
    with pytest.raises(ParameterError, match="store"):
        RLS2Regressor(store="disk").fit(X, y)
    with pytest.raises(ParameterError, match="cv"):
        RLS2Regressor(cv=11).fit(X, y)
    with pytest.raises(ParameterError, match="lambda_range"):
        RLS2Regressor(lambda_range=(1.0, 0.1)).fit(X, y)
    with pytest.raises(ShapeError, match="column 5"):
        RLS2Regressor(kernels=[(Gaussian(1.0), 5)]).fit(X, y)
    with pytest.raises(NonFiniteError):
        RLS2Regressor().fit(np.where(X > 1, np.nan, X), y)
    with pytest.raises(ShapeError, match="rows"):
        RLS2Regressor().fit(X, y[:5])
    with pytest.raises(LabelError, match="single class"):
        RLS2Classifier().fit(X, np.ones(10))
    with pytest.raises(NotFittedError):
        RLS2Regressor().predict(X)
    with pytest.raises(ParameterError, match="scale"):
        standard_dictionary(2).stack(X, scale=np.ones(3))
    with pytest.raises(ParameterError, match="constant"):
        linear_dictionary(2).scaling(np.zeros((4, 2)))


def test_predict_checks_the_number_of_features():
    X, y = np.random.default_rng(9).normal(size=(12, 2)), np.arange(12.0)
    m = RLS2Regressor(kernels="linear", lam=0.1).fit(X, y)
    with pytest.raises(ShapeError, match="features"):
        m.predict(np.ones((3, 3)))


# ---- bundled data ----
def test_uci_loaders_give_the_feature_counts_of_table_4_2():
    shapes = {n: load_uci(n).X.shape for n in uci_names()}
    assert shapes == {"heart": (303, 13), "housing": (506, 13), "ionosphere": (351, 33), "pima": (768, 8),
                      "sonar": (208, 60)}
    assert set(np.unique(load_uci("sonar").y)) == {-1.0, 1.0}
    assert abs(load_uci("housing").y.mean() - 22.5328) < 1e-3  # the Boston housing median values
    with pytest.raises(ParameterError, match="valid names"):
        load_uci("autompg")


def test_classifier_fits_float32_inputs_under_x64():
    """float32 X with x64 on: the coded targets follow X's precision (a float64 Y had the path's loop
    carry change dtype), and the fit agrees with the one on the same inputs in float64."""
    rng = np.random.default_rng(9)
    X = rng.normal(size=(30, 2)).astype(np.float32)
    y = np.where(X[:, 0] - X[:, 1] > 0, "yes", "no")
    kw = {"kernels": "linear", "n_lambdas": 3, "cv": 3}
    c32 = RLS2Classifier(**kw).fit(X, y)
    c64 = RLS2Classifier(**kw).fit(X.astype(np.float64), y)
    np.testing.assert_array_equal(c32.predict(X), c64.predict(X))
    F32, F64 = c32.decision_function(X), c64.decision_function(X)
    # the path stops at tol=1e-2 (Algorithm 3's δ), so the two precisions agree to that order, not to roundoff
    assert np.max(np.abs(F32 - F64)) < 0.05 * np.max(np.abs(F64))


@pytest.mark.parametrize("rule", ["trace", "centered_trace", "fisher"])
def test_scaling_with_row_weights_equals_the_rule_on_those_rows_alone(rule):
    """``weights`` (a size bucket's padding at weight 0) gives the scalings of the rows of weight 1."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(12, 3))
    y = np.where(np.arange(12) % 2 == 0, 1.0, -1.0)
    w = np.r_[np.ones(9), np.zeros(3)]
    D = standard_dictionary(3)
    padded = np.r_[X[:9], np.zeros((3, 3))]
    np.testing.assert_allclose(D.scaling(padded, rule, y=y, weights=w), D.scaling(X[:9], rule, y=y[:9]), rtol=1e-5)
    with pytest.raises(ParameterError, match="weights must hold 12 values in"):
        D.scaling(X, rule, y=y, weights=np.full(12, 0.5))
