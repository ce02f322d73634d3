r"""Coordinate descent (non-linear Gauss–Seidel) for any convex loss: [Din11] §2.3, Algorithms 1–2.

Each update solves the problem in one coefficient exactly (2.13): with γ = Γ_kk > 0 and
α_k = 1/γ, v = (Γc)_k/γ − c_k, c_k ← S_k(v) = −J_{α_k}(v), and the products are updated by the
change h = c_k^new − c_k times one column of Γ. Coordinates are visited by the randomised
cyclic rule (a fresh permutation of all n·d entries per sweep — an essentially cyclic rule, so
Theorem 11 applies); a coordinate with Γ_kk = 0 has a zero column and stays at 0.

The solver reaches the operator through a small protocol, :class:`ColumnAccess`: ``diag()``,
and a running state ``aux`` summarising Γc with ``entry``, ``update`` and ``product``.

* :class:`DenseColumns` — an explicit nd × nd Gram matrix (also the fallback for any
  :class:`~jaxmtl.operators.GramOperator`, built once from ``as_matrix()``); aux = Γc.
* :class:`SeparableColumns` — K ⊗ A: the column of (i, j) is K[:, i] A[j, :], never forming
  the nd × nd matrix; aux = Γc.
* :class:`LinearColumns` — the linear kernel K = XXᵀ (times A): Algorithm 2, aux = W = Xᵀc,
  so an update costs O(p·d) instead of O(n·d) ([Din11] §2.3.1).

Departures from [Din11]: the stopping rule is the relative duality gap at the end of a sweep
(as for :func:`~jaxmtl.solvers.fixed_point`), not max|h| < δ (still reported as ``residual``
after the last sweep); a coefficient whose update is exactly 0 skips the column update, as the
thesis suggests for Algorithm 2. No intercept: its optimality condition Σᵢ cᵢ = 0 couples all
coefficients, which a one-coordinate update cannot keep (use the fixed-point solver, or
:func:`~jaxmtl.solvers.smo`'s pair updates for the hinge and ε-insensitive losses).

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.operators import SeparableOperator
    >>> X = jnp.linspace(-1, 1, 8)[:, None]
    >>> op = SeparableOperator(jnp.exp(-(X - X.T) ** 2), jnp.eye(1))
    >>> res = coordinate_descent(op, jnp.sign(X), C=1.0, loss="hinge")
    >>> bool(res.converged)
    True
"""

from __future__ import annotations

import abc
from functools import partial
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import as_float_array, check_bool, check_int
from .._jit import jit
from ..errors import ParameterError
from ..operators import DenseOperator, GramOperator, SeparableOperator
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
)
from .fixed_point import _squeeze, step_size
from .losses import Loss, resolvent
from ..products import full_precision

__all__ = ["ColumnAccess", "DenseColumns", "SeparableColumns", "LinearColumns", "column_access",
           "coordinate_descent", "coordinate_descent_path"]

Array = jax.Array


class ColumnAccess(eqx.Module):
    """Diagonal and column updates of a Gram operator, as coordinate descent needs them."""

    @property
    @abc.abstractmethod
    def shape(self) -> tuple[int, int]:
        """(n, d) of the coefficients."""

    @abc.abstractmethod
    def diag(self) -> Array:
        """(n, d) diagonal entries Γ_(ij),(ij)."""

    @abc.abstractmethod
    def init(self, c: Array) -> Any:
        """The running state for coefficients c."""

    @abc.abstractmethod
    def entry(self, aux: Any, i: ArrayLike, j: ArrayLike) -> Array:
        """(Γc)_ij from the state."""

    @abc.abstractmethod
    def update(self, aux: Any, i: ArrayLike, j: ArrayLike, h: ArrayLike) -> Any:
        """The state after c_ij += h."""

    @abc.abstractmethod
    def product(self, aux: Any) -> Array:
        """(n, d) Γc from the state."""


class _ProductState(ColumnAccess):
    """State = Γc itself; subclasses give the column of (i, j)."""

    @abc.abstractmethod
    def column(self, i, j) -> Array:
        """(n, d) Γ e_ij."""

    @abc.abstractmethod
    def mv(self, c: Array) -> Array:
        """(n, d) Γc."""

    def init(self, c):
        return self.mv(c)

    def entry(self, aux, i, j):
        return aux[i, j]

    def update(self, aux, i, j, h):
        return aux + h * self.column(i, j)

    def product(self, aux):
        return aux


class DenseColumns(_ProductState):
    """An explicit (nd, nd) Gram matrix G acting on row-major vec(c)."""

    G: Array
    d: int = eqx.field(static=True)

    @property
    def shape(self):
        return (self.G.shape[0] // self.d, self.d)

    def diag(self):
        return jnp.diagonal(self.G).reshape(self.shape)

    def column(self, i, j):
        return jax.lax.dynamic_index_in_dim(self.G, i * self.d + j, axis=1, keepdims=False).reshape(self.shape)

    def mv(self, c):
        return (self.G @ c.reshape(-1)).reshape(c.shape)


class SeparableColumns(_ProductState):
    """Γ = K ⊗ A: column (i, j) is the outer product K[:, i] A[j, :]."""

    K: Array
    A: Array

    @property
    def shape(self):
        return (self.K.shape[0], self.A.shape[0])

    def diag(self):
        return jnp.outer(jnp.diagonal(self.K), jnp.diagonal(self.A))

    def column(self, i, j):
        return jnp.outer(self.K[:, i], self.A[j, :])

    def mv(self, c):
        return self.K @ c @ self.A


class LinearColumns(ColumnAccess):
    """Γ = (XXᵀ) ⊗ A for the linear kernel: state W = Xᵀc (p, d), Algorithm 2 of [Din11]."""

    X: Array
    A: Array

    @property
    def shape(self):
        return (self.X.shape[0], self.A.shape[0])

    def diag(self):
        return jnp.outer(jnp.sum(self.X**2, axis=1), jnp.diagonal(self.A))

    def init(self, c):
        return self.X.T @ c

    def entry(self, aux, i, j):
        return self.X[i] @ (aux @ self.A[:, j])

    def update(self, aux, i, j, h):
        return aux.at[:, j].add(h * self.X[i])

    def product(self, aux):
        return self.X @ aux @ self.A


def column_access(op: Any) -> ColumnAccess:
    """The :class:`ColumnAccess` of an operator: itself, K ⊗ A, a dense matrix, or — for any other
    :class:`~jaxmtl.operators.GramOperator` — its dense matrix from ``as_matrix()`` (nd × nd memory)."""
    if isinstance(op, ColumnAccess):
        return op
    op = check_operator(op)
    if isinstance(op, SeparableOperator):
        return SeparableColumns(op.K, op.A)
    if isinstance(op, DenseOperator):
        return DenseColumns(op.G, op.d)
    return DenseColumns(op.as_matrix(), op.shape[1])


def _solve(cols: ColumnAccess, Y, Cw, eps, key, c0, alpha, *, loss: Loss, tol, max_sweeps):
    n, d = Y.shape
    tiny = jnp.finfo(Y.dtype).tiny
    g = cols.diag()
    b0 = jnp.zeros((d,), Y.dtype)

    def coordinate(k, carry):
        c, aux, hmax, order = carry
        i, j = jnp.divmod(order[k], d)
        gij = g[i, j]
        a = 1.0 / jnp.where(gij > 0, gij, 1.0)
        cij = c[i, j]
        new = resolvent(loss, a * cols.entry(aux, i, j) - cij, Y[i, j], a, Cw[i, j], eps)  # (2.13)
        h = jnp.where(gij > 0, new - cij, -cij)
        aux = jax.lax.cond(h != 0, lambda x: cols.update(x, i, j, h), lambda x: x, aux)
        return c.at[i, j].add(h), aux, jnp.maximum(hmax, jnp.abs(h)), order

    def cond(s):
        return (s["k"] < max_sweeps) & (s["gap"] > tol * jnp.maximum(jnp.abs(s["p"]), tiny)) & s["ok"]

    def body(s):
        order = jax.random.permutation(jax.random.fold_in(key, s["k"]), n * d)
        c, aux, hmax, _ = jax.lax.fori_loop(0, n * d, coordinate, (s["c"], s["aux"], jnp.zeros((), Y.dtype), order))
        gap, p = duality_gap(loss, Y, Cw, eps, c, cols.product(aux), b0)
        return {"c": c, "aux": aux, "k": s["k"] + 1, "gap": gap, "p": p, "hmax": hmax,
                "ok": jnp.all(jnp.isfinite(c)) & jnp.isfinite(p)}

    aux0 = cols.init(c0)
    _, p0 = duality_gap(loss, Y, Cw, eps, c0, cols.product(aux0), b0)
    init = {"c": c0, "aux": aux0, "k": jnp.zeros((), jnp.int32), "gap": jnp.full((), jnp.inf, Y.dtype),
            "p": p0, "hmax": jnp.zeros((), Y.dtype), "ok": jnp.asarray(True)}
    s = jax.lax.while_loop(cond, body, init)
    res = fixed_point_residual(loss, Y, Cw, eps, s["c"], cols.product(s["aux"]), b0, alpha)
    converged = s["ok"] & (s["gap"] <= tol * jnp.maximum(jnp.abs(s["p"]), tiny))
    return SolverResult(s["c"], b0, s["k"], converged, s["gap"], s["p"], res)


@partial(jit, static_argnames=("loss",))
def _cd_jit(cols, Y, Cw, eps, key, c0, alpha, tol, max_sweeps, *, loss):
    return _solve(cols, Y, Cw, eps, key, c0, alpha, loss=loss, tol=tol, max_sweeps=max_sweeps)


@partial(jit, static_argnames=("loss",))
def _cd_path_jit(cols, Y, Cs, W, eps, key, alpha, tol, max_sweeps, *, loss):
    def one_mask(w):
        def step(c0, C):
            r = _solve(cols, Y, C * w, eps, key, c0, alpha, loss=loss, tol=tol, max_sweeps=max_sweeps)
            return r.coef, r

        return jax.lax.scan(step, jnp.zeros_like(Y), Cs)[1]

    return jax.vmap(one_mask)(W)


def _prepare(op, Y, loss, epsilon, tol, max_iter, fit_intercept, random_state):
    if fit_intercept is not False:
        check_bool(fit_intercept, "fit_intercept")
        raise ParameterError("coordinate_descent has no intercept (Σ c_i = 0 couples every coordinate); "
                             "use fixed_point(..., fit_intercept=True), or smo for the hinge and "
                             "epsilon_insensitive losses.")
    cols = column_access(op)
    dtype = cols.diag().dtype
    loss, eps, tol, max_iter = check_solver_args(loss, epsilon, tol, max_iter, dtype)

    Yc, was_1d = check_targets(cols.shape, Y, loss)
    seed = check_int(random_state, "random_state", minimum=0)
    # α of the reported residual of (2.7): 1/‖Γ‖₂, or 1/tr Γ ([Din11] §2.2.1) for a bare ColumnAccess
    alpha = step_size(op) if isinstance(op, GramOperator) else 1.0 / jnp.sum(cols.diag())
    return cols, loss, eps, tol, max_iter, np.asarray(Yc, dtype), jax.random.PRNGKey(seed), alpha, was_1d


@full_precision
def coordinate_descent(op: Any, Y: Any, C: Any = 1.0, *, loss: str | Loss = "hinge", epsilon: float = 0.1,
                       fit_intercept: bool = False, tol: float | None = None, max_iter: int = 1000,
                       weights: Any = None, coef_init: Any = None, random_state: int = 0) -> SolverResult:
    """Minimise Σ C·wᵢⱼ·L(Yᵢⱼ, (Γc)ᵢⱼ) + ½⟨c, Γc⟩ by coordinate descent (Algorithm 1 / 2).

    Args:
      op: a :class:`ColumnAccess` (e.g. :class:`LinearColumns` for Algorithm 2), a
        :class:`~jaxmtl.operators.GramOperator`, or an (n, n) kernel matrix.
      Y, C, loss, epsilon, tol, weights, coef_init: as :func:`~jaxmtl.solvers.fixed_point`.
      fit_intercept: must be False (see the module docstring).
      max_iter: cap on sweeps (each visits all n·d coordinates once).
      random_state: seed of the per-sweep permutations.

    Returns:
      :class:`~jaxmtl.solvers.SolverResult` (``n_iter`` counts sweeps; intercept zeros).
    """
    cols, loss, eps, tol, max_iter, Yj, key, alpha, was_1d = _prepare(op, Y, loss, epsilon, tol, max_iter,
                                                                      fit_intercept, random_state)
    Cv = check_C(C)
    if Cv.size != 1:
        raise ParameterError(f"C must be one number here (use coordinate_descent_path); received {Cv.tolist()}.")
    W = check_weights(weights, Yj.shape)
    Cw = float(Cv[0]) * (np.ones_like(Yj) if W is None else np.asarray(W, Yj.dtype))  # NumPy: no program
    c0 = np.zeros_like(Yj) if coef_init is None else np.asarray(as_float_array(coef_init, "coef_init"),
                                                                Yj.dtype).reshape(Yj.shape)
    r = _cd_jit(cols, Yj, Cw, eps, key, c0, alpha, tol, max_iter, loss=loss)
    return _squeeze(r) if was_1d else r


@full_precision
def coordinate_descent_path(op: Any, Y: Any, Cs: Any, *, loss: str | Loss = "hinge", epsilon: float = 0.1,
                            tol: float | None = None, max_iter: int = 1000, masks: Any = None,
                            random_state: int = 0) -> SolverResult:
    """Every C of a grid (warm-started in increasing order) × every training mask, in one call.

    Same conventions as :func:`~jaxmtl.solvers.fixed_point_path`: results (k, n_C, …) in the
    order of ``Cs``; rows outside a mask have weight 0.
    """
    cols, loss, eps, tol, max_iter, Yj, key, alpha, _ = _prepare(op, Y, loss, epsilon, tol, max_iter, False,
                                                                 random_state)
    Cs = check_C(Cs, "Cs")
    M = check_masks(masks, Yj.shape[0])
    order = np.argsort(Cs)
    W = np.broadcast_to(M.astype(Yj.dtype)[:, :, None], (M.shape[0],) + Yj.shape)
    r = _cd_path_jit(cols, Yj, np.asarray(Cs[order], Yj.dtype), W, eps, key, alpha, tol, max_iter, loss=loss)
    return in_given_order(r, order)
