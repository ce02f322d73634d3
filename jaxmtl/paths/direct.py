r"""The direct route: one Cholesky factor per grid point and output eigenvalue, for small grids.

In A's eigenbasis (A = V diag(a) Vᵀ, Ỹ = Y V) the separable Tikhonov system (K ⊗ A + nλI) vec C =
vec Y splits into d shifted n × n systems ([BRBV11] §4.2, eq. 28 read column by column):

    (a_j K + nλ I) c̃_j = ỹ_j,        C = C̃ Vᵀ,

so a grid point costs one Cholesky factor of M_j = a_j K + nλI per *distinct* a_j (n³/3 flops; a
repeated eigenvalue — A = I, or the d − 1 copies of 1 − ω in the common-similarity family — shares
its factor) against the ≈ 9n³ of the eigendecomposition the eigen route shares over the whole grid.
Which is cheaper depends on the grid: :mod:`jaxmtl.paths.routes` decides.

Iterated Tikhonov of order ν ([LRODV08] §5.4) solves ν times with the same factor:
c̃⁽ᵏ⁾ = M⁻¹(ỹ + nλ c̃⁽ᵏ⁻¹⁾), and the training residual is ỹ − a_jK c̃⁽ᵛ⁾ = nλ(c̃⁽ᵛ⁾ − c̃⁽ᵛ⁻¹⁾).

Leave-one-out and GCV through the factor: the hat matrix of output direction j is
H_j = I − (nλ M_j⁻¹)^ν, so 1 − diag(H_j) = (nλ)^ν diag(M_j⁻ᵛ). With W = L⁻¹ (M = LLᵀ, one
triangular inverse), M⁻¹ = WᵀW and, for Q = (WᵀW)^⌊ν/2⌋, diag(M⁻ᵛ) is the column sums of squares
of Q (ν even) or of WQ (ν odd) — for Tikhonov simply those of W. The leave-one-input-out residuals
are then E = (R̃ ⊘ (1 − D)) Vᵀ exactly as on the eigen path (:mod:`jaxmtl.selection.criteria`),
and GCV is ‖R̃‖²/(nd) / (Σ(1 − D)/(nd))².

The grid's (λ, distinct a_j) pairs run through ``lax.map`` one at a time: vmapped, XLA's CPU
Cholesky of a batch is several times slower than the same factors in turn (7 factors at n = 1000,
float64: 1.31 s against 0.37 s), and in turn a pair holds a few n × n arrays whatever the grid. What
a pair emits is small — its coefficients (n × d), kept so that the selected point needs no second
factor, and held-out predictions or the hat diagonal — and the per-ω assembly is vmapped.

A factor that fails (float32, an indefinite shifted Gram: NaN on the diagonal of L) is reported by
the ``ok`` flag every function returns; :func:`~jaxmtl.selection.regularization_path` then falls
back to the eigen route with a warning.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.filters import Tikhonov
    >>> K = jnp.eye(4) + 0.5; Y = jnp.ones((4, 2))
    >>> res = direct_losses(K, Y, jnp.ones(2), jnp.eye(2), Tikhonov(), jnp.array([0.1, 1.0]), "gcv")
    >>> res.losses.shape, bool(res.ok), res.coefficients(0, 1).shape
    ((2,), True, (4, 2))
"""

from __future__ import annotations

from functools import partial
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import is_traced
from .._jit import jit
from ..errors import ParameterError
from ..filters.spectral import IteratedTikhonov, SpectralFilter, Tikhonov
from .eigen import mse_loss

__all__ = ["direct_order", "output_groups", "distinct_count", "DirectPath", "direct_losses", "direct_kfold_losses", "direct_coefficients"]

Array = jax.Array
KINDS = ("holdout", "loo", "gcv")


def direct_order(filt: SpectralFilter) -> int:
    """The number ν of solves per factor of a filter with a direct form, else ParameterError.

    Tikhonov is ν = 1, iterated Tikhonov its order; subclasses (which may change the filter
    function) and every other filter have no direct form.

    Example:
        >>> direct_order(IteratedTikhonov(order=3))
        3
    """
    if type(filt) is Tikhonov:
        return 1
    if type(filt) is IteratedTikhonov:
        return filt.order
    raise ParameterError(f"route='direct' solves Tikhonov and IteratedTikhonov only (a Cholesky factor per grid "
                         f"point); received {type(filt).__name__}: use route='eigen' (any filter) or "
                         "'matrix_free' (iterative filters).")


def output_groups(a: ArrayLike, hint: np.ndarray | None = None) -> tuple[Array, Array]:
    """(values (U,), index (Ω, d)) of the distinct output eigenvalues: ``a[w, j] == values[index[w, j]]``.

    ``a`` of shape (d,) or (Ω, d). Concrete eigenvalues equal to within 8 ε · max|a| share one
    value (and so one Cholesky factor per grid point). Traced ones cannot be compared before
    tracing: ``hint``, concrete eigenvalues equal to ``a``'s up to rounding and in the same order
    (those of the concrete matrix ``a`` was computed from under ``jit``), groups them instead;
    without it each keeps its own.

    Example:
        >>> values, index = output_groups(jnp.array([[1.0, 1.0], [0.5, 1.0]]))
        >>> values.tolist(), index.tolist()
        ([0.5, 1.0], [[1, 1], [0, 1]])
    """
    a2 = jnp.atleast_2d(a)
    src = a if hint is None else hint
    if is_traced(src):
        return a2.reshape(-1), jnp.arange(a2.size).reshape(a2.shape)
    first, index = _distinct(np.asarray(src), a2.dtype)
    return a2.reshape(-1)[first], jnp.asarray(index, jnp.int32)


def _distinct(a: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray]:
    """(flat positions of the U distinct values, index (Ω, d) into them) of concrete eigenvalues
    ``a`` (d,) or (Ω, d), equal within 8 ε(dtype) · max|a|; NumPy only (no compiled call)."""
    host = np.atleast_2d(np.asarray(a, np.float64))
    tol = 8 * np.finfo(np.dtype(dtype)).eps * max(float(np.max(np.abs(host))), np.finfo(np.float64).tiny)
    order = np.argsort(host, axis=None, kind="stable")
    starts = np.r_[True, np.diff(host.reshape(-1)[order]) > tol]
    index = np.empty(host.size, np.int64)
    index[order] = np.cumsum(starts) - 1
    return order[starts], index.reshape(host.shape)


def distinct_count(a: np.ndarray, dtype) -> int:
    """The number of distinct concrete output eigenvalues (factors per grid point), as :func:`output_groups`.

    Example:
        >>> distinct_count(np.array([[1.0, 1.0], [0.5, 1.0]]), np.float32)
        2
    """
    return int(_distinct(a, dtype)[0].size)


def _factor(K, u, nlam):
    """(L, ok): the lower Cholesky factor of u K + nλ I, in the layout LAPACK reads.

    XLA's arrays are row-major and LAPACK's column-major, so every factor and triangular solve is
    fed a transposed copy unless its operand is made column-major where it is built: ``K.T`` (equal
    to K, which is symmetric) is exactly that layout, a free bitcast of K. The factor reads one
    triangle, so the input is not symmetrised ((M + Mᵀ)/2 is one more transposing pass); L stays
    column-major for the solves that follow. On the CPU backend each transposing copy of an
    n × n array costs about as much as a tenth of the factor at n = 2000 (strided reads);
    ``jnp.linalg.cholesky`` + ``cho_solve`` make several, which is what made the same factors
    slower here than as hand-written calls (see ``benchmarks/perf_routes.py``).
    """
    eye = jnp.eye(K.shape[0], dtype=K.dtype)
    L = jax.lax.linalg.cholesky(u * K.T + nlam * eye, symmetrize_input=False)
    return L, jnp.all(jnp.isfinite(jnp.diagonal(L)))


def _cho_solve(L, B):
    """M⁻¹ B from the lower factor L of M (two LAPACK triangular solves)."""
    Z = jax.lax.linalg.triangular_solve(L, B, left_side=True, lower=True)
    return jax.lax.linalg.triangular_solve(L, Z, left_side=True, lower=True, transpose_a=True)


def _pairs(K, Yt, n_eff, values, params, order, emit):
    """Map ``emit(c, R, L, nlam)`` over every (λ, value) pair in turn; results (P, U, ...), ok flags (P, U)."""

    def pair(x):
        lam, u = x
        nlam = n_eff * lam
        L, ok = _factor(K, u, nlam)
        solve = partial(_cho_solve, L)

        def step(_, cc):
            return cc[1], solve(Yt + nlam * cc[1])

        c_prev, c = jax.lax.fori_loop(0, order - 1, step, (jnp.zeros_like(Yt), solve(Yt)))
        return emit(c, nlam * (c - c_prev), L, nlam), ok

    P, U = params.shape[0], values.shape[0]
    out, ok = jax.lax.map(pair, (jnp.repeat(params, U), jnp.tile(values, P)))
    return jax.tree_util.tree_map(lambda x: x.reshape((P, U) + x.shape[1:]), out), ok.reshape(P, U)


def _one_minus_hat(L, nlam, order):
    """(n,) 1 − diag of the hat matrix, (nλ)^ν diag(M⁻ᵛ), from the Cholesky factor L of M."""
    W = jax.lax.linalg.triangular_solve(L, jnp.eye(L.shape[0], dtype=L.dtype), left_side=True, lower=True)
    if order > 1:
        B = W.T @ W
        Q = jax.lax.fori_loop(1, order // 2, lambda _, Q: Q @ B, B)
        W = W @ Q if order % 2 else Q
    return nlam**order * jnp.sum(W**2, axis=0)


def _gather(x, index):
    """x (P, U, ..., d) → (P, Ω, ..., d): column j of output matrix ω from its value's pair."""
    d = index.shape[1]
    moved = jnp.moveaxis(x, -1, 2)  # (P, U, d, ...)
    picked = moved[:, index, jnp.arange(d)[None, :]]  # (P, Ω, d, ...)
    return jnp.moveaxis(picked, 2, -1)


class DirectPath(NamedTuple):
    """The direct route's scored grid.

    Attributes:
      losses: (P,) or (Ω, P); ok: () False when a factor failed (NaN).
      pair_coef: (P, U, n, d) coefficients in A's eigenbasis of every (λ, distinct value) pair.
      output_index: (Ω, d) the distinct value of each output eigenvalue; V: (d, d) A's eigenvectors.
    """

    losses: Array
    ok: Array
    pair_coef: Array
    output_index: Array
    V: Array

    def coefficients(self, output: ArrayLike, point: ArrayLike) -> Array:
        """(n, d) coefficients C = C̃Vᵀ of output matrix ``output`` at grid point ``point``."""
        d = self.output_index.shape[1]
        Ct = self.pair_coef[point][self.output_index[output], :, jnp.arange(d)]  # (d, n)
        return Ct.T @ self.V.T


@partial(jit, static_argnames=("filt", "kind", "loss"))
def _direct_losses(K, Y, a, V, filt, params, kind, K_eval, Y_eval, w_eval, loss, n_eff, values, index):
    """(losses, ok, pair coefficients) of hold-out, LOO or GCV."""
    order = direct_order(filt)
    d = Y.shape[1]
    real = jnp.arange(Y.shape[0]) < n_eff  # LOO and GCV: the rows past n_eff are zero padding
    Yt = Y @ V
    a2 = jnp.atleast_2d(a)
    if kind == "holdout":
        (C, res), ok = _pairs(K, Yt, n_eff, values, params, order, lambda c, R, L, nlam: (c, K_eval @ c))
        F = _gather(res, index) * a2[None, :, None, :]  # (P, Ω, m, d) in the eigenbasis
        losses = jax.vmap(jax.vmap(lambda f: loss(f @ V.T, Y_eval, w_eval)))(F)
    elif kind == "loo":
        (C, R, D), ok = _pairs(K, Yt, n_eff, values, params, order,
                               lambda c, R, L, nlam: (c, R, _one_minus_hat(L, nlam, order)))
        R, D = _gather(R, index), _gather(jnp.broadcast_to(D[..., None], D.shape + (d,)), index)
        w = jnp.where(real, 1.0 / n_eff, 0.0).astype(Y.dtype)  # a padded row is never left out
        eps = 10 * jnp.finfo(Y.dtype).eps

        def loo(R, D):
            val = loss(Y - (R / jnp.maximum(D, eps)) @ V.T, Y, w)
            return jnp.where(jnp.all(D > eps) & jnp.isfinite(val), val, jnp.inf)

        losses = jax.vmap(jax.vmap(loo))(R, D)
    else:
        (C, rss, tr), ok = _pairs(K, Yt, n_eff, values, params, order, lambda c, R, L, nlam: (
            c, jnp.sum(R**2, axis=0), jnp.sum(jnp.where(real, _one_minus_hat(L, nlam, order), 0.0))))
        rss = _gather(rss, index).sum(-1)  # (P, Ω); a padded row's residual is 0
        trace = _gather(jnp.broadcast_to(tr[..., None], tr.shape + (d,)), index).sum(-1)
        denom = (trace / (n_eff * d)) ** 2
        val = rss / (n_eff * d) / denom
        losses = jnp.where((denom > 0) & jnp.isfinite(val), val, jnp.inf)
    losses = jnp.moveaxis(losses, 0, 1)  # (Ω, P[, ...]): a loss may return a vector (the classifiers' code losses)
    return (losses if a.ndim == 2 else losses[0]), jnp.all(ok), C


def direct_losses(K: Array, Y: Array, a: Array, V: Array, filt: SpectralFilter, params: Array, kind: str, *,
                  K_eval: Array | None = None, Y_eval: Array | None = None, w_eval: Array | None = None,
                  loss: Callable = mse_loss, n: Array | None = None,
                  groups: tuple[Array, Array] | None = None) -> DirectPath:
    """Losses of every (ω, λ) point from Cholesky factors, whether every factor succeeded, and the
    coefficients of every point (:meth:`DirectPath.coefficients`).

    Args:
      K: (n, n) Gram matrix; Y: (n, d) targets; a: (d,) or (Ω, d) output eigenvalues sharing V (d, d).
      filt: Tikhonov or IteratedTikhonov (static); params: (P,) λ values.
      kind: 'holdout' (needs K_eval (m, n), Y_eval (m, d), optional w_eval (m,)), 'loo' or 'gcv'.
      loss: ``loss(F, Y, w)`` of hold-out and leave-one-out.
      n: the normaliser of nλ (default the number of rows; the k-fold route passes a fold's size).
        For 'loo' and 'gcv' the number of real rows: the rows past n are zero padding (zero rows
        of Y, zero rows and columns of K), whose factor block is nλI — 1 − diag H = 1 and a zero
        residual there — and which are never left out nor counted in GCV's trace and means.
      groups: :func:`output_groups` of ``a`` (default computed from ``a``).

    Returns:
      :class:`DirectPath`.
    """
    if kind not in KINDS:
        raise ParameterError(f"kind must be one of {KINDS}; received {kind!r}.")
    direct_order(filt)
    values, index = output_groups(a) if groups is None else groups
    if w_eval is None and Y_eval is not None:
        w_eval = jnp.full((Y_eval.shape[0],), 1.0 / Y_eval.shape[0], Y.dtype)
    n_eff = jnp.asarray(Y.shape[0] if n is None else n, Y.dtype)
    losses, ok, C = _direct_losses(K, Y, a, V, filt, params, kind, K_eval, Y_eval, w_eval, loss, n_eff, values,
                                   index)
    return DirectPath(losses, ok, C, index, V)


@partial(jit, static_argnames=("filt", "loss"))
def _direct_kfold(K, Y, a, V, filt, params, rows, loss, values, index):
    def fold(r):
        tr, held, vt, vh = r
        vt, vh = vt.astype(K.dtype), vh.astype(K.dtype)
        Kf = K[tr][:, tr] * vt[:, None] * vt[None, :]
        losses, ok, _ = _direct_losses(Kf, Y[tr] * vt[:, None], a, V, filt, params, "holdout",
                                       K[held][:, tr] * vt[None, :], Y[held], vh / jnp.sum(vh), loss, jnp.sum(vt),
                                       values, index)
        return losses, ok

    return jax.lax.map(fold, rows)


def direct_kfold_losses(K: Array, Y: Array, a: Array, V: Array, filt: SpectralFilter, params: Array,
                        rows: tuple[Array, Array, Array, Array], loss: Callable = mse_loss,
                        groups: tuple[Array, Array] | None = None) -> tuple[Array, Array]:
    """k-fold losses (k, P) or (k, Ω, P) from Cholesky factors, folds in turn, and the ok flag.

    ``rows``: every fold's :func:`~jaxmtl.selection.fold_rows` (stacked, k leading), or the
    :func:`~jaxmtl.selection.fold_indices` of concrete masks. A fold trains on its padded rows
    (zero rows and columns of K get zero coefficients) with nλ of its own size, as on the eigen path.
    ``groups``: :func:`output_groups` of ``a`` (default computed from ``a``).
    """
    direct_order(filt)
    values, index = output_groups(a) if groups is None else groups
    losses, ok = _direct_kfold(K, Y, a, V, filt, params, tuple(jnp.asarray(r) for r in rows), loss, values, index)
    return losses, jnp.all(ok)


@partial(jit, static_argnames=("filt",))
def _direct_coefficients(K, Y, V, filt, lam, values, index, n_eff):
    c, ok = _pairs(K, Y @ V, n_eff, values, lam[None], direct_order(filt), lambda c, R, L, nlam: c)
    return _gather(c, index)[0, 0] @ V.T, jnp.all(ok)


def direct_coefficients(K: Array, Y: Array, a: Array, V: Array, filt: SpectralFilter, lam: ArrayLike,
                        groups: tuple[Array, Array] | None = None, n: ArrayLike | None = None) -> tuple[Array, Array]:
    """(C (n, d), ok) at one λ for output eigenvalues ``a`` (d,): (a_jK + nλI) c̃_j = ỹ_j, C = C̃Vᵀ.

    ``groups``: :func:`output_groups` of ``a`` (default computed from ``a``). ``n``: the
    normaliser of nλ (default the number of rows; zero-padded rows of K and Y beyond the real
    ones get zero coefficients).

    Example:
        >>> from jaxmtl.filters import Tikhonov
        >>> C, ok = direct_coefficients(jnp.eye(3), jnp.ones((3, 1)), jnp.ones(1), jnp.eye(1), Tikhonov(), 1.0)
        >>> C.ravel().tolist()
        [0.25, 0.25, 0.25]
    """
    direct_order(filt)
    values, index = output_groups(a) if groups is None else groups
    n_eff = jnp.asarray(Y.shape[0] if n is None else n, K.dtype)
    return _direct_coefficients(K, Y, V, filt, jnp.asarray(lam, K.dtype), values, index, n_eff)
