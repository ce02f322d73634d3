"""The compiled programs of the RLS2 estimators (:mod:`jaxmtl.models.rls2`).

The k-fold RLS2 paths (:func:`_fold_paths`, one row set after another, each Cholesky c-step on its
rows alone), kernel ridge with each basis kernel alone along the λ grid (:func:`_single_kernel_paths`,
the ``single_kernels`` check), the refit c*(d) on all rows and the predictions of fitted weights.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .._jit import jit
from ..linalg import clip_psd, eigh
from ..mkl.rls2 import _c_step, _path_jit, path_predict


@partial(jit, static_argnames=("max_iter", "solver", "smo_max_iter", "one_vs_all"))
def _fold_paths(stack, Y, grid, A, W, R, mus, tol, max_iter, solver, smo_tol, smo_max_iter, one_vs_all):
    """Paths for every row-weight vector in W (S, n), one after another (``lax.map``: each set's
    alternations stop at its own δ), and their (L, n, T) outputs at all rows. R: None, or (S, r) the
    rows of each set (:func:`_row_sets`), whose systems the Cholesky c-steps factor alone."""
    args = (tol, max_iter, solver, smo_tol, smo_max_iter)

    def one(item):
        mu, w, rows = item
        Yc = (Y - mu) * w[:, None]
        if one_vs_all:  # each class column its own path and kernel weights
            p = jax.vmap(lambda y: _path_jit(stack, y[:, None], grid, A[:1, :1], w, *args, rows), in_axes=1)(Yc)
            F = jax.vmap(lambda d, C: path_predict(stack, d, C)[..., 0], out_axes=2)(p.d, p.C)
        else:
            p = _path_jit(stack, Yc, grid, A, w, *args, rows)
            F = path_predict(stack, p.d, p.C, A)
        return p, F + mu

    return jax.lax.map(one, (mus, W, R))


def _row_sets(masks: np.ndarray, length: int = 0) -> np.ndarray:
    """(S, r) the rows of weight 1 of each mask (S, n) in {0, 1}, padded with a row of weight 0 of that
    mask (so the padding carries weight 0 through ``w[rows]``) to r = the largest count or ``length``,
    whichever is larger (a size bucket's: every n of the bucket the same shape).

    Example:
        >>> _row_sets(np.array([[1, 0, 1, 0], [0, 1, 1, 0]]), length=3).tolist()
        [[0, 2, 1], [1, 2, 0]]
    """
    r = max(int(masks.sum(1).max()), length)
    out = np.empty((masks.shape[0], r), np.int32)
    for i, m in enumerate(masks):
        on, off = np.flatnonzero(m > 0), np.flatnonzero(m <= 0)
        out[i] = np.r_[on, np.full(r - on.size, off[0] if off.size else 0)]
    return out


@jit
def _single_kernel_paths(stack, idx, Y, grid, A, W, R, mus):
    """Kernel ridge with each basis kernel ``idx[j]`` alone, for every fold (row weights W (k, n), rows
    R (k, r) from :func:`_row_sets`, means mus (k, T)) along the λ grid: (J, k, L, n, T) predictions at
    all rows.

    (𝐊ᵏ ⊗ A + λI) c = y on the fold's rows, the c-step (4.2) at d = e_k, in the eigenbases of the
    fold's r × r Gram and of A: one ``eigh`` per kernel and fold, then every λ at O(nrT). ``lax.map``
    over the kernels, ``vmap`` over the folds and the grid."""
    a, V = eigh(A)
    a = clip_psd(a)

    def one_kernel(i):
        K = stack.combine(jax.nn.one_hot(i, stack.shape[0], dtype=Y.dtype))

        def one_fold(mu, w, rows):
            wr = w[rows]
            Kc = K[:, rows] * wr[None, :]
            s, U = eigh(Kc[rows] * wr[:, None])
            Yt = U.T @ (((Y[rows] - mu) * wr[:, None]) @ V)
            KU = Kc @ U
            return jax.vmap(lambda lam: KU @ (Yt * (clip_psd(s)[:, None] * a[None, :] + lam) ** -1)
                            @ (V.T @ A) + mu)(grid)

        return jax.vmap(one_fold)(mus, W, R)

    return jax.lax.map(one_kernel, idx)


@partial(jit, static_argnames=("solver",))
def _refit(stack, d, Y, A, lam, w, solver):
    """(n, T) coefficients c*(d) of (4.2) on the rows of weight 1 of ``w`` (n,) (the others, a size
    bucket's padding, coefficient 0)."""
    return _c_step(stack, d, Y, A, lam, w, jnp.zeros_like(Y), solver)


@partial(jit, static_argnames=("one_vs_all",))
def _predict(cross, d, C, A, one_vs_all):
    if one_vs_all:
        return jax.vmap(lambda dk, Ck: cross.combine(dk) @ Ck[:, 0], out_axes=1)(d, C)
    return cross.combine(d) @ C @ A


# a feature's standard deviation this many times its robust scale (1.4826 × MAD) is set by outliers
