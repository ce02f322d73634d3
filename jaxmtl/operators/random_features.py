r"""Random Fourier features for translation-invariant kernels (Gaussian, Laplacian, Matérn).

[Din11] F. Dinuzzo, *Learning functions with kernel methods*, PhD thesis, 2011, §1.4.4 and
§1.6.3: by Bochner's theorem (Theorem 6) a continuous translation-invariant PSD kernel is
K(x₁, x₂) = α ∫ cos⟨ξ, x₁ − x₂⟩ dμ(ξ) for a probability measure μ; with the Fourier feature map
Z_U(x) = √α (cos⟨U, x⟩, sin⟨U, x⟩) of eq. (1.9) and D draws U¹ … U^D ~ μ ([RR08] A. Rahimi,
B. Recht, *Random features for large-scale kernel machines*, NIPS 2008),

    K ≈ X̃ X̃ᵀ,   x̃_{i(2j−1)} = √(α/D) cos⟨Uʲ, x_i⟩,   x̃_{i(2j)} = √(α/D) sin⟨Uʲ, x_i⟩,

whose error is O(1/√D) entrywise. Spectral measures μ (α = 1 for the three kernels):

* Gaussian exp(−‖r‖²/(2σ²)): ξ ~ N(0, σ⁻² I);
* Matérn ν with length scale ℓ (ν = 1/2, 3/2, 5/2, as :class:`~jaxmtl.kernels.Matern`): the
  density ∝ (2ν/ℓ² + ‖ξ‖²)^{−(ν + p/2)} is a multivariate Student t with 2ν degrees of freedom
  and scale 1/ℓ: ξ = z·√(2ν/g)/ℓ, z ~ N(0, I), g ~ χ²_{2ν};
* Laplacian exp(−‖r‖/σ) (Euclidean norm) = Matérn ν = 1/2 with ℓ = σ (multivariate Cauchy).

The features plug into every consumer of :class:`~jaxmtl.operators.nystrom.FeatureMap`: the
operator ΦΦᵀ ⊗ A, the eigen path through the D × D problem, and block statistics.
``n_components`` counts features (2 per frequency), so it must be even.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.kernels import Gaussian
    >>> rff = RandomFourierFeatures.fit(Gaussian(1.0), 3, 100, random_state=0)
    >>> rff(jnp.zeros((4, 3))).shape
    (4, 100)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike

from .._checks import check_int, check_random_state
from ..errors import ParameterError
from ..kernels.scalar import GRAM_PRECISION, Gaussian, Kernel, Laplacian, Matern
from .nystrom import FeatureMap
from ..products import full_precision

__all__ = ["RandomFourierFeatures", "spectral_samples"]

Array = jax.Array


@full_precision
def spectral_samples(kernel: Kernel, n_features: int, n_frequencies: int,
                     random_state: int | None = 0) -> np.ndarray:
    """(p, D) frequencies ξ drawn from the kernel's spectral measure μ (Bochner, [Din11] Thm 6).

    Args:
      kernel: :class:`~jaxmtl.kernels.Gaussian`, :class:`~jaxmtl.kernels.Laplacian` or
        :class:`~jaxmtl.kernels.Matern` with scalar hyperparameters.
      n_features: input dimension p; n_frequencies: D; random_state: seed.

    Returns:
      NumPy float64 array (p, D).

    Example:
        >>> spectral_samples(Gaussian(2.0), 2, 5).shape
        (2, 5)
    """
    rng = np.random.default_rng(check_random_state(random_state))
    p = check_int(n_features, "n_features", minimum=1)
    D = check_int(n_frequencies, "n_frequencies", minimum=1)
    z = rng.standard_normal((p, D))
    if isinstance(kernel, Gaussian):
        return z / _scalar(kernel.sigma, "sigma")
    if isinstance(kernel, Laplacian):
        dof, scale = 1.0, _scalar(kernel.sigma, "sigma")
    elif isinstance(kernel, Matern):
        dof, scale = 2.0 * kernel.nu, _scalar(kernel.length_scale, "length_scale")
    else:
        raise ParameterError(
            "random Fourier features need a translation-invariant kernel with a known spectral density "
            f"(Gaussian, Laplacian, Matern); received {type(kernel).__name__}."
        )
    g = rng.chisquare(dof, size=(1, D))
    return z * np.sqrt(dof / g) / scale


def _scalar(value, name: str) -> float:
    arr = np.asarray(value)
    if arr.size != 1:
        raise ParameterError(f"random features need a single kernel {name}; received shape {arr.shape}.")
    return float(arr)


class RandomFourierFeatures(FeatureMap):
    """φ(x) = √(1/D) [cos(xᵀξ₁) … cos(xᵀξ_D), sin(xᵀξ₁) … sin(xᵀξ_D)] ([Din11] §1.6.3, [RR08]).

    Attributes:
      frequencies: (p, D) draws from the spectral measure (2D features).
    """

    frequencies: Array

    @classmethod
    @full_precision
    def fit(cls, kernel: Kernel, n_features: int, n_components: int,
            random_state: int | None = 0, dtype: DTypeLike | None = None) -> RandomFourierFeatures:
        """Draw n_components / 2 frequencies of ``kernel`` for inputs of ``n_features`` columns.

        Args:
          kernel: Gaussian, Laplacian or Matérn kernel; n_features: p; n_components: number of
          features 2D (even, ≥ 2); random_state: seed; dtype: array dtype (default JAX's float).
        """
        m = check_int(n_components, "n_components", minimum=2)
        if m % 2:
            raise ParameterError(f"n_components of random Fourier features must be even (a cosine and a "
                                 f"sine per frequency); received {m}.")
        W = spectral_samples(kernel, n_features, m // 2, random_state)
        return cls(jnp.asarray(W, dtype or jnp.result_type(float)))

    @full_precision
    def raw(self, X: Array) -> Array:
        P = jnp.matmul(jnp.asarray(X), self.frequencies, precision=GRAM_PRECISION)  # phases: cos, sin amplify their error
        return jnp.concatenate([jnp.cos(P), jnp.sin(P)], axis=1) / jnp.sqrt(self.frequencies.shape[1])

    @property
    def transform(self):
        return None  # the raw features are the features

    @property
    def n_components(self):
        return 2 * self.frequencies.shape[1]
