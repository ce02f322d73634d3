r"""The centralized O(n³m) solver of mixed-effect multi-task regression ([Din11] §5.2, Algorithm 4).

Problem ([Din11] §5.1): with the kernel (5.2), weights wᵢ > 0 and λ > 0, the coefficients solve

    (K + λW) c = y,   W = diag(w₁, …, w_ℓ),                                            (5.4)

and the estimate of task j is g_j(x) = α Σᵢ čᵢ K̄(x̌ᵢ, x) + (1 − α) Σ_{i ∈ task j} cᵢ K̃ʲ(xᵢ, x)
with č = Pᵀc the coefficients summed over the n *distinct* inputs x̌ (5.8).

Algorithm 4 (Theorem 15) solves (5.4) with work O(Σⱼ ℓⱼ³ + n³) instead of O(ℓ³):

1–3  Rʲ = [(1 − α) K̃ʲ(kʲ, kʲ) + λ W(kʲ, kʲ)]⁻¹ for every task (batched Cholesky, tasks of the
     same size and kernel ``vmap``-ed together);
4    Ǩ = L D Lᵀ, the kernel matrix of K̄ on the distinct inputs;
5–6  y̌ = Σⱼ Lᵀ(:, hʲ) Rʲ yʲ,  H = (D⁻¹ + α Σⱼ Lᵀ(:, hʲ) Rʲ L(hʲ, :))⁻¹;
7    z = H y̌;
10   cʲ = Rʲ [yʲ − α L(hʲ, :) z].

Where we depart from the text, and why:

* Line 4 uses the spectral factorization Ǩ = V Λ Vᵀ (L = V, D = Λ, one of the "suitable rank-r
  factors" of (5.7)), computed once per data set and shared by every (α, λ) of a grid. With
  C = V Λ^{1/2} and G = Σⱼ I(:, hʲ) Rʲ I(hʲ, :) (an n×n scatter-add, so the sums of lines 5–6
  cost O(Σⱼ ℓⱼ²) rather than O(n²·Σⱼ ℓⱼ)), H = Λ^{1/2}(I + α CᵀGC)⁻¹Λ^{1/2} and
  L z = C (I + α CᵀGC)⁻¹ Cᵀ b with b = Σⱼ I(:, hʲ) Rʲ yʲ: a symmetric positive definite n×n
  solve that never divides by the pivots of D, so K̄ may be only positive *semi*-definite
  (a linear K̄ with n > p, say).
* Line 8 (č from D Lᵀ č = z) is replaced by its definition (5.8), č = Pᵀ c = b − α G (L z),
  the scatter-add of the cʲ of line 10 — the same vector without a triangular solve.
* Several right-hand sides are solved at once (y has shape (ℓ, k)); the estimator uses a
  second column of ones for the unpenalized bias ([Din11] §5 introduction: "a regularization
  problem with a parametric bias term").

[Din11] F. Dinuzzo, *Learning functions with kernel methods*, PhD thesis, Università di Pavia, 2011.

Example:
    >>> import numpy as np
    >>> from jaxmtl.kernels import Gaussian
    >>> X = np.array([[0.0], [1.0], [0.0], [2.0]]); y = np.array([1.0, 2.0, 1.5, 0.0])
    >>> sol = algorithm4(X, y, np.array([0, 0, 1, 1]), alpha=0.5, lam=0.1, kernel=Gaussian(1.0))
    >>> sol.coef.shape, sol.coef_unique.shape
    ((4,), (3,))
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
from jax.scipy.linalg import cho_factor, cho_solve

from .._checks import as_float_array, check_inputs
from .._jit import jit
from ..errors import ParameterError, ShapeError
from ..kernels.scalar import Kernel
from ..linalg import eigh
from ..operators.tasks import check_tasks
from .kernel import check_alpha, check_lam, resolve_task_kernel
from ..products import full_precision

__all__ = ["Layout", "Prepared", "Query", "MixedEffectSolution", "unique_inputs", "merge_repeats", "task_layout",
           "prepare",
           "solve", "solve_path", "build_query", "predict_query", "algorithm4", "check_weights"]


class Layout(NamedTuple):
    """Examples grouped by task into padded buckets (NumPy, host side).

    ``buckets`` is a list of (rows, kernel): rows (m_b, L_b) positions of the examples of m_b tasks
    of the same width L_b (a size class, or one block per kernel: :func:`task_layout`'s ``block``)
    and the same individual kernel K̃, padded with −1; ``slot`` maps a task code to (bucket, row
    of the bucket), or (−1, −1) for a task without examples outside a block (in a block such a
    task has a row of padding only: g̃ = 0 there too).
    """

    buckets: list
    slot: np.ndarray


class Bucket(NamedTuple):
    """Device arrays of one bucket: see :func:`prepare`."""

    rows: jax.Array   # (m_b, L_b) example positions, padding = N (dropped by scatters)
    h: jax.Array      # (m_b, L_b) distinct-input indices hʲ, padding 0
    mask: jax.Array   # (m_b, L_b) True on real examples
    w: jax.Array      # (m_b, L_b) weights wᵢ, padding 1
    Kt: jax.Array     # (m_b, L_b, L_b) K̃ʲ(kʲ, kʲ), zero on padding


class Prepared(NamedTuple):
    """Everything of Algorithm 4 that does not depend on (α, λ, y): a pytree for ``jit``."""

    C: jax.Array        # (n, n) C = V Λ^{1/2} with Ǩ = V Λ Vᵀ (line 4)
    buckets: tuple      # of Bucket


class Query(NamedTuple):
    """Kernel values needed to predict at query points (x_q, t_q) from a fitted solution."""

    Kbar: jax.Array   # (q, n) K̄(x_q, x̌)
    rows: jax.Array   # (q, L) positions of the examples of task t_q (padding = the examples' length)
    Kt: jax.Array     # (q, L) K̃^{t_q}(x_q, x_i), zero on padding


class MixedEffectSolution(NamedTuple):
    """Output of :func:`algorithm4`: c (ℓ,) or (ℓ, k), č (n,) or (n, k), the distinct inputs."""

    coef: np.ndarray
    coef_unique: np.ndarray
    X_unique: np.ndarray
    inverse: np.ndarray


def unique_inputs(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows x̌ of X (exact equality, as ``find`` of [Din11] §5.3.1) and the
    index vector mapping each example to its distinct input (the matrix P of (5.6)).

    Returns:
      (X_unique (n, p), inverse (ℓ,) int).
    """
    Xu, inverse = np.unique(np.asarray(X) + 0.0, axis=0, return_inverse=True)  # + 0.0: −0 ≡ 0
    return Xu, inverse.reshape(-1)


def merge_repeats(X: np.ndarray, codes: np.ndarray, y: np.ndarray, s: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Examples of one task at one input merged into one, as Case 1 of the online algorithm does.

    For (5.4) this is exact: the loss Σᵢ sᵢ(yᵢ − g(x, t))² over the examples of a task at x equals
    S(ȳ − g(x, t))² + const with S = Σᵢ sᵢ (the weight wᵢ = 1/sᵢ merged harmonically) and
    ȳ = Σᵢ sᵢyᵢ / S, and the merged example's coefficient is the sum of theirs. It removes the
    exactly singular blocks K̃ʲ(kʲ, kʲ) that repeats create, whose only regularization is λW.

    Args:
      X: (ℓ, p) inputs; codes: (ℓ,) task codes; y: (ℓ,) outputs; s: (ℓ,) positive sample weights.

    Returns:
      (X, codes, y, s) of the ℓ' ≤ ℓ merged examples (sorted by task, then input).

    Example:
        >>> merge_repeats(np.zeros((2, 1)), np.array([0, 0]), np.array([1.0, 3.0]), np.array([1.0, 3.0]))[2:]
        (array([2.5]), array([4.]))
    """
    keys, inverse = np.unique(np.c_[codes.astype(np.float64), np.asarray(X, np.float64) + 0.0], axis=0,
                              return_inverse=True)
    inverse = inverse.reshape(-1)
    s_m = np.bincount(inverse, weights=s, minlength=len(keys))
    y_m = np.bincount(inverse, weights=s * y, minlength=len(keys)) / s_m
    first = np.unique(inverse, return_index=True)[1]
    return X[first], codes[first], y_m, s_m


def _size_class(length: int) -> int:
    """Bucket width: the smallest of 1, 2, 3, 4, 6, 8, 12, 16, 24, … (×1.5 steps) ≥ ``length``,
    so that padding wastes at most half the width and few shapes are compiled."""
    width = 1
    while width < length:
        width = width + 1 if width < 4 else (width * 3 // 2 if width & (width - 1) == 0 else width * 4 // 3)
    return width


def _kernel_key(kernel: Kernel) -> tuple:
    """A hashable key equal for equal kernels (same class, structure and parameter values), so
    that distinct but equal kernel objects share a bucket and one compiled shape."""
    leaves, treedef = jax.tree_util.tree_flatten(kernel)
    return treedef, tuple((np.shape(v), np.asarray(v).tobytes()) for v in leaves)


BLOCK_COST = 2.0  # one block per kernel while it costs at most this × the size classes' work


def task_layout(codes: np.ndarray, n_tasks: int, kernel_of: Any, block: Any = None, n_unique: int = 0) -> Layout:
    """Group the examples of each task into buckets of equal width and equal kernel.

    Args:
      codes: (ℓ,) task codes in 0..n_tasks−1.
      kernel_of: function code → individual kernel K̃ʲ (equal kernels share buckets even when
        they are distinct objects).
      block: None (every task its size class, :func:`_size_class`), or a function (largest task's
        examples, the kernel's examples, its tasks) → one width for all the tasks of a kernel (an
        estimator's size buckets: the same shapes for every n of a bucket), taken where Algorithm
        4's work per (α, λ), n³ + m·width³ (n = ``n_unique``, m tasks), is at most ``BLOCK_COST``
        × the size classes' n³ + Σⱼ Lⱼ³: tasks of very unequal sizes on few distinct inputs (a
        recommender's users) keep their classes. In a block every task 0..n_tasks−1 has a row,
        a task without examples (left out of a hold-out split) one of padding only, so that the
        split compiles the shapes of the fit on all rows.
    """
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=n_tasks)
    starts = np.concatenate([[0], np.cumsum(counts)])
    kernels: dict = {}
    # with a block every task has its row, those without examples all padding (a split that leaves
    # a task out keeps the fit's shapes); size classes hold the tasks with examples only
    for t in (np.flatnonzero(counts) if block is None else np.arange(n_tasks)).tolist():
        k = kernel_of(t)
        kernels.setdefault(_kernel_key(k), (k, []))[1].append(t)
    groups: dict = {}
    for key, (k, tasks) in kernels.items():
        sizes = counts[tasks]
        if not sizes.any():  # no task of this kernel has an example
            continue
        widths = [_size_class(int(c)) if c else 0 for c in sizes]
        if block is not None:
            width = int(block(int(sizes.max()), int(sizes.sum()), len(tasks)))
            if n_unique ** 3 + len(tasks) * width ** 3 <= BLOCK_COST * (n_unique ** 3 + sum(w ** 3 for w in widths)):
                widths = [width] * len(tasks)
        for t, width in zip(tasks, widths):
            if width:  # a task without examples outside a block: no row (its slot stays (−1, −1))
                groups.setdefault((key, width), (k, []))[1].append(t)
    slot = np.full((n_tasks, 2), -1, dtype=np.int64)
    buckets = []
    for b, ((_, width), (k, tasks)) in enumerate(groups.items()):
        rows = np.full((len(tasks), width), -1, dtype=np.int64)
        for i, t in enumerate(tasks):
            rows[i, : counts[t]] = order[starts[t]: starts[t + 1]]
            slot[t] = (b, i)
        buckets.append((rows, k))
    return Layout(buckets, slot)


def _outer_mask(K: jax.Array, mask: jax.Array) -> jax.Array:
    """K (…, L, L) with the rows and columns where ``mask`` (…, L) is False zeroed."""
    return K * (mask[..., :, None] & mask[..., None, :])


@jit
def _factor(kernel: Kernel, Xu: jax.Array, real: jax.Array) -> jax.Array:
    """C = V Λ^{1/2} with Ǩ = K̄(x̌, x̌) = V Λ Vᵀ (line 4), negative round-off eigenvalues clipped;
    the padded inputs (``real`` False) masked out of Ǩ, so that their rows of C are zero."""
    Kc = _outer_mask(kernel(Xu, Xu), real)
    evals, V = eigh(0.5 * (Kc + Kc.T))
    return V * jnp.sqrt(jnp.clip(evals, 0.0))


@jit
def _task_grams(kernel: Kernel, Xu: jax.Array, h: jax.Array, mask: jax.Array) -> jax.Array:
    """(m_b, L_b, L_b) blocks K̃ʲ(kʲ, kʲ), zero on padding."""
    return _outer_mask(jax.vmap(lambda A: kernel(A, A))(Xu[h]), mask)


def prepare(X_unique: np.ndarray, inverse: np.ndarray, w: np.ndarray, layout: Layout, kernel: Kernel,
            n_unique: int | None = None, n_rows: int | None = None) -> Prepared:
    """Factor Ǩ (line 4) and gather the per-task blocks K̃ʲ(kʲ, kʲ) of lines 1–3.

    Args:
      X_unique: (n, p) distinct inputs, the rows past the first ``n_unique`` (default all) padding,
        masked out of Ǩ; inverse: (ℓ,) example → distinct input; w: (ℓ,) positive weights;
        layout: from :func:`task_layout`; kernel: K̄; n_rows: the length ≥ ℓ the examples' arrays
        (y, c) are padded to (default ℓ), the buckets' index of a padding position.
    """
    # NumPy converted on the host first: jnp.asarray narrowing a float64 array compiles a program per shape
    Xu = jax.device_put(np.asarray(X_unique, jax.dtypes.canonicalize_dtype(np.asarray(X_unique).dtype)))
    N = len(inverse) if n_rows is None else n_rows
    index = jax.dtypes.canonicalize_dtype(np.int64)
    buckets = []
    for rows, k in layout.buckets:
        mask = rows >= 0
        h, on = jax.device_put(np.where(mask, inverse[np.maximum(rows, 0)], 0).astype(index)), jax.device_put(mask)
        buckets.append(Bucket(jax.device_put(np.where(mask, rows, N).astype(index)), h, on,
                              jax.device_put(np.where(mask, w[np.maximum(rows, 0)], 1.0).astype(Xu.dtype)),
                              _task_grams(k, Xu, h, on)))
    real = np.arange(len(Xu)) < (len(Xu) if n_unique is None else n_unique)
    return Prepared(_factor(kernel, Xu, jax.device_put(real)), tuple(buckets))


@jit
def solve(prep: Prepared, Y: jax.Array, alpha, lam) -> tuple[jax.Array, jax.Array]:
    """Algorithm 4 for one (α, λ): returns (č (n, k), c (ℓ, k)) solving (5.4) for Y (ℓ, k).

    Pure and traceable in α and λ, so a grid is a ``vmap`` / ``lax.map`` of this function.
    """
    C = prep.C
    n, k = C.shape[0], Y.shape[1]
    G = jnp.zeros((n, n), C.dtype)
    B = jnp.zeros((n, k), C.dtype)
    parts = []
    for b in prep.buckets:
        width = b.h.shape[1]
        outer = b.mask[:, :, None] & b.mask[:, None, :]
        M = (1 - alpha) * b.Kt + lam * b.w[:, :, None] * jnp.eye(width, dtype=C.dtype)   # lines 1–3
        chol = jnp.linalg.cholesky(M)
        eye = jnp.broadcast_to(jnp.eye(width, dtype=C.dtype), M.shape)
        R = jnp.where(outer, jax.vmap(lambda f, e: cho_solve((f, True), e))(chol, eye), 0.0)
        Yb = jnp.where(b.mask[:, :, None], Y.at[b.rows].get(mode="fill", fill_value=0.0), 0.0)
        G = G.at[b.h[:, :, None], b.h[:, None, :]].add(R)
        B = B.at[b.h].add(R @ Yb)
        parts.append((R, Yb))
    A = jnp.eye(n, dtype=C.dtype) + alpha * (C.T @ G @ C)              # lines 5–7, scaled form
    KZ = C @ cho_solve(cho_factor(A, lower=True), C.T @ B)             # L z = Ǩ č
    c = jnp.zeros((Y.shape[0], k), C.dtype)
    for b, (R, Yb) in zip(prep.buckets, parts):
        cb = R @ (Yb - alpha * KZ[b.h])                                # line 10
        c = c.at[b.rows].add(cb, mode="drop")
    return B - alpha * (G @ KZ), c                                     # č = Pᵀc (5.8)


@jit
def solve_path(prep: Prepared, Y: jax.Array, alpha, lams: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(5.4) for one α and every λ of ``lams`` (L,) from one eigendecomposition: (č (L, n, k), c (L, ℓ, k)).

    With W = diag(w) and K_α = α PǨPᵀ + (1 − α) blockdiag(K̃ʲ) (Ǩ = CCᵀ as in :func:`solve`),
    W^-½ K_α W^-½ = U diag(s) Uᵀ gives c(λ) = W^-½ U diag(1/(s + λ)) Uᵀ W^-½ y for every λ at
    the cost of one ℓ × ℓ eigendecomposition, where :func:`solve` costs O(Σⱼ ℓⱼ³ + n³) per
    (α, λ): the cheaper route for a λ grid when the ℓ examples are not many more than the n
    distinct inputs. The same system and the same č = Pᵀc as :func:`solve`.
    """
    C = prep.C
    ell, dtype = Y.shape[0], C.dtype
    inverse = jnp.zeros(ell, jnp.int32)
    w = jnp.ones(ell, dtype)
    real = jnp.zeros(ell, bool)   # the examples of a task: False on the padded rows of Y (zero)
    K_task = jnp.zeros((ell, ell), dtype)
    for b in prep.buckets:  # a bucket's padding positions (index ℓ) are dropped by the scatters
        inverse = inverse.at[b.rows].set(b.h.astype(jnp.int32), mode="drop")
        w = w.at[b.rows].set(b.w, mode="drop")
        real = real.at[b.rows].set(b.mask, mode="drop")
        K_task = K_task.at[b.rows[:, :, None], b.rows[:, None, :]].set(b.Kt, mode="drop")
    Ce = C[inverse] * real[:, None]
    r = 1.0 / jnp.sqrt(w)
    S = r[:, None] * (alpha * (Ce @ Ce.T) + (1 - alpha) * K_task) * r[None, :]
    s, U = eigh(0.5 * (S + S.T))
    Z = U.T @ (r[:, None] * Y)                                                      # (ℓ, k)
    # padded rows: zero rows and columns of S, zero rows of Y, so c = Y/λ = 0 there (masked: eigh may
    # mix them with the real null space, which moves them by round-off)
    c = (r * real)[None, :, None] * jnp.einsum("ij,ljk->lik", U, Z[None] / (jnp.clip(s, 0.0)[None, :, None]
                                                                              + lams[:, None, None]))
    c_unique = jnp.zeros((lams.shape[0], C.shape[0], Y.shape[1]), dtype).at[:, inverse].add(c)
    return c_unique, c


def build_query(Xq: np.ndarray, slots: np.ndarray, X_unique: np.ndarray, X_fit: np.ndarray,
                layout: Layout, kernel: Kernel, n_rows: int | None = None) -> Query:
    """Kernel values for predicting at (x_q, task slot) pairs.

    Args:
      Xq: (q, p) query inputs; slots: (q, 2) each query's (bucket, row) from ``layout.slot``
        ((−1, −1) for a task without training examples: its prediction is ḡ).
      X_unique: (n, p) distinct training inputs; X_fit: (ℓ, p) training inputs; n_rows: the
        length the coefficients c are padded to (default ℓ), the index of a padding position.

    The buckets of one individual kernel (its size classes, or its one block) are served by one
    compiled call over all q queries, each query's own task rows gathered into the width of the
    kernel's widest bucket (masked beyond them): the compiled shapes follow q and the layout, not
    the number of queries of each task, and each query's values are computed once.
    """
    q, N = Xq.shape[0], X_fit.shape[0] if n_rows is None else n_rows
    width = max([rows.shape[1] for rows, _ in layout.buckets] + [1])
    rows_q = np.full((q, width), N, dtype=np.int64)
    Kt = np.zeros((q, width))
    by_kernel: dict[int, list[int]] = {}
    for b, (_, k) in enumerate(layout.buckets):  # task_layout gives the buckets of one kernel one object
        by_kernel.setdefault(id(k), []).append(b)
    for members in by_kernel.values():
        k = layout.buckets[members[0]][1]
        r = np.full((q, max(layout.buckets[b][0].shape[1] for b in members)), -1)
        for b in members:
            here, rows = slots[:, 0] == b, layout.buckets[b][0]
            r[here, : rows.shape[1]] = rows[slots[here, 1]]
        rows_q[:, : r.shape[1]] = np.where(r >= 0, r, rows_q[:, : r.shape[1]])
        Kt[:, : r.shape[1]] += np.asarray(_query_rows(k, Xq, X_fit[np.maximum(r, 0)], r >= 0))
    index = jax.dtypes.canonicalize_dtype(np.int64)  # converted on the host: no compiled conversion
    return Query(_cross_gram(kernel, Xq, X_unique), jax.device_put(rows_q.astype(index)),
                 jax.device_put(np.asarray(Kt, X_fit.dtype)))


@jit
def _query_rows(kernel: Kernel, Xq, Xt, mask):
    """(q, L) K̃(x_q, x_i) for each query's own task inputs Xt (q, L, p), zero where ~mask."""
    return jax.vmap(lambda x, A: kernel(x[None], A)[0])(Xq, Xt) * mask


@jit
def _cross_gram(kernel: Kernel, A, B):
    """K̄(A, B)."""
    return kernel(A, B)


@jit
def predict_query(query: Query, coef_unique: jax.Array, coef: jax.Array, alpha) -> tuple[jax.Array, jax.Array]:
    """(ḡ, g̃) at the query points (5.3): ḡ = α K̄ č, g̃ = (1 − α) Σ K̃ cʲ; shapes (q,) + coef's trailing."""
    cpad = jnp.concatenate([coef, jnp.zeros((1,) + coef.shape[1:], coef.dtype)])
    g_bar = alpha * (query.Kbar @ coef_unique)
    g_tilde = (1 - alpha) * jnp.einsum("ql,ql...->q...", query.Kt, cpad[query.rows])
    return g_bar, g_tilde


def check_weights(w: Any, n: int, name: str) -> np.ndarray:
    """(n,) finite strictly positive weights, else ShapeError / NonFiniteError / ParameterError."""
    w = as_float_array(w, name, ndim=(0, 1))
    w = np.broadcast_to(w, (n,)).astype(np.float64) if w.ndim == 0 else w
    if w.shape != (n,):
        raise ShapeError(f"{name} must have one entry per example: expected ({n},), received {w.shape}.")
    if np.any(w <= 0):
        raise ParameterError(f"{name} must be positive; received {int(np.sum(w <= 0))} value(s) <= 0 "
                             f"(smallest {float(w.min())!r}).")
    return w


@full_precision
def algorithm4(X: npt.ArrayLike, y: npt.ArrayLike, tasks: npt.ArrayLike, alpha: float, lam: float, kernel: Kernel,
               task_kernel: Any = None, w: npt.ArrayLike | None = None) -> MixedEffectSolution:
    """Solve (5.4) with Algorithm 4 of [Din11] (functional interface, no bias term).

    Args:
      X: (ℓ, p) inputs; y: (ℓ,) or (ℓ, k) outputs; tasks: (ℓ,) task labels.
      alpha: α in [0, 1]; lam: λ > 0 (unnormalised, as in (5.4)).
      kernel: K̄; task_kernel: K̃ʲ (None: ``kernel``; one kernel; or a mapping task → kernel).
      w: (ℓ,) positive weights wᵢ of (5.4) (the loss is Σ (yᵢ − g(xᵢ, tᵢ))² / (2λwᵢ)); None: 1.

    Returns:
      MixedEffectSolution(coef c, coef_unique č, X_unique x̌, inverse) with c in the order of X.
    """
    X = check_inputs(X)
    y = as_float_array(y, "y", ndim=(1, 2))
    if y.shape[0] != X.shape[0]:
        raise ShapeError(f"y must have one row per input: expected {X.shape[0]}, received {y.shape}.")
    alpha, lam = check_alpha(alpha), check_lam(lam)
    codes, labels = check_tasks(tasks, X.shape[0])
    w = np.ones(X.shape[0]) if w is None else check_weights(w, X.shape[0], "w")
    lookup, _ = resolve_task_kernel(task_kernel, kernel)
    Xu, inverse = unique_inputs(X)
    layout = task_layout(codes, len(labels), lambda t: lookup(labels[t].item() if hasattr(labels[t], "item")
                                                              else labels[t]))
    prep = prepare(Xu, inverse, w, layout, kernel)
    Y = jnp.asarray(y.reshape(len(y), -1), prep.C.dtype)
    cu, c = solve(prep, Y, alpha, lam)
    shape = (lambda a: np.asarray(a)[:, 0]) if y.ndim == 1 else np.asarray
    return MixedEffectSolution(shape(c), shape(cu), Xu, inverse)
