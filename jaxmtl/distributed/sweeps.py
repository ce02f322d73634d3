r"""A sweep sharded over the devices of a mesh: the width, ω or data-set axis, not the rows.

A sweep in the functional core is ``jax.jit(jax.vmap(one))(values, *shared)``: ``one`` runs a
whole path for one width (or one ω, one data set) and the sweep stacks them
(docs/tutorials/jax_research.md). Its points are independent, so they shard without any
communication: every device runs the path for its own slice of ``values``, the shared arguments
(the data, the folds) replicated. :func:`shard_sweep` does this with plain JAX — ``values``
placed with a ``NamedSharding`` over the mesh's one axis, the shared arguments replicated, the
vmapped function jitted once — after padding the swept axis to a multiple of the device count
(the last point repeated, its results dropped), so any number of points runs on any mesh. The
results equal the unsharded sweep's: each point's program is the same, only where it runs changes.

This complements the row sharding of :mod:`jaxmtl.distributed.paths` (one large path, its rows
over the devices, collectives in every product): shard the sweep when there are more points
than devices and each path fits one device; shard the rows when one path does not.

Example:
    >>> import jax, jax.numpy as jnp
    >>> from jaxmtl.kernels import Gaussian
    >>> X = jnp.linspace(-1.0, 1.0, 20)[:, None]
    >>> trace = shard_sweep(lambda w, X: jnp.trace(Gaussian(w)(X, X)))
    >>> trace(jnp.array([0.5, 1.0, 2.0]), X)    # on every device of sweep_mesh()
    Array([20., 20., 20.], dtype=float32)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .._jit import jit
from ..errors import ParameterError, ShapeError
from .mesh import mesh_devices

__all__ = ["SWEEP_AXIS", "shard_sweep", "sweep_mesh"]

SWEEP_AXIS = "sweep"


def sweep_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A one-axis ``("sweep",)`` mesh over ``devices`` (default every device JAX sees).

    Example:
        >>> sweep_mesh().axis_names
        ('sweep',)
    """
    return Mesh(np.asarray(mesh_devices(devices)), (SWEEP_AXIS,))


def shard_sweep(fn: Callable[..., Any], mesh: Mesh | None = None) -> Callable[..., Any]:
    """``sweep(values, *shared)`` = ``jax.vmap(fn, in_axes=(0, None, …))(values, *shared)``,
    compiled once, its points sharded over the devices of ``mesh``.

    Args:
      fn: ``fn(value, *shared)`` → a pytree of arrays: one point of the sweep (a width, an ω, a
        data set; ``value`` may be a pytree).
      mesh: a mesh with one axis (default :func:`sweep_mesh`, every device).

    Returns:
      ``sweep(values, *shared)``: ``values`` a pytree of arrays with a common leading axis of S
      points; every output leaf has that leading axis S. The S points are padded to a multiple
      of the device count by repeating the last one (the copies' results are dropped).

    Raises:
      ParameterError: ``mesh`` is not a one-axis Mesh. ShapeError (when called): the leaves of
        ``values`` differ in their leading axis, or it is empty.

    Example:
        >>> import jax.numpy as jnp
        >>> shard_sweep(lambda w, x: w * x)(jnp.arange(5.0), 2.0)
        Array([0., 2., 4., 6., 8.], dtype=float32)
    """
    mesh = sweep_mesh() if mesh is None else mesh
    if not isinstance(mesh, Mesh) or len(mesh.axis_names) != 1:
        raise ParameterError(f"mesh must be a jax.sharding.Mesh with one axis (see sweep_mesh); received "
                             f"{mesh if not isinstance(mesh, Mesh) else mesh.axis_names!r}.")
    points = NamedSharding(mesh, PartitionSpec(mesh.axis_names[0]))
    replicated = NamedSharding(mesh, PartitionSpec())
    n_devices = mesh.devices.size
    run = jit(lambda values, shared: jax.vmap(lambda v: fn(v, *shared))(values), out_shardings=points)

    def sweep(values: Any, *shared: Any) -> Any:
        leaves = jax.tree.leaves(values)
        sizes = {int(jnp.shape(leaf)[0]) if jnp.ndim(leaf) else -1 for leaf in leaves}
        if len(sizes) != 1 or min(sizes) < 1:
            raise ShapeError(f"values must be arrays with one common, non-empty leading axis (the sweep's "
                             f"points); received leading sizes {sorted(sizes)}.")
        S = sizes.pop()
        pad = -S % n_devices
        padded = jax.tree.map(lambda v: jnp.concatenate([v, jnp.repeat(v[-1:], pad, axis=0)]) if pad else
                              jnp.asarray(v), values)
        out = run(jax.device_put(padded, points), jax.device_put(shared, replicated))
        return jax.tree.map(lambda o: o[:S], out) if pad else out

    return sweep
