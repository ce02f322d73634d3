r"""Batched common-similarity paths: every ω of A_ω = ω11ᵀ + (1 − ω)I in one scan.

For the family A_ω = ω 11ᵀ + (1 − ω) I ([BRBV11] eq. 18) the coefficients of every ω are kept
side by side in one (n, Ω, d) array, and each step does ONE product
``K @ C.reshape(n, Ω·d)`` followed by the O(nΩd) map Z ↦ Z A_ω = ω (Z1)1ᵀ + (1 − ω) Z. This
is what ``jax.vmap`` over ω of a separable path also produces — JAX's batching rule for
``dot_general`` folds the batch axis of the unbatched-LHS product K @ C_ω into its free dimension,
so K @ [C₁ … C_Ω] is a single GEMM — but laid out without the per-step transposes and batched
small products that the generic vmap leaves behind. Products with many columns run near the
machine's GEMM peak, so an Ω-batch costs far less than Ω paths.

Step sizes are exact per ω: σ_max(K ⊗ A_ω / n) = λ_max(K)·(1 + (d − 1)ω)/n, with λ_max(K) from
one Lanczos estimate of σ_max(K) shared by all ω.

Validation on the training rows (k-fold by masks) shares the training product: the carry holds
Z = K Cᵗ, which gives both the held-out predictions of step t and the product the update of
step t + 1 needs — one product with K per step. ``mask`` of shape (k, n) vmaps the folds, and
the fold axis is folded into the same GEMM too.

"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from .._checks import as_float_array, check_int, check_unit_interval, require_concrete
from .._jit import jit
from .._progress import report_step
from ..errors import DivergenceError, ParameterError, ShapeError
from ..filters.spectral import IterativeFilter, NuMethod, get_filter
from ..operators.base import max_eigenvalue
from .eigen import mse_loss
from .memory import plan_chunk
from .scan import PathResult
from ..products import full_precision

__all__ = ["omega_path_scan", "common_similarity_path", "batched_nu_path_over_omegas", "omega_path_bytes"]

Array = jax.Array
# (n, d) arrays one ω holds at a step of :func:`omega_path_scan`: the filter state (2), the
# carried product, best and last coefficients, C, (Γ/n)C, the new product, A_ω applied, the
# masked copy in the product, and the two (Ω, n, d) outputs.
ARRAYS_PER_OMEGA = 12


# ----------------------------------------------------------------- batched common-similarity path
def _apply_common_similarity(Z: Array, om: Array) -> Array:
    """Z A_ω for every ω: Z (r, Ω, d), om (1, Ω, 1) → ω (Z1)1ᵀ + (1 − ω) Z."""
    return om * jnp.sum(Z, axis=2, keepdims=True) + (1.0 - om) * Z


@partial(jit, static_argnames=("filt", "n_steps", "loss", "progress"))
@full_precision
def omega_path_scan(K: Array, Y: Array, omegas: Array, filt: IterativeFilter, n_steps: int,
                    K_eval: Array | None = None, Y_eval: Array | None = None, w_eval: Array | None = None,
                    tau: ArrayLike | None = None, mask: Array | None = None,
                    loss: Callable = mse_loss, progress: bool = False) -> PathResult:
    """Compiled iterative paths of K ⊗ A_ω for every ω of a grid (no input checks).

    Args:
      K: (n, n) scalar Gram; Y: (n, d); omegas: (Ω,) in [0, 1]; filt, n_steps: static.
      K_eval: (m, n) cross-Gram for evaluation on other inputs; None with ``Y_eval`` given
        evaluates on the training rows (Y_eval (n, d), w_eval (n,) e.g. held-out weights) from
        the training product itself.
      tau: scalar or (Ω,) step sizes (default 1/σ_max per ω from one Lanczos estimate of σ_max(K)).
      mask: (n,) training mask; masked rows act as absent and n = Σ mask.
      progress: static; True draws the steps done on the active stage of a ``verbose`` fit.

    Returns:
      :class:`~jaxmtl.paths.PathResult` with a leading Ω axis on every field
      (losses (Ω, T)).
    """
    n, d = Y.shape
    W = omegas.shape[0]
    dtype = Y.dtype
    m1 = jnp.ones((n,), dtype) if mask is None else mask.astype(dtype)
    m3 = m1[:, None, None]
    nn = jnp.sum(m1)
    om = omegas.astype(dtype)[None, :, None]
    rhs = jnp.broadcast_to((Y * m1[:, None] / nn)[:, None, :], (n, W, d))
    if tau is None:
        lam_k = max_eigenvalue(lambda v: m1[:, None] * (K @ (m1[:, None] * v)), (n, 1), dtype)
        tau = nn / (lam_k * (1.0 + (d - 1) * omegas.astype(dtype)))
    tau = jnp.broadcast_to(jnp.asarray(tau, dtype), (W,))
    tau3 = tau[None, :, None]
    on_rows = K_eval is None and Y_eval is not None
    if Y_eval is not None and w_eval is None:
        w_eval = jnp.full((Y_eval.shape[0],), 1.0 / Y_eval.shape[0], dtype)
    bound0 = 2.0 * tau * jnp.linalg.norm(Y * m1[:, None] / nn)  # (Ω,)
    tiny = jnp.finfo(dtype).tiny

    def product(C):  # K (m ∘ C) as ONE GEMM with Ω·d columns → (n, Ω, d), before A_ω
        return (K @ (m3 * C).reshape(n, W * d)).reshape(n, W, d)

    def body(carry, i):
        if progress:
            report_step(i, n_steps)
        state, Z, best, best_loss, best_i, last, bad = carry
        GC = m3 * _apply_common_similarity(Z, om) / nn  # (Γ_ω/n) Cⁱ⁻¹ from the carried product
        new_state, C = filt.update(state, i, rhs, lambda _: GC, tau3)
        Z_new = product(C)
        norm = jnp.sqrt(jnp.sum(C * C, axis=(0, 2)))  # (Ω,)
        ok = jnp.isfinite(norm) & (norm <= 10.0 * bound0 * (i * i + i) + tiny)
        bad = bad | ~ok
        if Y_eval is None:
            val = jnp.full((W,), jnp.nan, dtype)
            better = ~bad
        else:
            if on_rows:
                F = _apply_common_similarity(Z_new, om)
            else:
                F = _apply_common_similarity(
                    (K_eval @ C.reshape(n, W * d)).reshape(K_eval.shape[0], W, d), om)  # type: ignore[operator, union-attr]  # K_eval given here
            val = jax.vmap(lambda f: loss(f, Y_eval, w_eval), in_axes=1)(F)
            val = jnp.where(bad | ~jnp.isfinite(val), jnp.inf, val)
            better = (~bad) & (val < best_loss)
        b3 = better[None, :, None]
        keep3 = bad[None, :, None]
        best = jnp.where(b3, C, best)
        best_loss = jnp.where(better, val, best_loss)
        best_i = jnp.where(better, i, best_i)
        last = jnp.where(keep3, last, C)
        state = jax.tree_util.tree_map(lambda new, old: jnp.where(keep3, old, new), new_state, state)
        Z = jnp.where(keep3, Z, Z_new)
        return (state, Z, best, best_loss, best_i, last, bad), val

    zero = jnp.zeros((n, W, d), dtype)
    steps = jnp.arange(1, n_steps + 1)
    carry0 = (filt.init(rhs), zero, zero, jnp.full((W,), jnp.inf, dtype), jnp.zeros((W,), steps.dtype),
              zero, jnp.zeros((W,), bool))
    (_, _, best, _, best_i, last, bad), losses = jax.lax.scan(body, carry0, steps)
    to_batch = lambda A: jnp.moveaxis(A, 1, 0)  # (n, Ω, d) → (Ω, n, d)
    return PathResult(losses.T, best_i, to_batch(best), to_batch(last), bad, tau)


@full_precision
def common_similarity_path(K: ArrayLike, Y: ArrayLike, omegas: ArrayLike, filt: Any = "nu_method",
                           n_steps: int = 150, *, K_eval: ArrayLike | None = None, Y_eval: ArrayLike | None = None,
                           w_eval: ArrayLike | None = None, tau: ArrayLike | None = None, mask: ArrayLike | None = None,
                           loss: Callable = mse_loss, check: bool = True,
                           memory_budget: int | None = None) -> PathResult:
    """Iterative paths of K ⊗ A_ω for a grid of ω in one compiled call, one GEMM per step.

    Args:
      K: (n, n) scalar Gram matrix (symmetric PSD).
      Y: (n, d) outputs.
      omegas: (Ω,) values in [0, 1] (0 independent outputs, 1 one shared function).
      filt: 'nu_method' (default), 'landweber' or an :class:`~jaxmtl.filters.IterativeFilter`.
      n_steps: path length T.
      K_eval: (m, n) cross-Gram K(x_eval, x_train); with Y_eval (m, d) the loss per step and ω.
      Y_eval: evaluation targets; without K_eval they are the (n, d) training rows, weighted by
        w_eval (use zero weight on training rows for hold-out / k-fold).
      w_eval: row weights summing to 1 (default uniform), or (k, ·) one row per mask.
      tau: step size, scalar or (Ω,) (default 1/σ_max(K ⊗ A_ω / n) per ω).
      mask: (n,) or (k, n) boolean training masks; (k, n) vmaps the folds (one GEMM with k·Ω·d
        columns per step).
      loss: ``loss(F, Y, w)``.
      check: raise :class:`~jaxmtl.errors.DivergenceError` if any path diverged.
      memory_budget: bytes the sweep may use (None: :func:`~jaxmtl.paths.memory.default_memory_budget`).
        The ω grid is cut into chunks of the size that fits (:func:`omega_path_bytes`), each one
        compiled call of the same shape (the last padded); a budget that cannot hold K and one ω
        raises :class:`~jaxmtl.errors.ParameterError` naming it.

    Returns:
      :class:`~jaxmtl.paths.PathResult` with leading axes (k,) Ω on every field.
    """
    for value, name in ((omegas, "omegas"), (tau, "tau")):
        require_concrete(value, name, f"common_similarity_path checks its grid and divergence on the host; inside "
                         f"jit, vmap or grad call omega_path_scan, which accepts traced {name}")
    filt = get_filter(filt)
    if not isinstance(filt, IterativeFilter):
        raise ParameterError(
            f"filt must be an iterative filter (Landweber, NuMethod); received {type(filt).__name__}."
        )
    n_steps = check_int(n_steps, "n_steps", minimum=1)
    K = as_float_array(K, "K", ndim=2)
    Y = as_float_array(Y, "Y", ndim=2)
    n, d = Y.shape
    if K.shape != (n, n):
        raise ShapeError(f"K must be ({n}, {n}) for Y of shape {Y.shape}; received {K.shape}.")
    om = check_unit_interval(omegas, "omegas")
    dtype = jnp.result_type(K.dtype, Y.dtype)
    Kj, Yj = jnp.asarray(K, dtype), jnp.asarray(Y, dtype)
    Ke = Ye = We = None
    if Y_eval is not None:
        Ye = jnp.asarray(as_float_array(Y_eval, "Y_eval", ndim=2), dtype)
        if Ye.shape[1] != d:
            raise ShapeError(f"Y_eval must have {d} columns; received shape {Ye.shape}.")
        if K_eval is not None:
            Ke = jnp.asarray(as_float_array(K_eval, "K_eval", ndim=2), dtype)
            if Ke.shape != (Ye.shape[0], n):
                raise ShapeError(f"K_eval must be ({Ye.shape[0]}, {n}); received {Ke.shape}.")
        elif Ye.shape[0] != n:
            raise ShapeError(f"without K_eval, Y_eval holds the {n} training rows; received {Ye.shape}.")
        if w_eval is not None:
            We = jnp.asarray(as_float_array(w_eval, "w_eval", ndim=(1, 2)), dtype)
            if We.shape[-1] != Ye.shape[0]:
                raise ShapeError(f"w_eval must have {Ye.shape[0]} entries per row; received {We.shape}.")
    elif K_eval is not None:
        raise ParameterError("K_eval needs Y_eval.")
    tau_j = None
    if tau is not None:
        t = as_float_array(tau, "tau", ndim=(0, 1))
        if np.any(t <= 0) or (t.ndim == 1 and t.shape[0] != om.shape[0]):
            raise ParameterError(f"tau must be positive, a scalar or one per omega; received {t.tolist()}.")
        tau_j = jnp.asarray(t, dtype)
    mj = None
    if mask is None:
        if We is not None and We.ndim != 1:
            raise ShapeError("w_eval must be 1-D without masks.")
    else:
        mk = np.asarray(mask)
        if mk.dtype != bool or mk.ndim not in (1, 2) or mk.shape[-1] != n:
            raise ShapeError(f"mask must be boolean of shape ({n},) or (k, {n}); received {mk.dtype} {mk.shape}.")
        if not mk.reshape(-1, n).any(axis=1).all():
            raise ParameterError("every mask needs at least one training (True) row.")
        mj = jnp.asarray(mk)
    folded = mj is not None and mj.ndim == 2
    n_folds = mj.shape[0] if mj is not None and folded else 1
    fixed, per_omega = omega_path_bytes(n, d, n_steps, n_folds,
                                        0 if Ke is None else Ke.shape[0], jnp.dtype(dtype).itemsize)
    chunk = plan_chunk(om.shape[0], fixed, per_omega, memory_budget, "omega (its k·d right-hand sides)")
    if tau_j is not None and tau_j.ndim == 0:
        tau_j = jnp.broadcast_to(tau_j, om.shape)
    parts, sizes = [], []
    for start in range(0, om.shape[0], chunk):  # one call per chunk; the last padded to the same shape
        idx = np.minimum(np.arange(start, start + chunk), om.shape[0] - 1)
        parts.append(_run_omegas(Kj, Yj, jnp.asarray(om[idx], dtype), filt, n_steps, Ke, Ye, We,
                                 None if tau_j is None else tau_j[idx], mj, loss))
        sizes.append(min(chunk, om.shape[0] - start))
    res = parts[0] if len(parts) == 1 else PathResult(*(
        jnp.concatenate([jax.lax.slice_in_dim(f, 0, m, axis=int(folded)) for f, m in zip(fields, sizes)],
                        axis=int(folded)) for fields in zip(*parts)))
    if check and bool(np.any(np.asarray(res.diverged))):
        _raise_omega_divergence(res, Kj, om, d, n)
    return res


def _run_omegas(Kj, Yj, omj, filt, n_steps, Ke, Ye, We, tau_j, mj, loss) -> PathResult:
    """One compiled :func:`omega_path_scan` call for the ω of ``omj`` (checked inputs), folds vmapped."""
    run = partial(omega_path_scan, Kj, Yj, omj, filt, n_steps, Ke, Ye, tau=tau_j, loss=loss)
    if mj is None:
        return run(w_eval=We)
    if mj.ndim == 1:
        return run(w_eval=We, mask=mj)
    if We is not None and We.ndim == 2:
        return jax.vmap(lambda m, w: run(w_eval=w, mask=m))(mj, We)
    return jax.vmap(lambda m: run(w_eval=We, mask=m))(mj)


def omega_path_bytes(n: int, d: int, n_steps: int, k: int = 1, m: int = 0, itemsize: int = 8) -> tuple[int, int]:
    """Memory of :func:`omega_path_scan` as (fixed bytes, bytes per ω), for a memory plan.

    Fixed: K (n × n), the cross-Gram (m × n) and the data; per ω: for each of the k folds
    ``ARRAYS_PER_OMEGA`` (n, d) arrays, the (m, d) evaluation products and the (T,) losses.

    Example:
        >>> omega_path_bytes(1000, 2, 100)
        (8032000, 192800)
    """
    fixed = itemsize * (n * n + m * n + 2 * (n + m) * d)
    per = itemsize * k * (ARRAYS_PER_OMEGA * n * d + 2 * m * d + n_steps)
    return fixed, per


def _raise_omega_divergence(res: PathResult, K, omegas, d: int, n: int) -> None:
    """Raise DivergenceError naming the offending step and the stable bound (outside jit)."""
    bad = np.asarray(res.diverged)
    tau = np.broadcast_to(np.asarray(res.tau), bad.shape)
    lam_k = float(max_eigenvalue(lambda v: K @ v, (K.shape[0], 1), K.dtype))
    smax = lam_k * (1.0 + (d - 1) * np.asarray(omegas)) / n  # σ_max(K ⊗ A_ω / n), per ω
    smax = np.broadcast_to(smax, bad.shape)
    j = np.flatnonzero(bad.ravel())[0]
    raise DivergenceError(
        f"{int(bad.sum())} of {bad.size} paths diverged: step size tau={float(tau.ravel()[j]):.4g} exceeds "
        f"2/σ_max≈{2.0 / float(smax.ravel()[j]):.4g} (Landweber needs tau < 2/σ_max(Γ/n), the ν-method "
        "tau ≤ 1/σ_max). Leave tau=None to use 1/σ_max per ω, or pass check=False to get the flag "
        "(PathResult.diverged) instead."
    )


@full_precision
def batched_nu_path_over_omegas(K: ArrayLike, Y: ArrayLike, omegas: ArrayLike, n_steps: int = 150, nu: float = 1.0,
                                **kwargs: Any) -> PathResult:
    """:func:`common_similarity_path` with the ν-method (qualification ``nu``).

    Example:
        >>> import jax.numpy as jnp
        >>> r = batched_nu_path_over_omegas(jnp.eye(3), jnp.ones((3, 2)), [0.0, 1.0], 5)
        >>> r.diverged.shape
        (2,)
    """
    return common_similarity_path(K, Y, omegas, NuMethod(nu=nu), n_steps, **kwargs)
