"""Default model selection: wide width grids extended past their edges, paths continued while
their best step is the last, edge warnings, checked step lists, the Mulan sets with missing inputs."""

import warnings

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from jaxmtl import Gaussian, MultiClassClassifier, NuMethod, VectorValuedRegressor
from jaxmtl.datasets import load_mulan
from jaxmtl.errors import GridEdgeWarning, NonFiniteError, ParameterError
from jaxmtl.kernels import median_heuristic
from jaxmtl.models import _spectral
from jaxmtl.operators import separable_eigh
from jaxmtl.paths import spectral_path


def wiggly(n=120, seed=0, freq=12.0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 1))
    return X, np.c_[np.sin(freq * X[:, 0]), np.cos(freq * X[:, 0])]


def test_default_width_grid_spans_median_over_16_to_64():
    factors = np.asarray(_spectral.DEFAULT_WIDTH_FACTORS)
    assert factors.min() <= 1 / 16 and factors.max() >= 64


def test_a_best_width_on_the_lower_edge_is_extended_past_it(monkeypatch):
    X, Y = wiggly()
    # a coarse grid whose smallest width is far too wide for this high-frequency function
    monkeypatch.setattr(_spectral, "DEFAULT_WIDTH_FACTORS", (1.0, 4.0, 16.0))
    model = VectorValuedRegressor(n_steps=200, output="independent").fit(X, Y)
    base = median_heuristic(X)
    assert model.kernel_widths_.min() < base * 0.99             # the grid was extended downwards
    assert model.best_params_["kernel_width"] < base             # and the best width lies beyond the old edge


def test_an_explicit_grid_with_its_best_on_the_edge_warns_and_names_the_parameter():
    X, Y = wiggly()
    with pytest.warns(GridEdgeWarning, match="kernel width"):
        VectorValuedRegressor(width_factors=[4.0, 8.0], n_steps=50, output="independent").fit(X, Y)


def test_a_path_whose_best_step_is_the_last_is_continued():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(60, 1))
    Y = np.c_[np.sin(3 * X[:, 0])]                               # noiseless: wants a long path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GridEdgeWarning)
        model = VectorValuedRegressor(kernel=Gaussian(0.5), output="independent").fit(X, Y)
    steps = model.path_params_
    assert steps[-1] > _spectral.DEFAULT_STEPS["nu_method"]
    # the reference: every step of the long path, evaluated by an explicit n_steps
    longer = VectorValuedRegressor(kernel=Gaussian(0.5), output="independent", n_steps=int(steps[-1])).fit(X, Y)
    np.testing.assert_allclose(model.cv_scores_, longer.cv_scores_[..., steps - 1], rtol=1e-10)
    best = int(steps[np.argmin(longer.cv_scores_[0, 0, steps - 1])])
    assert model.best_params_["param"] == best
    same = VectorValuedRegressor(kernel=Gaussian(0.5), output="independent", n_steps=best).fit(X, Y)
    np.testing.assert_allclose(model.predict(X), same.predict(X), rtol=1e-10, atol=1e-12)


def test_default_paths_evaluate_a_geometric_grid_of_steps():
    """The default evaluates steps 1 … 7 and then every ~15 %, each equal to the full path's loss."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 2))
    Y = np.c_[np.sin(X[:, 0]), X[:, 1]] + 0.3 * rng.normal(size=(50, 2))
    model = VectorValuedRegressor(kernel=Gaussian(1.0)).fit(X, Y)
    steps = model.path_params_
    assert steps[:7].tolist() == list(range(1, 8)) and np.all(np.diff(steps) > 0)
    ratios = steps[8:] / steps[7:-1]
    assert ratios.max() < 1.25 and len(steps) < 60
    full = VectorValuedRegressor(kernel=Gaussian(1.0), n_steps=int(steps[-1])).fit(X, Y)
    np.testing.assert_allclose(model.cv_scores_, full.cv_scores_[..., steps - 1], rtol=1e-10)


def test_iterative_paths_refuse_step_lists_that_are_not_consecutive():
    eig = separable_eigh(jnp.eye(4), jnp.eye(2))
    with pytest.raises(ParameterError, match="1, 2, …, T"):
        spectral_path(eig, jnp.ones((4, 2)), NuMethod(), jnp.array([10, 20, 30]), output="coefficients")
    assert spectral_path(eig, jnp.ones((4, 2)), NuMethod(), jnp.arange(1, 4), output="coefficients").shape == (3, 4, 2)


def test_mulan_sets_with_missing_inputs_are_imputed_by_column_medians():
    data = load_mulan("scpf")
    assert np.all(np.isfinite(data.X)) and data.Y.shape[1] == 3
    with pytest.raises(NonFiniteError):
        load_mulan("scpf", missing="raise")


def test_classifier_defaults_on_a_larger_problem_search_widths_on_a_subsample():
    rng = np.random.default_rng(0)
    n = _spectral.WIDTH_SUBSAMPLE + 300
    X = rng.normal(size=(n, 2))
    y = (np.sin(2 * X[:, 0]) + X[:, 1] > 0).astype(int)
    model = MultiClassClassifier(n_steps=60).fit(X[:-100], y[:-100])
    assert len(model.kernel_widths_) == 3                       # the 3 widths around the subsample's best
    assert model._subsample_pays(n - 100) and not model._subsample_pays(_spectral.WIDTH_SUBSAMPLE + 100)
    smaller = MultiClassClassifier(n_steps=60).fit(X[:500], y[:500])  # 500 rows: every width on all rows
    assert len(smaller.kernel_widths_) >= len(_spectral.DEFAULT_WIDTH_FACTORS)
    assert model.score(X[-100:], y[-100:]) > 0.85


def test_defaults_benchmark_parts_run_and_check_their_claims():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import defaults_vs_tuned as bench

    res = bench.mulan(["slump"], 2)
    row = res["rows"][0]
    assert all(np.isfinite(row[k + "_arrmse"]) for k in ("ours", "coupled", "tuned", "per_target"))
    assert row["ratio"] == pytest.approx(row["ours_arrmse"] / row["tuned_arrmse"])
    assert {c["claim"] for c in res["claims"]} == {
        "mean aRRMSE ratio to tuned KernelRidge ≤ 1.0", "no set above 1.05",
        "every set: aRRMSE at most the better of jointly and per-target tuned KernelRidge's plus one standard "
        "error of the paired difference over the outer folds"}
    # the aRRMSE of the training mean is 1 by construction
    Y = np.random.default_rng(0).normal(size=(30, 2))
    assert bench.arrmse(Y, np.tile(Y.mean(0), (30, 1)), Y) == pytest.approx(1.0)


def test_repeats_benchmark_compares_both_selections_on_the_same_splits():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import selection_repeats as bench

    first, again = (next(bench.splits("wine", 1))[0] for _ in range(2))
    np.testing.assert_array_equal(first, again)  # reproducible splits
    row = bench.compare("wine", 2)
    assert row["train_rows"] == 89 and row["splits"] == 2
    for key in ("one", "repeated"):
        assert 0.0 <= row[f"{key}_error"] <= 100.0 and np.isfinite(row[f"{key}_std"]) and row[f"{key}_fit_s"] > 0
    # regression: the aRRMSE of the training mean is 1, a fitted VectorValuedRegressor is below it on slump
    Xtr, ytr, Xte, yte = next(bench.splits("slump", 1))
    assert Xtr.shape == (51, 7) and ytr.shape == (51, 3) and len(yte) == 52
    row = bench.compare("slump", 2)
    assert row["train_rows"] == 51 and row["fit_time_ratio"] > 0
    for key in ("one", "repeated"):
        assert 0.0 < row[f"{key}_error"] < 1.0 and np.isfinite(row[f"{key}_std"])


def test_a_kernel_without_parameters_fits_and_equals_kernel_ridge():
    """Linear() has no array leaf to map over: the grid scoring still runs (it used to crash)."""
    from sklearn.kernel_ridge import KernelRidge

    from jaxmtl import Linear, MultiClassClassifier

    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    Y = X @ rng.normal(size=(3, 2)) + 0.1 * rng.normal(size=(40, 2))
    model = VectorValuedRegressor(kernel=Linear(), filter="tikhonov", lambdas=[1e-2], output="independent",
                                  fit_intercept=False).fit(X, Y)
    ref = KernelRidge(alpha=40 * 1e-2, kernel="linear").fit(X, Y)
    np.testing.assert_allclose(model.predict(X), ref.predict(X), rtol=1e-8, atol=1e-10)
    y = np.where(X[:, 0] + X[:, 1] > 0, "a", "b")  # linearly separable
    assert MultiClassClassifier(kernel=Linear()).fit(X, y).score(X, y) >= 0.95


def test_the_benchmark_refuses_an_unknown_set_by_name():
    import os
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks",
                          "defaults_vs_tuned.py")
    run = subprocess.run([sys.executable, script, "--parts", "mulan", "--sets", "nosuch"], capture_output=True,
                         text=True)
    assert run.returncode == 2 and "unknown sets ['nosuch']" in run.stderr


def test_the_benchmark_refuses_an_unknown_field_by_name():
    import os
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks",
                          "defaults_vs_tuned.py")
    run = subprocess.run([sys.executable, script, "--parts", "fields", "--fields", "field_2,nosuch"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "unknown fields ['nosuch']" in run.stderr
