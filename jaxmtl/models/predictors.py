"""Fitted models as pytrees: pass a fitted estimator's prediction function into jitted code.

:meth:`predictor` of :class:`~jaxmtl.VectorValuedRegressor` and :class:`~jaxmtl.MultiClassClassifier`
returns a :class:`SeparablePredictor`, an equinox Module holding the kernel, the training inputs,
the coefficients, the output matrix and the output offset as array leaves; a
``VectorValuedRegressor`` that chose the independent family returns a :class:`PerOutputPredictor`
(a Gaussian width per output in place of one kernel). It is a pure function
of its inputs, so it works under ``jax.jit``, ``jax.vmap`` and ``jax.grad`` (gradients with respect
to the inputs, or to the leaves: the kernel width, the coefficients) in user code.

Example:
    >>> import jax, numpy as np
    >>> from jaxmtl import VectorValuedRegressor
    >>> X = np.random.default_rng(0).normal(size=(40, 2)); Y = np.c_[X[:, 0], X[:, 1] ** 2]
    >>> f = VectorValuedRegressor(n_steps=20).fit(X, Y).predictor()
    >>> jax.jit(lambda model, x: model(x))(f, X[:3]).shape   # the model is an argument (a pytree)
    (3, 2)
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

import equinox as eqx
import jax
import jax.numpy as jnp

from ..kernels.scalar import Kernel
from ._per_task import output_predict

__all__ = ["PerOutputPredictor", "Predictor", "SeparablePredictor", "PredictorMixin"]


def _evaluate(model: Any, X: jax.Array, expansion: Callable[[jax.Array], jax.Array]) -> jax.Array:
    """``expansion(X) @ output_matrix + offset`` of a predictor at (m, p) inputs (or one (p,)
    input → (d,)), the inputs cast to the training dtype and shifted by ``input_offset`` first."""
    single = X.ndim == 1
    X = jnp.atleast_2d(X).astype(model.X_fit.dtype)
    if model.input_offset is not None:
        X = X - model.input_offset
    F = expansion(X) @ model.output_matrix + model.offset
    return F[0] if single else F


class SeparablePredictor(eqx.Module):
    """f(x) = Σᵢ K(x, xᵢ) A cᵢ + b for a separable kernel K(x, x')·A.

    Attributes:
      kernel: the scalar kernel (a pytree).
      X_fit: (n, p) training inputs.
      coef: (n, d) coefficients C.
      output_matrix: (d, d) output matrix A.
      offset: (d,) output offset b (the training mean when the estimator fits an intercept).
      input_offset: (p,) shift subtracted from the inputs before the kernel (the estimator's
        host-side centring of X_fit, for translation-invariant kernels), or None.
    """

    kernel: Kernel
    X_fit: jax.Array
    coef: jax.Array
    output_matrix: jax.Array
    offset: jax.Array
    input_offset: jax.Array | None = None

    def __call__(self, X: jax.Array) -> jax.Array:
        """(m, p) inputs → (m, d) outputs; a single (p,) input → (d,)."""
        return _evaluate(self, X, lambda Z: self.kernel(Z, self.X_fit) @ self.coef)


class PerOutputPredictor(eqx.Module):
    """f_j(x) = Σᵢ K_{σ_j}(x, xᵢ) C[i, j] · s_j + b_j: every output j its own Gaussian width σ_j
    (the independent family of :class:`~jaxmtl.VectorValuedRegressor`).

    Attributes:
      widths: (d,) Gaussian widths, one per output.
      X_fit: (n, p) training inputs.
      coef: (n, d) coefficients, column j on output j's kernel.
      output_matrix: (d, d) diagonal output matrix (the outputs' scales when ``normalize_y``).
      offset: (d,) output offset b.
      input_offset: (p,) shift subtracted from the inputs first, or None (as in
        :class:`SeparablePredictor`).

    Example:
        >>> import jax, numpy as np
        >>> from jaxmtl import VectorValuedRegressor
        >>> X = np.random.default_rng(0).normal(size=(40, 2)); Y = np.c_[X[:, 0], X[:, 1] ** 2]
        >>> f = VectorValuedRegressor(family="independent").fit(X, Y).predictor()
        >>> type(f).__name__, jax.jit(lambda model, x: model(x))(f, X[:3]).shape
        ('PerOutputPredictor', (3, 2))
    """

    widths: jax.Array
    X_fit: jax.Array
    coef: jax.Array
    output_matrix: jax.Array
    offset: jax.Array
    input_offset: jax.Array | None = None

    def __call__(self, X: jax.Array) -> jax.Array:
        """(m, p) inputs → (m, d) outputs; a single (p,) input → (d,)."""
        return _evaluate(self, X, lambda Z: output_predict(self.widths, self.X_fit, self.coef, Z))


Predictor = SeparablePredictor | PerOutputPredictor
"""What ``predictor()`` returns: a fitted prediction function (m, p) → (m, d) as a pytree."""


class _SeparableFit(Protocol):
    """What :meth:`PredictorMixin.predictor` reads from a fitted estimator."""

    X_fit_: jax.Array
    kernel_: Kernel
    coef_: Any
    output_matrix_: Any
    y_mean_: Any

    def _check_fitted(self, attribute: str = "coef_") -> None: ...


class PredictorMixin:
    """Adds :meth:`predictor` to estimators fitted with a separable kernel."""

    def predictor(self: _SeparableFit) -> Predictor:
        """The fitted prediction function as a pytree (decision scores for classifiers)."""
        return SeparablePredictor(self.kernel_, *PredictorMixin._leaves(self))

    def _leaves(self: _SeparableFit) -> tuple:
        """(X_fit, coef, output_matrix, offset, input_offset) of the fitted model, in its dtype."""
        self._check_fitted()
        dtype = self.X_fit_.dtype
        shift = getattr(self, "_input_offset_", None)
        return (self.X_fit_, jnp.asarray(self.coef_, dtype), jnp.asarray(self.output_matrix_, dtype),
                jnp.asarray(self.y_mean_, dtype), None if shift is None else jnp.asarray(shift, dtype))
