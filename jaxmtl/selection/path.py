r"""One convention for every regularization path: ``regularization_path(gram, Y, outputs, filt, params, criterion)``.

The same six things describe every path the library runs, whichever route computes it:

==============  ======================================================================
argument        what it says
==============  ======================================================================
``gram``        the training Gram: an (n, n) scalar Gram matrix K (eigen route: one eigh
                serves every parameter) or any :class:`~jaxmtl.operators.GramOperator`
                (matrix-free route: an iterative filter as one ``lax.scan``)
``Y``           (n, d) training targets
``outputs``     the output structure: a (d, d) matrix A, or an eigen family ``(a, V)`` —
                ``a`` (d,) or (Ω, d) eigenvalues sharing the eigenvectors V (d, d), e.g.
                :func:`~jaxmtl.kernels.outputs.common_similarity_eigh` — or None with a
                Gram operator (which holds its own output structure)
``filt``        a :class:`~jaxmtl.filters.SpectralFilter`
``params``      (P,) λ values, or the steps 1..T of an iterative filter
``criterion``   how each point is scored: :class:`Holdout`, :class:`KFold`,
                :class:`LeaveOneOut`, :class:`GCV`, or None (no scoring)
==============  ======================================================================

and every path returns one :class:`PathSelection`: the losses of every point, the selected
point, whether it lies on the edge of its parameter grid, and what is needed to predict
(:meth:`PathSelection.coefficients`). The function is pure: call it under ``jit`` (criterion
and filter are pytrees whose static parts are fields), ``vmap`` it over kernel widths, and
differentiate its losses in any continuous hyperparameter (:mod:`jaxmtl.linalg` keeps the
derivative defined where output matrices repeat eigenvalues).

Which route computes the path — one ``eigh`` shared by the whole grid, a Cholesky factor per grid
point (:mod:`jaxmtl.paths.direct`), or an iterative filter's scan of products — is chosen by
``route="auto"`` from the cost model of :mod:`jaxmtl.paths.routes` for this grid on this device,
or forced by name (``route="eigen"``, ``"direct"``, ``"matrix_free"``); a forced route that cannot
serve the problem is refused before anything is traced.

The specialised functions it dispatches to (:func:`~jaxmtl.paths.spectral_path`,
:func:`~jaxmtl.selection.loo_path`, :func:`~jaxmtl.selection.gcv_path`,
:func:`~jaxmtl.selection.kfold_path`, :func:`~jaxmtl.paths.path_scan`) stay public for
callers that need one of their extra arguments.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from jaxmtl.filters import Tikhonov
    >>> from jaxmtl.kernels import Gaussian
    >>> X = jnp.linspace(-2, 2, 30)[:, None]; Y = jnp.c_[jnp.sin(X[:, 0]), jnp.cos(X[:, 0])]
    >>> K = Gaussian(1.0)(X, X)
    >>> A = 0.5 * jnp.ones((2, 2)) + 0.5 * jnp.eye(2)
    >>> sel = regularization_path(K, Y, A, Tikhonov(), jnp.logspace(-6, 0, 7), LeaveOneOut())
    >>> sel.losses.shape, sel.coefficients().shape
    ((7,), (30, 2))
"""

from __future__ import annotations

import warnings
from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import is_traced
from ..errors import GridEdgeWarning, ParameterError, RouteFallbackWarning, ShapeError
from ..filters.spectral import IteratedTikhonov, IterativeFilter, SpectralFilter, Tikhonov
from ..linalg import clip_psd, eigh
from ..operators.base import GramOperator, SeparableEigh
from ..operators.base import SeparableOperator
from ..paths.direct import direct_coefficients, direct_kfold_losses, direct_losses, direct_order, output_groups
from ..paths.eigen import filtered_coefficients, mse_loss, spectral_path
from ..paths.routes import ROUTES, Problem, choose_route, servable_routes
from ..paths.scan import path_scan
from .criteria import fold_rows, fold_sizes, gcv_path, kfold_path, loo_path
from ..products import full_precision

__all__ = ["regularization_path", "PathSelection", "Holdout", "KFold", "LeaveOneOut", "GCV"]

Array = jax.Array


class Holdout(eqx.Module):
    """Score each point on held-out rows.

    Attributes:
      K_eval: (m, n) cross-Gram K(x_val, x_train) — or, on the matrix-free route, a
        :class:`~jaxmtl.operators.GramOperator` mapping (n, d) coefficients to (m, d) predictions.
      Y_eval: (m, d) held-out targets.
      w_eval: (m,) row weights summing to 1, or None (uniform).
    """

    K_eval: Array | GramOperator
    Y_eval: Array
    w_eval: Array | None = None


class KFold(eqx.Module):
    """Score each point by k-fold cross-validation (folds vmapped; the mean over folds is selected).

    Build it outside ``jit`` from concrete masks: the fold sizes are static shapes.

    Attributes:
      masks: (k, n) boolean training masks (:func:`~jaxmtl.selection.kfold_masks`).
      sizes: (largest training fold, largest held-out fold), static; computed from the masks.
    """

    masks: Array
    sizes: tuple[int, int] = eqx.field(static=True)

    def __init__(self, masks: Array | np.ndarray, sizes: tuple[int, int] | None = None) -> None:
        if sizes is None:
            if is_traced(masks):
                raise ParameterError(
                    "KFold(masks) needs concrete masks to read the fold sizes (static shapes): build it "
                    "outside jit, or pass sizes=fold_sizes(masks) computed outside jit.")
            sizes = fold_sizes(masks)
        self.masks = jnp.asarray(masks, bool)
        self.sizes = (int(sizes[0]), int(sizes[1]))


class LeaveOneOut(eqx.Module):
    """Score each point by its closed-form leave-one-input-out loss (eigen route)."""


class GCV(eqx.Module):
    """Score each point by generalized cross-validation (eigen route)."""


Criterion = Holdout | KFold | LeaveOneOut | GCV


class PathSelection(eqx.Module):
    """A scored path and its selected point.

    Attributes:
      losses: (P,) — or (Ω, P) for an eigen family of Ω output matrices — the criterion's loss
        of every point (the mean over folds for :class:`KFold`); NaN when no criterion was given.
      fold_losses: (k, ..., P) per-fold losses for :class:`KFold`, else None.
      params: (P,) the filter parameters.
      best: () flat index of the selected point into ``losses`` (the last point without a
        criterion); ``jnp.unravel_index(best, losses.shape)`` gives (ω index, parameter index).
      best_param: () the selected λ or step.
      best_output: () index of the selected output matrix along Ω (0 when there is one).
      on_edge: () bool, True when the selected parameter is the first or last of ``params``: the
        best value may lie beyond the grid (extend it; estimators warn with GridEdgeWarning).
      eig: the :class:`~jaxmtl.operators.SeparableEigh` of the training problem (eigen route),
        or None (matrix-free and direct routes).
      coef: (n, d) coefficients at the selected point (matrix-free and direct routes), else None.
      Y: (n, d) training targets; filt: the filter (static); tau: the iterative step, or None.
    """

    losses: Array
    fold_losses: Array | None
    params: Array
    best: Array
    best_param: Array
    best_output: Array
    on_edge: Array
    eig: SeparableEigh | None
    coef: Array | None
    Y: Array
    tau: Array | None
    filt: SpectralFilter = eqx.field(static=True)

    def coefficients(self) -> Array:
        """(n, d) coefficients of the selected point, to predict with ``K(x, X_train) @ C @ A``.

        Example:
            >>> import jax.numpy as jnp
            >>> from jaxmtl.filters import Tikhonov
            >>> sel = regularization_path(jnp.eye(3), jnp.ones((3, 1)), jnp.eye(1), Tikhonov(),
            ...                           jnp.array([0.1, 1.0]))
            >>> sel.coefficients().shape
            (3, 1)
        """
        if self.coef is not None:
            return self.coef
        assert self.eig is not None  # the eigen route keeps its eigensystem
        a = self.eig.a if self.eig.a.ndim == 1 else self.eig.a[self.best_output]
        eig = SeparableEigh(self.eig.s, self.eig.U, a, self.eig.V)
        return filtered_coefficients(self.filt, eig, self.Y, self.best_param, self.tau)

    def warn_if_on_edge(self, name: str = "params") -> None:
        """Warn (GridEdgeWarning) on the host when the selection lies on the edge of its grid."""
        if bool(np.asarray(self.on_edge)):
            warnings.warn(f"the selected {name} ({float(self.best_param):.4g}) is at the edge of its grid "
                          f"[{float(self.params[0]):.4g}, {float(self.params[-1]):.4g}]: the best value may lie "
                          "beyond it; extend the grid.", GridEdgeWarning, stacklevel=2)


def _output_eigh(outputs, d: int, dtype) -> tuple[Array, Array]:
    """(a, V) from a (d, d) matrix or an (a, V) pair, shapes checked before tracing."""
    if isinstance(outputs, tuple):
        if len(outputs) != 2:
            raise ShapeError(f"outputs as a tuple must be (a, V); received {len(outputs)} items.")
        a, V = jnp.asarray(outputs[0], dtype), jnp.asarray(outputs[1], dtype)
        if V.shape != (d, d) or a.shape[-1:] != (d,) or a.ndim > 2:
            raise ShapeError(f"outputs (a, V) must have a of shape (d,) or (Ω, d) and V of shape (d, d) with "
                             f"d = {d} outputs; received a {a.shape} and V {V.shape}.")
        return a, V
    A = jnp.asarray(outputs, dtype)
    if A.shape != (d, d):
        raise ShapeError(f"outputs must be a ({d}, {d}) output matrix for Y with {d} columns, or an (a, V) "
                         f"eigen family; received shape {A.shape}.")
    a, V = eigh(A)
    return clip_psd(a), V


def _groups(outputs, a: Array) -> tuple[Array, Array]:
    """:func:`~jaxmtl.paths.direct.output_groups` of ``a``, grouped by the concrete eigenvalues of a
    concrete ``outputs`` (computed on the host: under ``jit`` ``a`` itself is traced)."""
    if isinstance(outputs, tuple) or is_traced(outputs):
        return output_groups(a, None if is_traced(outputs) else np.asarray(outputs[0]))
    return output_groups(a, np.maximum(np.linalg.eigvalsh(np.asarray(outputs, np.float64)), 0.0))


def _edge(best_param_index: Array, P: int) -> Array:
    return (best_param_index == 0) | (best_param_index == P - 1) if P > 1 else jnp.asarray(True)


def _select(losses: Array, params: Array, scored: bool) -> tuple[Array, Array, Array]:
    """(flat best index, ω index, parameter index) of the smallest loss (the last point unscored)."""
    best = jnp.argmin(jnp.where(jnp.isnan(losses), jnp.inf, losses)) if scored else jnp.asarray(losses.size - 1)
    out_i, par_i = jnp.unravel_index(best, losses.shape)[-2:] if losses.ndim == 2 else (jnp.asarray(0), best)
    return best, out_i, par_i


def _eigen_losses(K, Y, a, V, filt, params, criterion, tau, loss):
    """(eigensystem, losses, fold losses) of the eigen route."""
    s, U = eigh(K)
    eig = SeparableEigh(clip_psd(s), U, a, V)
    fold_losses = None
    if criterion is None:
        losses = jnp.full(a.shape[:-1] + params.shape, jnp.nan, Y.dtype)
    elif isinstance(criterion, Holdout):
        losses = spectral_path(eig, Y, filt, params, K_eval=jnp.asarray(criterion.K_eval, Y.dtype),
                               Y_eval=criterion.Y_eval, w_eval=criterion.w_eval, tau=tau, output="loss", loss=loss)
    elif isinstance(criterion, LeaveOneOut):
        losses = loo_path(eig, Y, filt, params, tau, loss)
    elif isinstance(criterion, GCV):
        losses = gcv_path(eig, Y, filt, params, tau)
    else:
        fold_losses = kfold_path(K, Y, a, V, filt, params, criterion.masks, loss, sizes=criterion.sizes)
        losses = jnp.mean(fold_losses, axis=0)
    return eig, losses, fold_losses


def _problem(K, Y, a, groups, filt, params, criterion) -> Problem:
    """The static shape of the grid search, for the cost model."""
    n, d = Y.shape
    kinds: dict[type, str] = {Holdout: "holdout", KFold: "kfold", LeaveOneOut: "loo", GCV: "gcv"}
    kind = kinds.get(type(criterion), "none")
    m = criterion.K_eval.shape[0] if isinstance(criterion, Holdout) else 0
    folds, n_train = 1, 0
    if isinstance(criterion, KFold):
        folds, (n_train, m) = criterion.masks.shape[0], criterion.sizes
    order = direct_order(filt) if type(filt) in (Tikhonov, IteratedTikhonov) else 1
    return Problem(n=n, d=d, points=params.shape[0], criterion=kind, m=m, omegas=1 if a.ndim == 1 else a.shape[0],
                   folds=folds, n_train=n_train, distinct=int(groups[0].shape[0]), order=order,
                   iterative=bool(filt.iterative))


def _route(route: str, problem: Problem, K, filt, criterion, a, tau) -> str:
    """The route that serves the problem: ``route`` checked, or the cheapest when 'auto'."""
    direct_form = type(filt) in (Tikhonov, IteratedTikhonov)
    routes = servable_routes(problem, direct_form=direct_form, dense=True, one_output_matrix=a.ndim == 1)
    if route == "auto":  # auto never changes the answer: matrix-free only where it computes the eigen path's
        return choose_route(problem, str(K.dtype), tuple(r for r in routes if r != "matrix_free" or tau is not None))
    if route == "direct":
        direct_order(filt)  # names the filter it cannot serve
    if route == "matrix_free" and route not in routes:
        why = (f"an iterative filter (received {type(filt).__name__})" if not filt.iterative else
               f"Holdout or no criterion (received {type(criterion).__name__})" if problem.criterion not in
               ("holdout", "none") else "one output matrix (received a family of Ω output matrices)")
        raise ParameterError(f"route='matrix_free' runs a lax.scan of an iterative filter and needs {why}: use "
                             "route='eigen'.")
    return route


def _direct(K, Y, a, V, groups, filt, params, criterion, loss, tau) -> PathSelection:
    """The direct route's selection; a failed factor (NaN) falls back to the eigen route with a warning."""
    fold_losses, coef_at = None, None
    if criterion is None:
        losses, ok = jnp.full(a.shape[:-1] + params.shape, jnp.nan, Y.dtype), jnp.asarray(True)
    elif isinstance(criterion, KFold):
        rows = jax.vmap(lambda m: fold_rows(m, criterion.sizes, Y.dtype))(criterion.masks)
        fold_losses, ok = direct_kfold_losses(K, Y, a, V, filt, params, rows, loss, groups)
        losses = jnp.mean(fold_losses, axis=0)
    else:
        kind = "holdout" if isinstance(criterion, Holdout) else "loo" if isinstance(criterion, LeaveOneOut) else "gcv"
        ev = {"K_eval": jnp.asarray(criterion.K_eval, Y.dtype), "Y_eval": criterion.Y_eval,
              "w_eval": criterion.w_eval} if isinstance(criterion, Holdout) else {}
        res = direct_losses(K, Y, a, V, filt, params, kind, loss=loss, groups=groups, **ev)
        losses, ok, coef_at = res.losses, res.ok, res.coefficients
    _, out_i, par_i = _select(losses, params, criterion is not None)
    if coef_at is not None:  # the selected point's coefficients were kept
        coef = coef_at(out_i, par_i)
    else:  # k-fold (the folds' fits) or no criterion: one more factor on all the rows
        coef, ok_coef = direct_coefficients(K, Y, a if a.ndim == 1 else a[out_i], V, filt, params[par_i],
                                            groups if a.ndim == 1 else None)
        ok = ok & ok_coef

    def eigen_fallback():
        eig, losses, fold_losses = _eigen_losses(K, Y, a, V, filt, params, criterion, tau, loss)
        _, out_i, par_i = _select(losses, params, criterion is not None)
        a_best = a if a.ndim == 1 else a[out_i]
        coef = filtered_coefficients(filt, SeparableEigh(eig.s, eig.U, a_best, V), Y, params[par_i], tau)
        return losses, fold_losses, coef

    if not is_traced(ok):
        if not bool(ok):
            _warn_fallback(False)
            losses, fold_losses, coef = eigen_fallback()
    else:
        jax.debug.callback(_warn_fallback, ok)
        losses, fold_losses, coef = jax.lax.cond(ok, lambda: (losses, fold_losses, coef), eigen_fallback)
    best, out_i, par_i = _select(losses, params, criterion is not None)
    return PathSelection(losses, fold_losses, params, best, params[par_i], out_i, _edge(par_i, params.shape[0]),
                         None, coef, Y, None, filt)


def _warn_fallback(ok) -> None:
    if not np.all(np.asarray(ok)):  # (batched under vmap: one flag per member)
        warnings.warn("route='direct': a Cholesky factor of K + (nλ/a_j)I failed in this precision (the shifted Gram "
                      "is numerically indefinite); the eigen route served the path instead.", RouteFallbackWarning,
                      stacklevel=3)


@full_precision
def regularization_path(gram: Array | GramOperator, Y: Array, outputs: Array | tuple[Array, Array] | None,
                        filt: SpectralFilter, params: Array,
                        criterion: Criterion | None = None, *, tau: Array | None = None,
                        loss: Callable = mse_loss, route: str = "auto") -> PathSelection:
    """The whole path of ``filt`` over ``params``, scored by ``criterion``, with its selected point.

    Args:
      gram: (n, n) scalar Gram matrix K of the training inputs, or a
        :class:`~jaxmtl.operators.GramOperator` (matrix-free route: iterative filters only,
        criterion :class:`Holdout` with a Gram operator as ``K_eval``, or None).
      Y: (n, d) training targets.
      outputs: (d, d) output matrix A, or an eigen family ``(a, V)`` with ``a`` of shape (d,) or
        (Ω, d); None on the matrix-free route.
      filt: the spectral filter.
      params: (P,) λ values, or the steps 1..T (consecutive from 1) of an iterative filter.
      criterion: :class:`Holdout`, :class:`KFold`, :class:`LeaveOneOut`, :class:`GCV` or None.
      tau: step size of iterative filters (default 1/σ_max per output matrix; not with :class:`KFold`,
        whose folds each step by their own 1/σ_max).
      loss: ``loss(F, Y, w)`` of the hold-out, k-fold and leave-one-out criteria.
      route: 'auto' (default: the cheapest route for this grid on this device by the cost model of
        :mod:`jaxmtl.paths.routes`, among those that give the eigen path's answer), 'eigen' (one
        ``eigh``), 'direct' (a Cholesky factor per point: Tikhonov and iterated Tikhonov,
        :mod:`jaxmtl.paths.direct`) or 'matrix_free' (an iterative filter's scan of products with
        K ⊗ A; one output matrix, hold-out or no criterion). With the direct route the result
        carries the selected coefficients, not an eigensystem.

    Returns:
      :class:`PathSelection`.

    Raises:
      ShapeError, ParameterError: before tracing, naming the argument (shapes are static) — and
        a forced route that cannot serve the problem.

    Warns:
      RouteFallbackWarning: a direct-route Cholesky factor failed (NaN, float32); the eigen route
        served the path.
    """
    Y = jnp.asarray(Y)
    if Y.ndim != 2:
        raise ShapeError(f"Y must be an (n, d) array; received shape {Y.shape}.")
    params = jnp.asarray(params)
    if params.ndim != 1 or params.shape[0] < 1:
        raise ShapeError(f"params must be a non-empty 1-D array; received shape {params.shape}.")
    if criterion is not None and not isinstance(criterion, (Holdout, KFold, LeaveOneOut, GCV)):
        raise ParameterError(f"criterion must be Holdout, KFold, LeaveOneOut, GCV or None; received "
                             f"{type(criterion).__name__}.")
    if route not in ("auto", *ROUTES):
        raise ParameterError(f"route must be 'auto' or one of {ROUTES}; received {route!r}.")
    if isinstance(gram, GramOperator):
        if route in ("eigen", "direct"):
            raise ParameterError(f"route={route!r} needs the (n, n) Gram matrix; received a "
                                 f"{type(gram).__name__}: pass route='matrix_free' or 'auto'.")
        return _matrix_free(gram, Y, outputs, filt, params, criterion, tau, loss)
    K = jnp.asarray(gram, Y.dtype)
    n, d = Y.shape
    if K.shape != (n, n):
        raise ShapeError(f"gram must be the ({n}, {n}) Gram of the {n} training rows of Y, or a GramOperator; "
                         f"received shape {K.shape}.")
    if isinstance(criterion, KFold) and tau is not None:
        raise ParameterError("tau is not taken with KFold: each fold's path steps by 1/σ_max of its own Gram "
                             "(kfold_path); pass tau=None.")
    a, V = _output_eigh(outputs, d, Y.dtype)
    groups = _groups(outputs, a)
    chosen = _route(route, _problem(K, Y, a, groups, filt, params, criterion), K, filt, criterion, a, tau)
    if chosen == "direct":
        return _direct(K, Y, a, V, groups, filt, params, criterion, loss, tau)
    if chosen == "matrix_free":
        A = (V * a) @ V.T
        if isinstance(criterion, Holdout):
            criterion = Holdout(SeparableOperator(jnp.asarray(criterion.K_eval, Y.dtype), A), criterion.Y_eval,
                                criterion.w_eval)
        return _matrix_free(SeparableOperator(K, A), Y, None, filt, params, criterion, tau, loss)
    eig, losses, fold_losses = _eigen_losses(K, Y, a, V, filt, params, criterion, tau, loss)
    best, out_i, par_i = _select(losses, params, criterion is not None)
    return PathSelection(losses, fold_losses, params, best, params[par_i], out_i,
                         _edge(par_i, params.shape[0]), eig, None, Y, tau, filt)


def _matrix_free(op: GramOperator, Y, outputs, filt, params, criterion, tau, loss) -> PathSelection:
    if outputs is not None:
        raise ParameterError("outputs must be None with a GramOperator: the operator holds its output structure; "
                             f"received {type(outputs).__name__}.")
    if not isinstance(filt, IterativeFilter):
        raise ParameterError(f"a GramOperator runs an iterative filter (Landweber, NuMethod) as a scan; received "
                             f"{type(filt).__name__}: pass the (n, n) Gram matrix for the eigen route.")
    if tuple(op.shape) != tuple(Y.shape):
        raise ShapeError(f"Y must have the operator's shape {tuple(op.shape)}; received {Y.shape}.")
    if criterion is not None and not (isinstance(criterion, Holdout) and isinstance(criterion.K_eval, GramOperator)):
        raise ParameterError("the matrix-free route scores by Holdout with a GramOperator as K_eval (or no "
                             f"criterion); received {type(criterion).__name__}.")
    T = params.shape[0]
    if not is_traced(params) and not np.array_equal(np.asarray(params), np.arange(1, T + 1)):
        raise ParameterError("params of an iterative filter must be the steps 1..T; received "
                             f"{np.asarray(params)[:8].tolist()}.")
    if criterion is None:
        res = path_scan(op, Y, filt, T, tau=tau, loss=loss)
        losses = jnp.full((T,), jnp.nan, Y.dtype)
    else:
        res = path_scan(op, Y, filt, T, criterion.K_eval, criterion.Y_eval, criterion.w_eval, tau=tau, loss=loss)
        losses = res.losses
    par_i = jnp.maximum(res.best_step - 1, 0) if criterion is not None else jnp.asarray(T - 1)
    return PathSelection(losses, None, params, par_i, params[par_i], jnp.asarray(0), _edge(par_i, T), None,
                         res.best_coef if criterion is not None else res.coef, Y, res.tau, filt)
