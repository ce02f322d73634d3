"""The path's point t = 0 / λ = ∞: C = 0, every row predicted by the training mean.

Every spectral filter has g → 0 at t = 0 (iterative filters) or λ → ∞ (Tikhonov and its
relatives), where the coefficients vanish and the model predicts its offset — the training mean
when the estimator fits an intercept. The grids of the estimators do not reach it, so on data
with no signal (Mulan's sf1) selection had to pick some model. Here it is scored on the same
folds with the same loss as the path and kept when no point of the path beats it by more than
one standard error of the paired per-fold difference (the one-standard-error rule, between the
simplest model and the selected one): the best of a grid of hundreds of points is optimistic, and
a lead smaller than its own noise is no evidence of signal (:func:`within_one_se`; the per-output
family of a vector-valued regressor applies the same rule to each output on the parts of its
held-out rows, see :mod:`._per_task`). The per-fold losses of the selected
point cost one more path (one kernel and output matrix: a small part of the grid's), computed in
every k-fold fit so that every fit runs the same programs; they decide only where C = 0 is within
``NULL_MARGIN`` (relative) of the selected point's mean loss — a larger lead is taken as signal.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels.scalar import Kernel
from ..paths.direct import direct_kfold_losses, output_groups
from ..selection.criteria import fold_indices, kfold_path

__all__: list[str] = []

Array = np.ndarray
NULL_MARGIN = 0.1


def null_fold_losses(mode: str, masks: np.ndarray, Yc: np.ndarray, offset: np.ndarray,
                     base_loss: Callable, folds: tuple[np.ndarray, ...] | None = None) -> np.ndarray:
    """(k,) validation losses of C = 0 on each fold (one value for leave-one-out and GCV).

    ``Yc`` (n, d) are the centred outputs the path's folds hold out and ``offset`` (d,) what
    ``predict`` adds back, so these are the path's own losses at g = 0 (for leave-one-out and GCV
    the hat matrix is 0, and both reduce to the loss of the offset on every row). ``folds``: the
    masks' :func:`~jaxmtl.selection.criteria.fold_indices`, possibly padded (then ``Yc`` may
    carry padded rows, which no index reaches). Every fold in one compiled call.

    Example:
        >>> from jaxmtl.paths.eigen import mse_loss
        >>> masks = np.array([[True, True, False, False], [False, False, True, True]])
        >>> Yc = np.array([[1.0], [-1.0], [2.0], [-2.0]])
        >>> null_fold_losses("kfold", masks, Yc, np.zeros(1), mse_loss).tolist()
        [4.0, 1.0]
    """
    if mode not in ("kfold", "holdout", "masks"):  # every row held out once
        held, vh = np.arange(len(Yc), dtype=np.int32)[None], np.ones((1, len(Yc)), bool)
    else:
        _, held, _, vh = fold_indices(masks) if folds is None else folds
    dtype = np.asarray(Yc).dtype
    return np.asarray(_null_losses(Yc, np.asarray(offset, dtype), held, vh, base_loss), np.float64)


@partial(jax.jit, static_argnames=("base_loss",))
def _null_losses(Yc, offset, held, vh, base_loss):
    """(k,) the loss of ``offset`` on each fold's held-out rows ``held`` (k, m) of weights ``vh``."""
    def one(h, v):
        w = v.astype(Yc.dtype)
        Yv = Yc[h] + offset
        return base_loss(jnp.broadcast_to(offset, Yv.shape), Yv, w / jnp.sum(w))

    return jax.vmap(one)(held, vh)


@partial(jax.jit, static_argnames=("filt", "base_loss"))
def _fold_losses_at(kernel, X, Yc, a, V, params, folds, offset, report, filt, base_loss):
    def loss(F, Yv, w):
        return base_loss(F + offset, Yv + offset, w)

    return kfold_path(kernel(X, X), Yc, a, V, filt, params, folds, loss=loss, report=report)


def fold_losses_at(kernel: Kernel, X: np.ndarray, Yc: np.ndarray, a: np.ndarray, V: np.ndarray, filt,
                   path: tuple, masks: np.ndarray, offset: np.ndarray, base_loss: Callable,
                   folds: tuple[np.ndarray, ...] | None = None) -> np.ndarray:
    """(k, P) per-fold validation losses of one kernel and one output matrix (``a`` (d,)) at the P
    parameters of the grid, with the loss seen as ``predict`` deploys it; one compiled call.
    ``path``: (parameters run, report mask or None, the grid's indices among them or None), as the
    grid's scoring runs it (``_spectral._path_params``); ``folds`` as :func:`null_fold_losses`."""
    full, report, index = path
    dtype = np.asarray(Yc).dtype
    out = np.asarray(_fold_losses_at(kernel, X, Yc, np.asarray(a, dtype), np.asarray(V, dtype),
                                     np.asarray(full, np.int32 if filt.iterative else dtype),
                                     fold_indices(masks) if folds is None else folds, np.asarray(offset, dtype),
                                     report, filt, base_loss))
    return out if index is None else out[:, index]


@partial(jax.jit, static_argnames=("filt", "base_loss"))
def _direct_fold_losses_at(kernel, X, Yc, a, V, param, folds, offset, filt, base_loss, groups):
    def loss(F, Yv, w):
        return base_loss(F + offset, Yv + offset, w)

    losses, ok = direct_kfold_losses(kernel(X, X), Yc, a, V, filt, param[None], folds, loss, groups)
    return losses[:, 0], ok


def keep_null(null_folds: np.ndarray, best_folds: np.ndarray | None, best_score: float, partitions: int = 1) -> bool:
    """True when the selected point does not beat C = 0 by more than one standard error.

    With per-fold losses of both (``best_folds`` (k,), k ≥ 3) the rule is paired: the mean
    per-fold lead of the selected point over C = 0 must exceed the standard error of that lead;
    otherwise (leave-one-out, GCV, one hold-out split) C = 0 is kept when its loss is not larger.
    Folds of ``partitions`` repeated k-fold partitions share their samples: the standard error is
    that of one partition's estimate, as in the classifiers' rule.

    Example:
        >>> keep_null(np.array([1.0, 1.1, 0.9]), np.array([0.98, 1.12, 0.88]), 0.993)
        True
        >>> keep_null(np.array([1.0, 1.1, 0.9]), np.array([0.5, 0.6, 0.4]), 0.5)
        False
    """
    if best_folds is None or null_folds.size < 3:
        return float(np.mean(null_folds)) <= best_score
    return bool(within_one_se(null_folds, best_folds, partitions))


def within_one_se(null: np.ndarray, best: np.ndarray, partitions: int = 1) -> np.ndarray:
    """Whether the mean lead of ``best`` over ``null``, paired losses (…, k) on the same k folds
    (or parts of the held-out rows), is at most the standard error of that lead: (…,) bool.

    Example:
        >>> within_one_se(np.array([[1.0, 1.1, 0.9], [1.0, 1.1, 0.9]]),
        ...               np.array([[0.98, 1.12, 0.88], [0.5, 0.6, 0.4]])).tolist()
        [True, False]
    """
    lead = null - best
    se = np.std(lead, ddof=1, axis=-1) / np.sqrt(max(lead.shape[-1] // partitions, 1))
    return np.mean(lead, axis=-1) <= se


def null_wins(mode: str, masks: np.ndarray, kernel: Kernel, X: np.ndarray, Yc: np.ndarray, a: np.ndarray,
              V: np.ndarray, filt, path: tuple, ip: int, best_score: float, offset: np.ndarray,
              base_loss: Callable, partitions: int = 1,
              folds: tuple[np.ndarray, ...] | None = None, route: str = "eigen") -> tuple[float, bool]:
    """(loss of C = 0, whether it is kept over the selected point ``ip`` of the grid ``path`` (as
    :func:`fold_losses_at`) of ``kernel`` and ``a``); ``folds`` (and padded ``X``, ``Yc``) as
    :func:`null_fold_losses`. ``route``: the grid's; on 'direct' the selected point's per-fold
    losses come from its own Cholesky factors (the eigen route's where one fails)."""
    null_folds = null_fold_losses(mode, masks, Yc, offset, base_loss, folds)
    null_score = float(np.mean(null_folds))
    paired = mode == "kfold" and len(masks) >= 3
    if not paired:
        return null_score, null_score <= best_score
    # computed whenever the rule may pair them: every fit then runs the same programs
    best_folds, ok = None, False
    if route == "direct":
        dtype = np.asarray(Yc).dtype
        fi = fold_indices(masks) if folds is None else folds
        out, ok = _direct_fold_losses_at(kernel, X, Yc, np.asarray(a, dtype), np.asarray(V, dtype),
                                         np.asarray(path[0], dtype)[ip:ip + 1], fi, np.asarray(offset, dtype), filt,
                                         base_loss, output_groups(np.asarray(a, dtype)))
        best_folds, ok = np.asarray(out, np.float64), bool(ok)
    if not ok:
        best_folds = fold_losses_at(kernel, X, Yc, a, V, filt, path, masks, offset, base_loss, folds)[:, ip]
    if null_score > (1.0 + NULL_MARGIN) * best_score:  # a lead this large is taken as signal
        return null_score, False
    return null_score, keep_null(null_folds, best_folds, best_score, partitions)
