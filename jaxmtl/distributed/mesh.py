r"""The global row mesh of a multi-process run and which rows each process holds.

:func:`global_mesh` is a one-axis ``("rows",)`` :class:`jax.sharding.Mesh` over every device of
every process, ordered by process, so that process p holds one contiguous range of rows.
:class:`RowLayout` is that range: n rows are padded at the end to n_pad, a multiple of the
device count R, each device holds n_pad / R of them, and the padding rows (all on the last
devices) are masked out of every sum — so the rows a process holds and the values it computes do
not depend on how many processes there are.

Example:
    >>> layout = RowLayout.of(10, global_mesh())
    >>> layout.n_pad, layout.start, layout.stop
    (10, 0, 10)
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import jax
import numpy as np
from jax.sharding import Mesh

from ..errors import ParameterError
from ..operators.sharded import AXIS

__all__ = ["RowLayout", "check_mesh", "global_mesh"]


def global_mesh(devices: Sequence[jax.Device] | None = None) -> Mesh:
    """A ``("rows",)`` mesh over ``devices`` (default every device of every process), in process order.

    Example:
        >>> global_mesh().axis_names
        ('rows',)
    """
    devs = sorted(mesh_devices(devices), key=lambda d: (d.process_index, d.id))
    return check_mesh(Mesh(np.asarray(devs), (AXIS,)))


def mesh_devices(devices: Sequence[jax.Device] | None) -> list[jax.Device]:
    """``devices`` as a list (default every device of every process); ParameterError when empty."""
    devs = jax.devices() if devices is None else list(devices)
    if len(devs) == 0:
        raise ParameterError("devices must hold at least one device; received none.")
    return devs


def check_mesh(mesh: Any) -> Mesh:
    """``mesh`` if it can hold the rows of a multi-process run, else a ParameterError naming it.

    It must be a :class:`jax.sharding.Mesh` with the one axis ``"rows"``, span every process
    (each process holds rows), give each process the same number of devices, and list them in
    process order (each process's rows contiguous).
    """
    if not isinstance(mesh, Mesh):
        raise ParameterError(f"mesh must be a jax.sharding.Mesh (see jaxmtl.distributed.global_mesh); "
                             f"received {type(mesh).__name__}.")
    if tuple(mesh.axis_names) != (AXIS,):
        raise ParameterError(f"mesh must have the one axis ('{AXIS}',); received axes {tuple(mesh.axis_names)}.")
    procs = np.array([d.process_index for d in mesh.devices.reshape(-1)])
    counts = np.bincount(procs, minlength=jax.process_count())
    if counts.size != jax.process_count() or (counts == 0).any():
        raise ParameterError(f"mesh must span every process (0 … {jax.process_count() - 1}); received devices "
                             f"of processes {sorted(set(procs.tolist()))}.")
    if (counts != counts[0]).any():
        raise ParameterError(f"mesh must give every process the same number of devices; received {counts.tolist()}.")
    if (np.diff(procs) < 0).any():
        raise ParameterError("mesh must list its devices in process order (each process's rows contiguous); "
                             f"received processes {procs.tolist()}.")
    return mesh


class RowLayout(NamedTuple):
    """Rows of an n-row data set on a mesh: n_pad = R·⌈n/R⌉, this process's [start, stop).

    Attributes:
      n: rows; n_pad: padded rows; devices: R; per_device: n_pad / R; local: rows this process
      holds (padding included); start, stop: its range in the data set (stop ≤ n, the rest of
      ``local`` is padding); first_device: index in the mesh of this process's first device.
    """

    n: int
    n_pad: int
    devices: int
    per_device: int
    local: int
    start: int
    stop: int
    first_device: int

    @classmethod
    def of(cls, n: int, mesh: Mesh) -> RowLayout:
        """The layout of n rows on ``mesh`` for the calling process."""
        mesh = check_mesh(mesh)
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ParameterError(f"n must be a positive number of rows; received {n!r}.")
        r = mesh.devices.size
        per = -(-int(n) // r)
        local = per * (r // jax.process_count())
        first = [i for i, d in enumerate(mesh.devices.reshape(-1)) if d.process_index == jax.process_index()][0]
        start = min(first * per, int(n))
        return cls(int(n), per * r, r, per, local, start, min(start + local, int(n)), first)
