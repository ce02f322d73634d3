r"""Feature statistics and predictions streamed from row arrays larger than memory.

The rows of X and Y may be any objects that slice like NumPy arrays along their first axis:
memory-mapped ``.npy`` files (``np.load(path, mmap_mode="r")``), HDF5 or zarr datasets, or
in-memory arrays. They are read ``chunk_rows`` at a time; each chunk goes through one compiled
call (the last one padded to the same shape, so one compilation serves a whole file) that
adds its ΦᵀΦ, ΦᵀY and YᵀY to a running total (:func:`stream_statistics`), or writes its
predictions φ(X) W (:func:`stream_predict`). JAX dispatches each call asynchronously, so the next
chunk is read from disk while the current one is computed. Memory is O(chunk_rows·p + block_size·D + D²),
whatever the number of rows; the n × D feature matrix is never stored (features are formed
``block_size`` rows at a time).

With the statistics of a training file and of a validation file, every filter parameter and
every output matrix of a family sharing its eigenvectors is scored without another pass
(:func:`~jaxmtl.paths.preconditioned.feature_holdout_losses`), and the coefficients come from the
same training statistics (:func:`~jaxmtl.paths.preconditioned.feature_coefficients`).

Example:
    >>> import numpy as np
    >>> from jaxmtl.kernels import Gaussian
    >>> from jaxmtl.operators.nystrom import NystromFeatures, feature_statistics
    >>> X = np.linspace(0.0, 1.0, 50, dtype=np.float32)[:, None]; Y = np.sin(3 * X)
    >>> fm = NystromFeatures.fit(Gaussian(0.5), X, 6, random_state=0)
    >>> st = stream_statistics(fm, X, Y, chunk_rows=16, block_size=8)
    >>> bool(np.allclose(st.G[0], feature_statistics(fm, X, Y).G[0], rtol=1e-4, atol=1e-4))
    True
    >>> stream_predict(fm, np.ones((6, 1), np.float32), X, chunk_rows=16).shape
    (50, 1)
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import check_int, require_concrete
from .._jit import filter_jit
from .._progress import ProgressBar
from ..errors import NonFiniteError, ShapeError
from .nystrom import FeatureMap, FeatureStatistics, accumulate_statistics
from ..products import full_precision

__all__ = ["stream_holdout_losses", "stream_predict", "stream_statistics"]

Array = jax.Array


def _rows(A: Any, name: str) -> int:
    require_concrete(A, name, "the rows are read on the host a chunk at a time; call this function outside jit "
                              "(the chunks are compiled)")
    shape = getattr(A, "shape", None)
    if shape is None or len(shape) != 2:
        raise ShapeError(f"{name} must be a 2-D array that slices along its rows (e.g. a NumPy memmap); "
                         f"received {type(A).__name__} with shape {shape}.")
    if shape[0] == 0:
        raise ShapeError(f"{name} has 0 rows (shape={tuple(shape)}); at least 1 is needed.")
    return int(shape[0])


def _chunk_size(n: int, chunk_rows: int, block_size: int) -> tuple[int, int]:
    """(chunk, block): the block no larger than the data, the chunk a multiple of it."""
    block = min(check_int(block_size, "block_size", minimum=1), n)
    chunk = max(block, min(check_int(chunk_rows, "chunk_rows", minimum=1), n))
    return -(-chunk // block) * block, block


def _read(A: Any, start: int, chunk: int, dtype, name: str) -> np.ndarray:
    """Rows [start, start + chunk) of A as ``dtype``, zero-padded to ``chunk`` rows; a non-finite
    value is refused with its row (a NaN would make every sum, and so every loss, NaN)."""
    part = np.asarray(A[start:start + chunk], dtype=dtype)
    bad = ~np.isfinite(part)
    if bad.any():
        row = start + int(np.argwhere(bad)[0][0])
        raise NonFiniteError(f"{name} has a non-finite value (NaN or inf) in row {row}; remove or impute it first.")
    if part.shape[0] < chunk:
        part = np.concatenate([part, np.zeros((chunk - part.shape[0],) + part.shape[1:], dtype)])
    return part


@filter_jit
def _add_chunk(total: FeatureStatistics, fmap: FeatureMap, X: ArrayLike, Y: ArrayLike, valid: ArrayLike,
               block: int) -> FeatureStatistics:
    X, Y = jnp.asarray(X), jnp.asarray(Y)
    rows = jnp.where(jnp.arange(X.shape[0]) < valid, jnp.arange(X.shape[0]), -1).reshape(-1, block)
    part = accumulate_statistics(fmap, X, Y, rows, jnp.zeros(rows.shape[0], jnp.int32), 1)
    return jax.tree_util.tree_map(jnp.add, total, part)


@full_precision
def stream_statistics(fmap: FeatureMap, X: Any, Y: Any, chunk_rows: int = 65536, block_size: int = 2048,
                      dtype: Any = None, progress: bool = False, desc: str = "statistics") -> FeatureStatistics:
    """ΦᵀΦ, ΦᵀY and YᵀY of every row of (X, Y), read ``chunk_rows`` at a time.

    Equal to :func:`~jaxmtl.operators.nystrom.feature_statistics` with one group (the sums are
    taken in another order, so they agree to the dtype's round-off).

    Args:
      fmap: the feature map (Nyström or random features); X: (n, p) rows, Y: (n, d) targets,
        both sliceable along the first axis (NumPy memmaps, HDF5 datasets, arrays); chunk_rows:
        rows read and computed per call; block_size: rows per block inside a call; dtype: the
        working dtype (default: X's, as JAX holds it: float32 unless ``jax_enable_x64``); progress: draw a progress bar on stderr;
        desc: its label.

    Returns:
      :class:`~jaxmtl.operators.nystrom.FeatureStatistics` with one group, arrays of shape
      (1, D, D), (1, D, d), (1, d, d) and (1,).
    """
    n = _rows(X, "X")
    if _rows(Y, "Y") != n:
        raise ShapeError(f"X and Y must have the same number of rows; received {n} and {Y.shape[0]}.")
    dtype = np.dtype(dtype) if dtype is not None else np.dtype(jax.dtypes.canonicalize_dtype(X.dtype))
    chunk, block = _chunk_size(n, chunk_rows, block_size)
    D, d = fmap.n_components, int(Y.shape[1])
    total = FeatureStatistics(jnp.zeros((1, D, D), dtype), jnp.zeros((1, D, d), dtype), jnp.zeros((1, d, d), dtype),
                              jnp.zeros((1,), dtype))
    bar = ProgressBar(n, desc, enabled=progress)
    for start in range(0, n, chunk):  # one compiled call per chunk of the file (I/O, not the computation)
        total = _add_chunk(total, fmap, _read(X, start, chunk, dtype, "X"), _read(Y, start, chunk, dtype, "Y"),
                           np.int32(min(chunk, n - start)), block)
        bar.update(min(start + chunk, n))
    return total


@filter_jit
def _predict_chunk(fmap: FeatureMap, V: Array, on_raw: bool, X: ArrayLike, valid: ArrayLike, block: int) -> Array:
    X = jnp.asarray(X)
    blocks = X.reshape(-1, block, X.shape[1])  # features of one block at a time: memory O(block·D)

    def predict(B):
        return fmap.apply_prepared(B, V, on_raw)

    out = jax.eval_shape(predict, blocks[0])

    def one_block(args):  # a block of the last chunk's padding only is skipped (zeros)
        B, start = args
        return jax.lax.cond(start < valid, predict, lambda _: jnp.zeros(out.shape, out.dtype), B)

    starts = jnp.arange(blocks.shape[0]) * block
    return jax.lax.map(one_block, (blocks, starts)).reshape(X.shape[0], V.shape[1])


@full_precision
def stream_predict(fmap: FeatureMap, W: Any, X: Any, chunk_rows: int = 65536, out: np.ndarray | None = None,
                   block_size: int = 2048, progress: bool = False, desc: str = "predictions") -> np.ndarray:
    """Predictions φ(X) W for every row of X, read and written ``chunk_rows`` at a time.

    Args:
      fmap: the feature map; W: (D, d) coefficients on the features (e.g.
        :func:`~jaxmtl.paths.preconditioned.feature_coefficients` times Aᵀ); X: (n, p) rows,
        sliceable along the first axis; chunk_rows: rows per call; out: optional (n, d) array
        to write into (e.g. ``np.lib.format.open_memmap``), else a new one; block_size: rows whose
        features are formed at once inside a call; progress, desc: a progress bar on stderr and
        its label.

    Returns:
      (n, d) NumPy array (``out`` when given).
    """
    n = _rows(X, "X")
    W = jnp.asarray(W)
    if W.ndim != 2 or W.shape[0] != fmap.n_components:
        raise ShapeError(f"W must have shape ({fmap.n_components}, d); received {W.shape}.")
    chunk, block = _chunk_size(n, chunk_rows, block_size)
    out = np.empty((n, W.shape[1]), W.dtype) if out is None else out
    if out.shape != (n, W.shape[1]):
        raise ShapeError(f"out must have shape ({n}, {W.shape[1]}); received {out.shape}.")
    V, on_raw = fmap.prepare(W)  # once per file, not per block
    bar = ProgressBar(n, desc, enabled=progress)
    for start in range(0, n, chunk):  # one compiled call per chunk; the write of one overlaps the next
        stop = min(start + chunk, n)
        out[start:stop] = np.asarray(_predict_chunk(fmap, V, on_raw, _read(X, start, chunk, W.dtype, "X"),
                                                    np.int32(stop - start), block))[: stop - start]
        bar.update(stop)
    return out


@filter_jit
def _add_squared_errors(total: Array, fmap: FeatureMap, V: Array, on_raw: bool, X: ArrayLike, Y: ArrayLike,
                        valid: ArrayLike, block: int) -> Array:
    X, Y = jnp.asarray(X), jnp.asarray(Y)
    K, d = total.shape
    w = (jnp.arange(X.shape[0]) < valid).astype(total.dtype).reshape(-1, block, 1, 1)

    def add(acc, blk):  # predictions of every column for ``block`` rows at a time: memory O(block·K·d)
        B, Yb, wb = blk
        E = fmap.apply_prepared(B, V, on_raw).reshape(block, K, d) - Yb[:, None, :]
        return acc + jnp.sum(wb * E * E, axis=0)

    def one_block(acc, blk):  # a block of the last chunk's padding only is skipped
        return jax.lax.cond(jnp.any(blk[2] > 0), add, lambda acc, _: acc, acc, blk), None

    out, _ = jax.lax.scan(one_block, total, (X.reshape(-1, block, X.shape[1]), Y.reshape(-1, block, d), w))
    return out


@full_precision
def stream_holdout_losses(fmap: FeatureMap, C: Any, X: Any, Y: Any, chunk_rows: int = 65536, block_size: int = 2048,
                          progress: bool = False, desc: str = "hold-out rows") -> Array:
    """Mean squared error of every output of every coefficient set on rows (X, Y), from their
    predictions, read ``chunk_rows`` at a time.

    For a whole path's coefficients (:func:`~jaxmtl.paths.preconditioned.feature_path_coefficients`)
    this scores a validation file at 2·D·K·d flops per row for K coefficient sets (a Nyström map
    predicts through its centres: :meth:`~jaxmtl.operators.nystrom.FeatureMap.apply`), where its
    statistics (:func:`stream_statistics`, then
    :func:`~jaxmtl.paths.preconditioned.feature_holdout_losses`) cost 4·D² per row: the cheaper
    pass where K·d < 2D. The losses are the same up to round-off.

    Args:
      fmap: the feature map; C: (..., D, d) coefficients, F(x) = φ(x) C[...]; X: (n, p) rows and
        Y: (n, d) targets, sliceable along the first axis; chunk_rows: rows per compiled call;
        block_size: rows predicted at once inside a call; progress, desc: a progress bar and its label.

    Returns:
      (..., d) Σ_rows (F_j(x) − y_j)² / n for each coefficient set and output j.

    Example:
        >>> from jaxmtl.kernels import Gaussian
        >>> from jaxmtl.operators.nystrom import NystromFeatures
        >>> X = np.linspace(0.0, 1.0, 50, dtype=np.float32)[:, None]; Y = np.sin(3 * X)
        >>> fm = NystromFeatures.fit(Gaussian(0.5), X, 6, random_state=0)
        >>> stream_holdout_losses(fm, np.zeros((3, 6, 1), np.float32), X, Y, chunk_rows=16).shape
        (3, 1)
    """
    n = _rows(X, "X")
    if _rows(Y, "Y") != n:
        raise ShapeError(f"X and Y must have the same number of rows; received {n} and {Y.shape[0]}.")
    C = jnp.asarray(C)
    d = int(Y.shape[1])
    if C.ndim < 2 or C.shape[-2:] != (fmap.n_components, d):
        raise ShapeError(f"C must have shape (..., {fmap.n_components}, {d}) (features, outputs of Y); "
                         f"received {C.shape}.")
    lead = C.shape[:-2]
    K = int(np.prod(lead, dtype=int))
    columns = jnp.moveaxis(C.reshape(K, fmap.n_components, d), 0, 1).reshape(fmap.n_components, K * d)
    chunk, block = _chunk_size(n, chunk_rows, block_size)
    V, on_raw = fmap.prepare(columns)  # once per file, not per block
    total = jnp.zeros((K, d), C.dtype)
    bar = ProgressBar(n, desc, enabled=progress)
    for start in range(0, n, chunk):  # one compiled call per chunk of the file
        total = _add_squared_errors(total, fmap, V, on_raw, _read(X, start, chunk, C.dtype, "X"),
                                    _read(Y, start, chunk, C.dtype, "Y"), np.int32(min(chunk, n - start)), block)
        bar.update(min(start + chunk, n))
    return (total / n).reshape(*lead, d)
