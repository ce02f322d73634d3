"""ApproximateKernelRegressor() on small data (every row a Nyström centre): its default ν-method
path is continued past a best last step as the exact estimators', so it selects a step instead of
stopping at the grid's edge, and its test error stays near VectorValuedRegressor()'s."""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from jaxmtl import ApproximateKernelRegressor, VectorValuedRegressor
from jaxmtl.errors import GridEdgeWarning

ROOT = Path(__file__).resolve().parent.parent


def _data(n, noise, seed=0, n_test=1000):
    """The benchmark's problem: two smooth outputs of three inputs (benchmarks/approximate_defaults.py)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n + n_test, 3))
    F = np.c_[np.sin(2 * X[:, 0]) + X[:, 1] ** 2, np.cos(X[:, 1] + X[:, 2]) + 0.5 * X[:, 0]]
    Y = F + noise * rng.normal(size=F.shape)
    return X[:n], Y[:n], X[n:], F[n:]


def test_default_on_240_rows_selects_inside_its_grid_and_matches_the_exact_estimator():
    X, Y, Xt, Ft = _data(240, noise=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GridEdgeWarning)
        approx = ApproximateKernelRegressor().fit(X, Y)
    exact = VectorValuedRegressor().fit(X, Y)
    assert approx.n_components_ == 240
    steps = approx.path_params_
    assert approx.best_params_["param"] < steps[-1]  # a selected step, not the path's end
    assert np.isfinite(approx.cv_scores_).any() and approx.cv_scores_.shape[1] == steps.size
    mse = lambda m: float(np.mean((m.predict(Xt) - Ft) ** 2))  # noqa: E731
    assert mse(approx) <= 1.2 * mse(exact)


def test_a_path_whose_best_step_is_the_last_is_continued_to_the_exact_estimators_length():
    """Noiseless data want more than 300 steps: the path runs on past them (to 2400 at most, as
    the exact estimators'), and the losses beyond 300 are those of the selected ω alone."""
    X, Y, _, _ = _data(120, noise=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        model = ApproximateKernelRegressor(width_factors=[1.0], omegas=[0.0, 0.5]).fit(X, Y)
        short = ApproximateKernelRegressor(width_factors=[1.0], omegas=[0.0, 0.5], n_steps=300).fit(X, Y)
    assert short.best_params_["param"] == 300  # the default length's last step: the case continued
    steps = model.path_params_
    assert steps[-1] == 2400
    io = [0.0, 0.5].index(model.best_params_["omega"])
    beyond = steps > 300
    assert np.all(np.isfinite(model.cv_scores_[io, beyond]))
    assert np.all(np.isinf(model.cv_scores_[1 - io, beyond]))
    # the losses are those of the explicit 300-step path: the default grid's steps for every ω,
    # every step up to 300 of the continued one for the selected ω
    first = np.isfinite(model.cv_scores_[1 - io])
    assert steps[first][-1] == 300
    at = lambda s: np.searchsorted(short.path_params_, s)  # noqa: E731
    np.testing.assert_allclose(model.cv_scores_[:, first], short.cv_scores_[:, at(steps[first])], rtol=1e-8)
    np.testing.assert_allclose(model.cv_scores_[io, ~beyond], short.cv_scores_[io, at(steps[~beyond])], rtol=1e-8)
    assert model.best_params_["param"] > 300


@pytest.mark.scripts
@pytest.mark.skipif(os.environ.get("JAXMTL_SKIP_REPRO") == "1", reason="JAXMTL_SKIP_REPRO=1")
def test_quick_benchmark_runs_and_records_the_ratios(tmp_path):
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "approximate_defaults.py"), "--quick"],
                          capture_output=True, text=True, timeout=1800, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    payload = json.loads((tmp_path / "approximate_defaults_quick.json").read_text())
    assert payload["dtype"] == "float64" and payload["seeds"] == [0, 1, 2]
    assert sorted({r["n"] for r in payload["rows"]}) == [100, 240]
    for row in payload["rows"]:
        assert row["approximate_mse"] > 0 and row["ratio_vs_exact"] > 0 and row["ratio_vs_sklearn"] > 0
