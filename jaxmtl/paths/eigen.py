r"""The eigen regularization path for separable kernels Γ = K ⊗ A ([BRBV11] §4.2–4.3).

With K = U diag(s) Uᵀ and A = V diag(a) Vᵀ the eigenvalues of Γ/n are σ = s aᵀ / n and
([BRBV11] eq. 28)

    C = U [ g(σ) ∘ (Uᵀ Y V) ] Vᵀ / n,       F_train = U [ σ g(σ) ∘ (Uᵀ Y V) ] Vᵀ,

so one ``eigh`` of K and one of A give every filter at every parameter. A whole grid of λ
(or every step t = 1..T of an iterative filter, run as a ``lax.scan`` of its scalar
recurrence on σ) is one compiled call; a family of output matrices sharing V (the
common-similarity family A_ω) is a batch of ``a`` vectors, vmapped.

A path never stores coefficients for every parameter unless asked: it emits what the caller
needs per parameter — predictions on evaluation inputs or their loss.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.operators import separable_eigh
    >>> from jaxmtl.filters import Tikhonov
    >>> K = jnp.eye(4); Y = jnp.ones((4, 2))
    >>> eig = separable_eigh(K, jnp.eye(2))
    >>> spectral_path(eig, Y, Tikhonov(), jnp.array([1.0, 0.1]), K_eval=K).shape
    (2, 4, 2)
"""

from __future__ import annotations

import math
from functools import partial, wraps
from typing import Any, Callable, cast

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._jit import jit
from ..errors import ParameterError
from ..filters.spectral import IterativeFilter, SpectralFilter
from ..operators.base import SeparableEigh
from ..products import full_precision

__all__ = [
    "spectral_path",
    "filtered_coefficients",
    "spectral_scale",
    "path_map",
    "mse_loss",
    "classification_loss",
    "code_losses",
]

Array = jax.Array
# An iterative path with a ``report`` runs as up to this many segments of steps (T's largest
# divisor among 1, 2, 4, 8), those after the last reported step skipped (:func:`path_map`).
PATH_SEGMENTS = 8


def mse_loss(F: Array, Y: Array, w: Array) -> Array:
    """Weighted mean squared error Σ_i w_i ‖F_i − Y_i‖² / d (w sums to 1 over rows)."""
    return jnp.sum(w[:, None] * (F - Y) ** 2) / Y.shape[1]


def classification_loss(F: Array, Y: Array, w: Array) -> Array:
    """Weighted misclassification rate of the argmax rule ([BRBV11] eq. 31) against coded Y."""
    return jnp.sum(w * (jnp.argmax(F, axis=1) != jnp.argmax(Y, axis=1)))


@full_precision
def code_losses(F: Array, Y: Array, w: Array) -> Array:
    """(2,) [squared loss on the codes, misclassification rate of the argmax rule] (weighted).

    The selection loss of the classifiers: the smooth squared loss ranks the path, and the
    argmax rule ([BRBV11] eq. 31) breaks near-ties. Callers pass F and Y with the intercept
    added back, so the rule scored is the rule ``predict`` applies.
    """
    return jnp.stack([mse_loss(F, Y, w), classification_loss(F, Y, w)])


def spectral_scale(eig: SeparableEigh, n: ArrayLike) -> Array:
    """σ_max of Γ/n (per output matrix when ``eig.a`` is batched); the default 1/τ."""
    return jnp.max(eig.s) * jnp.max(eig.a, axis=-1) / n


def check_consecutive_steps(params) -> None:
    """Raise ParameterError unless the steps of an iterative filter are 1, 2, …, T.

    The recurrences run step by step, so a path emits every step from 1; a list such as
    [10, 20, 30] would silently be read as steps 1, 2, 3. To evaluate a few steps only, pass
    1..T with a ``report`` mask (:func:`spectral_path`). Traced (abstract) arrays cannot be
    checked and are trusted.
    """
    try:
        steps = np.asarray(params)
    except Exception:  # a tracer inside a caller's jit: nothing concrete to check
        return
    if steps.ndim != 1 or not np.array_equal(steps, np.arange(1, steps.size + 1)):
        shown = steps.tolist() if steps.size <= 8 else steps.ravel()[:8].tolist() + ["…"]
        raise ParameterError(
            f"steps of an iterative filter must be 1, 2, …, T (the path emits every step); received "
            f"{shown}. Run the path to T = max(steps) with report=(steps marked True) to evaluate those only."
        )


@full_precision
def path_map(filt: SpectralFilter, sigma: Array, params: Array, tau: ArrayLike, emit: Callable,
             report: Array | None = None) -> Any:
    """Apply ``emit(g)`` to g = g_p(σ) for every parameter p, stacking the results.

    Closed-form filters are vmapped over ``params``; iterative filters run their recurrence
    on σ in a ``lax.scan`` over t = 1..T and emit at every step — or, with ``report``, only at
    the steps marked True: the others run the (cheap, elementwise) recurrence and return zeros
    without calling ``emit`` (a ``lax.cond`` on the unbatched step index, so it stays a branch
    under ``vmap`` and is differentiable).

    Args:
      filt: the filter.
      sigma: (...,) eigenvalues of Γ/n.
      params: (P,) λ values, or the steps 1..T (consecutive, from 1) for iterative filters.
      tau: step size for iterative filters (ignored otherwise).
      emit: function of g (shape of sigma) returning a pytree.
      report: optional (T,) booleans, iterative filters only: the steps to emit at.

    Returns:
      the pytree of ``emit`` outputs with a leading axis of length P (zeros at unreported steps).
    """
    if not filt.iterative:
        return jax.vmap(lambda p: emit(filt(sigma, p, tau)))(params)
    check_consecutive_steps(params)
    ones = jnp.ones_like(sigma)
    it = cast(IterativeFilter, filt)  # an iterative filter: its recurrence's init / update

    def scan_body(state, x):
        i, flag = x
        state, g = it.update(state, i, ones, lambda v: sigma * v, tau)
        if report is None:
            return state, emit(g)
        skip = lambda g: jax.tree_util.tree_map(jnp.zeros_like, jax.eval_shape(emit, g))  # noqa: E731
        return state, jax.lax.cond(flag, emit, skip, g)

    flags = jnp.ones(params.shape, bool) if report is None else jnp.asarray(report, bool)
    T = params.shape[0]
    segments = math.gcd(T, PATH_SEGMENTS) if report is not None else 1
    if segments == 1:
        _, out = jax.lax.scan(scan_body, it.init(ones), (params, flags))
        return out
    # the steps after the last reported one emit nothing and need not run: the path runs as
    # `segments` scans of T / segments steps, and a segment that starts after the last reported
    # step is skipped (a lax.cond on the report, unbatched): a path compiled for T steps costs
    # what the reported ones need (a default path and its continuation share one program)
    length = T // segments
    last = jnp.max(jnp.where(flags, jnp.arange(T), -1))

    def run(state, steps, marks):
        return jax.lax.scan(scan_body, state, (steps, marks))

    def segment(state, x):
        start, steps, marks = x
        shapes = jax.eval_shape(run, state, steps, marks)[1]
        skip = lambda state, *_: (state, jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype),  # noqa: E731
                                                                 shapes))
        return jax.lax.cond(start <= last, run, skip, state, steps, marks)

    _, out = jax.lax.scan(segment, it.init(ones), (jnp.arange(0, T, length), params.reshape(segments, length),
                                                   flags.reshape(segments, length)))
    return jax.tree_util.tree_map(lambda o: o.reshape((T,) + o.shape[2:]), out)


@full_precision
def filtered_coefficients(filt: SpectralFilter, eig: SeparableEigh, Y: Array, param: ArrayLike,
                          tau: ArrayLike | None = None, n: ArrayLike | None = None) -> Array:
    """Coefficients C (n, d) of one filter parameter: C = U[g(σ)∘(UᵀYV)]Vᵀ/n.

    For iterative filters ``param`` is the step count t and ``tau`` defaults to 1/σ_max. ``n``
    (default ``Y.shape[0]``) is the normaliser: the number of genuine rows when Y is zero-padded
    (padded rows and columns of K are zero, as in the k-fold path).

    Example:
        >>> from jaxmtl.operators import separable_eigh
        >>> from jaxmtl.filters import Tikhonov
        >>> eig = separable_eigh(jnp.eye(3), jnp.eye(1))
        >>> filtered_coefficients(Tikhonov(), eig, jnp.ones((3, 1)), 1.0).shape
        (3, 1)
    """
    n = Y.shape[0] if n is None else n
    sigma = eig.s[:, None] * eig.a[None, :] / n
    if tau is None:
        tau = 1.0 / spectral_scale(eig, n)
    g = filt(sigma, param, tau)
    Yt = eig.U.T @ Y @ eig.V
    return eig.U @ (g * Yt / n) @ eig.V.T


@full_precision
def spectral_path(
    eig: SeparableEigh,
    Y: Array,
    filt: SpectralFilter,
    params: Array,
    K_eval: Array | None = None,
    Y_eval: Array | None = None,
    w_eval: Array | None = None,
    tau: ArrayLike | None = None,
    n: ArrayLike | None = None,
    output: str = "predictions",
    loss: Callable = mse_loss,
    report: Array | None = None,
) -> Array:
    """The whole regularization path of a separable kernel from its eigensystem.

    Args:
      eig: :class:`~jaxmtl.operators.SeparableEigh` of K (n×n) and A; ``eig.a`` may have a
        leading batch axis (Ω, d) for a family of output matrices sharing V.
      Y: (n, d) training outputs.
      filt: a :class:`~jaxmtl.filters.SpectralFilter` (static).
      params: (P,) λ values, or step counts 1..T (consecutive from 1) for iterative filters.
      K_eval: (m, n) cross-Gram K(x_eval, x_train), needed for ``output`` 'predictions' or
        'loss'.
      Y_eval: (m, d) evaluation targets, for ``output='loss'``.
      w_eval: (m,) row weights summing to 1 (default uniform), for ``output='loss'``.
      tau: step of iterative filters (default 1/σ_max of each output matrix).
      n: normaliser (default ``Y.shape[0]``; the k-fold path passes the fold's size).
      output: 'coefficients' → (P, n, d); 'predictions' → (P, m, d); 'loss' → (P,).
      loss: ``loss(F, Y, w)`` used by 'loss' (static), e.g. :func:`mse_loss`.
      report: optional (T,) booleans for iterative filters: evaluate (emit) only the steps marked
        True, the others hold zeros (see :func:`path_map`); the recurrence still runs every step.

    Returns:
      array with leading axis P (and a leading Ω axis before it when ``eig.a`` is batched).
    """
    n = Y.shape[0] if n is None else n
    Yt = eig.U.T @ Y @ eig.V
    KU = None if K_eval is None else K_eval @ eig.U
    if w_eval is None and Y_eval is not None:
        w_eval = jnp.full((Y_eval.shape[0],), 1.0 / Y_eval.shape[0], Y.dtype)

    def one_output_matrix(a, tau):
        sigma = eig.s[:, None] * a[None, :] / n
        if tau is None:
            tau = 1.0 / jnp.maximum(jnp.max(sigma), jnp.finfo(sigma.dtype).tiny)

        def emit(g):
            Ch = g * Yt / n
            if output == "coefficients":
                return eig.U @ Ch @ eig.V.T
            F = KU @ (Ch * a[None, :]) @ eig.V.T
            if output == "predictions":
                return F
            return loss(F, Y_eval, w_eval)

        return path_map(filt, sigma, params, tau, emit, report)

    if eig.a.ndim == 1:
        return one_output_matrix(eig.a, tau)
    return jax.vmap(one_output_matrix, in_axes=(0, None))(eig.a, tau)


_spectral_path_jit = partial(jit, static_argnames=("filt", "output", "loss"))(spectral_path)


@wraps(spectral_path)  # type: ignore[no-redef]
@full_precision
def spectral_path(eig, Y, filt, params, *args, **kwargs):  # noqa: F811 - the checked public entry
    if filt.iterative:
        check_consecutive_steps(params)
    return _spectral_path_jit(eig, Y, filt, params, *args, **kwargs)
