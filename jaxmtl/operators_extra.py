r"""Gaussian div-free / curl-free operators as dense GEMMs, and validated constructors.

:class:`GaussianFieldOperator` is the Gram operator of γ·Γ_cf + (1 − γ)·Γ_df, the Gaussian
curl-free (seed 000 eq. 27) and divergence-free (eq. 26) kernels on fields ℝᵖ → ℝᵖ. It gives the
same numbers as :class:`jaxmtl.structured.DivCurlOperator` but computes a product as ONE dense
(m × n) @ (n × (p² + 3p + 1)) GEMM with the Gaussian weights stored once, instead of rebuilding
the weights and an (m, n, p) difference tensor at every product.

The algebra. With z = (x − x̄)/σ (centred: the kernels depend on differences only),
u_ij = z_i − z_j and w_ij = e^{−‖u_ij‖²/2}/σ²,

    Γ_cf(x_i, x_j) = w_ij (I − u_ij u_ijᵀ),   Γ_df(x_i, x_j) = w_ij (u_ij u_ijᵀ + ((p − 1) − ‖u_ij‖²) I),

so (Γ C)_i needs Q = Σ_j w_ij c_j, P = Σ_j w_ij u_ij (u_ij·c_j) and R = Σ_j w_ij ‖u_ij‖² c_j:
curl-free = Q − P, div-free = P + (p − 1)Q − R. Expanding u_ij = z_i − z_j with s_j = z_j·c_j,

    P_a = z_ia (z_i·Q)_i − Σ_b z_ib W(z_a∘c_b)_i − z_ia W(s)_i + W(z_a∘s)_i,
    R_a = ‖z_i‖² Q_a − 2 Σ_b z_ib W(z_b∘c_a)_i + W(‖z‖²∘c_a)_i,

where every W(·) is a column of W @ M with M = [C, z_a∘c_b (p²), s, z_a∘s (p), ‖z‖²∘C (p)].
The expansion cancels terms of size ‖z‖²·|W C|; after centring, with widths near the data
scale, that is a few ulps in float64 and about 1e-5 relative in float32.

Validated constructors (plain Python, before tracing) for the operators of
:mod:`jaxmtl.structured`: :func:`task_indexed_operator` from a precomputed Gram, and
:func:`sum_of_separable_operator`, :func:`transformable_operator`. Field constructors check that
the field's output dimension equals its input dimension (:func:`check_field`).

Example:
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(5, 2))
    >>> op = div_curl_operator(X, 1.0, gamma=0.3)
    >>> curl, div = split_field(op, np.ones((5, 2)))
    >>> curl.shape, div.shape
    ((5, 2), (5, 2))
"""

from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np

from ._checks import as_float_array, check_inputs, check_output_matrix, check_positive, check_unit_interval
from .errors import ParameterError, ShapeError, TaskError
from .kernels import Gaussian, Kernel, squared_distances
from .operators import GramOperator
from .structured import SumOfSeparableOperator, TaskIndexedOperator, TransformableOperator

__all__ = [
    "GaussianFieldOperator",
    "div_curl_operator",
    "div_free_operator",
    "curl_free_operator",
    "split_field",
    "check_field",
    "task_indexed_operator",
    "sum_of_separable_operator",
    "transformable_operator",
]

Array = jax.Array


class GaussianFieldOperator(GramOperator):
    """γ·Γ_cf + (1 − γ)·Γ_df (Gaussian curl-free eq. 27, div-free eq. 26) as dense GEMMs.

    γ is the weight of the **curl-free** part (γ = 1 curl-free, γ = 0 divergence-free), as in
    :func:`jaxmtl.structured.div_curl` and :func:`jaxmtl.datasets.vector_field_1`.

    Args:
      W: (m, n) weights e^{−‖z_i − z_j‖²/2}/σ².
      Z_rows: (m, p) centred, scaled row inputs (x − x̄)/σ; Z_cols: (n, p) the same for columns.
      gamma: scalar weight of the curl-free part (an array leaf: vmap over it).

    Build it with :func:`div_curl_operator` (or :func:`div_free_operator`,
    :func:`curl_free_operator`).
    """

    W: Array
    Z_rows: Array
    Z_cols: Array
    gamma: Array

    @property
    def shape(self):
        return self.Z_cols.shape

    def _terms(self, C):
        """(Q, P, R), each (m, p), from one GEMM of W with p² + 3p + 1 columns."""
        Zr, Zc = self.Z_rows, self.Z_cols
        n, p = Zc.shape
        s = jnp.sum(Zc * C, axis=1, keepdims=True)  # (n, 1) z_j·c_j
        zc = (Zc[:, :, None] * C[:, None, :]).reshape(n, p * p)  # [a, b] = z_a c_b
        r2 = jnp.sum(Zc * Zc, axis=1, keepdims=True)
        M = jnp.concatenate([C, zc, s, Zc * s, r2 * C], axis=1)
        G = self.W @ M
        m = Zr.shape[0]
        Q = G[:, :p]
        WzC = G[:, p:p + p * p].reshape(m, p, p)  # [i, a, b] = Σ_j w_ij z_ja c_jb
        Ws = G[:, p + p * p:p + p * p + 1]
        Wzs = G[:, p + p * p + 1:2 * p + p * p + 1]
        Wr2c = G[:, 2 * p + p * p + 1:]
        P = (Zr * jnp.sum(Zr * Q, axis=1, keepdims=True) - jnp.einsum("ib,iab->ia", Zr, WzC)
             - Zr * Ws + Wzs)
        R = jnp.sum(Zr * Zr, axis=1, keepdims=True) * Q - 2.0 * jnp.einsum("ib,iba->ia", Zr, WzC) + Wr2c
        return Q, P, R

    def parts(self, C):
        """(curl-free part γ·Γ_cf C, divergence-free part (1 − γ)·Γ_df C), each (m, p)."""
        Q, P, R = self._terms(C)
        p = self.Z_cols.shape[1]
        return self.gamma * (Q - P), (1.0 - self.gamma) * (P + (p - 1) * Q - R)

    def mv(self, C):
        curl, div = self.parts(C)
        return curl + div


# ------------------------------------------------------------------------------ constructors
def check_field(X, V=None, name: str = "V") -> tuple[np.ndarray, np.ndarray | None]:
    """Inputs (n, p) and optional field values (n, p) of a vector field ℝᵖ → ℝᵖ.

    Raises :class:`~jaxmtl.errors.ShapeError` when the field's output dimension differs from its
    input dimension (div-free and curl-free kernels are defined for fields ℝᵖ → ℝᵖ only).
    """
    X = check_inputs(X)
    if V is None:
        return X, None
    V = as_float_array(V, name, ndim=(1, 2))
    V = V[:, None] if V.ndim == 1 else V
    if V.shape[0] != X.shape[0]:
        raise ShapeError(f"{name} must have one row per input: expected {X.shape[0]}, received {V.shape}.")
    if V.shape[1] != X.shape[1]:
        raise ShapeError(
            f"div-free and curl-free kernels need fields R^p -> R^p: X has p={X.shape[1]} features "
            f"but {name} has {V.shape[1]} components."
        )
    return X, V


def _width(sigma) -> float:
    if isinstance(sigma, Gaussian):
        sigma = sigma.sigma
    elif isinstance(sigma, Kernel):
        raise ParameterError(
            f"div/curl-free kernels are built on a Gaussian; received {type(sigma).__name__}."
        )
    return check_positive(sigma, "sigma")


def div_curl_operator(X, sigma, gamma: float = 0.5, *, X_rows=None, V=None) -> GaussianFieldOperator:
    """Validated :class:`GaussianFieldOperator` γ·Γ_cf + (1 − γ)·Γ_df.

    Args:
      X: (n, p) training inputs (the columns: coefficients are (n, p)).
      sigma: Gaussian width σ > 0, or a :class:`~jaxmtl.kernels.Gaussian`.
      gamma: weight of the curl-free part in [0, 1].
      X_rows: (m, p) inputs where the field is evaluated (default X: the training operator).
      V: optional (n, p) field values, only checked against X (:func:`check_field`).

    Returns:
      :class:`GaussianFieldOperator` mapping (n, p) coefficients to (m, p) values.
    """
    s = _width(sigma)
    X, _ = check_field(X, V)
    Xr = X if X_rows is None else check_inputs(X_rows, "X_rows")
    if Xr.shape[1] != X.shape[1]:
        raise ShapeError(f"X_rows has {Xr.shape[1]} features but X has {X.shape[1]}.")
    g = check_unit_interval(gamma, "gamma")
    if g.size != 1:
        raise ParameterError(f"gamma must be one number in [0, 1]; received {g.tolist()}.")
    g = float(g[0])
    if g < 1.0 and X.shape[1] < 2:
        raise ShapeError("the divergence-free kernel vanishes for p = 1: fields need p >= 2 (or gamma=1).")
    dtype = jnp.result_type(X.dtype, Xr.dtype)
    Xc, Xr = jnp.asarray(X, dtype), jnp.asarray(Xr, dtype)
    centre = jnp.mean(Xc, axis=0)
    Zc, Zr = (Xc - centre) / s, (Xr - centre) / s
    W = jnp.exp(-0.5 * squared_distances(Zr, Zc)) / s**2
    return GaussianFieldOperator(W, Zr, Zc, jnp.asarray(g, dtype))


def div_free_operator(X, sigma, *, X_rows=None, V=None) -> GaussianFieldOperator:
    """Gaussian divergence-free kernel (eq. 26): :func:`div_curl_operator` with γ = 0."""
    return div_curl_operator(X, sigma, 0.0, X_rows=X_rows, V=V)


def curl_free_operator(X, sigma, *, X_rows=None, V=None) -> GaussianFieldOperator:
    """Gaussian curl-free kernel (eq. 27): :func:`div_curl_operator` with γ = 1."""
    return div_curl_operator(X, sigma, 1.0, X_rows=X_rows, V=V)


def split_field(op, C) -> tuple[Array, Array]:
    """The curl-free and divergence-free parts of a fitted field.

    Both parts use the same coefficients C; each is its kernel's share of the combination,
    scaled by its weight (γ and 1 − γ), so they add up to ``op.mv(C)``.

    Args:
      op: a :class:`GaussianFieldOperator` (or :class:`jaxmtl.structured.DivCurlOperator`) whose
        rows are the evaluation inputs.
      C: (n, p) fitted coefficients.

    Returns:
      (curl_free, div_free), each (m, p).
    """
    if not hasattr(op, "parts"):
        raise ParameterError(f"split_field needs a div/curl-free operator; received {type(op).__name__}.")
    C = jnp.asarray(as_float_array(C, "C", ndim=2))
    if tuple(C.shape) != tuple(op.shape):
        raise ShapeError(f"C must have the operator's shape {tuple(op.shape)}; received {C.shape}.")
    return op.parts(C.astype(op.dtype))


def task_indexed_operator(K, A, tasks) -> TaskIndexedOperator:
    """Validated task-indexed Gram Q_ij = K_ij·A[tᵢ, tⱼ] from a precomputed Gram K.

    The product is Σ_r L[t, r] ∘ (K (L[t, r] ∘ c)) over a factor A = L Lᵀ, stacked as ONE
    product K @ (L[tasks] ∘ c) with R = rank(A) columns; the N × N Hadamard product K ∘ A[t][:, t]
    is never formed.

    Args:
      K: (N, N) scalar Gram over all examples (finite, symmetric).
      A: (T, T) symmetric PSD task matrix.
      tasks: (N,) integer task ids in 0..T − 1; every task needs at least one example.

    Returns:
      :class:`jaxmtl.structured.TaskIndexedOperator` on (N, 1) coefficients.
    """
    K = as_float_array(K, "K", ndim=2)
    N = K.shape[0]
    if K.shape != (N, N):
        raise ShapeError(f"K must be square; received shape {K.shape}.")
    scale = max(float(np.abs(K).max()), np.finfo(np.float64).tiny)
    if float(np.abs(K - K.T).max()) > 1e-6 * scale:
        raise ParameterError("K must be symmetric (a Gram matrix over the training examples).")
    A = check_output_matrix(A, name="A")
    T = A.shape[0]
    t = np.asarray(tasks)
    if t.ndim != 1 or t.shape[0] != N:
        raise ShapeError(f"tasks must hold one id per example: expected shape ({N},), received {t.shape}.")
    if t.dtype.kind not in "iu":
        if t.dtype.kind == "f" and np.all(np.isfinite(t)) and np.all(t == np.round(t)):
            t = t.astype(np.int64)
        else:
            raise TaskError(f"tasks must be integer ids 0..{T - 1}; received dtype {t.dtype}.")
    unknown = np.unique(t[(t < 0) | (t >= T)])
    if unknown.size:
        raise TaskError(f"tasks holds unknown ids {unknown.tolist()[:5]}: A is {T}x{T}, so ids must lie in 0..{T - 1}.")
    empty = np.setdiff1d(np.arange(T), t)
    if empty.size:
        raise TaskError(f"task {int(empty[0])} has no examples (tasks without examples: {empty.tolist()[:10]}); "
                        "drop it from A or add its data.")
    a, V = np.linalg.eigh(A.astype(np.float64))
    keep = a > 1e-12 * max(a.max(), 1e-300)
    L = V[:, keep] * np.sqrt(a[keep])
    Kj = jnp.asarray(K)
    tj = jnp.asarray(t)
    return TaskIndexedOperator(Kj, jnp.asarray(L, Kj.dtype), tj, tj)


def sum_of_separable_operator(Ks, Bs) -> SumOfSeparableOperator:
    """Validated Σᵢ Kᵢ ⊗ Bᵢ (seed 003 eq. 3.10; seed 000 §4.1): product Σᵢ Kᵢ C Bᵢ.

    Args:
      Ks: (q, n, n) scalar Gram matrices; Bs: (q, d, d) symmetric PSD output matrices.
    """
    Ks = as_float_array(Ks, "Ks", ndim=3)
    Bs = as_float_array(Bs, "Bs", ndim=3)
    q, n, n2 = Ks.shape
    if n != n2:
        raise ShapeError(f"each K_i must be square; Ks has shape {Ks.shape}.")
    if Bs.shape[0] != q:
        raise ShapeError(f"Ks and Bs need the same number of terms; received {q} and {Bs.shape[0]}.")
    Bs = np.stack([check_output_matrix(B, name=f"Bs[{i}]") for i, B in enumerate(Bs)])
    dtype = jnp.result_type(Ks.dtype, Bs.dtype)
    return SumOfSeparableOperator(jnp.asarray(Ks, dtype), jnp.asarray(Bs, dtype))


def transformable_operator(kernel: Kernel, X, shifts=None, *, Z=None, X_rows=None) -> TransformableOperator:
    """Validated transformable kernel Γ(x, x')_{pq} = K(T_p x, T_q x') (seed 000 §4.1).

    Give either ``shifts`` (d, p) for T_q x = x + τ_q, or the transformed inputs ``Z`` (d, n, p)
    directly. Products are computed block-wise over the d × d output pairs.

    Args:
      kernel: scalar :class:`~jaxmtl.kernels.Kernel`.
      X: (n, p) inputs (with ``shifts``).
      shifts: (d, p) or (d,) translations τ_q.
      Z: (d, n, p) transformed training inputs (instead of X and shifts).
      X_rows: (m, p) evaluation inputs (with ``shifts``; default X).
    """
    if not isinstance(kernel, Kernel):
        raise ParameterError(f"kernel must be a jaxmtl.kernels.Kernel; received {kernel!r}.")
    if (Z is None) == (shifts is None):
        raise ParameterError("give exactly one of shifts (with X) or Z.")
    if Z is not None:
        Zc = as_float_array(Z, "Z", ndim=3)
        return TransformableOperator(kernel, jnp.asarray(Zc), jnp.asarray(Zc))
    X = check_inputs(X)
    sh = as_float_array(shifts, "shifts", ndim=(1, 2))
    sh = sh[:, None] if sh.ndim == 1 else sh
    if sh.shape[1] != X.shape[1]:
        raise ShapeError(f"shifts must be (d, {X.shape[1]}) to match X; received {sh.shape}.")
    Xr = X if X_rows is None else check_inputs(X_rows, "X_rows")
    if Xr.shape[1] != X.shape[1]:
        raise ShapeError(f"X_rows has {Xr.shape[1]} features but X has {X.shape[1]}.")
    Zc = X[None] + sh[:, None, :]
    Zr = Xr[None] + sh[:, None, :]
    return TransformableOperator(kernel, jnp.asarray(Zr), jnp.asarray(Zc))
