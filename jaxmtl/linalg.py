r"""Symmetric eigendecomposition whose derivative is defined at repeated eigenvalues.

Every path of the library reads its filters off eigensystems: K = U diag(s) Uᵀ of the scalar
Gram and A = V diag(a) Vᵀ of the output matrix. Output matrices have repeated eigenvalues by
design — the common-similarity family A_ω = ω11ᵀ + (1 − ω)I has 1 − ω with multiplicity d − 1 —
and Grams of repeated inputs have a repeated eigenvalue 0. ``jnp.linalg.eigh``'s derivative of
the eigenvectors holds 1/(λ_j − λ_i): at an exact tie it is inf (a NaN gradient, as in float32),
and at a tie split by roundoff it is a huge factor times roundoff (a finite, wrong gradient, as
in float64).

:func:`eigh` returns the same eigensystem and differentiates as

    dλ_i = (Vᵀ dA V)_ii,       dV = V (F ∘ Vᵀ dA V),
    F_ij = 1/(λ_j − λ_i) when |λ_j − λ_i| > tol,  0 otherwise,

with tol = max(n, 32)·ε·max|λ| (ε the dtype's unit roundoff; LAPACK's eigenvalues are accurate
to about n·ε·‖A‖, so gaps below tol cannot be told apart from roundoff). Within a cluster of
(numerically) equal eigenvalues the eigenvectors are then left unrotated. This is the exact
derivative of every spectral function h(A) = V diag(h(λ)) Vᵀ — which is what every path, filter
and criterion computes — whenever the perturbation dA leaves each cluster's eigenspace invariant,
i.e. (Vᵀ dA V)_ij = 0 for i ≠ j in one cluster. That holds for every parametrised output family
of :mod:`jaxmtl.kernels.outputs` (A_ω, mean-regularised, output clusters: functions of fixed
projectors) and for a Gram of repeated inputs (its null space does not move with the kernel's
parameters). Where a perturbation splits a cluster (a generic dA at an exactly repeated
eigenvalue) no eigendecomposition has a derivative, and the term M_ij·h'(λ) of those pairs is
left out.

Example:
    >>> import jax, jax.numpy as jnp
    >>> def smallest(omega):  # the repeated eigenvalue 1 − ω of A_ω, d = 3
    ...     A = omega * jnp.ones((3, 3)) + (1 - omega) * jnp.eye(3)
    ...     return eigh(A)[0][0]
    >>> round(float(jax.grad(smallest)(0.3)), 6)
    -1.0
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from .products import full_precision

__all__ = ["eigh", "eigvalsh", "clip_psd"]

Array = jax.Array


def _tolerance(w: Array) -> Array:
    """(...,1,1) gap below which two eigenvalues count as equal."""
    n = w.shape[-1]
    eps = jnp.finfo(w.dtype).eps
    return (max(n, 32) * eps * jnp.max(jnp.abs(w), axis=-1))[..., None, None]


@jax.custom_jvp
def eigh(A: Array) -> tuple[Array, Array]:
    """(w, V): ascending eigenvalues and orthonormal eigenvectors of symmetric A, differentiable
    at repeated eigenvalues (see the module docstring).

    Args:
      A: (..., n, n) symmetric matrix (the lower triangle is read, as by ``jnp.linalg.eigh``).

    Returns:
      w: (..., n) eigenvalues, ascending; V: (..., n, n), column i the eigenvector of w[i].

    Example:
        >>> w, V = eigh(jnp.eye(2))
        >>> w.round(6)
        Array([1., 1.], dtype=float32)
    """
    w, V = jnp.linalg.eigh(A)
    return w, V


@eigh.defjvp
@full_precision
def _eigh_jvp(primals, tangents):
    (A,), (dA,) = primals, tangents
    w, V = eigh(A)
    dA = 0.5 * (dA + jnp.swapaxes(dA, -1, -2))
    M = jnp.swapaxes(V, -1, -2) @ dA @ V
    gap = w[..., None, :] - w[..., :, None]  # gap[i, j] = w_j − w_i
    apart = jnp.abs(gap) > _tolerance(w)
    F = jnp.where(apart, 1.0 / jnp.where(apart, gap, 1.0), 0.0)
    dw = jnp.diagonal(M, axis1=-2, axis2=-1)
    dV = V @ (F * M)
    return (w, V), (dw, dV)


def eigvalsh(A: Array) -> Array:
    """(..., n) ascending eigenvalues of symmetric A, differentiable at repeated eigenvalues.

    Example:
        >>> eigvalsh(jnp.diag(jnp.array([2.0, 1.0])))
        Array([1., 2.], dtype=float32)
    """
    return eigh(A)[0]


@full_precision
def clip_psd(w: Array) -> Array:
    """Eigenvalues of a PSD matrix clipped at 0, with the derivative of the unclipped values.

    The eigenvalues of a positive semidefinite matrix are ≥ 0; computed ones can be −ε·‖A‖ by
    roundoff, and the clip removes that. Its derivative is taken as 1 everywhere (the clip only
    corrects roundoff), so an eigenvalue that is exactly 0 at the point of differentiation — A_ω at
    ω = 1, a Gram of repeated inputs — keeps the derivative of the smooth family it belongs to,
    whichever sign roundoff gave it.

    Args:
      w: (...,) eigenvalues.

    Returns:
      (...,) max(w, 0), with d/dw = 1.

    Example:
        >>> clip_psd(jnp.array([-1e-9, 2.0]))
        Array([0., 2.], dtype=float32)
    """
    return w + jax.lax.stop_gradient(jnp.maximum(w, 0.0) - w)
