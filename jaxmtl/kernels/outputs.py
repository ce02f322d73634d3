r"""Output matrices A for separable kernels Γ(x, x') = K(x, x')·A ([BRBV11] §4.1; [MP04]).

Each function validates its arguments in plain Python and returns a symmetric PSD (d, d)
array in JAX's default float dtype. Every continuous parameter (ω, c, ε₁, ε₂, B, M, a custom
A) may also be traced — built inside ``jit``, ``vmap`` or ``grad`` — and is then checked
at run time (``equinox.error_if``: finite, in range, symmetric; docs/errors.md) and
differentiated through ``jax.numpy``; sizes (``d``) and cluster labels stay concrete. The RKHS norm of Γ is Σ_{ℓq} A†_{ℓq}⟨f^ℓ, f^q⟩_K
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
    is_traced,
    traced_check,
)
from ..errors import OutputMatrixError, ParameterError, ShapeError
from ..linalg import clip_psd, eigh

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
    """A on the device in the default float dtype, converted on the host (no compiled call)."""
    return jax.device_put(np.asarray(A, dtype=default_float()))


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
    om = _scalar_omega(omega)
    return om * jnp.ones((d, d), om.dtype) + (1 - om) * jnp.eye(d, dtype=om.dtype)


def _traced(x, name: str, ndim: tuple[int, ...]) -> jax.Array:
    """A traced parameter as an array of the default float dtype, its rank checked (static)."""
    arr = jnp.asarray(x)
    arr = arr.astype(arr.dtype if jnp.issubdtype(arr.dtype, jnp.floating) else default_float())
    if arr.ndim not in ndim:
        raise ShapeError(f"{name} must have rank {' or '.join(map(str, ndim))}; received shape {arr.shape}.")
    return arr


def _traced_unit(x, name: str, ndim: tuple[int, ...]) -> jax.Array:
    om = _traced(x, name, ndim)
    return traced_check(om, (om >= 0) & (om <= 1), f"{name} must lie in [0, 1].")


def _scalar_omega(omega) -> jax.Array:
    if is_traced(omega):
        return _traced_unit(omega, "omega", (0,))
    om = check_unit_interval(omega, "omega")
    if om.size != 1:
        raise ParameterError(
            f"omega must be a single number in [0, 1]; received {om.size} values "
            "(use common_similarity_eigh for a grid)."
        )
    return jnp.asarray(om[0], default_float())


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
    if not is_traced(omegas):  # concrete ω: computed on the host, no compiled call
        om = np.asarray(check_unit_interval(omegas, "omegas"), np.float64)
        a = np.repeat((1 - om)[:, None], d, axis=1)
        a[:, 0] = om * d + (1 - om)
        return _out(a), _out(_mean_basis(d))
    om = jnp.atleast_1d(_traced_unit(omegas, "omegas", (0, 1)))
    a = jnp.repeat((1 - om)[:, None], d, axis=1).at[:, 0].set(om * d + (1 - om))
    return a, _out(_mean_basis(d))


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
    if is_traced(M):
        Mt = _traced(M, "M", (2,))
        if Mt.shape[0] != Mt.shape[1]:
            raise OutputMatrixError(f"M must be a square matrix; received shape {Mt.shape}.")
        tol = 1e3 * jnp.finfo(Mt.dtype).eps * (1 + jnp.max(jnp.abs(Mt)))
        Mt = traced_check(Mt, jnp.isfinite(Mt) & (Mt >= 0) & (jnp.abs(Mt - Mt.T) <= tol),
                          "M must hold finite, non-negative, symmetric weights.")
        Mt = 0.5 * (Mt + Mt.T)
        L = jnp.diag(Mt.sum(1) + jnp.diag(Mt)) - Mt
        Lp = jnp.linalg.pinv(L)
        return 0.5 * (Lp + Lp.T)
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
      (d, d) matrix; G is positive definite (eigenvalues ε₁ and ε₂), so A = G⁻¹ =
      (I − M)/ε₁ + M/ε₂ (M is a projector).

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
    e1, e2 = (_traced_positive(e, name) if is_traced(e) else check_positive(e, name)
              for e, name in ((eps1, "eps1"), (eps2, "eps2")))
    _, idx = np.unique(labels, return_inverse=True)
    E = np.eye(idx.max() + 1)[idx]
    M = _sym(E @ np.linalg.inv(E.T @ E) @ E.T)
    return (jnp.eye(len(idx), dtype=M.dtype) - M) / e1 + M / e2


def _traced_positive(x, name: str) -> jax.Array:
    v = _traced(x, name, (0,))
    return traced_check(v, jnp.isfinite(v) & (v > 0), f"{name} must be a finite positive number.")


def mean_regularized(d: int, c: float) -> jax.Array:
    """A = (1/c²)·11ᵀ + I: the mean-regularized multi-task kernel (Micchelli–Pontil eq. 4.17).

    Small c ties the tasks to their average, large c learns them independently.

    Example:
        >>> mean_regularized(2, 1.0)[0, 0]
        Array(2., dtype=float32)
    """
    d = check_int(d, "d")
    if is_traced(c):
        ct = _traced_positive(c, "c")
        A = jnp.ones((d, d), ct.dtype) / ct**2 + jnp.eye(d, dtype=ct.dtype)
        return traced_check(A, jnp.isfinite(A), "c is too small: 1/c² overflows.")
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
    if is_traced(B):
        Bt = _traced(B, "B", (2,))
        Bt = traced_check(Bt, jnp.isfinite(Bt), "B holds NaN or infinite values; all must be finite.")
        G = Bt @ Bt.T
        return 0.5 * (G + G.T)
    B = as_float_array(B, "B", ndim=2).astype(np.float64)
    return _sym(B @ B.T)


def custom(A: npt.ArrayLike, d: int | None = None) -> jax.Array:
    """A user-given output matrix, checked to be square, symmetric and PSD, then symmetrised.

    Args:
      A: (d, d) array-like; d: the expected size, or None.

    A traced A (inside ``jit``, ``vmap`` or ``grad``) has its shape checked before tracing and
    its symmetry and finiteness at run time; positive semidefiniteness, an eigenvalue
    computation, is then the caller's responsibility (build A from a family of this module).

    Raises:
      OutputMatrixError: A is not square (or not d×d), not symmetric, or not PSD.

    Example:
        >>> custom([[2.0, 1.0], [1.0, 2.0]]).shape
        (2, 2)
    """
    if d is not None:
        d = check_int(d, "d")
    if is_traced(A):
        At = _traced(A, "A", (2,))
        if At.shape[0] != At.shape[1] or (d is not None and At.shape[0] != d):
            raise OutputMatrixError(f"A must be square{'' if d is None else f' ({d}x{d})'}; received shape {At.shape}.")
        scale = jnp.max(jnp.abs(At))
        At = traced_check(At, jnp.isfinite(At) & (jnp.abs(At - At.T) <= 1e-6 * scale + 1e-12),
                          "A must be finite and symmetric.")
        return 0.5 * (At + At.T)
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
        >>> a.round(6)  # rounded: the last digit of float32 differs between devices
        Array([0.5, 1.5], dtype=float32)
    """
    if not isinstance(A, jax.core.Tracer):
        A = _sym(check_output_matrix(A, name="A"))
    a, V = eigh(A)
    return clip_psd(a), V
