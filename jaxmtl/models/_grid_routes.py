"""The route of the spectral estimators' grid: one ``eigh`` per kernel and fold shared by every
point (the eigen route), or a Cholesky factor per kernel, fold, λ and distinct output eigenvalue
(the direct route, :mod:`jaxmtl.paths.direct`; Tikhonov and iterated Tikhonov), whichever the cost
model of :mod:`jaxmtl.paths.routes` prices lower over the whole grid; and the refit on that route.
"""

from __future__ import annotations

import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .._jit import jit
from ..errors import ParameterError, RouteFallbackWarning
from ..filters.spectral import IteratedTikhonov, SpectralFilter, Tikhonov
from ..linalg import clip_psd, eigh
from ..operators.base import SeparableEigh
from ..paths.direct import (direct_coefficients, direct_kfold_losses, direct_losses, direct_order, distinct_count,
                            output_groups)
from ..paths.dense import map_active
from ..paths.eigen import filtered_coefficients
from ..paths.routes import Problem, choose_route
from ..selection.criteria import gcv_path, kfold_path, loo_path
from ._null_model import null_losses

__all__: list[str] = []

ROUTE_CHOICES = ("auto", "eigen", "direct")


def grid_route(route: str, filt: SpectralFilter, mode: str, n: int, a: np.ndarray, n_params: int,
               folds: tuple[np.ndarray, ...] | None, dtype) -> str:
    """The route ('eigen' or 'direct') of one grid scoring: ``route`` checked, or by the cost model
    of :mod:`jaxmtl.paths.routes` over the whole grid when 'auto' — points × ω × folds × distinct
    output eigenvalues (the kernels multiply both routes alike).

    Args:
      route: 'auto', 'eigen' or 'direct'; filt: the filter; mode: the selection ('kfold',
        'holdout', masks as 'masks', 'loo', 'gcv'); n: rows of the (padded) problem; a: (Ω, d)
        output eigenvalues; n_params: P; folds: the padded fold indices (tr (k, n_train),
        held (k, m), …) of the fold selections, else None.

    Example:
        >>> grid_route("auto", Tikhonov(), "gcv", 2000, np.ones((1, 2)), 3, None, np.float64)
        'direct'
        >>> grid_route("auto", IteratedTikhonov(order=2), "gcv", 2000, np.ones((11, 2)), 30, None, np.float64)
        'eigen'
    """
    if route not in ROUTE_CHOICES:
        raise ParameterError(f"route must be 'auto', 'eigen' or 'direct'; received {route!r}.")
    if route == "direct":
        direct_order(filt)  # names a filter without a direct form
        return route
    if route == "eigen" or type(filt) not in (Tikhonov, IteratedTikhonov):
        return "eigen"
    common = dict(d=a.shape[1], points=n_params, omegas=a.shape[0], distinct=distinct_count(np.asarray(a), dtype),
                  order=direct_order(filt))
    if folds is not None:
        p = Problem(n=n, criterion="kfold", m=folds[1].shape[1], folds=folds[0].shape[0], n_train=folds[0].shape[1],
                    **common)
    else:
        p = Problem(n=n, criterion=mode, **common)
    return choose_route(p, str(np.dtype(dtype)))


def direct_scores(K, Y, a, V, filt, params, selection: str, folds, loss, groups, n=None):
    """(losses, ok) of one kernel's grid on the direct route, traceable: (k, Ω, P[, ...]) per fold
    for 'kfold' / 'holdout' / 'masks' (``folds`` the padded fold indices), (Ω, P[, ...]) for 'loo'
    and 'gcv' (``n``: the real rows, the others zero padding; None: all); ``ok`` False where a
    factor failed."""
    if selection in ("kfold", "holdout", "masks"):
        return direct_kfold_losses(K, Y, a, V, filt, params, folds, loss, groups)
    res = direct_losses(K, Y, a, V, filt, params, selection, loss=loss, groups=groups, n=n)
    return res.losses, res.ok


@partial(jit, static_argnames=("filt", "selection", "base_loss", "route"))
def _score_grid(kernels, X, Y, a, V, filt, params, selection, folds, base_loss, offset, report=None, route="eigen",
                groups=None, n=None, active=None):
    """(per-fold validation losses (W, k, Ω, P + 1[, 2]) for every kernel × fold × output matrix ×
    filter parameter, ok): the last of the P + 1 columns is C = 0's (the null model, the path's point
    t = 0 / λ = ∞: ``offset`` predicted on every held-out row), so that the null model's paired
    comparison (:mod:`._null_model`) needs no program of its own.

    ``route``: 'eigen' or 'direct' (``groups``: :func:`output_groups` of ``a``; see ._grid_routes);
    ``ok`` is False where a direct factor failed (the caller falls back to the eigen route).

    With the classifiers' code losses the last axis holds the squared loss and the
    misclassification rate. Leave-one-out and GCV have one "fold" (k = 1): their criterion on
    all rows. NaN losses are returned as they are (the caller maps the means to +inf).
    ``active`` (W,) bool: the kernels to score (default all); the others, a batch's padding, are
    skipped at run time (:func:`~jaxmtl.paths.dense.dense_grid_losses`'s ``active``) and hold inf.

    ``Y`` are the centred outputs and ``offset`` (d,) the intercept added back by ``predict``;
    the loss sees F + offset and Y + offset, so a decision rule is scored as it is deployed.
    ``folds``: the :func:`~jaxmtl.selection.criteria.fold_indices` of the training masks (k-fold,
    hold-out and given masks; None for 'loo' / 'gcv'). ``report`` (iterative filters): the steps to evaluate, zeros
    elsewhere (see :func:`_path_params`). ``n`` ('loo' / 'gcv'): the real rows, the first n (None: all).
    """

    def loss(F, Yv, w):
        return base_loss(F + offset, Yv + offset, w)

    on_folds = selection in ("kfold", "holdout", "masks")
    real = jnp.arange(Y.shape[0]) < (Y.shape[0] if n is None else n)
    if not on_folds:  # leave-one-out, GCV: the null model's loss on every real row
        held, vh = jnp.arange(Y.shape[0])[None], real[None]
    else:
        held, vh = folds[1], folds[3]
    null = null_losses(Y, offset, held, vh, base_loss)  # (k,) or (k, 2)

    def one_kernel(kern):
        K, ok = kern(X, X), jnp.asarray(True)
        if not on_folds and n is not None:  # the padded block of the Gram zero (docs/design.md, "Size buckets")
            K = K * (real[:, None] & real[None, :]).astype(K.dtype)
        if route == "direct":
            losses, ok = direct_scores(K, Y, a, V, filt, params, selection, folds, loss, groups, n)
            losses = losses if on_folds else losses[None]
        elif on_folds:  # hold-out is one masked fold
            losses = kfold_path(K, Y, a, V, filt, params, folds, loss=loss, report=report)
        else:
            s, U = eigh(K)
            eig = SeparableEigh(clip_psd(s), U, a, V)
            losses = (loo_path(eig, Y, filt, params, loss=loss, report=report, n=n) if selection == "loo" else
                      gcv_path(eig, Y, filt, params, report=report, n=n))[None]
        column = jnp.broadcast_to(null[:, None, None].astype(losses.dtype),
                                  losses.shape[:2] + (1,) + losses.shape[3:])
        return jnp.concatenate([losses, column], axis=2), ok

    if jax.tree_util.tree_leaves(kernels):
        out, ok = map_active(one_kernel, kernels, active)
    else:  # a kernel without parameters (Linear): nothing to map over, one kernel
        out, ok = one_kernel(kernels)
        out = out[None]
    return out, jnp.all(ok)


def on_route(score_grid, stacked, args: tuple, route: str):
    """``score_grid(stacked, *args)`` on ``route`` (its losses); a failed direct factor scores the
    call again on the eigen route, with a warning."""
    out, ok = score_grid(stacked, *args, route=route, groups=output_groups(args[2]) if route == "direct" else None)
    if route == "direct" and not bool(ok):
        warn_route_fallback()
        out, _ = score_grid(stacked, *args)
    return out


@partial(jit, static_argnames=("filt",))
def _refit_eigen(kern, X, Y, a, V, filt, param, n):
    m = (jnp.arange(X.shape[0]) < n).astype(Y.dtype)
    s, U = eigh(kern(X, X) * m[:, None] * m[None, :])
    eig = SeparableEigh(clip_psd(s), U, a, V)
    return filtered_coefficients(filt, eig, Y, param, n=n.astype(Y.dtype))


@partial(jit, static_argnames=("filt",))
def _refit_direct(kern, X, Y, a, V, filt, param, n, groups):
    m = (jnp.arange(X.shape[0]) < n).astype(Y.dtype)
    return direct_coefficients(kern(X, X) * m[:, None] * m[None, :], Y, a, V, filt, param, groups, n=n.astype(Y.dtype))


def refit(route: str, kern, X: np.ndarray, Y: np.ndarray, a: np.ndarray, V: np.ndarray, filt: SpectralFilter,
          param, n) -> np.ndarray:
    """Coefficients (N, d) at one grid point from the rows X (N, p), Y (N, d) of which the first
    ``n`` are real and the rest zero padding (masked out of the Gram; zero coefficients), on
    ``route``; a failed direct factor falls back to the eigen route with a warning."""
    if route == "direct":
        coef, ok = _refit_direct(kern, X, Y, a, V, filt, param, n, output_groups(a))
        if bool(ok):
            return np.asarray(coef)
        warn_route_fallback()
    return np.asarray(_refit_eigen(kern, X, Y, a, V, filt, param, n))


def warn_route_fallback() -> None:
    """Warn (RouteFallbackWarning) that a direct-route factor failed and the eigen route served."""
    warnings.warn("route='direct': a Cholesky factor of a_jK + nλI failed in this precision (the shifted Gram is "
                  "numerically indefinite); the eigen route served the selection instead.", RouteFallbackWarning,
                  stacklevel=3)
