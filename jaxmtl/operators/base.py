r"""Gram operators: the nd×nd matrix Γ of a matrix-valued kernel, as products only.

An operator acts on a coefficient matrix C of shape ``(n, d)`` (row i holds c_i ∈ ℝᵈ) and
returns Γ C in the same shape, where vec is row-major: ``(Γ C)_i = Σ_j Γ(x_i, x_j) c_j``.

* :class:`SeparableOperator` — Γ = K ⊗ A, product ``K C A`` (A symmetric), eigendecomposition
  from ``eigh(K)`` and ``eigh(A)`` ([BRBV11] §4.2), never forming the nd×nd matrix.
* :class:`DenseOperator` — an explicit nd×nd matrix; the reference the tests compare against.

Example:
    >>> import jax.numpy as jnp
    >>> op = SeparableOperator(jnp.eye(3), jnp.ones((2, 2)))
    >>> op.mv(jnp.ones((3, 2))).shape
    (3, 2)
"""

from __future__ import annotations

import abc
import math
from typing import Callable, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike, DTypeLike

from ..errors import ShapeError
from ..linalg import clip_psd, eigh, eigvalsh
from ..products import full_precision

__all__ = [
    "GramOperator",
    "SeparableOperator",
    "DenseOperator",
    "SeparableEigh",
    "separable_eigh",
    "max_eigenvalue",
    "separable_solve",
]

Array = jax.Array


class SeparableEigh(NamedTuple):
    """Eigensystem of K ⊗ A: eigenvalues ``s[i]·a[j]`` with eigenvectors ``U[:, i] ⊗ V[:, j]``.

    Attributes:
      s: (n,) eigenvalues of K, clipped at 0.
      U: (n, n) eigenvectors of K.
      a: (d,) eigenvalues of A, clipped at 0 — or (..., d) for a family of A sharing V.
      V: (d, d) eigenvectors of A.
    """

    s: Array
    U: Array
    a: Array
    V: Array


@full_precision
def separable_eigh(K: Array, A: Array) -> SeparableEigh:
    """Eigendecomposition of K ⊗ A from the two factors (cost n³ + d³, not (nd)³).

    Args:
      K: (n, n) symmetric PSD scalar Gram matrix.
      A: (d, d) symmetric PSD output matrix.

    Returns:
      :class:`SeparableEigh`.

    Example:
        >>> e = separable_eigh(jnp.eye(2), 2 * jnp.eye(3))
        >>> e.s.shape, e.a.shape
        ((2,), (3,))
    """
    s, U = eigh(K)
    a, V = eigh(A)
    return SeparableEigh(clip_psd(s), U, clip_psd(a), V)


CHOLESKY_MAX_OUTPUTS = 16  # above this many outputs one eigh of K is cheaper than d Cholesky solves


@full_precision
def separable_solve(K: Array, A: Array, Y: Array, lam: ArrayLike) -> Array:
    """Tikhonov coefficients for one λ: C with K C A + nλ C = Y, i.e. (K ⊗ A + nλI) vec C = vec Y.

    Rotates the outputs onto the eigenvectors of A (A = V diag(a) Vᵀ, d × d). For d ≤
    ``CHOLESKY_MAX_OUTPUTS`` it then solves one n × n Cholesky system (a_j K + nλI) c̃_j = ỹ_j per
    output direction, one after another (``lax.map``): d·n³/3 flops and two n × n matrices in
    memory; for more outputs one eigendecomposition of K (≈ 9n³ flops, shared by every direction)
    is cheaper. Never forms the nd × nd matrix. Same numbers as ``filtered_coefficients(Tikhonov(),
    separable_eigh(K, A), Y, lam)`` (the normalisation of :mod:`jaxmtl.filters`: scikit-learn's
    alpha = nλ).

    Args:
      K: (n, n) symmetric PSD scalar Gram; A: (d, d) symmetric PSD output matrix.
      Y: (n, d) outputs; lam: λ > 0 (a scalar; vmap over it for several).

    Returns:
      (n, d) coefficients.

    Example:
        >>> C = separable_solve(jnp.eye(3), jnp.eye(2), jnp.ones((3, 2)), 0.5)
        >>> [round(float(v), 4) for v in C[0]]
        [0.4, 0.4]
    """
    n, d = Y.shape  # shapes are static under jit: checked at trace time
    if K.shape != (n, n) or A.shape != (d, d):
        raise ShapeError(f"separable_solve needs K ({n}, {n}) and A ({d}, {d}) for Y of shape {Y.shape}; "
                         f"received K {K.shape} and A {A.shape}.")
    a, V = eigh(A)
    Yt = Y @ V
    if d > CHOLESKY_MAX_OUTPUTS:
        s, U = eigh(K)
        return U @ ((U.T @ Yt) / (s[:, None] * a[None, :] + n * lam)) @ V.T
    shift = n * lam * jnp.eye(n, dtype=K.dtype)

    def one(args):
        aj, yj = args
        return jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(aj * K + shift), yj)

    Ct = jax.lax.map(one, (a, Yt.T)).T  # (n, d)
    return Ct @ V.T


class GramOperator(eqx.Module):
    """A symmetric PSD linear map on (n, d) coefficient matrices."""

    @property
    @abc.abstractmethod
    def shape(self) -> tuple[int, int]:
        """(n, d): the shape of the coefficient matrices it acts on."""

    @abc.abstractmethod
    @full_precision
    def mv(self, C: Array) -> Array:
        """Γ C for C of shape (n, d)."""

    @full_precision
    def as_matrix(self) -> Array:
        """The dense (nd, nd) matrix, built column by column from ``mv`` (tests only)."""
        n, d = self.shape
        eye = jnp.eye(n * d, dtype=self.dtype)
        cols = jax.vmap(lambda e: self.mv(e.reshape(n, d)).reshape(-1))(eye)
        return cols.T

    @property
    def dtype(self):
        """The floating dtype of the operator's arrays."""
        leaves = [x for x in jax.tree_util.tree_leaves(self) if hasattr(x, "dtype")]
        return leaves[0].dtype if leaves else jnp.result_type(float)


class SeparableOperator(GramOperator):
    """Γ = K ⊗ A for a separable kernel Γ(x, x') = K(x, x')·A.

    Args:
      K: (n, n) scalar Gram matrix.
      A: (d, d) symmetric PSD output matrix.
    """

    K: Array
    A: Array

    @property
    def shape(self):
        return (self.K.shape[0], self.A.shape[0])

    @full_precision
    def mv(self, C: Array) -> Array:
        return self.K @ C @ self.A

    @full_precision
    def eigh(self) -> SeparableEigh:
        """Eigensystem from the factors; see :func:`separable_eigh`."""
        return separable_eigh(self.K, self.A)

    @full_precision
    def spectral_norm(self) -> Array:
        """‖K ⊗ A‖₂ = ‖K‖₂·‖A‖₂, each from a symmetric eigenvalue computation."""
        return eigvalsh(self.K)[-1] * eigvalsh(self.A)[-1]


class DenseOperator(GramOperator):
    """An explicit (nd, nd) Gram matrix acting on (n, d) coefficients (row-major vec)."""

    G: Array
    d: int = eqx.field(static=True)

    @property
    def shape(self):
        return (self.G.shape[0] // self.d, self.d)

    @full_precision
    def mv(self, C: Array) -> Array:
        return (self.G @ C.reshape(-1)).reshape(C.shape)

    @full_precision  # no product here; scoped as every public method is (tests/test_products.py)
    def as_matrix(self) -> Array:
        """G itself (no product with the identity)."""
        return self.G


@full_precision
def max_eigenvalue(mv: Callable[[Array], Array], shape: tuple[int, ...], dtype: DTypeLike, num_iters: int = 20,
                   key: Array | None = None, safety: float = 1.01, start: Array | None = None) -> Array:
    """Upper estimate of the largest eigenvalue of a symmetric PSD map ``mv`` (Lanczos).

    Runs ``num_iters`` Lanczos steps (one product each, full reorthogonalisation) in a
    ``lax.fori_loop`` from a random start, and returns (θ + r)·``safety`` with θ the largest
    Ritz value and r = β_k·|s_k| its residual norm (an eigenvalue lies within r of θ). The Ritz
    value approaches σ_max from below and converges much faster than a power iteration (whose
    error decays like (σ₂/σ₁)^k), also when the top eigenvalues cluster, as for the div/curl-free
    kernels; the residual term and the margin cover what is left — the ν-method's polynomials
    grow fast once τσ exceeds 1. The basis costs ``num_iters`` vectors of ``shape``.

    Args:
      mv: function C ↦ Γ C on arrays of ``shape``.
      shape: shape of the vectors (e.g. (n, d)).
      dtype: their dtype.
      num_iters: number of products (Krylov dimension).
      key: PRNG key for the start (default ``PRNGKey(0)``).
      safety: multiplicative margin.
      start: optional array of ``shape``, the start vector (default a standard normal draw from
        ``key``; row-padded problems pass that draw of the padded shape with the padding zeroed,
        which equals the unpadded draw on the other rows, so τ does not depend on the padding).

    Returns:
      scalar array.

    Example:
        >>> A = jnp.diag(jnp.arange(1.0, 6.0))
        >>> 5.0 <= float(max_eigenvalue(lambda c: A @ c, (5, 1), jnp.float32)) <= 5.1
        True
    """
    key = jax.random.PRNGKey(0) if key is None else key
    size = math.prod(shape)
    k = max(1, min(num_iters, size))  # the Krylov space cannot exceed the vector space
    v = jax.random.normal(key, (size,), dtype) if start is None else jnp.asarray(start, dtype).reshape(-1)
    Q = jnp.zeros((k + 1, size), dtype).at[0].set(v / jnp.linalg.norm(v))
    eps = jnp.finfo(dtype).eps

    def body(j, carry):
        Q, alpha, beta = carry
        q = Q[j]
        w = mv(q.reshape(shape)).reshape(-1)
        a = jnp.vdot(q, w)
        scale = jnp.linalg.norm(w)
        w = w - Q.T @ (Q @ w)  # against every basis vector so far (later rows are zero), twice
        w = w - Q.T @ (Q @ w)
        b2 = jnp.vdot(w, w)  # ‖w‖ with a finite derivative where w = 0 (the Krylov space is exhausted)
        b = jnp.where(b2 > 0, jnp.sqrt(jnp.where(b2 > 0, b2, 1.0)), 0.0)
        ok = b > 100.0 * eps * scale  # else an invariant subspace was found: stop (zero vectors)
        b = jnp.where(ok, b, 0.0)
        nxt = jnp.where(ok, w / jnp.where(ok, b, 1.0), 0.0)
        return Q.at[j + 1].set(nxt), alpha.at[j].set(a), beta.at[j].set(b)

    zeros = jnp.zeros((k,), dtype)
    _, alpha, beta = jax.lax.fori_loop(0, k, body, (Q, zeros, zeros))
    off = beta[:-1]
    T = jnp.diag(alpha) + jnp.diag(off, 1) + jnp.diag(off, -1)
    theta, S = eigh(T)
    return safety * (theta[-1] + beta[-1] * jnp.abs(S[-1, -1]))
