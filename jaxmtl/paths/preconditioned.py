r"""Paths on approximate (low-rank) kernels: the eigen path through the D × D problem, and
Falkon's preconditioned conjugate-gradient path for Nyström ridge regression.

**Eigen path in feature space.** For K ≈ ΦΦᵀ (Φ of n × D: Nyström or random features,
[Din11] F. Dinuzzo, *Learning functions with kernel methods*, PhD thesis, 2011, §1.6.3) every
spectral filter of [BRBV11] (L. Baldassarre, L. Rosasco, A. Barla, A. Verri, *Multi-output
learning via spectral filtering*, 2011) §3 acts through ΦᵀΦ, since Φᵀ g(ΦΦᵀ/n) = g(ΦᵀΦ/n) Φᵀ:
with ΦᵀΦ/n = Q diag(s) Qᵀ and A = V diag(a) Vᵀ the predictions of eq. (28) become

    F(x) = φ(x) Q [ g(s aᵀ) ∘ Z ] diag(a) Vᵀ,      Z = Qᵀ Φᵀ Y V / n,

an O(D³) eigenproblem instead of O(n³). The k-fold validation loss of every filter parameter and
every output matrix of a family sharing V is computed from per-fold sufficient statistics
(:func:`~jaxmtl.operators.nystrom.feature_statistics`: Φ_gᵀΦ_g, Φ_gᵀY_g, Y_gᵀY_g), so held-out
predictions are never formed: ‖F_h − Y_h‖² = Σ_j m_jᵀ (QᵀΦ_hᵀΦ_hQ) m_j − 2 m_jᵀ (QᵀΦ_hᵀY_hV)_j
+ tr(Y_hᵀY_h) with m_j the j-th column of g∘Z∘a — O(D²d) per parameter, whatever n.

**Falkon.** [RCR17] A. Rudi, L. Carratino, L. Rosasco, *FALKON: An optimal large scale kernel
method*, NIPS 2017, Alg. 1: the Nyström ridge system (K_nmᵀK_nm + nλK_mm) α = K_nmᵀ y is solved
by conjugate gradient with the preconditioner B = T⁻¹A⁻¹/√n, T = chol(K_mm), A =
chol(TTᵀ/m + λI), so that BᵀHB ≈ I whatever λ and the conditioning of K: the number of steps
does not grow with the condition number (tests/test_scale.py measures it). For K ⊗ A we rotate
the outputs on the eigenvectors of A, and direction j solves (a_j K_nmᵀK_nm + nλK_mm) α_j =
K_nmᵀ ỹ_j with A_j a square root of a_j TTᵀ/m + λI — our extension of Alg. 1 to separable kernels.
Every λ of the path and every output direction run in lock step: one pass over the data per
step (K_nm recomputed in row blocks, memory O(block·m + m² + P·d·m) whatever n), in one ``lax.scan``.
Departures: T is the eigen square root of K_mm + m·eps·I (Falkon's jitter) = Q Σ² Qᵀ, T = ΣQᵀ, not
its Cholesky factor: TTᵀ = Σ² is diagonal, so A_c, the root of a_c TTᵀ/m + λ_c I, is diagonal for
every column, and one eigendecomposition of K_mm is the whole preconditioner (no m × m factor per
column, no second decomposition). BBᵀ = [a_c K̃²/m + λ_c K̃]⁻¹/n (K̃ = K_mm + m·eps·I) whichever
square root T is, so the CG iterates are [RCR17]'s in exact arithmetic (tests/test_scale.py checks
them against Alg. 1 with Cholesky factors, one per column). CG runs in B's coordinates: a step is one pass over
the rows and three m × m products with the P·d columns (B, Bᵀ and K_mm); the Cholesky form adds two
triangular solves a step. The system itself keeps the exact K_mm, not the jittered one, so CG
converges to the exact Nyström solution.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.kernels import Gaussian
    >>> X = jnp.linspace(0.0, 1.0, 40)[:, None]; Y = jnp.sin(3 * X)
    >>> res = falkon_path(Gaussian(0.3), X[::4], X, Y, jnp.eye(1), jnp.array([1e-3, 1e-6]), 10)
    >>> res.coef.shape, res.residuals.shape
    ((2, 10, 1), (2, 1, 10))
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from .._jit import jit
from ..filters.spectral import SpectralFilter
from ..kernels.scalar import Kernel
from ..linalg import clip_psd, eigh
from ..operators.blocked import blocked_kernel_matmul, pad_rows
from ..operators.nystrom import FeatureStatistics
from .eigen import check_consecutive_steps, mse_loss, path_map
from ..products import full_precision

__all__ = ["FalkonResult", "falkon_path", "feature_coefficients", "feature_holdout_losses", "feature_kfold_losses",
           "feature_path_coefficients"]

Array = jax.Array


def _eig_train(G: Array, B: Array, n, V: Array):
    s, Q = eigh(0.5 * (G + G.T) / n)
    return clip_psd(s), Q, Q.T @ B @ V / n


@full_precision
def feature_kfold_losses(stats: FeatureStatistics, a: Array, V: Array, filt: SpectralFilter,
                         params: Array, report: Array | None = None) -> Array:
    """k-fold mean squared validation loss along the path of a low-rank kernel ΦΦᵀ ⊗ A_ω.

    Fold g trains on every group but g and scores group g (statistics from
    :func:`~jaxmtl.operators.nystrom.feature_statistics` with one group per fold). Folds and
    output matrices are vmapped, filter parameters vmapped or scanned (:func:`path_map`);
    τ of iterative filters is 1/σ_max of each fold's Γ/n, as on the exact eigen path.

    Args:
      stats: :class:`FeatureStatistics` with k ≥ 2 groups; a: (Ω, d) eigenvalues of the output matrices, V: (d, d) their
        common eigenvectors; filt: spectral filter (static); params: (P,) λ or steps 1..T;
        report: optional (T,) booleans, the steps to evaluate (zeros elsewhere; :func:`path_map`).

    Returns:
      (k, Ω, P) losses Σ_held ‖F − Y‖² / (n_held·d).

    Example:
        >>> import numpy as np
        >>> from jaxmtl.kernels import Gaussian
        >>> from jaxmtl.operators.nystrom import NystromFeatures, feature_statistics
        >>> from jaxmtl.filters import Tikhonov
        >>> X = jnp.linspace(0, 1, 30)[:, None]; Y = jnp.sin(4 * X)
        >>> fm = NystromFeatures.fit(Gaussian(0.3), X, 8)
        >>> st = feature_statistics(fm, X, Y, np.arange(30) % 3, 3)
        >>> feature_kfold_losses(st, jnp.ones((1, 1)), jnp.eye(1), Tikhonov(), jnp.array([1e-2, 1e-4])).shape
        (3, 1, 2)
    """
    if filt.iterative:
        check_consecutive_steps(params)
    return _feature_kfold_losses(stats, a, V, filt, params, report)


def _held_out_losses(Gt, Bt, nt, Gh, Bh, Sh, a, V, filt, params, report=None):
    """(Ω, P, d) Σ_held (F − Y)² of each output, trained on (Gt, Bt, nt).

    F = Φ_h Q M Vᵀ with M = g ∘ Z ∘ a, so the error's d × d cross-product is
    V MᵀHM Vᵀ − V MᵀR − RᵀM Vᵀ + S_h (H = QᵀG_hQ, R = QᵀB_h): O(D²d) per parameter.
    """
    s, Q, Z = _eig_train(Gt, Bt, nt, V)
    H = Q.T @ Gh @ Q
    R = Q.T @ Bh
    yy = jnp.diagonal(Sh)

    def emit(M):
        fit = jnp.sum((V @ (M.T @ H @ M)) * V, axis=1)  # diag(V MᵀHM Vᵀ)
        return fit - 2.0 * jnp.sum(V * (M.T @ R).T, axis=1) + yy

    return _along_path(s, Z, a, filt, params, report, emit)


def _along_path(s, Z, a, filt, params, report, emit):
    """(Ω, P, …) ``emit(M)`` for every output matrix (row of a) and filter parameter, with
    M = g(s aᵀ) ∘ Z ∘ a (D, d) the rotated coefficients of F = φ Q M Vᵀ."""

    def one_output_matrix(av):
        sigma = s[:, None] * av[None, :]
        tau = 1.0 / jnp.maximum(jnp.max(sigma), jnp.finfo(sigma.dtype).tiny)
        return path_map(filt, sigma, params, tau, lambda g: emit(g * Z * av[None, :]), report)

    return jax.vmap(one_output_matrix)(a)


@partial(jit, static_argnames=("filt", "per_output"))
def _feature_kfold_losses(stats, a, V, filt, params, report=None, per_output=False):
    """(k, Ω, P) losses of :func:`feature_kfold_losses`; with ``per_output`` (k, Ω, P, d), each
    output's Σ_held (F − Y)² / (n_held·d) (they sum to the former)."""
    G, B = stats.G, stats.B
    Gt, Bt, nt = G.sum(0), B.sum(0), stats.counts.sum()
    d = V.shape[0]

    def one_fold(Gh, Bh, Sh, nh):
        losses = _held_out_losses(Gt - Gh, Bt - Bh, nt - nh, Gh, Bh, Sh, a, V, filt, params, report) / (nh * d)
        return losses if per_output else losses.sum(-1)

    return jax.vmap(one_fold)(G, B, stats.S, stats.counts)


@full_precision
def feature_holdout_losses(train: FeatureStatistics, held: FeatureStatistics, a: Array, V: Array,
                           filt: SpectralFilter, params: Array, report: Array | None = None) -> Array:
    """Hold-out mean squared loss of every output along the path of ΦΦᵀ ⊗ A_ω.

    The model trains on every group of ``train`` and is scored on every group of ``held``
    (e.g. a validation file streamed by :func:`~jaxmtl.operators.streaming.stream_statistics`):
    one D × D eigendecomposition serves every parameter and output matrix, and held-out
    predictions are never formed (the identity of :func:`feature_kfold_losses`).

    Args:
      train, held: :class:`FeatureStatistics` (groups summed); a: (Ω, d) eigenvalues of the
        output matrices, V: (d, d) their common eigenvectors; filt: spectral filter (static);
        params: (P,) λ or steps 1..T; report: optional (T,) booleans (iterative filters).

    Returns:
      (Ω, P, d) losses Σ_held (F_j − Y_j)² / n_held of each output j (with A = I the per-output
      family picks each output's own parameter from them); their mean over the last axis is the
      mean loss.

    Example:
        >>> from jaxmtl.kernels import Gaussian
        >>> from jaxmtl.operators.nystrom import NystromFeatures, feature_statistics
        >>> from jaxmtl.filters import Tikhonov
        >>> X = jnp.linspace(0, 1, 30)[:, None]; Y = jnp.sin(4 * X)
        >>> fm = NystromFeatures.fit(Gaussian(0.3), X, 8)
        >>> tr, va = feature_statistics(fm, X[::2], Y[::2]), feature_statistics(fm, X[1::2], Y[1::2])
        >>> feature_holdout_losses(tr, va, jnp.ones((1, 1)), jnp.eye(1), Tikhonov(), jnp.array([1e-2, 1e-4])).shape
        (1, 2, 1)
    """
    if filt.iterative:
        check_consecutive_steps(params)
    return _feature_holdout_losses(train, held, a, V, filt, params, report)


@partial(jit, static_argnames=("filt",))
def _feature_holdout_losses(train, held, a, V, filt, params, report=None):
    losses = _held_out_losses(train.G.sum(0), train.B.sum(0), train.counts.sum(), held.G.sum(0), held.B.sum(0),
                              held.S.sum(0), a, V, filt, params, report)
    return losses / held.counts.sum()


@full_precision
def feature_path_coefficients(stats: FeatureStatistics, a: Array, V: Array, filt: SpectralFilter, params: Array,
                              report: Array | None = None) -> Array:
    """(Ω, P, D, d) the whole path's coefficients on the features: F_{ω,p}(x) = φ(x) C[ω, p].

    C[ω, p] = Q [g_p(s a_ωᵀ) ∘ Z ∘ a_ω] Vᵀ, the output matrix A_ω = V diag(a_ω) Vᵀ included (the
    coefficients of :func:`feature_coefficients` times A_ω), from one D × D eigendecomposition of
    the training statistics. With them a hold-out set is scored by its predictions
    (:func:`~jaxmtl.operators.streaming.stream_holdout_losses`) at 2·D·Ω·P·d flops per row, where
    its statistics (:func:`feature_holdout_losses`) cost 2·D² per row, 4·D² with Nyström features
    (forming φ(x) costs 2·D² of them; predictions go through the centres instead): fewer where
    Ω·P·d < 2D.

    Args:
      stats: training statistics (groups summed); a: (Ω, d) eigenvalues of the output matrices,
        V: (d, d) their common eigenvectors; filt: spectral filter (static); params: (P,) λ or
        steps 1..T; report: optional (T,) booleans (iterative filters; zeros elsewhere).

    Example:
        >>> from jaxmtl.kernels import Gaussian
        >>> from jaxmtl.operators.nystrom import NystromFeatures, feature_statistics
        >>> from jaxmtl.filters import Tikhonov
        >>> X = jnp.linspace(0, 1, 30)[:, None]; Y = jnp.sin(4 * X)
        >>> fm = NystromFeatures.fit(Gaussian(0.3), X, 8)
        >>> C = feature_path_coefficients(feature_statistics(fm, X, Y), jnp.ones((1, 1)), jnp.eye(1), Tikhonov(),
        ...                               jnp.array([1e-2, 1e-4]))
        >>> C.shape
        (1, 2, 8, 1)
    """
    if filt.iterative:
        check_consecutive_steps(params)
    return _feature_path_coefficients(stats, a, V, filt, params, report)


@partial(jit, static_argnames=("filt",))
def _feature_path_coefficients(stats, a, V, filt, params, report=None):
    s, Q, Z = _eig_train(stats.G.sum(0), stats.B.sum(0), stats.counts.sum(), V)
    return _along_path(s, Z, a, filt, params, report, lambda M: Q @ M @ V.T)


@partial(jit, static_argnames=("filt",))
@full_precision
def feature_coefficients(stats: FeatureStatistics, a: Array, V: Array, filt: SpectralFilter, param: ArrayLike) -> Array:
    """(D, d) coefficients W on the features, trained on every group: F(x) = φ(x) W A.

    W = Q [g(s aᵀ) ∘ Z] Vᵀ for one filter parameter (a step count for iterative filters,
    τ = 1/σ_max). For Nyström, ``transform @ W`` are the centres' coefficients of
    f = Σ_l K(·, z_l) A α_l.

    Args:
      stats: statistics (any number of groups, all used); a: (d,) and V: (d, d)
      the output matrix's eigensystem; filt: filter (static); param: λ or t, or (d,) one per
      column of V (with A = I: each output its own parameter, one eigendecomposition for all).
    """
    s, Q, Z = _eig_train(stats.G.sum(0), stats.B.sum(0), stats.counts.sum(), V)
    sigma = s[:, None] * a[None, :]
    tau = 1.0 / jnp.maximum(jnp.max(sigma), jnp.finfo(sigma.dtype).tiny)
    if jnp.ndim(param) == 1:
        g = jax.vmap(lambda sig, p: filt(sig, p, tau), in_axes=(1, 0), out_axes=1)(sigma, jnp.asarray(param))
    else:
        g = filt(sigma, param, tau)
    return Q @ (g * Z) @ V.T


class FalkonResult(NamedTuple):
    """Result of :func:`falkon_path`.

    Attributes:
      coef: (P, m, d) centre coefficients per λ: f(x) = K(x, Z) coef[p] A.
      residuals: (P, d, T) relative residual ‖r_t‖/‖r_0‖ of the preconditioned system per step.
      losses: (P,) validation mean squared loss per λ (NaN without evaluation data).
    """

    coef: Array
    residuals: Array
    losses: Array


def _row_blocks(kernel, X, Z, block, acc0, add, *rows, n=None):
    """Σ over row blocks b of ``add(K(X_b, Z), *rows_b)``: K_nm never stored; ``rows``: (n, ·) arrays
    cut into the same blocks. Rows from ``n`` on (default all of X; may be traced: the real rows of
    a size bucket) are zeros in K(X_b, Z) and in ``rows``."""
    Xp, n_blocks = pad_rows(X, block)
    n = X.shape[0] if n is None else n
    w = (jnp.arange(n_blocks * block) < n).astype(acc0.dtype).reshape(n_blocks, block, 1)
    cut = [pad_rows(R, block)[0].reshape(n_blocks, block, -1) for R in rows]

    def body(acc, blk):
        Xb, wb, *rb = blk
        return acc + add(kernel(Xb, Z) * wb, *(R * wb for R in rb)), None

    out, _ = jax.lax.scan(body, acc0, (Xp.reshape(n_blocks, block, -1), w, *cut))
    return out


def _normal_product(kernel, X, Z, Vmat, block, n=None):
    """K_nmᵀ (K_nm V) for V (m, r), K_nm in row blocks of X (never stored); its first ``n`` rows."""
    return _row_blocks(kernel, X, Z, block, jnp.zeros_like(Vmat), lambda Kb: Kb.T @ (Kb @ Vmat), n=n)


def _transposed_product(kernel, X, Z, R, block, n=None):
    """K_nmᵀ R for R (n, r), K_nm in row blocks of X: memory O(block·m), whatever n; its first ``n`` rows."""
    return _row_blocks(kernel, X, Z, block, jnp.zeros((Z.shape[0], R.shape[1]), R.dtype), lambda Kb, Rb: Kb.T @ Rb,
                       R, n=n)


@full_precision
def falkon_path(kernel: Kernel, centres: ArrayLike, X: ArrayLike, Y: ArrayLike, A: ArrayLike, lambdas: ArrayLike,
                n_steps: int, X_eval: ArrayLike | None = None, Y_eval: ArrayLike | None = None,
                block_size: int = 2048, preconditioned: bool = True) -> FalkonResult:
    """Nyström ridge regression for every λ by Falkon's preconditioned CG ([RCR17] Alg. 1).

    Args:
      kernel: scalar kernel; centres: (m, p) Nyström centres Z; X: (n, p); Y: (n, d);
      A: (d, d) symmetric PSD output matrix; lambdas: (P,) λ > 0 (the normalisation of
      :mod:`jaxmtl.filters`: (a_j K_nmᵀK_nm + nλK_mm) α = K_nmᵀ ỹ); n_steps: CG steps (static);
      X_eval, Y_eval: optional validation data; block_size: rows of K_nm per block (static);
      preconditioned: False runs plain CG on the same system (the baseline of the tests).

    Returns:
      :class:`FalkonResult`.
    """
    X, Y, Z = jnp.asarray(X), jnp.asarray(Y), jnp.asarray(centres)
    Xe = None if X_eval is None else jnp.asarray(X_eval)
    Ye = None if Y_eval is None else jnp.asarray(Y_eval)
    return _falkon(kernel, Z, X, Y, jnp.asarray(A, Y.dtype), jnp.asarray(lambdas, Y.dtype), Xe, Ye,
                   int(n_steps), min(int(block_size), X.shape[0]), bool(preconditioned))


def _preconditioner(kernel, Z):
    """K_mm and the whitening W = QΣ⁻¹ with Σ² (m,) its eigenvalues: K_mm + m·eps·I = QΣ²Qᵀ (Falkon's
    jitter), so that T = ΣQᵀ and B = W diag(r_c⁻¹)/√n. W also whitens a fitted model's features.
    W's columns for the eigenvalues of K_mm at or below eps·e_max, which the working precision does
    not resolve, are zero (the cut of :meth:`~jaxmtl.operators.nystrom.NystromFeatures.from_centres`):
    CG then never moves along them, where float32 rounding otherwise grows without bound."""
    m = Z.shape[0]
    Kmm = kernel(Z, Z)
    ev, Q = eigh(Kmm)
    eps = jnp.finfo(Kmm.dtype).eps
    sig2 = clip_psd(ev) + m * eps
    resolved = ev > eps * jnp.max(ev)
    return Kmm, Q * jnp.where(resolved, jax.lax.rsqrt(sig2), 0.0)[None, :], sig2


def _system(kernel, X, Z, Kmm, weights, lams, block, n=None):
    """v (m, C) ↦ (w_c K_mn K_nm + nλ_c K_mm) v_c for every column c: one pass over the first ``n``
    rows of X (default all; may be traced, the rest padding)."""
    n = X.shape[0] if n is None else n
    scale = jnp.asarray(n, lams.dtype) * lams[None, :]
    return lambda v: weights[None, :] * _normal_product(kernel, X, Z, v, block, n) + scale * (Kmm @ v)


def _cg(op, rhs, n_steps):
    """``n_steps`` of conjugate gradient on op(x) = rhs for every column at once (from x = 0): the
    solution (m, C) and the relative residual ‖r_t‖/‖r_0‖ of every column and step (C, T)."""
    norm0 = jnp.maximum(jnp.linalg.norm(rhs, axis=0), jnp.finfo(rhs.dtype).tiny)

    def step(carry, _):
        x, r, p, rs = carry
        Mp = op(p)
        pMp = jnp.sum(p * Mp, axis=0)
        alpha = jnp.where(pMp > 0, rs / jnp.where(pMp > 0, pMp, 1.0), 0.0)
        x = x + alpha * p
        r = r - alpha * Mp
        rs_new = jnp.sum(r * r, axis=0)
        p = r + jnp.where(rs > 0, rs_new / jnp.where(rs > 0, rs, 1.0), 0.0) * p
        return (x, r, p, rs_new), jnp.sqrt(rs_new) / norm0

    (x, _, _, _), res = jax.lax.scan(step, (jnp.zeros_like(rhs), rhs, rhs, jnp.sum(rhs * rhs, axis=0)), None,
                                     length=n_steps)
    return x, res.T


def _whitened_cg(kernel, Z, X, Kmm, W, sig2, rhs, weights, lams, n_steps, block, n=None):
    """[RCR17] Alg. 1 for every column c of ``rhs`` (m, C) = K_mn ỹ: (w_c K_mn K_nm + nλ_c K_mm) α_c
    = rhs_c, with α = W c, on the first ``n`` rows of X (default all). Returns the whitened
    coefficients c (m, C) and the residuals (C, T)."""
    m = Z.shape[0]
    H = _system(kernel, X, Z, Kmm, weights, lams, block, n)
    root_n = jnp.sqrt(jnp.asarray(X.shape[0] if n is None else n, rhs.dtype))
    # A_c, the root of w_c TTᵀ/m + λ_c I with TTᵀ = Σ², is diag(r_c): B = W diag(1/r_c)/√n
    r_inv = jax.lax.rsqrt(sig2[:, None] * weights[None, :] / m + lams[None, :])  # (m, C)

    def whitened(q):  # c = A⁻¹ q/√n, so that α = B q = W c
        return r_inv * q / root_n

    beta, res = _cg(lambda q: r_inv * (W.T @ H(W @ whitened(q))) / root_n, r_inv * (W.T @ rhs) / root_n,
                    n_steps)
    return whitened(beta), res


@partial(jit, static_argnames=("n_steps", "block", "preconditioned"))
def _falkon(kernel, Z, X, Y, A, lambdas, Xe, Ye, n_steps, block, preconditioned):
    d = Y.shape[1]
    m = Z.shape[0]
    P = lambdas.shape[0]
    a, V = eigh(A)
    a = clip_psd(a)
    b = _transposed_product(kernel, X, Z, Y @ V, block)  # K_mn Ỹ  (m, d), in row blocks of X
    lam = jnp.repeat(lambdas, d)  # column c = (λ_p, direction j): p-major
    aj = jnp.tile(a, P)
    bcols = jnp.tile(b, (1, P))  # (m, P·d)
    if preconditioned:
        Kmm, W, sig2 = _preconditioner(kernel, Z)
        c, res = _whitened_cg(kernel, Z, X, Kmm, W, sig2, bcols, aj, lam, n_steps, block)
        alpha = W @ c
    else:
        alpha, res = _cg(_system(kernel, X, Z, kernel(Z, Z), aj, lam, block), bcols, n_steps)
    alpha_rot = alpha.reshape(m, P, d).transpose(1, 0, 2)  # (P, m, d) in the rotated outputs
    coef = alpha_rot @ V.T
    residuals = res.reshape(P, d, n_steps)
    if Xe is None:
        losses = jnp.full((P,), jnp.nan, Y.dtype)
    else:
        w = jnp.full((Xe.shape[0],), 1.0 / Xe.shape[0], Y.dtype)
        coefs = coef.transpose(1, 0, 2).reshape(m, P * d)
        F = blocked_kernel_matmul(kernel, Xe, Z, coefs, block).reshape(-1, P, d)
        losses = jax.vmap(lambda Fp: mse_loss(Fp @ A, Ye, w), in_axes=1)(F)
    return FalkonResult(coef, residuals, losses)
