"""The predictors that are not one kernel expansion: multi-task models, explicit feature maps,
the div/curl field, and the combined kernels of RLS2.

Each is a :class:`~jaxmtl.models.Predictor` (the one interface: ``dtype``, ``n_features``,
``n_outputs``, ``astype``, called under ``jit`` / ``vmap`` / ``grad``, exported by
:func:`jaxmtl.export`):

=========================  ===================================================================
class                      f
=========================  ===================================================================
:class:`TaskPredictor`     f(x, t) = w·Σᵢ k(x, xᵢ) cᵢ + (1 − w)·Σ_{i: tᵢ = t} k̃_t(x, xᵢ) cᵢ + b_t
                           (``MultiTaskRegressor``, both families; ``MixedEffectRegressor``)
:class:`FeaturePredictor`  f(x) = φ(x) C A + b, φ a Nyström or random-feature map
:class:`FieldPredictor`    f(x) = γ Γ_cf(x, ·) C + (1 − γ) Γ_df(x, ·) C, the div/curl field
=========================  ===================================================================

:class:`DictionaryKernel` is RLS2's combined kernel Σₖ dₖ sₖ K̃ₖ on standardised inputs, the
``kernel`` of a :class:`~jaxmtl.models.SeparablePredictor` (one weight vector) or of a
:class:`~jaxmtl.models.PerOutputPredictor` (one per class, one-versus-all).

Tasks. A :class:`TaskPredictor` is called as ``f(X, tasks)``, ``tasks`` the (m,) integer codes
of the rows' tasks: indices into the estimator's ``tasks_`` (``np.searchsorted(model.tasks_,
labels)`` for sorted labels). A code outside 0 … T − 1 is refused with a TaskError where the
codes are concrete (a call outside ``jit``); inside traced code and in an exported artefact,
where no error can be raised, it is mapped as documented by ``unknown``: ``'average'`` (the
mixed-effect model's average task ḡ + b, as its ``predict`` does for a task not seen in fit) or
``'nan'`` (``MultiTaskRegressor``, whose ``predict`` refuses such a task: NaN marks the row).

Example:
    >>> import numpy as np
    >>> from jaxmtl import MultiTaskRegressor
    >>> from jaxmtl.datasets import make_multitask_toy
    >>> d = make_multitask_toy(15, 0)
    >>> model = MultiTaskRegressor(n_steps=50, family="common_similarity").fit(d.x, d.y, d.tasks)
    >>> f = model.predictor()
    >>> codes = np.searchsorted(model.tasks_, d.tasks[:3])
    >>> f(d.x[:3], codes).shape, bool(np.allclose(f(d.x[:3], codes)[:, 0], model.predict(d.x[:3], d.tasks[:3]), atol=1e-4))
    ((3, 1), True)
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError, TaskError
from ..kernels.scalar import Gaussian
from ..operators.fields import field_operator
from ..operators.nystrom import FeatureMap, NystromFeatures
from ..products import full_precision
from .predictors import PerOutputGaussian, Predictor, _cast, _shape, float_dtype, input_shift

__all__ = ["TaskPredictor", "FeaturePredictor", "FieldPredictor", "DictionaryKernel", "UNKNOWN_TASKS"]

UNKNOWN_TASKS = ("average", "nan")  # what a TaskPredictor gives a row of an unknown task code, traced


class TaskPredictor(Predictor):
    """f(x, t) = w·Σᵢ k(x, xᵢ) cᵢ + (1 − w)·Σ_{i: tᵢ = t} k̃_t(x, xᵢ) cᵢ + b_t, one output.

    The common-similarity kernel of ``MultiTaskRegressor`` (w = ω, k̃ = k, b_t the training mean),
    its independent family (no shared part, k̃_t a Gaussian of task t's width, b_t task t's mean),
    and the mixed-effect kernel (5.2) of ``MixedEffectRegressor`` (w = α, k̃ its task kernel, b_t
    the intercept) — see the module doc for the task codes.

    Attributes:
      kernel: the shared kernel k, or None (no shared part).
      task_kernel: the task kernel k̃: a scalar kernel, or a :class:`PerOutputGaussian` of one
        width per task (T,).
      X_fit: (n, p) training inputs; coef: (n,) coefficients c; task_codes: (n,) int32 task of
        each training row.
      shared: () the shared weight w in [0, 1].
      task_offset: (T,) offsets b_t.
      unknown: ``'average'`` or ``'nan'``, what a traced unknown code gives (static).
      input_offset: (p,) shift subtracted from the inputs first (the estimator's centring), or None.
      dtype: ``'float32'`` or ``'float64'`` (static).

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxmtl import Gaussian
        >>> f = TaskPredictor(None, Gaussian(1.0), jnp.zeros((2, 1)), jnp.ones(2), jnp.array([0, 1]), 0.0,
        ...                   jnp.array([0.0, 10.0]), "nan")
        >>> f(jnp.zeros((2, 1)), jnp.array([0, 1]))[:, 0]
        Array([ 1., 11.], dtype=float32)
    """

    kernel: Any
    task_kernel: Any
    X_fit: jax.Array
    coef: jax.Array
    task_codes: jax.Array
    shared: jax.Array
    task_offset: jax.Array
    unknown: str = eqx.field(static=True)
    input_offset: jax.Array | None
    dtype: str = eqx.field(static=True)
    takes_tasks = True

    def __init__(self, kernel: Any, task_kernel: Any, X_fit: jax.Array, coef: jax.Array, task_codes: Any,
                 shared: Any, task_offset: Any, unknown: str, input_offset: jax.Array | None = None) -> None:
        n, _ = _shape(X_fit, "X_fit", 2)
        _shape(coef, "coef", 1, (n,))
        _shape(task_codes, "task_codes", 1, (n,))
        self.dtype = float_dtype(X_fit, "X_fit")
        T = _shape(task_offset, "task_offset", 1)[0]
        if isinstance(task_kernel, PerOutputGaussian):
            _shape(task_kernel.sigma, "task_kernel.sigma", 1, (T,))
        if unknown not in UNKNOWN_TASKS:
            raise ParameterError(f"unknown must be one of {UNKNOWN_TASKS}; received {unknown!r}.")
        self.kernel, self.task_kernel, self.X_fit, self.coef = kernel, task_kernel, X_fit, coef
        self.task_codes = jnp.asarray(task_codes, jnp.int32)
        self.shared, self.task_offset = jnp.asarray(shared, self.dtype), jnp.asarray(task_offset, self.dtype)
        self.unknown, self.input_offset = unknown, _offset(input_offset, X_fit.shape[1])

    @property
    def n_features(self) -> int:
        return int(self.X_fit.shape[1])

    @property
    def n_outputs(self) -> int:
        return 1

    @property
    def n_tasks(self) -> int:
        """T, the number of tasks (codes 0 … T − 1)."""
        return int(self.task_offset.shape[0])

    def _predict(self, X: jax.Array, *tasks: jax.Array) -> jax.Array:
        (codes,) = tasks
        if not isinstance(codes, jax.core.Tracer) and bool(jnp.any((codes < 0) | (codes >= self.n_tasks))):
            bad = np.asarray(codes)[(np.asarray(codes) < 0) | (np.asarray(codes) >= self.n_tasks)]
            raise TaskError(f"tasks must be codes 0 … {self.n_tasks - 1} of the fitted tasks (indices into the "
                            f"estimator's tasks_); received {bad[:10].tolist()}.")
        known = (codes >= 0) & (codes < self.n_tasks)
        t = jnp.clip(codes, 0, self.n_tasks - 1)
        if isinstance(self.task_kernel, PerOutputGaussian):  # every row its own task's width
            Kt = jax.vmap(lambda x, w: Gaussian(w)(x[None], self.X_fit)[0])(X, self.task_kernel.sigma[t])
        else:
            Kt = self.task_kernel(X, self.X_fit)
        same = (codes[:, None] == self.task_codes[None, :]).astype(Kt.dtype)
        F = (1 - self.shared) * ((Kt * same) @ self.coef) + self.task_offset[t]
        if self.kernel is not None:
            F = F + self.shared * (self.kernel(X, self.X_fit) @ self.coef)
        if self.unknown == "nan":
            F = jnp.where(known, F, jnp.nan)
        return F[:, None]


def _offset(input_offset: Any, p: int) -> jax.Array | None:
    """The (p,) input shift (ShapeError otherwise), or None."""
    if input_offset is not None:
        _shape(input_offset, "input_offset", 1, (p,))
    return input_offset


def _feature_count(feature_map: FeatureMap) -> int:
    """p of a Nyström map (its centres) or a random-feature map (its (p, D) frequencies)."""
    if isinstance(feature_map, NystromFeatures):
        return int(feature_map.centres.shape[1])
    return int(feature_map.frequencies.shape[0])  # type: ignore[attr-defined]


class FeaturePredictor(Predictor):
    """f(x) = φ(x) C A + b on an explicit feature map φ (Nyström centres and whitening, or random
    frequencies, are leaves): an ``ApproximateKernelRegressor`` and the approximate fits of
    ``VectorValuedRegressor`` and ``MultiClassClassifier``.

    Attributes:
      feature_map: the :class:`~jaxmtl.operators.nystrom.FeatureMap` (D features).
      coef: (D, d) coefficients C on the features; output_matrix: (d, d) A; offset: (d,) b.
      input_offset: (p,) shift subtracted from the inputs first, or None.
      dtype: ``'float32'`` or ``'float64'`` (static, that of ``coef``).

    Example:
        >>> import numpy as np
        >>> from jaxmtl import ApproximateKernelRegressor
        >>> X = np.random.default_rng(0).normal(size=(200, 2)); Y = np.c_[np.sin(X[:, 0]), X[:, 1]]
        >>> model = ApproximateKernelRegressor(n_components=40, filter="tikhonov").fit(X, Y)
        >>> f = model.predictor()
        >>> type(f).__name__, f(X[:3]).shape, bool(np.allclose(f(X[:3]), model.predict(X[:3]), atol=1e-4))
        ('FeaturePredictor', (3, 2), True)
    """

    feature_map: FeatureMap
    coef: jax.Array
    output_matrix: jax.Array
    offset: jax.Array
    input_offset: jax.Array | None
    dtype: str = eqx.field(static=True)

    def __init__(self, feature_map: FeatureMap, coef: jax.Array, output_matrix: jax.Array,
                 offset: jax.Array, input_offset: jax.Array | None = None) -> None:
        d = _shape(coef, "coef", 2, (feature_map.n_components, None))[1]
        _shape(output_matrix, "output_matrix", 2, (d, d))
        _shape(offset, "offset", 1, (d,))
        self.feature_map, self.coef, self.output_matrix, self.offset = feature_map, coef, output_matrix, offset
        self.input_offset = _offset(input_offset, _feature_count(feature_map))
        self.dtype = float_dtype(coef, "coef")

    @classmethod
    def of(cls, estimator: Any) -> FeaturePredictor:
        """The predictor of an estimator fitted through an approximation: its ``feature_map_``,
        ``coef_`` (D, d), ``output_matrix_``, ``y_mean_`` and input shift, in ``coef_``'s dtype."""
        dtype = estimator.coef_.dtype
        return cls(_cast(estimator.feature_map_, dtype), jnp.asarray(estimator.coef_),
                   jnp.asarray(estimator.output_matrix_, dtype), jnp.asarray(estimator.y_mean_, dtype),
                   input_shift(estimator, dtype))

    @property
    def n_features(self) -> int:
        return _feature_count(self.feature_map)

    @property
    def n_outputs(self) -> int:
        return int(self.coef.shape[1])

    def _predict(self, X: jax.Array, *tasks: jax.Array) -> jax.Array:
        return self.feature_map.apply(X, self.coef @ self.output_matrix) + self.offset


class FieldPredictor(Predictor):
    """The div/curl field v(x) = γ Γ_cf(x, ·) C + (1 − γ) Γ_df(x, ·) C of a
    ``VectorFieldRegressor`` ([BRBV11] (26), (27)), (m, p) → (m, p); :meth:`parts` gives the two.

    Attributes:
      kernel: the Gaussian (its width σ a leaf); gamma: () γ; X_fit: (n, p); coef: (n, p);
      input_offset: (p,) shift subtracted from the inputs first, or None; dtype: static.

    Example:
        >>> from jaxmtl import VectorFieldRegressor
        >>> from jaxmtl.datasets import grid_2d, vector_field_1
        >>> X = grid_2d(6); V, _, _ = vector_field_1(X, 0.3)
        >>> f = VectorFieldRegressor(n_steps=30, kind="div_curl").fit(X, V).predictor()
        >>> type(f).__name__, f(X[:2]).shape
        ('FieldPredictor', (2, 2))
    """

    kernel: Gaussian
    gamma: jax.Array
    X_fit: jax.Array
    coef: jax.Array
    input_offset: jax.Array | None
    dtype: str = eqx.field(static=True)

    def __init__(self, kernel: Gaussian, gamma: Any, X_fit: jax.Array, coef: jax.Array,
                 input_offset: jax.Array | None = None) -> None:
        n, p = _shape(X_fit, "X_fit", 2)
        _shape(coef, "coef", 2, (n, p))
        self.dtype = float_dtype(X_fit, "X_fit")
        self.kernel, self.gamma = kernel, jnp.asarray(gamma, self.dtype)
        self.X_fit, self.coef, self.input_offset = X_fit, coef, _offset(input_offset, p)

    @property
    def n_features(self) -> int:
        return int(self.X_fit.shape[1])

    @property
    def n_outputs(self) -> int:
        return int(self.X_fit.shape[1])

    @full_precision
    def parts(self, X: Any) -> tuple[jax.Array, jax.Array]:
        """(curl-free part, divergence-free part) at (m, p) inputs, each (m, p)."""
        X = jnp.atleast_2d(self._inputs(X))
        X = X if self.input_offset is None else X - self.input_offset
        return field_operator(X, self.X_fit, self.kernel.sigma, self.gamma).parts(self.coef)

    def _predict(self, X: jax.Array, *tasks: jax.Array) -> jax.Array:
        curl, div = field_operator(X, self.X_fit, self.kernel.sigma, self.gamma).parts(self.coef)
        return curl + div


class DictionaryKernel(eqx.Module):
    """RLS2's combined kernel k(x, x') = Σₖ dₖ sₖ K̃ₖ(x/r, x'/r) ([Din11] eq. 3.6) on inputs
    divided by the standardisation scales r: one Gram for weights d (m,), one per row of d (T, m)
    (one-versus-all, a :class:`~jaxmtl.models.PerOutputPredictor`'s kernel).

    Attributes:
      basis: the dictionary's lazy :class:`~jaxmtl.mkl.GramStack` (its kernels and scalings sₖ;
        its inputs are replaced at every call).
      weights: (m,) or (T, m) kernel weights d.
      input_scale: (p,) scales r the inputs are divided by.

    Example:
        >>> import numpy as np
        >>> from jaxmtl import RLS2Regressor
        >>> X = np.random.default_rng(0).normal(size=(40, 2)); y = np.sin(X[:, 0])
        >>> model = RLS2Regressor(lam=0.1).fit(X, y)
        >>> f = model.predictor()
        >>> type(f.kernel).__name__, bool(np.allclose(f(X[:3])[:, 0], model.predict(X[:3]), atol=1e-4))
        ('DictionaryKernel', True)
    """

    basis: Any
    weights: jax.Array
    input_scale: jax.Array

    def _stack(self, X1: jax.Array, X2: jax.Array) -> Any:
        r = self.input_scale
        return eqx.tree_at(lambda s: (s.X1, s.X2), self.basis, (X1 / r, X2 / r))

    def __call__(self, X1: jax.Array, X2: jax.Array) -> jax.Array:
        """(n1, n2) the combined Gram, or (T, n1, n2) one per row of ``weights``."""
        stack = self._stack(X1, X2)
        if self.weights.ndim == 1:
            return stack.combine(self.weights)
        return jax.vmap(stack.combine)(self.weights)

    def expansion(self, X: jax.Array, X_fit: jax.Array, coef: jax.Array) -> jax.Array:
        """(m, T) Σᵢ k_j(x, xᵢ) C[i, j] for weights (T, m): output j on its own combination."""
        stack = self._stack(X, X_fit)
        return jax.vmap(lambda d, c: stack.combine(d) @ c, out_axes=1)(self.weights, coef.T)
