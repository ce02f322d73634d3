r"""Vector fields ℝᵖ → ℝᵖ: the Gaussian divergence-free (26) and curl-free (27) kernels ([BRBV11] §4.1).

:class:`DivCurlOperator` is the Gram operator of γ·Γ_cf + (1 − γ)·Γ_df. It computes a product
as ONE dense (m × n) @ (n × (p² + 3p + 1)) GEMM with the Gaussian weights stored once — the
(mp)×(np) matrix is never formed, and no (m, n, p) difference tensor is built per product: one
product costs about one bare ``K @ C`` (``benchmarks/perf_iterative.py``).

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

Constructors validate in plain Python (:func:`div_curl`, :func:`div_free`, :func:`curl_free`,
:func:`check_field`); :func:`field_operator` is the unvalidated, jittable builder.

Example:
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(5, 2))
    >>> op = div_curl(X, 1.0, gamma=0.3)
    >>> curl, div = split_field(op, np.ones((5, 2)))
    >>> curl.shape, div.shape
    ((5, 2), (5, 2))
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
from jax.typing import ArrayLike

from .._checks import as_float_array, check_inputs, check_positive, check_unit_interval, is_traced, traced_check
from ..errors import ParameterError, ShapeError
from ..kernels.scalar import Gaussian, Kernel, squared_distances
from .base import GramOperator
from ..products import full_precision

__all__ = ["DivCurlOperator", "field_operator", "div_curl", "div_free", "curl_free", "split_field", "check_field"]

Array = jax.Array


class DivCurlOperator(GramOperator):
    """γ·Γ_cf + (1 − γ)·Γ_df (Gaussian curl-free eq. 27, div-free eq. 26) as dense GEMMs.

    γ is the weight of the **curl-free** part (γ = 1 curl-free, γ = 0 divergence-free), as in
    :func:`jaxmtl.datasets.vector_field_1`.

    Args:
      W: (m, n) weights e^{−‖z_i − z_j‖²/2}/σ².
      Z_rows: (m, p) centred, scaled row inputs (x − x̄)/σ; Z_cols: (n, p) the same for columns.
      gamma: scalar weight of the curl-free part (an array leaf: vmap over it).

    Build it with :func:`div_curl` (validated; or :func:`div_free`, :func:`curl_free`), or with
    :func:`field_operator` inside jitted code.
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

    @full_precision
    def parts(self, C: Array) -> tuple[Array, Array]:
        """(curl-free part γ·Γ_cf C, divergence-free part (1 − γ)·Γ_df C), each (m, p)."""
        Q, P, R = self._terms(C)
        p = self.Z_cols.shape[1]
        return self.gamma * (Q - P), (1.0 - self.gamma) * (P + (p - 1) * Q - R)

    @full_precision
    def mv(self, C: Array) -> Array:
        curl, div = self.parts(C)
        return curl + div


# ------------------------------------------------------------------------------ constructors
def field_operator(X_rows: Array, X_cols: Array, sigma: ArrayLike, gamma: ArrayLike) -> DivCurlOperator:
    """Unvalidated, jittable :class:`DivCurlOperator` (centred on the mean of ``X_cols``).

    Args:
      X_rows: (m, p) evaluation inputs; X_cols: (n, p) training inputs (the coefficients' rows).
      sigma: Gaussian width; gamma: weight of the curl-free part (array leaves: vmap over them).
    """
    centre = jnp.mean(X_cols, axis=0)
    Zc, Zr = (X_cols - centre) / sigma, (X_rows - centre) / sigma
    W = jnp.exp(-0.5 * squared_distances(Zr, Zc)) / sigma**2
    return DivCurlOperator(W, Zr, Zc, jnp.asarray(gamma, W.dtype))


def check_field(X: npt.ArrayLike, V: npt.ArrayLike | None = None, name: str = "V") -> tuple[np.ndarray, np.ndarray | None]:
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


def _width(sigma) -> float | Array:
    if isinstance(sigma, Gaussian):
        sigma = sigma.sigma
    elif isinstance(sigma, Kernel):
        raise ParameterError(
            f"div/curl-free kernels are built on a Gaussian; received {type(sigma).__name__}."
        )
    if is_traced(sigma):
        s = _traced_scalar(sigma, "sigma")
        return traced_check(s, jnp.isfinite(s) & (s > 0), "sigma must be a finite positive number.")
    return check_positive(sigma, "sigma")


def _traced_scalar(x, name: str) -> Array:
    if jnp.ndim(x) != 0:
        raise ParameterError(f"{name} must be one number; received shape {jnp.shape(x)}.")
    return jnp.asarray(x)


def _gamma(gamma, p: int) -> float | Array:
    """γ in [0, 1] (checked at run time when traced); γ < 1 needs p >= 2."""
    if is_traced(gamma):
        g = _traced_scalar(gamma, "gamma")
        ok = (g >= 0) & (g <= 1) & ((g == 1) | (p >= 2))
        return traced_check(g, ok, "gamma must lie in [0, 1], and be 1 for p = 1 (the divergence-free "
                                   "kernel vanishes for p = 1).")
    gammas = check_unit_interval(gamma, "gamma")
    if gammas.size != 1:
        raise ParameterError(f"gamma must be one number in [0, 1]; received {gammas.tolist()}.")
    g = float(gammas[0])
    if g < 1.0 and p < 2:
        raise ShapeError("the divergence-free kernel vanishes for p = 1: fields need p >= 2 (or gamma=1).")
    return g


@full_precision
def div_curl(X: npt.ArrayLike, sigma: float | Gaussian, gamma: float = 0.5, *, X_rows: npt.ArrayLike | None = None,
             V: npt.ArrayLike | None = None) -> DivCurlOperator:
    """Validated :class:`DivCurlOperator` γ·Γ_cf + (1 − γ)·Γ_df.

    Args:
      X: (n, p) training inputs (the columns: coefficients are (n, p)).
      sigma: Gaussian width σ > 0, or a :class:`~jaxmtl.kernels.Gaussian`.
      gamma: weight of the curl-free part in [0, 1].
        Both may be traced (inside ``jit``, ``vmap``, ``grad``): their range is then checked at
        run time (docs/errors.md, "Checks under jit").
      X_rows: (m, p) inputs where the field is evaluated (default X: the training operator).
      V: optional (n, p) field values, only checked against X (:func:`check_field`).

    Returns:
      :class:`DivCurlOperator` mapping (n, p) coefficients to (m, p) values.
    """
    s = _width(sigma)
    X, _ = check_field(X, V)
    Xr = X if X_rows is None else check_inputs(X_rows, "X_rows")
    if Xr.shape[1] != X.shape[1]:
        raise ShapeError(f"X_rows has {Xr.shape[1]} features but X has {X.shape[1]}.")
    g = _gamma(gamma, X.shape[1])
    dtype = jnp.result_type(X.dtype, Xr.dtype)
    return field_operator(jnp.asarray(Xr, dtype), jnp.asarray(X, dtype), jnp.asarray(s, dtype), g)


@full_precision
def div_free(X: npt.ArrayLike, sigma: float | Gaussian, *, X_rows: npt.ArrayLike | None = None,
             V: npt.ArrayLike | None = None) -> DivCurlOperator:
    """Gaussian divergence-free kernel (eq. 26): :func:`div_curl` with γ = 0."""
    return div_curl(X, sigma, 0.0, X_rows=X_rows, V=V)


@full_precision
def curl_free(X: npt.ArrayLike, sigma: float | Gaussian, *, X_rows: npt.ArrayLike | None = None,
              V: npt.ArrayLike | None = None) -> DivCurlOperator:
    """Gaussian curl-free kernel (eq. 27): :func:`div_curl` with γ = 1."""
    return div_curl(X, sigma, 1.0, X_rows=X_rows, V=V)


def split_field(op: DivCurlOperator, C: Array) -> tuple[Array, Array]:
    """The curl-free and divergence-free parts of a fitted field.

    Both parts use the same coefficients C; each is its kernel's share of the combination,
    scaled by its weight (γ and 1 − γ), so they add up to ``op.mv(C)``.

    Args:
      op: a :class:`DivCurlOperator` whose rows are the evaluation inputs.
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
