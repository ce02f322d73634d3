r"""Output matrices A for separable kernels Γ(x, x') = K(x, x')·A ([BRBV11] §4.1; [MP04]).

Each function validates its arguments in plain Python and returns a symmetric PSD (d, d)
array in JAX's default float dtype. The RKHS norm of Γ is Σ_{ℓq} A†_{ℓq}⟨f^ℓ, f^q⟩_K
([BRBV11] Prop. 1), so a regularizer with matrix G gives A = G†.

Example:
    >>> common_similarity(3, 0.5)[0]
    Array([1. , 0.5, 0.5], dtype=float32)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

from .._checks import (
    as_float_array,
    check_int,
    check_output_matrix,
    check_positive,
    check_unit_interval,
    default_float,
)
from ..errors import OutputMatrixError, ParameterError, ShapeError

__all__ = [
    "independent",
    "common_similarity",
    "common_similarity_eigh",
    "graph_regularization",
    "output_clusters",
    "mean_regularized",
    "low_rank",
    "custom",
    "eigh_output",
]


def _out(A: np.ndarray) -> jax.Array:
    return jnp.asarray(A, dtype=default_float())


def _sym(A: np.ndarray) -> jax.Array:
    """An output matrix, exactly symmetric, in the default float dtype."""
    A = np.asarray(A, dtype=np.float64)
    return _out(0.5 * (A + A.T))


def independent(d: int) -> jax.Array:
    """A = I_d: every output learned on its own.

    Example:
        >>> independent(2).shape
        (2, 2)
    """
    d = check_int(d, "d")
    return _out(np.eye(d))


def common_similarity(d: int, omega: float) -> jax.Array:
    """A = ω·11ᵀ + (1 − ω)·I ([BRBV11] eq. 18): ω = 0 independent, ω = 1 pooled.

    Example:
        >>> common_similarity(2, 1.0)
        Array([[1., 1.],
               [1., 1.]], dtype=float32)
    """
    d = check_int(d, "d")
    omega = _scalar_omega(omega)
    return _out(omega * np.ones((d, d)) + (1 - omega) * np.eye(d))


def _scalar_omega(omega) -> float:
    om = check_unit_interval(omega, "omega")
    if om.size != 1:
        raise ParameterError(
            f"omega must be a single number in [0, 1]; received {om.size} values "
            "(use common_similarity_eigh for a grid)."
        )
    return float(om[0])


def _mean_basis(d: int) -> np.ndarray:
    """Orthonormal basis whose first column is 1/√d (Householder reflection of e₁)."""
    v = np.ones(d) / np.sqrt(d)
    e1 = np.zeros(d)
    e1[0] = 1.0
    w = v - e1
    if np.linalg.norm(w) < 1e-15:
        return np.eye(d)
    w /= np.linalg.norm(w)
    return np.eye(d) - 2.0 * np.outer(w, w)


def common_similarity_eigh(d: int, omegas: npt.ArrayLike) -> tuple[jax.Array, jax.Array]:
    """Shared eigensystem of the common-similarity family A_ω over a grid of ω.

    A_ω = V diag(a_ω) Vᵀ with the same V for every ω: the first column is 1/√d with eigenvalue
    ωd + (1 − ω); the rest span its complement with eigenvalue 1 − ω.

    Args:
      d: number of outputs; omegas: (Ω,) values in [0, 1].

    Returns:
      a: (Ω, d) eigenvalues; V: (d, d) eigenvectors.

    Example:
        >>> a, V = common_similarity_eigh(3, [0.0, 1.0])
        >>> a.shape, V.shape
        ((2, 3), (3, 3))
    """
    d = check_int(d, "d")
    om = check_unit_interval(omegas, "omegas").astype(np.float64)
    a = np.repeat((1 - om)[:, None], d, axis=1)
    a[:, 0] = om * d + (1 - om)
    return _out(a), _out(_mean_basis(d))


def graph_regularization(M: npt.ArrayLike) -> jax.Array:
    """A = L† with L = D − M, D_ℓq = δ_ℓq (Σ_h M_ℓh + M_ℓq) ([BRBV11] eqs. 22–23).

    Args:
      M: (d, d) symmetric matrix of non-negative weights between outputs; the diagonal M_ℓℓ
        weighs the plain norm ‖f^ℓ‖²_K (eq. 22).

    Returns:
      (d, d) pseudo-inverse of L (L is singular when M has a zero diagonal: the Moore–Penrose
      inverse then leaves the common mean unpenalised and unlearned, as in the paper).

    Example:
        >>> graph_regularization(np.array([[0.0, 1.0], [1.0, 0.0]])).shape
        (2, 2)
    """
    M = as_float_array(M, "M", ndim=2).astype(np.float64)
    if M.shape[0] != M.shape[1]:
        raise OutputMatrixError(f"M must be a square matrix; received shape {M.shape}.")
    if not np.allclose(M, M.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(M).max()))):
        raise OutputMatrixError(
            f"M must be symmetric; max |M - M.T| = {float(np.abs(M - M.T).max()):.3g}."
        )
    if np.any(M < 0):
        raise OutputMatrixError(
            f"M must hold non-negative weights; its smallest entry is {float(M.min()):.3g}."
        )
    M = 0.5 * (M + M.T)
    D = np.diag(M.sum(1) + np.diag(M))
    return _sym(np.linalg.pinv(D - M, hermitian=True))


def output_clusters(assignments: npt.ArrayLike, eps1: float, eps2: float) -> jax.Array:
    """A = G† with G = ε₁I + (ε₂ − ε₁)M, M = E(EᵀE)⁻¹Eᵀ ([BRBV11] eq. 24).

    Args:
      assignments: (d,) cluster label of each output (any sortable labels: ints, strings).
      eps1: weight pulling outputs to their cluster mean (> 0).
      eps2: weight on the cluster means' norms (> 0).

    Returns:
      (d, d) matrix; G is positive definite (eigenvalues ε₁ and ε₂), so A = G⁻¹.

    Example:
        >>> output_clusters([0, 0, 1], 1.0, 0.1).shape
        (3, 3)
    """
    try:
        labels = np.asarray(assignments)
    except Exception as exc:
        raise ShapeError(f"assignments could not be read as an array: {exc}") from None
    if labels.ndim != 1 or labels.size == 0:
        raise ShapeError(f"assignments must be a non-empty 1-D array; received shape {labels.shape}.")
    eps1, eps2 = check_positive(eps1, "eps1"), check_positive(eps2, "eps2")
    _, idx = np.unique(labels, return_inverse=True)
    E = np.eye(idx.max() + 1)[idx]
    M = E @ np.linalg.inv(E.T @ E) @ E.T
    G = eps1 * np.eye(len(idx)) + (eps2 - eps1) * M
    return _sym(np.linalg.pinv(G, hermitian=True))


def mean_regularized(d: int, c: float) -> jax.Array:
    """A = (1/c²)·11ᵀ + I: the mean-regularized multi-task kernel (Micchelli–Pontil eq. 4.17).

    Small c ties the tasks to their average, large c learns them independently.

    Example:
        >>> mean_regularized(2, 1.0)[0, 0]
        Array(2., dtype=float32)
    """
    d = check_int(d, "d")
    c = check_positive(c, "c")
    with np.errstate(over="ignore"):
        inv_c2 = np.float64(1.0 / c) ** 2  # NumPy: overflow gives inf, not OverflowError
        A = _out(np.ones((d, d)) * inv_c2 + np.eye(d))
    if not np.all(np.isfinite(np.asarray(A))):
        raise ParameterError(f"c is too small: 1/c² overflows {A.dtype}; received {c!r}.")
    return A


def low_rank(B: npt.ArrayLike) -> jax.Array:
    """A = B Bᵀ for B of shape (d, r): outputs spanned by r latent functions.

    Example:
        >>> low_rank(np.ones((3, 1)))[0, 1]
        Array(1., dtype=float32)
    """
    B = as_float_array(B, "B", ndim=2).astype(np.float64)
    return _sym(B @ B.T)


def custom(A: npt.ArrayLike, d: int | None = None) -> jax.Array:
    """A user-given output matrix, checked to be square, symmetric and PSD, then symmetrised.

    Args:
      A: (d, d) array-like; d: the expected size, or None.

    Raises:
      OutputMatrixError: A is not square (or not d×d), not symmetric, or not PSD.

    Example:
        >>> custom([[2.0, 1.0], [1.0, 2.0]]).shape
        (2, 2)
    """
    if d is not None:
        d = check_int(d, "d")
    return _sym(check_output_matrix(A, d=d, name="A"))


def eigh_output(A: npt.ArrayLike) -> tuple[jax.Array, jax.Array]:
    """(a, V): eigenvalues (ascending, clipped at 0) and orthonormal eigenvectors of A.

    A = V diag(a) Vᵀ up to the clipped round-off. A concrete A is validated first with the
    rules of :func:`custom`; a traced A (inside ``jit``) is used as is.

    Args:
      A: (d, d) symmetric PSD matrix.

    Returns:
      a: (d,); V: (d, d), columns the eigenvectors.

    Example:
        >>> a, V = eigh_output(common_similarity(2, 0.5))
        >>> a
        Array([0.5, 1.5], dtype=float32)
    """
    if not isinstance(A, jax.core.Tracer):
        A = _sym(check_output_matrix(A, name="A"))
    a, V = jnp.linalg.eigh(A)
    return jnp.maximum(a, 0.0), V
