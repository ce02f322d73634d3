"""Size buckets for the closed-form selections and the multi-task common-similarity family.

Leave-one-out and GCV on bucket-padded arrays (the real row count ``n`` given) against an explicit
leave-one-out loop and the dense GCV formula on the real rows; padded fits of
``MultiTaskRegressor`` (leave-one-out by default, GCV) and of the eigen-path estimators' closed forms
against the same fits without padding (``size_bucket`` the identity): float64 to 1e-10, float32
within ``FLOAT32_PROMISE``; and the programs a default fit compiles at another n of its bucket: none.
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FLOAT32_PROMISE, X64

from jaxmtl import MultiTaskRegressor, VectorValuedRegressor
from jaxmtl.filters import Landweber, Tikhonov
from jaxmtl.kernels import Gaussian
from jaxmtl.models import _buckets, _matrix_free, _per_task, _spectral, multitask
from jaxmtl.operators import separable_eigh
from jaxmtl.paths.direct import direct_losses
from jaxmtl.selection import gcv_path, loo_path

TOL = {"rtol": 1e-10, "atol": 1e-12} if X64 else {"rtol": FLOAT32_PROMISE["rtol"], "atol": FLOAT32_PROMISE["atol"]}
# Closed forms near interpolation divide by 1 − diag H (leave-one-out) or (1 − tr H/n)² (GCV): there two
# eigendecompositions of the same Gram (padded or not) agree only to ε times that amplification (1e-8
# measured at a GCV loss 10⁶ times the best); the points that decide the selection are held to TOL
NEAR_BEST = 10.0
FAR_RTOL = 1e-7 if X64 else 1e-2


def _unpadded(monkeypatch):
    """Fits without padding: every bucket its own size."""
    for module in (_spectral, _per_task, _matrix_free, multitask):
        monkeypatch.setattr(module, "size_bucket", lambda n, bits=None: int(n))
    for module in (_per_task, multitask):
        monkeypatch.setattr(module, "task_block", lambda largest, rows, n_tasks: int(largest))


def _tasks_data(n, seed=0, duplicates=4, single=True):
    """(X (n, 2), y (n,), tasks (n,)): three tasks, the last ``duplicates`` rows repeat the first ones
    (a repeated eigenvalue 0 of the Gram) and with ``single`` a fourth task of one row."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n - duplicates, 2))
    X = np.concatenate([X, X[:duplicates]])
    tasks = np.r_[np.arange(n - 1) % 3, 3] if single else np.arange(n) % 3
    y = np.sin(X[:, 0]) + 0.3 * tasks + 0.1 * rng.normal(size=n)
    return X, y, tasks


def _close_scores(padded, plain, reference=None):
    """The same validation losses: the same infinite points; in float64 within ``NEAR_BEST`` × the
    best to TOL, elsewhere to ``FAR_RTOL`` (see its comment). In float32 a closed form near
    interpolation keeps few digits whatever the padding (a loss at λ = 10⁻⁶ moves by 3 %): there the
    padded losses near the best are as close to the unpadded ones as float32's own error allows —
    within twice the distance of the unpadded losses from the float64 ``reference`` (+ atol)."""
    padded, plain = np.asarray(padded), np.asarray(plain)
    finite = np.isfinite(plain)
    np.testing.assert_array_equal(np.isfinite(padded), finite)
    near = finite & (plain <= NEAR_BEST * np.min(plain[finite]))
    if X64:
        np.testing.assert_allclose(padded[near], plain[near], **TOL)
        np.testing.assert_allclose(padded[finite], plain[finite], rtol=FAR_RTOL, atol=TOL["atol"])
    elif reference is not None and np.shape(reference) == plain.shape:  # the same grid searched
        error = np.max(np.abs(plain[near] - np.asarray(reference)[near]))
        assert np.max(np.abs(padded[near] - plain[near])) <= 2 * error + FLOAT32_PROMISE["atol"]


def _compare_fits(padded, plain, reference, X, tasks, y):
    """The same selection and model (float64 to TOL; float32: the same losses as :func:`_close_scores`
    says, and where the same point is selected test errors within its error factor)."""
    _close_scores(padded.cv_scores_, plain.cv_scores_, None if reference is None else reference.cv_scores_)
    assert padded.family_ == plain.family_
    rtol = TOL["rtol"] if X64 else 5e-2  # float32: a family's loss at its selected point (see above)
    np.testing.assert_allclose(list(padded.family_scores_.values()), list(plain.family_scores_.values()), rtol=rtol)
    assert np.asarray(padded.coef_).shape == (len(y), 1) or padded.family_ == "independent"
    if X64:
        assert repr(padded.best_params_) == repr(plain.best_params_)
        np.testing.assert_allclose(np.asarray(padded.coef_), np.asarray(plain.coef_), **TOL)
        np.testing.assert_allclose(padded.predict(X, tasks), plain.predict(X, tasks), **TOL)
    elif repr(padded.best_params_) == repr(plain.best_params_):
        errors = [np.mean((m.predict(X, tasks) - y) ** 2) for m in (padded, plain)]
        factor, atol = FLOAT32_PROMISE["error_factor"], FLOAT32_PROMISE["error_atol"]
        assert errors[0] <= factor * errors[1] + atol and errors[1] <= factor * errors[0] + atol


def _fits(monkeypatch, make, *data):
    """(padded fit, unpadded fit, the unpadded float64 fit in the float32 run (else None))."""
    padded = make().fit(*data)
    _unpadded(monkeypatch)
    return padded, make().fit(*data), None if X64 else make(dtype="float64").fit(*data)


@pytest.mark.parametrize("selection", ["auto", "gcv"])
def test_multitask_common_similarity_fit_padded_equals_unpadded(monkeypatch, selection):
    X, y, tasks = _tasks_data(41)  # bucket 44: three padded rows; duplicate rows, a task of one row
    assert _buckets.size_bucket(41) == 44
    padded, plain, reference = _fits(monkeypatch, partial(MultiTaskRegressor, selection=selection), X, y, tasks)
    assert padded.family_ == "common_similarity"  # a task of one row: the independent family is not fitted
    _compare_fits(padded, plain, reference, X, tasks, y)


def test_multitask_default_fit_with_both_families_padded_equals_unpadded(monkeypatch):
    X, y, tasks = _tasks_data(37, seed=1, duplicates=3, single=False)  # bucket 40; comparison on task folds
    padded, plain, reference = _fits(monkeypatch, MultiTaskRegressor, X, y, tasks)
    assert set(padded.family_scores_) == {"common_similarity", "independent"}
    _compare_fits(padded, plain, reference, X, tasks, y)


@pytest.mark.parametrize("one_task", [False, True])
def test_multitask_matrix_free_fit_padded_equals_unpadded(monkeypatch, one_task):
    """The matrix-free route on bucket-padded rows: task blocks (three tasks and one of a single row,
    duplicate rows) or, with one task, the dense same-task mask."""
    X, y, tasks = _tasks_data(129, seed=4)  # the matrix-free route's finer bucket: 132
    assert _buckets.size_bucket(129, _buckets.FINE_BUCKET_BITS) == 132
    tasks = np.zeros_like(tasks) if one_task else tasks
    make = partial(MultiTaskRegressor, route="matrix_free", family="common_similarity")
    padded, plain, reference = _fits(monkeypatch, make, X, y, tasks)
    assert padded.route_ == "matrix_free" and np.asarray(padded.coef_).shape == (129, 1)
    _compare_fits(padded, plain, reference, X, tasks, y)


@pytest.mark.parametrize("selection", ["loo", "gcv"])
@pytest.mark.parametrize("route", ["eigen", "direct"])
def test_eigen_path_closed_forms_padded_equal_unpadded(monkeypatch, selection, route):
    X, y, _ = _tasks_data(21, seed=2, duplicates=3)  # bucket 22
    Y = np.c_[y, np.cos(X[:, 1])]
    lambdas = np.geomspace(1e-6, 1.0, 30)  # above 10⁻⁶: see test_buckets' comment on conditioning
    make = partial(VectorValuedRegressor, selection=selection, route=route, filter="tikhonov", lambdas=lambdas)
    padded, plain, reference = _fits(monkeypatch, make, X, Y)
    assert padded.route_ == route
    _close_scores(padded.cv_scores_, plain.cv_scores_, None if reference is None else reference.cv_scores_)
    if X64:
        assert repr(padded.best_params_) == repr(plain.best_params_)
        np.testing.assert_allclose(np.asarray(padded.coef_), np.asarray(plain.coef_), **TOL)


# ----------------------------------------------------------------- the closed forms against references
def _padded_problem(n=13, pad=5, d=2, seed=3):
    """K (n, n) real Gram (two duplicate inputs), A (d, d), Y (n, d); and their padded forms: K with a
    zero block, Y with zero rows (``pad`` of them)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    X[-2:] = X[:2]
    K = np.asarray(Gaussian(1.3)(jnp.asarray(X), jnp.asarray(X)), np.float64)
    A = np.array([[1.0, 0.4], [0.4, 0.7]])[:d, :d]
    Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1])][:, :d] + 0.1 * rng.normal(size=(n, d))
    Kp = np.zeros((n + pad, n + pad))
    Kp[:n, :n] = K
    return K, A, Y, Kp, np.concatenate([Y, np.zeros((pad, d))])


def _loo_loop(K, A, Y, lam):
    """Leave-one-input-out by refitting: (K₋ᵢ ⊗ A + nλI) vec C = vec Y₋ᵢ with the penalty nλ of all n
    rows held fixed (what the closed form computes exactly for Tikhonov), predicted at input i."""
    n, d = Y.shape
    errs = []
    for i in range(n):
        keep = np.arange(n) != i
        G = np.kron(K[np.ix_(keep, keep)], A) + n * lam * np.eye((n - 1) * d)
        C = np.linalg.solve(G, Y[keep].reshape(-1)).reshape(n - 1, d)
        errs.append(np.sum((K[i, keep] @ C @ A - Y[i]) ** 2) / d)
    return np.mean(errs)


def _dense_hat(K, A, h):
    """The hat matrix (nd × nd) h(Γ/n) of Γ = K ⊗ A (row-major vec), h applied to its eigenvalues."""
    n = K.shape[0]
    s, W = np.linalg.eigh(np.kron(K, A) / n)
    return (W * h(np.maximum(s, 0.0))) @ W.T


def _gcv_dense(K, A, Y, h):
    n, d = Y.shape
    H = _dense_hat(K, A, h)
    R = Y.reshape(-1) - H @ Y.reshape(-1)
    return (R @ R / (n * d)) / (1 - np.trace(H) / (n * d)) ** 2


def _loo_dense(K, A, Y, h):
    """The linear-smoother leave-one-input-out loss eᵢ = (I − Bᵢ)⁻¹(yᵢ − fᵢ) from the dense hat matrix."""
    n, d = Y.shape
    H = _dense_hat(K, A, h)
    R = (Y.reshape(-1) - H @ Y.reshape(-1)).reshape(n, d)
    errs = [np.linalg.solve(np.eye(d) - H[i * d:(i + 1) * d, i * d:(i + 1) * d], R[i]) for i in range(n)]
    return np.mean(np.sum(np.square(errs), axis=1)) / d


def _jnp(*arrays):
    dtype = jnp.float64 if X64 else jnp.float32
    return [jnp.asarray(a, dtype) for a in arrays]


@pytest.mark.parametrize("d", [1, 2])
def test_padded_tikhonov_loo_and_gcv_equal_the_loop_and_the_dense_formula_on_the_real_rows(d):
    K, A, Y, Kp, Yp = _padded_problem(d=d)
    n = K.shape[0]
    lams = np.array([1e-1, 1e-2, 1e-3])
    loo_ref = [_loo_loop(K, A, Y, lam) for lam in lams]
    gcv_ref = [_gcv_dense(K, A, Y, lambda s, lam=lam: s / (s + lam)) for lam in lams]
    Kj, Aj, Yj, lj = _jnp(Kp, A, Yp, lams)
    eig = separable_eigh(Kj, Aj)
    tol = TOL if X64 else {"rtol": 1e-3, "atol": 1e-5}
    np.testing.assert_allclose(loo_path(eig, Yj, Tikhonov(), lj, n=n), loo_ref, **tol)
    np.testing.assert_allclose(gcv_path(eig, Yj, Tikhonov(), lj, n=n), gcv_ref, **tol)
    if d == 1:  # the direct route: Cholesky factors of K + nλI, whose padded block is nλI
        one, eye = jnp.ones(1, Kj.dtype), jnp.eye(1, dtype=Kj.dtype)
        for kind, ref in (("loo", loo_ref), ("gcv", gcv_ref)):
            res = direct_losses(Kj, Yj, one, eye, Tikhonov(), lj, kind, n=n)
            assert bool(res.ok)
            np.testing.assert_allclose(res.losses, ref, **tol)


def test_padded_landweber_loo_and_gcv_equal_the_dense_hat_matrix_formulas():
    K, A, Y, Kp, Yp = _padded_problem()
    n, steps = K.shape[0], 40
    tau = 1.0 / np.max(np.linalg.eigvalsh(np.kron(K, A) / n))  # the default step 1/σ_max of the real Γ/n
    h = lambda s: 1.0 - (1.0 - tau * s) ** steps  # noqa: E731 — σ g_t(σ) of Landweber after t steps
    Kj, Aj, Yj = _jnp(Kp, A, Yp)
    eig = separable_eigh(Kj, Aj)
    t = jnp.arange(1, steps + 1)
    tol = TOL if X64 else {"rtol": 2e-3, "atol": 1e-5}
    np.testing.assert_allclose(loo_path(eig, Yj, Landweber(), t, n=n)[-1], _loo_dense(K, A, Y, h), **tol)
    np.testing.assert_allclose(gcv_path(eig, Yj, Landweber(), t, n=n)[-1], _gcv_dense(K, A, Y, h), **tol)


def test_a_padded_row_is_never_left_out():
    """Padded rows carry zero weight: giving the padding nonzero outputs changes nothing (in exact
    arithmetic their residuals are 0 anyway; here they are not, and still do not count)."""
    K, A, Y, Kp, Yp = _padded_problem(d=1)
    n = K.shape[0]
    Kj, Aj, Yj, lj = _jnp(Kp, A[:1, :1], Yp, [1e-2])
    eig = separable_eigh(Kj, Aj)
    dirty = Yj.at[n:].set(5.0)
    loo, gcv = loo_path(eig, Yj, Tikhonov(), lj, n=n), gcv_path(eig, Yj, Tikhonov(), lj, n=n)
    np.testing.assert_allclose(loo_path(eig, dirty, Tikhonov(), lj, n=n), loo, **TOL)
    np.testing.assert_allclose(gcv_path(eig, dirty, Tikhonov(), lj, n=n), gcv, **TOL)


# ----------------------------------------------------------------- programs
def _multitask_rows(n_max=60, seed=5):
    """(X, y, tasks) of ``n_max`` rows, three tasks in turn."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_max, 2))
    tasks = np.arange(n_max) % 3
    return X, np.sin(X[:, 0]) + tasks + 0.1 * rng.normal(size=n_max), tasks


@pytest.mark.parametrize("selection", ["auto", "gcv"])
def test_a_default_multitask_fit_compiles_nothing_at_another_n_of_its_bucket(programs, selection):
    X, y, tasks = _multitask_rows()
    jax.clear_caches()
    MultiTaskRegressor(selection=selection).fit(X[:50], y[:50], tasks[:50])  # bucket 52; per-task blocks of 30
    first = programs.count
    assert 0 < first <= 8
    MultiTaskRegressor(selection=selection).fit(X[:49], y[:49], tasks[:49])
    MultiTaskRegressor(selection=selection).fit(X[2:54], y[2:54], tasks[2:54])  # 52 rows, other data
    assert programs.count == first


def test_a_continued_path_and_the_families_comparison_compile_nothing_after_a_fit_that_stopped_inside(programs):
    """On the exact route the path is compiled for its continued length and the comparison's folds
    score the selected path at that length either way: after a fit that stopped inside 300 steps, a
    fit of the bucket whose best step was the last (noiseless outputs: the path continued to 2400
    steps, the selected ω alone scored in the grid's program) compiles nothing."""
    X, y, tasks = _multitask_rows()
    smooth = np.sin(X[:, 0]) + tasks
    jax.clear_caches()
    inside = MultiTaskRegressor().fit(X[:49], y[:49], tasks[:49])
    first = programs.count
    continued = MultiTaskRegressor().fit(X[:50], smooth[:50], tasks[:50])
    assert continued.path_params_[-1] == 2400 and inside.path_params_[-1] == 300
    assert programs.count == first


def test_multitask_cross_validation_folds_reuse_the_first_folds_programs(programs):
    from sklearn.model_selection import KFold

    X, y, tasks = _multitask_rows(50, seed=6)
    jax.clear_caches()
    counts = []
    # 33, 33 and 34 training rows: bucket 36; the largest task 11 or 12 rows: per-task blocks of 24
    folds = list(KFold(3, shuffle=True, random_state=1).split(X))
    for train, test in folds:
        before = programs.count
        model = MultiTaskRegressor().fit(X[train], y[train], tasks[train])
        counts.append(programs.count - before)
        model.score(X[test], y[test], tasks[test])  # a family the first fold did not select predicts once
    # a later fold compiles nothing, its path's continuation included (the grid's own program)
    assert counts[0] > 0 and counts[1:] == [0, 0]
    before = programs.count
    for train, test in folds:  # every fold again, as cross_val_score runs them: nothing new
        MultiTaskRegressor().fit(X[train], y[train], tasks[train]).score(X[test], y[test], tasks[test])
    assert programs.count == before


def test_independent_family_on_shuffled_folds_compiles_only_in_the_first_fold(programs):
    """Shuffled folds move the largest task by a few rows (here 24 to 28 of 80): every fold's
    per-task blocks are one size (``_buckets.task_block``), so later folds, and their predictions,
    compile nothing."""
    from sklearn.model_selection import KFold

    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 2))
    tasks = rng.integers(0, 4, 100)
    y = np.sin(X[:, 0]) + tasks + 0.1 * rng.normal(size=100)
    jax.clear_caches()
    counts, largest = [], set()
    for train, test in KFold(5, shuffle=True, random_state=0).split(X):
        before = programs.count
        MultiTaskRegressor(family="independent").fit(X[train], y[train], tasks[train]).predict(X[test], tasks[test])
        counts.append(programs.count - before)
        largest.add(int(np.bincount(tasks[train]).max()))
    assert len({_buckets.size_bucket(r) for r in largest}) > 1  # the largest task's own bucket moves
    assert counts[0] > 0 and counts[1:] == [0] * 4


def test_a_matrix_free_fit_compiles_nothing_at_another_n_of_its_bucket(programs):
    """The matrix-free route's programs are the bucket's: the grid's paths and the refit, compiled for
    the path's length and stopped at the selected step. Where a path is continued (its best step the
    grid's last: data-dependent) the continuation and its refit are two programs of their own, so a
    fit compiles nothing once a fit of the bucket has continued its path, or not, as it does."""
    X, y, tasks = _multitask_rows(150, seed=8)
    jax.clear_caches()
    make = partial(MultiTaskRegressor, route="matrix_free", family="common_similarity")
    seen: set[int] = set()
    # the finer bucket 132 (129 … 132 rows), other data
    for rows in (slice(0, 130), slice(0, 129), slice(2, 134), slice(0, 131), slice(5, 135), slice(1, 130)):
        before = programs.count
        length = len(make().fit(X[rows], y[rows], tasks[rows]).path_params_)  # longer where continued
        new = programs.count - before
        assert 0 < new <= 8 if not seen else new == 0 if length in seen else new <= 2
        seen.add(length)


def test_step_size_on_padded_rows_is_the_unpadded_one_eager_and_under_jit():
    """``paths.step_size`` with the padding zeroed gives the τ of ``path_scan``'s own default on the
    real rows (the same Lanczos start there), eagerly and inside ``jax.jit``."""
    from jaxmtl.operators import SeparableOperator
    from jaxmtl.paths import path_scan, step_size

    rng = np.random.default_rng(5)
    n, size, d = 13, 16, 2
    X = rng.normal(size=(n, 2))
    K = np.asarray(Gaussian(1.1)(jnp.asarray(X), jnp.asarray(X)))
    dtype = jnp.float64 if X64 else jnp.float32
    Kp = np.zeros((size, size))
    Kp[:n, :n] = K
    Y = rng.normal(size=(n, d))
    A = jnp.eye(d, dtype=dtype)
    plain = path_scan(SeparableOperator(jnp.asarray(K, dtype), A), jnp.asarray(Y, dtype), Landweber(), 1).tau
    valid = jnp.arange(size) < n
    op = SeparableOperator(jnp.asarray(Kp, dtype), A)
    Yp = jnp.asarray(np.r_[Y, np.zeros((size - n, d))], dtype)
    for fn in (step_size, jax.jit(step_size)):
        np.testing.assert_allclose(float(fn(op, Yp, valid, valid)), float(plain), rtol=TOL["rtol"])
