r"""Sums of separable kernels and transformable kernels, as products only.

* :class:`SumOfSeparableOperator` — Σᵢ Kᵢ ⊗ Bᵢ ([MP04] eq. 3.10; [BRBV11] §4.1).
* :class:`TransformableOperator` — Γ(x, x')_{pq} = K(T_p x, T_q x') from transformed inputs ([BRBV11] §4.1).

Constructors (:func:`sum_of_separable_operator`, :func:`transformable_operator`) validate in plain Python, before tracing.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

from .._checks import as_float_array, check_inputs, check_output_matrix
from ..errors import ParameterError, ShapeError
from ..kernels.scalar import Kernel
from .base import GramOperator
from ..products import full_precision

__all__ = ["SumOfSeparableOperator", "TransformableOperator", "sum_of_separable_operator", "transformable_operator"]

Array = jax.Array


class SumOfSeparableOperator(GramOperator):
    """Σᵢ Kᵢ ⊗ Bᵢ ([MP04] eq. 3.10): product Σᵢ Kᵢ C Bᵢ.

    Args:
      Ks: (q, m, n) scalar Gram matrices; Bs: (q, d, d) symmetric PSD output matrices.
    """

    Ks: Array
    Bs: Array

    @property
    def shape(self):
        return (self.Ks.shape[2], self.Bs.shape[1])

    @full_precision
    def mv(self, C: Array) -> Array:
        return jnp.einsum("qmn,nd,qde->me", self.Ks, C, self.Bs)


class TransformableOperator(GramOperator):
    """Γ(x, x')_{pq} = K(T_p x, T_q x') from transformed inputs ([BRBV11] §4.1).

    Args:
      kernel: the scalar kernel K.
      Z_rows: (d, m, p) inputs of the rows after each output's transformation T_p.
      Z_cols: (d, n, p) the same for the columns.
    """

    kernel: Kernel
    Z_rows: Array
    Z_cols: Array

    @property
    def shape(self):
        return (self.Z_cols.shape[1], self.Z_cols.shape[0])

    @full_precision
    def mv(self, C: Array) -> Array:
        def row_block(Zp):  # (m, p) → Σ_q K(T_p X, T_q X') C[:, q]
            return jnp.sum(jax.vmap(lambda Zq, c: self.kernel(Zp, Zq) @ c, in_axes=(0, 1))(self.Z_cols, C), 0)

        return jax.vmap(row_block, out_axes=1)(self.Z_rows)


def sum_of_separable_operator(Ks: npt.ArrayLike, Bs: npt.ArrayLike) -> SumOfSeparableOperator:
    """Validated Σᵢ Kᵢ ⊗ Bᵢ ([MP04] eq. 3.10; [BRBV11] §4.1): product Σᵢ Kᵢ C Bᵢ.

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


def transformable_operator(kernel: Kernel, X: npt.ArrayLike, shifts: npt.ArrayLike | None = None, *,
                           Z: npt.ArrayLike | None = None, X_rows: npt.ArrayLike | None = None) -> TransformableOperator:
    """Validated transformable kernel Γ(x, x')_{pq} = K(T_p x, T_q x') ([BRBV11] §4.1).

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
