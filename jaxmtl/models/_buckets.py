r"""Size buckets: a fit compiles for a bucketed number of rows, its padding masked exactly.

XLA compiles a program for every shape it sees, so a fit on 193 rows after one on 200 compiled
everything again. The estimators' compiled calls see the rows padded up a geometric ladder
(:func:`size_bucket`: sizes with at most ``BUCKET_BITS`` = 4 significant bits — …, 128, 144,
160, 176, 192, 208, …: at most 1/8 more rows, 12.5 %), so every n of a bucket runs the same
programs. The padding changes no number (docs/design.md, "Size buckets"):

* the padded rows of X are zeros, of Y zeros, and every Gram the path eigendecomposes is
  masked (``K ∘ m mᵀ``): its padded block is zero, so the padded rows fall in the null space,
  where Y's padded entries are zero — g(0)·0 — and get zero coefficients (a repeated eigenvalue
  0 may mix real and padded eigenvectors; its projector, hence the filtered solution, is the
  same);
* normalisers use the real n (Γ/n, the mean of the diagonal, τ = 1/σ_max, whose σ_max the
  zero eigenvalues do not change);
* folds hold real rows only: their gather indices (:func:`pad_folds`) point at real rows, and
  their padding positions carry weight 0, as the k-fold path's padding to the largest fold;
* leave-one-out and GCV take the real n: the hat matrix is h(σ) = σ g(σ) = 0 on the padded
  eigenvalues 0, so a padded row has residual 0 and hat diagonal 0, weight 0 in the loss, and
  adds nothing to GCV's trace.

Example:
    >>> [size_bucket(n) for n in (10, 16, 17, 193, 200, 208, 209, 1000)]
    [10, 16, 18, 208, 208, 208, 224, 1024]
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._jit import jit
from ..selection.criteria import fold_indices

__all__: list[str] = []

BUCKET_BITS = 4  # significant bits of a bucket size: padding below 2^-(BUCKET_BITS - 1) = 12.5 %
# The matrix-free route's ladder (n·d above 1500 unknowns): there every step is a product with the
# n × n Gram, and a fit's seconds of products dwarf its compilation — on School (11 522 training
# rows) the 12.5 % ladder's 6.6 % more rows cost 16 % more CPU time (docs/performance.md) — so its
# buckets are finer: padding below 2^-5 ≈ 3.1 %. Each of them lies inside one bucket of BUCKET_BITS.
FINE_BUCKET_BITS = 6


def size_bucket(n: int, bits: int = BUCKET_BITS) -> int:
    """The smallest size ≥ n with at most ``bits`` significant bits (n itself up to 2^bits).

    Example:
        >>> size_bucket(11522), size_bucket(11522, FINE_BUCKET_BITS)
        (12288, 11776)
    """
    n = int(n)
    shift = max(n.bit_length() - bits, 0)
    return -(-n >> shift) << shift


def task_block(largest: int, rows: int, n_tasks: int) -> int:
    """The rows every task's block of a per-task family is padded to: the size bucket of the
    largest task's rows, or of a task's share of the rows' bucket b = size_bucket(rows) / T plus
    3·√b (at most size_bucket(rows)), whichever is larger. The largest task of a split of the
    rows — a fold of ``cross_val_score`` — moves by a few rows about the share (by about √b
    where tasks are drawn at random); the margin keeps it in one block, so that every split of
    one data set compiles the family's programs once.

    Example:
        >>> task_block(20, 80, 4), task_block(24, 80, 4), task_block(60, 80, 4), task_block(80, 80, 1)
        (36, 36, 60, 80)
    """
    share = size_bucket(rows) / n_tasks
    margin = min(int(np.ceil(share + 3 * np.sqrt(share))), size_bucket(rows))
    return size_bucket(max(int(largest), margin))


@jit
def mean_diag(kern, X, n):
    """mean K(x, x) over the first ``n`` rows of X (n, p) (the rest padding): one program per bucket.

    Example:
        >>> from jaxmtl.kernels import Gaussian
        >>> float(mean_diag(Gaussian(1.0), np.zeros((4, 2)), np.int32(3)))
        1.0
    """
    return jnp.sum(jnp.where(jnp.arange(X.shape[0]) < n, kern.diag(X), 0.0)) / n


def pad_rows(A: np.ndarray, size: int) -> np.ndarray:
    """A (n, …) with zero rows appended up to ``size`` rows (NumPy: no compiled call)."""
    A = np.asarray(A)
    return np.concatenate([A, np.zeros((size - A.shape[0],) + A.shape[1:], A.dtype)])


def fold_targets(mode: str, masks: np.ndarray, n_folds: int, size: int, held: np.ndarray | None = None
                 ) -> tuple[int, int]:
    """(training, held-out) lengths the fold indices of ``masks`` (m, …, n) are padded to, so that
    every n of the bucket ``size`` gives the same shapes: k-fold (``n_folds`` folds per partition)
    size − ⌊size/k⌋ and ⌈size/k⌉, the largest a k-fold split of at most ``size`` rows holds;
    hold-out and given masks the buckets of their own largest counts. ``held``: the held-out masks
    where they are not ``~masks`` (rows outside every fold, such as padding)."""
    held = ~masks if held is None else held
    train, out = int(masks.sum(axis=-1).max()), int(held.sum(axis=-1).max())
    if mode == "kfold":
        return max(train, fold_train_length(size, n_folds)), max(out, -(-size // n_folds))
    return size_bucket(train), size_bucket(out)


def fold_train_length(size: int, n_folds: int, n_strata: int = 1) -> int:
    """The most training rows a fold of a k-fold split holds for any n ≤ ``size`` rows, the rows
    dealt over the folds within each of ``n_strata`` strata (a stratified split's classes; 1: one
    stratum). A stratum of n_c rows deals at least ⌊n_c/k⌋ ≥ (n_c − k + 1)/k rows to every held-out
    part, so a fold trains on at most n − ⌈(n − n_strata(k − 1))/k⌉ rows, which grows with n:
    size − ⌊size/k⌋ for one stratum.

    Example:
        >>> fold_train_length(208, 5), fold_train_length(208, 5, n_strata=3)
        (167, 168)
    """
    return size - max(-(-(size - n_strata * (n_folds - 1)) // n_folds), 0)


def fold_mode(masks: np.ndarray) -> tuple[str, int]:
    """('kfold', k) where training masks (m, n) hold every row out equally often, r ≥ 1 times, as
    r partitions of a k-fold, k = m / r (plain and task-stratified k-fold, repeated or not);
    ('masks', 1) for any others."""
    held = (~np.asarray(masks, bool)).sum(axis=0)
    r = int(held[0])
    kfold = r >= 1 and bool(np.all(held == r)) and len(masks) % r == 0 and len(masks) // r >= 2
    return ("kfold", len(masks) // r) if kfold else ("masks", 1)


def padded_fold_indices(masks: np.ndarray, size: int) -> tuple[np.ndarray, ...]:
    """:func:`~jaxmtl.selection.criteria.fold_indices` of training masks (m, n), n ≤ ``size``,
    padded to what every n of the bucket ``size`` gives (:func:`fold_targets`, the masks read by
    :func:`fold_mode`). The targets are at least the masks' own counts either way: the reading
    decides only which shapes recur."""
    masks = np.asarray(masks, bool)
    mode, n_folds = fold_mode(masks)
    return pad_folds(fold_indices(masks), fold_targets(mode, masks, n_folds, size))


def pad_folds(folds: tuple[np.ndarray, ...], targets: tuple[int, int]) -> tuple[np.ndarray, ...]:
    """:func:`~jaxmtl.selection.criteria.fold_indices` (tr, held, vt, vh) padded to ``targets``
    lengths: index 0 with weight False (a padding position, as the largest-fold padding)."""
    tr, held, vt, vh = folds

    def pad(a, length):
        return np.pad(a, ((0, 0), (0, length - a.shape[1])))

    return pad(tr, targets[0]), pad(held, targets[1]), pad(vt, targets[0]), pad(vh, targets[1])
