r"""Validation losses of the per-task (per-output) family: every (task, fold)'s eigen path.

:func:`task_fold_losses` scores, in one compiled call, every width × task × fold × filter
parameter × output of :mod:`._per_task`'s independent family. Each fold's training rows of a task
are gathered (:func:`fold_gathers`, padded to a length fixed by the size bucket, padding weight 0):
their Gram alone is eigendecomposed — every filter parameter from that one decomposition — and
the fold's held-out rows are scored through their cross-Gram with the training rows, the
decompositions vmapped over tasks and folds and ``lax.map``-ped over the widths. A padding
position has zero rows and columns in the masked Gram, falls in its null space and gets a zero
coefficient, as in the k-fold path of :mod:`jaxmtl.selection`; a held-out padding position has
weight 0. Each fold centres a task on the mean of its own training rows; a task without a
training row in a fold predicts 0 (the outputs are centred on their overall mean first).

Gathering rather than masking a task's whole block matters where the decompositions dominate: a
5-fold training set holds 4/5 of the rows, so its eigendecomposition costs about (4/5)³ ≈ ½ of
the block's (SARCOS's 3000 rows: 2458 against 3072 padded rows per fold).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .._jit import jit
from ..kernels.scalar import Gaussian
from ..linalg import clip_psd, eigh
from ..operators.base import SeparableEigh
from ..paths.dense import map_active
from ..paths.eigen import spectral_path
from ._buckets import fold_mode, fold_targets

__all__ = ["fold_gathers", "task_fold_losses"]


def _centred(y, m):
    """(centred y, means (d,)) of the columns of y (r, d) on the rows of the mask m (r,) (mean 0
    without rows)."""
    mf = m.astype(y.dtype)[:, None]
    mean = jnp.sum(mf * y, axis=0) / jnp.maximum(jnp.sum(mf), 1.0)
    return y - mean, mean


def _masked_eigh(K, m, d=1):
    """Eigensystem of K restricted to the rows m, with the identity output matrix of d outputs."""
    mf = m.astype(K.dtype)
    s, U = eigh(K * mf[:, None] * mf[None, :])
    return SeparableEigh(clip_psd(s), U, jnp.ones((d,), K.dtype), jnp.eye(d, dtype=K.dtype)), mf


def _part_losses(F, Y, w):
    """(d, V) held-out sums of squared errors of each output (F, Y (m, d)) on the V parts: w
    (m, V) their 0/1 row weights."""
    return jnp.sum(w[:, None, :] * ((F - Y) ** 2)[:, :, None], axis=0)


def fold_gathers(train: np.ndarray, valid: np.ndarray, parts: np.ndarray, masks: np.ndarray) -> tuple:
    """Each (fold, task)'s training and held-out rows as gather indices, for :func:`task_fold_losses`.

    Args:
      train: (k, T, r) training masks of the folds restricted to each task (True = training);
        valid: (T, r) genuine rows; parts: (k, T, r, V) bool, the held-out rows of each part
        (see :func:`validation_parts`); masks: (k, N) the folds' training masks on all rows,
        whose reading (:func:`._buckets.fold_mode`) sets the padded lengths.

    Returns: (train rows (k, T, a), their weights (k, T, a) bool, held-out rows (k, T, b), their
    parts (k, T, b, V) bool), a and b the :func:`._buckets.fold_targets` of the bucket r, so that
    every row count of a bucket gives the same shapes; padding positions have weight False.

    Example:
        >>> train = np.array([[[True, False, True, False]], [[False, True, False, False]]])  # 2 folds, 1 task
        >>> valid = np.array([[True, True, True, False]])  # 3 rows padded to 4
        >>> tr, w, ho, hp = fold_gathers(train, valid, np.ones((2, 1, 4, 1), bool), train[:, 0, :3])
        >>> tr.tolist(), w.tolist()
        ([[[0, 2]], [[1, 0]]], [[[True, True]], [[True, False]]])
        >>> ho.tolist(), hp[..., 0].tolist()
        ([[[1, 0]], [[0, 2]]], [[[True, False]], [[True, True]]])
    """
    fitted, held = train & valid, ~train & valid
    mode, n_folds = fold_mode(masks)
    a, b = fold_targets(mode, fitted, n_folds, train.shape[-1], held)

    def rows(m, length):  # the True positions first, in order: (k, T, length) indices and weights
        order = np.argsort(~m, axis=-1, kind="stable")[..., :length]
        return order, np.take_along_axis(m, order, axis=-1)

    tr, tw = rows(fitted, a)
    ho, hw = rows(held, b)
    return tr, tw, ho, np.take_along_axis(parts, ho[..., None], axis=2) & hw[..., None]


@partial(jit, static_argnames=("filt",))
def task_fold_losses(widths, active, X, y, folds, filt, params, report=None):
    """Held-out sums of squared errors (W, T, k, P, d, V) of every width × task × fold × filter
    parameter × output, on each of V parts of the held-out rows.

    Each fold's training rows are gathered (:func:`fold_gathers`): the eigendecomposition is of
    their Gram alone (padding positions masked), the held-out rows scored through their
    cross-Gram with them.

    Args:
      widths: (W, T) Gaussian widths, one column per task.
      active: (W,) bool, the widths to score: the others (a batch padded to a fixed W, so that
        one compiled program serves every call) are skipped at run time — the widths are scored
        one after another (``lax.map``), so a skipped one costs no eigendecomposition — and hold inf.
      X: (T, r, p) inputs of each task, zero-padded; y: (T, r, d) outputs (d columns fitted
        independently on the task's rows, one eigendecomposition for all).
      folds: :func:`fold_gathers` of the folds restricted to each task.
      filt: the filter (static); params: (P,) λ values, or the steps 1..T_max of an iterative
        filter with ``report`` (T_max,) marking those to evaluate (zeros elsewhere).
    """

    def one_task(width, X_t, y_t, tr, tw, ho, hp):
        kernel = Gaussian(width)

        def one_fold(tr, tw, ho, hp):
            X_tr, w = X_t[tr], hp.astype(y_t.dtype)  # w (b, V)
            ytr, mean = _centred(y_t[tr], tw)
            eig, mf = _masked_eigh(kernel(X_tr, X_tr), tw, y_t.shape[1])
            n = jnp.sum(mf)
            y_held = y_t[ho] - mean
            losses = spectral_path(eig, ytr * mf[:, None], filt, params, K_eval=kernel(X_t[ho], X_tr) * mf[None, :],
                                   Y_eval=y_held, w_eval=w, n=jnp.maximum(n, 1.0), output="loss",
                                   loss=_part_losses, report=report)
            # a fold with no training row of the task predicts its (zero) mean
            return jnp.where(n > 0, losses, _part_losses(jnp.zeros_like(y_held), y_held, w))

        return jax.vmap(one_fold)(tr, tw, ho, hp)

    def one_width(w):
        return jax.vmap(one_task)(w, X, y, *(jnp.swapaxes(f, 0, 1) for f in folds))

    out = map_active(one_width, widths, active)
    return jnp.where(jnp.isnan(out), jnp.inf, out)
