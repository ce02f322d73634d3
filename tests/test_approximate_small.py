"""ApproximateKernelRegressor() on small data (every row a Nyström centre): its default ν-method
path runs every width and ω to the length the exact estimators continue theirs to, so it selects a
step inside its grid and a width scored on the whole path, and its test error stays near
VectorValuedRegressor()'s."""

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
    assert approx.best_params_["param"] < approx.path_params_[-1]  # a selected step, not the path's end
    mse = lambda m: float(np.mean((m.predict(Xt) - Ft) ** 2))  # noqa: E731
    assert mse(approx) <= 1.2 * mse(exact)


def test_the_default_path_runs_every_omega_to_the_exact_estimators_continued_length():
    """Noiseless data want more than 300 steps: the default path is the exact estimators' geometric
    grid of steps up to 2400 (where they continue theirs), for every ω, and its losses are those of
    the explicit 2400-step path at those steps."""
    X, Y, _, _ = _data(120, noise=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        model = ApproximateKernelRegressor(width_factors=[1.0], omegas=[0.0, 0.5]).fit(X, Y)
        every = ApproximateKernelRegressor(width_factors=[1.0], omegas=[0.0, 0.5], n_steps=2400).fit(X, Y)
    steps = model.path_params_
    assert steps[0] == 1 and steps[-1] == 2400 and np.all(np.diff(steps) > 0)
    assert steps.size < 80 and np.all(steps[1:] / steps[:-1] <= 2.0)  # geometric: ~15 % apart past 7
    assert model.cv_scores_.shape == (2, steps.size) and np.all(np.isfinite(model.cv_scores_))
    np.testing.assert_allclose(model.cv_scores_, every.cv_scores_[:, steps - 1], rtol=1e-8)
    io, ip = np.unravel_index(np.argmin(every.cv_scores_[:, steps - 1]), (2, steps.size))
    assert (model.best_params_["omega"], model.best_params_["param"]) == ([0.0, 0.5][io], steps[ip])
    assert model.best_params_["param"] > 300


@pytest.mark.scripts
@pytest.mark.skipif(os.environ.get("JAXMTL_SKIP_REPRO") == "1", reason="JAXMTL_SKIP_REPRO=1")
def test_quick_benchmark_runs_and_records_the_ratios(tmp_path):
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path)}
    # the quick run's smaller size only: n = 240 (every row a centre) against the exact estimator is
    # checked above, on the benchmark's problem
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "approximate_defaults.py"), "--quick",
                           "--sizes", "100"], capture_output=True, text=True, timeout=1800, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    payload = json.loads((tmp_path / "approximate_defaults_quick.json").read_text())
    assert payload["dtype"] == "float64" and payload["seeds"] == [0, 1, 2]
    assert [(r["n"], r["problem"]) for r in payload["rows"]] == [(100, "noisy"), (100, "noiseless")]
    for row in payload["rows"]:
        assert row["approximate_mse"] > 0 and row["ratio_vs_exact"] > 0 and row["ratio_vs_sklearn"] > 0
