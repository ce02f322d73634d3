r"""Training rows spread over processes, as the approximate estimators read them (``mesh=``).

:class:`ShardedRows` is the multi-process form of the rows an approximate fit reads
(:class:`~jaxmtl.models.approximate.ApproximationMixin`): every process opens the same sources
(arrays, memory maps or ``.npy`` paths), keeps only its own rows (:class:`~jaxmtl.distributed.mesh.RowLayout`)
and takes part in the few collectives of a fit:

* the inputs' shift (``offset``: the estimator takes the coordinate-wise median of a subsample
  read whole on every process, not of all n rows) is subtracted from each process's rows;
* the outputs' standard deviations and means (``normalize_y``, ``fit_intercept``): sums of each
  process's rows, gathered (d numbers per process);
* the finiteness check of every row: each process checks its own, and all of them raise when one
  finds a bad value;
* the statistics ΦᵀΦ, ΦᵀY, YᵀY per fold: :func:`~jaxmtl.distributed.paths.feature_statistics_global`
  (each device accumulates its rows, one ``psum``), returned as local arrays so that the D × D
  problems that follow are the one-process code on every process.

Rows needed whole on every process — the median-heuristic rows, the width search's subsample,
the Nyström centres — are read from the source by index (:meth:`ShardedRows.take`), the same rows
on every process, so every process computes the same selection without further communication.

Example:
    >>> import numpy as np
    >>> from jaxmtl.distributed.mesh import global_mesh
    >>> X = np.arange(12.0).reshape(6, 2); y = np.arange(6.0)
    >>> rows = ShardedRows(X, y, global_mesh(), dtype=np.float64)
    >>> rows.n, rows.d, rows.y_mean.round(2).tolist(), rows.X.shape
    (6, 1, [2.5], (6, 2))
"""

from __future__ import annotations

import os
from typing import Callable, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .._checks import HOST_WAY_OUT, check_inputs, check_int, check_magnitude, default_float, require_concrete
from ..errors import DistributedError, ParameterError, ShapeError
from ..kernels.scalar import Kernel
from ..operators.nystrom import FeatureMap, FeatureStatistics, group_blocks
from .data import open_rows, read_local_rows, to_host
from .mesh import RowLayout, check_mesh
from .paths import feature_statistics_global

__all__ = ["ShardedRows", "agree", "check_sampling", "device_blocks", "gather_sum", "statistics_on_mesh"]

T = TypeVar("T")


def check_sampling(sampling: str) -> None:
    """Refuse (ParameterError) a Nyström sampling that needs every row in one process: with rows
    spread over processes only 'uniform' centres are drawn.

    Example:
        >>> check_sampling("uniform")
    """
    if sampling != "uniform":
        raise ParameterError(f"sampling must be 'uniform' with mesh= (leverage scores need every row in one "
                             f"process); received {sampling!r}.")


def gather_sum(x: npt.ArrayLike) -> np.ndarray:
    """The sum over processes of each process's NumPy ``x`` (every process receives it), in float64.

    Example:
        >>> gather_sum(np.array([1.0, 2.0])).tolist()  # one process: x itself
        [1.0, 2.0]
    """
    require_concrete(x, "x", HOST_WAY_OUT)
    x = np.asarray(x, np.float64)
    if jax.process_count() == 1:
        return x
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(x), np.float64).sum(axis=0)


def agree(check: Callable[[], T], what: str) -> T:
    """``check()`` on every process; when it raises on any, it raises on all.

    The process whose rows failed raises its own error; the others raise a DistributedError
    naming ``what`` and the failing process — instead of waiting in the next collective.

    Example:
        >>> agree(lambda: 3, "X")
        3
    """
    try:
        out, err = check(), None
    except (ValueError, TypeError) as exc:  # the library's input errors derive from these
        out, err = None, exc
    failed = gather_sum(np.eye(jax.process_count())[jax.process_index()] * (err is not None))
    if err is not None:
        raise err
    if failed.any():
        bad = np.flatnonzero(failed).tolist()
        raise DistributedError(f"{what} was refused on the rows of process(es) {bad} (see their error).")
    return out  # type: ignore[return-value]


def device_blocks(groups: np.ndarray, layout: RowLayout, n_groups: int, block: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Each device's row blocks (local indices) and their groups, padded to one count, stacked.

    Every process computes every device's blocks (the fold of each row is known everywhere), so
    the count is agreed without communication; this process's part is what it returns:
    (rows (R_local·B, block) with −1 padding, ids (R_local·B,), B).

    Example:
        >>> from jaxmtl.distributed.mesh import global_mesh
        >>> rows, ids, nb = device_blocks(np.array([0, 1, 0]), RowLayout.of(3, global_mesh()), 2, 2)
        >>> rows.tolist(), ids.tolist()
        ([[0, 2], [1, -1]], [0, 1])
    """
    require_concrete(groups, "groups", HOST_WAY_OUT)
    per = layout.per_device
    padded = np.concatenate([groups, np.full(layout.n_pad - layout.n, -1)])
    blocks = [group_blocks(padded[r * per:(r + 1) * per], n_groups, per, block) for r in range(layout.devices)]
    nb = max(b[0].shape[0] for b in blocks)
    rows = np.stack([np.concatenate([r, np.full((nb - r.shape[0], r.shape[1]), -1)]) for r, _ in blocks])
    ids = np.stack([np.concatenate([g, np.zeros(nb - g.shape[0], g.dtype)]) for _, g in blocks])
    mine = slice(layout.first_device, layout.first_device + layout.local // per)
    return rows[mine].reshape(-1, rows.shape[-1]), ids[mine].reshape(-1), nb


def statistics_on_mesh(fmap: FeatureMap, X: jax.Array, Y: jax.Array, groups: np.ndarray, n_groups: int,
                       layout: RowLayout, mesh: Mesh, block: int) -> FeatureStatistics:
    """Per-group ΦᵀΦ, ΦᵀY, YᵀY of the global rows X, Y (n_pad, ·) grouped by ``groups`` (n,), replicated.

    Args:
      fmap: feature map; X (n_pad, p), Y (n_pad, d): global rows on ``mesh``; groups: (n,) group
      of each row in [0, n_groups); layout: the rows' :class:`RowLayout`; block: rows per block.

    Returns:
      :class:`~jaxmtl.operators.nystrom.FeatureStatistics` with G (n_groups, D, D), B (n_groups, D, d).
    """
    rows, ids, nb = device_blocks(groups, layout, n_groups, min(block, layout.per_device))
    rows_g = jax.make_array_from_process_local_data(NamedSharding(mesh, PartitionSpec("rows", None)),
                                                    rows.astype(np.int32), (layout.devices * nb, rows.shape[1]))
    ids_g = jax.make_array_from_process_local_data(NamedSharding(mesh, PartitionSpec("rows")), ids.astype(np.int32),
                                                   (layout.devices * nb,))
    return feature_statistics_global(fmap, X, Y, rows_g, ids_g, mesh, n_groups)


class ShardedRows:
    """The training rows of an approximate fit, each process holding its own (see the module doc).

    Args:
      X: (n, p) inputs; y: (n,) or (n, d) outputs — arrays, memory maps or ``.npy`` paths, the
        same on every process.
      mesh: a ``("rows",)`` mesh over every process's devices (:func:`~jaxmtl.distributed.global_mesh`).
      offset: (p,) float64 shift subtracted from every input row before narrowing, or None.
      dtype: the working float dtype the rows are narrowed to.
      normalize_y: divide each output by its standard deviation over all rows (several outputs).
      fit_intercept: centre the outputs on their means over all rows.
      block_rows: rows read from a source at a time.

    Attributes:
      n, d: rows, outputs; y_1d: y was 1-D; scales: (d,) output scales (ones unless
      ``normalize_y`` with d > 1); y_mean: (d,) means of the scaled outputs (zeros without
      intercept); layout: this process's rows; X, Y: the global (n_pad, ·) arrays, sharded.
    """

    def __init__(self, X: str | os.PathLike[str] | npt.ArrayLike, y: str | os.PathLike[str] | npt.ArrayLike,
                 mesh: Mesh, offset: np.ndarray | None = None, dtype: npt.DTypeLike | None = None,
                 normalize_y: bool = True, fit_intercept: bool = True, block_rows: int = 65536) -> None:
        self.mesh = check_mesh(mesh)
        self._X, self._Y = open_rows(X), open_rows(y)
        if len(self._X.shape) != 2:
            raise ShapeError(f"X must have shape (n, p); received shape {tuple(self._X.shape)}.")
        if len(self._Y.shape) not in (1, 2) or self._Y.shape[0] != self._X.shape[0]:
            raise ShapeError(f"y must have shape (n,) or (n, d) with n = {self._X.shape[0]} rows of X; received shape "
                             f"{tuple(self._Y.shape)}.")
        self.n = int(self._X.shape[0])
        self.y_1d = len(self._Y.shape) == 1
        self.d = 1 if self.y_1d else int(self._Y.shape[1])
        self.offset = offset
        self.dtype = np.dtype(default_float() if dtype is None else dtype)
        self.layout = RowLayout.of(self.n, self.mesh)
        block_rows = check_int(block_rows, "block_rows", minimum=1)
        real = self.layout.stop - self.layout.start

        def local(source, name, shift):  # this process's rows, checked as every estimator checks its inputs
            buf = read_local_rows(source, self.layout, np.float64, block_rows)
            buf = buf if buf.ndim == 2 else buf[:, None]
            check_inputs(buf[:real], name, keep_float64=True)
            if shift is not None:
                buf[:real] -= shift
            check_magnitude(buf, name, self.dtype)
            return buf.astype(self.dtype)

        Xl = agree(lambda: local(self._X, "X", offset), "X")
        Yl = agree(lambda: local(self._Y, "y", None), "y").astype(np.float64)
        s1 = gather_sum(Yl[:real].sum(axis=0))
        s2 = gather_sum(((Yl[:real] - s1 / self.n) ** 2).sum(axis=0))
        std = np.sqrt(s2 / self.n)
        self.scales = np.where(std > 0, std, 1.0) if normalize_y and self.d > 1 else np.ones(self.d)
        Ys = (Yl / self.scales).astype(self.dtype)
        self.y_mean = ((gather_sum(Ys[:real].sum(axis=0)) / self.n).astype(self.dtype) if fit_intercept
                       else np.zeros(self.d, self.dtype))
        Yc = (Ys - self.y_mean).astype(self.dtype)
        Yc[real:] = 0.0
        rows = NamedSharding(self.mesh, PartitionSpec("rows", None))
        self.X = jax.make_array_from_process_local_data(rows, Xl.astype(self.dtype), (self.layout.n_pad, Xl.shape[1]))
        self.Y = jax.make_array_from_process_local_data(rows, Yc, (self.layout.n_pad, self.d))

    @property
    def p(self) -> int:
        """Features of a row."""
        return int(self._X.shape[1])

    def centres(self, kernel: Kernel, m: int, sampling: str, seed: int, block: int) -> np.ndarray:
        """(m, p) uniform Nyström centres, read from the source: the rows
        :func:`~jaxmtl.operators.nystrom.nystrom_centres` draws for ``seed`` (leverage sampling
        needs every row in one process and is refused)."""
        check_sampling(sampling)
        return self.take(np.sort(np.random.default_rng(seed).choice(self.n, m, replace=False)))[0]

    def take(self, idx: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``idx`` (sorted) read from the sources on this process: (X shifted and narrowed, Y
        scaled and centred) as NumPy, (len(idx), p) and (len(idx), d)."""
        idx = np.asarray(idx)
        X = np.asarray(self._X[idx], np.float64)
        if self.offset is not None:
            X = X - self.offset
        Y = np.asarray(self._Y[idx], np.float64).reshape(len(idx), self.d)
        return X.astype(self.dtype), ((Y / self.scales).astype(self.dtype) - self.y_mean).astype(self.dtype)

    def statistics(self, fmap: FeatureMap, groups: np.ndarray, n_groups: int, block: int) -> FeatureStatistics:
        """ΦᵀΦ, ΦᵀY, YᵀY of every group of rows over all processes, as local arrays on every process."""
        st = statistics_on_mesh(fmap, self.X, self.Y, groups, n_groups, self.layout, self.mesh, block)
        return jax.tree.map(lambda a: jnp.asarray(to_host(a)), st)
