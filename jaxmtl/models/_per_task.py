r"""The independent family: every task (or output) its own Gaussian width, filter parameter and mean.

The baselines a user compares a multi-task model with are one model per task, each tuned on its
own, and one pooled model. The common-similarity family A_ω holds the pooled model (ω = 1) but
its ω = 0 end is independent tasks with one width, one λ or step count and one intercept for
all — not the per-task baseline. This module is that baseline as a family of the estimators:
task t is fitted on its own rows with its own Gaussian width σ_t, its own filter parameter p_t
and its own mean, all selected per task on the estimator's validation folds.

Every task in one compiled call: the tasks' rows are gathered into (T, r) blocks zero-padded to
the largest task (:func:`task_layout`), and the k-fold eigen path of each (task, fold) is scored
by :func:`~._fold_losses.task_fold_losses` (its module says how).

Selection is like with like: the estimators score this family on the same folds and with the
same loss (held-out squared error averaged over the rows of each fold, then over folds) as the
coupled families. But the family's minimum validation loss is optimistic: each task chooses its
width and parameter among hundreds of candidates on its own few held-out rows (about 20 per
school on School's hold-out), where a coupled family chooses one width, ω and parameter for all
tasks on all held-out rows. The family is therefore compared by its *cross-fitted* validation
loss (:func:`cross_fitted`, nested selection on the validation rows): each task's held-out rows
are dealt at random into ``N_PARTS`` = 5 parts (:func:`validation_parts`, balanced within each
task; a row held out by several repeated partitions keeps its part in all of them); each
part scores the width and parameter the task chooses on its other four parts, so that no held-out
row scores a choice made on it. All parts' losses
come out of the same compiled path (a (V,)-valued loss), at no extra eigendecomposition. The
estimate is of a choice made on 4/5 of the rows, so slightly pessimistic for the fitted model,
which takes each task's choice on all its held-out rows; the width refinement's extra
candidates are placed around the best width on all of them. The coupled families' losses are
not cross-fitted: they choose three numbers for all tasks on all held-out rows, where the
optimism of a minimum is small.

The outputs of a vector-valued regressor are the same machinery on one "task" holding every
row (:func:`select_outputs`): the outputs share the rows, so a width's masked Gram is
eigendecomposed once per fold for all outputs (the d output columns ride through the path as
an identity output matrix, each scored on its own); where the outputs' widths differ (the
refinement), the distinct widths of all outputs are scored so, once each, and every output takes
the losses of its own.

Example:
    >>> import numpy as np
    >>> layout = task_layout(np.array([0, 1, 0, 0]), 2)
    >>> layout.index.tolist(), layout.valid.tolist()
    ([[0, 2, 3], [1, 4, 4]], [[True, True, True], [True, False, False]])
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._jit import jit
from ..kernels.scalar import Gaussian
from ..operators.tasks import task_block_index
from ..paths.eigen import filtered_coefficients
from ._buckets import pad_rows, size_bucket, task_block
from ._fold_losses import _centred, _masked_eigh, fold_gathers, task_fold_losses
from ._null_model import within_one_se
from ._row_blocks import in_row_blocks
from ._task_folds import N_PARTS, validation_parts
from ._grid_search import lambda_floor
from ._spectral import (
    DEFAULT_STEPS,
    LAMBDA_COUNT,
    LAMBDA_FLOOR,
    STEP_DOUBLINGS,
    _path_params,
    _SpectralEstimator,
    _step_grid,
)

FAMILIES = ("auto", "common_similarity", "independent")  # the ``family`` values of the estimators
WIDTH_BATCH = 6  # widths per compiled scoring call (the default grid's six): the refinement's reuse its program

__all__ = ["FAMILIES", "TaskLayout", "task_layout", "task_coefficients", "task_predict",
           "IndependentFit", "select_independent", "select_outputs", "output_coefficients", "output_predict",
           "independent_params", "output_lambdas", "cross_fitted", "null_part_losses"]


class TaskLayout(NamedTuple):
    """Rows of each task, padded: ``index`` (T, r) row ids (padding: N), ``valid`` (T, r) bool."""

    index: np.ndarray  # type: ignore[assignment]  # the field shadows tuple.index, unused here
    valid: np.ndarray


def task_layout(codes: np.ndarray, n_tasks: int) -> TaskLayout:
    """:class:`TaskLayout` of integer task codes (N,) in 0..T−1 (T = ``n_tasks``), each task's rows
    in increasing order, every task listed even when it has no row (its block is all padding)."""
    index, _ = task_block_index(codes, np.arange(n_tasks))
    return TaskLayout(index, index < len(codes))


def _gather(A: np.ndarray, layout: TaskLayout) -> np.ndarray:
    """(T, r, …) rows of A (N, …) in the layout, zeros at the padding."""
    padded = np.concatenate([A, np.zeros((1,) + A.shape[1:], A.dtype)])
    return padded[layout.index]


def _pad_axis(A: np.ndarray, axis: int, size: int) -> np.ndarray:
    """A with zeros (False) appended along ``axis`` up to ``size`` (a size bucket, :mod:`._buckets`)."""
    widths = [(0, 0)] * A.ndim
    widths[axis] = (0, size - A.shape[axis])
    return np.pad(A, widths)


def cross_fitted(scores: np.ndarray, rows: np.ndarray, null: np.ndarray | None = None) -> np.ndarray:
    """(T,) cross-fitted validation loss of each task.

    Args:
      scores: (T, C, V) each task's validation loss of every candidate C on each part V of its
        held-out rows; rows: (T, V) the task's held-out rows in each part (over all folds).
      null: None, or (T, V) the losses of each task's mean predictor (C = 0) on the parts.

    Part v scores the candidate the task chooses on the other parts: loss = Σ_v
    scores[argmin_c Σ_{u≠v} scores[c, u], v] — or null[v] where the mean predictor is kept on
    the other parts (:func:`._null_model.within_one_se`, paired over them, as :func:`_select`
    keeps it on all). Where the other parts hold no row (a task with a single held-out row), the
    choice is made on all parts (that task's loss is its plain minimum).
    """
    T, _, V = scores.shape
    total = scores.sum(axis=2, keepdims=True)
    rest = total - scores  # (T, C, V) the loss on the other parts
    others = rows.sum(axis=1, keepdims=True) - rows  # (T, V)
    pick = np.where(others > 0, np.argmin(rest, axis=1), np.argmin(total, axis=1))  # (T, V)
    chosen = scores[np.arange(T)[:, None], pick]  # (T, V, V): [t, v, u] part u's loss of part v's choice
    loss = np.diagonal(chosen, axis1=1, axis2=2)  # (T, V)
    if null is not None:
        off = ~np.eye(V, dtype=bool)  # the other parts of each part
        kept = within_one_se(np.broadcast_to(null[:, None, :], chosen.shape)[:, off].reshape(T, V, V - 1),
                             chosen[:, off].reshape(T, V, V - 1)) & (others > 0)
        loss = np.where(kept, null, loss)
    return loss.sum(axis=1)


@partial(jit, static_argnames=("filt",))
def task_coefficients(widths, X, y, valid, filt, params):
    """Per-task refit on all of each task's rows: (coefficients (T, r), means (T,)).

    Args: widths (T,), params (T,) the selected width and filter parameter of each task; the
    rest as :func:`~._fold_losses.task_fold_losses`.
    """

    def one_task(width, X_t, y_t, v_t, p):
        yc, mean = _centred(y_t[:, None], v_t)
        eig, mf = _masked_eigh(Gaussian(width)(X_t, X_t), v_t)
        C = filtered_coefficients(filt, eig, yc * mf[:, None], p, n=jnp.maximum(jnp.sum(mf), 1.0))
        return C[:, 0] * mf, mean[0]

    return jax.vmap(one_task)(widths, X, y, valid, params)


@partial(jit, static_argnames=("filt",))
def output_coefficients(slots, active, slot_of, X, Y, valid, filt, params):
    """Per-output refit on all rows, one eigendecomposition per distinct width: (coefficients
    (r, d), means (d,)). slots (S,) the distinct widths (a batch padded to S = d: ``active``
    marks the real ones, the others skipped as in :func:`~._fold_losses.task_fold_losses`),
    slot_of (d,) each output's slot, params (d,); X (r, p), Y (r, d), valid (r,) as one task of
    :func:`~._fold_losses.task_fold_losses`."""
    Yc, means = _centred(Y, valid)

    def one_slot(args):
        width, on, s = args

        def refit(width):
            eig, mf = _masked_eigh(Gaussian(width)(X, X), valid)
            C = jax.vmap(lambda y, p: filtered_coefficients(filt, eig, (y * mf)[:, None], p, n=jnp.maximum(
                jnp.sum(mf), 1.0))[:, 0] * mf, in_axes=(1, 0), out_axes=1)(Yc, params)
            return jnp.where(slot_of[None, :] == s, C, 0.0)

        return jax.lax.cond(on, refit, lambda _: jnp.zeros_like(Yc), width)

    return jax.lax.map(one_slot, (slots, active, jnp.arange(len(slots)))).sum(axis=0), means


@jit
def _task_predict(widths, X_fit, coef, means, X_new, codes):
    """(m,) every row's own task's prediction: each task's model evaluated at all m rows, (T, m)."""
    F = jax.vmap(lambda w, Xf, c, mu: Gaussian(w)(X_new, Xf) @ c + mu)(widths, X_fit, coef, means)
    return jnp.take_along_axis(F, codes[None], axis=0)[0]


class IndependentFit(NamedTuple):
    """A fitted independent family: per task its width (T,), parameter (T,), mean (T,) and its
    coefficients (T, r) on its inputs (T, r, p) (zero-padded); of outputs (:func:`select_outputs`)
    the coefficients (n, d) on the shared inputs (n, p)."""

    widths: np.ndarray
    params: np.ndarray
    means: np.ndarray
    coef: jax.Array
    X: jax.Array


def task_predict(fit: IndependentFit, X_new: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """(m,) predictions of the tasks ``codes`` (m,) at ``X_new`` (m, p), in fixed-size row blocks
    (:func:`~jaxmtl.models._row_blocks.in_row_blocks`): every task's model at the block's rows,
    each row keeping its own task's."""
    dtype = fit.coef.dtype
    widths, means = jnp.asarray(fit.widths, dtype), jnp.asarray(fit.means, dtype)
    return in_row_blocks(lambda B, c: _task_predict(widths, fit.X, fit.coef, means, jnp.asarray(B, dtype),
                                                    jnp.asarray(c)), X_new, codes)


def independent_params(estimator, filt) -> np.ndarray:
    """Filter parameters each task (or output) of an estimator chooses from: the default
    iterative path at the eigen path's continued length (2^STEP_DOUBLINGS × 300 ν-method steps
    on the geometric step grid — a recurrence on one task's eigenvalues costs little), else the
    estimator's steps or λ grid (λ relative to a Gaussian's unit diagonal)."""
    if filt.iterative and estimator.n_steps is None:
        return _step_grid(DEFAULT_STEPS.get(filt.name, 150) * 2**STEP_DOUBLINGS)
    return _SpectralEstimator._resolve_params(estimator, filt, 1.0)


def output_lambdas() -> np.ndarray:
    """(P,) the per-output family's default λ grid, largest first, relative to the Gaussian's unit
    diagonal: the eigen path's LAMBDA_COUNT values in [LAMBDA_FLOOR, 1] continued below the floor at
    their own ratio (10^(6/29), about 4.8 per decade) down to float32's resolution
    (:func:`~jaxmtl.models._grid_search.lambda_floor`, ε/10): 39 values, the last 1.37·10⁻⁸ — in both
    precisions, as every default grid is the same in both (float64 users pass smaller ``lambdas``).

    Every output shares all n rows, so λ is KernelRidge's α over n: a floor of 10⁻⁶ would be
    α ≥ 3·10⁻³ at n = 3000, above where per-output searches of a few thousand rows choose. Each fold
    decomposes its own training rows' Gram (:func:`~._fold_losses.task_fold_losses`), so a small λ is
    scored as a per-fold refit scores it; the grid below 10⁻⁶ adds products with the held-out Gram,
    not decompositions.
    In float64 the floor bounds the refit's condition number ‖K‖/(nλ) ≤ 1/λ by 7·10⁷: coefficients
    to ~10⁻⁸ relative and predictions reproducible to the round-off of their sums (down to 10⁻¹²
    a wide width made coefficients of 10¹⁰ that fit 40 noisy rows no better).

    Example:
        >>> lams = output_lambdas()
        >>> lams.size, float(lams[0]), round(float(lams[-1]) * 1e8, 2)
        (39, 1.0, 1.37)
        >>> bool(np.allclose(lams[:30], np.geomspace(1.0, 1e-6, 30)))
        True
    """
    step = np.log10(1.0 / LAMBDA_FLOOR) / (LAMBDA_COUNT - 1)  # decades between neighbours
    below = int(np.floor(np.log10(LAMBDA_FLOOR / lambda_floor(np.float32)) / step + 1e-9))
    return 10.0 ** (-step * np.arange(LAMBDA_COUNT + below))


def _scorer(filt, params: np.ndarray, masks: np.ndarray, dtype):
    """``score(widths (W, T), X, y, folds)`` → (W, T, P, d, V): each task's and
    output's share of the family's validation loss on each part (:func:`~._fold_losses.task_fold_losses` summed
    over each fold's held-out rows, divided by the fold's held-out count, averaged over folds)."""
    full, report, index = _path_params(filt, params)
    fj = np.asarray(full, np.int32 if filt.iterative else dtype)  # NumPy arguments: no compiled conversion
    held = np.maximum((~masks).sum(axis=1), 1)  # (k,) held-out rows of each fold

    def score(widths, *data):  # in batches of WIDTH_BATCH widths (the last padded, its padding skipped): one program
        widths = np.asarray(widths, dtype)
        padded = np.concatenate([widths, np.repeat(widths[-1:], -len(widths) % WIDTH_BATCH, axis=0)])
        active = np.arange(len(padded)) < len(widths)
        sse = np.concatenate([np.asarray(task_fold_losses(padded[i:i + WIDTH_BATCH], active[i:i + WIDTH_BATCH], *data,
                                                          filt, fj, report))
                              for i in range(0, len(padded), WIDTH_BATCH)])[:len(widths)]
        sse = sse if index is None else sse[:, :, :, index]
        return (sse / held[None, None, :, None, None, None]).mean(axis=2)

    return score


def _select(score, grid: np.ndarray, params: np.ndarray, refine: bool, rows: np.ndarray,
            null: np.ndarray | None = None):
    """Per unit (task or output) the width and parameter of least validation loss, or C = 0.

    Args:
      score: widths (W, T) → (W, T, P, V) losses of every unit on each part.
      grid: (W, T) the widths every unit starts from; params: (P,) the filter parameters.
      refine: then score, per unit, × 2^±1 around its best width (× 4^±1, 4^±2 past an edge of
        the grid) and choose among all.
      rows: (T, V) held-out rows of each unit in each part (over all folds).
      null: None, or (T, V) the losses of each unit's mean predictor (C = 0, its path's t = 0 /
        λ = ∞) on the parts: kept where the best candidate's lead over it, paired over the parts,
        is at most one standard error (:func:`._null_model.within_one_se`).

    Returns: widths (T,), parameters (T,), each unit's validation loss (T,), its cross-fitted
    validation loss (T,) and whether it keeps C = 0 (T,) bool (its loss then the null's).
    """
    T = grid.shape[1]
    scores = score(grid)
    if refine:
        best = grid[np.argmin(scores.sum(axis=3).min(axis=2), axis=0), np.arange(T)]
        low, high = best <= grid.min(axis=0), best >= grid.max(axis=0)
        factors = np.where(low[None], np.array([1 / 16, 1 / 4])[:, None],
                           np.where(high[None], np.array([4.0, 16.0])[:, None], np.array([0.5, 2.0])[:, None]))
        extra = best[None] * factors
        grid, scores = np.concatenate([grid, extra]), np.concatenate([scores, score(extra)])
    W, _, P, _ = scores.shape
    by_part = np.transpose(scores, (1, 0, 2, 3)).reshape(T, W * P, N_PARTS)
    flat = by_part.sum(axis=2)
    pick = np.argmin(flat, axis=1)
    iw, ip = np.divmod(pick, P)
    losses, kept = flat[np.arange(T), pick], np.zeros(T, bool)
    if null is not None:
        kept = within_one_se(null, by_part[np.arange(T), pick])
        losses = np.where(kept, null.sum(axis=1), losses)
    return grid[iw, np.arange(T)], np.asarray(params)[ip], losses, cross_fitted(by_part, rows, null), kept


def select_independent(X: np.ndarray, y: np.ndarray, codes: np.ndarray, n_tasks: int, masks: np.ndarray,
                       filt, params: np.ndarray, widths: np.ndarray, refine: bool, random_state: int | None = 0):
    """Select and fit the independent family.

    Args:
      X: (N, p) inputs; y: (N,) outputs centred on their overall mean; codes: (N,) task codes in
        0..T−1 (T = ``n_tasks``); masks: (k, N) training masks of the estimator's folds.
      filt, params: the filter and its parameters (see :func:`~._fold_losses.task_fold_losses`; steps listed
        as the grid to evaluate).
      widths: (W,) Gaussian widths every task starts from.
      refine: then refine each task's width around its best (see :func:`_select`).
      random_state: seed of the :func:`validation_parts`.

    Returns:
      (IndependentFit, validation loss of the family (the mean over folds of the held-out MSE),
      its cross-fitted validation loss (:func:`cross_fitted`, in the same units), per-task
      validation losses (T,)).
    """
    layout = task_layout(codes, n_tasks)
    dtype = jax.dtypes.canonicalize_dtype(y.dtype)
    r = layout.valid.shape[1]  # the largest task's rows
    size = task_block(r, len(codes), n_tasks)  # every task's block padded to it
    Xt = _pad_axis(_gather(np.asarray(X, dtype), layout), 1, size)
    yt = _pad_axis(_gather(np.asarray(y, dtype), layout), 1, size)
    valid = _pad_axis(layout.valid, 1, size)
    train = _pad_axis(np.stack([_gather(m, layout) for m in masks]), 2, size)
    split = validation_parts(masks, codes, N_PARTS, random_state)
    onehot = split[..., None] == np.arange(N_PARTS)  # (k, N, V)
    parts = _pad_axis(np.stack([_gather(a, layout) for a in onehot]), 2, size)
    folds = fold_gathers(train, valid, parts, masks)
    losses = _scorer(filt, params, masks, dtype)
    rows = np.stack([np.bincount(codes, (split == v).sum(axis=0), n_tasks) for v in range(N_PARTS)], axis=1)
    grid = np.repeat(np.asarray(widths, float)[:, None], n_tasks, 1)
    widths, chosen, task_losses, crossed, _ = _select(
        lambda w: losses(w, Xt, yt[..., None], folds)[:, :, :, 0], grid, params, refine, rows)
    coef, means = task_coefficients(np.asarray(widths, dtype), Xt, yt, valid, filt,
                                     np.asarray(chosen, np.int32 if filt.iterative else dtype))
    # kept on the whole blocks (zero coefficients past each task's rows): predictions compile per block
    fit = IndependentFit(widths, chosen, np.asarray(means), jax.device_put(np.asarray(coef)), jax.device_put(Xt))
    return fit, float(task_losses.sum()), float(crossed.sum()), task_losses


def _output_scorer(X: np.ndarray, Y: np.ndarray, masks: np.ndarray, filt, params: np.ndarray,
                   random_state: int | None):
    """``score(grid (W, d))`` → (W, d, P, V) losses of the outputs Y (n, d) on the folds ``masks``
    (k, n), their held-out rows in each part (d, V) and their mean predictors' losses (d, V)
    (:func:`null_part_losses`), for :func:`_select`."""
    n, d = Y.shape
    dtype = jax.dtypes.canonicalize_dtype(Y.dtype)
    split = validation_parts(masks, np.zeros(n, int), N_PARTS, random_state)
    parts = split[..., None] == np.arange(N_PARTS)  # (k, n, V)
    losses = _scorer(filt, params, masks, dtype)
    # all outputs as one task: one eigendecomposition per width and fold serves every output; the
    # rows padded to their size bucket (padding neither valid, training nor held out)
    size = size_bucket(n)
    shared = (pad_rows(np.asarray(X, dtype), size)[None], pad_rows(np.asarray(Y, dtype), size)[None],
              fold_gathers(_pad_axis(masks, 1, size)[:, None], (np.arange(size) < n)[None],
                           _pad_axis(parts, 1, size)[:, None], masks))

    def score(grid):  # the distinct widths of all outputs once, each output's own picked out
        unique, inverse = np.unique(grid, return_inverse=True)
        out = np.moveaxis(losses(unique[:, None], *shared)[:, 0], 2, 1) / d  # (U, d, P, V)
        return out[inverse.reshape(grid.shape), np.arange(d)]

    return score, np.broadcast_to(parts.sum(axis=(0, 1)), (d, N_PARTS)), null_part_losses(Y, masks, parts) / d


def null_part_losses(Y: np.ndarray, masks: np.ndarray, parts: np.ndarray) -> np.ndarray:
    """(d, V) each output's loss of C = 0 on each part, in the units of :func:`_scorer`: per fold the
    squared error of its training rows' mean on the part's held-out rows over the fold's held-out
    count, averaged over folds — the path's loss at g = 0, as :func:`~._fold_losses.task_fold_losses` centres.

    Args: Y (n, d) outputs; masks (k, n) training masks; parts (k, n, V) bool held-out rows of each part.

    Example:
        >>> masks = np.array([[True, True, False, False], [False, False, True, True]])
        >>> parts = np.stack([~masks, np.zeros_like(masks)], axis=-1)  # one part holds every held-out row
        >>> null_part_losses(np.array([[1.0], [-1.0], [2.0], [-2.0]]), masks, parts).tolist()
        [[2.5, 0.0]]
    """
    train = masks.astype(Y.dtype)
    means = train @ Y / np.maximum(train.sum(axis=1), 1.0)[:, None]  # (k, d)
    held = np.maximum((~masks).sum(axis=1), 1)
    sse = np.einsum("knd,knv->kdv", (Y[None] - means[:, None]) ** 2, parts.astype(Y.dtype))
    return (sse / held[:, None, None]).mean(axis=0)


def select_outputs(X: np.ndarray, Y: np.ndarray, masks: np.ndarray, filt, params: np.ndarray,
                   widths: np.ndarray, refine: bool, random_state: int | None = 0,
                   subsample: tuple[np.ndarray, np.ndarray] | None = None):
    """Select and fit the independent family of a vector-valued regressor: every output its own
    Gaussian width, filter parameter and mean, on the same rows and folds.

    Args:
      X: (n, p) inputs; Y: (n, d) outputs centred on their means; masks: (k, n) training masks of
        the estimator's folds; filt, params, widths, refine, random_state: as
        :func:`select_independent`.
      subsample: None, or (rows (s,), masks (k', s)) as the coupled family's width search
        (``_width_search_rows``): each output's width is searched (and refined) on those rows
        and folds first, then its best × 2^−1, 1, 2^1 are scored on all rows, where the width,
        the filter parameter and both losses are taken.

    An output whose best (width, parameter) does not beat its mean predictor by more than one
    standard error, paired over the parts of its held-out rows, keeps the mean: parameter 0
    (steps) or inf (λ), coefficients 0 — the coupled family's rule (:mod:`._null_model`) per output.

    Returns:
      (IndependentFit with coef (n, d) and X (n, p), validation loss of the family, its
      cross-fitted validation loss): the losses in the units of the coupled family's
      ``mse_loss``, the held-out squared error averaged over the rows of each fold and the d
      outputs, then over folds.
    """
    d = Y.shape[1]
    grid = np.repeat(np.asarray(widths, float)[:, None], d, 1)
    if subsample is not None:
        rows, sub_masks = subsample
        sub_score, sub_held, _ = _output_scorer(X[rows], Y[rows], sub_masks, filt, params, random_state)
        best = _select(sub_score, grid, params, refine, sub_held)[0]
        grid, refine = best[None] * np.array([0.5, 1.0, 2.0])[:, None], False
    score, held, null = _output_scorer(X, Y, masks, filt, params, random_state)
    widths, chosen, output_losses, crossed, kept = _select(score, grid, params, refine, held, null)
    dtype = jax.dtypes.canonicalize_dtype(Y.dtype)
    n, size = len(X), size_bucket(len(X))
    Xp = pad_rows(np.asarray(X, dtype), size)
    unique, slot_of = np.unique(widths, return_inverse=True)  # outputs of one width share its decomposition
    slots = np.concatenate([unique, np.repeat(unique[-1:], d - len(unique))]).astype(dtype)
    coef, means = output_coefficients(slots, np.arange(d) < len(unique), slot_of.reshape(-1), Xp,
                                      pad_rows(np.asarray(Y, dtype), size), np.arange(size) < n, filt,
                                      np.asarray(chosen, np.int32 if filt.iterative else dtype))
    chosen = np.where(kept, 0 if filt.iterative else np.inf, chosen)  # C = 0: t = 0 / λ = ∞
    coef = np.where(kept, 0.0, np.asarray(coef)[:n]).astype(dtype)
    fit = IndependentFit(widths, chosen, np.asarray(means), jax.device_put(coef), jax.device_put(Xp[:n]))
    return fit, float(output_losses.sum()), float(crossed.sum())


@jit
def output_predict(widths, X_fit, coef, X_new):
    """(m, d) Σ_i K_{σ_j}(x, x_i) coef[i, j] of every output j at X_new (m, p): widths (d,),
    X_fit (n, p), coef (n, d)."""
    return jax.vmap(lambda w, c: Gaussian(w)(X_new, X_fit) @ c, out_axes=1)(widths, coef.T)
