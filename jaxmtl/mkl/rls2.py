r"""RLS2: regularized least squares with two layers (multiple kernel learning with the square loss).

Dinuzzo, *Learning functions with kernel methods*, PhD thesis, University of Pavia, 2011 ([Din11]),
ch. 3–4. For λ > 0 and scaled basis Grams 𝐊ᵏ (eq. 3.6), RLS2 solves (eq. 4.1)

    min_{c, d ∈ Δ_m}  ‖y − 𝐊(d)c‖²/(2λ) + cᵀ𝐊(d)c/2,      𝐊(d) = Σₖ d_k 𝐊ᵏ,

by Algorithm 3: alternate c ← (𝐊(d) + λI)⁻¹y (eq. 4.2) and d ← argmin_{d∈Δ_m} ‖𝐕d − u‖² with
𝐕 = [𝐊¹c … 𝐊ᵐc], u = y − λc/2 (Lemma 5, eq. 4.4), from the λ → ∞ limit d = e_i,
i = argmax_k yᵀ𝐊ᵏy (Lemma 6), until the normalised residual of (4.2) with the new d,
‖(𝐊(d) + λI)c − y‖ ≤ δ‖y‖, is small ([Din11] §4.5). Both steps are exact minimisations, so the
objective never increases.

Multi-output (an extension of [Din11], which treats scalar outputs): the basis kernels may be
matrix-valued, 𝐊ᵏ ⊗ A with one output matrix A (T × T) as in the rest of jaxmtl. Everything above
holds with c, y, u and vₖ = vec(𝐊ᵏ C A) in vec form, so the kernel weights d are shared by the T
outputs; the c-step is :func:`jaxmtl.operators.separable_solve` (Cholesky per eigen-direction of A)
or conjugate gradients on (𝐊(d) ⊗ A + λI), never forming the Kronecker product.

Paths: :func:`rls2_path` runs Algorithm 3 down a decreasing grid of λ (one ``lax.scan``), each λ
warm-started at the previous (d, c), as in [Din11] §4.5.2. Row weights ``w`` ∈ {0, 1}ⁿ restrict the
problem to a subset of the rows with fixed shapes, so cross-validation folds can be ``vmap``-ed.

Example:
    >>> import numpy as np
    >>> from jaxmtl.mkl.dictionaries import standard_dictionary
    >>> X = np.random.default_rng(0).normal(size=(20, 2)); y = X[:, 0] ** 2
    >>> D = standard_dictionary(2)
    >>> st = D.stack(X, scale=D.scaling(X))
    >>> res = rls2_solve(st, y[:, None], 0.1)
    >>> bool(abs(float(res.d.sum()) - 1.0) < 1e-5)
    True
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
from jax.typing import ArrayLike

from .._checks import require_concrete
from .._jit import jit
from ..operators import separable_solve
from .dictionaries import GramStack
from .simplex import simplex_qp
from ..products import full_precision

__all__ = ["RLS2Result", "RLS2Path", "initial_kernel", "rls2_step", "rls2_objective", "rls2_solve",
           "rls2_path", "kkt_conditions", "path_predict", "linear_coefficients", "CHOLESKY_MAX_N"]

Array = jax.Array
CHOLESKY_MAX_N = 3000  # solver="auto": Cholesky up to this many rows, conjugate gradients above


class RLS2Result(NamedTuple):
    """Solution of (4.1) at one λ.

    Attributes:
      d: (m,) kernel weights on the simplex; C: (n, T) coefficients c*(d) of (4.2) for that d;
      n_iter: alternations of Algorithm 3; residual: the last normalised residual of the stopping test;
      converged: residual ≤ tol.
    """

    d: Array
    C: Array
    n_iter: Array
    residual: Array
    converged: Array


class RLS2Path(NamedTuple):
    """Warm-started solutions along a decreasing λ grid; fields of :class:`RLS2Result` stacked (L, …)."""

    lambdas: Array
    d: Array
    C: Array
    n_iter: Array
    residual: Array
    converged: Array


def _ones_or(w, n, dtype):
    return jnp.ones((n,), dtype) if w is None else jnp.asarray(w, dtype)


def _eye_or(A, T, dtype):
    return jnp.eye(T, dtype=dtype) if A is None else jnp.asarray(A, dtype)


@full_precision
def initial_kernel(stack: GramStack, Y: Array, A: Array | None = None, w: Array | None = None) -> Array:
    """The λ → ∞ solution d = e_i, i = argmax_k tr(Yᵀ𝐊ᵏY A) ([Din11] Lemma 6; yᵀ𝐊ᵏy for T = 1)."""
    n, T = Y.shape
    w = _ones_or(w, n, Y.dtype)
    Yw = Y * w[:, None]
    align = jnp.einsum("kit,is,ts->k", stack.products(Yw), Yw, _eye_or(A, T, Y.dtype))
    return jax.nn.one_hot(jnp.argmax(align), stack.shape[0], dtype=Y.dtype)


def _c_step(stack, d, Y, A, lam, w, C0, solver, rows=None):
    """c*(d) of (4.2) on the rows of weight 1: (n, T), zero on the rows of weight 0.

    With ``rows`` (r,) (indices holding every row of weight 1 once; others only with weight 0), the
    Cholesky route factors the r × r system of those rows (r³/3 flops in place of n³/3)."""
    n = Y.shape[0]
    K = stack.combine(d)
    if solver == "cholesky" and rows is not None:
        wr = w[rows]
        Kr = K[rows[:, None], rows[None, :]] * (wr[:, None] * wr[None, :])
        Cr = separable_solve(Kr, A, Y[rows] * wr[:, None], lam / rows.shape[0])
        return jnp.zeros_like(Y).at[rows].add(Cr * wr[:, None])
    K = K * (w[:, None] * w[None, :])
    Yw = Y * w[:, None]
    if solver == "cholesky":  # separable_solve's normalisation: K C A + nλ' C = Y with λ' = λ/n
        return separable_solve(K, A, Yw, lam / n)
    C, _ = jax.scipy.sparse.linalg.cg(lambda C: K @ C @ A + lam * C, Yw, x0=C0, tol=1e-12, maxiter=10 * n)
    return C


def _d_problem(P, C, Y, A, lam, w):
    """Q = 𝐕ᵀ𝐕, b = 𝐕ᵀu of (4.4) from the products P = (𝐊ᵏC)ₖ."""
    V = jnp.einsum("kit,ts->kis", P, A) * w[None, :, None]
    U = Y * w[:, None] - 0.5 * lam * C
    return jnp.einsum("kit,lit->kl", V, V), jnp.einsum("kit,it->k", V, U), V


@partial(jit, static_argnames=("solver", "smo_max_iter"))
@full_precision
def rls2_step(stack: GramStack, Y: Array, lam: ArrayLike, d: Array, A: Array | None = None, w: Array | None = None,
              C0: Array | None = None, solver: str = "cholesky", smo_tol: float = 1e-10,
              smo_max_iter: int = 100_000, rows: Array | None = None) -> tuple[Array, Array, Array]:
    """One alternation of Algorithm 3: the c-step (4.2) at d, then the d-step (4.4) at that c.

    ``rows`` (r,): optional indices holding every row of weight 1 of ``w`` once (others only with
    weight 0, as padding): the Cholesky c-step then factors the r × r system of those rows alone.

    Returns:
      (d_new (m,), C (n, T) = c*(d), the normalised residual ‖(𝐊(d_new) ⊗ A + λI)c − y‖/‖y‖).
    """
    n, T = Y.shape
    w = _ones_or(w, n, Y.dtype)
    A = _eye_or(A, T, Y.dtype)
    C = _c_step(stack, d, Y, A, lam, w, jnp.zeros_like(Y) if C0 is None else C0, solver, rows)
    P = stack.products(C)
    Q, b, V = _d_problem(P, C, Y, A, lam, w)
    d_new = simplex_qp(Q, b, d, smo_tol, smo_max_iter)
    res = jnp.einsum("k,kit->it", d_new, V) + lam * C - Y * w[:, None]
    return d_new, C, jnp.linalg.norm(res) / jnp.linalg.norm(Y * w[:, None])


@full_precision
def rls2_objective(stack: GramStack, Y: Array, lam: ArrayLike, d: Array, C: Array, A: Array | None = None) -> Array:
    """The objective (4.1): ‖Y − 𝐊(d)CA‖²/(2λ) + tr(Cᵀ𝐊(d)CA)/2."""
    Y = jnp.asarray(Y)
    A = _eye_or(A, Y.shape[1], Y.dtype)
    F = stack.combine(d) @ C @ A
    return jnp.sum((Y - F) ** 2) / (2.0 * lam) + 0.5 * jnp.sum(C * F)


def _solve(stack, Y, lam, A, w, d0, C0, tol, max_iter, solver, smo_tol, smo_max_iter, rows=None):
    step = partial(rls2_step, stack, Y, lam, A=A, w=w, solver=solver, smo_tol=smo_tol, smo_max_iter=smo_max_iter,
                   rows=rows)

    def cond(s):
        _, _, _, it, res = s
        return (res > tol) & (it < max_iter)

    def body(s):
        d, C, _, it, _ = s
        d_new, C, res = step(d, C0=C)
        return d_new, C, d, it + 1, res

    start = (d0, C0, jnp.full_like(d0, jnp.nan), jnp.asarray(0), jnp.asarray(jnp.inf, Y.dtype))
    d, C, d_prev, it, res = jax.lax.while_loop(cond, body, start)
    # c*(d) for the returned d: C already is when the last d-step left d unchanged (one factorisation saved)
    C = jax.lax.cond(jnp.all(d == d_prev), lambda: C, lambda: _c_step(stack, d, Y, A, lam, w, C, solver, rows))
    return RLS2Result(d, C, it, res, res <= tol)


def _resolve_solver(solver: str, n: int) -> str:
    if solver == "auto":
        return "cholesky" if n <= CHOLESKY_MAX_N else "cg"
    if solver not in ("cholesky", "cg"):
        from ..errors import ParameterError

        raise ParameterError(f"solver must be 'auto', 'cholesky' or 'cg'; received {solver!r}.")
    return solver


@partial(jit, static_argnames=("max_iter", "solver", "smo_max_iter"))
def _solve_jit(stack, Y, lam, A, w, d0, tol, max_iter, solver, smo_tol, smo_max_iter):
    return _solve(stack, Y, lam, A, w, d0, jnp.zeros_like(Y), tol, max_iter, solver, smo_tol, smo_max_iter)


@full_precision
def rls2_solve(stack: GramStack, Y: ArrayLike, lam: ArrayLike, A: ArrayLike | None = None, w: ArrayLike | None = None,
               d0: ArrayLike | None = None, tol: float = 1e-6, max_iter: int = 1000,
               solver: str = "auto", smo_tol: float = 1e-10, smo_max_iter: int = 100_000) -> RLS2Result:
    """Algorithm 3 of [Din11] at one λ, from Lemma 6's initial kernel (or ``d0``).

    Args:
      stack: the basis Grams (:meth:`KernelDictionary.stack`), (m, n, n).
      Y: (n, T) outputs; lam: λ > 0; A: (T, T) output matrix (default identity);
      w: (n,) row weights in {0, 1} (default ones); d0: (m,) start on the simplex.
      tol: δ of the stopping test ‖(𝐊(d) ⊗ A + λI)c − y‖ ≤ δ‖y‖ ([Din11] §4.5 uses 10⁻²).
      max_iter: largest number of alternations; solver: "auto", "cholesky" or "cg".
      smo_tol, smo_max_iter: stopping rule of the d-step (:func:`jaxmtl.mkl.simplex.simplex_qp`).

    Returns:
      :class:`RLS2Result`.
    """
    Y = jnp.asarray(Y)
    n, T = Y.shape
    w = _ones_or(w, n, Y.dtype)
    A = _eye_or(A, T, Y.dtype)
    d0 = initial_kernel(stack, Y, A, w) if d0 is None else jnp.asarray(d0, Y.dtype)
    return _solve_jit(stack, Y, jnp.asarray(lam, Y.dtype), A, w, d0, tol, max_iter,
                      _resolve_solver(solver, n), smo_tol, smo_max_iter)


@partial(jit, static_argnames=("max_iter", "solver", "smo_max_iter"))
def _path_jit(stack, Y, lambdas, A, w, tol, max_iter, solver, smo_tol, smo_max_iter, rows=None):
    def one(carry, lam):
        d, C = carry
        r = _solve(stack, Y, lam, A, w, d, C, tol, max_iter, solver, smo_tol, smo_max_iter, rows)
        return (r.d, r.C), r

    start = (initial_kernel(stack, Y, A, w), jnp.zeros_like(Y))
    _, out = jax.lax.scan(one, start, lambdas)
    return RLS2Path(lambdas, *out)


@full_precision
def rls2_path(stack: GramStack, Y: ArrayLike, lambdas: ArrayLike, A: ArrayLike | None = None,
              w: ArrayLike | None = None, tol: float = 1e-2, max_iter: int = 200,
              solver: str = "auto", smo_tol: float = 1e-8, smo_max_iter: int = 100_000) -> RLS2Path:
    """Algorithm 3 down a grid of λ, largest first, each warm-started at the previous (d, c).

    [Din11] §4.5.2: 30 values of λ log-spaced in [10⁻⁶, 10⁶], δ = 10⁻², d initialised at the
    previous λ's solution; the first λ starts from Lemma 6. One ``lax.scan`` over λ (inside it, a
    ``lax.while_loop`` over alternations); pure, so it can be ``vmap``-ed over row weights ``w``.

    Args:
      lambdas: (L,) positive values, sorted here in decreasing order; other arguments as in
        :func:`rls2_solve` (with the thesis's δ = 10⁻² as default ``tol``).

    Returns:
      :class:`RLS2Path` with ``lambdas`` in decreasing order.
    """
    Y = jnp.asarray(Y)
    n, T = Y.shape
    lambdas = jnp.sort(jnp.asarray(lambdas, Y.dtype))[::-1]
    return _path_jit(stack, Y, lambdas, _eye_or(A, T, Y.dtype), _ones_or(w, n, Y.dtype), tol, max_iter,
                     _resolve_solver(solver, n), smo_tol, smo_max_iter)


@full_precision
def path_predict(cross: GramStack, path_d: Array, path_C: Array, A: Array | None = None) -> Array:
    """(L, n_new, T) predictions Σₖ d_k 𝐊ᵏ(X_new, X) C A along a path (cross stack from the same dictionary)."""
    A = _eye_or(A, path_C.shape[-1], path_C.dtype)
    return jax.lax.map(lambda dc: cross.combine(dc[0]) @ dc[1] @ A, (path_d, path_C))


@full_precision
def kkt_conditions(stack: GramStack, Y: ArrayLike, lam: ArrayLike, d: ArrayLike, C: ArrayLike,
                   A: ArrayLike | None = None, support_tol: float = 1e-12) -> dict:
    """Optimality conditions of (3.5)–(3.6) with the square loss at (c, d).

    Stationarity in c is (𝐊(d) ⊗ A + λI)c = y (4.2). In d, the gradient of (4.1) is −aₖ/2 with the
    alignments aₖ = tr(Cᵀ𝐊ᵏCA); on the simplex the KKT conditions say that every selected kernel
    (d_k > 0) has the largest alignment, ρ = maxₖ aₖ, and Σ d_k = 1, d ≥ 0 (Lemma 2).

    Returns:
      dict of floats: ``stationarity`` ‖(𝐊(d) ⊗ A + λI)c − y‖/‖y‖; ``alignment_gap``
      (ρ − min_{d_k>0} aₖ)/ρ; ``simplex`` |Σd − 1|; ``negativity`` max(0, −min d).
    """
    for value, name in ((lam, "lam"), (d, "d")):
        require_concrete(value, name, "the conditions are reported as Python floats; inside jit, vmap or grad "
                         "use rls2_objective, which accepts traced lam and d")
    Y, d, C = jnp.asarray(Y), jnp.asarray(d), jnp.asarray(C)
    A = _eye_or(A, Y.shape[1], Y.dtype)
    a = jnp.einsum("kit,is,ts->k", stack.products(C), C, A)
    res = stack.combine(d) @ C @ A + lam * C - Y
    rho = jnp.max(a)
    sel = d > support_tol * jnp.max(d)
    return {"stationarity": float(jnp.linalg.norm(res) / jnp.linalg.norm(Y)),
            "alignment_gap": float((rho - jnp.min(jnp.where(sel, a, rho))) / rho),
            "simplex": float(jnp.abs(jnp.sum(d) - 1.0)),
            "negativity": float(jnp.maximum(0.0, -jnp.min(d)))}


@full_precision
def linear_coefficients(X: npt.ArrayLike, scale: npt.ArrayLike, d: npt.ArrayLike, C: npt.ArrayLike) -> np.ndarray:
    """Weights w (p, T) of linear RLS2, w_j = d_j s_j z_j with z = Xᵀc ([Din11] eqs. 4.6–4.7), for X (n, p),
    scale and d (p,), C (n, T).

    Valid for the dictionary of linear kernels on each feature (:func:`linear_dictionary`), in its order.
    """
    require_concrete(d, "d", "the weights are computed on the host in float64; pass concrete d")
    X, C = np.asarray(X, np.float64), np.asarray(C, np.float64)
    return (np.asarray(d) * np.asarray(scale))[:, None] * (X.T @ C)
