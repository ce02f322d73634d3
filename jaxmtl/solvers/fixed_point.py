r"""The fixed-point (non-linear Jacobi) solver of [Din11] §2.2 for any convex loss and any Gram operator.

Iterates (2.10), c ← −J_α(αΓc − c) = S(αΓc − c), in three steps: z = Γc (the only product with
the kernel: ``op.mv``, so K ⊗ A, task-indexed, sums of separable and div/curl-free operators work
unchanged), v = αz − c, c = S(v) (:mod:`jaxmtl.solvers.losses`). Theorem 9 of [Din11]: for
0 < α < 2/‖Γ‖₂ the objective converges to its minimum; we take α = 1/‖Γ‖₂ (the rule of
§2.2.1), with ‖Γ‖₂ from :func:`jaxmtl.operators.max_eigenvalue` (Lanczos, an upper estimate).

Departures from [Din11], each optional:

* ``accelerate=True`` (default): (2.10) is a forward–backward step on the dual
  min_c f*(−c) + ½cᵀΓc with step α, so Nesterov's extrapolation applies (FISTA, Beck & Teboulle,
  *SIAM J. Imaging Sci.* 2009, with the adaptive restart of O'Donoghue & Candès, *Found. Comput.
  Math.* 2015): the dual objective converges as O(1/k²) instead of O(1/k); ``False`` runs (2.10)
  as printed.
* ``fit_intercept=True``: an unregularised bias b ∈ ℝᵈ inside the loss, f(Γc + b). Its
  optimality condition Σᵢ cᵢ = 0 is the dual constraint 1ᵀc = 0; the forward–backward step
  projected on it is c = S(α(Γc + b) − c) with b the root of Σᵢ S(…) = 0 (a monotone scalar
  equation per output, solved by bisection), which keeps the convergence of Theorem 9.
* Stopping: the relative duality gap (P − D)/|P| ≤ ``tol`` (see :mod:`jaxmtl.solvers._common`),
  rather than a threshold on ‖c^{k+1} − c^k‖, so the returned objective is certified; the
  residual of (2.7) is reported too.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.operators import SeparableOperator
    >>> X = jnp.linspace(-1, 1, 8)[:, None]
    >>> op = SeparableOperator(jnp.exp(-(X - X.T) ** 2), jnp.eye(1))
    >>> res = fixed_point(op, jnp.sign(X), C=1.0, loss="hinge")
    >>> bool(res.converged), res.coef.shape
    (True, (8, 1))
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_bool, check_positive
from .._jit import jit
from ..errors import DivergenceError, ParameterError
from ..operators import GramOperator, max_eigenvalue
from ._common import (
    SolverResult,
    check_C,
    check_masks,
    check_operator,
    check_solver_args,
    check_targets,
    check_weights,
    duality_gap,
    fixed_point_residual,
    in_given_order,
    solve_intercept,
)
from .losses import Loss, resolvent
from ..products import full_precision

__all__ = ["fixed_point", "fixed_point_path", "step_size"]

Array = jax.Array


@jit
@full_precision
def step_size(op: GramOperator) -> Array:
    """α = 1/‖Γ‖₂ ([Din11] §2.2.1), ‖Γ‖₂ from the operator's own bound or Lanczos."""
    norm = op.spectral_norm() if hasattr(op, "spectral_norm") else max_eigenvalue(op.mv, op.shape, op.dtype)
    return 1.0 / jnp.maximum(norm, jnp.finfo(op.dtype).tiny)


def _solve(op, Y, Cw, eps, alpha, c0, b0, *, loss: Loss, fit_intercept, tol, max_iter, accelerate):
    """One problem: weights Cw (n, d) (C times sample weights), warm start (c0, b0)."""
    tiny = jnp.finfo(Y.dtype).tiny
    z0 = op.mv(c0)

    def cond(s):
        return (s["k"] < max_iter) & (s["gap"] > tol * jnp.maximum(jnp.abs(s["p"]), tiny)) & s["ok"]

    def body(s):
        beta = jnp.where(accelerate, (s["t"] - 1.0) / (0.5 * (1.0 + jnp.sqrt(1.0 + 4.0 * s["t"] ** 2))), 0.0)
        cy = s["c"] + beta * (s["c"] - s["c_prev"])
        zy = s["z"] + beta * (s["z"] - s["z_prev"])
        b = solve_intercept(loss, Y, Cw, eps, cy, zy, alpha) if fit_intercept else s["b"]
        c = resolvent(loss, alpha * (zy + b) - cy, Y, alpha, Cw, eps)  # steps 2-3 of (2.10)
        z = op.mv(c)  # step 1 of the next iteration
        gap, p = duality_gap(loss, Y, Cw, eps, c, z, b)
        restart = jnp.vdot(cy - c, c - s["c"]) > 0  # adaptive restart: the step points backwards
        t = jnp.where(restart, 1.0, 0.5 * (1.0 + jnp.sqrt(1.0 + 4.0 * s["t"] ** 2)))
        ok = jnp.all(jnp.isfinite(c)) & jnp.isfinite(p)
        return {"c": c, "c_prev": jnp.where(restart, c, s["c"]), "z": z, "z_prev": jnp.where(restart, z, s["z"]),
                "b": b, "t": t, "k": s["k"] + 1, "gap": gap, "p": p, "ok": ok}

    gap0, p0 = duality_gap(loss, Y, Cw, eps, c0, z0, b0)
    init = {"c": c0, "c_prev": c0, "z": z0, "z_prev": z0, "b": b0, "t": jnp.ones((), Y.dtype),
            "k": jnp.zeros((), jnp.int32), "gap": jnp.full((), jnp.inf, Y.dtype), "p": p0,
            "ok": jnp.all(jnp.isfinite(z0))}
    s = jax.lax.while_loop(cond, body, init)
    res = fixed_point_residual(loss, Y, Cw, eps, s["c"], s["z"], s["b"], alpha)
    converged = s["ok"] & (s["gap"] <= tol * jnp.maximum(jnp.abs(s["p"]), tiny))
    return SolverResult(s["c"], s["b"], s["k"], converged, s["gap"], s["p"], res)


@partial(jit, static_argnames=("loss", "fit_intercept"))
def _fixed_point_jit(op, Y, Cw, eps, alpha, c0, b0, tol, max_iter, accelerate, *, loss, fit_intercept):
    return _solve(op, Y, Cw, eps, alpha, c0, b0, loss=loss, fit_intercept=fit_intercept, tol=tol,
                  max_iter=max_iter, accelerate=accelerate)


@partial(jit, static_argnames=("loss", "fit_intercept"))
def _path_jit(op, Y, Cs, W, eps, alpha, tol, max_iter, accelerate, *, loss, fit_intercept):
    """vmap over weight masks W (k, n, d) of a warm-started scan over the C grid (ascending)."""

    def one_mask(w):
        def step(carry, C):
            c0, b0 = carry
            r = _solve(op, Y, C * w, eps, alpha, c0, b0, loss=loss, fit_intercept=fit_intercept, tol=tol,
                       max_iter=max_iter, accelerate=accelerate)
            return (r.coef, r.intercept), r

        zeros = (jnp.zeros_like(Y), jnp.zeros(Y.shape[1], Y.dtype))
        return jax.lax.scan(step, zeros, Cs)[1]

    return jax.vmap(one_mask)(W)


def _prepare(op, Y, loss, epsilon, tol, max_iter, weights, alpha, accelerate, fit_intercept):
    """Shared validation of the public entry points (plain Python, before tracing)."""
    op = check_operator(op)
    loss, eps, tol, max_iter = check_solver_args(loss, epsilon, tol, max_iter, op.dtype)
    Yc, was_1d = check_targets(op.shape, Y, loss)
    W = check_weights(weights, Yc.shape)
    check_bool(accelerate, "accelerate")
    check_bool(fit_intercept, "fit_intercept")
    dtype = op.dtype
    # NumPy arguments (converting them is no compiled call; eager JAX operations each compile one)
    alpha = step_size(op) if alpha is None else np.asarray(check_positive(alpha, "alpha"), dtype)
    W = np.ones(Yc.shape, dtype) if W is None else W.astype(dtype)
    return op, loss, eps, tol, max_iter, np.asarray(Yc, dtype), W, alpha, was_1d


@full_precision
def fixed_point(op: Any, Y: Any, C: Any = 1.0, *, loss: str | Loss = "hinge", epsilon: float = 0.1,
                fit_intercept: bool = False, tol: float | None = None, max_iter: int = 10_000,
                accelerate: bool = True, alpha: float | None = None, weights: Any = None,
                coef_init: Any = None, intercept_init: Any = None) -> SolverResult:
    """Minimise Σ C·wᵢⱼ·L(Yᵢⱼ, (Γc)ᵢⱼ + bⱼ) + ½⟨c, Γc⟩ by the fixed-point iteration (2.10).

    Args:
      op: a :class:`~jaxmtl.operators.GramOperator` (shape (n, d)) or an (n, n) kernel matrix.
      Y: (n, d) or (n,) targets; ±1 labels for 'hinge', 'squared_hinge', 'logistic'.
      C: C > 0, the weight of the loss (scikit-learn's C of SVC / SVR).
      loss: a name of :data:`jaxmtl.solvers.LOSSES` or a :class:`~jaxmtl.solvers.Loss`.
      epsilon: ε ≥ 0 of 'epsilon_insensitive' (tube) and 'huber' (threshold, > 0).
      fit_intercept: an unregularised bias per output.
      tol: relative duality gap at which to stop (default 1e-6 in float64, 1e-4 in float32).
      max_iter: iteration cap (``converged`` says whether the gap was reached).
      accelerate: Nesterov extrapolation with restart (see the module docstring).
      alpha: step α (default 1/‖Γ‖₂; must stay below 2/‖Γ‖₂, or 1/‖Γ‖₂ with ``accelerate``).
      weights: optional (n,) or (n, d) non-negative sample weights multiplying C (0 drops a row).
      coef_init, intercept_init: warm start (n, d) / (d,).

    Returns:
      :class:`~jaxmtl.solvers.SolverResult` (coef (n, d), or (n,) with intercept () for 1-D Y).

    Raises:
      ShapeError, ParameterError, LabelError on bad input (before tracing);
      DivergenceError when the iterates became non-finite (α too large).
    """
    op, loss, eps, tol, max_iter, Yj, W, alpha, was_1d = _prepare(
        op, Y, loss, epsilon, tol, max_iter, weights, alpha, accelerate, fit_intercept)
    Cv = check_C(C)
    if Cv.size != 1:
        raise ParameterError(f"C must be one number here (use fixed_point_path for a grid); received {Cv.tolist()}.")
    c0 = np.zeros_like(Yj) if coef_init is None else np.asarray(coef_init, Yj.dtype).reshape(Yj.shape)
    b0 = np.zeros(Yj.shape[1], Yj.dtype) if intercept_init is None else \
        np.asarray(intercept_init, Yj.dtype).reshape(Yj.shape[1])
    r = _fixed_point_jit(op, Yj, float(Cv[0]) * W, eps, alpha, c0, b0, tol, max_iter, accelerate, loss=loss,
                         fit_intercept=fit_intercept)
    if not (np.isfinite(np.asarray(r.coef)).all() and np.isfinite(float(r.primal))):
        raise DivergenceError(f"the fixed-point iteration diverged (step alpha={float(alpha):.3g}): its iterates "
                              "became non-finite (or overflowed). Leave alpha=None (1/‖Γ‖₂) or pass a smaller one.")
    return _squeeze(r) if was_1d else r


@full_precision
def fixed_point_path(op: Any, Y: Any, Cs: Any, *, loss: str | Loss = "hinge", epsilon: float = 0.1,
                     fit_intercept: bool = False, tol: float | None = None, max_iter: int = 10_000,
                     accelerate: bool = True, alpha: float | None = None, masks: Any = None) -> SolverResult:
    """Solutions for every C of a grid (warm-started, ascending) and every training mask, in one call.

    Args:
      op, Y, loss, epsilon, fit_intercept, tol, max_iter, accelerate, alpha: as :func:`fixed_point`.
      Cs: 1-D grid of C > 0 (solved in increasing order, each from the previous solution; the
        results come back in the order given).
      masks: optional (k, n) boolean training masks (k folds, ``vmap``-ed): rows outside a mask
        get weight 0, so their coefficients are 0 and Γc on them is the held-out prediction.

    Returns:
      :class:`~jaxmtl.solvers.SolverResult` with leading axes (k, n_C) (k = 1 without masks);
      fields always 2-D per problem: coef (k, n_C, n, d).
    """
    op, loss, eps, tol, max_iter, Yj, W, alpha, _ = _prepare(
        op, Y, loss, epsilon, tol, max_iter, None, alpha, accelerate, fit_intercept)
    Cs = check_C(Cs, "Cs")
    M = check_masks(masks, Yj.shape[0])
    order = np.argsort(Cs)
    Wk = M.astype(Yj.dtype)[:, :, None] * W[None]
    r = _path_jit(op, Yj, np.asarray(Cs[order], Yj.dtype), Wk, eps, alpha, tol, max_iter, accelerate, loss=loss,
                  fit_intercept=fit_intercept)
    return in_given_order(r, order)


def _squeeze(r: SolverResult) -> SolverResult:
    return r._replace(coef=r.coef[:, 0], intercept=r.intercept[0])
