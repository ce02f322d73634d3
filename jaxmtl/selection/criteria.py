r"""Model selection on the regularization path: hold-out, k-fold, leave-one-out and GCV.

All functions return a validation score for every path parameter (and every output matrix of
a family) from one compiled call.

Leave-one-out in closed form. The training predictions of a spectral filter are a linear
smoother F = H Y with hat matrix H = W diag(σ g(σ)) Wᵀ, W = U ⊗ V. Its d×d diagonal block
for input i is B_i = V diag(D_i) Vᵀ with D = (U∘U)(σ g(σ)) (an n×d matrix), so the
leave-one-input-out residuals e_i = (I − B_i)⁻¹ (y_i − f_i) are

    E = ((Y − F) V ⊘ (1 − D)) Vᵀ,

O(n²d) per parameter. For Tikhonov this is *exactly* leave-one-out with the penalty nλ held
fixed (Rifkin & Lippert 2007; [BRBV11] §4.3); for the other filters it is the standard
linear-smoother approximation (their fit on n−1 points is not a rank-one update).

GCV: ‖Y − F‖² / (nd) / (1 − tr H / (nd))².

k-fold: fold f trains on the inputs outside it. Its training rows are gathered into a
(n_train × n_train) Gram (padded to the largest fold with zero rows and columns, which get zero
coefficients and leave the filtered solution on the other rows unchanged) and the path is
evaluated on its held-out rows only (padded likewise, with zero weight); folds are vmapped.
Cost per fold: one eigendecomposition of the fold's Gram and m_held × n_train × d per path
parameter.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.operators import separable_eigh
    >>> from jaxmtl.filters import Tikhonov
    >>> X = jnp.linspace(0, 1, 8)[:, None]; K = jnp.exp(-(X - X.T) ** 2)
    >>> eig = separable_eigh(K, jnp.eye(1))
    >>> loo_path(eig, jnp.sin(X), Tikhonov(), jnp.array([1e-1, 1e-3])).shape
    (2,)
"""

from __future__ import annotations

from functools import partial
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
from jax.typing import ArrayLike, DTypeLike

from .._checks import check_int, is_traced, require_concrete
from .._jit import jit
from ..errors import ParameterError, ShapeError
from ..filters.spectral import SpectralFilter
from ..linalg import clip_psd, eigh
from ..operators.base import SeparableEigh
from ..paths.eigen import mse_loss, path_map, spectral_path
from ..products import full_precision

__all__ = ["kfold_masks", "fold_sizes", "fold_rows", "fold_indices", "loo_path", "gcv_path", "kfold_path",
           "holdout_path"]

Array = jax.Array


def kfold_masks(n: int, n_folds: int, seed: int | None = 0, n_repeats: int = 1) -> np.ndarray:
    """(n_repeats·n_folds, n) boolean training masks of shuffled k-fold splits (True = training).

    ``n_repeats`` > 1 stacks that many independent shuffles (repeated k-fold): averaging the
    validation loss over several partitions removes most of the noise that one arbitrary
    partition puts into a selection. The first partition is the one of ``n_repeats=1``; with
    ``seed=None`` every partition is a fresh shuffle.

    Example:
        >>> kfold_masks(5, 5).sum(axis=1)
        array([4, 4, 4, 4, 4])
        >>> kfold_masks(6, 3, n_repeats=2).shape
        (6, 6)
    """
    n_repeats = check_int(n_repeats, "n_repeats", minimum=1)
    masks = []
    for r in range(n_repeats):
        perm = np.random.default_rng(seed if r == 0 or seed is None else (seed, r)).permutation(n)
        fold_of = np.empty(n, dtype=np.int64)
        fold_of[perm] = np.arange(n) % n_folds
        masks.append(fold_of[None, :] != np.arange(n_folds)[:, None])
    return np.concatenate(masks)


def _real_rows(Y: Array, n: ArrayLike | None) -> tuple[Array, Array]:
    """(n, real (N,) booleans): the real row count (default all N rows of Y, in Y's dtype) and
    which rows are real — the first n; the others are zero padding (:func:`loo_path`)."""
    N = Y.shape[0]
    n = jnp.asarray(N if n is None else n, Y.dtype)
    return n, jnp.arange(N) < n


def _hat_path(eig: SeparableEigh, Y, filt, params, tau, emit_from_hat, report=None, n=None):
    """Shared scaffold of LOO and GCV: emit_from_hat(h, R) per parameter (and per A); σ = s·a/n
    with the real row count ``n`` (default Y.shape[0])."""
    n = Y.shape[0] if n is None else n
    Yt = eig.U.T @ Y @ eig.V

    def one_output_matrix(a, tau):
        sigma = eig.s[:, None] * a[None, :] / n
        if tau is None:
            tau = 1.0 / jnp.maximum(jnp.max(sigma), jnp.finfo(sigma.dtype).tiny)

        def emit(g):
            h = sigma * g
            R = Y - eig.U @ (h * Yt) @ eig.V.T
            return emit_from_hat(h, R)

        return path_map(filt, sigma, params, tau, emit, report)

    if eig.a.ndim == 1:
        return one_output_matrix(eig.a, tau)
    return jax.vmap(one_output_matrix, in_axes=(0, None))(eig.a, tau)


def _check_real_count(n: ArrayLike | None, Y: Array) -> None:
    """A concrete ``n`` (real rows) must be an integer in [1, N] for Y's N rows; a traced one is
    the caller's (a bucketed fit passes its own). Outside the range the losses would be silently
    rescaled (n > N) or divided by zero (n ≤ 0)."""
    if n is None or is_traced(n):
        return
    value = np.asarray(n)
    N = int(np.shape(Y)[0])
    if value.ndim != 0 or not np.isfinite(value) or value != np.round(value) or not 1 <= value <= N:
        raise ParameterError(f"n (the real rows, the first n of Y's {N}) must be an integer in [1, {N}]; "
                             f"received {n!r}.")


@full_precision
def loo_path(eig: SeparableEigh, Y: Array, filt: SpectralFilter, params: Array, tau: ArrayLike | None = None,
             loss: Callable = mse_loss, report: Array | None = None, n: ArrayLike | None = None) -> Array:
    """Closed-form leave-one-input-out loss for every path parameter.

    Args:
      eig: eigensystem of K (N×N) and A (``a`` of shape (d,) or (Ω, d)).
      Y: (N, d) outputs.
      filt: filter (static); params: (P,) its parameters (steps 1..T if iterative).
      tau: step of iterative filters (default 1/σ_max).
      loss: ``loss(F, Y, w)`` applied to the leave-one-out predictions Y − E.
      report: optional (T,) booleans for iterative filters: the steps to evaluate (zeros elsewhere;
        also for :func:`gcv_path`).
      n: the number of real rows (default N; may be traced, also for :func:`gcv_path`): the
        first n rows of Y and K are the data, the others zero padding — zero rows of Y, zero rows
        and columns of K (a bucket-padded problem, docs/design.md "Size buckets"). σ = s·a/n, and
        a padded row is never left out: its weight in the loss is 0 (each real row's 1/n).

    Returns:
      (P,) or (Ω, P) losses; +inf where a hat block of a real row is numerically singular
      (interpolation).
    """
    _check_real_count(n, Y)
    return _loo_path(eig, Y, filt, params, tau, loss, report, n)


@partial(jit, static_argnames=("filt", "loss"))
@full_precision
def _loo_path(eig, Y, filt, params, tau=None, loss=mse_loss, report=None, n=None):
    U2 = eig.U**2
    n, real = _real_rows(Y, n)
    w = jnp.where(real, 1.0 / n, 0.0).astype(Y.dtype)
    eps = 10 * jnp.finfo(Y.dtype).eps

    def emit(h, R):
        one_minus_D = 1.0 - U2 @ h
        E = ((R @ eig.V) / jnp.maximum(one_minus_D, eps)) @ eig.V.T
        val = loss(Y - E, Y, w)
        singular = jnp.any(real[:, None] & (one_minus_D <= eps))
        return jnp.where(~singular & jnp.isfinite(val), val, jnp.inf)

    return _hat_path(eig, Y, filt, params, tau, emit, report, n)


@full_precision
def gcv_path(eig: SeparableEigh, Y: Array, filt: SpectralFilter, params: Array, tau: ArrayLike | None = None,
             report: Array | None = None, n: ArrayLike | None = None) -> Array:
    """Generalized cross-validation ‖Y−F‖²/(nd) / (1 − tr H/(nd))² along the path.

    ``n``: the number of real rows, the others zero padding (see :func:`loo_path`): the residuals
    of the real rows only, n·d in both normalisers; tr H sums h over every eigenvalue, and the
    padding's eigenvalues are 0, where h = σ g(σ) = 0.

    Returns:
      (P,) or (Ω, P); +inf where tr H = nd.
    """
    _check_real_count(n, Y)
    return _gcv_path(eig, Y, filt, params, tau, report, n)


@partial(jit, static_argnames=("filt",))
@full_precision
def _gcv_path(eig, Y, filt, params, tau=None, report=None, n=None):
    n, real = _real_rows(Y, n)
    nd = n * Y.shape[1]

    def emit(h, R):
        denom = (1.0 - jnp.sum(h) / nd) ** 2
        val = jnp.sum(jnp.where(real[:, None], R**2, 0.0)) / nd / denom
        return jnp.where((denom > 0) & jnp.isfinite(val), val, jnp.inf)

    return _hat_path(eig, Y, filt, params, tau, emit, report, n)


def fold_sizes(masks: npt.ArrayLike) -> tuple[int, int]:
    """(largest training size, largest held-out size) of concrete (k, n) boolean masks.

    Example:
        >>> fold_sizes(kfold_masks(10, 3))
        (7, 4)
    """
    require_concrete(masks, "masks", "fold sizes are static shapes: call fold_sizes outside jit")
    m = np.asarray(masks, bool)
    return int(m.sum(axis=1).max()), int((~m).sum(axis=1).max())


def fold_rows(m: Array, sizes: tuple[int, int], dtype: DTypeLike) -> tuple[Array, Array, Array, Array]:
    """Gather indices of one fold, padded to fixed sizes (traceable; vmap it over the masks).

    Args:
      m: (n,) boolean training mask; sizes: ``fold_sizes`` of all the folds (static); dtype: of
        the weights.

    Returns:
      (tr (n_train,), held (n_held,), vt (n_train,), vh (n_held,)): the training rows then the
      held-out rows, each in order, and weights 1 on a fold's own rows, 0 on padding positions
      past its count (which repeat other rows and must be zeroed or down-weighted by the caller).

    Example:
        >>> tr, held, vt, vh = fold_rows(jnp.array([True, False, True]), (2, 2), jnp.float32)
        >>> tr.tolist(), held.tolist(), vh.tolist()
        ([0, 2], [1, 0], [1.0, 0.0])
    """
    tr, held, vt, vh = _gather_rows(jnp, m, sizes)
    return tr, held, vt.astype(dtype), vh.astype(dtype)


def _gather_rows(xp, m, sizes):
    """:func:`fold_rows` of one mask (n,) or of every mask (k, n), in the array module ``xp``
    (``jnp`` traceable, ``np`` concrete); the weights boolean. A stable sort: cheaper to compile
    than ``jnp.nonzero``."""
    n_train, n_held = sizes
    argsort = partial(xp.argsort, axis=-1, **({"stable": True} if xp is jnp else {"kind": "stable"}))
    tr = argsort(~m)[..., :n_train]
    held = argsort(m)[..., :n_held]
    vt = xp.arange(n_train) < m.sum(axis=-1, keepdims=True)
    vh = xp.arange(n_held) < (~m).sum(axis=-1, keepdims=True)
    return tr, held, vt, vh


def fold_indices(masks: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`fold_rows` of every fold of concrete (k, n) masks, computed in NumPy.

    Passed to :func:`kfold_path` in place of the masks, they leave the compiled path without the
    sorts that find each fold's rows (a program that compiles faster; the losses are the same).

    Returns:
      (tr (k, n_train), held (k, n_held), vt (k, n_train), vh (k, n_held)), the weights boolean.

    Example:
        >>> tr, held, vt, vh = fold_indices(np.array([[True, False, True]]))
        >>> tr.tolist(), held.tolist(), vh.tolist()
        ([[0, 2]], [[1]], [[True]])
    """
    require_concrete(masks, "masks", "the indices define static shapes: call fold_indices outside jit")
    m = np.asarray(masks)
    if m.dtype != bool or m.ndim != 2:
        raise ShapeError(f"masks must be boolean of shape (k, n); received {m.dtype} of shape {m.shape}.")
    if not (m.any(axis=1).all() and (~m).any(axis=1).all()):
        raise ParameterError("every mask needs training (True) and held-out (False) rows.")
    tr, held, vt, vh = _gather_rows(np, m, fold_sizes(m))
    return tr.astype(np.int32), held.astype(np.int32), vt, vh


def _fold_losses(K, Y, a, V, filt, params, rows, loss, report):
    """Held-out losses along the path of one fold, given its :func:`fold_rows`."""
    tr, held, vt, vh = rows
    vt, vh = vt.astype(K.dtype), vh.astype(K.dtype)
    s, U = eigh(K[tr][:, tr] * vt[:, None] * vt[None, :])
    eig = SeparableEigh(clip_psd(s), U, a, V)
    return spectral_path(eig, Y[tr] * vt[:, None], filt, params, K_eval=K[held][:, tr] * vt[None, :],
                         Y_eval=Y[held], w_eval=vh / jnp.sum(vh), n=jnp.sum(vt), output="loss", loss=loss,
                         report=report)


@partial(jit, static_argnames=("filt", "loss", "sizes"))
def _kfold_path(K, Y, a, V, filt, params, masks, loss, sizes, report=None):
    rows = masks if sizes is None else jax.vmap(lambda m: fold_rows(m, sizes, K.dtype))(masks)
    return jax.vmap(lambda r: _fold_losses(K, Y, a, V, filt, params, r, loss, report))(rows)


@full_precision
def kfold_path(K: Array, Y: Array, a: Array, V: Array, filt: SpectralFilter, params: Array,
               masks: Array | tuple[np.ndarray, ...], loss: Callable = mse_loss, sizes: tuple[int, int] | None = None,
               report: Array | None = None) -> Array:
    """k-fold validation loss along the path, folds vmapped.

    Args:
      K: (n, n) Gram matrix of all inputs.
      Y: (n, d) outputs.
      a, V: eigenvalues (d,) or (Ω, d) and eigenvectors (d, d) of the output matrix family.
      filt, params: the filter (static) and its (P,) parameters.
      masks: (k, n) boolean training masks (see :func:`kfold_masks`); every fold must hold out
        at least one row. Or their :func:`fold_indices` (then ``sizes`` is ignored).
      loss: ``loss(F, Y, w)`` on each fold's held-out rows.
      sizes: ``fold_sizes(masks)``, static; computed from ``masks`` when None (then ``masks``
        must be concrete: traced masks without ``sizes`` raise TracedArgumentError).
      report: optional (T,) booleans for iterative filters: the steps to evaluate (zeros elsewhere).

    Returns:
      (k, P) or (k, Ω, P) held-out losses.
    """
    if isinstance(masks, tuple):
        sizes = None
    elif sizes is None:
        require_concrete(masks, "masks", "the fold sizes they define are static shapes: pass "
                         "sizes=fold_sizes(masks) computed outside jit (or the masks' fold_indices)")
        sizes = fold_sizes(masks)
    return _kfold_path(K, Y, a, V, filt, params, masks, loss, sizes, report)


@full_precision
def holdout_path(K_train: Array, K_val_train: Array, Y_train: Array, Y_val: Array, a: Array,
                 V: Array, filt: SpectralFilter, params: Array, loss: Callable = mse_loss) -> Array:
    """Validation loss along the path for a fixed train / validation split.

    Args:
      K_train: (n, n); K_val_train: (m, n); Y_train: (n, d); Y_val: (m, d).
      a, V: output-matrix eigensystem ((d,) or (Ω, d), and (d, d)).

    Returns:
      (P,) or (Ω, P) validation losses.
    """
    s, U = eigh(K_train)
    eig = SeparableEigh(clip_psd(s), U, a, V)
    return spectral_path(eig, Y_train, filt, params, K_eval=K_val_train, Y_eval=Y_val,
                         output="loss", loss=loss)
