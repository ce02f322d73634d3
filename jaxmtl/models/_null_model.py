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
held-out rows, see :mod:`._per_task`). The grid's scoring program returns its per-fold losses,
C = 0's as one more column (``_grid_routes._score_grid``), so the paired comparison costs no program
of its own; it decides only where C = 0 is within ``NULL_MARGIN`` (relative) of the selected
point's mean loss — a larger lead is taken as signal.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__: list[str] = []

Array = np.ndarray
NULL_MARGIN = 0.1


def null_losses(Yc, offset, held, vh, base_loss):
    """(k,) the loss of ``offset`` (d,) on each fold's held-out rows ``held`` (k, m) of weights
    ``vh`` (k, m): C = 0's validation losses (traceable: the grid's scoring program computes them
    beside the path). ``Yc`` (n, d) are the centred outputs and ``offset`` what ``predict`` adds
    back, so these are the path's own losses at g = 0; for leave-one-out and GCV the hat matrix is
    0 and both reduce to the loss of the offset on every row (one "fold" holding every row).

    Example:
        >>> from jaxmtl.paths.eigen import mse_loss
        >>> Yc = np.array([[1.0], [-1.0], [2.0], [-2.0]])
        >>> held, vh = np.array([[2, 3], [0, 1]]), np.ones((2, 2), bool)
        >>> np.asarray(null_losses(Yc, np.zeros(1), held, vh, mse_loss)).tolist()
        [4.0, 1.0]
    """
    Yc = jnp.asarray(Yc)  # NumPy outputs too: they are indexed by traced fold rows

    def one(h, v):
        w = v.astype(Yc.dtype)
        Yv = Yc[h] + offset
        return base_loss(jnp.broadcast_to(offset, Yv.shape), Yv, w / jnp.sum(w))

    return jax.vmap(one)(held, vh)


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


def null_wins(mode: str, masks: np.ndarray, null_folds: np.ndarray, best_folds: np.ndarray, best_score: float,
              partitions: int = 1) -> tuple[float, bool]:
    """(loss of C = 0, whether it is kept over the selected point): ``null_folds`` (k,) C = 0's
    losses on the folds of ``masks`` (:func:`null_losses`; one value for leave-one-out and
    GCV) and ``best_folds`` (k,) the selected point's on the same folds, of mean ``best_score``.

    Example:
        >>> masks = np.ones((5, 10), bool)
        >>> null_wins("kfold", masks, np.array([1.0, 1.1, 0.9, 1.0, 1.0]),
        ...           np.array([0.98, 1.12, 0.88, 1.0, 0.99]), 0.994)
        (1.0, True)
    """
    null_score = float(np.mean(np.asarray(null_folds, np.float64)))
    if not (mode == "kfold" and len(masks) >= 3):  # nothing to pair
        return null_score, null_score <= best_score
    if null_score > (1.0 + NULL_MARGIN) * best_score:  # a lead this large is taken as signal
        return null_score, False
    return null_score, keep_null(np.asarray(null_folds, np.float64), np.asarray(best_folds, np.float64), best_score,
                                 partitions)
