r"""Gram operators whose rows live on several devices, through ``jax.sharding`` (JAX's own SPMD engine).

A :class:`jax.sharding.Mesh` with one axis (``"rows"``) spans the devices; training inputs (or a
stored Gram's rows) are placed with ``NamedSharding(mesh, PartitionSpec("rows"))``, so device r
holds rows r·n/R … (r+1)·n/R − 1. A product Γ C then runs as

* :class:`ShardedKernelOperator` — exact kernel, never stored: ``shard_map`` gives each device
  its rows of X and of C; the devices ``all_gather`` X and C (n·(p + d) numbers, the only
  communication) and each evaluates its rows K(X_r, X) in blocks (as
  :class:`~jaxmtl.operators.blocked.BlockedKernelOperator`) and returns its rows of K C A.
  Memory per device O(block·n + n·(p + d)), compute n²(p + d)/R.
* :class:`ShardedGramOperator` — a stored Gram whose rows are sharded (n²/R per device); the
  product ``K @ C @ A`` is partitioned by XLA's SPMD partitioner from the shardings alone.

Both are :class:`~jaxmtl.operators.GramOperator` s, so the matrix-free paths of
:mod:`jaxmtl.paths` (``iterative_path``, ``path_scan``, k-fold masks) run on every device of the
host unchanged; with ``jax.distributed.initialize()`` called first, ``jax.devices()`` lists every
host's devices and the same mesh spans them all. Rows are padded to a multiple of the device count
(copies of the first input with zero coefficients), and the padding is sliced off every product.
CPU runs can simulate R devices with ``XLA_FLAGS=--xla_force_host_platform_device_count=R`` set
before JAX is imported.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.kernels import Gaussian
    >>> X = jnp.linspace(0.0, 1.0, 9)[:, None]
    >>> op = ShardedKernelOperator(Gaussian(0.3), X, jnp.eye(2), row_mesh())
    >>> op.mv(jnp.ones((9, 2))).shape
    (9, 2)
"""

from __future__ import annotations

from typing import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .._checks import check_int
from ..errors import ShapeError
from ..kernels.scalar import Kernel
from .base import GramOperator
from .blocked import blocked_kernel_matmul
from ..products import full_precision

__all__ = ["ShardedGramOperator", "ShardedKernelOperator", "row_mesh", "shard_rows"]

Array = jax.Array
AXIS = "rows"


def row_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A one-axis mesh ``("rows",)`` over ``devices`` (default: every device JAX sees).

    Example:
        >>> row_mesh().axis_names
        ('rows',)
    """
    devs = np.asarray(jax.devices() if devices is None else list(devices))
    if devs.size == 0:
        raise ShapeError("row_mesh needs at least one device; received none.")
    return Mesh(devs.reshape(-1), (AXIS,))


def _padded(n: int, mesh: Mesh) -> int:
    r = mesh.devices.size
    return -(-n // r) * r


def shard_rows(x: ArrayLike, mesh: Mesh) -> Array:
    """Place ``x`` with its first axis split over the mesh's devices (rows padded with zeros first
    when n is not a multiple of the device count; the caller slices them off).

    Example:
        >>> shard_rows(jnp.ones((4, 2)), row_mesh()).shape
        (4, 2)
    """
    x = jnp.asarray(x)
    n_pad = _padded(x.shape[0], mesh)
    if n_pad != x.shape[0]:
        x = jnp.concatenate([x, jnp.zeros((n_pad - x.shape[0],) + x.shape[1:], x.dtype)])
    spec = PartitionSpec(AXIS, *([None] * (x.ndim - 1)))
    return jax.device_put(x, NamedSharding(mesh, spec))


def _pad_to(C: Array, n_pad: int) -> Array:
    return C if C.shape[0] == n_pad else jnp.concatenate([C, jnp.zeros((n_pad - C.shape[0],) + C.shape[1:],
                                                                       C.dtype)])


class ShardedKernelOperator(GramOperator):
    """Γ = K(X, X) ⊗ A with the rows of X (and of every product) split across a device mesh.

    Args:
      kernel: scalar kernel (replicated on every device).
      X: (n, p) training inputs; A: (d, d) output matrix.
      mesh: a one-axis ``("rows",)`` mesh (:func:`row_mesh`).
      block_size: rows of K evaluated at once on each device.
    """

    kernel: Kernel
    X: Array
    A: Array
    n: int = eqx.field(static=True)
    mesh: Mesh = eqx.field(static=True)
    block_size: int = eqx.field(static=True)

    def __init__(self, kernel: Kernel, X: ArrayLike, A: ArrayLike, mesh: Mesh | None = None,
                 block_size: int = 1024) -> None:
        X, A = jnp.asarray(X), jnp.asarray(A)
        if X.ndim != 2:
            raise ShapeError(f"X must have shape (n, p); received shape {X.shape}.")
        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            raise ShapeError(f"A must be a square (d, d) matrix; received shape {A.shape}.")
        self.mesh = row_mesh() if mesh is None else mesh
        self.n = X.shape[0]
        n_pad = _padded(self.n, self.mesh)
        Xp = jnp.concatenate([X, jnp.broadcast_to(X[:1], (n_pad - self.n, X.shape[1]))]) if n_pad > self.n else X
        self.X = shard_rows(Xp, self.mesh)
        self.A = A
        self.kernel = kernel
        self.block_size = check_int(block_size, "block_size", minimum=1)

    @property
    def shape(self):
        return (self.n, self.A.shape[0])

    @full_precision
    def mv_padded(self, C: Array) -> Array:
        """(n_pad, d) product with its rows left on their devices (padding rows included)."""
        C = _pad_to(C, self.X.shape[0])
        block = self.block_size

        def local(kernel, X_loc, C_loc, A):
            X_all = jax.lax.all_gather(X_loc, AXIS, tiled=True)
            C_all = jax.lax.all_gather(C_loc, AXIS, tiled=True)
            return blocked_kernel_matmul(kernel, X_loc, X_all, C_all @ A, block)

        rows = PartitionSpec(AXIS, None)
        fn = jax.shard_map(local, mesh=self.mesh, in_specs=(PartitionSpec(), rows, rows, PartitionSpec()),
                           out_specs=rows)
        return fn(self.kernel, self.X, C, self.A)

    @full_precision
    def mv(self, C: Array) -> Array:
        return self.mv_padded(C)[: self.n]


class ShardedGramOperator(GramOperator):
    """Γ = K ⊗ A for a stored Gram K whose rows are split across a device mesh (XLA SPMD).

    Args:
      K: (n, n) Gram matrix; A: (d, d); mesh: a one-axis ``("rows",)`` mesh.
    """

    K: Array
    A: Array
    n: int = eqx.field(static=True)

    def __init__(self, K: ArrayLike, A: ArrayLike, mesh: Mesh | None = None) -> None:
        K, A = jnp.asarray(K), jnp.asarray(A)
        if K.ndim != 2 or K.shape[0] != K.shape[1]:
            raise ShapeError(f"K must be a square (n, n) Gram matrix; received shape {K.shape}.")
        mesh = row_mesh() if mesh is None else mesh
        self.n = K.shape[0]
        n_pad = _padded(self.n, mesh)
        if n_pad > self.n:
            K = jnp.pad(K, ((0, n_pad - self.n), (0, n_pad - self.n)))
        self.K = shard_rows(K, mesh)
        self.A = A

    @property
    def shape(self):
        return (self.n, self.A.shape[0])

    @full_precision
    def mv(self, C: Array) -> Array:
        return (self.K @ _pad_to(C, self.K.shape[0]) @ self.A)[: self.n]
