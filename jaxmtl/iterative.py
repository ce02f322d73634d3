r"""Iterated Tikhonov with one reused Cholesky, and batched common-similarity paths.

This module completes :mod:`jaxmtl.matrix_free` (the general Landweber / ν-method path over any
:class:`~jaxmtl.operators.GramOperator`, re-exported here as :func:`iterative_path`,
:func:`landweber_path`, :func:`nu_method_path`) with two specialised paths.

Iterated Tikhonov (seed 004 §5.4)
---------------------------------
With the library's normalisation (filters act on Γ/n, coefficients C = g(Γ/n) Y / n) the
iterated Tikhonov filter of order ν is the recurrence

    (Γ + nλ I) Cⁱ = Y + nλ Cⁱ⁻¹,     C⁰ = 0,     i = 1..ν,

whose i-th iterate is exactly ``IteratedTikhonov(order=i)`` at λ. :func:`iterated_tikhonov_path`
factors Γ + nλI once (``cho_factor``) and reuses the factor for every order in a ``lax.scan``;
a batch of λ is vmapped (one factor per λ). The operator is made dense (nd × nd), so this is for
problems where that fits; for separable kernels the eigen path is cheaper still.

Batched common-similarity paths
-------------------------------
For the family A_ω = ω 11ᵀ + (1 − ω) I (seed 000 eq. 18) the coefficients of every ω are kept
side by side in one (n, Ω, d) array, and each step does ONE product
``K @ C.reshape(n, Ω·d)`` followed by the O(nΩd) map Z ↦ Z A_ω = ω (Z1)1ᵀ + (1 − ω) Z. This
is what ``jax.vmap`` over ω of a separable path also produces — JAX's batching rule for
``dot_general`` folds the batch axis of the unbatched-LHS product K @ C_ω into its free dimension,
so K @ [C₁ … C_Ω] is a single GEMM — but laid out without the per-step transposes and batched
small products that the generic vmap leaves behind. Products with many columns run near the
machine's GEMM peak, so an Ω-batch costs far less than Ω paths.

Step sizes are exact per ω: σ_max(K ⊗ A_ω / n) = λ_max(K)·(1 + (d − 1)ω)/n, with λ_max(K) from
one Lanczos estimate of σ_max(K) shared by all ω.

Validation on the training rows (k-fold by masks) shares the training product: the carry holds
Z = K Cᵗ, which gives both the held-out predictions of step t and the product the update of
step t + 1 needs — one product with K per step. ``mask`` of shape (k, n) vmaps the folds, and
the fold axis is folded into the same GEMM too.

Example:
    >>> import jax.numpy as jnp
    >>> K = jnp.eye(6) + 0.1
    >>> res = batched_nu_path_over_omegas(K, jnp.ones((6, 2)), jnp.array([0.0, 0.5, 1.0]), 10)
    >>> res.coef.shape, res.best_step.shape
    ((3, 6, 2), (3,))
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from ._checks import as_float_array, check_int, check_unit_interval
from .errors import DivergenceError, ParameterError, ShapeError
from .filters import IterativeFilter, NuMethod, get_filter
from .matrix_free import PathResult, iterative_path, landweber_path, nu_method_path, path_scan
from .operators import DenseOperator, GramOperator, SeparableOperator, max_eigenvalue
from .paths import mse_loss

__all__ = [
    "PathResult",
    "iterative_path",
    "landweber_path",
    "nu_method_path",
    "path_scan",
    "EvalMap",
    "eval_map",
    "path_predictions",
    "TikhonovPathResult",
    "iterated_tikhonov_path",
    "iterated_tikhonov_scan",
    "omega_path_scan",
    "common_similarity_path",
    "batched_nu_path_over_omegas",
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

    def mv(self, C):
        return self.fn(C, *self.arrays)


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


@partial(jax.jit, static_argnames=("filt", "n_steps"))
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


def path_predictions(op: GramOperator, Y, filt: Any = "nu_method", n_steps: int = 150, *, eval_op,
                     tau=None) -> Array:
    """Predictions of every step, (T, m, d), in one ``lax.scan`` (memory O(T·m·d)).

    For long paths prefer :func:`iterative_path`, which emits losses and keeps the best
    coefficients in O(n·d). Coefficients that turn non-finite or outgrow the convergent bound
    2(t² + t)·τ·‖Y/n‖ raise :class:`~jaxmtl.errors.DivergenceError`.

    Args:
      op: training :class:`~jaxmtl.operators.GramOperator`; Y: (n, d); filt: iterative filter.
      n_steps: T; eval_op: evaluation operator or :func:`eval_map`; tau: step (default 1/σ̂).
    """
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


@partial(jax.jit, static_argnames=("order", "loss"))
def iterated_tikhonov_scan(G: Array, Y: Array, lam, order: int, eval_op=None, Y_eval=None,
                           w_eval=None, loss: Callable = mse_loss) -> TikhonovPathResult:
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


def iterated_tikhonov_path(op, Y, lam, order: int = 5, *, eval_op: GramOperator | None = None,
                           Y_eval=None, w_eval=None, loss: Callable = mse_loss,
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


# ----------------------------------------------------------------- batched common-similarity path
def _apply_common_similarity(Z: Array, om: Array) -> Array:
    """Z A_ω for every ω: Z (r, Ω, d), om (1, Ω, 1) → ω (Z1)1ᵀ + (1 − ω) Z."""
    return om * jnp.sum(Z, axis=2, keepdims=True) + (1.0 - om) * Z


@partial(jax.jit, static_argnames=("filt", "n_steps", "loss"))
def omega_path_scan(K: Array, Y: Array, omegas: Array, filt: IterativeFilter, n_steps: int,
                    K_eval=None, Y_eval=None, w_eval=None, tau=None, mask=None,
                    loss: Callable = mse_loss) -> PathResult:
    """Compiled iterative paths of K ⊗ A_ω for every ω of a grid (no input checks).

    Args:
      K: (n, n) scalar Gram; Y: (n, d); omegas: (Ω,) in [0, 1]; filt, n_steps: static.
      K_eval: (m, n) cross-Gram for evaluation on other inputs; None with ``Y_eval`` given
        evaluates on the training rows (Y_eval (n, d), w_eval (n,) e.g. held-out weights) from
        the training product itself.
      tau: scalar or (Ω,) step sizes (default 1/σ_max per ω from one Lanczos estimate of σ_max(K)).
      mask: (n,) training mask; masked rows act as absent and n = Σ mask.

    Returns:
      :class:`~jaxmtl.matrix_free.PathResult` with a leading Ω axis on every field
      (losses (Ω, T)).
    """
    n, d = Y.shape
    W = omegas.shape[0]
    dtype = Y.dtype
    m1 = jnp.ones((n,), dtype) if mask is None else mask.astype(dtype)
    m3 = m1[:, None, None]
    nn = jnp.sum(m1)
    om = omegas.astype(dtype)[None, :, None]
    rhs = jnp.broadcast_to((Y * m1[:, None] / nn)[:, None, :], (n, W, d))
    if tau is None:
        lam_k = max_eigenvalue(lambda v: m1[:, None] * (K @ (m1[:, None] * v)), (n, 1), dtype)
        tau = nn / (lam_k * (1.0 + (d - 1) * omegas.astype(dtype)))
    tau = jnp.broadcast_to(jnp.asarray(tau, dtype), (W,))
    tau3 = tau[None, :, None]
    on_rows = K_eval is None and Y_eval is not None
    if Y_eval is not None and w_eval is None:
        w_eval = jnp.full((Y_eval.shape[0],), 1.0 / Y_eval.shape[0], dtype)
    bound0 = 2.0 * tau * jnp.linalg.norm(Y * m1[:, None] / nn)  # (Ω,)
    tiny = jnp.finfo(dtype).tiny

    def product(C):  # K (m ∘ C) as ONE GEMM with Ω·d columns → (n, Ω, d), before A_ω
        return (K @ (m3 * C).reshape(n, W * d)).reshape(n, W, d)

    def body(carry, i):
        state, Z, best, best_loss, best_i, last, bad = carry
        GC = m3 * _apply_common_similarity(Z, om) / nn  # (Γ_ω/n) Cⁱ⁻¹ from the carried product
        new_state, C = filt.update(state, i, rhs, lambda _: GC, tau3)
        Z_new = product(C)
        norm = jnp.sqrt(jnp.sum(C * C, axis=(0, 2)))  # (Ω,)
        ok = jnp.isfinite(norm) & (norm <= 10.0 * bound0 * (i * i + i) + tiny)
        bad = bad | ~ok
        if Y_eval is None:
            val = jnp.full((W,), jnp.nan, dtype)
            better = ~bad
        else:
            if on_rows:
                F = _apply_common_similarity(Z_new, om)
            else:
                F = _apply_common_similarity(
                    (K_eval @ C.reshape(n, W * d)).reshape(K_eval.shape[0], W, d), om)
            val = jax.vmap(lambda f: loss(f, Y_eval, w_eval), in_axes=1)(F)
            val = jnp.where(bad | ~jnp.isfinite(val), jnp.inf, val)
            better = (~bad) & (val < best_loss)
        b3 = better[None, :, None]
        keep3 = bad[None, :, None]
        best = jnp.where(b3, C, best)
        best_loss = jnp.where(better, val, best_loss)
        best_i = jnp.where(better, i, best_i)
        last = jnp.where(keep3, last, C)
        state = jax.tree_util.tree_map(lambda new, old: jnp.where(keep3, old, new), new_state, state)
        Z = jnp.where(keep3, Z, Z_new)
        return (state, Z, best, best_loss, best_i, last, bad), val

    zero = jnp.zeros((n, W, d), dtype)
    steps = jnp.arange(1, n_steps + 1)
    carry0 = (filt.init(rhs), zero, zero, jnp.full((W,), jnp.inf, dtype), jnp.zeros((W,), steps.dtype),
              zero, jnp.zeros((W,), bool))
    (_, _, best, _, best_i, last, bad), losses = jax.lax.scan(body, carry0, steps)
    to_batch = lambda A: jnp.moveaxis(A, 1, 0)  # (n, Ω, d) → (Ω, n, d)
    return PathResult(losses.T, best_i, to_batch(best), to_batch(last), bad, tau)


def common_similarity_path(K, Y, omegas, filt: Any = "nu_method", n_steps: int = 150, *,
                           K_eval=None, Y_eval=None, w_eval=None, tau=None, mask=None,
                           loss: Callable = mse_loss, check: bool = True) -> PathResult:
    """Iterative paths of K ⊗ A_ω for a grid of ω in one compiled call, one GEMM per step.

    Args:
      K: (n, n) scalar Gram matrix (symmetric PSD).
      Y: (n, d) outputs.
      omegas: (Ω,) values in [0, 1] (0 independent outputs, 1 one shared function).
      filt: 'nu_method' (default), 'landweber' or an :class:`~jaxmtl.filters.IterativeFilter`.
      n_steps: path length T.
      K_eval: (m, n) cross-Gram K(x_eval, x_train); with Y_eval (m, d) the loss per step and ω.
      Y_eval: evaluation targets; without K_eval they are the (n, d) training rows, weighted by
        w_eval (use zero weight on training rows for hold-out / k-fold).
      w_eval: row weights summing to 1 (default uniform), or (k, ·) one row per mask.
      tau: step size, scalar or (Ω,) (default 1/σ_max(K ⊗ A_ω / n) per ω).
      mask: (n,) or (k, n) boolean training masks; (k, n) vmaps the folds (one GEMM with k·Ω·d
        columns per step).
      loss: ``loss(F, Y, w)``.
      check: raise :class:`~jaxmtl.errors.DivergenceError` if any path diverged.

    Returns:
      :class:`~jaxmtl.matrix_free.PathResult` with leading axes (k,) Ω on every field.
    """
    filt = get_filter(filt)
    if not isinstance(filt, IterativeFilter):
        raise ParameterError(
            f"filt must be an iterative filter (Landweber, NuMethod); received {type(filt).__name__}."
        )
    n_steps = check_int(n_steps, "n_steps", minimum=1)
    K = as_float_array(K, "K", ndim=2)
    Y = as_float_array(Y, "Y", ndim=2)
    n, d = Y.shape
    if K.shape != (n, n):
        raise ShapeError(f"K must be ({n}, {n}) for Y of shape {Y.shape}; received {K.shape}.")
    om = check_unit_interval(omegas, "omegas")
    dtype = jnp.result_type(K.dtype, Y.dtype)
    Kj, Yj = jnp.asarray(K, dtype), jnp.asarray(Y, dtype)
    Ke = Ye = We = None
    if Y_eval is not None:
        Ye = jnp.asarray(as_float_array(Y_eval, "Y_eval", ndim=2), dtype)
        if Ye.shape[1] != d:
            raise ShapeError(f"Y_eval must have {d} columns; received shape {Ye.shape}.")
        if K_eval is not None:
            Ke = jnp.asarray(as_float_array(K_eval, "K_eval", ndim=2), dtype)
            if Ke.shape != (Ye.shape[0], n):
                raise ShapeError(f"K_eval must be ({Ye.shape[0]}, {n}); received {Ke.shape}.")
        elif Ye.shape[0] != n:
            raise ShapeError(f"without K_eval, Y_eval holds the {n} training rows; received {Ye.shape}.")
        if w_eval is not None:
            We = jnp.asarray(as_float_array(w_eval, "w_eval", ndim=(1, 2)), dtype)
            if We.shape[-1] != Ye.shape[0]:
                raise ShapeError(f"w_eval must have {Ye.shape[0]} entries per row; received {We.shape}.")
    elif K_eval is not None:
        raise ParameterError("K_eval needs Y_eval.")
    tau_j = None
    if tau is not None:
        t = as_float_array(tau, "tau", ndim=(0, 1))
        if np.any(t <= 0) or (t.ndim == 1 and t.shape[0] != om.shape[0]):
            raise ParameterError(f"tau must be positive, a scalar or one per omega; received {t.tolist()}.")
        tau_j = jnp.asarray(t, dtype)
    omj = jnp.asarray(om, dtype)
    run = partial(omega_path_scan, Kj, Yj, omj, filt, n_steps, Ke, Ye, tau=tau_j, loss=loss)
    if mask is None:
        if We is not None and We.ndim != 1:
            raise ShapeError("w_eval must be 1-D without masks.")
        res = run(w_eval=We)
    else:
        mk = np.asarray(mask)
        if mk.dtype != bool or mk.ndim not in (1, 2) or mk.shape[-1] != n:
            raise ShapeError(f"mask must be boolean of shape ({n},) or (k, {n}); received {mk.dtype} {mk.shape}.")
        if not mk.reshape(-1, n).any(axis=1).all():
            raise ParameterError("every mask needs at least one training (True) row.")
        mj = jnp.asarray(mk)
        if mk.ndim == 1:
            res = run(w_eval=We, mask=mj)
        elif We is not None and We.ndim == 2:
            res = jax.vmap(lambda m, w: run(w_eval=w, mask=m))(mj, We)
        else:
            res = jax.vmap(lambda m: run(w_eval=We, mask=m))(mj)
    if check and bool(np.any(np.asarray(res.diverged))):
        _raise_omega_divergence(res, Kj, om, d, n)
    return res


def _raise_omega_divergence(res: PathResult, K, omegas, d: int, n: int) -> None:
    """Raise DivergenceError naming the offending step and the stable bound (outside jit)."""
    bad = np.asarray(res.diverged)
    tau = np.broadcast_to(np.asarray(res.tau), bad.shape)
    lam_k = float(max_eigenvalue(lambda v: K @ v, (K.shape[0], 1), K.dtype))
    smax = lam_k * (1.0 + (d - 1) * np.asarray(omegas)) / n  # σ_max(K ⊗ A_ω / n), per ω
    smax = np.broadcast_to(smax, bad.shape)
    j = np.flatnonzero(bad.ravel())[0]
    raise DivergenceError(
        f"{int(bad.sum())} of {bad.size} paths diverged: step size tau={float(tau.ravel()[j]):.4g} exceeds "
        f"2/σ_max≈{2.0 / float(smax.ravel()[j]):.4g} (Landweber needs tau < 2/σ_max(Γ/n), the ν-method "
        "tau ≤ 1/σ_max). Leave tau=None to use 1/σ_max per ω, or pass check=False to get the flag "
        "(PathResult.diverged) instead."
    )


def batched_nu_path_over_omegas(K, Y, omegas, n_steps: int = 150, nu: float = 1.0, **kwargs) -> PathResult:
    """:func:`common_similarity_path` with the ν-method (qualification ``nu``).

    Example:
        >>> import jax.numpy as jnp
        >>> r = batched_nu_path_over_omegas(jnp.eye(3), jnp.ones((3, 2)), [0.0, 1.0], 5)
        >>> r.diverged.shape
        (2,)
    """
    return common_similarity_path(K, Y, omegas, NuMethod(nu=nu), n_steps, **kwargs)
