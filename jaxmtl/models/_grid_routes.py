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
from ..paths.eigen import filtered_coefficients
from ..paths.routes import Problem, choose_route

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
