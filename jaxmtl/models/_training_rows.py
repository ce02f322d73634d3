"""The rows an approximate fit reads: in this process (:class:`InMemoryRows`) or spread over the
processes of a mesh (:class:`~jaxmtl.distributed.rows.ShardedRows`), behind one protocol
(:class:`TrainingRows`) so that :class:`~jaxmtl.models.approximate.ApproximationMixin` has one fit.

Example:
    >>> import numpy as np
    >>> rows = InMemoryRows(np.zeros((4, 2)), np.arange(4.0)[:, None])
    >>> rows.n, rows.p, rows.d
    (4, 2, 1)
"""

from __future__ import annotations

import os
from typing import Any, Protocol

import numpy as np

from ..distributed.data import open_rows
from ..kernels.scalar import Kernel
from ..operators.nystrom import (FeatureMap, FeatureStatistics, accumulate_statistics, group_blocks, nystrom_centres,
                                 padded_block_count)
from ._buckets import pad_rows, size_bucket

__all__ = ["InMemoryRows", "TrainingRows", "memory_map"]


def memory_map(X: Any) -> Any:
    """X, or the memory map of a ``.npy`` file when X is its path (an estimator's ``fit`` or ``predict``)."""
    return open_rows(X) if isinstance(X, (str, os.PathLike)) else X


class TrainingRows(Protocol):
    """The rows an approximate fit reads: :class:`InMemoryRows`, or rows spread over processes
    (:class:`~jaxmtl.distributed.rows.ShardedRows`, ``mesh=``).

    Attributes: n, p, d (rows, features, outputs), dtype, y_mean (d,) (the outputs' means
    removed, zeros without intercept)."""

    n: int
    d: int
    dtype: Any
    y_mean: np.ndarray

    @property
    def p(self) -> int: ...

    def take(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``idx`` (sorted) whole on this process: (X (r, p), centred Y (r, d)) as NumPy."""
        ...

    def centres(self, kernel: Kernel, m: int, sampling: str, seed: int, block: int) -> np.ndarray:
        """(m, p) Nyström centres drawn from the rows (:func:`~jaxmtl.operators.nystrom.nystrom_centres`)."""
        ...

    def statistics(self, fmap: FeatureMap, groups: np.ndarray, n_groups: int, block: int) -> FeatureStatistics:
        """ΦᵀΦ, ΦᵀY, YᵀY of the rows of each group (groups (n,) in [0, n_groups))."""
        ...


class InMemoryRows:
    """Training rows held in this process: X (n, p) and Y (n, d), Y centred on its means when
    ``fit_intercept`` (then stored in ``y_mean``).

    Example:
        >>> rows = InMemoryRows(np.zeros((4, 2)), np.arange(4.0)[:, None])
        >>> rows.y_mean.tolist(), rows.take(np.array([0, 3]))[1].ravel().tolist()
        ([1.5], [-1.5, 1.5])
    """

    def __init__(self, X: np.ndarray, Y: np.ndarray, fit_intercept: bool = True) -> None:
        self.n, self.d = Y.shape
        self.dtype = X.dtype
        self.y_mean = Y.mean(axis=0) if fit_intercept else np.zeros(self.d, Y.dtype)
        self.X, self.Y = X, (Y - self.y_mean).astype(X.dtype)

    @property
    def p(self) -> int:
        return int(self.X.shape[1])

    def take(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.X[idx], self.Y[idx]

    def centres(self, kernel: Kernel, m: int, sampling: str, seed: int, block: int) -> np.ndarray:
        return self.X[nystrom_centres(kernel, self.X, m, sampling, random_state=seed, block_size=block)]

    def statistics(self, fmap: FeatureMap, groups: np.ndarray, n_groups: int, block: int) -> FeatureStatistics:
        return accumulate_statistics(fmap, *self.blocks(groups, n_groups, block), n_groups)

    def blocks(self, groups: np.ndarray, n_groups: int, block: int) -> tuple[np.ndarray, ...]:
        """(X, Y, rows, ids) of :func:`~jaxmtl.operators.nystrom.accumulate_statistics`, shaped by
        the size bucket of n (:mod:`._buckets`): X, Y padded to it with zero rows that no block
        indexes, blocks of min(``block``, bucket) rows, their count that of any grouping of the
        bucket's rows (the extra blocks padding only, skipped), so that every n of a bucket — the
        folds of a cross-validation — runs one program. The statistics are those of the real rows.

        Example:
            >>> rows = InMemoryRows(np.ones((17, 2)), np.ones((17, 1)))
            >>> X, Y, r, g = rows.blocks(np.arange(17) % 3, 3, 8)
            >>> X.shape, r.shape, int((r >= 0).sum())
            ((18, 2), (6, 8), 17)
        """
        size = size_bucket(self.n)
        block = min(block, size)
        padded = np.concatenate([groups, np.full(size - self.n, n_groups)])  # a group no block gathers
        rb, ib = group_blocks(padded, n_groups, size, block, padded_block_count(size, n_groups, block))
        return pad_rows(self.X, size), pad_rows(self.Y, size), rb, ib  # NumPy: converting them compiles nothing
