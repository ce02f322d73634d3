"""Fitted models as pytrees: pass a fitted estimator's prediction function into jitted code.

:meth:`predictor` of every estimator that predicts (all but the online mixed-effect server)
returns a :class:`Predictor`: an equinox Module called on (m, p) inputs — and, for
:class:`~jaxmtl.MultiTaskRegressor` and :class:`~jaxmtl.MixedEffectRegressor`, the rows' task
codes — with ``dtype``, ``n_features``, ``n_outputs`` and :meth:`~Predictor.astype`. The
kernel expansions (:class:`KernelPredictor`: :class:`~jaxmtl.VectorValuedRegressor`,
:class:`~jaxmtl.MultiClassClassifier`, the output-kernel estimators, the kernel machines, RLS2,
an exactly fitted :class:`~jaxmtl.ApproximateKernelRegressor`, an independent
:class:`~jaxmtl.VectorFieldRegressor`) share the same fields whatever the data selected,

    f(x) = Σᵢ k(x − s, xᵢ) cᵢ · A + b        (m, p) inputs → (m, d) outputs

==================  =========================================================================
field               leaf
==================  =========================================================================
``kernel``          the kernel k (a pytree: its widths are leaves)
``X_fit``           (n, p) training inputs xᵢ (centred by ``input_offset``)
``coef``            (n, d) coefficients C
``output_matrix``   (d, d) output matrix A
``offset``          (d,) output offset b (the training mean when an intercept is fitted)
``input_offset``    (p,) shift s subtracted from the inputs first, or None
``dtype``           the precision it was fitted in, ``'float32'`` or ``'float64'`` (static)
==================  =========================================================================

Two subclasses differ only in what ``kernel`` is: a :class:`SeparablePredictor` holds one scalar
kernel (the coupled family, the classifiers: Γ(x, x') = k(x, x')·A); a :class:`PerOutputPredictor`
holds a kernel of one Gram per output — a :class:`PerOutputGaussian`, a Gaussian of one width per
output (the independent family of ``VectorValuedRegressor``: output j is
Σᵢ k_{σⱼ}(x, xᵢ) C[i, j] · A[j, j] + b_j), or RLS2's one-versus-all combinations. So code that
differentiates a fitted model reads ``f.kernel.sigma``, ``f.coef``, … under the same names for
both. Classifiers' predictors return the coded class scores (the argmax is ``predict``'s class;
a two-class ``decision_function`` is column 1 minus column 0), or, for the estimators that code
two classes as one ±1 output (the kernel machines, RLS2), the (m, 1) ``decision_function``.
The other kinds — the multi-task models, random-feature and Nyström fits, the div/curl field —
are in :mod:`jaxmtl.models.predictor_kinds`.

A predictor is a pure function of its inputs and its leaves, so it works under ``jax.jit``,
``jax.vmap``, ``jax.grad`` and ``jax.jacfwd`` (with respect to the inputs, or to the leaves).
A single (p,) input gives (d,) outputs, and ``jax.jacfwd(f)(x)`` the d × p Jacobian.

Precision (docs/precision.md): a predictor computes in the precision it was fitted in, with its
inputs cast to it. A float64 predictor called where JAX computes in float32 (``jax_enable_x64``
off) refuses with a :class:`~jaxmtl.errors.DTypeError` naming the two ways out — call it inside
``with jax.enable_x64(True):``, or convert it once with ``f.astype('float32')`` — rather than
letting JAX truncate its leaves at every operation. A float32 predictor runs anywhere in float32.

Example:
    >>> import jax, numpy as np
    >>> from jaxmtl import VectorValuedRegressor
    >>> X = np.random.default_rng(0).normal(size=(40, 2)); Y = np.c_[X[:, 0], X[:, 1] ** 2]
    >>> f = VectorValuedRegressor(n_steps=20).fit(X, Y).predictor()
    >>> jax.jit(lambda model, x: model(x))(f, X[:3]).shape   # the model is an argument (a pytree)
    (3, 2)
    >>> jax.jacfwd(f)(X[0]).shape   # d × p Jacobian at one input
    (2, 2)
    >>> f.dtype, f.astype("float32").coef.dtype
    ('float32', dtype('float32'))
"""

from __future__ import annotations

import abc
import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._checks import default_float
from ..errors import DTypeError, ParameterError, ShapeError
from ..kernels.scalar import Gaussian, Kernel
from ._per_task import output_predict
from ..products import full_precision

__all__ = ["Predictor", "KernelPredictor", "SeparablePredictor", "PerOutputPredictor", "PerOutputGaussian", "PredictorMixin"]

def _cast(tree: Any, dtype: Any) -> Any:
    """``tree`` with every floating array leaf in ``dtype`` (integer and static fields unchanged)."""
    return jax.tree.map(lambda leaf: jnp.asarray(leaf, dtype) if eqx.is_inexact_array(leaf) else leaf, tree)


def _refuse_float64(what: str) -> None:
    """Raise DTypeError when a float64 predictor would be traced where JAX computes in float32."""
    if default_float() != np.float64:  # x64 off, globally and in no jax.enable_x64(True) block
        raise DTypeError(
            f"{what}: this predictor was fitted in float64, and JAX computes in float32 here "
            "(jax_enable_x64 is off), which would truncate its leaves. Call it inside "
            "`with jax.enable_x64(True):` to compute in float64, or convert it once with "
            "`predictor.astype('float32')`.")


class PerOutputGaussian(eqx.Module):
    """Gaussian kernels of one width per output: k_j(x, x') = exp(−‖x − x'‖² / (2σⱼ²)).

    The ``kernel`` of a :class:`PerOutputPredictor`. Calling it gives the d Gram matrices.

    Attributes:
      sigma: (d,) widths σⱼ > 0, one per output (a leaf: differentiate through it).

    Example:
        >>> import jax.numpy as jnp
        >>> k = PerOutputGaussian(jnp.array([1.0, 2.0]))
        >>> k(jnp.zeros((1, 1)), jnp.array([[0.0], [2.0]]))   # (d, n1, n2)
        Array([[[1.        , 0.13533528]],
        <BLANKLINE>
               [[1.        , 0.60653067]]], dtype=float32)
    """

    sigma: jax.Array

    def __init__(self, sigma: Any) -> None:
        if jnp.ndim(sigma) != 1:
            raise ShapeError(f"sigma must be a (d,) vector of widths, one per output; received shape "
                             f"{jnp.shape(sigma)}.")
        self.sigma = Gaussian(sigma).sigma  # the scalar kernel's check: finite and positive

    @full_precision
    def __call__(self, X1: jax.Array, X2: jax.Array) -> jax.Array:
        """(d, n1, n2) Gram matrices, one per output, of X1 (n1, p) and X2 (n2, p)."""
        return jax.vmap(lambda w: Gaussian(w)(X1, X2))(self.sigma)

    @full_precision
    def expansion(self, X: jax.Array, X_fit: jax.Array, coef: jax.Array) -> jax.Array:
        """(m, d) Σᵢ k_j(x, xᵢ) C[i, j] of every output j (what a :class:`PerOutputPredictor` asks
        of its kernel), at X (m, p) with X_fit (n, p) and coef (n, d)."""
        return output_predict(self.sigma, X_fit, coef, X)


class Predictor(eqx.Module):
    """The one interface of every fitted prediction function: a pytree called on (m, p) inputs.

    Every predictor has ``dtype`` (``'float32'`` or ``'float64'``, static), ``n_features`` (p),
    ``n_outputs`` (d), :meth:`astype`, and is called as ``f(X)`` — or ``f(X, tasks)`` for the
    multi-task models (``takes_tasks``), ``tasks`` an (m,) vector of integer task codes, indices
    into the estimator's ``tasks_`` — giving (m, d) outputs, (d,) for a single (p,) input. The
    kernel expansions (:class:`KernelPredictor`) share one set of fields; the other kinds
    (:mod:`jaxmtl.models.predictor_kinds`) hold what their prediction needs.

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxmtl import Gaussian
        >>> f = SeparablePredictor(Gaussian(1.0), jnp.zeros((1, 2)), jnp.ones((1, 1)), jnp.eye(1), jnp.zeros(1))
        >>> isinstance(f, Predictor), f.takes_tasks, f(jnp.zeros((3, 2))).shape
        (True, False, (3, 1))
    """

    takes_tasks: ClassVar[bool] = False

    if TYPE_CHECKING:  # every subclass declares it as a static field, last: 'float32' or 'float64'
        @property
        def dtype(self) -> str: ...

    @property
    @abc.abstractmethod
    def n_features(self) -> int:
        """p, the number of input features."""

    @property
    @abc.abstractmethod
    def n_outputs(self) -> int:
        """d, the number of outputs (classes for a classifier)."""

    @abc.abstractmethod
    def _predict(self, X: jax.Array, *tasks: jax.Array) -> jax.Array:
        """(m, d) outputs at (m, p) inputs already in the predictor's dtype (and (m,) task codes)."""

    @full_precision
    def __call__(self, X: Any, tasks: Any = None) -> jax.Array:
        """(m, p) inputs → (m, d) outputs; a single (p,) input → (d,); in the predictor's dtype.

        Raises ShapeError / DTypeError (before tracing) for inputs of another number of features
        or a non-numeric dtype, and DTypeError for a float64 predictor where JAX computes in
        float32 (see the module doc)."""
        if self.dtype == "float64":
            _refuse_float64("calling a predictor")
        X = self._inputs(X)
        single = X.ndim == 1
        X = jnp.atleast_2d(X)
        shift = getattr(self, "input_offset", None)  # the estimator's centring of its training inputs
        if shift is not None:
            X = X - shift
        if self.takes_tasks:
            F = self._predict(X, check_task_codes(tasks, X.shape[0], single))
        elif tasks is not None:
            raise ParameterError(f"{type(self).__name__} takes no tasks; received tasks={tasks!r}.")
        else:
            F = self._predict(X)
        return F[0] if single else F

    def _inputs(self, X: Any) -> jax.Array:
        """X as an array of the predictor's dtype, after checking its shape and dtype."""
        if not (hasattr(X, "shape") and hasattr(X, "dtype")):
            X = np.asarray(X)
        if not (jnp.issubdtype(X.dtype, jnp.floating) or jnp.issubdtype(X.dtype, jnp.integer)):
            raise DTypeError(f"X must hold real numbers; received dtype {X.dtype}.")
        p = self.n_features
        if len(X.shape) not in (1, 2) or X.shape[-1] != p:
            raise ShapeError(f"X must have shape (m, {p}) or ({p},) (the predictor was fitted on {p} "
                             f"features); received shape {tuple(X.shape)}.")
        return jnp.asarray(X, self.dtype)

    @full_precision
    def astype(self, dtype: Any) -> Predictor:
        """The same predictor with every floating leaf (kernel included) in ``dtype``
        (``'float32'`` or ``'float64'``, or the NumPy type); its ``dtype`` field follows.

        ``astype('float64')`` needs JAX to compute in float64 (``jax_enable_x64``) and raises
        DTypeError otherwise; ``astype('float32')`` works anywhere.

        Example:
            >>> import jax.numpy as jnp
            >>> from jaxmtl import Gaussian
            >>> f = SeparablePredictor(Gaussian(1.0), jnp.zeros((1, 2)), jnp.ones((1, 1)), jnp.eye(1), jnp.zeros(1))
            >>> f.astype("float32").dtype
            'float32'
        """
        try:
            target = None if dtype is None else np.dtype(dtype).name
        except TypeError:
            target = None
        if target not in ("float32", "float64"):
            raise ParameterError(f"dtype must be 'float32' or 'float64'; received {dtype!r}.")
        if target == "float64":
            _refuse_float64("astype('float64')")
        names = [f.name for f in dataclasses.fields(self) if f.name != "dtype"]
        return type(self)(*(_cast(getattr(self, name), target) for name in names))


def check_task_codes(tasks: Any, m: int, single: bool) -> jax.Array:
    """(m,) int32 task codes; ShapeError / DTypeError naming ``tasks`` unless it holds one integer
    per row (a scalar for a single (p,) input). Codes are indices into the estimator's ``tasks_``;
    what an unknown code gives is the predictor's (checked where the codes are concrete)."""
    if tasks is None:
        raise ParameterError("tasks: this predictor needs the (m,) integer task code of every row "
                             "(indices into the estimator's tasks_); received None.")
    if not (hasattr(tasks, "shape") and hasattr(tasks, "dtype")):
        tasks = np.asarray(tasks)
    if not jnp.issubdtype(tasks.dtype, jnp.integer):
        raise DTypeError(f"tasks must hold integer task codes (indices into tasks_); received dtype {tasks.dtype}.")
    expected = () if single else (m,)
    if tuple(tasks.shape) != expected:
        raise ShapeError(f"tasks must have shape {expected}: one task code per row of X; received shape "
                         f"{tuple(tasks.shape)}.")
    return jnp.atleast_1d(jnp.asarray(tasks, jnp.int32))


class KernelPredictor(Predictor):
    """A kernel expansion f(x) = Σᵢ k(x − s, xᵢ) cᵢ · A + b as a pytree; the fields of every one.

    Attributes:
      kernel: the kernel (a pytree): a scalar :class:`~jaxmtl.kernels.Kernel` in a
        :class:`SeparablePredictor`, a per-output kernel (:class:`PerOutputGaussian`, …) in a
        :class:`PerOutputPredictor`.
      X_fit: (n, p) training inputs.
      coef: (n, d) coefficients C.
      output_matrix: (d, d) output matrix A.
      offset: (d,) output offset b (the training mean when the estimator fits an intercept).
      input_offset: (p,) shift subtracted from the inputs before the kernel (the estimator's
        host-side centring of X_fit, for translation-invariant kernels), or None.
      dtype: ``'float32'`` or ``'float64'``, the precision it was fitted in (a static field, that
        of ``X_fit`` when built).

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxmtl import Gaussian
        >>> f = SeparablePredictor(Gaussian(1.0), jnp.zeros((1, 2)), jnp.ones((1, 1)), jnp.eye(1), jnp.zeros(1))
        >>> f(jnp.zeros(2)), f.n_features, f.n_outputs, f.dtype
        (Array([1.], dtype=float32), 2, 1, 'float32')
    """

    kernel: Any
    X_fit: jax.Array
    coef: jax.Array
    output_matrix: jax.Array
    offset: jax.Array
    input_offset: jax.Array | None
    dtype: str = eqx.field(static=True)

    def __init__(self, kernel: Any, X_fit: jax.Array, coef: jax.Array, output_matrix: jax.Array,
                 offset: jax.Array, input_offset: jax.Array | None = None) -> None:
        n, p = _shape(X_fit, "X_fit", 2)
        d = _shape(coef, "coef", 2, (n, None))[1]
        _shape(output_matrix, "output_matrix", 2, (d, d))
        _shape(offset, "offset", 1, (d,))
        if input_offset is not None:
            _shape(input_offset, "input_offset", 1, (p,))
        self.kernel, self.X_fit, self.coef, self.output_matrix = kernel, X_fit, coef, output_matrix
        self.offset, self.input_offset = offset, input_offset
        self.dtype = float_dtype(X_fit, "X_fit")

    @property
    def n_features(self) -> int:
        """p, the number of input features."""
        return int(self.X_fit.shape[1])

    @property
    def n_outputs(self) -> int:
        """d, the number of outputs (classes for a classifier)."""
        return int(self.coef.shape[1])

    @abc.abstractmethod
    def _expansion(self, X: jax.Array) -> jax.Array:
        """(m, d) Σᵢ k(x, xᵢ) cᵢ at (m, p) shifted inputs, before the output matrix and offset."""

    def _predict(self, X: jax.Array, *tasks: jax.Array) -> jax.Array:
        return self._expansion(X) @ self.output_matrix + self.offset


def float_dtype(x: Any, name: str) -> str:
    """'float32' or 'float64', the dtype of the leaf ``x`` (its own: result_type would canonicalize
    it); DTypeError naming ``name`` otherwise."""
    dtype = jnp.dtype(x.dtype).name
    if dtype not in ("float32", "float64"):
        raise DTypeError(f"{name} must be float32 or float64; received dtype {dtype}.")
    return dtype


def _shape(x: Any, name: str, ndim: int, expected: tuple[int | None, ...] | None = None) -> tuple[int, ...]:
    """The shape of a predictor's leaf ``x``; ShapeError naming it unless it has ``ndim`` axes
    matching ``expected`` (None: any length)."""
    shape = tuple(jnp.shape(x))
    if len(shape) != ndim or any(e is not None and s != e for s, e in zip(shape, expected or shape)):
        want = "(" + ", ".join("·" if e is None else str(e) for e in (expected or (None,) * ndim)) + ")"
        raise ShapeError(f"{name} must have shape {want}; received shape {shape}.")
    return shape


class SeparablePredictor(KernelPredictor):
    """f(x) = Σᵢ k(x, xᵢ) cᵢ · A + b for a separable kernel k(x, x')·A: ``kernel`` is one scalar
    :class:`~jaxmtl.kernels.Kernel` (fields: see :class:`Predictor`).

    Example:
        >>> import jax, numpy as np
        >>> from jaxmtl import MultiClassClassifier
        >>> X = np.random.default_rng(0).normal(size=(30, 2))
        >>> f = MultiClassClassifier(n_steps=20).fit(X, np.where(X[:, 0] > 0, "a", "b")).predictor()
        >>> type(f).__name__, f(X[:4]).shape   # one score per class
        ('SeparablePredictor', (4, 2))
    """

    def _expansion(self, X: jax.Array) -> jax.Array:
        return self.kernel(X, self.X_fit) @ self.coef


class PerOutputPredictor(KernelPredictor):
    """f_j(x) = Σᵢ k_{σⱼ}(x, xᵢ) C[i, j] · A[j, j] + b_j: every output j its own Gaussian width σⱼ
    (the independent family of :class:`~jaxmtl.VectorValuedRegressor`); ``kernel`` is a
    :class:`PerOutputGaussian` and A is diagonal (the outputs' scales when ``normalize_y``).
    Fields: see :class:`Predictor`.

    Example:
        >>> import jax, numpy as np
        >>> from jaxmtl import VectorValuedRegressor
        >>> X = np.random.default_rng(0).normal(size=(40, 2)); Y = np.c_[X[:, 0], X[:, 1] ** 2]
        >>> f = VectorValuedRegressor(family="independent").fit(X, Y).predictor()
        >>> type(f).__name__, f.kernel.sigma.shape, jax.jit(lambda model, x: model(x))(f, X[:3]).shape
        ('PerOutputPredictor', (2,), (3, 2))
    """

    @property
    def widths(self) -> jax.Array:
        """(d,) the Gaussian widths, one per output (``kernel.sigma``)."""
        return self.kernel.sigma

    def _expansion(self, X: jax.Array) -> jax.Array:
        return self.kernel.expansion(X, self.X_fit, self.coef)


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
        """The fitted prediction function as a :class:`Predictor` pytree, in the estimator's
        precision (decision scores for classifiers)."""
        X_fit, *leaves = PredictorMixin._leaves(self)
        return SeparablePredictor(_cast(self.kernel_, X_fit.dtype), X_fit, *leaves)

    def _leaves(self: _SeparableFit) -> tuple:
        """(X_fit, coef, output_matrix, offset, input_offset) of the fitted model, in its dtype."""
        self._check_fitted()
        dtype = self.X_fit_.dtype
        return (self.X_fit_, jnp.asarray(self.coef_, dtype), jnp.asarray(self.output_matrix_, dtype),
                jnp.asarray(self.y_mean_, dtype), input_shift(self, dtype))


def input_shift(estimator: Any, dtype: Any, standardised: Any = None) -> jax.Array | None:
    """(p,) the shift a predictor subtracts from its inputs: the estimator's host-side centring
    of its training inputs (``_input_offset_``, translation-invariant kernels) plus the
    ``standardised`` means of an estimator that standardises its inputs; None when both are absent."""
    shifts = [s for s in (getattr(estimator, "_input_offset_", None), standardised) if s is not None]
    return jnp.asarray(sum(np.asarray(s, np.float64) for s in shifts), dtype) if shifts else None
