"""Falkon's CG over a whole ω × λ grid (jaxmtl.paths.falkon_grid), the approximate estimators' 'cg'
route built on it, and the feature routes' cost model, against dense NumPy references (the
Kronecker-form normal equations), the eigen route and the measured million-row runs."""

from __future__ import annotations

import json
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from conftest import X64  # the run's precision
from jaxmtl import VectorValuedRegressor
from jaxmtl.errors import ParameterError, ShapeError
from jaxmtl.kernels import Gaussian
from jaxmtl.models.approximate import ApproximateKernelRegressor
from jaxmtl.paths import falkon_coefficients, falkon_holdout_losses
from jaxmtl.paths.routes import TABLE, FeatureProblem, feature_route_costs

ROOT = Path(__file__).resolve().parent.parent
RTOL = 1e-7 if X64 else 2e-3
RNG = np.random.default_rng(3)
N, M, P_IN, D = 240, 30, 2, 3
X = RNG.uniform(-2, 2, size=(N, P_IN))
Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1]), X[:, 0] * X[:, 1] / 2] + 0.1 * RNG.normal(size=(N, D))
SIGMA = 1.0


def gauss(X1, X2):
    return np.exp(-((X1[:, None, :] - X2[None]) ** 2).sum(-1) / (2 * SIGMA ** 2))


def kronecker_ridge(Z, Xt, Yt, A, lam):
    """Coefficients α (m, d) of f(x) = K(x, Z) α A minimising ‖Y − K_nm α A‖²/n + λ‖f‖², from the
    m·d × m·d normal equations with K_nm ⊗ A and K_mm ⊗ A written out (row-major vec)."""
    Knm, Kmm = gauss(Xt, Z), gauss(Z, Z)
    F = np.kron(Knm, A)
    lhs = F.T @ F + len(Xt) * lam * np.kron(Kmm, A)
    return np.linalg.lstsq(lhs, F.T @ Yt.reshape(-1), rcond=None)[0].reshape(len(Z), -1)


def _dtype():
    return np.float64 if X64 else np.float32


@pytest.mark.parametrize("n_steps", [40, 60])
def test_holdout_losses_of_every_output_matrix_and_lambda_match_the_kronecker_normal_equations(n_steps):
    """Converged, and still so after more steps: in float32 the directions of K(Z, Z) below eps·e_max
    are left out of the whitening, where the rounding of further steps otherwise grew the losses
    several-fold at λ = 1e-3."""
    Z, (Xt, Yt), (Xh, Yh) = X[:M], (X[:180], Y[:180]), (X[180:], Y[180:])
    r = np.random.default_rng(3)  # the module's draws of X and Y, then V
    r.uniform(size=(N, P_IN)), r.normal(size=(N, D))
    V = np.linalg.qr(r.normal(size=(D, D)))[0]
    a = np.array([[1.0, 1.0, 1.0], [0.3, 1.0, 2.2]])  # two output matrices sharing V
    lams = np.array([1e-1, 1e-2, 1e-3])
    dt = _dtype()
    got = np.asarray(falkon_holdout_losses(Gaussian(SIGMA), Z.astype(dt), Xt.astype(dt), Yt.astype(dt), a.astype(dt),
                                           V.astype(dt), lams.astype(dt), Xh.astype(dt), Yh.astype(dt), n_steps=n_steps))
    assert got.shape == (2, 3, D)
    for w in range(2):
        A = (V * a[w]) @ V.T
        for p, lam in enumerate(lams):
            F = gauss(Xh, Z) @ kronecker_ridge(Z, Xt, Yt, A, lam) @ A
            np.testing.assert_allclose(got[w, p], ((F - Yh) ** 2).mean(0), rtol=RTOL * 10)


def test_coefficients_with_a_lambda_per_output_match_a_ridge_per_output():
    Z, lams = X[:M], np.array([1e-1, 1e-2, 3e-2])
    dt = _dtype()
    W, C = falkon_coefficients(Gaussian(SIGMA), Z.astype(dt), X.astype(dt), Y.astype(dt), np.ones(D, dt),
                               np.eye(D, dtype=dt), lams.astype(dt), n_steps=40)
    Xe = RNG.uniform(-2, 2, size=(20, P_IN))
    got = gauss(Xe, Z) @ np.asarray(W, np.float64) @ np.asarray(C, np.float64)
    for j in range(D):  # A = I: each output its own ridge, its own λ
        alpha = kronecker_ridge(Z, X, Y[:, j:j + 1], np.eye(1), lams[j])
        np.testing.assert_allclose(got[:, j], (gauss(Xe, Z) @ alpha)[:, 0], rtol=RTOL * 10, atol=RTOL)


def _point(model):
    """The selected model's (ω, λ of each output), A = I written ω = 0 whichever family names it (a tie)."""
    lam = tuple(np.broadcast_to(model.best_params_["param"], (D,)).tolist())
    omega = model.best_params_["omega"]
    return (0.0 if omega is None and len(set(lam)) == 1 else omega), lam


@pytest.mark.parametrize("output", ["common_similarity", "independent"])
def test_estimator_cg_route_scores_the_grid_as_the_eigen_route(output):
    """The same hold-out losses as the eigen route: to rounding where 20 CG steps converge (the larger
    λ), within 1e-3 at the grid's smallest λ, where they have not quite; the same selection; the model
    is the selected point's solution on the training split (the Kronecker normal equations)."""
    train = np.arange(N) < 180
    kw = dict(kernel=Gaussian(SIGMA), n_components=M, output=output, filter="tikhonov", selection=[train],
              lambdas=np.geomspace(1e-3, 1e-1, 6), normalize_y=False, dtype="float64" if X64 else "float32")
    cg = ApproximateKernelRegressor(route="cg", **kw).fit(X, Y)
    eig = ApproximateKernelRegressor(route="eigen", **kw).fit(X, Y)
    assert (cg.route_, eig.route_) == ("cg", "eigen")
    converged = slice(0, 3)  # λ sorted decreasing: the three largest
    np.testing.assert_allclose(cg.cv_scores_[:, converged], eig.cv_scores_[:, converged], rtol=RTOL * 10)
    np.testing.assert_allclose(cg.cv_scores_, eig.cv_scores_, rtol=1e-3 if X64 else 1e-2)
    assert cg.family_scores_.keys() == eig.family_scores_.keys()
    if X64:  # the same point; ω = 0 of the common-similarity family and one λ for every output are both A = I
        assert _point(cg) == _point(eig)
    # the centres are rows in the fit's shifted inputs (the estimators' input offset)
    Z = np.asarray(cg.feature_map_.centres, np.float64) + np.asarray(cg._input_offset_)
    Yc, Xe = Y - Y.mean(0), RNG.uniform(-2, 2, size=(15, P_IN))
    lam = np.broadcast_to(cg.best_params_["param"], (D,))
    if cg.family_ == "independent":  # A = I, every output its own λ
        ref = np.column_stack([gauss(Xe, Z) @ kronecker_ridge(Z, X[train], Yc[train, j:j + 1], np.eye(1), lam[j])
                               for j in range(D)])
    else:
        A = np.asarray(cg.output_matrix_, np.float64)
        ref = gauss(Xe, Z) @ kronecker_ridge(Z, X[train], Yc[train], A, lam[0]) @ A
    np.testing.assert_allclose(cg.predict(Xe), ref + Y.mean(0), rtol=2e-3 if X64 else 1e-2, atol=2e-3 if X64 else 1e-2)


@pytest.mark.parametrize("change, match", [
    (dict(a=np.ones(D)), r"a must have shape \(·, 3\)"),
    (dict(V=np.eye(2)), r"V must have shape \(3, 3\)"),
    (dict(Y=Y[:100]), r"Y must have shape \(180, ·\)"),
    (dict(X_held=X[180:, :1]), r"X_held must have shape \(·, 2\)"),
    (dict(lambdas=np.ones((2, 2))), r"lambdas must have shape \(·,\)"),
    (dict(n_steps=0), "n_steps must be an integer >= 1"),
])
def test_bad_input_to_the_grid_functions_is_refused_by_name(change, match):
    kw = dict(kernel=Gaussian(SIGMA), centres=X[:M], X=X[:180], Y=Y[:180], a=np.ones((1, D)), V=np.eye(D),
              lambdas=np.array([1e-2]), X_held=X[180:], Y_held=Y[180:], n_steps=5)
    with pytest.raises((ParameterError, ShapeError), match=match):
        falkon_holdout_losses(**{**kw, **change})
    with pytest.raises(ShapeError, match=r"lambdas must have shape \(3,\)"):
        falkon_coefficients(Gaussian(SIGMA), X[:M], X, Y, np.ones(D), np.eye(D), np.ones(2))


@pytest.mark.parametrize("kw, needs", [
    (dict(selection="kfold"), "one held-out split"),
    (dict(selection="holdout", filter="landweber"), "Tikhonov"),
    (dict(selection="holdout", approximation="random_features"), "nystrom"),
])
def test_a_cg_route_that_cannot_serve_is_refused_by_name(kw, needs):
    with pytest.raises(ParameterError, match=needs):
        ApproximateKernelRegressor(route="cg", n_components=20, **kw).fit(X, Y)
    with pytest.raises(ParameterError, match="route must be one of"):
        ApproximateKernelRegressor(route="direct").fit(X, Y)


def test_auto_route_keeps_eigen_where_cg_cannot_serve_or_costs_more():
    model = ApproximateKernelRegressor(kernel=Gaussian(SIGMA), n_components=M, selection="holdout",
                                       lambdas=np.geomspace(1e-4, 1e-1, 4)).fit(X, Y)
    assert model.route_ == "eigen"  # 30 centres: forming their statistics is cheaper than 21 passes
    vv = VectorValuedRegressor(approximation="nystrom", n_components=M, kernel=Gaussian(SIGMA),
                               lambdas=np.geomspace(1e-4, 1e-1, 4)).fit(X, Y)
    assert vv.route_ == "eigen"  # k-fold: CG cannot serve


def test_cost_model_ranks_the_routes_as_the_measured_million_row_runs():
    """At 10⁵ rows with 10 000 centres (benchmarks/results/million.json, 2-core CPU, float32) the CG
    route's 20 λ took less than the eigen route's grid; the model's ratio is within 2× of theirs."""
    rows = json.loads((ROOT / "benchmarks" / "results" / "million.json").read_text())["rows"]
    t = {r["method"]: r["seconds_to_model"] for r in rows if (r["n"], r["M"]) == (100_000, 10_000)
         and r["method"] in ("jaxmtl", "jaxmtl-cg")}
    # both runs pass over the 10⁵ training rows; the pass over the 10⁵ validation rows, which both make by
    # their predictions, is left out of both prices
    fp = FeatureProblem(n=100_000, p=28, m=10_000, d=8, points=20)
    c = TABLE["cpu"]["float32"]
    ratio = feature_route_costs(fp, "eigen", c) / feature_route_costs(fp, "cg", c)
    measured = t["jaxmtl"] / t["jaxmtl-cg"]
    assert measured > 1 and ratio > 1
    assert measured / 2 < ratio < measured * 2
    few = FeatureProblem(n=200_000, p=28, m=2000, d=8, points=20, omegas=7, held=100_000)
    assert feature_route_costs(few, "eigen", c) < feature_route_costs(few, "cg", c)  # 1120 columns, 2000 centres


def test_cg_route_compiles_nothing_at_another_n_of_its_bucket_and_equals_the_unpadded(monkeypatch, programs):
    """Each split is padded to its size bucket with rows that weigh 0 (in the passes, in the held-out
    scores and in n of nλ): a fit at another n of the bucket compiles no program, and the padded fit's
    hold-out losses are the unpadded fit's to rounding, which 20 CG steps amplify where they have not
    converged (the grid's smallest λ: 2e-8 relative in float64)."""
    import jax

    from jaxmtl.models import _buckets, _feature_routes

    def fit(n):
        kw = dict(kernel=Gaussian(SIGMA), n_components=M, output="independent", filter="tikhonov",
                  lambdas=np.geomspace(1e-3, 1e-1, 4), normalize_y=False, dtype="float64" if X64 else "float32")
        return ApproximateKernelRegressor(route="cg", selection=[np.arange(n) % 4 != 0], **kw).fit(X[:n], Y[:n])

    sizes = (234, 229)  # held-out 59 and 58 rows, training 175 and 171: the same buckets, 60 and 176
    assert len({(_buckets.size_bucket(-(-n // 4)), _buckets.size_bucket(n - -(-n // 4))) for n in sizes}) == 1
    jax.clear_caches()
    padded = fit(sizes[0])
    first = programs.count
    fit(sizes[1])
    assert programs.count == first
    monkeypatch.setattr(_feature_routes, "size_bucket", lambda n, bits=None: int(n))
    plain = fit(sizes[0])
    tol = 1e-6 if X64 else 1e-3
    np.testing.assert_allclose(padded.cv_scores_, plain.cv_scores_, rtol=tol)
    np.testing.assert_allclose(padded.predict(X[200:]), plain.predict(X[200:]), rtol=tol, atol=tol)


@pytest.mark.parametrize("family", ["offset", "scale", "duplicates"])
def test_cg_route_on_hostile_inputs_is_equivariant_and_finite(family):
    """Offsets (inputs + 1e3, outputs + 1e3) and scales (outputs × 1e6): the CG route's predictions are
    the plain data's, moved by the same offset or scale, within 20 unconverged CG steps' sensitivity to
    rounding (1e-4 of the outputs' range in float64); repeated rows (60 rows four times: a singular
    K(Z, Z), centres drawn twice): the hold-out losses of the eigen route, as on plain data. Never NaN."""
    base = np.arange(N) % 4 != 0
    kw = dict(kernel=Gaussian(SIGMA), n_components=M, output="independent", filter="tikhonov", route="cg",
              lambdas=np.geomspace(1e-3, 1e-1, 4), dtype="float64" if X64 else "float32")
    Xe = RNG.uniform(-2, 2, size=(25, P_IN))
    if family == "duplicates":
        data = dict(selection=[base], **kw), np.tile(X[:60], (4, 1)), np.tile(Y[:60], (4, 1))
        cg = ApproximateKernelRegressor(**data[0]).fit(*data[1:])
        eig = ApproximateKernelRegressor(**{**data[0], "route": "eigen"}).fit(*data[1:])
        assert len({tuple(z) for z in np.asarray(cg.feature_map_.centres).tolist()}) < M  # a centre drawn twice
        assert np.all(np.isfinite(cg.predict(Xe)))
        np.testing.assert_allclose(cg.cv_scores_, eig.cv_scores_, rtol=1e-3 if X64 else 1e-2)
        return
    plain = ApproximateKernelRegressor(selection=[base], **kw).fit(X, Y).predict(Xe)
    if family == "offset":
        got = ApproximateKernelRegressor(selection=[base], **kw).fit(X + 1e3, Y + 1e3).predict(Xe + 1e3) - 1e3
    else:
        got = ApproximateKernelRegressor(selection=[base], **kw).fit(X, Y * 1e6).predict(Xe) / 1e6
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, plain, atol=(1e-4 if X64 else 2e-2) * np.ptp(Y))
