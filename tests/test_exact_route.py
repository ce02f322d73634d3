"""The exact route of the multi-task and vector-field estimators (jaxmtl.paths.dense).

References: dense NumPy solves and explicit refits on the Gram built entry by entry from the
paper's formulas (tests/test_multitask.py), and the matrix-free path (jaxmtl.paths.scan) run at
the same step size.
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from jaxmtl import Gaussian, MultiTaskRegressor, VectorFieldRegressor
from jaxmtl.datasets import grid_2d, make_multitask_toy, vector_field_1
from jaxmtl.errors import GridEdgeWarning, ParameterError
from jaxmtl.filters import Landweber, NuMethod, Tikhonov
from jaxmtl.models import _matrix_free
from jaxmtl.models._grid_search import _warn_on_edges
from jaxmtl.models.fields import _build_div_curl
from jaxmtl.models.multitask import _build, _padded_task_data
from jaxmtl.paths.dense import dense_coefficients, dense_grid_losses
from jaxmtl.paths.scan import path_scan
from test_multitask import field_gram, multitask_gram


def small_multitask(n_per_task=6):
    d = make_multitask_toy(n_per_task, 0)
    x = (d.x - d.x.mean()) / d.x.std()
    return x, d.y - d.y.mean(), d.tasks


def small_field(n=14):
    X = grid_2d(6)
    V, _, _ = vector_field_1(X, 0.4)
    idx = np.random.default_rng(0).choice(len(X), n, replace=False)
    return X[idx], V[idx]


def operators():
    """(operator, dense Gram, outputs (n, d)) of a multi-task and of a div/curl problem."""
    x, y, t = small_multitask()
    op_t = _build(Gaussian(0.7), jnp.asarray(0.3), _padded_task_data(np.asarray(x), np.asarray(t))(None, len(t)))
    X, V = small_field()
    op_f = _build_div_curl(Gaussian(0.9), jnp.asarray(0.4), jnp.asarray(X))
    return [(op_t, multitask_gram(x, t, x, t, 0.7, 0.3), y[:, None]),
            (op_f, field_gram(X, X, 0.9, 0.4), V)]


@pytest.mark.parametrize("case", [0, 1], ids=["multitask", "field"])
@pytest.mark.parametrize("filt", [NuMethod(), Landweber()], ids=["nu_method", "landweber"])
def test_exact_coefficients_equal_the_matrix_free_path_at_the_same_step(case, filt):
    op, G, Y = operators()[case]
    n = Y.shape[0]
    tau = n / np.linalg.eigvalsh(G)[-1]  # the exact route's step 1/σ_max(G/n)
    for steps in (1, 7, 40):
        free = path_scan(op, jnp.asarray(Y), filt, steps, tau=tau).coef
        exact = dense_coefficients(op, jnp.asarray(Y), filt, steps)
        np.testing.assert_allclose(exact, free, rtol=1e-8, atol=1e-10 * np.abs(free).max())


@pytest.mark.parametrize("case", [0, 1], ids=["multitask", "field"])
def test_exact_tikhonov_equals_a_dense_solve(case):
    op, G, Y = operators()[case]
    n, d = Y.shape
    lam = 1e-3
    gbar = np.mean(np.diag(G))  # λ is relative to the Gram's mean diagonal
    ref = np.linalg.solve(G + n * lam * gbar * np.eye(n * d), Y.reshape(-1)).reshape(n, d)
    np.testing.assert_allclose(dense_coefficients(op, jnp.asarray(Y), Tikhonov(), lam), ref, rtol=1e-8)


def test_exact_holdout_losses_equal_the_matrix_free_path_on_the_training_rows():
    """dense_grid_losses (fold's Gram eigendecomposed) against path_scan masked to the same fold
    and run at the same step size, every step."""
    X, V = small_field(16)
    train = np.arange(16) % 4 != 0
    Xj, Vj = jnp.asarray(X), jnp.asarray(V)
    gammas, T = jnp.asarray([0.2, 0.7]), 25
    got = dense_grid_losses(_build_div_curl, Gaussian(jnp.asarray([0.8])), gammas, Xj, Vj, NuMethod(),
                            jnp.arange(1, T + 1), "kfold", jnp.asarray(train[None]), (12, 4))
    held = (~train).astype(float) / (~train).sum()
    for ig, g in enumerate(np.asarray(gammas)):
        op = _build_div_curl(Gaussian(0.8), jnp.asarray(g), Xj)
        G = field_gram(X, X, 0.8, g)
        m2 = np.repeat(train, 2)
        tau = train.sum() / np.linalg.eigvalsh(G[np.ix_(m2, m2)])[-1]
        ref = path_scan(op, Vj, NuMethod(), T, op, Vj, jnp.asarray(held), tau, jnp.asarray(train)).losses
        np.testing.assert_allclose(got[0, ig], ref, rtol=1e-8)


def test_multitask_tikhonov_loo_equals_brute_force_refits_and_predictions_equal_a_solve():
    x, y, t = small_multitask()
    lams = [1e-1, 1e-2, 1e-3]
    model = MultiTaskRegressor(kernel=Gaussian(0.7), omegas=[0.0, 0.6], filter="tikhonov", lambdas=lams,
                               selection="loo", fit_intercept=False).fit(x, y, t)
    assert model.route_ == "exact"
    n = len(y)
    ref = np.empty((2, 3))
    for io, om in enumerate([0.0, 0.6]):
        Q = multitask_gram(x, t, x, t, 0.7, om)
        for il, lam in enumerate(sorted(lams, reverse=True)):
            errs = []
            for i in range(n):
                keep = np.arange(n) != i
                c = np.linalg.solve(Q[np.ix_(keep, keep)] + n * lam * np.eye(n - 1), y[keep])
                errs.append((y[i] - Q[i, keep] @ c) ** 2)
            ref[io, il] = np.mean(errs)
    np.testing.assert_allclose(model.cv_scores_[0], ref, rtol=1e-7)
    io, il = np.unravel_index(int(np.argmin(ref)), ref.shape)
    om, lam = [0.0, 0.6][io], sorted(lams, reverse=True)[il]
    assert model.best_params_["omega"] == om and model.best_params_["param"] == lam
    Q = multitask_gram(x, t, x, t, 0.7, om)
    c = np.linalg.solve(Q + n * lam * np.eye(n), y)
    np.testing.assert_allclose(model.predict(x[:5], t[:5]), Q[:5] @ c, rtol=1e-8)


def test_vector_field_exact_route_every_selection_and_tikhonov_prediction():
    X, V = small_field()
    for selection in ("kfold", "holdout", "loo", "gcv"):
        m = VectorFieldRegressor(kernel=Gaussian(0.9), kind="div_curl", gammas=[0.4], filter="tikhonov", lambdas=[1e-4],
                                 selection=selection, n_folds=3).fit(X, V)
        G = field_gram(X, X, 0.9, 0.4)
        c = np.linalg.solve(G + len(X) * 1e-4 * np.mean(np.diag(G)) * np.eye(G.shape[0]), V.reshape(-1))
        Xn = X[:4] + 0.05
        np.testing.assert_allclose(m.predict(Xn), (field_gram(Xn, X, 0.9, 0.4) @ c).reshape(-1, 2), rtol=1e-7)


def test_vector_field_default_filter_is_tikhonov_on_the_exact_route_down_to_the_working_precision():
    from jaxmtl.models.fields import JOINT_MAX_UNKNOWNS, TIKHONOV_MAX_UNKNOWNS, default_lambdas

    X, V = small_field()
    # the resolved filter: Tikhonov where the operator is materialised, the ν-method matrix-free above;
    # n_steps asks for the ν-method and lambdas for Tikhonov whatever the size
    assert VectorFieldRegressor()._family_filter(TIKHONOV_MAX_UNKNOWNS).name == "tikhonov"
    assert VectorFieldRegressor()._route(TIKHONOV_MAX_UNKNOWNS) == "exact"
    assert VectorFieldRegressor()._family_filter(TIKHONOV_MAX_UNKNOWNS + 1).name == "nu_method"
    assert VectorFieldRegressor()._route(TIKHONOV_MAX_UNKNOWNS + 1) == "matrix_free"
    assert VectorFieldRegressor(route="exact")._family_filter(10 * TIKHONOV_MAX_UNKNOWNS).name == "tikhonov"
    assert VectorFieldRegressor(n_steps=20)._family_filter(10).name == "nu_method"
    assert VectorFieldRegressor(n_steps=20)._route(JOINT_MAX_UNKNOWNS + 1) == "matrix_free"
    assert VectorFieldRegressor(lambdas=[1e-3])._family_filter(TIKHONOV_MAX_UNKNOWNS + 1).name == "tikhonov"
    # the grid: 1 down to max(ε/10, 1e-12), three per decade; a dtype that is not floating is refused by name
    for bad in (np.int32, "int64", None):
        with pytest.raises(ParameterError, match="dtype must be a floating-point dtype"):
            default_lambdas(bad)
    for dtype, floor, size in ((np.float32, np.finfo(np.float32).eps / 10, 25), (np.float64, 1e-12, 37)):
        lams = default_lambdas(dtype)
        assert lams.size == size and lams[0] == 1.0 and lams[-1] == pytest.approx(floor)
        np.testing.assert_allclose(lams[:-1] / lams[1:], 10 ** (1 / 3) * np.ones(size - 1), rtol=1e-9 if size == 37 else 0.03)
    m = VectorFieldRegressor(kernel=Gaussian(0.9), kind="div_curl", gammas=[0.4], n_folds=3).fit(X, V)
    assert m.filter_.name == "tikhonov" and m.route_ == "exact"
    np.testing.assert_allclose(m.path_params_, default_lambdas(np.float64))
    # the selected λ's dense Tikhonov solve (G + nλḡI) C = v, as for a given λ
    lam = m.best_params_["param"]
    G = field_gram(X, X, 0.9, 0.4)
    c = np.linalg.solve(G + len(X) * lam * np.mean(np.diag(G)) * np.eye(G.shape[0]), V.reshape(-1))
    Xn = X[:4] + 0.05
    np.testing.assert_allclose(m.predict(Xn), (field_gram(Xn, X, 0.9, 0.4) @ c).reshape(-1, 2), rtol=1e-6)
    # at the default grid's smallest λ in float32 the warning says that float64 resolves smaller ones
    jax.config.update("jax_enable_x64", False)
    try:
        hint = VectorFieldRegressor()._lambda_edge_hint(Tikhonov())
    finally:
        jax.config.update("jax_enable_x64", True)
    with pytest.warns(GridEdgeWarning, match="float32's resolution"):
        _warn_on_edges(None, None, default_lambdas(np.float32), 24, Tikhonov(), True, hint)
    assert VectorFieldRegressor()._lambda_edge_hint(Tikhonov()) is None  # float64: the usual advice
    assert VectorFieldRegressor(lambdas=[1e-3])._lambda_edge_hint(Tikhonov()) is None
    # inside scikit-learn's GridSearchCV: filter=None is a parameter like any other (cloned, searched, refit)
    from sklearn.model_selection import GridSearchCV

    search = GridSearchCV(VectorFieldRegressor(kernel=Gaussian(0.9), kind="div_curl", gammas=[0.4], n_folds=3),
                          {"filter": [None, "nu_method"]}, cv=2).fit(X, V)
    assert search.best_params_["filter"] in (None, "nu_method") and search.predict(Xn).shape == (4, 2)
    assert search.best_estimator_.filter_.name == ("tikhonov" if search.best_params_["filter"] is None
                                                   else "nu_method")


def test_auto_route_threshold_and_refusals(monkeypatch):
    x, y, t = small_multitask(4)
    kw = dict(kernel=Gaussian(0.7), omegas=[0.5], n_steps=10, family="common_similarity")
    assert MultiTaskRegressor(**kw).fit(x, y, t).route_ == "exact"
    monkeypatch.setattr(_matrix_free, "EXACT_MAX_UNKNOWNS", len(y) - 1)
    assert MultiTaskRegressor(**kw).fit(x, y, t).route_ == "matrix_free"
    tsvd = dict(kernel=Gaussian(0.7), omegas=[0.5], filter="tsvd", lambdas=[1e-2, 1e-3], family="common_similarity")
    with pytest.raises(ParameterError, match="route='exact'"):
        MultiTaskRegressor(**tsvd).fit(x, y, t)
    assert MultiTaskRegressor(**tsvd, route="exact").fit(x, y, t).route_ == "exact"


def test_matrix_free_route_searches_widths_on_a_subsample_by_the_exact_route(monkeypatch):
    """Above the threshold the default width grid is searched on WIDTH_SUBSAMPLE rows (exact
    route, refined), and only the best width runs the matrix-free path on all rows."""
    x, y, t = small_multitask(8)
    monkeypatch.setattr(_matrix_free, "EXACT_MAX_UNKNOWNS", 10)
    monkeypatch.setattr(_matrix_free, "WIDTH_SUBSAMPLE", 20)
    m = MultiTaskRegressor(omegas=[0.0, 0.5], n_steps=15, family="common_similarity").fit(x, y, t)
    assert m.route_ == "matrix_free" and m.kernel_widths_.shape == (1,)
    assert m.cv_scores_.shape == (1, 2, 15)
    # the width comes from the refined grid median × 2^(j/4) (median of all rows), polished
    from jaxmtl.kernels.scalar import median_heuristic

    j = 4 * np.log2(m.best_params_["kernel_width"] / median_heuristic(x))
    assert j == pytest.approx(round(j), abs=1e-6)

@pytest.mark.slow
def test_structured_benchmark_parts_report_consistent_rows():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import _defaults_structured as structured

    row = structured.unrelated(3, 8)["rows"][0]
    assert row["ratio_to_better"] == pytest.approx(row["ours_mse"] / min(row["pooled_mse"], row["per_task_mse"]))
    import _defaults_fields

    field = _defaults_fields.fields(1, ("field_2",))["rows"][0]
    assert field["ratio"] == pytest.approx(field["ours_angular"] / field["tuned_angular"])
    assert 0 < field["ours_angular"] < 1.0


def test_exact_route_searches_widths_on_a_subsample_as_brute_force_on_it(monkeypatch):
    """Above WIDTH_SUBSAMPLE rows the multi-task exact route searches the default widths on a
    random subsample as the matrix-free route does: the width chosen is the argmin of hold-out
    losses computed by dense solves on that subsample, over every width the coarse-to-fine search
    can reach (median × 2^(j/4)); then (ω, λ) are chosen on all rows at that width, again as
    dense solves on all rows choose them."""
    from jaxmtl.kernels.scalar import median_heuristic

    x, y, t = small_multitask(10)  # 40 rows, 4 tasks
    monkeypatch.setattr(_matrix_free, "WIDTH_SUBSAMPLE", 28)
    omegas, lams = [0.0, 0.5, 1.0], [1e-1, 1e-2, 1e-3]
    kw = dict(omegas=omegas, filter="tikhonov", lambdas=lams, family="common_similarity", selection="holdout")
    m = MultiTaskRegressor(**kw).fit(x, y, t)
    assert m.route_ == "exact" and m.kernel_widths_.shape == (1,) and m.cv_scores_.shape == (1, 3, 3)
    yc = y - y.mean()

    def holdout(rows, width):
        """(Ω, Λ) hold-out MSE of dense Tikhonov solves on ``rows`` (λ relative to the unit diagonal)."""
        train = m._masks(len(rows))[0]
        xs, ts, ys = x[rows], t[rows], yc[rows]
        out = np.empty((len(omegas), len(lams)))
        for io, om in enumerate(omegas):
            Q = multitask_gram(xs, ts, xs, ts, width, om)
            for il, lam in enumerate(sorted(lams, reverse=True)):
                c = np.linalg.solve(Q[np.ix_(train, train)] + train.sum() * lam * np.eye(train.sum()), ys[train])
                out[io, il] = np.mean((Q[np.ix_(~train, train)] @ c - ys[~train]) ** 2)
        return out

    rows = m._subsample_rows(len(y), 28)
    lattice = median_heuristic(x) * 2.0 ** (np.arange(-24, 33) / 4)
    sub = np.array([holdout(rows, w).min() for w in lattice])
    width = m.best_params_["kernel_width"]
    assert width == pytest.approx(lattice[int(np.argmin(sub))], rel=1e-9)
    assert 0 < int(np.argmin(sub)) < len(lattice) - 1  # an interior minimum: the comparison discriminates
    full = holdout(np.arange(len(y)), width)
    np.testing.assert_allclose(m.cv_scores_[0], full, rtol=1e-7)
    io, il = np.unravel_index(int(np.argmin(full)), full.shape)
    assert (m.best_params_["omega"], m.best_params_["param"]) == (omegas[io], sorted(lams, reverse=True)[il])
