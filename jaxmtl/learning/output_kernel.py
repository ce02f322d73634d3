r"""Output kernel learning by block coordinate descent ([DOGP11] Algorithm 1, with a cube-root step).

[DOGP11] F. Dinuzzo, C. S. Ong, P. Gehler, G. Pillonetto, *Learning output kernels with block
coordinate descent*, ICML 2011.

The model is g(x) = L Σ_i c_i K(x, x_i) with kernel H = K·L (§3.2) and the output kernel L ⪰ 0
is learned with the coefficients C (n, d) by minimising objective (3)

    Q(L, C) = ‖Y − K C L‖²_F / (2λ) + ⟨Cᵀ K C, L⟩_F / 2 + ‖L‖²_F / 2,

invex (Theorem 3.3: every stationary point is a global minimiser). Algorithm 1 alternates

* the C step: the discrete-time Sylvester equation K C L + λ C = Y (eq. 6);
* the L step (Lemma 4.1): E = K C, P = ½ EᵀC − L, (EᵀE + λI) Q = P, L ← L + λQ (eq. 8) —
  here its symmetric counterpart, see below,

stopping when ‖Z + λC − Y‖_F < δ with Z = E L (line 2).

Departures from the paper, and why:

* The Sylvester step is not solved by SLICOT per iteration: K = U diag(s) Uᵀ is decomposed once
  and every quantity is carried in its eigenbasis, C̃ = UᵀC. With L = V diag(a) Vᵀ,
  C̃ = [(UᵀY V) ⊘ (s aᵀ + λ)] Vᵀ, and since U is orthogonal EᵀE = C̃ᵀ diag(s²) C̃,
  EᵀC = C̃ᵀ diag(s) C̃ and ‖Z + λC − Y‖ = ‖diag(s) C̃ (L_new − L_old)‖: after the one n³
  eigendecomposition an iteration costs O(n d² + d³) — no n × n product at all. C = U C̃ is
  formed once at the end.
* δ is relative: the loop stops when ‖Z + λC − Y‖_F < ``tol``·‖Y‖_F (the paper's δ is absolute).
* The L step minimises Q(·, C) over *symmetric* matrices, not over all square matrices.
  Lemma 4.1 states that the minimiser over all d × d matrices, L_p + λ(EᵀE + λI)⁻¹P, is
  symmetric; it is not in general ((EᵀE + λI)⁻¹ EᵀC is a product of two symmetric matrices that
  do not commute), already at the first iteration from L = 0. Iterated as written, the paper's
  update does not break down — on five random 10 × 3 problems it reaches the same minimiser (to
  10⁻¹³ after 20 000 iterations) — but its iterates lose symmetry (‖L − Lᵀ‖/‖L‖ up to 1.6 after 10
  iterations at λ = 0.03), leave the PSD cone, and converge slowly and not monotonically: Q rose
  in 500–880 of the 20 000 iterations at λ = 0.03 (40–100 at λ = 0.3), and L was still 10⁻⁵–10⁻⁴
  from the minimiser after 1000 iterations, where the iteration below takes 27–44. Symmetrising
  it afterwards, ½(L + Lᵀ), is not a minimiser of Q(·, C) either, and the objective is then not
  monotone. The exact minimiser over symmetric L solves
  Q + (A Q + Q A)/(2λ) = P with A = EᵀE, P = ½EᵀC − L_p, L = L_p + Q: in the eigenbasis of
  A = V diag(α) Vᵀ, Q̃_ij = P̃_ij / (1 + (α_i + α_j)/(2λ)) — the paper's factor 1/(1 + α_i/λ) with
  the row and column eigenvalues averaged, O(d³). From L = 0 it is PSD (a Schur product of the
  PSD matrices ½EᵀC and the Cauchy matrix 2λ/(2λ + α_i + α_j)), but not from every PSD L_p:
  when a step leaves the PSD cone it is shortened, L_p + tQ with
  t halved until L is PSD: Q(·, C) is convex, so every t ∈ [0, 1] still decreases it (when no
  t ≥ 2⁻⁴⁰ is PSD the negative part is round-off along the null space of L_p, and the full step
  is projected on the PSD cone instead).
  With C minimised out, Q(L, C(L)) = ½ vec(Y)ᵀ(L ⊗ K + λI)⁻¹ vec(Y) + ½‖L‖²_F =: f(L) is
  convex on the PSD cone, Q(·, C(L_p)) ≥ f with equality at L_p, so each iteration is a
  majorise-minimise step on f: the objective never increases, and the fixed point
  L = ½CᵀKC, KCL + λC = Y (∇f = 0) is the global minimiser (Theorem 3.3).
* A second candidate per iteration. The L step is a gradient step on f preconditioned by the
  curvature of the majoriser, whose factor 1/(1 + α/λ) is tiny when ‖KC‖² ≫ λ: for small λ
  Algorithm 1 converges at a linear rate of about 1 − λ/‖KC‖² (thousands of iterations on
  the 5 %-training problems of §5.1 at the smaller λ of the path). Each iteration therefore also
  forms L' = (L G L)^{1/3} with G = ½CᵀKC (PSD, with the same fixed point L = G) — as λ → 0,
  G = ½L⁻¹(YᵀK⁻¹Y)L⁻¹ and L' = (½YᵀK⁻¹Y)^{1/3} is the exact minimiser in one step; for large λ,
  G hardly depends on L — and keeps whichever of L_new, L' has the lower f. f never increases
  (the L step alone already decreases it), so every guarantee above is kept, and the iteration
  counts drop from thousands to tens. The cost per iteration is O(n d² + d³) as before (two
  Sylvester solves in the eigenbasis instead of one). So the iteration is not Algorithm 1 alone:
  at small λ it is mostly the cube-root step (from L = 0 the cube root is 0, so the first step is
  always the L step; on five random 10 × 3 problems the cube-root candidate was the better one in
  54 of 108 iterations at λ = 0.03, 38 of 139 at λ = 0.3 — the decisive early ones, e.g. f = 9.3
  against 126 for the L step at the second iterate — and in none of 73 at λ = 3). The code and the
  benchmarks call it "block coordinate descent with a cube-root step".
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
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import as_float_array, check_int, check_positive
from .._jit import jit
from ..errors import ParameterError, ShapeError
from ..linalg import clip_psd, eigh, eigvalsh
from ..products import full_precision

__all__ = [
    "OKLResult",
    "okl_objective",
    "okl_path",
    "okl_rotated",
    "output_basis",
    "output_kernel_learning",
    "output_kernel_update",
    "sylvester_step",
]

Array = jax.Array


class OKLResult(NamedTuple):
    """Result of :func:`output_kernel_learning`.

    Attributes:
      coef: (n, d) coefficients C.
      output_kernel: (d, d) learned output kernel L (symmetric PSD).
      objective: (max_iter,) Q(L, C) after each iteration, C solving eq. (6) for L (NaN after
        the last); non-increasing.
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


@full_precision
def okl_objective(K: Array, Y: Array, C: Array, L: Array, lam: ArrayLike) -> Array:
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
    a, V = eigh(0.5 * (L + L.T))
    a = clip_psd(a)
    return ((Yt @ V) / (s[:, None] * a[None, :] + lam)) @ V.T


@full_precision
def sylvester_step(s: Array, U: Array, Y: Array, L: Array, lam: ArrayLike) -> Array:
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


@full_precision
def output_kernel_update(K: Array, C: Array, L_prev: Array, lam: ArrayLike) -> Array:
    """The L step of Algorithm 1 (lines 4–7): L = argmin over symmetric PSD L of Q(L, C).

    E = KC, A = EᵀE, P = ½EᵀC − L_p; L = L_p + Q with Q + (AQ + QA)/(2λ) = P, the exact
    minimiser of Q(·, C) over symmetric matrices (the paper's eq. 8, (A + λI)Q = λP, is the
    minimiser over all matrices and is not symmetric; see the module docstring). When that step
    leaves the PSD cone it is shortened to L_p + tQ, t halved until L is PSD (still a decrease
    of Q(·, C), which is convex).

    Args:
      K: (n, n); C: (n, d) from the Sylvester step with ``L_prev``; L_prev: (d, d) PSD; lam: λ.

    Returns:
      (d, d) L, symmetric PSD.

    Example:
        >>> output_kernel_update(jnp.eye(1), jnp.ones((1, 1)), jnp.zeros((1, 1)), 1.0)
        Array([[0.25]], dtype=float32)
    """
    E = K @ C
    return _l_step(E.T @ E, E.T @ C, L_prev, lam)


def _psd_part(M: Array) -> Array:
    """The PSD matrix nearest to the symmetric part of M (negative eigenvalues set to 0)."""
    w, V = eigh(0.5 * (M + M.T))
    return (V * jnp.maximum(w, 0.0)) @ V.T


def _l_step(EtE: Array, EtC: Array, L_prev: Array, lam) -> Array:
    alpha, V = eigh(0.5 * (EtE + EtE.T))
    alpha = jnp.maximum(alpha, 0.0)
    P = 0.25 * (EtC + EtC.T) - L_prev
    D = V @ ((V.T @ P @ V) / (1.0 + (alpha[:, None] + alpha[None, :]) / (2.0 * lam))) @ V.T
    D = 0.5 * (D + D.T)
    slack = jnp.sqrt(jnp.finfo(D.dtype).eps)  # round-off below this is projected away, not backtracked

    def psd(t):
        ev = eigvalsh(L_prev + t * D)
        return ev[0] >= -slack * jnp.maximum(jnp.max(jnp.abs(ev)), jnp.finfo(D.dtype).tiny)

    # the full step when it stays PSD, else halved; when no halving (down to 2⁻⁴⁰) is PSD the
    # negative part is round-off along L_prev's null space (e.g. from L = 0 with an ill-conditioned
    # K): the full step, projected on the PSD cone
    one = jnp.asarray(1.0, D.dtype)
    t, ok = jax.lax.while_loop(lambda c: (c[0] > 2.0**-40) & ~c[1], lambda c: (0.5 * c[0], psd(0.5 * c[0])),
                               (one, psd(one)))
    return _psd_part(L_prev + jnp.where(ok, t, 1.0) * D)


def _cube_root_step(sC: Array, Ct: Array, L: Array) -> Array:
    """(L G L)^{1/3} with G = ½CᵀKC: the fixed point L = G, exact as λ → 0 (see the module docstring)."""
    G = 0.5 * (Ct.T @ sC)
    M = L @ (0.5 * (G + G.T)) @ L
    w, V = eigh(0.5 * (M + M.T))
    return (V * jnp.cbrt(jnp.maximum(w, 0.0))) @ V.T


def _reduced_objective(Yt: Array, Ct: Array, L: Array) -> Array:
    """f(L) = Q(L, C(L)) = ½⟨Y, C⟩ + ½‖L‖²_F when C solves eq. (6) for L."""
    return 0.5 * jnp.sum(Yt * Ct) + 0.5 * jnp.sum(L * L)


@full_precision
def okl_rotated(s: Array, Yt: Array, lam: ArrayLike, L0: Array, max_iter: int, tol: ArrayLike) -> tuple:
    """Algorithm 1 in the eigenbasis of K (pure, jittable; no input checks).

    Each iteration forms two candidates from (L, C(L)): the L step of Algorithm 1
    (:func:`output_kernel_update`) and the cube-root step (L G L)^{1/3}; it keeps the one with the
    lower objective Q(L, C(L)) (the first never increases it) and solves eq. (6) for it.

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
        Ct, L, it, _, objs, ress = carry                       # Ct solves eq. (6) for L (line 3)
        sC = s[:, None] * Ct                                    # UᵀE, E = KC (line 4)
        L_bcd = _l_step(sC.T @ sC, Ct.T @ sC, L, lam)          # lines 5–7
        L_cbrt = _cube_root_step(sC, Ct, L)
        C_bcd = _sylvester_rotated(s, Yt, L_bcd, lam)
        C_cbrt = _sylvester_rotated(s, Yt, L_cbrt, lam)
        f_bcd = _reduced_objective(Yt, C_bcd, L_bcd)
        f_cbrt = _reduced_objective(Yt, C_cbrt, L_cbrt)
        take = f_cbrt < f_bcd
        L_new = jnp.where(take, L_cbrt, L_bcd)
        res = jnp.linalg.norm(sC @ (L_new - L)) / y_norm        # ‖Z + λC − Y‖, line 2 (Z = EL, line 8)
        return (jnp.where(take, C_cbrt, C_bcd), L_new, it + 1, res, objs.at[it].set(jnp.minimum(f_bcd, f_cbrt)),
                ress.at[it].set(res))

    L0 = jnp.asarray(L0, dtype)
    init = (_sylvester_rotated(s, Yt, L0, lam), L0, jnp.asarray(0), jnp.asarray(jnp.inf, dtype), nan, nan)
    Ct, L, it, res, objs, ress = jax.lax.while_loop(cond, body, init)
    return Ct, L, objs, ress, it, res < tol


@partial(jit, static_argnames=("max_iter",))
def _okl_full(K, Y, lam, L0, max_iter, tol):
    s, U = eigh(K)
    s = clip_psd(s)
    Ct, L, objs, ress, it, conv = okl_rotated(s, U.T @ Y, lam, L0, max_iter, tol)
    return OKLResult(U @ Ct, L, objs, ress, it, conv)


@full_precision
def output_basis(Y: Array, rank: int) -> Array:
    """(d, rank) top right singular vectors of Y: the basis W of the low-rank variant.

    Example:
        >>> output_basis(jnp.eye(3), 2).shape
        (3, 2)
    """
    _, _, Vt = jnp.linalg.svd(Y, full_matrices=False)
    return Vt[:rank].T


@full_precision
def output_kernel_learning(K: ArrayLike, Y: ArrayLike, lam: float, *, L0: ArrayLike | None = None,
                           max_iter: int = 200, tol: float = 1e-8,
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


@full_precision
def okl_path(s: Array, U: Array, Y: Array, lambdas: Array, K_eval: Array, max_iter: int, tol: ArrayLike,
             emit: Callable[[Array], Any] | None = None) -> Any:
    """Algorithm 1 along a decreasing λ path, each λ warm-started from the previous L ([DOGP11] §5.1).

    Pure and jittable (``lax.scan`` over λ, ``lax.while_loop`` inside); the caller vmaps it over
    folds and maps it over kernels. Cost beyond the eigendecomposition: per λ, the iterations
    (O(n d² + d³) each) and C = U C̃, K_eval C (O((n + m) n d)); K_eval U (m n², more than the
    whole path when P d < n) is never formed.

    Args:
      s, U: eigensystem of the training Gram K (n × n); Y: (n, d); lambdas: (P,) decreasing;
      K_eval: (m, n) cross-Gram of the evaluation inputs; max_iter (static), tol: as
      :func:`output_kernel_learning`; emit: function of the (m, d) predictions K_eval C L
      returning a pytree (default: the predictions themselves).

    Returns:
      the stacked ``emit`` outputs, leading axis P.

    Example:
        >>> K = jnp.eye(3) + 0.5; s, U = jnp.linalg.eigh(K)
        >>> okl_path(s, U, jnp.eye(3)[:, :2], jnp.array([1.0, 0.1]), K[:1], 50, 1e-6).shape
        (2, 1, 2)
    """
    Yt = U.T @ Y
    emit = (lambda F: F) if emit is None else emit

    def step(L, lam):
        Ct, L, *_ = okl_rotated(s, Yt, lam, L, max_iter, tol)
        return L, emit(K_eval @ (U @ Ct) @ L)

    d = Y.shape[1]
    _, out = jax.lax.scan(step, jnp.zeros((d, d), Y.dtype), lambdas)
    return out
