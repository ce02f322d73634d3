r"""Scalar kernels K(x, x') as equinox Modules (pytrees), with Gram and cross-Gram evaluation.

Hyperparameters are array leaves, so a kernel passes through ``jit``, ``vmap`` (a batch of
widths is a kernel with a batched leaf) and ``grad``. ``kernel(X1, X2)`` returns the
(n1, n2) cross-Gram; ``kernel.gram(X1, X2, block_size=b)`` computes it in row blocks of X1
to bound the memory of intermediates (the pairwise differences of Laplacian/Matérn kernels);
``kernel.diag(X)`` the values K(x_i, x_i).

Example:
    >>> import jax.numpy as jnp
    >>> X = jnp.array([[0.0], [1.0]])
    >>> Gaussian(1.0)(X, X).shape
    (2, 2)
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._checks import check_inputs, check_int, check_positive
from .errors import ParameterError, ShapeError

__all__ = [
    "Kernel",
    "Gaussian",
    "Laplacian",
    "Linear",
    "Polynomial",
    "Matern",
    "SobolevSpline",
    "squared_distances",
    "median_heuristic",
    "knn_width",
]

Array = jax.Array


def _checked(value, name):
    """Validate a positive hyperparameter given as a Python/NumPy number; pass tracers through."""
    if isinstance(value, (int, float, np.number)) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return jnp.asarray(check_positive(value, name))
    return jnp.asarray(value)


def squared_distances(X1: Array, X2: Array) -> Array:
    """(n1, n2) squared Euclidean distances ‖x − x'‖², clipped at 0.

    Example:
        >>> squared_distances(jnp.zeros((2, 3)), jnp.ones((1, 3)))[:, 0]
        Array([3., 3.], dtype=float32)
    """
    d2 = (jnp.sum(X1**2, 1)[:, None] + jnp.sum(X2**2, 1)[None, :]) - 2.0 * X1 @ X2.T
    return jnp.maximum(d2, 0.0)


def _safe_sqrt(x):
    """sqrt with a finite (zero) gradient at 0."""
    pos = x > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), 0.0)


class Kernel(eqx.Module):
    """A positive semidefinite scalar kernel on ℝᵖ."""

    @abc.abstractmethod
    def __call__(self, X1: Array, X2: Array) -> Array:
        """(n1, n2) cross-Gram K(X1[i], X2[j])."""

    def gram(self, X1, X2=None, block_size: int | None = None) -> Array:
        """Gram or cross-Gram matrix, optionally in row blocks of ``block_size`` rows of X1.

        Args:
          X1: (n1, p); X2: (n2, p), default X1; block_size: rows per block (None: one block).

        Returns:
          (n1, n2) array.
        """
        X2 = X1 if X2 is None else X2
        if block_size is None or block_size >= X1.shape[0]:
            return self(X1, X2)
        block_size = check_int(block_size, "block_size", minimum=1)
        n1 = X1.shape[0]
        n_blocks = -(-n1 // block_size)
        pad = n_blocks * block_size - n1
        Xp = jnp.concatenate([X1, jnp.broadcast_to(X1[:1], (pad, X1.shape[1]))]) if pad else X1
        blocks = jax.lax.map(lambda B: self(B, X2), Xp.reshape(n_blocks, block_size, -1))
        return blocks.reshape(n_blocks * block_size, -1)[:n1]

    def diag(self, X) -> Array:
        """(n,) the values K(x_i, x_i)."""
        return jax.vmap(lambda x: self(x[None], x[None])[0, 0])(X)

    def spec(self) -> dict:
        """JSON-ready description: class name and hyperparameters."""
        out = {"kernel": type(self).__name__}
        for k, v in vars(self).items():
            out[k] = v if isinstance(v, (int, str)) else float(np.asarray(v))
        return out


class Gaussian(Kernel):
    """K(x, x') = exp(−‖x − x'‖² / (2σ²)).

    Args:
      sigma: width σ > 0.
    """

    sigma: Array

    def __init__(self, sigma=1.0):
        self.sigma = _checked(sigma, "sigma")

    def __call__(self, X1, X2):
        return jnp.exp(-squared_distances(X1, X2) / (2.0 * self.sigma**2))

    def diag(self, X):
        return jnp.ones(X.shape[0], X.dtype)


class Laplacian(Kernel):
    """K(x, x') = exp(−‖x − x'‖ / σ)."""

    sigma: Array

    def __init__(self, sigma=1.0):
        self.sigma = _checked(sigma, "sigma")

    def __call__(self, X1, X2):
        return jnp.exp(-_safe_sqrt(squared_distances(X1, X2)) / self.sigma)

    def diag(self, X):
        return jnp.ones(X.shape[0], X.dtype)


class Linear(Kernel):
    """K(x, x') = ⟨x, x'⟩."""

    def __call__(self, X1, X2):
        return X1 @ X2.T


class Polynomial(Kernel):
    """K(x, x') = (γ⟨x, x'⟩ + c)^degree.

    Args:
      degree: positive integer (static).
      gamma: scale γ > 0.
      coef0: offset c ≥ 0.
    """

    gamma: Array
    coef0: Array
    degree: int = eqx.field(static=True)

    def __init__(self, degree: int = 2, gamma=1.0, coef0=1.0):
        self.degree = check_int(degree, "degree", minimum=1)
        self.gamma = _checked(gamma, "gamma")
        if isinstance(coef0, (int, float, np.number)):
            coef0 = check_positive(coef0, "coef0", allow_zero=True)
        self.coef0 = jnp.asarray(coef0)

    def __call__(self, X1, X2):
        return (self.gamma * (X1 @ X2.T) + self.coef0) ** self.degree


class Matern(Kernel):
    """Matérn kernel of smoothness ν ∈ {1/2, 3/2, 5/2} and length scale ℓ (as scikit-learn's).

    With r = ‖x − x'‖/ℓ: ν = 1/2: e^{−r}; ν = 3/2: (1 + √3 r) e^{−√3 r};
    ν = 5/2: (1 + √5 r + 5r²/3) e^{−√5 r}.
    """

    length_scale: Array
    nu: float = eqx.field(static=True)

    def __init__(self, nu: float = 1.5, length_scale=1.0):
        if nu not in (0.5, 1.5, 2.5):
            raise ParameterError(f"nu must be 0.5, 1.5 or 2.5; received {nu!r}.")
        self.nu = float(nu)
        self.length_scale = _checked(length_scale, "length_scale")

    def __call__(self, X1, X2):
        r = _safe_sqrt(squared_distances(X1, X2)) / self.length_scale
        if self.nu == 0.5:
            return jnp.exp(-r)
        if self.nu == 1.5:
            s = jnp.sqrt(3.0) * r
            return (1.0 + s) * jnp.exp(-s)
        s = jnp.sqrt(5.0) * r
        return (1.0 + s + s**2 / 3.0) * jnp.exp(-s)

    def diag(self, X):
        return jnp.ones(X.shape[0], X.dtype)


class SobolevSpline(Kernel):
    """The linear-spline kernel of the Sobolev space on [0, 1] with f(0) = f(1) = 0
    (seed 004 §6.1): K(x, s) = min(x, s)·(1 − max(x, s)). Inputs have one feature."""

    def __call__(self, X1, X2):
        if X1.shape[1] != 1 or X2.shape[1] != 1:
            raise ShapeError(
                f"SobolevSpline takes one input feature; received {X1.shape[1]} and {X2.shape[1]}."
            )
        x, s = X1[:, :1], X2[:, 0][None, :]
        return jnp.minimum(x, s) * (1.0 - jnp.maximum(x, s))


def median_heuristic(X, max_points: int = 1000) -> float:
    """Median pairwise Euclidean distance (on at most ``max_points`` evenly spaced rows).

    Example:
        >>> median_heuristic(np.array([[0.0], [1.0], [3.0]]))
        2.0
    """
    X = check_inputs(X).astype(np.float64)
    if X.shape[0] > max_points:
        X = X[np.linspace(0, X.shape[0] - 1, max_points).astype(int)]
    d2 = np.maximum((X**2).sum(1)[:, None] + (X**2).sum(1)[None, :] - 2 * X @ X.T, 0.0)
    iu = np.triu_indices(X.shape[0], k=1)
    return float(np.median(np.sqrt(d2[iu]))) if iu[0].size else 1.0


def knn_width(X, k: int, block_size: int = 1024) -> float:
    """Mean over points of the mean distance to their k nearest other points.

    The Gaussian width of the School protocol (seed 000 §7.2). Computed in row blocks.

    Example:
        >>> knn_width(np.array([[0.0], [1.0], [3.0]]), 1)
        1.3333333333333333
    """
    X = check_inputs(X).astype(np.float64)
    n = X.shape[0]
    k = check_int(k, "k", minimum=1)
    if k >= n:
        raise ParameterError(f"k must be smaller than the number of points {n}; received {k}.")
    sq = (X**2).sum(1)
    total = 0.0
    for start in range(0, n, block_size):  # memory bound only; not a hot path
        B = X[start:start + block_size]
        d2 = np.maximum((B**2).sum(1)[:, None] + sq[None, :] - 2 * B @ X.T, 0.0)
        d2[np.arange(len(B)), np.arange(start, start + len(B))] = np.inf
        part = np.partition(d2, k - 1, axis=1)[:, :k]
        total += np.sqrt(part).mean(1).sum()
    return float(total / n)
