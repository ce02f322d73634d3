r"""Gram operators: the nd×nd matrix Γ of a matrix-valued kernel, as products only.

An operator acts on a coefficient matrix C of shape ``(n, d)`` (row i holds c_i ∈ ℝᵈ) and
returns Γ C in the same shape, where vec is row-major: ``(Γ C)_i = Σ_j Γ(x_i, x_j) c_j``.

* :class:`SeparableOperator` — Γ = K ⊗ A, product ``K C A`` (A symmetric), eigendecomposition
  from ``eigh(K)`` and ``eigh(A)`` (seed 000 §4.2), never forming the nd×nd matrix.
* :class:`DenseOperator` — an explicit nd×nd matrix; the reference the tests compare against.

Example:
    >>> import jax.numpy as jnp
    >>> op = SeparableOperator(jnp.eye(3), jnp.ones((2, 2)))
    >>> op.mv(jnp.ones((3, 2))).shape
    (3, 2)
"""

from __future__ import annotations

import abc
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp

__all__ = [
    "GramOperator",
    "SeparableOperator",
    "DenseOperator",
    "SeparableEigh",
    "separable_eigh",
    "power_iteration",
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
    s, U = jnp.linalg.eigh(K)
    a, V = jnp.linalg.eigh(A)
    return SeparableEigh(jnp.maximum(s, 0.0), U, jnp.maximum(a, 0.0), V)


class GramOperator(eqx.Module):
    """A symmetric PSD linear map on (n, d) coefficient matrices."""

    @property
    @abc.abstractmethod
    def shape(self) -> tuple[int, int]:
        """(n, d): the shape of the coefficient matrices it acts on."""

    @abc.abstractmethod
    def mv(self, C: Array) -> Array:
        """Γ C for C of shape (n, d)."""

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

    def mv(self, C):
        return self.K @ C @ self.A

    def eigh(self) -> SeparableEigh:
        """Eigensystem from the factors; see :func:`separable_eigh`."""
        return separable_eigh(self.K, self.A)

    def spectral_norm(self) -> Array:
        """‖K ⊗ A‖₂ = ‖K‖₂·‖A‖₂, each from a symmetric eigenvalue computation."""
        return jnp.linalg.eigvalsh(self.K)[-1] * jnp.linalg.eigvalsh(self.A)[-1]


class DenseOperator(GramOperator):
    """An explicit (nd, nd) Gram matrix acting on (n, d) coefficients (row-major vec)."""

    G: Array
    d: int = eqx.field(static=True)

    @property
    def shape(self):
        return (self.G.shape[0] // self.d, self.d)

    def mv(self, C):
        return (self.G @ C.reshape(-1)).reshape(C.shape)


def power_iteration(mv, shape, dtype, num_iters: int = 50, key=None, safety: float = 1.01) -> Array:
    """Upper estimate of the largest eigenvalue of a symmetric PSD map ``mv``.

    Runs ``num_iters`` power steps in a ``lax.fori_loop`` from a random start and returns
    (ρ + ‖Γv − ρv‖)·``safety``, with ρ the Rayleigh quotient. The Rayleigh quotient approaches
    σ_max from below, slowly when the top eigenvalues cluster; adding the residual norm (an
    eigenvalue lies within it of ρ) covers that gap, which matters for the ν-method, whose
    polynomials grow fast once τσ exceeds 1.

    Args:
      mv: function C ↦ Γ C on arrays of ``shape``.
      shape: shape of the vectors (e.g. (n, d)).
      dtype: their dtype.
      num_iters: number of products.
      key: PRNG key for the start (default ``PRNGKey(0)``).
      safety: multiplicative margin.

    Returns:
      scalar array.

    Example:
        >>> float(power_iteration(lambda c: 2.0 * c, (4, 1), jnp.float32)) >= 2.0
        True
    """
    key = jax.random.PRNGKey(0) if key is None else key
    v = jax.random.normal(key, shape, dtype)
    v = v / jnp.linalg.norm(v)

    def body(_, v):
        w = mv(v)
        return w / jnp.maximum(jnp.linalg.norm(w), jnp.finfo(dtype).tiny)

    v = jax.lax.fori_loop(0, num_iters, body, v)
    w = mv(v)
    rho = jnp.vdot(v, w)
    return safety * (rho + jnp.linalg.norm(w - rho * v))
