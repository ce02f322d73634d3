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
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
from jax.typing import ArrayLike

from .._checks import check_inputs, check_int, check_positive
from ..errors import ParameterError, ShapeError
from ..products import full_precision

__all__ = [
    "Kernel",
    "Gaussian",
    "Laplacian",
    "Linear",
    "Polynomial",
    "Matern",
    "SobolevSpline",
    "squared_distances",
    "GRAM_PRECISION",
    "host_squared_distances",
    "median_heuristic",
    "median_heuristic_rows",
    "knn_width",
]

Array = jax.Array


def _checked(value, name, allow_zero=False, squared=True):
    """Validate a positive hyperparameter (scalar or stacked array) before tracing.

    Python/NumPy numbers and concrete arrays are checked in plain Python (finite and > 0, or
    >= 0 with ``allow_zero``) and a ParameterError names ``name``; JAX tracers (inside ``jit``,
    ``vmap`` or ``grad``) are passed through unchecked.
    """
    if isinstance(value, jax.core.Tracer):
        return value
    if isinstance(value, (bool, np.bool_)):
        raise ParameterError(f"{name} must be a number; received {value!r}.")
    if isinstance(value, (int, float, np.number)):
        return jax.device_put(check_positive(value, name, allow_zero=allow_zero, squared=squared))  # no compiled call
    try:
        arr = np.asarray(value)
    except Exception:
        raise ParameterError(f"{name} must be a number or an array of numbers; received {value!r}.") from None
    if arr.dtype.kind not in "iuf" or arr.size == 0:
        raise ParameterError(f"{name} must be a number or an array of numbers; received {value!r}.")
    ok = np.isfinite(arr) & ((arr >= 0) if allow_zero else (arr > 0))
    if not np.all(ok):
        what = "non-negative" if allow_zero else "positive"
        raise ParameterError(f"{name} must be finite and {what}; received {arr.tolist()}.")
    return jnp.asarray(value)


def _pair(X1, X2):
    """Both inputs as (n, p) arrays with the same p; a 1-D array is n samples of one feature."""
    out = []
    for name, X in (("X1", X1), ("X2", X2)):
        X = jnp.asarray(X)
        if X.ndim == 1:
            X = X[:, None]
        if X.ndim != 2:
            raise ShapeError(f"{name} must have shape (n, p) or (n,); received shape {X.shape}.")
        out.append(X)
    if out[0].shape[1] != out[1].shape[1]:
        raise ShapeError(
            f"X1 and X2 must have the same number of features; received {out[0].shape[1]} "
            f"and {out[1].shape[1]}."
        )
    return out[0], out[1]


# Gram evaluations (inner products, squared distances) always multiply in full precision, whatever
# the estimator's matmul_precision: ‖a‖² + ‖b‖² − 2⟨a, b⟩ cancels, and a TF32 or bfloat16 ⟨a, b⟩
# (10 or 7 mantissa bits) would leave distances below 10⁻³·‖a‖² as noise.
GRAM_PRECISION = jax.lax.Precision.HIGHEST

# Up to this many features the distances are summed from the differences x_j − x'_j (an
# (n1, n2, p) intermediate, exact to (p + 2)·eps relative); above it, from one matrix product.
DIFFERENCE_FORM_MAX_FEATURES = 4
# The median shift of the matrix-product form reads at most this many evenly spaced rows of X2.
SHIFT_ROWS = 255


def squared_distances(X1: ArrayLike, X2: ArrayLike) -> Array:
    """(n1, n2) squared Euclidean distances ‖x − x'‖², non-negative, accumulated in the inputs' dtype.

    Two forms, chosen by the number of features p (static):

    * p ≤ ``DIFFERENCE_FORM_MAX_FEATURES``: Σ_j (x_j − x'_j)², each entry to a relative error of
      (p + 2)·eps whatever the offset or the spread of the data (an (n1, n2, p) intermediate);
    * larger p: ‖a‖² + ‖b‖² − 2⟨a, b⟩ (one matrix product) after shifting both sets by the
      coordinate-wise **median** of X2 (of at most ``SHIFT_ROWS`` evenly spaced rows of it: any
      point amid the data serves, and a sort of all of X2 in every call — in every prediction,
      or folded by XLA when a fitted model is closed over in a user's ``jit`` — would cost more
      than the product it steadies). Each entry's round-off is about (2p + 8)·eps·(‖a‖² + ‖b‖²)
      with a, b the shifted rows: a far outlier has a large ‖a‖² and loses the accuracy of its own
      row and column only (a mean shift would move every row by the outlier / n and flatten all
      distances). Values below that round-off are set to 0, so duplicate points are exactly 0
      apart. The shift depends on X2 only, so row blocks of X1 give the same rows, and it carries
      no gradient (distances do not depend on it).

    eps is that of the inputs' dtype (float32 unless x64 is enabled); inputs that differ only
    beyond it (X + 1e8 in float32) are equal before this function sees them: estimators centre
    their inputs in float64 on the host first (see ``docs/errors.md``).

    Args:
      X1: (n1, p) or (n1,); X2: (n2, p) or (n2,).

    Returns:
      (n1, n2) array of non-negative values.

    Example:
        >>> squared_distances(jnp.zeros((2, 3)), jnp.ones((1, 3)))[:, 0]
        Array([3., 3.], dtype=float32)
    """
    X1, X2 = _pair(X1, X2)
    if X1.shape[1] <= DIFFERENCE_FORM_MAX_FEATURES:
        diff = X1[:, None, :] - X2[None, :, :]
        return jnp.sum(diff * diff, axis=-1)
    m = jax.lax.stop_gradient(jnp.median(X2[:: -(-X2.shape[0] // SHIFT_ROWS)], axis=0))
    A, B = X1 - m, X2 - m
    norms = jnp.sum(A * A, 1)[:, None] + jnp.sum(B * B, 1)[None, :]
    d2 = norms - 2.0 * jnp.matmul(A, B.T, precision=GRAM_PRECISION)
    # Below ~p·eps·(‖a‖² + ‖b‖²) the expansion returns round-off, not a distance: flush it to
    # 0 so that coincident points are exactly 0 apart (and sqrt-based kernels give K(x, x) = 1).
    tol = (2 * A.shape[1] + 8) * jnp.finfo(d2.dtype).eps
    return jnp.where(d2 > tol * norms, d2, 0.0)


def host_squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """(n1, n2) squared distances in NumPy float64, after a shift by the coordinate-wise median of B.

    The host-side counterpart of :func:`squared_distances` for the width heuristics: the median
    shift keeps one far outlier from flattening the distances of all other rows.

    Example:
        >>> host_squared_distances(np.array([[0.0], [1e20]]), np.array([[0.0], [1.0], [3.0]]))[0]
        array([0., 1., 9.])
    """
    m = np.median(B, axis=0)
    A, B = A - m, B - m
    d2 = (A**2).sum(1)[:, None] + (B**2).sum(1)[None, :] - 2 * A @ B.T
    return np.maximum(d2, 0.0)


def _safe_sqrt(x):
    """sqrt with a finite (zero) gradient at 0."""
    pos = x > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), 0.0)


def _ones(X):
    X = jnp.asarray(X)
    dtype = X.dtype if jnp.issubdtype(X.dtype, jnp.floating) else jnp.result_type(float)
    return jnp.ones(X.shape[0], dtype)


class Kernel(eqx.Module):
    """A positive semidefinite scalar kernel on ℝᵖ (abstract).

    Subclasses implement ``__call__(X1, X2) -> (n1, n2)`` in pure ``jax.numpy``; their
    hyperparameters are array leaves (so ``jit``/``vmap``/``grad`` see them) and integer or
    string settings are static fields.

    Example:
        >>> k = Gaussian(1.0)
        >>> X = jnp.zeros((4, 2))
        >>> k(X, X).shape, k.gram(X, block_size=3).shape, k.diag(X).shape
        ((4, 4), (4, 4), (4,))
    """

    @abc.abstractmethod
    def __call__(self, X1: ArrayLike, X2: ArrayLike) -> Array:
        """(n1, n2) cross-Gram K(X1[i], X2[j]) for X1 (n1, p) and X2 (n2, p)."""

    def gram(self, X1: ArrayLike, X2: ArrayLike | None = None, block_size: int | None = None) -> Array:
        """Gram or cross-Gram matrix, optionally in row blocks of ``block_size`` rows of X1.

        With ``block_size`` the rows of X1 are padded to a multiple of the block size and the
        blocks evaluated one after another with ``jax.lax.map``, so the intermediates of one
        call hold ``block_size × n2`` (× p for difference-based kernels) entries; the result is
        the same (n1, n2) matrix as ``self(X1, X2)``.

        Args:
          X1: (n1, p); X2: (n2, p), default X1; block_size: rows per block (None: one block).

        Returns:
          (n1, n2) array.

        Example:
            >>> X = jnp.arange(10.0)[:, None]
            >>> bool(jnp.allclose(Gaussian(2.0).gram(X, block_size=3), Gaussian(2.0)(X, X)))
            True
        """
        if block_size is not None:
            block_size = check_int(block_size, "block_size", minimum=1)
        X1, X2 = _pair(X1, X1 if X2 is None else X2)
        n1 = X1.shape[0]
        if block_size is None or block_size >= n1:
            return self(X1, X2)
        n_blocks = -(-n1 // block_size)
        pad = n_blocks * block_size - n1
        Xp = jnp.concatenate([X1, jnp.broadcast_to(X1[:1], (pad, X1.shape[1]))]) if pad else X1
        blocks = jax.lax.map(lambda B: self(B, X2), Xp.reshape(n_blocks, block_size, -1))
        return blocks.reshape(n_blocks * block_size, -1)[:n1]

    def diag(self, X: ArrayLike) -> Array:
        """(n,) the values K(x_i, x_i) for X of shape (n, p), without forming the Gram.

        Example:
            >>> Linear().diag(jnp.array([[1.0, 2.0]]))
            Array([5.], dtype=float32)
        """
        X, _ = _pair(X, X)
        return jax.vmap(lambda x: self(x[None], x[None])[0, 0])(X)

    def spec(self) -> dict:
        """JSON-ready description: class name and hyperparameters (lists for stacked leaves)."""
        out: dict[str, Any] = {"kernel": type(self).__name__}
        for k, v in vars(self).items():
            if isinstance(v, (int, float, str)):
                out[k] = v
            else:
                v = np.asarray(v)
                out[k] = float(v) if v.ndim == 0 else v.tolist()
        return out


class Gaussian(Kernel):
    """Gaussian (RBF) kernel K(x, x') = exp(−‖x − x'‖² / (2σ²)).

    With a vector of p widths (automatic relevance determination, ARD) the kernel is
    exp(−Σ_j (x_j − x'_j)² / (2σ_j²)): one width per feature, learned by
    ``search="gradient"``. A stacked batch of widths to ``vmap`` over is the same leaf with a
    leading batch axis: inside ``vmap`` each member is a scalar (or, stacked (B, p), a vector).

    Args:
      sigma: width σ > 0: a scalar, or a (p,) vector of per-feature widths (ARD).

    Example:
        >>> Gaussian(1.0)(jnp.array([[0.0]]), jnp.array([[0.0], [2.0]]))
        Array([[1.        , 0.13533528]], dtype=float32)
        >>> Gaussian(jnp.array([1.0, 2.0]))(jnp.zeros((1, 2)), jnp.array([[0.0, 2.0]]))
        Array([[0.60653067]], dtype=float32)
    """

    sigma: Array

    def __init__(self, sigma: ArrayLike = 1.0) -> None:
        self.sigma = _checked(sigma, "sigma")

    def __call__(self, X1: ArrayLike, X2: ArrayLike) -> Array:
        if jnp.ndim(self.sigma) == 1:  # ARD: scale each feature by its width
            X1, X2 = _pair(X1, X2)
            if self.sigma.shape[0] != X1.shape[1]:
                raise ShapeError(f"Gaussian with per-feature widths needs inputs with {self.sigma.shape[0]} "
                                 f"features (one per width); received {X1.shape[1]}.")
            return jnp.exp(-squared_distances(X1 / self.sigma, X2 / self.sigma) / 2.0)
        return jnp.exp(-squared_distances(X1, X2) / (2.0 * self.sigma**2))

    def diag(self, X: ArrayLike) -> Array:
        return _ones(X)


class Laplacian(Kernel):
    """Laplacian (exponential) kernel K(x, x') = exp(−‖x − x'‖ / σ), Euclidean norm.

    Args:
      sigma: width σ > 0.

    Example:
        >>> Laplacian(1.0)(jnp.array([[0.0]]), jnp.array([[0.0], [1.0]])).round(6)  # exp(-1)
        Array([[1.      , 0.367879]], dtype=float32)
    """

    sigma: Array

    def __init__(self, sigma: ArrayLike = 1.0) -> None:
        self.sigma = _checked(sigma, "sigma")

    def __call__(self, X1: ArrayLike, X2: ArrayLike) -> Array:
        return jnp.exp(-_safe_sqrt(squared_distances(X1, X2)) / self.sigma)

    def diag(self, X: ArrayLike) -> Array:
        return _ones(X)


class Linear(Kernel):
    """Linear kernel K(x, x') = ⟨x, x'⟩.

    Example:
        >>> Linear()(jnp.array([[1.0, 2.0]]), jnp.array([[3.0, 4.0]]))
        Array([[11.]], dtype=float32)
    """

    def __call__(self, X1: ArrayLike, X2: ArrayLike) -> Array:
        X1, X2 = _pair(X1, X2)
        return jnp.matmul(X1, X2.T, precision=GRAM_PRECISION)


class Polynomial(Kernel):
    """Polynomial kernel K(x, x') = (γ⟨x, x'⟩ + c)^degree.

    Args:
      degree: positive integer (static).
      gamma: scale γ > 0.
      coef0: offset c ≥ 0 (c < 0 would not give a PSD kernel for every degree).

    Example:
        >>> Polynomial(2, gamma=1.0, coef0=1.0)(jnp.array([[1.0]]), jnp.array([[2.0]]))
        Array([[9.]], dtype=float32)
    """

    gamma: Array
    coef0: Array
    degree: int = eqx.field(static=True)

    def __init__(self, degree: int = 2, gamma: ArrayLike = 1.0, coef0: ArrayLike = 1.0) -> None:
        self.degree = check_int(degree, "degree", minimum=1)
        self.gamma = _checked(gamma, "gamma")
        self.coef0 = _checked(coef0, "coef0", allow_zero=True)

    def __call__(self, X1: ArrayLike, X2: ArrayLike) -> Array:
        X1, X2 = _pair(X1, X2)
        return (self.gamma * jnp.matmul(X1, X2.T, precision=GRAM_PRECISION) + self.coef0) ** self.degree


class Matern(Kernel):
    """Matérn kernel of smoothness ν ∈ {1/2, 3/2, 5/2} and length scale ℓ (as scikit-learn's).

    With r = ‖x − x'‖/ℓ: ν = 1/2: e^{−r}; ν = 3/2: (1 + √3 r) e^{−√3 r};
    ν = 5/2: (1 + √5 r + 5r²/3) e^{−√5 r}.

    Args:
      nu: 0.5, 1.5 or 2.5 (static).
      length_scale: ℓ > 0.

    Example:
        >>> Matern(0.5, 1.0)(jnp.array([[0.0]]), jnp.array([[1.0]])).round(6)  # exp(-1)
        Array([[0.367879]], dtype=float32)
    """

    length_scale: Array
    nu: float = eqx.field(static=True)

    def __init__(self, nu: float = 1.5, length_scale: ArrayLike = 1.0) -> None:
        if isinstance(nu, (bool, np.bool_)) or not isinstance(nu, (int, float, np.number)) \
                or float(nu) not in (0.5, 1.5, 2.5):
            raise ParameterError(f"nu must be 0.5, 1.5 or 2.5; received {nu!r}.")
        self.nu = float(nu)
        self.length_scale = _checked(length_scale, "length_scale")

    def __call__(self, X1: ArrayLike, X2: ArrayLike) -> Array:
        r = _safe_sqrt(squared_distances(X1, X2)) / self.length_scale
        if self.nu == 0.5:
            return jnp.exp(-r)
        if self.nu == 1.5:
            s = np.sqrt(3.0) * r
            return (1.0 + s) * jnp.exp(-s)
        s = np.sqrt(5.0) * r
        return (1.0 + s + s**2 / 3.0) * jnp.exp(-s)

    def diag(self, X: ArrayLike) -> Array:
        return _ones(X)


class SobolevSpline(Kernel):
    """Linear-spline kernel of the Sobolev space on [0, 1] with f(0) = f(1) = 0 ([LRODV08] §6.1).

    K(x, s) = Θ(x ≥ s)(1 − x)s + Θ(x ≤ s)(1 − s)x = min(x, s)·(1 − max(x, s)).
    Inputs have exactly one feature (shape (n, 1) or (n,)), values in [0, 1]; more features
    raise ShapeError.

    Example:
        >>> SobolevSpline()(jnp.array([[0.5]]), jnp.array([[0.25], [0.5]]))
        Array([[0.125, 0.25 ]], dtype=float32)
    """

    def __call__(self, X1: ArrayLike, X2: ArrayLike) -> Array:
        X1, X2 = _pair(X1, X2)
        if X1.shape[1] != 1:
            raise ShapeError(
                f"SobolevSpline takes one input feature; received inputs with {X1.shape[1]}."
            )
        x, s = X1, X2[:, 0][None, :]
        return jnp.minimum(x, s) * (1.0 - jnp.maximum(x, s))

    def diag(self, X: ArrayLike) -> Array:
        X, _ = _pair(X, X)
        if X.shape[1] != 1:
            raise ShapeError(f"SobolevSpline takes one input feature; received inputs with {X.shape[1]}.")
        return X[:, 0] * (1.0 - X[:, 0])


def median_heuristic_rows(n: int, max_points: int = 1000) -> np.ndarray:
    """The rows :func:`median_heuristic` reads of n: all of them, or ``max_points`` evenly spaced.

    For a caller that reads those rows from a file (the median heuristic of rows spread over
    processes) and passes them on: ``median_heuristic(X[median_heuristic_rows(n)])`` equals
    ``median_heuristic(X)``.

    Example:
        >>> median_heuristic_rows(5, 3).tolist()
        [0, 2, 4]
    """
    n, max_points = check_int(n, "n", minimum=0), check_int(max_points, "max_points", minimum=2)
    return np.arange(n) if n <= max_points else np.linspace(0, n - 1, max_points).round().astype(int)


@full_precision
def median_heuristic(X: npt.ArrayLike, max_points: int = 1000) -> float:
    """Median pairwise Euclidean distance between distinct rows of X (a Gaussian width).

    Computed in NumPy (float64). With more than ``max_points`` rows, the median is taken over
    ``max_points`` evenly spaced rows (deterministic). A single row gives 1.0.

    Args:
      X: (n, p) or (n,) inputs; max_points: largest number of rows used (>= 2).

    Returns:
      Python float.

    Example:
        >>> median_heuristic(np.array([[0.0], [1.0], [3.0]]))
        2.0
    """
    X = check_inputs(X).astype(np.float64)
    X = X[median_heuristic_rows(X.shape[0], max_points)]
    if X.shape[0] < 2:
        return 1.0
    d2 = host_squared_distances(X, X)
    iu = np.triu_indices(X.shape[0], k=1)
    return float(np.median(np.sqrt(d2[iu])))


@full_precision
def knn_width(X: npt.ArrayLike, k: int, block_size: int = 1024) -> float:
    """Mean over points of the mean distance to their k nearest other points.

    The Gaussian width of the School protocol ([BRBV11] §7.2: "the mean distance of the k
    nearest neighbors to each training point"). Each point is excluded from its own
    neighbours; duplicates of it count (at distance 0). Computed in NumPy in row blocks of
    ``block_size`` rows, so memory is O(block_size · n).

    Args:
      X: (n, p) or (n,) inputs; k: 1 <= k < n; block_size: rows per block.

    Returns:
      Python float.

    Example:
        >>> knn_width(np.array([[0.0], [1.0], [3.0]]), 1)
        1.3333333333333333
    """
    X = check_inputs(X).astype(np.float64)
    n = X.shape[0]
    k = check_int(k, "k", minimum=1)
    block_size = check_int(block_size, "block_size", minimum=1)
    if k >= n:
        raise ParameterError(f"k must be smaller than the number of points {n}; received {k}.")
    total = 0.0
    for start in range(0, n, block_size):  # memory bound only; not a hot path
        B = X[start:start + block_size]
        d2 = host_squared_distances(B, X)
        d2[np.arange(len(B)), np.arange(start, start + len(B))] = np.inf
        part = np.partition(d2, k - 1, axis=1)[:, :k]
        total += np.sqrt(part).mean(1).sum()
    return float(total / n)
