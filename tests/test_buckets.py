"""Size buckets: a fit pads its rows up a geometric ladder and masks them exactly.

Padded fits are compared with the same fits where ``size_bucket`` is the identity (no padding):
float64 to 1e-10, float32 within ``FLOAT32_PROMISE``; and a fit at another n of the same bucket
compiles no program (counted with ``jax.monitoring``'s backend-compile events).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import FLOAT32_PROMISE, X64

from jaxmtl import MultiClassClassifier, MultiTaskRegressor, VectorValuedRegressor
from jaxmtl.models import _buckets, _grid_routes, _per_task, _spectral
from jaxmtl.models._per_task import select_independent
from jaxmtl.models._task_folds import task_kfold_masks

LAMBDAS = np.geomspace(1e-6, 1.0, 30)
TOL = {"rtol": 1e-10, "atol": 1e-10} if X64 else {"rtol": FLOAT32_PROMISE["rtol"], "atol": FLOAT32_PROMISE["atol"]}


def _unpadded(monkeypatch):
    """Fits without padding: every bucket its own size."""
    for module in (_spectral, _per_task):
        monkeypatch.setattr(module, "size_bucket", lambda n, bits=None: int(n))
    monkeypatch.setattr(_per_task, "task_block", lambda largest, rows, n_tasks: int(largest))


def _data(n, seed=0, duplicates=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n - duplicates, 2))
    X = np.concatenate([X, X[:duplicates]])  # repeated rows: a repeated eigenvalue 0 of the Gram
    Y = np.c_[np.sin(2 * X[:, 0]) + X[:, 1], np.cos(X[:, 1])] + 0.1 * rng.normal(size=(n, 2))
    return X, Y


def test_size_bucket_ladder_pads_at_most_an_eighth():
    sizes = np.arange(1, 5000)
    buckets = np.array([_buckets.size_bucket(n) for n in sizes])
    assert np.all(buckets >= sizes) and np.all(np.diff(buckets) >= 0)
    assert np.max((buckets - sizes) / sizes) <= 0.125
    assert all(_buckets.size_bucket(b) == b for b in np.unique(buckets))
    assert len(np.unique(buckets)) < 100  # a few programs' sizes cover every n below 5000


def _compare(padded, plain, X, Y=None):
    """The same selection and model: float64 to 1e-10; float32 within its promise — the same
    validation losses, and where the same point is selected (not a tie broken by rounding) test
    errors within ``error_factor`` (the promise for a selected model: its coefficients carry the
    conditioning of the fit)."""
    assert padded.best_params_.keys() == plain.best_params_.keys()
    np.testing.assert_allclose(padded.cv_scores_, plain.cv_scores_, **TOL)
    if X64:
        assert repr(padded.best_params_) == repr(plain.best_params_)
        np.testing.assert_allclose(np.asarray(padded.coef_), np.asarray(plain.coef_), **TOL)
        np.testing.assert_allclose(padded.predict(X), plain.predict(X), **TOL)
    elif Y is not None and repr(padded.best_params_) == repr(plain.best_params_):
        errors = [np.mean((m.predict(X) - Y) ** 2) for m in (padded, plain)]
        factor, atol = FLOAT32_PROMISE["error_factor"], FLOAT32_PROMISE["error_atol"]
        assert errors[0] <= factor * errors[1] + atol and errors[1] <= factor * errors[0] + atol


@pytest.mark.parametrize("duplicates", [0, 5])
def test_vector_valued_fit_padded_equals_unpadded(monkeypatch, duplicates):
    X, Y = _data(21, duplicates=duplicates)  # bucket 22: one padded row
    assert _buckets.size_bucket(21) == 22
    # λ ≥ 10⁻⁶ in both families (the coupled family's default floor): the per-output family's default
    # grid runs down to 1.4·10⁻⁸, where the coefficients (of 10⁵ here) carry a condition number
    # ‖K‖/(nλ) of up to 10⁸, so two eigendecompositions (padded and not) agree only to ~ε·10⁸ (2·10⁻¹⁰
    # measured) whatever the padding; above 10⁻⁶ the 10⁻¹⁰ of TOL resolves what padding could change
    padded = VectorValuedRegressor(lambdas=LAMBDAS).fit(X, Y)
    _unpadded(monkeypatch)
    plain = VectorValuedRegressor(lambdas=LAMBDAS).fit(X, Y)
    assert padded.family_ == plain.family_
    np.testing.assert_allclose(list(padded.family_scores_.values()), list(plain.family_scores_.values()), **TOL)
    assert padded.coef_.shape == (21, 2) and padded.X_fit_.shape == (21, 2)
    X_test, Y_test = _data(200, seed=9)
    _compare(padded, plain, X_test, Y_test)


def test_classifier_fit_padded_equals_unpadded(monkeypatch):
    X, _ = _data(35, seed=1)  # bucket 36
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    padded = MultiClassClassifier().fit(X, y)
    _unpadded(monkeypatch)
    plain = MultiClassClassifier().fit(X, y)
    _compare(padded, plain, X)
    if X64:
        np.testing.assert_array_equal(padded.predict(X), plain.predict(X))


def test_independent_family_with_a_one_row_task_padded_equals_unpadded(monkeypatch):
    rng = np.random.default_rng(2)
    codes = np.repeat([0, 1, 2], [17, 9, 1])  # the largest task 17 rows: blocks of 20 (task_block)
    X = rng.normal(size=(27, 2))
    y = np.sin(X[:, 0]) + codes + 0.1 * rng.normal(size=27)
    y = y - y.mean()
    masks = task_kfold_masks(codes, 3)
    args = (X, y, codes, 3, masks, _spectral.resolve_filter(None, independent=True), np.geomspace(1e-4, 1, 8),
            np.array([0.5, 1.0, 2.0]), False)
    padded = select_independent(*args)
    _unpadded(monkeypatch)
    plain = select_independent(*args)
    np.testing.assert_allclose(padded[1:3], plain[1:3], **TOL)
    np.testing.assert_allclose(padded[3], plain[3], **TOL)
    r = plain[0].coef.shape[1]  # the padded fit keeps its whole blocks, zero past the largest task's rows
    np.testing.assert_allclose(np.asarray(padded[0].coef)[:, :r], np.asarray(plain[0].coef), **TOL)
    assert not np.asarray(padded[0].coef)[:, r:].any()
    np.testing.assert_allclose(padded[0].means, plain[0].means, **TOL)


@pytest.mark.parametrize("make", [VectorValuedRegressor, MultiClassClassifier])
def test_a_default_fit_compiles_a_few_programs_and_none_at_another_n_of_its_bucket(programs, make):
    X, Y = _data(40, seed=3)
    y = Y if make is VectorValuedRegressor else (Y[:, 0] > 0).astype(int) + (Y[:, 1] > 0.8)
    jax.clear_caches()
    make().fit(X[:35], y[:35])  # bucket 36
    first = programs.count
    assert 0 < first <= 8
    make().fit(X[1:34], y[1:34])  # 33 rows: the same bucket, other data
    make().fit(X[:36], y[:36])
    assert programs.count == first


def test_a_continued_path_compiles_nothing_after_a_fit_whose_path_was_not(programs):
    """The continuation of a default path whose best step is its last (noiseless data) is the
    grid's own program, compiled for the continued length: a fit of the same bucket that needs
    it compiles nothing after one that did not."""
    X, Y = _data(40, seed=1)
    jax.clear_caches()
    first = VectorValuedRegressor().fit(X[:35], Y[:35])  # bucket 36: its best step is not the last
    before = programs.count
    Y_exact = np.c_[np.sin(2 * X[:, 0]) + X[:, 1], np.cos(X[:, 1])]
    second = VectorValuedRegressor().fit(X[1:34], Y_exact[1:34])
    assert len(second.path_params_) > len(first.path_params_)  # continued
    assert programs.count == before


def test_cross_validation_folds_reuse_the_first_folds_programs(programs):
    from sklearn.model_selection import KFold, cross_val_score

    X, Y = _data(50, seed=4)
    jax.clear_caches()
    model = VectorValuedRegressor()
    counts = []
    for train, test in KFold(3, shuffle=True, random_state=0).split(X):  # 33 or 34 training rows: bucket 34
        before = programs.count
        model.fit(X[train], Y[train])
        counts.append(programs.count - before)
        model.predict(X[test])  # a family the first fold did not select compiles its predictions once
    # a later fold compiles nothing, its path's continuation included (the grid's own program)
    assert counts[0] > 0 and counts[1:] == [0, 0]
    before = programs.count
    cross_val_score(model, X, Y, cv=3)
    assert programs.count == before


def test_multitask_independent_family_reuses_its_programs_within_a_bucket(programs):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 2))
    tasks = np.arange(60) % 3
    y = np.sin(X[:, 0]) + tasks + 0.1 * rng.normal(size=60)
    MultiTaskRegressor(family="independent").fit(X[:50], y[:50], tasks[:50])  # largest task 17 rows: blocks of 30
    first = programs.count
    MultiTaskRegressor(family="independent").fit(X[:52], y[:52], tasks[:52])  # 18 rows
    assert programs.count == first


def test_task_blocks_of_the_folds_of_one_data_set_are_one_size():
    """Random folds move the largest task by a few rows; folds of one bucket of rows share a block
    (which holds every task), where the bucket of the largest task alone would not."""
    rng = np.random.default_rng(0)
    for n, n_tasks in [(100, 4), (200, 4), (500, 3), (1000, 10)]:
        codes = rng.integers(0, n_tasks, n)
        for k in (3, 5, 10):
            blocks: dict = {}
            for held in np.array_split(rng.permutation(n), k):
                rows = np.setdiff1d(np.arange(n), held)
                largest = np.bincount(codes[rows]).max()
                block = _buckets.task_block(largest, len(rows), n_tasks)
                assert block >= largest
                blocks.setdefault(_buckets.size_bucket(len(rows)), set()).add(block)
            assert all(len(b) == 1 for b in blocks.values()), (n, n_tasks, k, blocks)


# ------------------------------------------------ a batch of kernels padded, its padding skipped
def _widths_scorer(batch):
    """``score(widths)``: (W, P, L) LOO losses of a multi-task operator's widths in batches of
    ``batch`` (the last padded, its padding skipped) through the estimators' ``_score_kernels``."""
    from jaxmtl.filters import Tikhonov
    from jaxmtl.kernels import Gaussian
    from jaxmtl.models._grid_search import _score_kernels
    from jaxmtl.models.multitask import _build_dense
    from jaxmtl.paths.dense import dense_grid_losses

    X, y, tasks = _multitask_data()
    dtype = jax.dtypes.canonicalize_dtype(np.float64)
    data = (X.astype(dtype), tasks[:, None] == tasks[None, :])  # NumPy arguments: no conversion programs
    omegas, lams = np.asarray([0.0, 0.5], dtype), np.asarray([1e-1, 1e-2, 1e-3], dtype)
    Y = y[:, None].astype(dtype)

    def score(widths):
        return _score_kernels([Gaussian(float(w)) for w in widths], lambda stacked, active: dense_grid_losses(
            _build_dense, stacked, omegas, data, Y, Tikhonov(), lams, "loo", None, None, active=active), batch)

    return score


def _multitask_data(n=30, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    tasks = np.arange(n) % 3
    return X, np.sin(X[:, 0]) + tasks + 0.1 * rng.normal(size=n), tasks


def test_a_padded_batch_of_kernels_scores_as_one_kernel_at_a_time_in_one_program(programs):
    """Batches of 3 widths (3, 2 and 1 given: the last padded, the padding skipped at run time)
    give each width's losses as a call with that width alone, and compile one program."""
    widths = [0.5, 1.0, 2.0, 0.7, 1.4, 1.2]
    alone = np.concatenate([_widths_scorer(1)([w]) for w in widths])
    score = _widths_scorer(3)
    jax.clear_caches()
    before = programs.count
    got = [score(widths[:3]), score(widths[3:5]), score(widths[5:])]
    assert programs.count - before == 1
    np.testing.assert_allclose(np.concatenate(got), alone, **TOL)
    assert np.isfinite(alone).all()


def test_the_grid_scorer_skips_inactive_kernels():
    """``_score_grid``'s padding (``active`` False) holds inf; the active kernels' losses are those
    of the kernels scored without a mask."""
    from jaxmtl.filters import Tikhonov
    from jaxmtl.kernels import Gaussian
    from jaxmtl.models._grid_search import _stack
    from jaxmtl.paths.eigen import mse_loss

    X, Y = _data(24, seed=4)
    dtype = jax.dtypes.canonicalize_dtype(np.float64)
    X, Y = X.astype(dtype), (Y - Y.mean(0)).astype(dtype)
    kernels = _stack([Gaussian(0.6), Gaussian(1.5), Gaussian(1.5)])
    args = (X, Y, np.ones((2, 2), dtype), np.eye(2, dtype=dtype), Tikhonov(),
            np.asarray(LAMBDAS[::6], dtype), "gcv", None, mse_loss, np.zeros(2, dtype))
    plain, _ = _grid_routes._score_grid(kernels, *args)
    masked, ok = _grid_routes._score_grid(kernels, *args, active=np.array([True, True, False]))
    assert bool(ok) and np.isinf(np.asarray(masked[2])).all()
    np.testing.assert_allclose(np.asarray(masked[:2]), np.asarray(plain[:2]), **TOL)


def test_the_dense_grid_skips_inactive_operator_parameters():
    """``dense_grid_losses`` with ``param_active`` (the continuation scoring one ω in the grid's
    program): the active ω's losses are those of a call given that ω alone, the others inf; on the
    ν-method's steps as the estimators run them (k-fold, fold indices, a report)."""
    from jaxmtl.filters import NuMethod
    from jaxmtl.kernels import Gaussian
    from jaxmtl.models._grid_search import _stack
    from jaxmtl.models.multitask import _build_dense
    from jaxmtl.paths.dense import dense_grid_losses
    from jaxmtl.selection.criteria import fold_indices

    X, y, tasks = _multitask_data()
    dtype = jax.dtypes.canonicalize_dtype(np.float64)
    data = (X.astype(dtype), tasks[:, None] == tasks[None, :])
    Y = (y - y.mean())[:, None].astype(dtype)
    masks = np.arange(len(y))[None, :] % 3 != np.arange(3)[:, None]
    steps, report = np.arange(1, 41, dtype=np.int32), np.isin(np.arange(1, 41), [1, 5, 20, 40])
    omegas = np.asarray([0.0, 0.5, 0.9], dtype)

    def score(params, **kw):
        return np.asarray(dense_grid_losses(_build_dense, _stack([Gaussian(0.8)]), params, data, Y, NuMethod(),
                                            steps, "kfold", fold_indices(masks), None, report=report, **kw))

    got = score(omegas, param_active=np.array([False, True, False]))
    alone = score(omegas[1:2])
    assert np.isinf(got[:, [0, 2]]).all() and np.isfinite(alone[..., report]).all()
    np.testing.assert_allclose(got[:, 1:2][..., report], alone[..., report], **TOL)


def test_a_path_compiled_for_its_continuation_equals_the_short_path_in_the_active_precision():
    """The default path is compiled for its continued length and skips the segments after its last
    reported step (``path_map``): in the run's precision it emits what the path of the reported
    length emits (``tests/test_paths.py`` checks gradients and the continuation in float64)."""
    import jax.numpy as jnp

    from jaxmtl.filters import NuMethod
    from jaxmtl.paths.eigen import PATH_SEGMENTS, path_map

    T = 30
    dtype = jax.dtypes.canonicalize_dtype(np.float64)
    sigma = jnp.asarray(np.random.default_rng(3).uniform(0.0, 1.0, (40, 2)), dtype)
    short = np.isin(np.arange(1, T + 1), [1, 7, T])
    emit = lambda g: jnp.sum(g**2, axis=0)  # noqa: E731
    got = path_map(NuMethod(), sigma, jnp.arange(1, PATH_SEGMENTS * T + 1), 1.0, emit,
                   np.r_[short, np.zeros((PATH_SEGMENTS - 1) * T, bool)])
    ref = path_map(NuMethod(), sigma, jnp.arange(1, T + 1), 1.0, emit, short)
    np.testing.assert_allclose(np.asarray(got[:T]), np.asarray(ref), **TOL)
    assert np.asarray(got[short.size:]).sum() == 0 and np.asarray(ref)[short].all()


# ------------------------------------------------ the approximate estimators' row blocks
def test_feature_statistics_on_bucket_shaped_blocks_equal_the_groups_sums():
    """``InMemoryRows.blocks``: rows padded to their bucket, a fixed block count (padding blocks
    skipped) — ΦᵀΦ, ΦᵀY, YᵀY and the counts of each group are the sums over its rows."""
    from jaxmtl.kernels import Gaussian
    from jaxmtl.models._training_rows import InMemoryRows
    from jaxmtl.operators.nystrom import NystromFeatures, accumulate_statistics

    X, Y = _data(37, seed=6)
    dtype = jax.dtypes.canonicalize_dtype(np.float64)
    X, Y = X.astype(dtype), Y.astype(dtype)
    groups = np.arange(37) % 4
    fmap = NystromFeatures.fit(Gaussian(1.0), X, 9)
    rows = InMemoryRows(X, Y, fit_intercept=False)
    blocks = rows.blocks(groups, 4, 5)
    assert blocks[0].shape == (_buckets.size_bucket(37), 2) and (np.asarray(blocks[2]) >= 0).sum() == 37
    st = accumulate_statistics(fmap, *blocks, 4)
    Phi = np.asarray(fmap(X))
    for g in range(4):
        R, Yg = Phi[groups == g], Y[groups == g]
        np.testing.assert_allclose(np.asarray(st.G[g]), R.T @ R, **TOL)
        np.testing.assert_allclose(np.asarray(st.B[g]), R.T @ Yg, **TOL)
        np.testing.assert_allclose(np.asarray(st.S[g]), Yg.T @ Yg, **TOL)
        assert float(st.counts[g]) == (groups == g).sum()


def test_an_approximate_fit_compiles_nothing_at_another_n_of_its_bucket_and_equals_the_unpadded(monkeypatch, programs):
    from jaxmtl import ApproximateKernelRegressor
    from jaxmtl.models import _training_rows

    X, Y = _data(480, seed=7)
    make = lambda: ApproximateKernelRegressor(n_components=40, block_size=64)  # noqa: E731
    jax.clear_caches()
    padded = make().fit(X[:470], Y[:470])  # bucket 480; the width search on 400 of them
    first = programs.count
    make().fit(X[3:467], Y[3:467])  # 464 rows: the same bucket, other data
    make().fit(X[:480], Y[:480])
    assert programs.count == first
    monkeypatch.setattr(_training_rows, "size_bucket", lambda n, bits=None: int(n))
    plain = make().fit(X[:470], Y[:470])
    np.testing.assert_allclose(padded.cv_scores_, plain.cv_scores_, **TOL)
    if X64:
        assert repr(padded.best_params_) == repr(plain.best_params_)
        np.testing.assert_allclose(padded.predict(X[470:]), plain.predict(X[470:]), **TOL)


def test_nystrom_on_every_row_pads_its_centres_and_equals_the_unpadded(monkeypatch, programs):
    """Below ``n_components`` rows every row is a centre: the centres are padded to the rows' bucket
    with zero rows whose block of K(Z, Z) and rows of the whitening are zero (weight 0 in every
    feature), so a fit at another n of the bucket compiles nothing, and the padded fit is the fit on
    the real centres alone. The same map through an eigendecomposition of another size agrees to its
    round-off amplified by the whitening's e^-½ down to the cut (≈ 1e-9 in float64); the grid's
    smallest λ amplify that again (validation losses within 1e-4 there, 1e-8 at λ ≥ 1e-4 · the
    scale), and the selection and predictions are the same; in float32 the selected model's test
    error is within the precision's error factor."""
    from jaxmtl import ApproximateKernelRegressor
    from jaxmtl.models import _training_rows, approximate

    X, Y = _data(90, seed=8)
    jax.clear_caches()
    padded = ApproximateKernelRegressor().fit(X[:37], Y[:37])  # 37 centres, bucket 40
    first = programs.count
    ApproximateKernelRegressor().fit(X[1:39], Y[1:39])  # 38 rows, other data
    assert programs.count == first
    assert padded.feature_map_.centres.shape[0] == 40 and padded.n_components_ == 37
    for module in (approximate, _training_rows):
        monkeypatch.setattr(module, "size_bucket", lambda n, bits=None: int(n))
    plain = ApproximateKernelRegressor().fit(X[:37], Y[:37])
    assert plain.feature_map_.centres.shape[0] == 37
    X_test, Y_test = X[40:], Y[40:]
    if not X64:
        errors = [np.mean((m.predict(X_test) - Y_test) ** 2) for m in (padded, plain)]
        factor, atol = FLOAT32_PROMISE["error_factor"], FLOAT32_PROMISE["error_atol"]
        assert errors[0] <= factor * errors[1] + atol and errors[1] <= factor * errors[0] + atol
        return
    np.testing.assert_allclose(padded.feature_map_.gram(X_test), plain.feature_map_.gram(X_test), rtol=1e-7, atol=1e-8)
    assert repr(padded.best_params_) == repr(plain.best_params_)
    large = plain.path_params_ >= 1e-4 * plain.path_params_.max()
    for got, ref in ((padded.width_scores_, plain.width_scores_), (padded.cv_scores_, plain.cv_scores_)):
        np.testing.assert_allclose(got, ref, rtol=1e-4)
        np.testing.assert_allclose(got[..., large], ref[..., large], rtol=1e-8)
    np.testing.assert_allclose(padded.predict(X_test), plain.predict(X_test), rtol=1e-7, atol=1e-7)


def test_nystrom_n_real_outside_the_centres_is_refused_by_name():
    from jaxmtl.errors import ParameterError
    from jaxmtl.kernels import Gaussian
    from jaxmtl.operators.nystrom import NystromFeatures

    Z = np.zeros((4, 2))
    for bad in (0, 5, 2.5):
        with pytest.raises(ParameterError, match="n_real"):
            NystromFeatures.from_centres(Gaussian(1.0), Z, n_real=bad)


def test_nystrom_traced_n_real_under_vmap_and_grad_equals_the_real_centres():
    """``n_real`` traced: ``vmap`` over several real counts of one padded centre array, and the
    gradient in the kernel's width through the padded map, equal the map on the real centres alone
    (an eigendecomposition of another size: agreement to its round-off)."""
    import jax.numpy as jnp

    from jaxmtl.kernels import Gaussian
    from jaxmtl.operators.nystrom import NystromFeatures

    rng = np.random.default_rng(3)
    Z, X = rng.normal(size=(12, 2)), rng.normal(size=(7, 2))
    Zp = np.r_[Z, rng.normal(size=(4, 2))]  # padding rows of any value: they must weigh nothing
    counts = np.array([3, 8, 12], np.int32)

    def gram(width, centres, n_real=None):
        return NystromFeatures.from_centres(Gaussian(width), centres, n_real=n_real).gram(jnp.asarray(X, centres.dtype))

    dtype = jnp.asarray(Z).dtype
    Zp_j, X_w = jnp.asarray(Zp, dtype), jnp.asarray(0.9, dtype)
    batched = jax.vmap(lambda m: gram(X_w, Zp_j, m))(jnp.asarray(counts))
    grads = jax.vmap(jax.grad(lambda w, m: jnp.sum(gram(w, Zp_j, m) ** 2)), in_axes=(None, 0))(X_w, jnp.asarray(counts))
    tol = {"rtol": 1e-8, "atol": 1e-9} if X64 else {"rtol": 2e-3, "atol": 2e-4}
    for i, m in enumerate(counts):
        Zm = jnp.asarray(Z[:m], dtype)
        ref = jax.jit(gram)(X_w, Zm)  # traced centres: the same working-dtype path
        ref_grad = jax.grad(lambda w: jnp.sum(gram(w, Zm) ** 2))(X_w)
        np.testing.assert_allclose(batched[i], ref, **tol)
        np.testing.assert_allclose(grads[i], ref_grad, **tol)
        assert np.isfinite(grads[i])


def test_group_blocks_refuses_a_block_count_that_cannot_hold_the_groups():
    from jaxmtl.errors import ShapeError
    from jaxmtl.operators.nystrom import group_blocks

    with pytest.raises(ShapeError, match=r"n_blocks=2 cannot hold the 3 blocks"):
        group_blocks(np.array([0, 1, 0, 1, 1]), 2, 5, 2, n_blocks=2)


def _tikhonov_criteria(width, lam, X, Y, masks, held, n):
    """(k-fold Tikhonov loss, LOO) of a Gaussian of ``width`` on rows X, Y whose first ``n`` are real."""
    from jaxmtl.kernels import Gaussian
    from jaxmtl.learning.gradient import eigen_criterion, kfold_tikhonov_loss

    K = Gaussian(width)(X, X)
    real = jnp.arange(X.shape[0]) < n
    A = jnp.eye(Y.shape[1], dtype=Y.dtype)
    kfold = kfold_tikhonov_loss(K, A, Y, lam, masks, held=held)
    loo = eigen_criterion(K * (real[:, None] & real[None, :]), jnp.ones(Y.shape[1], Y.dtype), A, Y, lam, n=n)
    return kfold, loo



def test_gradient_criteria_on_padded_rows_equal_the_real_rows_under_jit_and_grad():
    """``kfold_tikhonov_loss(..., held=)`` and ``eigen_criterion(..., n=)`` on rows padded with
    zeros (in no fold; the real n traced) equal the criteria on the real rows, and so do their
    gradients in the width and λ, which match central differences; a ``held`` of another shape is
    refused by name."""
    from jaxmtl.errors import ShapeError
    from jaxmtl.learning.gradient import kfold_tikhonov_loss

    X, Y = _data(13, seed=4)
    Y = Y - Y.mean(axis=0)
    dtype = jnp.asarray(X).dtype
    X, Y = np.asarray(X, dtype), np.asarray(Y, dtype)
    masks = np.arange(13)[None, :] % 3 != np.arange(3)[:, None]  # 3 folds
    Xp, Yp = (np.concatenate([A, np.zeros((3, A.shape[1]), dtype)]) for A in (X, Y))  # 3 zero rows
    mp = np.concatenate([masks, np.zeros((3, 3), bool)], axis=1)
    hp = np.concatenate([~masks, np.zeros((3, 3), bool)], axis=1)
    args = (jnp.asarray(0.8, dtype), jnp.asarray(0.05, dtype))
    padded = jax.jit(lambda w, lam, n: _tikhonov_criteria(w, lam, Xp, Yp, mp, hp, n))
    plain = lambda w, lam: _tikhonov_criteria(w, lam, X, Y, masks, ~masks, 13)
    tol = {"rtol": 1e-9, "atol": 1e-12} if X64 else {"rtol": 1e-4, "atol": 1e-6}
    np.testing.assert_allclose(padded(*args, jnp.int32(13)), plain(*args), **tol)
    for i in range(2):
        g_pad = jax.grad(lambda w, lam: padded(w, lam, jnp.int32(13))[i], argnums=(0, 1))(*args)
        g_ref = jax.grad(lambda w, lam: plain(w, lam)[i], argnums=(0, 1))(*args)
        assert all(np.isfinite(g) for g in g_pad)
        np.testing.assert_allclose(g_pad, g_ref, **(tol if X64 else {"rtol": 1e-3, "atol": 1e-5}))
        if X64:  # central differences in the width and λ
            h = 1e-6
            fd = [(plain(*(a + h * (j == k) for k, a in enumerate(args)))[i]
                   - plain(*(a - h * (j == k) for k, a in enumerate(args)))[i]) / (2 * h) for j in range(2)]
            np.testing.assert_allclose(g_ref, fd, rtol=1e-5)
    with pytest.raises(ShapeError, match="held"):
        kfold_tikhonov_loss(jnp.eye(16), jnp.eye(2), jnp.zeros((16, 2)), 0.1, mp, held=hp[:2])


def test_a_concrete_real_row_count_outside_the_rows_is_refused_by_name():
    """``n`` of loo_path / gcv_path / eigen_criterion given as a number must count real rows of Y
    (1 ≤ n ≤ N, an integer): otherwise the losses would be rescaled (n > N) or divided by zero.
    n = N is the default's value, and a traced n is not checked (a bucketed fit's own)."""
    from jaxmtl.errors import ParameterError
    from jaxmtl.filters import Tikhonov
    from jaxmtl.learning.gradient import eigen_criterion
    from jaxmtl.operators.base import SeparableOperator
    from jaxmtl.selection import gcv_path, loo_path

    X, Y = _data(9, seed=5)
    dtype = jnp.asarray(X).dtype
    K = jnp.asarray(np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)), dtype)
    eig = SeparableOperator(K, jnp.eye(Y.shape[1], dtype=dtype)).eigh()
    Yj, lams = jnp.asarray(Y, dtype), jnp.asarray([1e-2, 1e-1], dtype)
    for path in (loo_path, gcv_path):
        for bad in (0, 10, 4.5, -1):
            with pytest.raises(ParameterError, match=rf"n \(the real rows.*\[1, 9\]; received {bad}"):
                path(eig, Yj, Tikhonov(), lams, n=bad)
        np.testing.assert_allclose(path(eig, Yj, Tikhonov(), lams, n=9), path(eig, Yj, Tikhonov(), lams), rtol=1e-6)
        traced = jax.jit(lambda m: path(eig, Yj, Tikhonov(), lams, n=m))(jnp.int32(9))
        np.testing.assert_allclose(traced, path(eig, Yj, Tikhonov(), lams), rtol=1e-6)
    with pytest.raises(ParameterError, match="received 10"):
        eigen_criterion(K, jnp.ones(Y.shape[1], dtype), jnp.eye(Y.shape[1], dtype=dtype), Yj, 0.1, n=10)


def test_minimize_compiles_once_per_function_and_takes_unhashable_callables(programs):
    """``minimize(fun, raw0, args=)``: a module-level ``fun`` with new data of the same shapes
    compiles nothing the second time; an unhashable callable still minimises (compiled per call)."""
    from jaxmtl.learning.gradient import minimize

    dtype = jnp.asarray(0.0).dtype
    best, _ = minimize(_shifted_square, {"x": np.asarray(0.0, dtype)}, "adam", 50, 0.2, args=(np.asarray(1.0, dtype),))
    before = programs.count
    best, _ = minimize(_shifted_square, {"x": np.asarray(0.0, dtype)}, "adam", 50, 0.2, args=(np.asarray(2.0, dtype),))
    assert programs.count == before and abs(float(best["x"]) - 2.0) < 0.1

    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self, p):
            return (p["x"] - 3.0) ** 2

    best, _ = minimize(Unhashable(), {"x": np.asarray(0.0, dtype)}, "lbfgs", 20)
    assert abs(float(best["x"]) - 3.0) < 1e-3


def _shifted_square(p, c):
    return (p["x"] - c) ** 2
