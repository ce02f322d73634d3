r"""The Bayesian MAP view of RLS2: predictive variances, degrees of freedom, coefficient profiles.

[Din11] §4.2 (Dinuzzo, *Learning functions with kernel methods*, PhD thesis, 2011): with
g = aᵀS g₁, g₁ ~ GM(0, K¹) (K¹ = diag{K̃₁, …, K̃_m}), a uniform on the ellipsoid {aᵀSa ≤ 1} and
yᵢ | g ~ N(g(xᵢ), σ²), RLS2 at λ = σ² is the MAP estimate, with d_k = s_k a_k². Given a, g is a
Gaussian process with covariance Σₖ s_k² a_k² K̃_k = Σₖ d_k 𝐊ᵏ = K(d), the kernel RLS2 learned. The
predictive distribution of :func:`predictive` is that Gaussian process's posterior at the MAP
weights (a plug-in: the uncertainty of d itself is not propagated — the thesis gives the MAP view
only; this is the natural confidence interval it suggests):

    mean  k_xᵀ(𝐊(d) + λI)⁻¹y  (the RLS2 prediction),
    var   K(d)(x, x) − k_xᵀ(𝐊(d) + λI)⁻¹k_x   (+ λ for a new observation),

and, for matrix-valued basis kernels 𝐊ᵏ ⊗ A, the same per eigen-direction of A.

Degrees of freedom (4.11): d̂f(λ) = tr(X̃(X̃ᵀX̃ + λΓ̃)⁻¹X̃ᵀ) for linear RLS2, which equals
tr(𝐊(d)(𝐊(d) + λI)⁻¹) (push-through identity with 𝐊(d) = XΓ(d)Xᵀ, Γ of 4.8); the trace form is
computed here for any dictionary (for 𝐊 ⊗ A: Σᵢⱼ eᵢaⱼ/(eᵢaⱼ + λ)).

:func:`plot_profiles` draws Figure 4.3: coefficient profiles along the path against d̂f.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
from jax.typing import ArrayLike

from .._jit import jit
from ..linalg import clip_psd, eigh, eigvalsh
from .dictionaries import GramStack
from ..products import full_precision

__all__ = ["Predictive", "predictive", "degrees_of_freedom", "plot_profiles"]

Array = jax.Array


class Predictive(NamedTuple):
    """Posterior of the two-layer model at the MAP kernel weights.

    Attributes:
      mean: (n_new, T); var_f: (n_new, T) variance of g(x); var_y: var_f + λ (a new noisy output).
    """

    mean: Array | np.ndarray  # NumPy from the estimators' predict_distribution
    var_f: Array | np.ndarray
    var_y: Array | np.ndarray

    @full_precision
    def interval(self, level: float = 0.95, noisy: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) Gaussian interval of probability ``level`` for g(x) or, if ``noisy``, y."""
        from scipy.stats import norm

        z = norm.ppf(0.5 + level / 2.0)
        sd = np.sqrt(np.asarray(self.var_y if noisy else self.var_f))
        mean = np.asarray(self.mean)
        return mean - z * sd, mean + z * sd


@jit
def _predictive(K, Kx, kxx, Y, A, lam):
    e, U = eigh(K)
    e = clip_psd(e)
    a, V = eigh(A)
    a = clip_psd(a)
    denom = e[:, None] * a[None, :] + lam                       # (n, T) eigenvalues of K ⊗ A + λI
    Z = U.T @ (Y @ V) / denom                                  # rotated coefficients
    mean = (Kx @ U) @ (Z * a[None, :]) @ V.T
    B = (Kx @ U) ** 2                                          # (n_new, n)
    red = B @ (1.0 / denom)                                    # k_xᵀ(a K + λ)⁻¹k_x per direction: (n_new, T)
    var_dir = kxx[:, None] * a[None, :] - red * a[None, :] ** 2
    var_f = jnp.maximum(var_dir, 0.0) @ (V.T ** 2)             # back to the outputs (diagonal of V · V^T)
    return Predictive(mean, var_f, var_f + lam)


@full_precision
def predictive(stack: GramStack, cross: GramStack, diag_new: ArrayLike, d: ArrayLike, Y: ArrayLike, lam: ArrayLike,
               A: ArrayLike | None = None) -> Predictive:
    """Predictive mean and variances of RLS2's two-layer Gaussian model at the MAP weights d.

    Args:
      stack: (m, n, n) training basis Grams; cross: (m, n_new, n) basis Grams between new and
        training inputs; diag_new: (m, n_new) the values s_k K̃_k(x, x) at the new inputs
        (:meth:`KernelDictionary.diagonal`); d: (m,) kernel weights; Y: (n, T) training outputs
        (centred as the fit saw them); lam: λ (= σ², the noise variance); A: (T, T) output matrix.

    Returns:
      :class:`Predictive`.
    """
    Y = jnp.asarray(Y)
    d = jnp.asarray(d, Y.dtype)
    A = jnp.eye(Y.shape[1], dtype=Y.dtype) if A is None else jnp.asarray(A, Y.dtype)
    kxx = jnp.asarray(diag_new, Y.dtype).T @ d
    return _predictive(stack.combine(d), cross.combine(d), kxx, Y, A, jnp.asarray(lam, Y.dtype))


@jit
def _dof(K, A, lam):
    e = jnp.maximum(eigvalsh(K), 0.0)
    a = jnp.maximum(eigvalsh(A), 0.0)
    ea = e[:, None] * a[None, :]
    return jnp.sum(ea / (ea + lam))


@full_precision
def degrees_of_freedom(stack: GramStack, d: ArrayLike, lam: ArrayLike, A: ArrayLike | None = None) -> Array:
    """d̂f(λ) of (4.11): tr(𝐊(d)(𝐊(d) + λI)⁻¹) (tr of the hat matrix of 𝐊(d) ⊗ A in general).

    Args:
      stack: (m, n, n) basis Grams; d: (m,) weights, or (L, m) a path; lam: λ, or (L,) for a path.

    Returns:
      scalar, or (L,) along a path.
    """
    d = jnp.asarray(d)
    A = jnp.eye(1, dtype=d.dtype) if A is None else jnp.asarray(A, d.dtype)
    if d.ndim == 1:
        return _dof(stack.combine(d), A, jnp.asarray(lam, d.dtype))
    return jax.lax.map(lambda x: _dof(stack.combine(x[0]), A, x[1]), (d, jnp.asarray(lam, d.dtype)))


def plot_profiles(df: npt.ArrayLike, coefs: npt.ArrayLike, names: Sequence[str] | None = None,
                  chosen_df: float | None = None, ax: Any = None, title: str | None = None) -> Any:
    """Coefficient profiles against the degrees of freedom, as [Din11] Figure 4.3.

    Args:
      df: (L,) d̂f along the path; coefs: (L, q) a coefficient per path point (the weights w_j of
        linear RLS2, eq. 4.7, or the kernel weights d_k); names: q labels (only the non-zero
        profiles are labelled); chosen_df: a vertical line at the selected model; ax: a matplotlib
        Axes (default: a new figure).

    Returns:
      the matplotlib Axes. matplotlib is imported here, not with the package.
    """
    import matplotlib.pyplot as plt

    df, coefs = np.asarray(df, float), np.asarray(coefs, float)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    order = np.argsort(df)
    for j in range(coefs.shape[1]):
        if np.any(coefs[:, j] != 0):
            ax.plot(df[order], coefs[order, j], marker=".", label=None if names is None else str(names[j]))
    ax.axhline(0.0, color="0.6", lw=0.8)
    if chosen_df is not None:
        ax.axvline(chosen_df, color="r", ls="--", lw=1)
    ax.set_xlabel(r"$\widehat{df}(\lambda)$")
    ax.set_ylabel("coefficient")
    if title:
        ax.set_title(title)
    if names is not None:
        ax.legend(fontsize=7, loc="best")
    return ax
