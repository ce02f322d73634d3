r"""Rows from memory, or from memory-mapped ``.npy`` files, into global arrays; results back to NumPy.

Each process reads only its own rows (:class:`~jaxmtl.distributed.mesh.RowLayout`), ``block_rows``
at a time from a memory-mapped file (``np.load(path, mmap_mode='r')``: only the pages touched are
read), into one padded local buffer; :func:`jax.make_array_from_process_local_data` then makes the
global array sharded by rows over the mesh. The data set is therefore limited by the disks the
processes read from (a shared file system, or each host's copy of the file), not by one machine's
memory: a process holds n·(p + d)/N numbers.

Example:
    >>> import numpy as np
    >>> from jaxmtl.distributed.mesh import global_mesh
    >>> mesh = global_mesh()
    >>> X = global_rows(np.arange(6.0).reshape(3, 2), mesh)
    >>> X.shape
    (3, 2)
"""

from __future__ import annotations

import os
from typing import Any

import jax
import numpy as np
import numpy.typing as npt
from jax.typing import ArrayLike
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .._checks import check_int
from ..errors import ShapeError
from ..operators.sharded import AXIS
from .mesh import RowLayout

__all__ = ["global_rows", "open_rows", "read_local_rows", "replicated", "to_host"]


def open_rows(source: str | os.PathLike[str] | npt.ArrayLike) -> Any:
    """``source`` as an array-like of rows: a ``.npy`` path is memory-mapped, not read; arrays,
    memory maps and other row-indexable arrays (h5py, zarr) are kept; lists and pandas objects
    become NumPy arrays.

    Example:
        >>> open_rows(np.zeros((2, 3))).shape
        (2, 3)
    """
    if isinstance(source, (str, os.PathLike)):
        return np.load(os.fspath(source), mmap_mode="r")
    if not hasattr(source, "shape") or not hasattr(source, "__getitem__") or hasattr(source, "iloc"):
        source = np.asarray(source)  # lists; pandas objects, whose [] selects columns, not rows
    return source


def read_local_rows(source: str | os.PathLike[str] | npt.ArrayLike, layout: RowLayout, dtype: npt.DTypeLike,
                    block_rows: int = 65536) -> np.ndarray:
    """This process's rows of ``source`` (an array, memory map or ``.npy`` path), padded with zeros.

    Args:
      source: (n, …) rows; layout: the rows' layout; dtype: of the buffer;
      block_rows: rows copied at a time (bounds the pages held of a memory map).

    Returns:
      (layout.local, …) NumPy array; the rows past ``layout.stop - layout.start`` are zeros.
    """
    src = open_rows(source)
    if src.shape[0] != layout.n:
        raise ShapeError(f"source must have {layout.n} rows; received shape {tuple(src.shape)}.")
    block = check_int(block_rows, "block_rows", minimum=1)
    out = np.zeros((layout.local,) + tuple(src.shape[1:]), dtype)
    for lo in range(layout.start, layout.stop, block):  # I/O in blocks, not computation
        hi = min(lo + block, layout.stop)
        out[lo - layout.start:hi - layout.start] = np.asarray(src[lo:hi], dtype)
    return out


def global_rows(source: str | os.PathLike[str] | npt.ArrayLike, mesh: Mesh, dtype: npt.DTypeLike | None = None,
                block_rows: int = 65536) -> jax.Array:
    """The global array of ``source``'s rows, padded to the layout's n_pad, sharded by rows.

    Every process passes the same ``source`` (the same file, or equal arrays) and reads only its
    rows of it. ``dtype`` defaults to the source's (floating data follows JAX's x64 setting).
    """
    src = open_rows(source)
    layout = RowLayout.of(int(src.shape[0]), mesh)
    dtype = np.dtype(jax.dtypes.canonicalize_dtype(src.dtype) if dtype is None else dtype)
    local = read_local_rows(src, layout, dtype, block_rows)
    spec = PartitionSpec(AXIS, *([None] * (local.ndim - 1)))
    return jax.make_array_from_process_local_data(NamedSharding(mesh, spec), local,
                                                  (layout.n_pad,) + local.shape[1:])


def replicated(mesh: Mesh) -> NamedSharding:
    """The sharding of a value every device holds whole (reductions, selected parameters)."""
    return NamedSharding(mesh, PartitionSpec())


def to_host(x: ArrayLike) -> np.ndarray:
    """A global array as NumPy on every process (gathered when its rows are spread over processes)."""
    if not isinstance(x, jax.Array) or x.is_fully_addressable or x.sharding.is_fully_replicated:
        return np.asarray(x)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(x, tiled=True))
