"""MultiTaskRegressor's families: per-task selection against brute-force per-task refits, the choice
between the independent and the common-similarity family, and bad task input."""

import numpy as np
import pytest

from jaxmtl import Gaussian, MultiTaskRegressor
from jaxmtl.errors import ParameterError, TaskError
from jaxmtl.selection import kfold_masks


def _tasks(sizes, functions, noise, seed):
    rng = np.random.default_rng(seed)
    tasks = np.repeat(np.arange(len(sizes)), sizes)
    X = rng.uniform(-2, 2, (len(tasks), 1))
    y = np.array([functions[t](x) for t, x in zip(tasks, X[:, 0])]) + noise * rng.normal(size=len(tasks))
    return X, y, tasks


def _brute_force(X, y, tasks, masks, widths, lambdas):
    """Per task, per width and λ: explicit loops over folds of dense Tikhonov solves
    (K + n λ I) c = y − mean on the task's training rows; returns per task (width, λ, loss) chosen
    and the per-task refit's predictor."""
    held = (~masks).sum(axis=1)
    y = y - y.mean()
    chosen = {}
    for t in np.unique(tasks):
        best = (np.inf, None, None)
        for w in widths:
            for lam in lambdas:
                loss = 0.0
                for m, h in zip(masks, held):
                    tr, te = m & (tasks == t), ~m & (tasks == t)
                    mu = y[tr].mean()
                    K = np.exp(-(X[tr] - X[tr].T) ** 2 / (2 * w**2))
                    c = np.linalg.solve(K + tr.sum() * lam * np.eye(tr.sum()), y[tr] - mu)
                    pred = np.exp(-(X[te] - X[tr].T) ** 2 / (2 * w**2)) @ c + mu
                    loss += np.sum((pred - y[te]) ** 2) / h / len(masks)
                if loss < best[0]:
                    best = (loss, w, lam)
        chosen[t] = best
    return chosen


def _refit_predict(X, y, tasks, t, w, lam, X_new):
    rows = tasks == t
    y_mean = y.mean()
    mu = (y[rows] - y_mean).mean()
    K = np.exp(-(X[rows] - X[rows].T) ** 2 / (2 * w**2))
    c = np.linalg.solve(K + rows.sum() * lam * np.eye(rows.sum()), y[rows] - y_mean - mu)
    return np.exp(-(X_new - X[rows].T) ** 2 / (2 * w**2)) @ c + mu + y_mean


def test_per_task_selection_equals_brute_force_refits():
    X, y, tasks = _tasks([12, 9, 15], [np.sin, lambda x: x**2, lambda x: np.cos(3 * x)], 0.1, 0)
    factors, lambdas = np.array([0.5, 1.0, 2.0]), np.array([1e-1, 1e-2, 1e-3])
    model = MultiTaskRegressor(filter="tikhonov", selection="kfold", n_folds=3, n_repeats=1, family="independent",
                               width_factors=factors, lambdas=lambdas).fit(X, y, tasks)
    d = np.abs(X - X.T)[np.triu_indices(len(X), 1)]
    widths = np.median(d) * factors
    chosen = _brute_force(X, y, tasks, kfold_masks(len(y), 3, 0), widths, lambdas)
    X_new = np.linspace(-2, 2, 7)[:, None]
    total = 0.0
    for t, (loss, w, lam) in chosen.items():
        np.testing.assert_allclose(model.task_widths_[t], w, rtol=1e-10)
        np.testing.assert_allclose(model.task_params_[t], lam, rtol=1e-10)
        np.testing.assert_allclose(model.predict(X_new, np.full(7, t)), _refit_predict(X, y, tasks, t, w, lam, X_new),
                                   rtol=1e-6, atol=1e-8)
        total += loss
    np.testing.assert_allclose(model.best_score_, total, rtol=1e-6)


def test_family_selection_independent_and_shared_tasks():
    independent = [lambda x: 3 * np.sin(3 * x), lambda x: x**2 - 1, lambda x: -2 * np.cos(x) + 4, lambda x: 0.5 * x]
    X, y, tasks = _tasks([24] * 4, independent, 0.1, 1)
    m = MultiTaskRegressor(n_steps=40, omegas=[0.0, 0.5, 1.0]).fit(X, y, tasks)
    assert m.family_ == "independent", m.family_scores_
    X, y, tasks = _tasks([5] * 8, [np.sin] * 8, 0.1, 2)
    m = MultiTaskRegressor(n_steps=40, omegas=[0.0, 0.5, 1.0]).fit(X, y, tasks)
    assert m.family_ == "common_similarity", m.family_scores_
    assert m.best_params_["omega"] >= 0.5
    assert set(m.family_scores_) == {"independent", "common_similarity"}


def test_independent_family_float32(monkeypatch):
    import jax

    X, y, tasks = _tasks([10, 14], [np.sin, np.cos], 0.05, 3)
    with jax.enable_x64(False):
        m = MultiTaskRegressor(family="independent", n_steps=50).fit(X.astype(np.float32), y.astype(np.float32), tasks)
        pred = m.predict(X.astype(np.float32), tasks)
    assert np.all(np.isfinite(pred)) and m.coef_.dtype == np.float32
    assert np.mean((pred - y) ** 2) < 0.1 * np.var(y)


def test_bad_task_input_errors_and_keeps_the_fit():
    X, y, tasks = _tasks([8, 8], [np.sin, np.cos], 0.05, 4)
    m = MultiTaskRegressor(n_steps=10, omegas=[0.0, 1.0]).fit(X, y, tasks)
    before = m.predict(X, tasks)
    m.set_params(family="independent")
    with pytest.raises(TaskError, match=r"single example.*family='common_similarity'"):
        m.fit(np.r_[X, X[:1]], np.r_[y, 0.0], np.r_[tasks, 7])
    m.set_params(family="auto")
    with pytest.raises(TaskError, match="not seen during fit"):
        m.predict(X[:2], [0, 5])
    with pytest.raises(TaskError, match="str.*integer"):
        m.predict(X[:2], ["0", "1"])
    with pytest.raises(TaskError, match="integers or strings"):
        m.fit(X, y, [{"task": 0}] * len(y))
    np.testing.assert_array_equal(m.predict(X, tasks), before)
    for family in ("common_similarity", "auto"):  # 'auto' keeps the common family: task 7 has no fold of its own
        one = MultiTaskRegressor(n_steps=10, omegas=[0.0, 1.0], family=family).fit(np.r_[X, X[:1]], np.r_[y, 0.0],
                                                                             np.r_[tasks, 7])
        assert one.family_ == "common_similarity"


def test_family_arguments_checked():
    X, y, tasks = _tasks([6, 6], [np.sin, np.cos], 0.05, 5)
    with pytest.raises(ParameterError, match="family must be one of"):
        MultiTaskRegressor(family="shared").fit(X, y, tasks)
    with pytest.raises(ParameterError, match="selects on folds"):
        MultiTaskRegressor(family="independent", selection="loo").fit(X, y, tasks)
    from jaxmtl import Laplacian

    with pytest.raises(ParameterError, match="Gaussian"):
        MultiTaskRegressor(family="independent", kernel=Laplacian(1.0)).fit(X, y, tasks)
    m = MultiTaskRegressor(kernel=Gaussian(1.0), n_steps=10, omegas=[0.0, 1.0]).fit(X, y, tasks)
    if m.family_ == "independent":
        np.testing.assert_array_equal(m.task_widths_, [1.0, 1.0])
