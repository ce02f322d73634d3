r"""Exact kernels without storing K: the Gram product evaluated in row blocks inside every product.

[Din11] F. Dinuzzo, *Learning functions with kernel methods*, PhD thesis, 2011, §1.6.1: "the
most memory efficient solution would be not storing any of the entries of the kernel matrix,
thus re-computing them when necessary" — at the price of evaluating the kernel again at every
product. :class:`BlockedKernelOperator` is that extreme for Γ = K ⊗ A: each ``mv`` evaluates
K(X_b, X) for ``block_size`` rows at a time (``lax.map``), multiplies by C and drops the
block, so memory is O(block·n + n·d + n·p) and the matrix-free paths of :mod:`jaxmtl.paths`
(ν-method, Landweber, k-fold masks) run on it unchanged, with the same numbers as the stored
Gram (:class:`~jaxmtl.operators.SeparableOperator`). Per product the cost is n²(p + d) flops
plus n² kernel evaluations: on an accelerator this is compute-bound and the way to exact paths
at n = 10⁵–10⁶, where K (80 GB at n = 10⁵ in float64) cannot be stored.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.kernels import Gaussian
    >>> X = jnp.linspace(0.0, 1.0, 7)[:, None]
    >>> op = BlockedKernelOperator(Gaussian(0.3), X, jnp.eye(2), block_size=3)
    >>> op.mv(jnp.ones((7, 2))).shape
    (7, 2)
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from .._checks import check_int
from ..errors import ShapeError
from ..kernels.scalar import Kernel
from .base import GramOperator
from ..products import full_precision

__all__ = ["BlockedCrossOperator", "BlockedKernelOperator", "blocked_kernel_matmul", "pad_rows"]

Array = jax.Array


def pad_rows(X: Array, block: int) -> tuple[Array, int]:
    """X padded with copies of its first row to a multiple of ``block`` rows: (padded, n_blocks).

    Example:
        >>> pad_rows(jnp.zeros((5, 2)), 2)[0].shape
        (6, 2)
    """
    n = X.shape[0]
    n_blocks = -(-n // block)
    pad = n_blocks * block - n
    if pad:
        X = jnp.concatenate([X, jnp.broadcast_to(X[:1], (pad,) + X.shape[1:])])
    return X, n_blocks


@full_precision
def blocked_kernel_matmul(kernel: Kernel, X1: Array, X2: Array, C: Array, block_size: int) -> Array:
    """K(X1, X2) @ C with K evaluated ``block_size`` rows of X1 at a time (never stored whole).

    Args:
      kernel: scalar kernel; X1: (n1, p); X2: (n2, p); C: (n2, d); block_size: rows per block
        (static; ≥ n1 means one block).

    Returns:
      (n1, d) array, equal to ``kernel(X1, X2) @ C``.

    Example:
        >>> from jaxmtl.kernels import Gaussian
        >>> X = jnp.arange(5.0)[:, None]
        >>> C = jnp.ones((5, 1))
        >>> dense = jnp.matmul(Gaussian(1.0)(X, X), C, precision="highest")
        >>> bool(jnp.allclose(blocked_kernel_matmul(Gaussian(1.0), X, X, C, 2), dense))
        True
    """
    n1 = X1.shape[0]
    if block_size >= n1:
        return kernel(X1, X2) @ C
    Xp, n_blocks = pad_rows(X1, block_size)
    out = jax.lax.map(lambda B: kernel(B, X2) @ C, Xp.reshape(n_blocks, block_size, -1))
    return out.reshape(n_blocks * block_size, -1)[:n1]


def _check(X: Array, A: Array, block_size: int) -> int:
    if X.ndim != 2:
        raise ShapeError(f"X must have shape (n, p); received shape {X.shape}.")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ShapeError(f"A must be a square (d, d) matrix; received shape {A.shape}.")
    return check_int(block_size, "block_size", minimum=1)


class BlockedKernelOperator(GramOperator):
    """Γ = K(X, X) ⊗ A with K recomputed in row blocks at every product ([Din11] §1.6.1).

    Args:
      kernel: scalar kernel (its hyperparameters are leaves: vmap over widths works).
      X: (n, p) training inputs; A: (d, d) symmetric PSD output matrix.
      block_size: rows of K evaluated at once (memory block_size × n), static.
    """

    kernel: Kernel
    X: Array
    A: Array
    block_size: int = eqx.field(static=True)

    def __init__(self, kernel: Kernel, X: ArrayLike, A: ArrayLike, block_size: int = 1024) -> None:
        self.kernel, self.X, self.A = kernel, jnp.asarray(X), jnp.asarray(A)
        self.block_size = _check(self.X, self.A, block_size)

    @property
    def shape(self):
        return (self.X.shape[0], self.A.shape[0])

    @full_precision
    def mv(self, C: Array) -> Array:
        return blocked_kernel_matmul(self.kernel, self.X, self.X, C @ self.A, self.block_size)


class BlockedCrossOperator(GramOperator):
    """Predictions K(X_eval, X) C A in row blocks of X_eval: the ``eval_op`` of a blocked path.

    ``mv`` maps (n, d) coefficients to (m, d) predictions; ``shape`` is that of the coefficients.

    Args:
      kernel: scalar kernel; X_eval: (m, p); X: (n, p) training inputs; A: (d, d);
      block_size: rows of X_eval per block.
    """

    kernel: Kernel
    X_eval: Array
    X: Array
    A: Array
    block_size: int = eqx.field(static=True)

    def __init__(self, kernel: Kernel, X_eval: ArrayLike, X: ArrayLike, A: ArrayLike, block_size: int = 1024) -> None:
        self.kernel, self.X_eval, self.X, self.A = kernel, jnp.asarray(X_eval), jnp.asarray(X), jnp.asarray(A)
        self.block_size = _check(self.X, self.A, block_size)

    @property
    def shape(self):
        return (self.X.shape[0], self.A.shape[0])

    @full_precision
    def mv(self, C: Array) -> Array:
        return blocked_kernel_matmul(self.kernel, self.X_eval, self.X, C @ self.A, self.block_size)
