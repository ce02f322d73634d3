r"""The exact route: a small Gram operator materialised and eigendecomposed, every filter on its path.

A :class:`~jaxmtl.operators.GramOperator` on (n, d) coefficients is a symmetric PSD matrix G of
size N = n·d (row-major vec). When N is small (a few thousand) it is cheaper to build G from the
operator (:meth:`~jaxmtl.operators.GramOperator.as_matrix`) and eigendecompose it once than to run
a long matrix-free path — and then every spectral filter (Tikhonov, TSVD, iterated Tikhonov,
Landweber, ν-method), closed-form leave-one-out and GCV apply, through the eigen-path machinery of
:mod:`jaxmtl.paths.eigen` and :mod:`jaxmtl.selection.criteria` with the trivial output factor
(a = [1], V = [[1]]) and the outputs flattened to (N, 1).

Normalisation: the matrix-free paths (:mod:`jaxmtl.paths.scan`) divide by the number of
*inputs* n, the flattened eigen path by N = n·d; and λ is read relative to the mean diagonal
ḡ = tr G / N (as the eigen-path estimators' λ grid is relative to the mean K(x, x)). The path
therefore runs on d·G/ḡ (σ(d·G/(ḡN)) = σ(G/n)/ḡ) and its coefficients are multiplied by d/ḡ:
the iterative filters give the same C = g_t(G/n) Y / n as the matrix-free path (step size
1/σ_max), and Tikhonov solves (G + nλḡI) C = Y. k-fold folds are over inputs (each input's d
rows go together).
Leave-one-out on the flattened path leaves out one *scalar* observation (one output of one
input); for d = 1 (multi-task data in long form) that is leave-one-input-out exactly.

Padded problems (``n``, docs/design.md "Size buckets"): the inputs past the first n are zero
padding. The materialised G is masked to the real inputs' rows and columns (G ∘ m mᵀ), ḡ is
the mean over the real diagonal, the path's normaliser the real n·d, and the padded rows are in
no fold (their fold indices point at real rows) and in no closed-form criterion (n of
:func:`~jaxmtl.selection.criteria.loo_path`): every loss and coefficient of the real rows is
that of the unpadded problem, and the padded rows' coefficients are zero.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.operators import SeparableOperator
    >>> from jaxmtl.filters import Tikhonov
    >>> op = SeparableOperator(jnp.eye(4) + 0.5, jnp.eye(2))
    >>> dense_coefficients(op, jnp.ones((4, 2)), Tikhonov(), 0.1).shape
    (4, 2)
"""

from __future__ import annotations

from functools import partial
from typing import Callable

import jax
import jax.numpy as jnp

from .._jit import jit
from ..errors import ParameterError
from ..filters.spectral import SpectralFilter
from ..linalg import clip_psd, eigh
from ..operators.base import GramOperator, SeparableEigh
from ..selection.criteria import gcv_path, kfold_path, loo_path
from .eigen import filtered_coefficients, mse_loss

__all__ = ["dense_eigh", "dense_coefficients", "dense_grid_losses"]

Array = jax.Array


def _normalised_gram(op: GramOperator, n: Array | None = None) -> tuple[Array, Array]:
    """(d·G/ḡ, ḡ) of a materialised operator, ḡ its mean diagonal (1 where it vanishes); with
    ``n`` (the real inputs, the first n) G masked to their rows and columns, ḡ their mean."""
    G = op.as_matrix()
    d = op.shape[1]
    if n is None:
        g = jnp.mean(jnp.diag(G))
    else:
        m = (jnp.arange(G.shape[0]) < n * d).astype(G.dtype)  # row-major vec: input i's rows i·d … i·d + d − 1
        G = G * m[:, None] * m[None, :]
        g = jnp.sum(jnp.diag(G)) / (n * d)
    g = jnp.where(g > 0, g, 1.0)
    return d * G / g, g


def _flat_rows(rows: tuple, d: int) -> tuple:
    """:func:`~jaxmtl.selection.criteria.fold_indices` over inputs (k, ·) → over the flattened
    (n·d) rows: each input's d rows, in order, with its weight."""
    def flat(index):
        return (jnp.asarray(index)[..., None] * d + jnp.arange(d)).reshape(index.shape[0], -1)

    tr, held, vt, vh = rows
    return flat(tr), flat(held), jnp.repeat(jnp.asarray(vt), d, axis=1), jnp.repeat(jnp.asarray(vh), d, axis=1)


def _flat_eigh(G: Array) -> SeparableEigh:
    s, U = eigh(G)
    one = jnp.ones((1,), G.dtype)
    return SeparableEigh(clip_psd(s), U, one, jnp.eye(1, dtype=G.dtype))


def dense_eigh(op: GramOperator, n: Array | None = None) -> tuple[SeparableEigh, Array]:
    """(eigensystem of the normalised, materialised operator d·G/ḡ (N × N) with output factor
    [1], ḡ); ``n``: the real inputs, the others padding (masked out, see the module doc)."""
    G, g = _normalised_gram(op, n)
    return _flat_eigh(G), g


@partial(jit, static_argnames=("filt",))
def dense_coefficients(op: GramOperator, Y: Array, filt: SpectralFilter, param, n: Array | None = None) -> Array:
    """Coefficients C (n, d) = g_param(G/n) Y / n of any filter, from one eigendecomposition.

    Args:
      op: the training Gram operator (N = n·d small enough to materialise).
      Y: (n, d) outputs.
      filt: any spectral filter (static); param: λ (relative to the mean diagonal ḡ), or the
        step count of an iterative filter (step size 1/σ_max(G/n)).
      n: the number of real inputs (default all; may be traced): the first n rows of Y, the
        others zero padding (zero rows of Y; G masked), whose coefficients are zero.

    Returns:
      (n, d) coefficients, equal to those of the matrix-free path at the same parameter.
    """
    rows, d = Y.shape
    eig, g = dense_eigh(op, n)
    C = filtered_coefficients(filt, eig, Y.reshape(-1, 1), param, n=None if n is None else n * d)
    return (d / g) * C.reshape(rows, d)


@partial(jit, static_argnames=("build", "filt", "selection", "loss", "sizes"))
def dense_grid_losses(build: Callable, kernels, params, data, Y: Array, filt: SpectralFilter,
                      path_params: Array, selection: str, masks: Array | tuple | None, sizes: tuple[int, int] | None,
                      loss: Callable = mse_loss, report: Array | None = None, n: Array | None = None,
                      active: Array | None = None, param_active: Array | None = None) -> Array:
    """Validation losses (W, P, L) over kernels × operator parameters × filter parameters.

    Every (kernel, parameter) pair builds its operator (``build(kernel, param, data)``),
    materialises it and scores the whole filter path: k-fold / hold-out by the masked eigen
    path on each fold's training Gram (:func:`~jaxmtl.selection.criteria.kfold_path`), or
    closed-form LOO / GCV from one eigendecomposition. Kernels and parameters are ``lax.map``-ed
    (one N × N Gram in memory at a time).

    Args:
      build: static operator constructor; kernels: stacked kernel pytree (W leading);
      params: (P,) operator parameters (ω, γ, …); data: pytree passed to ``build``.
      Y: (n, d) outputs; filt: any filter (static); path_params: (L,) λ values (relative to
        each Gram's mean diagonal), or the steps
        1..T of an iterative filter (with ``report`` marking the steps to evaluate).
      selection: 'kfold' (also hold-out and given masks), 'loo' or 'gcv' (static).
      masks: (k, n) training masks over inputs, or their (padded)
        :func:`~jaxmtl.selection.criteria.fold_indices` (ignored by 'loo' / 'gcv', may be None there);
      sizes: ``fold_sizes(masks)`` (static; None with fold indices).
      loss: ``loss(F, Y, w)`` on the flattened (·, 1) outputs.
      n: the number of real inputs (default all; may be traced): the first n, the others zero
        padding — masked out of every Gram, in no fold (fold indices given) and no closed form.
      active: (W,) bool, the kernels to score (default all): the others — a batch padded to a
        fixed W, so that one compiled program serves every call — are skipped at run time (the
        kernels are scored one after another, ``lax.map``, so a skipped one builds and
        decomposes nothing) and hold inf.
      param_active: (P,) bool, the operator parameters to score (default all), the others skipped
        at run time in the same way and inf: a call scoring one parameter runs the grid's program.

    Returns:
      (W, P, L) losses, the mean over folds for k-fold.

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxmtl.filters import Tikhonov
        >>> from jaxmtl.kernels import Gaussian
        >>> from jaxmtl.operators import SeparableOperator
        >>> X, Y = jnp.linspace(0.0, 1.0, 8)[:, None], jnp.sin(jnp.linspace(0.0, 3.0, 8))[:, None]
        >>> build = lambda kern, a, X: SeparableOperator(kern(X, X), a[None, None])
        >>> losses = dense_grid_losses(build, Gaussian(jnp.asarray([0.3, 0.5])), jnp.ones(1), X, Y, Tikhonov(),
        ...                            jnp.asarray([1e-2, 1e-3]), "loo", None, None, active=jnp.asarray([True, False]))
        >>> losses.shape, bool(jnp.isinf(losses[1]).all()), bool(jnp.isfinite(losses[0]).all())
        ((2, 1, 2), True, True)
    """
    d = Y.shape[1]
    y = Y.reshape(-1, 1)
    if selection == "kfold":
        if isinstance(masks, tuple):
            flat_masks, flat_sizes = _flat_rows(masks, d), None
        elif masks is None or sizes is None:
            raise ParameterError("selection='kfold' needs masks and sizes=fold_sizes(masks), or the masks' fold "
                                 f"indices; received masks={type(masks).__name__}, sizes={sizes!r}.")
        else:
            flat_masks, flat_sizes = jnp.repeat(masks, d, axis=1), (sizes[0] * d, sizes[1] * d)
    flat_n = None if n is None else n * d
    one, eye = jnp.ones((1,), Y.dtype), jnp.eye(1, dtype=Y.dtype)

    def per_pair(kern, p):
        G, _ = _normalised_gram(build(kern, p, data), n)
        if selection == "kfold":
            return jnp.mean(kfold_path(G, y, one, eye, filt, path_params, flat_masks, loss=loss,
                                       sizes=flat_sizes, report=report), axis=0)
        eig = _flat_eigh(G)
        if selection == "loo":
            return loo_path(eig, y, filt, path_params, loss=loss, report=report, n=flat_n)
        return gcv_path(eig, y, filt, path_params, report=report, n=flat_n)

    def per_kernel(kern):
        return map_active(lambda p: per_pair(kern, p), params, param_active)

    scores = map_active(per_kernel, kernels, active)
    return jnp.where(jnp.isnan(scores), jnp.inf, scores)


def map_active(f: Callable, xs, active: Array | None):
    """``lax.map(f, xs)`` computing only the items ``active`` ((W,) bool; None: all) marks: the
    others — a batch padded to a fixed W, so that one compiled program serves every call — are
    skipped at run time (``lax.cond``: one item after another, a skipped one costs nothing) and
    hold inf in their floating leaves, True in their boolean ones.

    Example:
        >>> map_active(lambda x: 2.0 * x, jnp.arange(3.0), jnp.asarray([True, False, True])).tolist()
        [0.0, inf, 4.0]
    """
    if active is None:
        return jax.lax.map(f, xs)
    shapes = jax.eval_shape(f, jax.tree_util.tree_map(lambda leaf: leaf[0], xs))

    def skipped(_):
        return jax.tree_util.tree_map(lambda s: jnp.full(s.shape, jnp.inf if jnp.issubdtype(s.dtype, jnp.floating)
                                                         else True, s.dtype), shapes)

    return jax.lax.map(lambda item: jax.lax.cond(item[1], f, skipped, item[0]), (xs, active))
