"""Size buckets for the mixed-effect estimator: ``MixedEffectRegressor``.

A fit on n rows runs Algorithm 4 on padded arrays — the examples, their distinct inputs and the
validation rows padded to their size buckets with zero rows (the distinct inputs masked out of
Ǩ, the examples in no task, the validation rows of weight 0), every task of a kernel in one block
of ``task_block``'s width — and is compared with the same fit unpadded (``size_bucket`` the
identity, every block the largest task's width): the same selected (α, λ), validation losses,
coefficients and predictions, on both routes of the grid (the λ path, one eigendecomposition per
α, and Algorithm 4 at every pair). Nothing here stops on a tolerance, but the grid's smallest λ
(10⁻⁷) solve systems of condition number ~10⁸, which amplify the round-off of sums over
the padded zeros (and of eigendecompositions of another size): in float64 the validation losses
within ``NEAR_BEST`` × the best — those that decide the selection — agree to 1e-8 relative (2·10⁻¹¹
measured), the others, up to 10⁵ × the best where α → 1 interpolates at λ = 10⁻⁷, to ``FAR_RTOL``
(2.3·10⁻⁷ measured), the coefficients and predictions to 1e-8 (2·10⁻¹³ measured); in
float32 all within ``FLOAT32_PROMISE`` (the coefficients on the scale of the largest). A default
fit at another n of its bucket compiles no program.
"""

import jax
import numpy as np
import pytest
from conftest import FLOAT32_PROMISE, X64

from jaxmtl import MixedEffectRegressor
from jaxmtl.models import _buckets, mixed_effect

N = 37  # bucket 40: 3 padded rows (the split's training examples 30 of 32, its validation rows 7 of 8)
TOL = {"rtol": 1e-8, "atol": 1e-12} if X64 else {"rtol": FLOAT32_PROMISE["rtol"], "atol": FLOAT32_PROMISE["atol"]}
NEAR_BEST = 10.0
FAR_RTOL = 1e-6 if X64 else FLOAT32_PROMISE["rtol"]
GRID = {"alphas": np.linspace(0.0, 1.0, 6), "lams": np.logspace(-7.0, 0.0, 8)}  # the default's ends, shorter


def _data(n, seed=0):
    """(X (n, 2), y (n,), tasks (n,)): four tasks, y = sin(x₀) + x₁ + task + noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    tasks = np.arange(n) % 4
    return X, np.sin(X[:, 0]) + X[:, 1] + tasks + 0.1 * rng.normal(size=n), tasks


def _degenerate(n):
    """:func:`_data` with a task of one row and 12 inputs repeated: 8 by other tasks (shared across
    tasks: fewer distinct inputs than examples), 4 in their own task (merged into one example)."""
    X, y, tasks = _data(n, seed=1)
    X[-12:] = X[:12]
    tasks = tasks.copy()
    tasks[-4:] = tasks[:4]
    tasks[-5] = 7
    return X, y + 0.05 * (np.arange(n) >= n - 12), tasks


def _padded_and_plain(monkeypatch, route, X, y, tasks, weights=None, **kwargs):
    """(the fit padded to its buckets, the same fit unpadded) on ``route``: 'path' (as the data
    decide: here the λ path) or 'algorithm4' (Algorithm 4 at every (α, λ))."""
    assert _buckets.size_bucket(len(X)) > len(X)
    if route == "algorithm4":
        monkeypatch.setattr(mixed_effect, "_path_pays_off", lambda *args: False)
    padded = MixedEffectRegressor(**GRID, **kwargs).fit(X, y, tasks, sample_weight=weights)
    monkeypatch.setattr(mixed_effect, "size_bucket", lambda n, bits=None: int(n))  # every bucket its own size
    monkeypatch.setattr(mixed_effect, "_padded_size", lambda count, size: int(count))
    monkeypatch.setattr(mixed_effect, "task_block", lambda largest, rows, n_tasks: int(largest))
    return padded, MixedEffectRegressor(**GRID, **kwargs).fit(X, y, tasks, sample_weight=weights)


def _close(actual, desired):
    """Within TOL, in float32 the absolute part on the scale of ``desired`` (its largest entry)."""
    desired = np.asarray(desired)
    atol = TOL["atol"] if X64 else FLOAT32_PROMISE["rtol"] * np.abs(desired).max()
    np.testing.assert_allclose(np.asarray(actual), desired, rtol=TOL["rtol"], atol=atol)


def _check(padded, plain, n_tasks):
    """The same selection, validation losses (see the module docstring; the same pairs left out in
    float32), coefficients, intercept and predictions — also for a task not seen in fit — as the
    unpadded fit."""
    assert (padded.alpha_, padded.lam_) == (plain.alpha_, plain.lam_)
    finite = np.isfinite(plain.cv_scores_)
    np.testing.assert_array_equal(np.isfinite(padded.cv_scores_), finite)
    assert finite.sum() >= 8
    near = finite & (plain.cv_scores_ <= NEAR_BEST * np.min(plain.cv_scores_[finite]))
    np.testing.assert_allclose(padded.cv_scores_[near], plain.cv_scores_[near], **TOL)
    np.testing.assert_allclose(padded.cv_scores_[finite], plain.cv_scores_[finite], rtol=FAR_RTOL, atol=TOL["atol"])
    assert padded.coef_.shape == plain.coef_.shape and padded.coef_unique_.shape == plain.coef_unique_.shape
    np.testing.assert_array_equal(padded.X_unique_, plain.X_unique_)
    _close(padded.coef_, plain.coef_)
    _close(padded.coef_unique_, plain.coef_unique_)
    _close(padded.intercept_, plain.intercept_)
    X_test = np.random.default_rng(5).normal(size=(50, 2))
    tasks_test = np.arange(50) % (n_tasks + 1)  # the last: not seen in fit
    for part, reference in zip(padded.predict_parts(X_test, tasks_test), plain.predict_parts(X_test, tasks_test)):
        _close(part, reference)


@pytest.mark.parametrize("route", ["path", "algorithm4"])
def test_fit_padded_equals_unpadded(monkeypatch, route):
    X, y, tasks = _data(N)
    padded, plain = _padded_and_plain(monkeypatch, route, X, y, tasks)
    assert padded.coef_.shape == (N,)
    _check(padded, plain, 4)


@pytest.mark.parametrize("route", ["path", "algorithm4"])
def test_degenerate_data_padded_equal_unpadded(monkeypatch, route):
    """A task of one row (its block all padding but one position), inputs shared across tasks
    (fewer distinct inputs than examples, padded to their own bucket: 25 to 26 at the refit, the 33
    merged examples to 36) and repeats inside a task (merged), with sample weights and without an
    intercept."""
    X, y, tasks = _degenerate(N)
    weights = np.random.default_rng(2).uniform(0.5, 2.0, N)
    padded, plain = _padded_and_plain(monkeypatch, route, X, y, tasks, weights, fit_intercept=False)
    assert len(padded.X_unique_) == 25 and _buckets.size_bucket(25) == 26 and padded.coef_.shape == (33,)
    _check(padded, plain, 5)


def test_a_default_fit_compiles_nothing_at_another_n_of_its_bucket(programs):
    X, y, tasks = _data(40, seed=3)
    assert _buckets.size_bucket(37) == _buckets.size_bucket(38) == 40
    jax.clear_caches()
    MixedEffectRegressor().fit(X[:37], y[:37], tasks[:37]).predict(X, tasks)  # bucket 40
    first = programs.count
    MixedEffectRegressor().fit(X[1:39], y[1:39], tasks[1:39]).predict(X, tasks)  # 38 rows, other data
    MixedEffectRegressor().fit(X, y, tasks).predict(X, tasks)
    assert programs.count == first


def test_a_task_without_examples_keeps_a_row_of_padding_in_its_block():
    """A hold-out split that leaves a task out: in a block that task keeps a row of padding only
    (so the split compiles the shapes of the fit on all rows), and Algorithm 4's solution and the
    predictions equal those of the size-class layout, which holds the tasks with examples only."""
    from jaxmtl.kernels import Gaussian
    from jaxmtl.mixed_effect.centralized import build_query, predict_query, prepare, solve, task_layout

    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(20, 2)), rng.normal(size=20)
    codes = rng.integers(0, 4, 20)
    codes[codes == 2] = 3  # task 2 has no example
    kernel_of, k_bar = (lambda t: Gaussian(0.7)), Gaussian(1.3)
    # one block of 16 rows per kernel (n_unique enters the block's cost check only)
    blocked = task_layout(codes, 4, kernel_of, block=lambda largest, rows, tasks: 16, n_unique=40)
    classes = task_layout(codes, 4, kernel_of)
    assert classes.slot[2].tolist() == [-1, -1] and sum(len(r) for r, _ in classes.buckets) == 3
    (rows, _), = blocked.buckets
    assert rows.shape == (4, 16) and (rows[blocked.slot[2, 1]] == -1).all()
    inverse, w = np.arange(20), np.ones(20)
    Xq = rng.normal(size=(8, 2))
    codes_q = np.arange(8) % 4
    out = []
    for layout in (blocked, classes):
        coef_unique, coef = solve(prepare(X, inverse, w, layout, k_bar), y[:, None], 0.4, 0.1)
        query = build_query(Xq, layout.slot[codes_q], X, X, layout, k_bar)
        out.append((coef_unique, coef, *predict_query(query, coef_unique, coef, 0.4)))
    for got, ref in zip(*out):
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref), **TOL)
    assert np.all(np.asarray(out[0][3])[codes_q == 2] == 0.0)  # no task part where the task had no example
