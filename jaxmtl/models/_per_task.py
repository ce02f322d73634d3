r"""The independent family: every task (or output) its own Gaussian width, filter parameter and mean.

The baselines a user compares a multi-task model with are one model per task, each tuned on its
own, and one pooled model. The common-similarity family A_ω holds the pooled model (ω = 1) but
its ω = 0 end is independent tasks with one width, one λ or step count and one intercept for
all — not the per-task baseline. This module is that baseline as a family of the estimators:
task t is fitted on its own rows with its own Gaussian width σ_t, its own filter parameter p_t
and its own mean, all selected per task on the estimator's validation folds.

Every task in one compiled call: the tasks' rows are gathered into (T, r) blocks zero-padded to
the largest task (:func:`task_layout`), and the k-fold eigen path of each (task, fold) — its
masked Gram, eigendecomposed once, every filter parameter from it — is vmapped over tasks and
folds, ``lax.map``-ped over the widths (:func:`task_fold_losses`). A padded row has zero rows and
columns in the Gram, falls in its null space and gets a zero coefficient, as in the k-fold path
of :mod:`jaxmtl.selection`. Each fold centres a task on the mean of its own training rows; a
task without a training row in a fold predicts 0 (the outputs are centred on their overall
mean first).

Selection is like with like: the estimators score this family on the same folds and with the
same loss (held-out squared error averaged over the rows of each fold, then over folds) as the
coupled families, and keep the family of lower validation loss. Choosing T widths and T
parameters on the folds is more optimistic than choosing three for all tasks; the tests check
that a coupled family still wins where the tasks share one function.

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

from ..kernels.scalar import Gaussian
from ..operators.base import SeparableEigh
from ..operators.tasks import task_block_index
from ..paths.eigen import filtered_coefficients, mse_loss, spectral_path
from ._spectral import _path_params

__all__ = ["TaskLayout", "task_layout", "task_fold_losses", "task_coefficients", "task_predict",
           "IndependentFit", "select_independent"]


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


def _centred(y, m):
    """(centred y, mean) of y (r,) on the rows of the mask m (r,) (mean 0 without rows)."""
    mf = m.astype(y.dtype)
    mean = jnp.sum(mf * y) / jnp.maximum(jnp.sum(mf), 1.0)
    return y - mean, mean


def _masked_eigh(K, m):
    mf = m.astype(K.dtype)
    s, U = jnp.linalg.eigh(K * mf[:, None] * mf[None, :])
    one = jnp.ones((1,), K.dtype)
    return SeparableEigh(jnp.maximum(s, 0.0), U, one, one[:, None]), mf


@partial(jax.jit, static_argnames=("filt",))
def task_fold_losses(widths, X, y, valid, train, filt, params, report=None):
    """Held-out sums of squared errors (W, T, k, P) of every task × fold × width × filter parameter.

    Args:
      widths: (W, T) Gaussian widths, one column per task.
      X: (T, r, p) inputs of each task, zero-padded; y: (T, r) outputs; valid: (T, r) genuine rows.
      train: (k, T, r) training masks of the folds restricted to each task (True = training).
      filt: the filter (static); params: (P,) λ values, or the steps 1..T_max of an iterative
        filter with ``report`` (T_max,) marking those to evaluate (zeros elsewhere).
    """

    def one_task(width, X_t, y_t, v_t, folds):
        K = Gaussian(width)(X_t, X_t)

        def one_fold(m):
            m = m & v_t
            held = (v_t & ~m).astype(y_t.dtype)
            yc, _ = _centred(y_t, m)
            eig, mf = _masked_eigh(K, m)
            n = jnp.sum(mf)
            losses = spectral_path(eig, (yc * mf)[:, None], filt, params, K_eval=K * mf[None, :],
                                   Y_eval=yc[:, None], w_eval=held, n=jnp.maximum(n, 1.0), output="loss",
                                   loss=mse_loss, report=report)
            # a fold with no training row of the task predicts its (zero) mean
            return jnp.where(n > 0, losses, jnp.sum(held * yc**2))

        return jax.vmap(one_fold)(folds)

    def one_width(w):
        return jax.vmap(one_task)(w, X, y, valid, jnp.swapaxes(train, 0, 1))

    out = jax.lax.map(one_width, widths)
    return jnp.where(jnp.isnan(out), jnp.inf, out)


@partial(jax.jit, static_argnames=("filt",))
def task_coefficients(widths, X, y, valid, filt, params):
    """Per-task refit on all of each task's rows: (coefficients (T, r), means (T,)).

    Args: widths (T,), params (T,) the selected width and filter parameter of each task; the
    rest as :func:`task_fold_losses`.
    """

    def one_task(width, X_t, y_t, v_t, p):
        yc, mean = _centred(y_t, v_t)
        eig, mf = _masked_eigh(Gaussian(width)(X_t, X_t), v_t)
        C = filtered_coefficients(filt, eig, (yc * mf)[:, None], p, n=jnp.maximum(jnp.sum(mf), 1.0))
        return C[:, 0] * mf, mean

    return jax.vmap(one_task)(widths, X, y, valid, params)


@jax.jit
def _task_predict(widths, X_fit, coef, means, X_new):
    return jax.vmap(lambda w, Xf, c, mu, Xn: Gaussian(w)(Xn, Xf) @ c + mu)(widths, X_fit, coef, means, X_new)


class IndependentFit(NamedTuple):
    """A fitted independent family: per task its width (T,), parameter (T,), mean (T,) and its
    coefficients (T, r) on its inputs (T, r, p) (zero-padded)."""

    widths: np.ndarray
    params: np.ndarray
    means: np.ndarray
    coef: jax.Array
    X: jax.Array


def task_predict(fit: IndependentFit, X_new: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """(m,) predictions of the tasks ``codes`` (m,) at ``X_new`` (m, p): the new rows are grouped
    by task (padded) and every task predicts its rows in one compiled call."""
    T = len(fit.widths)
    layout = task_layout(codes, T)
    dtype = fit.coef.dtype
    F = _task_predict(jnp.asarray(fit.widths, dtype), fit.X, fit.coef, jnp.asarray(fit.means, dtype),
                      jnp.asarray(_gather(np.asarray(X_new, dtype), layout)))
    out = np.zeros(len(codes) + 1, np.asarray(F).dtype)
    out[layout.index] = np.asarray(F)
    return out[:-1]


def select_independent(X: np.ndarray, y: np.ndarray, codes: np.ndarray, n_tasks: int, masks: np.ndarray,
                       filt, params: np.ndarray, widths: np.ndarray, refine: bool):
    """Select and fit the independent family.

    Args:
      X: (N, p) inputs; y: (N,) outputs centred on their overall mean; codes: (N,) task codes in
        0..T−1 (T = ``n_tasks``); masks: (k, N) training masks of the estimator's folds.
      filt, params: the filter and its parameters (see :func:`task_fold_losses`; steps listed
        as the grid to evaluate).
      widths: (W,) Gaussian widths every task starts from.
      refine: then score, per task, × 2^±1 around its best width (× 4^±1, 4^±2 past an edge of
        the grid) and choose among all.

    Returns:
      (IndependentFit, validation loss of the family (the mean over folds of the held-out MSE),
      per-task losses (T,)).
    """
    layout = task_layout(codes, n_tasks)
    dtype = jax.dtypes.canonicalize_dtype(y.dtype)
    Xt, yt = jnp.asarray(_gather(X, layout)), jnp.asarray(_gather(y, layout))
    valid = jnp.asarray(layout.valid)
    train = jnp.asarray(np.stack([_gather(m, layout) for m in masks]))
    held = np.maximum((~masks).sum(axis=1), 1)  # (k,) held-out rows of each fold
    full, report, index = _path_params(filt, params)
    fj = jnp.asarray(full, jnp.int32 if filt.iterative else dtype)
    rj = None if report is None else jnp.asarray(report)

    def score(widths):  # (W, T) → (W, T, P) each task's share of the family's validation loss
        sse = np.asarray(task_fold_losses(jnp.asarray(widths, dtype), Xt, yt, valid, train, filt, fj, rj))
        sse = sse if index is None else sse[..., index]
        return (sse / held[None, None, :, None]).mean(axis=2)

    grid = np.repeat(np.asarray(widths, float)[:, None], n_tasks, 1)
    scores = score(grid)
    if refine:
        best = grid[np.argmin(scores.min(axis=2), axis=0), np.arange(n_tasks)]
        low, high = best <= grid.min(axis=0), best >= grid.max(axis=0)
        factors = np.where(low[None], np.array([1 / 16, 1 / 4])[:, None],
                           np.where(high[None], np.array([4.0, 16.0])[:, None], np.array([0.5, 2.0])[:, None]))
        extra = best[None] * factors
        grid, scores = np.concatenate([grid, extra]), np.concatenate([scores, score(extra)])
    W, _, P = scores.shape
    flat = np.transpose(scores, (1, 0, 2)).reshape(n_tasks, W * P)
    pick = np.argmin(flat, axis=1)
    iw, ip = np.divmod(pick, P)
    widths = grid[iw, np.arange(n_tasks)]
    chosen = np.asarray(params)[ip]
    coef, means = task_coefficients(jnp.asarray(widths, dtype), Xt, yt, valid, filt,
                                     jnp.asarray(chosen, jnp.int32 if filt.iterative else dtype))
    task_losses = flat[np.arange(n_tasks), pick]
    fit = IndependentFit(widths, chosen, np.asarray(means), coef, Xt)
    return fit, float(task_losses.sum()), task_losses
