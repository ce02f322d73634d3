r"""Simplex-constrained quadratic programs by SMO (sequential minimal optimization).

Solves the d-step of RLS2 ([Din11] Lemma 5, eq. 4.4), min_{d ∈ Δ_m} ‖𝐕d − u‖², in the form

    min_{d ∈ Δ_m} ½ dᵀQd − bᵀd,     Q = 𝐕ᵀ𝐕 (m × m, PSD),  b = 𝐕ᵀu,

with Δ_m = {d ≥ 0, Σ d_k = 1}. As in [Din11] §4.5 ("an SMO-like algorithm [Platt, 1998]"), each
step moves mass between two coordinates, which keeps d on the simplex exactly: with the gradient
g = Qd − b, the pair is the maximal violating one, i = argmax_{d_k > 0} g_k (give mass) and
j = argmin_k g_k (take it), and the step t = (g_i − g_j)/(Q_ii + Q_jj − 2Q_ij), clipped to
[0, d_i], is the exact minimiser along d + t(e_j − e_i). The KKT conditions of the simplex QP
(g_k = μ on the support, g_k ≥ μ elsewhere) hold when the violation max_{d_k>0} g_k − min_k g_k
is zero; the loop stops when it falls below ``tol`` times the problem's scale. Each step costs one
column of Q (O(m)); the loop is a ``lax.while_loop``.

Example:
    >>> import jax.numpy as jnp
    >>> d = simplex_qp(jnp.eye(2), jnp.array([1.0, 0.0]), jnp.array([0.5, 0.5]))
    >>> [round(float(v), 6) for v in d]
    [1.0, 0.0]
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from .._jit import jit
from ..products import full_precision

__all__ = ["simplex_qp", "simplex_violation"]

Array = jax.Array


def simplex_violation(g: Array, d: Array) -> Array:
    """KKT violation of a point d of the simplex for gradient g: max_{d_k>0} g_k − min_k g_k (≥ 0 at d)."""
    return jnp.max(jnp.where(d > 0, g, -jnp.inf)) - jnp.min(g)


@partial(jit, static_argnames=("max_iter",))
@full_precision
def simplex_qp(Q: Array, b: Array, d0: Array, tol: float = 1e-10, max_iter: int = 100_000) -> Array:
    """argmin over the simplex of ½ dᵀQd − bᵀd by SMO, warm-started at d0 ∈ Δ_m.

    Args:
      Q: (m, m) symmetric PSD; b: (m,); d0: (m,) a point of the simplex (the previous solution).
      tol: stop when the KKT violation is below ``tol``·(max diag Q + max |b|).
      max_iter: largest number of pair updates.

    Returns:
      (m,) d ∈ Δ_m.
    """
    scale = jnp.max(jnp.diag(Q)) + jnp.max(jnp.abs(b)) + jnp.finfo(Q.dtype).tiny
    thresh = tol * scale
    diag = jnp.diag(Q)
    g0 = Q @ d0 - b

    def cond(state):
        d, g, it = state
        return (simplex_violation(g, d) > thresh) & (it < max_iter)

    def body(state):
        d, g, it = state
        i = jnp.argmax(jnp.where(d > 0, g, -jnp.inf))
        j = jnp.argmin(g)
        curv = diag[i] + diag[j] - 2.0 * Q[i, j]
        gap = g[i] - g[j]
        t = jnp.where(curv > jnp.finfo(Q.dtype).eps * scale, gap / jnp.where(curv > 0, curv, 1.0), d[i])
        t = jnp.clip(t, 0.0, d[i])
        full = t >= d[i]  # the whole mass of i moves: set it to exactly 0
        d = d.at[j].add(t).at[i].set(jnp.where(full, 0.0, d[i] - t))
        g = g + t * (Q[:, j] - Q[:, i])
        return d, g, it + 1

    d, _, _ = jax.lax.while_loop(cond, body, (d0, g0, jnp.asarray(0)))
    return d
