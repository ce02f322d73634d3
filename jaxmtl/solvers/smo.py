r"""Sequential minimal optimisation (libsvm's SMO) for the hinge and ε-insensitive losses.

The dual of the hinge and ε-insensitive problems of [Din11] ch. 2 with an unregularised intercept
is libsvm's quadratic programme ([CL11] §2, §4.1.5): m = n (SVM) or 2n (SVR) variables
0 ≤ a_t ≤ U_t, each tied to a sample s(t) with a sign y_t ∈ {±1}, and

    min ½ aᵀQa + pᵀa   s.t.  Σ_t y_t a_t = 0,        Q_tu = y_t y_u K_{s(t)s(u)},

with p = −1, y = labels (SVM: c_i = y_i a_i) or p = [ε − y; ε + y], signs [1; −1] (SVR:
c_i = a_i − a_{n+i}); U_t = C·w_{s(t)} (w the sample weights). In the coefficients c of the
other solvers, one SMO step moves a pair, c_{s(i)} += λ and c_{s(j)} −= λ, which keeps Σ c = 0 —
the optimality condition of the intercept that a one-coordinate update cannot keep.

Each step (one ``lax.while_loop`` iteration, O(n)): the gradient G = Qa + p, i the maximal
violator of the "up" set, j by the second-order rule WSS2 of Fan, Chen & Lin (*JMLR* 6, 2005)
— argmin −b_ij²/a_ij over the "low" set with b_ij = −y_iG_i + y_jG_j > 0,
a_ij = K_ii + K_jj − 2K_ij — the exact minimiser λ = b_ij/a_ij clipped to the box, and the
gradient updated by two rows of K. Stops when the maximal violation max_up(−yG) − min_low(−yG)
≤ ``tol`` (libsvm's rule, default 1e-3 as its ``tol``); b = −ρ as libsvm (the mean of y_tG_t over
free variables, else the middle of their bounds).

Without an intercept the equality constraint is gone and each step moves one coefficient
(greedy coordinate descent: the coordinate of largest guaranteed decrease v_t²/K_tt, v_t its
projected gradient, exact clipped step), stopping when max v_t ≤ ``tol``.

Departures from libsvm: no shrinking and no kernel cache — the Gram matrix is formed once (n²
memory, the regime of n up to a few 10⁴); for d outputs Γ = K ⊗ A with A diagonal is d
independent problems on A_jj·K (``vmap``-ed), other A need :func:`~jaxmtl.solvers.fixed_point`.
The duality gap of [Din11] and the residual of (2.7) (α = 1/tr Γ) are reported, not used to stop.

[CL11] C.-C. Chang, C.-J. Lin, *LIBSVM: a library for support vector machines*, ACM TIST 2(3), 2011.
[Din11] F. Dinuzzo, *Learning functions with kernel methods*, PhD thesis, 2011.

Example:
    >>> import jax.numpy as jnp
    >>> X = jnp.linspace(-1, 1, 8)[:, None]
    >>> res = smo(jnp.exp(-(X - X.T) ** 2), jnp.sign(X[:, 0] + 0.3), C=1.0)
    >>> bool(res.converged), res.coef.shape, float(abs(res.coef.sum())) < 1e-5
    (True, (8,), True)
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_bool, check_int
from .._jit import jit
from ..errors import ParameterError
from ..operators import DenseOperator, SeparableOperator
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
from .fixed_point import _squeeze
from .losses import Loss
from ..products import full_precision

__all__ = ["smo", "smo_path", "SMO_LOSSES"]

Array = jax.Array
SMO_LOSSES = ("hinge", "epsilon_insensitive")
TAU = 1e-12  # libsvm's τ: curvature floor of a pair with a_ij ≤ 0


def _dual_data(y, Cw, eps, *, svr: bool):
    """(sign, sample, p, U) of libsvm's dual for one output: y (n,), Cw (n,) box C·w."""
    n = y.shape[0]
    if not svr:
        return y, jnp.arange(n), -jnp.ones_like(y), Cw
    ones = jnp.ones_like(y)
    return (jnp.concatenate([ones, -ones]), jnp.concatenate([jnp.arange(n)] * 2),
            jnp.concatenate([eps - y, eps + y]), jnp.concatenate([Cw, Cw]))


def _matvec(K, c):
    """K c in the dtype of c. A float32 Gram with float64 c multiplies c's float32 head and tail
    (c = hi + lo) separately, never forming a float64 copy of K (twice its memory)."""
    if K.dtype == c.dtype:
        return K @ c
    hi = c.astype(K.dtype)
    return (K @ hi).astype(c.dtype) + (K @ (c - hi).astype(K.dtype)).astype(c.dtype)


def _coef(a, sign, n):
    """c_i = Σ_{s(t)=i} y_t a_t (the first n variables have s(t) = t, the next n, if any, too)."""
    ya = sign * a
    return ya[:n] + ya[n:] if ya.shape[0] > n else ya


def _argmax(x):
    """(index of the maximum, that entry) of a 1-D float array without NaN.

    XLA's CPU argmax (a variadic reduction) runs several times slower than a plain max; with
    64-bit integers available the index is found by one max over int64 keys instead: the
    order-preserving bits of x rounded to float32 above, n − 1 − index below. The entry found is
    the first of those equal to the maximum after that rounding (within 6e-8 relative of the
    maximum) — enough for a working-set choice, and its value is read back exactly. Without
    64-bit integers: one max, then the smallest index holding it.
    """
    n = x.shape[0]
    if jax.dtypes.canonicalize_dtype(jnp.int64) != jnp.int64:  # no 64-bit integers (x64 off): two plain
        m = jnp.max(x)  # reductions, the first index of the exact maximum (jnp.argmax's answer, ~1.5x faster)
        return jnp.min(jnp.where(x == m, jnp.arange(n, dtype=jnp.int32), n)), m
    bits = jax.lax.bitcast_convert_type(x.astype(jnp.float32), jnp.int32)
    ordered = jnp.where(bits < 0, bits ^ jnp.int32(0x7FFFFFFF), bits).astype(jnp.int64)
    key = jnp.max((ordered << 32) | (n - 1 - jnp.arange(n, dtype=jnp.int64)))
    i = (n - 1 - (key & 0xFFFFFFFF)).astype(jnp.int32)
    return i, x[i]


def _sets(a, G, sign, U):
    """(up, low, −yG): variables free to move with λ > 0 / λ < 0 (λ = Δc = y_t Δa_t)."""
    return jnp.where(sign > 0, a < U, a > 0), jnp.where(sign > 0, a > 0, a < U), -sign * G


def _select(a, G, sign, U, kd, *, bias):
    """(i, violation): the maximal violator of the up set and libsvm's max_up(−yG) − min_low(−yG)
    (bias); else the coordinate of largest guaranteed decrease v²/K_tt and max v (v the projected
    gradient)."""
    up, low, mg = _sets(a, G, sign, U)
    if bias:
        i, gmax = _argmax(jnp.where(up, mg, -jnp.inf))
        return i, gmax - jnp.min(jnp.where(low, mg, jnp.inf))
    v = jnp.maximum(jnp.where(up, mg, 0.0), jnp.where(low, -mg, 0.0))
    t, _ = _argmax(jnp.where(kd > 0, v * v / jnp.where(kd > 0, kd, 1.0), -1.0))
    return t, jnp.max(v)


def _solve_one(K, scale, y, Cw, eps, a0, *, svr: bool, bias: bool, tol, max_iter):
    """SMO for one output on the Gram scale·K (scale = A_jj): K (n, n), y, Cw (n,), warm start a0 (m,).

    Returns ((a, G, n_iter, violation), (sign, U))."""
    n = y.shape[0]
    sign, sample, p, U = _dual_data(y, Cw, eps, svr=svr)
    a0 = jnp.minimum(a0, U)

    def expand(v):  # (n,) per sample -> (m,) per variable (v[sample]), in the dtype of the sums
        v = v.astype(y.dtype)
        return jnp.broadcast_to(v, (2, n)).reshape(2 * n) if svr else v

    kd = expand(scale * jnp.diagonal(K))

    def step_pair(a, G, i):
        up, low, mg = _sets(a, G, sign, U)
        Ki = scale * expand(K[sample[i]])
        b = mg[i] - mg  # > 0 on the candidates
        curv = kd[i] + kd - 2.0 * Ki
        curv = jnp.where(curv > 0, curv, TAU)
        j, _ = _argmax(jnp.where(low & (b > 0), b * b / curv, -1.0))
        cap_i = jnp.where(sign[i] > 0, U[i] - a[i], a[i])
        cap_j = jnp.where(sign[j] > 0, a[j], U[j] - a[j])
        lam = jnp.minimum(jnp.minimum(b[j] / curv[j], cap_i), cap_j)
        a = a.at[i].add(sign[i] * lam).at[j].add(-sign[j] * lam)
        return a, G + sign * (lam * (Ki - scale * expand(K[sample[j]])))  # c_si += λ, c_sj −= λ

    def step_single(a, G, t):
        lo = jnp.where(sign[t] > 0, -a[t], a[t] - U[t])  # bounds on λ = Δc_st = y_t Δa_t
        hi = jnp.where(sign[t] > 0, U[t] - a[t], a[t])
        lam = jnp.clip(-sign[t] * G[t] / kd[t], lo, hi)
        a = a.at[t].add(sign[t] * lam)
        return a, G + sign * (lam * scale * expand(K[sample[t]]))

    step = step_pair if bias else step_single

    def cond(s):
        return (s[2] < max_iter) & (s[4] > tol)

    def body(s):
        a, G, k, i, _ = s
        a, G = step(a, G, i)
        return (a, G, k + 1) + _select(a, G, sign, U, kd, bias=bias)

    G0 = sign * expand(scale * _matvec(K, _coef(a0, sign, n))) + p
    init = (a0, G0, jnp.zeros((), jnp.int32)) + _select(a0, G0, sign, U, kd, bias=bias)
    a, G, k, _, viol = jax.lax.while_loop(cond, body, init)
    return (a, G, k, viol), (sign, U)


def _intercept(a, G, sign, U):
    """b = −ρ of libsvm: mean of y_tG_t over free variables, else the middle of their bounds."""
    yG = sign * G
    free = (a > 0) & (a < U)
    at_up = a >= U
    ub_set = jnp.where(at_up, sign < 0, sign > 0)  # bounds from above on ρ (libsvm's ub)
    ub = jnp.min(jnp.where(~free & ub_set, yG, jnp.inf))
    lb = jnp.max(jnp.where(~free & ~ub_set, yG, -jnp.inf))
    nfree = jnp.sum(free)
    rho = jnp.where(nfree > 0, jnp.sum(jnp.where(free, yG, 0.0)) / jnp.maximum(nfree, 1), 0.5 * (ub + lb))
    return -rho


def _solve(K, scale, Y, Cw, eps, A0, *, loss: Loss, bias, tol, max_iter):
    """All d outputs (vmapped over columns): scale (d,) = diag A; Y, Cw (n, d); warm start A0 (m, d)."""
    n, _ = Y.shape
    svr = loss.name == "epsilon_insensitive"

    def one(s, y, cw, a0):
        (a, G, k, viol), (sign, U) = _solve_one(K, s, y, cw, eps, a0, svr=svr, bias=bias, tol=tol,
                                                max_iter=max_iter)
        b = _intercept(a, G, sign, U) if bias else jnp.zeros((), y.dtype)
        return a, _coef(a, sign, n), b, k, viol

    a, c, b, k, viol = jax.vmap(one, in_axes=(0, 1, 1, 1), out_axes=(1, 1, 0, 0, 0))(scale, Y, Cw, A0)
    z = _matvec(K, c * scale)
    gap, p = duality_gap(loss, Y, Cw, eps, c, z, b)
    res = fixed_point_residual(loss, Y, Cw, eps, c, z, b, 1.0 / (jnp.trace(K) * jnp.sum(scale)))
    return a, SolverResult(c, b, jnp.max(k), jnp.all(viol <= tol), gap, p, res)


@partial(jit, static_argnames=("loss", "bias"))
def _smo_jit(K, scale, Y, Cw, eps, tol, max_iter, *, loss, bias):
    m = Y.shape[0] * (2 if loss.name == "epsilon_insensitive" else 1)
    A0 = jnp.zeros((m, Y.shape[1]), Y.dtype)
    return _solve(K, scale, Y, Cw, eps, A0, loss=loss, bias=bias, tol=tol, max_iter=max_iter)[1]


@partial(jit, static_argnames=("loss", "bias"))
def _smo_path_jit(K, scale, Y, Cs, W, eps, tol, max_iter, *, loss, bias):
    """vmap over weight masks W (k, n, d) of a scan over the ascending C grid, warm-started in the dual."""
    m = Y.shape[0] * (2 if loss.name == "epsilon_insensitive" else 1)

    def one_mask(w):
        def step(a0, C):
            a, r = _solve(K, scale, Y, C * w, eps, a0, loss=loss, bias=bias, tol=tol, max_iter=max_iter)
            return a, r  # a ≤ C·w stays feasible for the next, larger C

        return jax.lax.scan(step, jnp.zeros((m, Y.shape[1]), Y.dtype), Cs)[1]

    return jax.vmap(one_mask)(W)


def _gram(op):
    """(K (n, n), diag A (d,)) of a scalar kernel matrix, a one-output DenseOperator, or K ⊗ A with A diagonal."""
    op = check_operator(op)
    if isinstance(op, DenseOperator) and op.d == 1:
        return op.G, jnp.ones((1,), op.G.dtype)
    if isinstance(op, SeparableOperator):
        A = np.asarray(op.A)
        if np.count_nonzero(A - np.diag(np.diagonal(A))) == 0 and np.all(np.diagonal(A) > 0):
            return op.K, jnp.asarray(np.diagonal(A), op.K.dtype)
    raise ParameterError(
        f"smo needs a scalar kernel matrix or K ⊗ A with A diagonal and positive (independent outputs); "
        f"received {type(op).__name__} of shape {op.shape}. Use fixed_point for coupled outputs.")


def _prepare(op, Y, loss, epsilon, tol, max_iter, fit_intercept, dtype):
    K, scale = _gram(op)
    if dtype is None:
        dtype = K.dtype
    elif np.dtype(dtype) not in (np.float32, np.float64) or np.dtype(dtype) != jax.dtypes.canonicalize_dtype(dtype):
        raise ParameterError(f"dtype must be None, float32 or float64 (float64 with jax_enable_x64); "
                             f"received {dtype!r}.")
    loss, eps, tol, _ = check_solver_args(loss, epsilon, tol, 1, dtype)
    if loss.name not in SMO_LOSSES:
        raise ParameterError(f"smo solves the losses {SMO_LOSSES}; received loss={loss.name!r} "
                             "(use fixed_point or coordinate_descent).")
    bias = check_bool(fit_intercept, "fit_intercept")
    Yc, was_1d = check_targets((K.shape[0], scale.shape[0]), Y, loss)
    n = K.shape[0]
    max_iter = max(100_000, 100 * n) if max_iter is None else check_int(max_iter, "max_iter", minimum=1)
    return K, scale.astype(dtype), loss, eps, tol, max_iter, bias, np.asarray(Yc, dtype), was_1d  # NumPy: no program


@full_precision
def smo(op: Any, Y: Any, C: Any = 1.0, *, loss: str | Loss = "hinge", epsilon: float = 0.1,
        fit_intercept: bool = True, tol: float = 1e-3, max_iter: int | None = None,
        weights: Any = None, dtype: Any = None) -> SolverResult:
    """Minimise Σ C·wᵢⱼ·L(Yᵢⱼ, (Γc)ᵢⱼ + bⱼ) + ½⟨c, Γc⟩ for the hinge (SVC) or ε-insensitive (SVR) loss by SMO.

    Args:
      op: an (n, n) kernel matrix, a one-output :class:`~jaxmtl.operators.DenseOperator`, or a
        :class:`~jaxmtl.operators.SeparableOperator` K ⊗ A with A diagonal (independent outputs).
      Y: (n, d) or (n,) targets; ±1 labels for 'hinge'.
      C: C > 0 (scikit-learn's C of SVC / SVR).
      loss: 'hinge' or 'epsilon_insensitive'.
      epsilon: the SVR tube ε ≥ 0.
      fit_intercept: an unregularised bias per output (pair updates); False: one coefficient a step.
      tol: maximal KKT violation at which to stop (libsvm's ``tol``, 1e-3).
      max_iter: cap on steps (default max(10⁵, 100 n)); ``converged`` says whether ``tol`` was met.
      weights: optional (n,) or (n, d) non-negative sample weights multiplying C.
      dtype: dtype of the coefficients and of the gradient's sums (default the Gram's). A float32
        Gram with ``dtype=float64`` is libsvm's mix (rows stored in single precision, sums in
        double): the Gram costs half the memory and is several times faster to compute on CPU.

    Returns:
      :class:`~jaxmtl.solvers.SolverResult` (coef (n, d) — (n,) for 1-D Y —, intercept, n_iter =
      steps of the slowest output, converged, duality gap, primal, residual).
    """
    K, scale, loss, eps, tol, max_iter, bias, Yj, was_1d = _prepare(op, Y, loss, epsilon, tol, max_iter,
                                                                   fit_intercept, dtype)
    Cv = check_C(C)
    if Cv.size != 1:
        raise ParameterError(f"C must be one number here (use smo_path for a grid); received {Cv.tolist()}.")
    W = check_weights(weights, Yj.shape)
    Cw = float(Cv[0]) * (np.ones_like(Yj) if W is None else np.asarray(W, Yj.dtype))
    r = _smo_jit(K, scale, Yj, Cw, eps, tol, max_iter, loss=loss, bias=bias)
    return _squeeze(r) if was_1d else r


@full_precision
def smo_path(op: Any, Y: Any, Cs: Any, *, loss: str | Loss = "hinge", epsilon: float = 0.1,
             fit_intercept: bool = True, tol: float = 1e-3, max_iter: int | None = None,
             masks: Any = None, dtype: Any = None) -> SolverResult:
    """Every C of a grid (warm-started in increasing order) × every training mask, in one compiled call.

    Same conventions as :func:`~jaxmtl.solvers.fixed_point_path`: results with leading axes
    (k, n_C) in the order of ``Cs``; rows outside a mask have weight 0 (coefficient 0). Other
    arguments as :func:`smo`.

    Example:
        >>> import jax.numpy as jnp
        >>> X = jnp.linspace(-1, 1, 10)[:, None]
        >>> masks = jnp.arange(10)[None] % 2 == jnp.arange(2)[:, None]
        >>> smo_path(jnp.exp(-(X - X.T) ** 2), jnp.sign(X[:, 0]), [0.5, 2.0], masks=masks).coef.shape
        (2, 2, 10, 1)
    """
    K, scale, loss, eps, tol, max_iter, bias, Yj, _ = _prepare(op, Y, loss, epsilon, tol, max_iter,
                                                              fit_intercept, dtype)
    Cs = check_C(Cs, "Cs")
    M = check_masks(masks, Yj.shape[0])
    order = np.argsort(Cs)
    W = np.broadcast_to(M.astype(Yj.dtype)[:, :, None], (M.shape[0],) + Yj.shape)
    r = _smo_path_jit(K, scale, Yj, np.asarray(Cs[order], Yj.dtype), W, eps, tol, max_iter, loss=loss, bias=bias)
    return in_given_order(r, order)
