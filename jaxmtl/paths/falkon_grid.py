r"""Falkon's preconditioned CG over a whole grid: every output matrix of a family and every λ at once.

:func:`~jaxmtl.paths.preconditioned.falkon_path` solves [RCR17] Alg. 1 for the λ of a path with one
output matrix A. A family of output matrices sharing their eigenvectors, A_ω = V diag(a_ω) Vᵀ (the
common-similarity family, or A = I for a ridge per output), rotates to the same outputs ỹ_j = (YV)_j
for every ω, and direction j of (ω, λ) solves (a_ωj K_mnK_nm + nλK_mm) α = K_mn ỹ_j: one more column
of the same lock-step CG. :func:`falkon_holdout_losses` runs every (ω, λ, j) column in one
``lax.scan`` (one pass over the rows per step, whatever the grid) and scores each on held-out rows;
:func:`falkon_coefficients` solves one model, one column per output direction, each with its own λ
(with V = I, a ridge per output at its own λ). Both keep the coefficients in the preconditioner's whitened
coordinates: α = W c with W = QΣ⁻¹ (K_mm + m·eps·I = QΣ²Qᵀ), so φ(x) = K(x, Z) W is a Nyström feature
map (:class:`~jaxmtl.operators.nystrom.NystromFeatures` with that whitening) and f(x) = φ(x) c A.

This is the ``'cg'`` route of the approximate estimators (:mod:`jaxmtl.models.approximate`),
chosen by the cost model of :mod:`jaxmtl.paths.routes` (:func:`~jaxmtl.paths.routes.choose_feature_route`)
where its passes cost less than forming the features' statistics: many centres, few grid columns.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.kernels import Gaussian
    >>> X = jnp.linspace(0.0, 1.0, 60)[:, None]; Y = jnp.c_[jnp.sin(3 * X), jnp.cos(3 * X)]
    >>> a = jnp.array([[1.0, 1.0], [0.5, 1.5]]); V = jnp.eye(2)
    >>> falkon_holdout_losses(Gaussian(0.3), X[::6], X[::2], Y[::2], a, V, jnp.array([1e-3, 1e-6]),
    ...                       X[1::2], Y[1::2], 10).shape
    (2, 2, 2)
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import check_int
from .._jit import jit
from ..errors import ShapeError
from ..kernels.scalar import Kernel
from ..linalg import clip_psd
from ..products import full_precision
from .preconditioned import _preconditioner, _row_blocks, _transposed_product, _whitened_cg

__all__ = ["falkon_coefficients", "falkon_holdout_losses"]

Array = jax.Array


def _checked(centres, X, Y, a, V, lambdas, a_ndim, held=(None, None)):
    """The arrays (in Y's dtype), their shapes checked against each other before tracing: a ShapeError
    names the argument, the shape received and the one expected."""
    names = ("centres", "X", "Y", "a", "V", "lambdas", "X_held", "Y_held")
    given = (centres, X, Y, a, V, lambdas, *held)
    arrays: dict[str, Any] = {k: None if t is None else jnp.asarray(t) for k, t in zip(names, given)}
    for name in ("centres", "X", "Y"):
        if arrays[name].ndim != 2:
            raise ShapeError(f"{name} must be 2-D; received shape {tuple(arrays[name].shape)}.")
    (_, p), (n, _), (_, d) = arrays["centres"].shape, arrays["X"].shape, arrays["Y"].shape
    n_h = None if held[0] is None else arrays["X_held"].shape[0]
    want = {"X": (None, p), "Y": (n, None), "a": (None, d) if a_ndim == 2 else (d,), "V": (d, d),
            "lambdas": (None,) if a_ndim == 2 else (d,), "X_held": (None, p), "Y_held": (n_h, d)}
    for name, shape in want.items():
        got = None if arrays[name] is None else tuple(arrays[name].shape)
        if got is not None and (len(got) != len(shape) or any(w not in (None, g) for g, w in zip(got, shape))):
            dims = ", ".join("·" if w is None else str(w) for w in shape)
            expected = f"({dims},)" if len(shape) == 1 else f"({dims})"
            raise ShapeError(f"{name} must have shape {expected} (· any size) with centres {arrays['centres'].shape}, "
                             f"X {arrays['X'].shape} and Y {arrays['Y'].shape}; received shape {got}.")
    dtype = arrays["Y"].dtype
    out = [arrays[k] for k in ("centres", "X", "Y")] + [arrays[k].astype(dtype) for k in ("a", "V", "lambdas")]
    return out + ([] if held[0] is None else [arrays["X_held"], arrays["Y_held"]])


preconditioner = jit(_preconditioner)  # (K_mm, W, Σ²): one m × m eigendecomposition, shared by the calls below


@full_precision
def falkon_holdout_losses(kernel: Kernel, centres: ArrayLike, X: ArrayLike, Y: ArrayLike, a: ArrayLike,
                          V: ArrayLike, lambdas: ArrayLike, X_held: ArrayLike, Y_held: ArrayLike, n_steps: int = 20,
                          block_size: int = 2048) -> Array:
    """Hold-out loss of every output along Falkon's CG path for every output matrix of a family.

    Args:
      kernel: scalar kernel; centres: (m, p) Z; X: (n, p), Y: (n, d) training rows; a: (Ω, d)
        eigenvalues of the output matrices, V: (d, d) their common eigenvectors; lambdas: (P,) λ > 0
        (the normalisation of :func:`~jaxmtl.paths.preconditioned.falkon_path`); X_held: (n_h, p),
        Y_held: (n_h, d); n_steps: CG steps (static; Falkon's default 20); block_size: rows per block.

    Returns:
      (Ω, P, d) losses Σ_held (F_j − Y_j)² / n_h of each output j after ``n_steps`` steps (the
      convention of :func:`~jaxmtl.paths.preconditioned.feature_holdout_losses`).

    Raises:
      ShapeError: an array whose shape does not fit the others'; ParameterError: ``n_steps`` or
      ``block_size`` not a positive integer (a traced one is refused by name: they are static).
    """
    steps, block = check_int(n_steps, "n_steps"), check_int(block_size, "block_size")
    Z, X, Y, a, V, lam, Xh, Yh = _checked(centres, X, Y, a, V, lambdas, 2, (X_held, Y_held))
    n, n_h = np.int32(X.shape[0]), np.int32(Xh.shape[0])
    return _holdout_solve(kernel, Z, X, Y, a, V, lam, Xh, Yh, n, n_h, *preconditioner(kernel, Z), n_steps=steps,
                          block=min(block, X.shape[0]))[0]


@partial(jit, static_argnames=("n_steps", "block"))
def _holdout_solve(kernel, Z, X, Y, a, V, lambdas, Xh, Yh, n, n_h, Kmm, W, sig2, n_steps, block):
    """(Ω, P, d) losses and the whitened coefficients (m, Ω, P, d) in the rotated outputs, on the device.
    Only the first ``n`` rows of X, Y and ``n_h`` of Xh, Yh count (traced: the rest pads them to a size
    bucket, so that every count of a bucket runs one program); the held-out rows are scored in row
    blocks (memory O(block·Ω·P·d), never n_h × Ω·P·d)."""
    Om, d = a.shape
    P = lambdas.shape[0]
    a = clip_psd(a)
    b = _transposed_product(kernel, X, Z, Y @ V, block, n)  # K_mn Ỹ (m, d)
    weights = jnp.broadcast_to(a[:, None, :], (Om, P, d)).reshape(-1)  # column (ω, p, j), ω-major
    lams = jnp.broadcast_to(lambdas[None, :, None], (Om, P, d)).reshape(-1)
    c, _ = _whitened_cg(kernel, Z, X, Kmm, W, sig2, jnp.tile(b, (1, Om * P)), weights, lams, n_steps, block, n)
    WC = W @ c

    def add(Kb, Yb):  # a block's squared errors; its padded rows hold K = 0 and Y = 0
        F = (Kb @ WC).reshape(-1, Om, P, d) * a[None, :, None, :]
        return jnp.sum(jnp.square(F @ V.T - Yb[:, None, None, :]), axis=0)

    sq = _row_blocks(kernel, Xh, Z, min(block, Xh.shape[0]), jnp.zeros((Om, P, d), Y.dtype), add, Yh, n=n_h)
    return sq / jnp.asarray(n_h, Y.dtype), c.reshape(-1, Om, P, d)


@full_precision
def falkon_coefficients(kernel: Kernel, centres: ArrayLike, X: ArrayLike, Y: ArrayLike, a: ArrayLike, V: ArrayLike,
                        lambdas: ArrayLike, n_steps: int = 20, block_size: int = 2048) -> tuple[Array, Array]:
    """One model by Falkon's CG, each output direction with its own λ.

    Args:
      kernel, centres, X, Y: as :func:`falkon_holdout_losses`; a: (d,) eigenvalues of the output
      matrix A = V diag(a) Vᵀ, V: (d, d); lambdas: (d,) λ of each direction (of each output when
      V = I: the per-output family); n_steps, block_size: as there.

    Returns:
      (W, C): the whitening W (m, m) and coefficients C (m, d) with f(x) = K(x, Z) W C A.

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxmtl.kernels import Gaussian
        >>> X = jnp.linspace(0.0, 1.0, 40)[:, None]; Y = jnp.sin(3 * X)
        >>> W, C = falkon_coefficients(Gaussian(0.3), X[::4], X, Y, jnp.ones(1), jnp.eye(1), jnp.array([1e-4]))
        >>> W.shape, C.shape
        ((10, 10), (10, 1))
    """
    steps, block = check_int(n_steps, "n_steps"), check_int(block_size, "block_size")
    Z, X, Y, a, V, lam = _checked(centres, X, Y, a, V, lambdas, 1)
    pre = preconditioner(kernel, Z)
    return pre[1], _coefficients(kernel, Z, X, Y, a, V, lam, *pre, n_steps=steps, block=min(block, X.shape[0]))


@partial(jit, static_argnames=("n_steps", "block"))
def _coefficients(kernel, Z, X, Y, a, V, lambdas, Kmm, W, sig2, n_steps, block):
    b = _transposed_product(kernel, X, Z, Y @ V, block)
    c, _ = _whitened_cg(kernel, Z, X, Kmm, W, sig2, b, clip_psd(a), lambdas, n_steps, block)
    return c @ V.T  # α = W c in the rotated outputs; K(x, Z) W c diag(a) Vᵀ = K(x, Z) W (c Vᵀ) A


@jit
def _selected_coefficients(c: Array, V: Array, omega: Array, param: Array) -> Array:
    """(m, d) coefficients of one model from the whole grid's whitened coefficients c (m, Ω, P, d)
    (rotated outputs): output j takes the solution at (omega[j], param[j]) — one point for every
    output, or with A = I (its ω row) each output its own λ. f(x) = K(x, Z) W C A.

    Example:
        >>> c = jnp.arange(24.0).reshape(2, 1, 3, 4)   # m = 2, Ω = 1, P = 3, d = 4
        >>> _selected_coefficients(c, jnp.eye(4), jnp.zeros(4, int), jnp.array([0, 1, 2, 0])).tolist()
        [[0.0, 5.0, 10.0, 3.0], [12.0, 17.0, 22.0, 15.0]]
    """
    rotated = c[:, omega, param, :]  # (m, d_outputs, d_directions): output j's point, every direction
    return jnp.einsum("mjk,jk->mj", rotated, V)  # output j = Σ_k c_k V[j, k]
