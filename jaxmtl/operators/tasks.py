r"""Task-indexed Gram operators: multi-task data with different inputs per task ([BRBV11] §6).

Each operator maps coefficients C to Γ C without forming the full Gram matrix of the
matrix-valued kernel. Operators take row and column inputs, so the same class gives the
training operator (rows = columns) and the prediction map on new inputs (rows = new points).

* :class:`TaskIndexedOperator` — multi-task data in long form (xᵢ, tᵢ, yᵢ) with
  Q((x,t),(x',t')) = K(x,x')·A[t,t'] and A = L Lᵀ: Q c = Σ_r L[t,r] ∘ (K (L[t',r] ∘ c)),
  one product K @ (L[t'] ∘ c) with R columns; the N×N Hadamard product is never formed.
* :class:`CommonSimilarityTaskOperator` — the common-similarity family A_ω = ω11ᵀ + (1−ω)I on
  task-indexed data: Q_ω = ω K + (1−ω) K∘S with S_ij = [tᵢ = tⱼ]; K∘S is stored once as
  per-task blocks (:class:`TaskBlocks`, Σ_t n_t² entries) and shared by every ω, so a batch of ω
  costs one product with K and one batched block product, with stacked right-hand sides.

The divergence-free and curl-free field kernels are in :mod:`jaxmtl.operators.fields`. Public constructor
functions (``task_indexed``, ``task_indexed_operator``, ``sum_of_separable_operator``,
``transformable_operator``) validate in plain Python, before tracing.

Example:
    >>> import numpy as np
    >>> from jaxmtl.kernels import Gaussian
    >>> X = np.linspace(0, 1, 4)[:, None]
    >>> op = task_indexed(Gaussian(0.5), X, np.array([0, 1, 0, 1]), np.eye(2))
    >>> op.mv(np.ones((4, 1))).shape
    (4, 1)
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
from jax.typing import ArrayLike

from .._checks import as_float_array, check_inputs, check_output_matrix
from ..errors import ParameterError, ShapeError, TaskError
from ..kernels.scalar import Kernel
from .base import GramOperator
from ..products import full_precision

__all__ = [
    "TaskIndexedOperator",
    "CommonSimilarityTaskOperator",
    "TaskBlocks",
    "task_block_index",
    "task_blocks",
    "blocks_pay_off",
    "check_tasks",
    "task_indexed",
    "task_indexed_operator",
    "same_task_mask",
]

Array = jax.Array


class TaskIndexedOperator(GramOperator):
    """Q_ij = K_ij·A[tᵢ, tⱼ] with A = L Lᵀ, acting on (N, 1) coefficients.

    Args:
      K: (m, N) scalar (cross-)Gram matrix.
      L: (T, R) factor of the task matrix A = L Lᵀ.
      row_tasks: (m,) task ids of the rows; col_tasks: (N,) of the columns.
    """

    K: Array
    L: Array
    row_tasks: Array
    col_tasks: Array

    @property
    def shape(self):
        return (self.K.shape[1], 1)

    @full_precision
    def mv(self, C: Array) -> Array:
        Z = self.K @ (self.L[self.col_tasks] * C)  # (m, R): one product
        return jnp.sum(self.L[self.row_tasks] * Z, axis=1, keepdims=True)


class TaskBlocks(eqx.Module):
    """The same-task part K∘S of a (cross-)Gram (S_ij = [tᵢ = tⱼ]) as padded per-task blocks.

    K∘S is block-diagonal once rows and columns are grouped by task: the T blocks, zero-padded
    to the largest task, hold T·max m_t·max n_t entries instead of m·N (School: 0.35 M instead
    of 9.4 M), and a product ``blocks @ C`` costs the same — one batched GEMM, a gather and a
    scatter-add. With very unequal tasks the padding can exceed m·N; :func:`blocks_pay_off`
    tells. Build it with :func:`task_blocks`.

    Args:
      blocks: (T, r, c) K restricted to each task's rows and columns, zero-padded.
      row_index: (T, r) row ids of each task, padded with m (a dropped row).
      col_index: (T, c) column ids of each task, padded with N (reads a zero row).
      n_rows: m (static).
    """

    blocks: Array
    row_index: Array
    col_index: Array
    n_rows: int = eqx.field(static=True)

    def __matmul__(self, C):
        """(K∘S) C for C (N, d) → (m, d)."""
        C = jnp.asarray(C)  # a NumPy float64 C follows JAX's precision without its truncation warning
        Cz = jnp.concatenate([C, jnp.zeros((1, C.shape[1]), C.dtype)])
        Z = jnp.einsum("trc,tcd->trd", self.blocks, Cz[self.col_index])
        out = jnp.zeros((self.n_rows + 1, C.shape[1]), Z.dtype).at[self.row_index].add(Z)
        return out[:-1]


def task_block_index(row_tasks: npt.ArrayLike, col_tasks: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Padded per-task row and column ids for :func:`task_blocks` (plain NumPy, before tracing).

    Args:
      row_tasks: (m,) task ids of the rows; col_tasks: (N,) of the columns (any comparable ids,
        e.g. the integer codes of :func:`check_tasks`).

    Returns:
      (row_index (T, r), col_index (T, c)) over the T tasks present in either, each task's ids in
      increasing order; padding m and N.

    Example:
        >>> ri, ci = task_block_index(np.array([1, 0, 1]), np.array([0, 1]))
        >>> ri.tolist(), ci.tolist()
        ([[1, 3], [0, 2]], [[0], [1]])
    """
    rt, ct = np.asarray(row_tasks), np.asarray(col_tasks)
    for name, t in (("row_tasks", rt), ("col_tasks", ct)):
        if t.ndim != 1 or t.size == 0:
            raise ShapeError(f"{name} must be a non-empty 1-D array of task ids; received shape {t.shape}.")
    _, codes = np.unique(np.concatenate([rt, ct]), return_inverse=True)
    T = int(codes.max()) + 1

    def padded(c, fill):  # (T, max count) ids of each task, stable order, padded with ``fill``
        counts = np.bincount(c, minlength=T)
        order = np.argsort(c, kind="stable")
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        out = np.full((T, max(1, int(counts.max()))), fill, np.int32)
        out[c[order], np.arange(len(c)) - starts[c[order]]] = order
        return out

    return padded(codes[:len(rt)], len(rt)), padded(codes[len(rt):], len(ct))


def blocks_pay_off(row_index: np.ndarray, col_index: np.ndarray, m: int, n: int) -> bool:
    """True when the padded blocks of :func:`task_block_index` hold fewer entries than m·n."""
    return row_index.shape[0] * row_index.shape[1] * col_index.shape[1] < m * n


@full_precision
def task_blocks(K: ArrayLike, row_index: ArrayLike, col_index: ArrayLike) -> TaskBlocks:
    """:class:`TaskBlocks` of K (m, N) from :func:`task_block_index` (jittable in K).

    Example:
        >>> import numpy as np
        >>> t = np.array([0, 1, 0])
        >>> KS = task_blocks(np.ones((3, 3)), *task_block_index(t, t))
        >>> np.asarray(KS @ np.eye(3)).tolist()
        [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 1.0]]
    """
    K = jnp.asarray(K)
    m, n = K.shape
    ri, ci = jnp.asarray(row_index), jnp.asarray(col_index)
    # gather with clipped ids and zero the padding (padding K itself would copy all of it)
    valid = (ri < m)[:, :, None] & (ci < n)[:, None, :]
    blocks = K[jnp.minimum(ri, m - 1)[:, :, None], jnp.minimum(ci, n - 1)[:, None, :]]
    return TaskBlocks(jnp.where(valid, blocks, 0.0), ri, ci, int(m))


class CommonSimilarityTaskOperator(GramOperator):
    """Q_ω = ω K + (1 − ω) K∘S on task-indexed data (S_ij = [tᵢ = tⱼ]).

    Args:
      K: (m, N) scalar Gram.
      KS: its same-task part: a :class:`TaskBlocks` (products cost Σ_t m_t n_t) or the dense
        (m, N) matrix with entries of different tasks zeroed.
      omega: scalar in [0, 1] (a leaf: vmap over it for a batch of ω).
    """

    K: Array
    KS: Any
    omega: Array

    @property
    def shape(self):
        return (self.K.shape[1], 1)

    @full_precision
    def mv(self, C: Array) -> Array:
        return self.omega * (self.K @ C) + (1.0 - self.omega) * (self.KS @ C)


# --------------------------------------------------------------------------- constructors
def _label_kind(arr: np.ndarray, name: str) -> str:
    """'int', 'float' or 'str': the kind of task labels (an object array of Python ints or strings
    is read as such); anything else, or a mixture, raises TaskError."""
    if arr.dtype.kind in "iub":
        return "int"
    if arr.dtype.kind == "f":
        return "float"
    if arr.dtype.kind == "U":
        return "str"
    if arr.dtype.kind == "O":
        kinds = {"str" if isinstance(t, str) else "int" if isinstance(t, (int, np.integer)) else
                 "float" if isinstance(t, (float, np.floating)) else type(t).__name__ for t in arr.tolist()}
        if len(kinds) == 1 and kinds <= {"int", "float", "str"}:
            return kinds.pop()
        if "NoneType" in kinds:
            raise TaskError(f"{name} holds None; every example needs a task.")
        raise TaskError(f"{name} must be integers or strings (one kind for all); received {sorted(kinds)}.")
    raise TaskError(f"{name} must be integers or strings; received dtype {arr.dtype}.")


def check_tasks(tasks: npt.ArrayLike, n: int, known: npt.ArrayLike | None = None,
                name: str = "tasks") -> tuple[np.ndarray, np.ndarray]:
    """Task labels → (integer codes 0..T−1, the task labels in code order).

    Args:
      tasks: (n,) task ids: integers or strings (numbers with a fractional part are accepted but
        compared exactly).
      n: expected length.
      known: labels seen at fit; ids outside it, or of another kind (strings against numbers),
        raise :class:`TaskError`.

    Returns:
      (codes (n,), labels (T,)).

    Example:
        >>> codes, labels = check_tasks(["b", "a", "b"], 3)
        >>> codes.tolist(), labels.tolist()
        ([1, 0, 1], ['a', 'b'])
    """
    try:
        arr = np.asarray(tasks)
    except ValueError:
        raise TaskError(f"{name} must be a 1-D array of integer or string ids; received {type(tasks).__name__} "
                        "of ragged entries.") from None
    if arr.ndim != 1:
        raise ShapeError(f"{name} must be 1-D (one id per example); received shape {arr.shape}.")
    if arr.shape[0] != n:
        raise ShapeError(f"{name} must have one entry per input: expected {n}, received {arr.shape[0]}.")
    kind = _label_kind(arr, name)
    if kind == "float" and not np.all(np.isfinite(np.asarray(arr, float))):
        raise TaskError(f"{name} holds NaN or infinite ids; every example needs a task.")
    if known is None:
        labels, codes = np.unique(arr, return_inverse=True)
        return codes, labels
    known = np.asarray(known)
    fitted = _label_kind(known, "the fitted task labels")
    if (kind == "str") != (fitted == "str"):
        raise TaskError(f"{name} are {'str' if kind == 'str' else 'numbers'} ({arr.dtype}), but the model was "
                        f"fitted with {'str' if fitted == 'str' else 'integer'} task labels such as "
                        f"{known[:3].tolist()}.")
    index = {t: i for i, t in enumerate(known.tolist())}
    unknown = sorted({t for t in arr.tolist() if t not in index}, key=str)
    if unknown:
        raise TaskError(f"{name} holds ids not seen during fit: {unknown[:5]}; known: {list(index)[:10]}.")
    return np.array([index[t] for t in arr.tolist()], dtype=np.int64), known


def _task_ids(tasks, n: int, T: int, name: str) -> np.ndarray:
    """(n,) integer task ids in 0..T−1 (integral floats accepted), else ShapeError / TaskError."""
    t = np.asarray(tasks)
    if t.ndim != 1 or t.shape[0] != n:
        raise ShapeError(f"{name} must hold one id per example: expected shape ({n},), received {t.shape}.")
    if t.dtype.kind not in "iu":
        if t.dtype.kind == "f" and np.all(np.isfinite(t)) and np.all(t == np.round(t)):
            t = t.astype(np.int64)
        else:
            raise TaskError(f"{name} must be integer ids 0..{T - 1}; received dtype {t.dtype}.")
    unknown = np.unique(t[(t < 0) | (t >= T)])
    if unknown.size:
        raise TaskError(f"{name} holds unknown ids {unknown.tolist()[:5]}: A is {T}x{T}, so ids must lie in "
                        f"0..{T - 1}.")
    return t


def _task_factor(A, col_tasks: np.ndarray) -> np.ndarray:
    """Factor L (T, R) of A = L Lᵀ (zero eigenvalues dropped); every task needs an example."""
    T = A.shape[0]
    empty = np.setdiff1d(np.arange(T), col_tasks)
    if empty.size:
        raise TaskError(f"task {int(empty[0])} has no examples (tasks without examples: {empty.tolist()[:10]}); "
                        "drop it from A or add its data.")
    a, V = np.linalg.eigh(A.astype(np.float64))
    keep = a > 1e-12 * max(a.max(), 1e-300)
    return V[:, keep] * np.sqrt(a[keep])


def task_indexed(kernel: Kernel, X: npt.ArrayLike, tasks: npt.ArrayLike, A: npt.ArrayLike,
                 X_cols: npt.ArrayLike | None = None, tasks_cols: npt.ArrayLike | None = None) -> TaskIndexedOperator:
    """Validated :class:`TaskIndexedOperator` Q = K(x, x')·A[t, t'] from a kernel and inputs.

    Args:
      kernel: scalar :class:`~jaxmtl.kernels.Kernel`.
      X: (m, p) inputs of the rows; tasks: (m,) integer task ids 0..T−1.
      A: (T, T) symmetric PSD task matrix.
      X_cols, tasks_cols: inputs and ids of the columns (default: the rows); every task of A
        needs at least one example among the columns.
    """
    X = check_inputs(X)
    A = check_output_matrix(A, name="A")
    Xc = X if X_cols is None else check_inputs(X_cols, "X_cols")
    tr = _task_ids(tasks, X.shape[0], A.shape[0], "tasks")
    tc = tr if tasks_cols is None else _task_ids(tasks_cols, Xc.shape[0], A.shape[0], "tasks_cols")
    L = _task_factor(A, tc)
    K = kernel(jnp.asarray(X), jnp.asarray(Xc))
    return TaskIndexedOperator(K, jnp.asarray(L, K.dtype), jnp.asarray(tr), jnp.asarray(tc))


def task_indexed_operator(K: npt.ArrayLike, A: npt.ArrayLike, tasks: npt.ArrayLike) -> TaskIndexedOperator:
    """Validated task-indexed Gram Q_ij = K_ij·A[tᵢ, tⱼ] from a precomputed Gram K.

    The product is Σ_r L[t, r] ∘ (K (L[t, r] ∘ c)) over a factor A = L Lᵀ, stacked as ONE
    product K @ (L[tasks] ∘ c) with R = rank(A) columns; the N × N Hadamard product K ∘ A[t][:, t]
    is never formed.

    Args:
      K: (N, N) scalar Gram over all examples (finite, symmetric).
      A: (T, T) symmetric PSD task matrix.
      tasks: (N,) integer task ids in 0..T − 1; every task needs at least one example.

    Returns:
      :class:`TaskIndexedOperator` on (N, 1) coefficients.
    """
    K = as_float_array(K, "K", ndim=2)
    N = K.shape[0]
    if K.shape != (N, N):
        raise ShapeError(f"K must be square; received shape {K.shape}.")
    scale = max(float(np.abs(K).max()), np.finfo(np.float64).tiny)
    if float(np.abs(K - K.T).max()) > 1e-6 * scale:
        raise ParameterError("K must be symmetric (a Gram matrix over the training examples).")
    A = check_output_matrix(A, name="A")
    t = _task_ids(tasks, N, A.shape[0], "tasks")
    Kj = jnp.asarray(K)
    tj = jnp.asarray(t)
    return TaskIndexedOperator(Kj, jnp.asarray(_task_factor(A, t), Kj.dtype), tj, tj)


def same_task_mask(row_tasks: ArrayLike, col_tasks: ArrayLike) -> Array:
    """(m, N) float mask S_ij = [row_tasks[i] = col_tasks[j]] for row_tasks (m,), col_tasks (N,)."""
    return (jnp.asarray(row_tasks)[:, None] == jnp.asarray(col_tasks)[None, :])
