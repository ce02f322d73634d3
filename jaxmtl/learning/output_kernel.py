r"""Output kernel learning by block coordinate descent ([DOGP11], Algorithm 1).

[DOGP11] F. Dinuzzo, C. S. Ong, P. Gehler, G. Pillonetto, *Learning output kernels with block
coordinate descent*, ICML 2011.

The model is g(x) = L Σ_i c_i K(x, x_i) with kernel H = K·L (§3.2) and the output kernel L ⪰ 0
is learned with the coefficients C (n, d) by minimising objective (3)

    Q(L, C) = ‖Y − K C L‖²_F / (2λ) + ⟨Cᵀ K C, L⟩_F / 2 + ‖L‖²_F / 2,

invex (Theorem 3.3: every stationary point is a global minimiser). Algorithm 1 alternates

* the C step: the discrete-time Sylvester equation K C L + λ C = Y (eq. 6);
* the L step (Lemma 4.1): E = K C, P = ½ EᵀC − L, (EᵀE + λI) Q = P, L ← L + λQ (eq. 8),

stopping when ‖Z + λC − Y‖_F < δ with Z = E L (line 2).

Departures from the paper, and why:

* The Sylvester step is not solved by SLICOT per iteration: K = U diag(s) Uᵀ is decomposed once
  and every quantity is carried in its eigenbasis, C̃ = UᵀC. With L = V diag(a) Vᵀ,
  C̃ = [(UᵀY V) ⊘ (s aᵀ + λ)] Vᵀ, and since U is orthogonal EᵀE = C̃ᵀ diag(s²) C̃,
  EᵀC = C̃ᵀ diag(s) C̃ and ‖Z + λC − Y‖ = ‖diag(s) C̃ (L_new − L_old)‖: after the one n³
  eigendecomposition an iteration costs O(n d² + d³) — no n × n product at all. C = U C̃ is
  formed once at the end.
* δ is relative: the loop stops when ‖Z + λC − Y‖_F < ``tol``·‖Y‖_F (the paper's δ is absolute).
* The L step is symmetrised, ½(L + Lᵀ), to remove round-off (Lemma 4.1 shows the exact update is
  symmetric PSD).
* Low-rank variant (``rank=r`` < d, for many outputs): L is restricted to L = W M Wᵀ with W the
  top-r right singular vectors of Y (orthonormal, d × r) and M ⪰ 0 (r × r). Writing
  Y = Y W Wᵀ + Y (I − W Wᵀ), objective (3) splits exactly into objective (3) for the r outputs
  Y W (with M in place of L) plus a constant, and C = C_r Wᵀ + Y (I − W Wᵀ)/λ. So the variant is
  Algorithm 1 on r outputs: O(n r² + r³) per iteration and O(d r) memory for the output kernel.
  It is exact on its restricted set, not the full-rank optimum.

Example:
    >>> import jax.numpy as jnp
    >>> K = jnp.eye(4) + 0.5; Y = jnp.ones((4, 2))
    >>> res = output_kernel_learning(K, Y, 0.1)
    >>> res.output_kernel.shape, bool(res.converged)
    ((2, 2), True)
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import as_float_array, check_int, check_positive
from ..errors import ParameterError, ShapeError

__all__ = [
    "OKLResult",
    "okl_objective",
    "sylvester_step",
    "output_kernel_update",
    "output_kernel_learning",
    "okl_rotated",
    "output_basis",
    "okl_path",
]

Array = jax.Array


class OKLResult(NamedTuple):
    """Result of :func:`output_kernel_learning`.

    Attributes:
      coef: (n, d) coefficients C.
      output_kernel: (d, d) learned output kernel L (symmetric PSD).
      objective: (max_iter,) Q(L, C) after each iteration (NaN after the last).
      residual: (max_iter,) ‖Z + λC − Y‖_F / ‖Y‖_F after each iteration (NaN after the last).
      n_iter: number of iterations run.
      converged: True when the residual fell below ``tol`` within ``max_iter`` iterations.
    """

    coef: Array
    output_kernel: Array
    objective: Array
    residual: Array
    n_iter: Array
    converged: Array


def okl_objective(K: Array, Y: Array, C: Array, L: Array, lam) -> Array:
    """Objective (3) of [DOGP11], dense: ‖Y − KCL‖²/(2λ) + ⟨CᵀKC, L⟩/2 + ‖L‖²/2.

    Args:
      K: (n, n) Gram; Y, C: (n, d); L: (d, d); lam: λ > 0.

    Example:
        >>> float(okl_objective(jnp.eye(1), jnp.ones((1, 1)), jnp.zeros((1, 1)), jnp.zeros((1, 1)), 1.0))
        0.5
    """
    KC = K @ C
    R = Y - KC @ L
    return jnp.sum(R * R) / (2.0 * lam) + jnp.sum((C.T @ KC) * L) / 2.0 + jnp.sum(L * L) / 2.0


def _sylvester_rotated(s: Array, Yt: Array, L: Array, lam) -> Array:
    """C̃ = UᵀC solving diag(s) C̃ L + λ C̃ = Ỹ (Ỹ = UᵀY), from the eigensystem of L."""
    a, V = jnp.linalg.eigh(0.5 * (L + L.T))
    a = jnp.maximum(a, 0.0)
    return ((Yt @ V) / (s[:, None] * a[None, :] + lam)) @ V.T


def sylvester_step(s: Array, U: Array, Y: Array, L: Array, lam) -> Array:
    """The C step of Algorithm 1 (line 3, eq. 6): C with K C L + λ C = Y, K = U diag(s) Uᵀ.

    Uses the cached eigendecomposition of K and one of L (d × d): C = U[(UᵀYV) ⊘ (saᵀ + λ)]Vᵀ;
    never a general Sylvester solver, never the nd × nd system (L ⊗ K + λI) vec C = vec Y.

    Args:
      s: (n,) eigenvalues of K (clipped at 0); U: (n, n) eigenvectors; Y: (n, d); L: (d, d) PSD;
      lam: λ > 0.

    Returns:
      (n, d) C.

    Example:
        >>> s, U = jnp.ones(2), jnp.eye(2)
        >>> sylvester_step(s, U, jnp.ones((2, 1)), jnp.eye(1), 1.0)[:, 0]
        Array([0.5, 0.5], dtype=float32)
    """
    return U @ _sylvester_rotated(s, U.T @ Y, L, lam)


def output_kernel_update(K: Array, C: Array, L_prev: Array, lam) -> Array:
    """The L step of Algorithm 1 (lines 4–7, Lemma 4.1): L = L_p + λQ, (EᵀE + λI)Q = ½EᵀC − L_p.

    Exact minimiser of Q(·, C) when C solves eq. (6) for L_p (Lemma 4.1); symmetric PSD.

    Args:
      K: (n, n); C: (n, d) from the Sylvester step with ``L_prev``; L_prev: (d, d); lam: λ.

    Returns:
      (d, d) L.

    Example:
        >>> output_kernel_update(jnp.eye(1), jnp.ones((1, 1)), jnp.zeros((1, 1)), 1.0)
        Array([[0.25]], dtype=float32)
    """
    E = K @ C
    return _l_step(E.T @ E, E.T @ C, L_prev, lam)


def _l_step(EtE: Array, EtC: Array, L_prev: Array, lam) -> Array:
    d = EtE.shape[0]
    P = 0.5 * EtC - L_prev
    G = EtE + lam * jnp.eye(d, dtype=EtE.dtype)
    Q = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(0.5 * (G + G.T)), P)
    L = L_prev + lam * Q
    return 0.5 * (L + L.T)


def okl_rotated(s: Array, Yt: Array, lam, L0: Array, max_iter: int, tol) -> tuple:
    """Algorithm 1 in the eigenbasis of K (pure, jittable; no input checks).

    Args:
      s: (n,) eigenvalues of K; Yt: (n, d) UᵀY; lam: λ; L0: (d, d) starting L (0 in the paper);
      max_iter: iteration cap (static); tol: relative stopping tolerance.

    Returns:
      (C̃ (n, d), L (d, d), objective (max_iter,), residual (max_iter,), n_iter, converged).
    """
    dtype = Yt.dtype
    y_norm = jnp.maximum(jnp.linalg.norm(Yt), jnp.finfo(dtype).tiny)
    nan = jnp.full((max_iter,), jnp.nan, dtype)

    def cond(carry):
        _, _, it, res, _, _ = carry
        return (it < max_iter) & (res >= tol)

    def body(carry):
        _, L, it, _, objs, ress = carry
        Ct = _sylvester_rotated(s, Yt, L, lam)                 # line 3
        sC = s[:, None] * Ct                                    # UᵀE, E = KC (line 4)
        L_new = _l_step(sC.T @ sC, Ct.T @ sC, L, lam)          # lines 5–7
        res = jnp.linalg.norm(sC @ (L_new - L)) / y_norm        # ‖Z + λC − Y‖, line 2 (Z = EL, line 8)
        R = Yt - sC @ L_new
        obj = jnp.sum(R * R) / (2.0 * lam) + jnp.sum((Ct.T @ sC) * L_new) / 2.0 + jnp.sum(L_new**2) / 2.0
        return Ct, L_new, it + 1, res, objs.at[it].set(obj), ress.at[it].set(res)

    init = (jnp.zeros_like(Yt), jnp.asarray(L0, dtype), jnp.asarray(0), jnp.asarray(jnp.inf, dtype), nan, nan)
    _, L, it, res, objs, ress = jax.lax.while_loop(cond, body, init)
    Ct = _sylvester_rotated(s, Yt, L, lam)  # C consistent with the final L (eq. 6)
    return Ct, L, objs, ress, it, res < tol


@partial(jax.jit, static_argnames=("max_iter",))
def _okl_full(K, Y, lam, L0, max_iter, tol):
    s, U = jnp.linalg.eigh(K)
    s = jnp.maximum(s, 0.0)
    Ct, L, objs, ress, it, conv = okl_rotated(s, U.T @ Y, lam, L0, max_iter, tol)
    return OKLResult(U @ Ct, L, objs, ress, it, conv)


def output_basis(Y: Array, rank: int) -> Array:
    """(d, rank) top right singular vectors of Y: the basis W of the low-rank variant.

    Example:
        >>> output_basis(jnp.eye(3), 2).shape
        (3, 2)
    """
    _, _, Vt = jnp.linalg.svd(Y, full_matrices=False)
    return Vt[:rank].T


def output_kernel_learning(K, Y, lam, *, L0=None, max_iter: int = 200, tol: float = 1e-8,
                           rank: int | None = None) -> OKLResult:
    """Learn the output kernel L and the coefficients C: Algorithm 1 of [DOGP11], jitted.

    One ``eigh`` of K, then ``lax.while_loop`` over block coordinate descent iterations in K's
    eigenbasis (see the module docstring). Works in the dtype of K and Y (float32 or float64).

    Args:
      K: (n, n) symmetric PSD Gram matrix.
      Y: (n, d) outputs.
      lam: λ > 0 of objective (3).
      L0: (d, d) starting output kernel (default 0, as line 1 of Algorithm 1; pass the previous
        solution to warm-start a λ path).
      max_iter: iteration cap.
      tol: stop when ‖Z + λC − Y‖_F < tol·‖Y‖_F.
      rank: None for the full d × d kernel, or r < d for the low-rank variant L = W M Wᵀ.

    Returns:
      :class:`OKLResult` (``output_kernel`` is d × d in both cases).

    Example:
        >>> K = jnp.eye(3); Y = jnp.eye(3)[:, :2]
        >>> output_kernel_learning(K, Y, 0.5).coef.shape
        (3, 2)
    """
    K = as_float_array(K, "K", ndim=2)
    Y = as_float_array(Y, "Y", ndim=2)
    n, d = Y.shape
    if K.shape != (n, n):
        raise ShapeError(f"K must be ({n}, {n}) to match Y of shape {Y.shape}; received {K.shape}.")
    lam = check_positive(lam, "lam")
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_positive(tol, "tol")
    dtype = np.result_type(K.dtype, Y.dtype)
    if rank is not None:
        rank = check_int(rank, "rank", minimum=1)
        if rank > d:
            raise ParameterError(f"rank must be at most the number of outputs {d}; received {rank}.")
    r = d if rank is None else rank
    if L0 is None:
        L0 = np.zeros((r, r), dtype)
    else:
        L0 = as_float_array(L0, "L0", ndim=2)
        if L0.shape != (r, r):
            raise ShapeError(f"L0 must be ({r}, {r}); received {L0.shape}.")
    Kj, Yj = jnp.asarray(K, dtype), jnp.asarray(Y, dtype)
    if rank is None:
        return _okl_full(Kj, Yj, lam, jnp.asarray(L0, dtype), max_iter, tol)
    W = output_basis(Yj, rank)
    res = _okl_full(Kj, Yj @ W, lam, jnp.asarray(L0, dtype), max_iter, tol)
    coef = res.coef @ W.T + (Yj - (Yj @ W) @ W.T) / lam
    return res._replace(coef=coef, output_kernel=W @ res.output_kernel @ W.T)


def okl_path(s: Array, U: Array, Y: Array, lambdas: Array, K_eval: Array, max_iter: int, tol,
             emit=None):
    """Algorithm 1 along a decreasing λ path, each λ warm-started from the previous L ([DOGP11] §5.1).

    Pure and jittable (``lax.scan`` over λ, ``lax.while_loop`` inside); the caller vmaps it over
    folds (masked K) and maps it over kernels.

    Args:
      s, U: eigensystem of the training Gram K (n × n); Y: (n, d); lambdas: (P,) decreasing;
      K_eval: (m, n) cross-Gram of the evaluation inputs; max_iter (static), tol: as
      :func:`output_kernel_learning`; emit: function of the (m, d) predictions K_eval C L
      returning a pytree (default: the predictions themselves).

    Returns:
      the stacked ``emit`` outputs, leading axis P.
    """
    Yt = U.T @ Y
    KU = K_eval @ U
    emit = (lambda F: F) if emit is None else emit

    def step(L, lam):
        Ct, L, *_ = okl_rotated(s, Yt, lam, L, max_iter, tol)
        return L, emit(KU @ Ct @ L)

    d = Y.shape[1]
    _, out = jax.lax.scan(step, jnp.zeros((d, d), Y.dtype), lambdas)
    return out
