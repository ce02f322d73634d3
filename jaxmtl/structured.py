r"""Gram operators beyond K ⊗ A, as products only (seed 000 §4.1, §6; seed 003 (3.10)).

Each operator maps coefficients C to Γ C without forming the full Gram matrix of the
matrix-valued kernel. Operators take row and column inputs, so the same class gives the
training operator (rows = columns) and the prediction map on new inputs (rows = new points).

* :class:`TaskIndexedOperator` — multi-task data in long form (xᵢ, tᵢ, yᵢ) with
  Q((x,t),(x',t')) = K(x,x')·A[t,t'] and A = L Lᵀ: Q c = Σ_r L[t,r] ∘ (K (L[t',r] ∘ c)),
  one product K @ (L[t'] ∘ c) with R columns; the N×N Hadamard product is never formed.
* :class:`CommonSimilarityTaskOperator` — the common-similarity family A_ω = ω11ᵀ + (1−ω)I on
  task-indexed data: Q_ω = ω K + (1−ω) K∘S with S_ij = [tᵢ = tⱼ]; K∘S is computed once and
  shared by every ω, so a batch of ω costs one product with stacked right-hand sides.
* :class:`DivCurlOperator` — the Gaussian divergence-free (26) and curl-free (27) kernels and
  their convex combination γ·Γ_cf + (1−γ)·Γ_df on fields ℝᵖ → ℝᵖ, O(n²p) per product.
* :class:`SumOfSeparableOperator` — Σᵢ Kᵢ ⊗ Bᵢ.
* :class:`TransformableOperator` — Γ(x, x')_{pq} = K(T_p x, T_q x') from transformed inputs.

Public constructor functions (``task_indexed``, ``div_curl``, ...) validate in plain Python.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.kernels import Gaussian
    >>> X = jnp.linspace(0, 1, 4)[:, None]
    >>> op = div_curl(Gaussian(0.5), jnp.c_[X, X], gamma=0.5)
    >>> op.mv(jnp.ones((4, 2))).shape
    (4, 2)
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._checks import as_float_array, check_inputs, check_output_matrix, check_unit_interval
from .errors import ParameterError, ShapeError, TaskError
from .kernels import Gaussian, Kernel, squared_distances
from .operators import GramOperator

__all__ = [
    "TaskIndexedOperator",
    "CommonSimilarityTaskOperator",
    "DivCurlOperator",
    "SumOfSeparableOperator",
    "TransformableOperator",
    "check_tasks",
    "task_indexed",
    "div_curl",
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

    def mv(self, C):
        Z = self.K @ (self.L[self.col_tasks] * C)  # (m, R): one product
        return jnp.sum(self.L[self.row_tasks] * Z, axis=1, keepdims=True)


class CommonSimilarityTaskOperator(GramOperator):
    """Q_ω = ω K + (1 − ω) K∘S on task-indexed data (S_ij = [tᵢ = tⱼ]).

    Args:
      K: (m, N) scalar Gram; KS: (m, N) the same with entries of different tasks zeroed.
      omega: scalar in [0, 1] (a leaf: vmap over it for a batch of ω).
    """

    K: Array
    KS: Array
    omega: Array

    @property
    def shape(self):
        return (self.K.shape[1], 1)

    def mv(self, C):
        return self.omega * (self.K @ C) + (1.0 - self.omega) * (self.KS @ C)


def _div_curl_weights(X1, X2, sigma, gamma):
    """Pairwise Gaussian weights w (m, n), scaled differences U (m, n, p) and ‖u‖²."""
    U = (X1[:, None, :] - X2[None, :, :]) / sigma
    r2 = jnp.sum(U**2, axis=-1)
    w = jnp.exp(-0.5 * r2) / sigma**2
    return w, U, r2


class DivCurlOperator(GramOperator):
    """γ·Γ_cf + (1−γ)·Γ_df with the Gaussian curl-free (27) and divergence-free (26) kernels.

    With u = (x − x')/σ and w = e^{−‖u‖²/2}/σ²:
    Γ_cf = w (I − u uᵀ), Γ_df = w (u uᵀ + ((p−1) − ‖u‖²) I). Products cost O(m n p) with the
    (m, n, p) difference tensor; the (mp)×(np) matrix is never formed.

    Args:
      X_rows: (m, p) inputs of the rows; X_cols: (n, p) of the columns.
      sigma: Gaussian width; gamma: weight of the curl-free part in [0, 1].
    """

    X_rows: Array
    X_cols: Array
    sigma: Array
    gamma: Array

    @property
    def shape(self):
        return self.X_cols.shape

    def parts(self, C):
        """(curl-free part, divergence-free part) of Γ C, weighted by γ and 1 − γ."""
        w, U, r2 = _div_curl_weights(self.X_rows, self.X_cols, self.sigma, self.gamma)
        p = self.X_cols.shape[1]
        uc = jnp.einsum("ijb,jb->ij", U, C)
        Wc = w @ C
        uuc = jnp.einsum("ij,ija->ia", w * uc, U)
        r2c = (w * r2) @ C
        curl = Wc - uuc
        div = uuc + (p - 1) * Wc - r2c
        return self.gamma * curl, (1.0 - self.gamma) * div

    def mv(self, C):
        curl, div = self.parts(C)
        return curl + div


class SumOfSeparableOperator(GramOperator):
    """Σᵢ Kᵢ ⊗ Bᵢ (seed 003 eq. 3.10): product Σᵢ Kᵢ C Bᵢ.

    Args:
      Ks: (q, m, n) scalar Gram matrices; Bs: (q, d, d) symmetric PSD output matrices.
    """

    Ks: Array
    Bs: Array

    @property
    def shape(self):
        return (self.Ks.shape[2], self.Bs.shape[1])

    def mv(self, C):
        return jnp.einsum("qmn,nd,qde->me", self.Ks, C, self.Bs)


class TransformableOperator(GramOperator):
    """Γ(x, x')_{pq} = K(T_p x, T_q x') from transformed inputs (seed 000 §4.1).

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

    def mv(self, C):
        def row_block(Zp):  # (m, p) → Σ_q K(T_p X, T_q X') C[:, q]
            return jnp.sum(jax.vmap(lambda Zq, c: self.kernel(Zp, Zq) @ c, in_axes=(0, 1))(self.Z_cols, C), 0)

        return jax.vmap(row_block, out_axes=1)(self.Z_rows)


# --------------------------------------------------------------------------- constructors
def check_tasks(tasks, n: int, known=None, name: str = "tasks") -> tuple[np.ndarray, np.ndarray]:
    """Task labels → (integer codes 0..T−1, the task labels in code order).

    Args:
      tasks: (n,) hashable task ids.
      n: expected length.
      known: labels seen at fit; ids outside it raise :class:`TaskError`.

    Returns:
      (codes (n,), labels (T,)).
    """
    arr = np.asarray(tasks)
    if arr.ndim != 1:
        raise ShapeError(f"{name} must be 1-D; received shape {arr.shape}.")
    if arr.shape[0] != n:
        raise ShapeError(f"{name} must have one entry per input: expected {n}, received {arr.shape[0]}.")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise TaskError(f"{name} holds NaN or infinite ids; every example needs a task.")
    if any(t is None for t in arr.tolist()):
        raise TaskError(f"{name} holds None; every example needs a task.")
    if known is None:
        labels, codes = np.unique(arr, return_inverse=True)
        return codes, labels
    index = {t: i for i, t in enumerate(np.asarray(known).tolist())}
    unknown = sorted({t for t in arr.tolist() if t not in index}, key=str)
    if unknown:
        raise TaskError(f"{name} holds ids not seen during fit: {unknown[:5]}; known: {list(index)[:10]}.")
    return np.array([index[t] for t in arr.tolist()]), np.asarray(known)


def task_indexed(kernel: Kernel, X, tasks, A, X_cols=None, tasks_cols=None) -> TaskIndexedOperator:
    """Validated :class:`TaskIndexedOperator` for integer task ids 0..T−1 (A is T×T PSD).

    Every task 0..T−1 must have at least one example among the columns.
    """
    X = check_inputs(X)
    A = check_output_matrix(A, name="A")
    T = A.shape[0]
    Xc = X if X_cols is None else check_inputs(X_cols, "X_cols")
    tr = np.asarray(tasks)
    tc = tr if tasks_cols is None else np.asarray(tasks_cols)
    for name, t, n in (("tasks", tr, X.shape[0]), ("tasks_cols", tc, Xc.shape[0])):
        if t.ndim != 1 or t.shape[0] != n or t.dtype.kind not in "iu":
            raise TaskError(f"{name} must be {n} integer task ids; received {t.dtype} of shape {t.shape}.")
        if t.min() < 0 or t.max() >= T:
            raise TaskError(f"{name} must lie in 0..{T - 1} (A is {T}x{T}); received ids {t.min()}..{t.max()}.")
    empty = np.setdiff1d(np.arange(T), tc)
    if empty.size:
        raise TaskError(f"task(s) {empty.tolist()[:5]} have no examples; every task of A needs one.")
    a, V = np.linalg.eigh(A.astype(np.float64))
    L = V * np.sqrt(np.maximum(a, 0.0))
    K = kernel(jnp.asarray(X), jnp.asarray(Xc))
    return TaskIndexedOperator(K, jnp.asarray(L, K.dtype), jnp.asarray(tr), jnp.asarray(tc))


def div_curl(kernel: Gaussian, X, gamma: float = 0.5, X_cols=None) -> DivCurlOperator:
    """Validated :class:`DivCurlOperator` from a Gaussian kernel (γ = 1 curl-free, 0 div-free)."""
    if not isinstance(kernel, Gaussian):
        raise ParameterError(f"div/curl-free kernels need a Gaussian kernel; received {type(kernel).__name__}.")
    X = check_inputs(X)
    Xc = X if X_cols is None else check_inputs(X_cols, "X_cols")
    if Xc.shape[1] != X.shape[1]:
        raise ShapeError(f"X_cols has {Xc.shape[1]} features, X has {X.shape[1]}.")
    g = float(check_unit_interval(gamma, "gamma")[0])
    return DivCurlOperator(jnp.asarray(X), jnp.asarray(Xc), kernel.sigma, jnp.asarray(g))


def same_task_mask(row_tasks, col_tasks):
    """(m, N) float mask S_ij = [row_tasks[i] = col_tasks[j]]."""
    return (jnp.asarray(row_tasks)[:, None] == jnp.asarray(col_tasks)[None, :])
