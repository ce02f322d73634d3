r"""Iterated Tikhonov with one reused Cholesky, and predictions along an iterative path.

This module completes :mod:`jaxmtl.paths.scan` (the general Landweber / ν-method path over any
:class:`~jaxmtl.operators.GramOperator`, re-exported here as :func:`iterative_path`,
:func:`landweber_path`, :func:`nu_method_path`) with the iterated Tikhonov path and
:func:`path_predictions` (the predictions of every step of an iterative path on other points).

Iterated Tikhonov ([LRODV08] §5.4)
---------------------------------
With the library's normalisation (filters act on Γ/n, coefficients C = g(Γ/n) Y / n) the
iterated Tikhonov filter of order ν is the recurrence

    (Γ + nλ I) Cⁱ = Y + nλ Cⁱ⁻¹,     C⁰ = 0,     i = 1..ν,

whose i-th iterate is exactly ``IteratedTikhonov(order=i)`` at λ. :func:`iterated_tikhonov_path`
factors Γ + nλI once (``cho_factor``) and reuses the factor for every order in a ``lax.scan``;
a batch of λ is vmapped (one factor per λ). The operator is made dense (nd × nd), so this is for
problems where that fits; for separable kernels the eigen path is cheaper still.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
import jax.scipy.linalg as jsl
import numpy as np

from .._checks import as_float_array, check_int, require_concrete
from .._jit import jit
from ..errors import DivergenceError, ParameterError, ShapeError
from ..filters.spectral import IterativeFilter, get_filter
from ..operators.base import DenseOperator, GramOperator, SeparableOperator, max_eigenvalue
from .eigen import mse_loss
from ..products import full_precision

__all__ = [
    "EvalMap",
    "eval_map",
    "path_predictions",
    "TikhonovPathResult",
    "iterated_tikhonov_path",
    "iterated_tikhonov_scan",
]

Array = jax.Array


# ------------------------------------------------------------------------- evaluation maps
class EvalMap(eqx.Module):
    """C ↦ fn(C, *arrays) as an evaluation operator for the paths' ``eval_op``.

    ``fn`` is static (hashed by identity: define it once, e.g. at module level), the arrays are
    pytree leaves, so new data does not recompile. Build with :func:`eval_map`.
    """

    fn: Callable = eqx.field(static=True)
    arrays: tuple

    @full_precision
    def mv(self, C: Array) -> Array:
        return self.fn(C, *self.arrays)


@full_precision
def eval_map(fn: Callable, *arrays) -> EvalMap:
    """An evaluation map for :func:`iterative_path` from a function of the coefficients.

    Example:
        >>> import jax.numpy as jnp
        >>> predict = eval_map(lambda C, Kv, A: Kv @ C @ A, jnp.ones((2, 3)), jnp.eye(2))
        >>> predict.mv(jnp.ones((3, 2))).shape
        (2, 2)
    """
    if not callable(fn):
        raise ParameterError(f"fn must be callable; received {fn!r}.")
    return EvalMap(fn, tuple(jnp.asarray(a) for a in arrays))


@partial(jit, static_argnames=("filt", "n_steps"))
def _prediction_scan(op, Y, filt, n_steps, eval_op, tau):
    n = Y.shape[0]
    rhs = Y / n
    matvec = lambda C: op.mv(C) / n
    if tau is None:
        tau = 1.0 / max_eigenvalue(matvec, Y.shape, Y.dtype)
    tau = jnp.asarray(tau, Y.dtype)

    bound0 = 2.0 * tau * jnp.linalg.norm(rhs)  # ‖C_t‖ ≤ 2(t² + t)τ‖Y/n‖ on a convergent path

    def body(carry, i):
        state, bad = carry
        state, C = filt.update(state, i, rhs, matvec, tau)
        norm = jnp.linalg.norm(C)
        bad = bad | ~(jnp.isfinite(norm) & (norm <= 10.0 * bound0 * (i * i + i) + jnp.finfo(Y.dtype).tiny))
        return (state, bad), eval_op.mv(C)

    (_, bad), F = jax.lax.scan(body, (filt.init(rhs), jnp.asarray(False)), jnp.arange(1, n_steps + 1))
    return F, tau, bad


@full_precision
def path_predictions(op: GramOperator, Y: ArrayLike, filt: Any = "nu_method", n_steps: int = 150, *,
                     eval_op: GramOperator | EvalMap, tau: ArrayLike | None = None) -> Array:
    """Predictions of every step, (T, m, d), in one ``lax.scan`` (memory O(T·m·d)).

    For long paths prefer :func:`iterative_path`, which emits losses and keeps the best
    coefficients in O(n·d). Coefficients that turn non-finite or outgrow the convergent bound
    2(t² + t)·τ·‖Y/n‖ raise :class:`~jaxmtl.errors.DivergenceError`.

    Args:
      op: training :class:`~jaxmtl.operators.GramOperator`; Y: (n, d); filt: iterative filter.
      n_steps: T; eval_op: evaluation operator or :func:`eval_map`; tau: step (default 1/σ̂).
    """
    require_concrete(tau, "tau", "path_predictions checks the path for divergence on the host; inside jit, "
                     "vmap or grad call path_scan, which accepts a traced tau")
    filt = get_filter(filt)
    if not isinstance(filt, IterativeFilter):
        raise ParameterError(
            f"filt must be an iterative filter (Landweber, NuMethod); received {type(filt).__name__}."
        )
    n_steps = check_int(n_steps, "n_steps", minimum=1)
    Y = jnp.asarray(as_float_array(Y, "Y", ndim=2))
    if tuple(Y.shape) != tuple(op.shape):
        raise ShapeError(f"Y must have the operator's shape {tuple(op.shape)}; received {Y.shape}.")
    F, tau, bad = _prediction_scan(op, Y, filt, n_steps, eval_op, tau)
    if bool(bad) or not bool(jnp.all(jnp.isfinite(F))):
        raise DivergenceError(
            f"the path diverged (growing or non-finite coefficients) with step size tau={float(tau):.4g}: the step must "
            "stay below 2/σ_max(Γ/n) (1/σ_max for the ν-method). Leave tau=None to estimate it."
        )
    return F


# ----------------------------------------------------------------------------- iterated Tikhonov
class TikhonovPathResult(NamedTuple):
    """Result of :func:`iterated_tikhonov_path` (a leading λ axis when λ is batched).

    Attributes:
      losses: (ν,) validation loss after each order 1..ν (NaN without evaluation data).
      best_order: the order (1-based) with the smallest loss (ν without evaluation data).
      best_coef: (n, d) coefficients at ``best_order``.
      coef: (n, d) coefficients of order ν.
      failed: bool, True when the Cholesky factor or the iterates were not finite.
      lam: the λ used.
    """

    losses: Array
    best_order: Array
    best_coef: Array
    coef: Array
    failed: Array
    lam: Array


def _dense_gram(op) -> Array:
    """The (nd, nd) matrix of an operator (row-major vec), cheaply for the known classes."""
    if isinstance(op, DenseOperator):
        return op.G
    if isinstance(op, SeparableOperator):
        return jnp.kron(op.K, op.A)
    return op.as_matrix()


@partial(jit, static_argnames=("order", "loss"))
@full_precision
def iterated_tikhonov_scan(G: Array, Y: Array, lam: ArrayLike, order: int, eval_op: GramOperator | None = None,
                           Y_eval: Array | None = None, w_eval: Array | None = None,
                           loss: Callable = mse_loss) -> TikhonovPathResult:
    """Compiled iterated Tikhonov over a dense (nd, nd) Gram G (no input checks).

    One ``cho_factor(G + nλI)`` then ``order`` solves ``(G + nλI) Cⁱ = Y + nλCⁱ⁻¹`` in a
    ``lax.scan``; emits the loss of ``eval_op.mv(Cⁱ)`` against ``Y_eval`` per order.
    """
    n, d = Y.shape
    dtype = Y.dtype
    nlam = jnp.asarray(n * lam, dtype)
    factor = jsl.cho_factor(G + nlam * jnp.eye(n * d, dtype=dtype), lower=True)
    y = Y.reshape(-1)
    if Y_eval is not None and w_eval is None:
        w_eval = jnp.full((Y_eval.shape[0],), 1.0 / Y_eval.shape[0], dtype)

    def body(carry, i):
        c, best, best_loss, best_i = carry
        c = jsl.cho_solve(factor, y + nlam * c)
        C = c.reshape(n, d)
        if eval_op is None:
            val = jnp.asarray(jnp.nan, dtype)
            better = jnp.asarray(True)
        else:
            val = loss(eval_op.mv(C), Y_eval, w_eval)
            val = jnp.where(jnp.isfinite(val), val, jnp.inf)
            better = val < best_loss
        best = jnp.where(better, C, best)
        return (c, best, jnp.where(better, val, best_loss), jnp.where(better, i, best_i)), val

    zero = jnp.zeros_like(y)
    orders = jnp.arange(1, order + 1)
    carry0 = (zero, jnp.zeros_like(Y), jnp.asarray(jnp.inf, dtype), jnp.zeros((), orders.dtype))
    (c, best, _, best_i), losses = jax.lax.scan(body, carry0, orders)
    failed = ~(jnp.all(jnp.isfinite(c)) & jnp.all(jnp.isfinite(factor[0])))
    return TikhonovPathResult(losses, best_i, best, c.reshape(n, d), failed, jnp.asarray(lam, dtype))


@full_precision
def iterated_tikhonov_path(op: GramOperator | ArrayLike, Y: ArrayLike, lam: ArrayLike, order: int = 5, *,
                           eval_op: GramOperator | None = None, Y_eval: ArrayLike | None = None,
                           w_eval: ArrayLike | None = None, loss: Callable = mse_loss,
                           check: bool = True) -> TikhonovPathResult:
    """Iterated Tikhonov orders 1..ν at one λ (or a batch of λ) with one Cholesky per λ.

    Order i equals the :class:`~jaxmtl.filters.IteratedTikhonov` filter (order i) at λ applied
    on the eigen path: C = g_λ(Γ/n) Y / n.

    Args:
      op: a :class:`~jaxmtl.operators.GramOperator` on (n, d) coefficients, or an (nd, nd)
        matrix (row-major vec, as :class:`~jaxmtl.operators.DenseOperator`). It is made dense.
      Y: (n, d) outputs.
      lam: λ > 0, a scalar or a 1-D array (vmapped: one factorisation per λ).
      order: the largest order ν ≥ 1.
      eval_op: operator mapping coefficients to evaluation predictions (e.g. a
        ``SeparableOperator(K_val_train, A)``); Y_eval: (m, d) targets; w_eval: (m,) weights.
      loss: ``loss(F, Y, w)``.
      check: raise :class:`~jaxmtl.errors.DivergenceError` when the factorisation fails.

    Returns:
      :class:`TikhonovPathResult` (fields with a leading λ axis when ``lam`` is 1-D).

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxmtl.operators import SeparableOperator
        >>> op = SeparableOperator(jnp.eye(4) + 0.1, jnp.eye(2))
        >>> iterated_tikhonov_path(op, jnp.ones((4, 2)), 0.1, 3).coef.shape
        (4, 2)
    """
    require_concrete(lam, "lam", "iterated_tikhonov_path checks lam and the factorisation on the host; inside "
                     "jit, vmap or grad call iterated_tikhonov_scan, which accepts a traced lam")
    order = check_int(order, "order", minimum=1)
    if isinstance(op, GramOperator):
        shape = tuple(op.shape)
        G = _dense_gram(op)
    else:
        G = jnp.asarray(as_float_array(op, "op", ndim=2))
        shape = None
    Y = jnp.asarray(as_float_array(Y, "Y", ndim=2))
    n, d = Y.shape
    if shape is not None and shape != (n, d):
        raise ShapeError(f"Y must have the operator's shape {shape}; received {Y.shape}.")
    if G.shape != (n * d, n * d):
        raise ShapeError(f"the Gram matrix must be ({n * d}, {n * d}) for Y of shape {Y.shape}; "
                         f"received {G.shape}.")
    lam_arr = as_float_array(lam, "lam", ndim=(0, 1))
    if np.any(lam_arr <= 0):
        raise ParameterError(f"lam must be positive; received {lam_arr.tolist()}.")
    if (eval_op is None) != (Y_eval is None):
        raise ParameterError("eval_op and Y_eval must be given together.")
    Ye = None if Y_eval is None else jnp.asarray(as_float_array(Y_eval, "Y_eval", ndim=2), Y.dtype)
    G = G.astype(Y.dtype)
    lam_j = jnp.asarray(lam_arr, Y.dtype)
    if lam_arr.ndim == 0:
        res = iterated_tikhonov_scan(G, Y, lam_j, order, eval_op, Ye, w_eval, loss)
    else:
        res = jax.vmap(lambda lm: iterated_tikhonov_scan(G, Y, lm, order, eval_op, Ye, w_eval, loss))(lam_j)
    if check and bool(np.any(np.asarray(res.failed))):
        bad = np.atleast_1d(lam_arr)[np.atleast_1d(np.asarray(res.failed))]
        raise DivergenceError(
            f"iterated Tikhonov failed for lam={bad.tolist()[:5]}: the Cholesky factor of Γ + nλI is "
            "not finite (Γ not positive semidefinite, or λ too small for the dtype); use a larger "
            "lam or float64."
        )
    return res
