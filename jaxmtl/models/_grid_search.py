"""Steps of the grid search shared by the estimators that select on a path: the best grid point
(with the classifiers' one-standard-error rule), the coarse-to-fine width search and the warning
when a selected value lies on the edge of its grid."""

from __future__ import annotations

import warnings
from typing import Any

import jax
import numpy as np

from ..errors import GridEdgeWarning, ParameterError
from ..kernels.scalar import Gaussian, Kernel

__all__: list[str] = []


def _stack(kernels: list[Kernel]) -> Kernel:
    """Stack same-class kernels into one pytree with a leading batch axis (NumPy leaves: stacking
    them is no compiled call)."""
    return jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *kernels)


def _score_kernels(kernels: list[Kernel], score_stacked, batch: int) -> np.ndarray:
    """``score_stacked(stacked kernels, active)`` for every kernel of a list, in its order.

    Kernels of one class and leaf shapes (a pytree structure) are stacked in batches of ``batch``,
    the last batch padded by repeating its last kernel, ``active`` ((batch,) bool) False on the
    padding, which the compiled call skips: one compilation per structure, whatever the number
    of kernels. A kernel without array leaves (Linear) is scored once per structure.
    """
    groups: dict[Any, list[int]] = {}
    for i, k in enumerate(kernels):
        leaves, treedef = jax.tree_util.tree_flatten(k)
        groups.setdefault((treedef, tuple(np.shape(v) for v in leaves)), []).append(i)
    out: list[Any] = [None] * len(kernels)
    for (treedef, shapes), members in groups.items():
        ks = [kernels[i] for i in members]
        ks = ks + ks[-1:] * (-len(ks) % batch)
        active = np.arange(len(ks)) < len(members)
        rows = np.concatenate([np.asarray(score_stacked(_stack(ks[j:j + batch]), active[j:j + batch]))
                               for j in range(0, len(ks), batch)])
        rows = np.repeat(rows[:1], len(members), axis=0) if treedef.num_leaves == 0 else rows
        for i, row in zip(members, rows):
            out[i] = row
    return np.stack(out)


# A default width grid is extended past an edge (× 4^±1, 4^±2) or refined around its best
# (× 2^±1) up to WIDTH_EXTENSIONS times.
WIDTH_EXTENSIONS = 2


def _best_index(scores: np.ndarray, tolerance: float = 0.01) -> tuple[int, ...]:
    """The grid point of least validation loss (an index per grid axis).

    For (W, Ω, P, 2 or 3) code losses (squared loss, misclassification rate[, standard error
    over folds of the squared loss]): among the points whose squared loss is within one standard
    error of the least (the one-standard-error rule), and at least within ``tolerance``
    (relative), the one with the fewest validation errors, then the least squared loss.
    """
    if scores.ndim == 3:
        return tuple(int(i) for i in np.unravel_index(int(np.argmin(scores)), scores.shape))
    sq, err = scores[..., 0], scores[..., 1]
    best = np.min(sq)
    se = scores[..., 2].ravel()[int(np.argmin(sq))] if scores.shape[-1] > 2 else 0.0
    near = sq <= best + max(tolerance * abs(best), se) if np.isfinite(best) else np.isfinite(sq)
    order = np.lexsort((sq.ravel(), np.where(near.ravel(), err.ravel(), np.inf)))
    return tuple(int(i) for i in np.unravel_index(int(order[0]), sq.shape))


def _refine_widths(kernels, widths, scores, score):
    """Coarse-to-fine width search: extend the grid past an edge where the best width lies
    (× 4^±1, 4^±2), else refine around the best (× 2^±1); at most ``WIDTH_EXTENSIONS`` + 1 rounds.

    ``score(kernels)`` returns the validation losses of a list of kernels. Returns the kernels,
    widths and scores of every width tried, in increasing order of width.
    """
    refined = False
    for _ in range(WIDTH_EXTENSIONS + 1):
        best = widths[_best_index(scores)[0]]
        if best == widths.min():
            new = best * np.array([1 / 16, 1 / 4])
        elif best == widths.max():
            new = best * np.array([4.0, 16.0])
        elif not refined:
            new = best * np.array([0.5, 2.0])
            refined = True
        else:
            break
        new = np.array([w for w in new if not np.any(np.isclose(w, widths))])
        if new.size == 0:
            break
        extra = [Gaussian(float(w)) for w in new]
        kernels, widths = kernels + extra, np.concatenate([widths, new])
        scores = np.concatenate([scores, score(extra)])
    order = np.argsort(widths)
    return [kernels[i] for i in order], widths[order], scores[order]


def _warn_on_edges(width, grid, params, ip, filt, defaults: bool, lambda_hint: str | None = None) -> None:
    """Warn (GridEdgeWarning) when a selected value lies on the edge of its grid; ``lambda_hint``
    replaces the advice of a λ on the grid's small end."""
    if width is not None and len(grid) > 1 and (width <= grid.min() or width >= grid.max()):
        side = "smallest" if width <= grid.min() else "largest"
        warnings.warn(f"the selected kernel width {width:.4g} is the {side} of the grid "
                      f"{grid.min():.3g} … {grid.max():.3g}"
                      + (" after extending it" if defaults else "")
                      + "; pass a kernel or width_factors reaching further.", GridEdgeWarning, stacklevel=4)
    if len(params) > 1 and ip == len(params) - 1:
        what = f"step {int(params[ip])} (the last of the path)" if filt.iterative \
            else f"λ = {params[ip]:.3g} (the smallest of the grid)"
        hint = "n_steps" if filt.iterative else "lambdas"
        advice = lambda_hint if lambda_hint is not None and not filt.iterative else f"pass a larger {hint} range"
        warnings.warn(f"the selected {what} lies on the edge of its grid"
                      + (" after continuing the path" if defaults and filt.iterative else "")
                      + f"; {advice}.", GridEdgeWarning, stacklevel=4)


def default_lambdas(dtype) -> np.ndarray:
    """The default λ grid of closed-form filters, largest first: three per decade from 1 down to
    the working precision's resolution, max(ε/10, 10⁻¹²) (ε the dtype's machine epsilon), relative to
    the kernel's mean diagonal. Noiseless data are fitted best near interpolation, below the 10⁻⁶
    where the eigen-path estimators' grid stops; :class:`~jaxmtl.VectorFieldRegressor` and the
    approximate route (D × D feature path) use it.

    Example:
        >>> lams = default_lambdas(np.float32)
        >>> float(lams[0]), bool(1e-8 < lams[-1] < 2e-8), lams.size
        (1.0, True, 25)
    """
    floor = lambda_floor(dtype)
    return np.geomspace(1.0, floor, int(round(3 * np.log10(1.0 / floor))) + 1)


def lambda_floor(dtype) -> float:
    """The working precision's resolution of λ relative to the kernel's mean diagonal,
    max(ε/10, 10⁻¹²) (ε the dtype's machine epsilon): the smallest λ a default grid reaches.

    Example:
        >>> lambda_floor(np.float64), round(lambda_floor(np.float32) * 1e8, 3)
        (1e-12, 1.192)
    """
    if not (isinstance(dtype, (type, np.dtype, str)) and np.issubdtype(np.dtype(dtype), np.floating)):
        raise ParameterError(f"dtype must be a floating-point dtype (float32 or float64); received {dtype!r}.")
    return max(float(np.finfo(dtype).eps) / 10, 1e-12)


def float32_lambda_hint(filt, lambdas, dtype) -> str | None:
    """What a GridEdgeWarning at the default λ grid's small end advises in float32 (None elsewhere:
    a larger range): float64 resolves smaller λ.

    Example:
        >>> from jaxmtl.filters import Tikhonov
        >>> float32_lambda_hint(Tikhonov(), None, np.float32).startswith("the default grid")
        True
    """
    if filt.iterative or lambdas is not None or np.dtype(dtype) != np.float32:
        return None
    return "the default grid reaches down to float32's resolution (dtype='float64' resolves smaller λ)"


def fold_means(per_fold: np.ndarray, partitions: int) -> np.ndarray:
    """(W, Ω, P[, 3]) scores from per-fold losses (W, k, Ω, P[, 2]): the mean over folds, NaN as
    +inf; code losses (…, 2) get a third entry, the standard error over folds of the squared loss
    (0 for one fold): the standard deviation over all folds over √(folds per partition) when the
    k folds stack ``partitions`` repeated k-fold partitions (the standard error of one k-fold
    estimate: the partitions share their samples, so repeating them does not shrink it by
    √partitions).

    Example:
        >>> fold_means(np.array([[[[1.0, np.nan]], [[3.0, np.nan]]]]), 1).tolist()
        [[[2.0, inf]]]
    """
    mean = per_fold.mean(axis=1)
    if per_fold.ndim == 5 and per_fold.shape[-1] == 2:
        m = per_fold.shape[1]
        se = per_fold[..., 0].std(axis=1, ddof=1) / np.sqrt(m // partitions) if m > 1 \
            else np.zeros_like(mean[..., 0])
        mean = np.concatenate([mean, se[..., None]], axis=-1)
    return np.where(np.isnan(mean), np.inf, mean)
