r"""Matrix-free regularization paths: Landweber and the ν-method as one ``lax.scan``.

Any :class:`~jaxmtl.operators.GramOperator` that can multiply a coefficient matrix is enough:
the iterative filters' recurrences (``IterativeFilter.update``, [BRBV11] §3.3) run with
``matvec = Γ/n`` and ``rhs = Y/n``, so step t gives exactly C_t = g_t(Γ/n) Y / n — the same
numbers as the eigen path of a separable kernel, without an eigendecomposition.

Per step the path emits the validation loss of the caller's evaluation operator (or nothing)
while the scan carry keeps the best coefficients so far: memory is O(n·d) for any path length.

Step size: τ = 1/σ̂ with σ̂ a power-iteration upper estimate of σ_max(Γ/n) (unless given).

Divergence: a convergent iteration has ‖C_t‖ ≤ 2(t² + t)·τ·‖Y/n‖ (|g_t| ≤ 2t²τ for the
ν-method, tτ for Landweber). The scan flags a step whose coefficients are non-finite or exceed
ten times that bound, freezes the best coefficients, and :func:`iterative_path` raises
:class:`~jaxmtl.errors.DivergenceError` (``check=False`` returns the flag instead).

Batches: the path is a pure function of the operator's arrays, so ``jax.vmap`` over a batch
of operator parameters (ω, γ, a kernel width) or of fold masks runs all paths in lock step.
When the batched operand is only the coefficient matrix, JAX's batching rule for ``dot_general``
folds the batch into the free dimension: K @ [C₁ … C_B] is one matrix product.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.operators import SeparableOperator
    >>> from jaxmtl.filters import NuMethod
    >>> op = SeparableOperator(jnp.eye(5) + 0.1, jnp.eye(2))
    >>> res = iterative_path(op, jnp.ones((5, 2)), NuMethod(), 20, eval_op=op, Y_eval=jnp.ones((5, 2)))
    >>> res.losses.shape
    (20,)
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import check_bool, check_int, require_concrete
from .._jit import jit
from .._progress import StageReporter, report_step, reporting
from ..errors import DivergenceError, ParameterError
from ..filters.spectral import IterativeFilter, get_filter
from ..kernels.scalar import Kernel
from ..operators.base import GramOperator, max_eigenvalue
from .eigen import mse_loss
from ..products import full_precision

__all__ = [
    "PathResult",
    "iterative_path",
    "path_scan",
    "grid_path_losses",
    "landweber_path",
    "nu_method_path",
    "step_size",
]

Array = jax.Array


class PathResult(NamedTuple):
    """Result of a matrix-free path.

    Attributes:
      losses: (T,) validation loss per step (+inf after divergence; NaN without evaluation).
      best_step: index (1-based step) of the smallest loss (the last step without evaluation).
      best_coef: (n, d) coefficients at ``best_step``.
      coef: (n, d) coefficients at the last valid step.
      diverged: bool, True if a step was non-finite or grew beyond the convergence bound.
      tau: the step size used.
    """

    losses: Array
    best_step: Array
    best_coef: Array
    coef: Array
    diverged: Array
    tau: Array


@full_precision
def step_size(op: GramOperator, Y: Array, train: Array, valid: Array) -> Array:
    """τ = 1/σ̂ of the masked operator m∘Γ(m∘·)/Σm on rows padded with ``valid`` (n,) False, the
    Lanczos start zero on the padding rows.

    :func:`path_scan`'s own default draws the start over the padded shape; zeroing its padding gives
    the unpadded draw on the real rows (the PRNG's values do not depend on the total size), so τ — and
    the whole path — does not depend on the padding (row buckets, rows spread over processes).

    Args:
      op: Gram operator on (n, d) coefficients; Y: (n, d) outputs (their shape and dtype);
      train: (n,) boolean training mask (False on the padding); valid: (n,) boolean, the real rows.

    Example:
        >>> from jaxmtl.operators import SeparableOperator
        >>> K = jnp.diag(jnp.array([3.0, 1.0, 0.0])); pad = jnp.array([True, True, False])
        >>> 0.3 < float(step_size(SeparableOperator(K, jnp.eye(1)), jnp.ones((3, 1)), pad, pad)) < 0.7
        True
    """
    dtype = Y.dtype
    m = train.astype(dtype)[:, None]
    n = jnp.sum(m)
    start = jax.random.normal(jax.random.PRNGKey(0), (Y.size,), dtype).reshape(Y.shape) * valid[:, None]
    return 1.0 / max_eigenvalue(lambda C: m * op.mv(m * C) / n, Y.shape, dtype, start=start)


@partial(jit, static_argnames=("filt", "n_steps", "loss", "progress"))
@full_precision
def path_scan(op: GramOperator, Y: Array, filt: IterativeFilter, n_steps: int, eval_op: GramOperator | None = None,
              Y_eval: Array | None = None, w_eval: Array | None = None, tau: ArrayLike | None = None,
              mask: Array | None = None, loss: Callable = mse_loss, report: Array | None = None,
              progress: bool = False, stop: ArrayLike | None = None) -> PathResult:
    """The compiled path (no input checks; see :func:`iterative_path`).

    Args:
      op: training Gram operator on (n, d) coefficients.
      Y: (n, d) outputs.
      filt: iterative filter (static); n_steps: path length T (static).
      eval_op: operator mapping coefficients to predictions (m, d) on evaluation inputs.
      Y_eval: (m, d) targets; w_eval: (m,) row weights summing to 1 (default uniform).
      tau: step size (default 1/power-iteration estimate of σ_max(Γ/n)).
      mask: (n,) training mask; masked rows act as absent (k-fold), n = Σ mask.
      loss: ``loss(F, Y, w)``.
      report: optional (T,) booleans: evaluate only the steps marked True (the others skip the
        product with ``eval_op`` in a ``lax.cond`` on the unbatched step flag and report +inf).
      progress: static; True draws the steps done on the active stage of a ``verbose`` fit
        (:func:`jaxmtl._progress.report_step`, one host callback per 5 % of the path).
      stop: optional traced step ≤ n_steps after which the iterates stay as they are (the
        coefficients of step ``stop`` from a program compiled for ``n_steps``: one program serves
        every step count up to it).
    """
    dtype = Y.dtype
    if mask is None:
        m = jnp.ones((Y.shape[0], 1), dtype)
    else:
        m = mask.astype(dtype)[:, None]
    n = jnp.sum(m)
    rhs = Y * m / n

    def matvec(C):
        return m * op.mv(m * C) / n

    if tau is None:
        tau = 1.0 / max_eigenvalue(matvec, Y.shape, dtype)
    tau = jnp.asarray(tau, dtype)
    if Y_eval is not None and w_eval is None:
        w_eval = jnp.full((Y_eval.shape[0],), 1.0 / Y_eval.shape[0], dtype)
    bound0 = 2.0 * tau * jnp.linalg.norm(rhs)
    zero = jnp.zeros_like(Y)

    def evaluate(C):
        return loss(eval_op.mv(C), Y_eval, w_eval).astype(dtype)  # type: ignore[union-attr]  # called only with an eval_op

    def body(carry, x):
        i, flag = x
        if progress:
            report_step(i, n_steps)
        state, best, best_loss, best_i, last, bad = carry
        active = jnp.asarray(True) if stop is None else i <= stop
        new_state, C = filt.update(state, i, rhs, matvec, tau)
        norm = jnp.linalg.norm(C)
        ok = jnp.isfinite(norm) & (norm <= 10.0 * bound0 * (i * i + i) + jnp.finfo(dtype).tiny)
        bad = bad | (~ok & active)
        if eval_op is None:
            val = jnp.asarray(jnp.nan, dtype)
            better = ~bad & active
        else:
            val = evaluate(C) if report is None else jax.lax.cond(
                flag, evaluate, lambda C: jnp.asarray(jnp.inf, dtype), C)
            val = jnp.where(bad, jnp.inf, val)
            better = (~bad) & (val < best_loss) & active
        best = jnp.where(better, C, best)
        best_loss = jnp.where(better, val, best_loss)
        best_i = jnp.where(better, i, best_i)
        keep = bad | ~active
        last = jnp.where(keep, last, C)
        state = jax.tree_util.tree_map(lambda new, old: jnp.where(keep, old, new), new_state, state)
        return (state, best, best_loss, best_i, last, bad), val

    carry0 = (filt.init(rhs), zero, jnp.asarray(jnp.inf, dtype), jnp.asarray(0), zero,
              jnp.asarray(False))
    steps = jnp.arange(1, n_steps + 1)
    flags = jnp.ones((n_steps,), bool) if report is None else jnp.asarray(report, bool)
    (_, best, _, best_i, last, bad), losses = jax.lax.scan(body, carry0, (steps, flags))
    return PathResult(losses, best_i, best, last, bad, tau)


@full_precision
def iterative_path(op: GramOperator, Y: ArrayLike, filt: Any = "nu_method", n_steps: int = 150, *,
                   eval_op: GramOperator | None = None, Y_eval: ArrayLike | None = None,
                   w_eval: ArrayLike | None = None, tau: ArrayLike | None = None, mask: ArrayLike | None = None,
                   loss: Callable = mse_loss, check: bool = True, verbose: bool = False) -> PathResult:
    """Whole Landweber / ν-method path over any Gram operator in one compiled call.

    Args:
      op: a :class:`~jaxmtl.operators.GramOperator` (training inputs).
      Y: (n, d) outputs.
      filt: an iterative filter or its name ('nu_method', 'landweber').
      n_steps: path length T ≥ 1.
      eval_op, Y_eval, w_eval: evaluation map and targets for per-step validation losses.
      tau: step size; default 1/σ̂ (Lanczos estimate, :func:`~jaxmtl.operators.max_eigenvalue`).
      mask: (n,) boolean training mask (k-fold without reshaping).
      loss: ``loss(F, Y, w)``.
      check: raise :class:`DivergenceError` if the path diverged (else return the flag).
      verbose: print the path's time and a bar of the steps done, on stderr.

    Returns:
      :class:`PathResult`.
    """
    require_concrete(tau, "tau", "iterative_path reads its divergence flag on the host; inside jit, vmap or "
                     "grad call path_scan, which accepts a traced tau")
    filt = get_filter(filt)
    if not isinstance(filt, IterativeFilter):
        raise ParameterError(
            f"filt must be an iterative filter (Landweber, NuMethod); received {type(filt).__name__}."
        )
    n_steps = check_int(n_steps, "n_steps", minimum=1)
    Y = jnp.asarray(Y)
    if Y.ndim != 2 or tuple(Y.shape) != tuple(op.shape):
        raise ParameterError(f"Y must have the operator's shape {op.shape}; received {Y.shape}.")
    if (eval_op is None) != (Y_eval is None):
        raise ParameterError("eval_op and Y_eval must be given together.")
    with StageReporter("iterative_path", check_bool(verbose, "verbose")).stage(
            f"{n_steps} {type(filt).__name__} steps, {type(op).__name__} {op.shape[0]} × {op.shape[1]}"):
        res = path_scan(op, Y, filt, n_steps, eval_op, None if Y_eval is None else jnp.asarray(Y_eval),
                        w_eval, tau, mask, loss, progress=reporting())
        res.losses.block_until_ready()
    if check and bool(np.any(np.asarray(res.diverged))):
        raise_divergence(res.tau)
    return res


def raise_divergence(tau) -> None:
    """Raise the library's error for a diverged path with step size ``tau``."""
    t = np.asarray(tau).ravel()
    raise DivergenceError(
        f"the iterative path diverged with step size tau={float(t.max()):.3g}: the step must stay "
        "below 2/σ_max(Γ/n) (1/σ_max for the ν-method). Leave tau=None to estimate it."
    )


@full_precision
def landweber_path(op: GramOperator, Y: ArrayLike, n_steps: int = 1000, **kwargs: Any) -> PathResult:
    """:func:`iterative_path` with the Landweber filter."""
    return iterative_path(op, Y, "landweber", n_steps, **kwargs)


@full_precision
def nu_method_path(op: GramOperator, Y: ArrayLike, n_steps: int = 150, **kwargs: Any) -> PathResult:
    """:func:`iterative_path` with the ν-method (ν = 1)."""
    return iterative_path(op, Y, "nu_method", n_steps, **kwargs)


@partial(jit, static_argnames=("build", "filt", "n_steps", "loss", "progress"))
@full_precision
def grid_path_losses(build: Callable, kernels: Kernel, params: Array, data: Any, Y: Array, masks: Array,
                     filt: IterativeFilter, n_steps: int, loss: Callable = mse_loss, report: Array | None = None,
                     progress: bool = False, valid: Array | None = None) -> tuple[Array, Array]:
    """Held-out losses of matrix-free paths over kernels × folds × operator parameters.

    ``build(kernel, param, data)`` returns the training operator (all rows); each fold's mask
    trains on its rows and scores the others. Kernels are ``lax.map``-ed (one Gram in memory at
    a time), folds and parameters vmapped, steps scanned.

    Args:
      build: static function making the operator; kernels: stacked kernel pytree (W leading);
      params: (P,) operator parameters (ω, γ, …); data: pytree passed to ``build``;
      Y: (n, d); masks: (k, n) training masks; filt, n_steps: the iterative filter and T;
      report: optional (T,) booleans, the steps to evaluate (+inf elsewhere; see :func:`path_scan`).
      progress: static; True draws the steps done (see :func:`path_scan`).
      valid: optional (n,) booleans, False on rows that pad the data to a size bucket: they are
        neither trained on nor scored, and the step size is :func:`step_size`'s, so the losses
        equal those of the unpadded rows.

    Returns:
      (losses (W, k, P, T), diverged (W, k, P)).
    """

    def per_kernel(kern):
        def per_mask(m):
            train = m if valid is None else m & valid
            held = 1.0 - m.astype(Y.dtype) if valid is None else (valid & ~m).astype(Y.dtype)
            w = held / jnp.sum(held)

            def per_param(p):
                op = build(kern, p, data)
                tau = None if valid is None else step_size(op, Y, train, valid)
                res = path_scan(op, Y, filt, n_steps, op, Y, w, tau, train, loss, report, progress)
                return res.losses, res.diverged

            return jax.vmap(per_param)(params)

        return jax.vmap(per_mask)(masks)

    return jax.lax.map(per_kernel, kernels)
