r"""What the fixed-point and coordinate-descent solvers share: the result type, the objective and
its duality gap, the unregularised intercept, and input validation before tracing.

Primal and dual of the problem of [Din11] (2.2) with an optional intercept b ∈ ℝᵈ (one per output):

    P(c, b) = Σᵢⱼ f_ij((Γc)_ij + b_j) + ½⟨c, Γc⟩,
    D(c)    = −Σᵢⱼ f_ij*(−c_ij) − ½⟨c, Γc⟩      (subject to Σᵢ c_ij = 0 with an intercept),

and P − D = Σ f(Γc + b) + f*(−c) + ⟨c, Γc⟩ ≥ 0 (Fenchel–Young), 0 exactly at the optimum: the
gap bounds the primal suboptimality of the returned coefficients, which is the stopping rule.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import as_float_array, check_int, check_positive
from ..errors import LabelError, ParameterError, ShapeError
from ..operators import DenseOperator, GramOperator
from .losses import Loss, conjugate_values, get_loss, loss_values, resolvent
from ..products import full_precision

__all__ = ["SolverResult", "duality_gap", "primal_objective"]

Array = jax.Array
INTERCEPT_GRID = 32  # sub-intervals per round of the intercept search
INTERCEPT_ROUNDS = 6  # 32⁶ ≈ 1e9: the bracket shrinks to ~1e-9 of its width


class SolverResult(NamedTuple):
    """What a solver returns (leading axes added by paths: (..., n_C, n, d) and so on).

    Attributes:
      coef: (n, d) coefficients c; f(x) = Σᵢ Γ(x, xᵢ) cᵢ + intercept.
      intercept: (d,) unregularised bias b (zeros without one).
      n_iter: iterations (fixed point) or sweeps over all coordinates (coordinate descent).
      converged: whether the relative duality gap fell below ``tol`` within ``max_iter``.
      gap: duality gap P − D at the returned point (≥ 0; +inf when it cannot be certified).
      primal: primal objective P(c, b).
      residual: ‖c − S(αΓc − c + αb)‖∞ / max(‖c‖∞, tiny): the residual of (2.7) with α = 1/‖Γ‖.
    """

    coef: Array
    intercept: Array
    n_iter: Array
    converged: Array
    gap: Array
    primal: Array
    residual: Array


@full_precision
def primal_objective(loss: Loss, Y: Array, C: Array, eps: ArrayLike, c: Array, z: Array, b: ArrayLike) -> Array:
    """P(c, b) from z = Γc (no product computed)."""
    return jnp.sum(loss_values(loss, Y, z + b, C, eps)) + 0.5 * jnp.vdot(c, z)


@full_precision
def duality_gap(loss: Loss, Y: Array, C: Array, eps: ArrayLike, c: Array, z: Array,
                b: ArrayLike) -> tuple[Array, Array]:
    """(P − D, P) at coefficients c with z = Γc and intercept b."""
    p = primal_objective(loss, Y, C, eps, c, z, b)
    gap = p + jnp.sum(conjugate_values(loss, -c, Y, C, eps)) + 0.5 * jnp.vdot(c, z)
    return gap, p


def fixed_point_residual(loss: Loss, Y, C, eps, c, z, b, alpha) -> Array:
    """Relative residual of the optimality condition (2.7) (with the intercept inside f)."""
    r = resolvent(loss, alpha * (z + b) - c, Y, alpha, C, eps) - c
    scale = jnp.maximum(jnp.max(jnp.abs(c)), jnp.finfo(c.dtype).tiny)
    return jnp.max(jnp.abs(r)) / scale


def solve_intercept(loss: Loss, Y, C, eps, c, z, alpha) -> Array:
    """b (d,) with Σᵢ S(α(z_ij + b_j) − c_ij) = 0 for every output j.

    The sum φ(b) is non-increasing in b (S = −J_α, J_α monotone), so the root is bracketed by
    ±(max|z| + (max|c| + max C)/α + max|y| + ε + 2 log(n + 1) + 1), past which every entry
    of S sits at its limit (the log term covers the logistic tails). Each of
    ``INTERCEPT_ROUNDS`` rounds evaluates φ at ``INTERCEPT_GRID`` + 1 points of the bracket at
    once (one vectorised step instead of 5 sequential bisections) and keeps the sub-interval where
    φ changes sign; a last linear interpolation is exact where φ is linear on the final bracket
    (the piecewise-linear resolvents).
    """
    n, d = Y.shape
    B = (jnp.max(jnp.abs(z)) + (jnp.max(jnp.abs(c)) + jnp.max(C)) / alpha + jnp.max(jnp.abs(Y)) + eps
         + 2.0 * jnp.log(n + 1.0) + 1.0)
    t = jnp.linspace(0.0, 1.0, INTERCEPT_GRID + 1, dtype=Y.dtype)[:, None]

    def phi(b):  # (m, d) -> (m, d)
        return jnp.sum(resolvent(loss, alpha * (z[None] + b[:, None, :]) - c[None], Y, alpha, C, eps), axis=1)

    def round_(_, lohi):
        lo, hi = lohi
        grid = lo + (hi - lo) * t
        i = jnp.clip(jnp.sum(phi(grid) > 0, axis=0) - 1, 0, INTERCEPT_GRID - 1)
        cols = jnp.arange(d)
        return grid[i, cols], grid[i + 1, cols]

    lo, hi = jax.lax.fori_loop(0, INTERCEPT_ROUNDS, round_, (jnp.full((d,), -B), jnp.full((d,), B)))
    f = phi(jnp.stack([lo, hi]))
    drop = f[0] - f[1]
    frac = jnp.where(drop > 0, jnp.clip(f[0] / jnp.where(drop > 0, drop, 1.0), 0.0, 1.0), 0.5)
    return lo + frac * (hi - lo)


# ---- validation (plain Python, before tracing) ---------------------------------------------
def check_operator(op: Any) -> GramOperator:
    """A Gram operator of the library, or a square (n, n) array read as a scalar kernel matrix."""
    if isinstance(op, GramOperator):
        return op
    if hasattr(op, "__array__") or isinstance(op, (list, tuple)):
        K = as_float_array(op, "op", ndim=2)
        if K.shape[0] != K.shape[1]:
            raise ShapeError(f"op given as a kernel matrix must be square; received shape {K.shape}.")
        return DenseOperator(op if isinstance(op, jax.Array) else jnp.asarray(K), 1)  # no copy of a JAX array
    raise ParameterError(
        f"op must be a jaxmtl.operators.GramOperator or an (n, n) kernel matrix; received {type(op).__name__}.")


def check_targets(shape: tuple[int, int], Y: Any, loss: Loss) -> tuple[np.ndarray, bool]:
    """Targets as an (n, d) array of the operator's ``shape``; ±1 for the classification losses."""
    arr = as_float_array(Y, "Y", ndim=(1, 2))
    was_1d = arr.ndim == 1
    arr = arr[:, None] if was_1d else arr
    if arr.shape != tuple(shape):
        raise ShapeError(f"Y must have the operator's shape {tuple(shape)} (n, d); received {arr.shape}.")
    if loss.labels and not np.all(np.abs(arr) == 1.0):
        bad = np.unique(arr[np.abs(arr) != 1.0])[:5].tolist()
        raise LabelError(
            f"the {loss.name} loss needs labels coded as -1 / +1; Y holds {bad}. Code binary labels as "
            "±1 (or use jaxmtl.KernelMachineClassifier, which codes any labels).")
    return arr, was_1d


def check_weights(weights: Any, shape: tuple[int, int]) -> np.ndarray | None:
    """Optional non-negative per-sample (n,) or per-entry (n, d) weights multiplying C."""
    if weights is None:
        return None
    w = as_float_array(weights, "weights", ndim=(1, 2))
    w = w[:, None] if w.ndim == 1 else w
    if w.shape[0] != shape[0] or w.shape[1] not in (1, shape[1]):
        raise ShapeError(f"weights must have shape ({shape[0]},) or {shape}; received {w.shape}.")
    if np.any(w < 0):
        raise ParameterError("weights must be non-negative.")
    return np.broadcast_to(w, shape)


def check_solver_args(loss: Any, epsilon: Any, tol: Any, max_iter: Any, dtype) -> tuple[Loss, float, float, int]:
    """(loss, ε, tol, max_iter) checked; tol defaults to 1e-6 (float64) or 1e-4 (float32)."""
    loss = get_loss(loss)
    eps = check_positive(epsilon, "epsilon", allow_zero=loss.name != "huber")
    if tol is None:
        tol = 1e-6 if np.dtype(dtype) == np.float64 else 1e-4
    tol = check_positive(tol, "tol")
    return loss, eps, tol, check_int(max_iter, "max_iter", minimum=1)


def check_masks(masks: Any, n: int) -> np.ndarray:
    """(k, n) boolean training masks (all True, k = 1, when None)."""
    if masks is None:
        return np.ones((1, n), bool)
    M = np.asarray(masks)
    M = M[None, :] if M.ndim == 1 else M
    if M.dtype != bool or M.ndim != 2 or M.shape[1] != n:
        raise ParameterError(f"masks must be boolean of shape (k, {n}); received {M.dtype} of shape {M.shape}.")
    return M


def check_C(C: Any, name: str = "C") -> np.ndarray:
    """C > 0 as a scalar, or a 1-D grid of them (a path)."""
    arr = np.atleast_1d(as_float_array(C, name, ndim=(0, 1)))
    if np.any(arr <= 0):
        raise ParameterError(f"{name} must be positive (the weight of the loss); received {arr.tolist()}.")
    return arr


def in_given_order(r: SolverResult, order: np.ndarray) -> SolverResult:
    """A path's results (leading axes (k, n_C), solved for the Cs in ascending ``order``) put back
    in the order the Cs were given; an ascending grid as it is (indexing compiles a program per
    field).

    Example:
        >>> r = SolverResult(*(np.arange(3.0)[None] for _ in range(7)))
        >>> in_given_order(r, np.array([2, 0, 1])).coef.tolist()
        [[1.0, 2.0, 0.0]]
    """
    if np.array_equal(order, np.arange(len(order))):
        return r
    inverse = np.argsort(order)
    return jax.tree_util.tree_map(lambda x: x[:, inverse], r)
