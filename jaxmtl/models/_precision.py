"""Every estimator's precision and its outputs in scikit-learn's dtypes.

:class:`PrecisionMixin` (a base of every estimator, through ``BaseEstimator``) does two things
for each public method listed in :data:`PRECISION_METHODS`, whichever class or mixin defines it:

* runs it in the precision of the estimator's ``dtype`` parameter (:meth:`_precision`):
  ``'float64'`` / ``'float32'`` whatever JAX's global ``jax_enable_x64``, without changing it,
  or JAX's default when ``dtype`` is None;
* runs it with the matrix-product precision of its ``matmul_precision`` parameter
  (:func:`resolve_matmul_precision`, entered as ``jax.default_matmul_precision``): full float32
  products unless the user trades accuracy for speed; after ``fit`` with reduced products, warns
  when the selected regularisation is below what such products resolve
  (:func:`warn_reduced_products`);
* converts what ``predict``, ``decision_function``, ``predict_proba``, ``score`` and
  ``predict_parts`` return to scikit-learn's conventions (:func:`sklearn_output`): NumPy arrays,
  float64 for real values (predictions, scores, probabilities) whatever precision was used
  inside, class labels in the dtype of ``classes_``, a Python float for ``score``; probabilities
  are renormalised in float64 so that every row sums to 1 to float64's roundoff.

Example:
    >>> import numpy as np, jax
    >>> from jaxmtl import VectorValuedRegressor
    >>> X = np.linspace(0, 1, 20)[:, None]
    >>> model = VectorValuedRegressor(n_steps=20, dtype="float32").fit(X, np.sin(X))
    >>> model.coef_.dtype, model.predict(X).dtype
    (dtype('float32'), dtype('float64'))
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import requested_float
from ..errors import ParameterError

__all__ = ["PrecisionMixin", "PRECISION_METHODS", "sklearn_output", "resolve_dtype", "in_working_precision",
           "MATMUL_PRECISIONS", "resolve_matmul_precision", "kernel_trace", "relative_regularisation",
           "warn_reduced_products"]

# method name -> whether its result is converted to scikit-learn's output conventions
PRECISION_METHODS: dict[str, bool] = {
    "fit": False, "predictor": False, "predict_distribution": False,
    "predict": True, "decision_function": True, "predict_proba": True, "score": True,
    "predict_parts": True,
}


def resolve_dtype(dtype: Any) -> str | None:
    """None, 'float32' or 'float64' from an estimator's ``dtype`` parameter (a name, a NumPy dtype
    or type); anything else raises ParameterError naming the value.

    Example:
        >>> resolve_dtype(np.float32), resolve_dtype(None)
        ('float32', None)
    """
    if dtype is None:
        return None
    try:
        resolved = np.dtype(dtype).name
    except TypeError:
        resolved = None
    if resolved not in ("float32", "float64"):
        raise ParameterError(f"dtype must be None, 'float32' or 'float64'; received {dtype!r}.")
    return resolved


# matmul_precision -> JAX's name (jax.default_matmul_precision). None is full float32 products,
# whatever JAX's global jax_default_matmul_precision (GPUs would otherwise run TF32).
MATMUL_PRECISIONS: dict[Any, str] = {
    None: "highest", "highest": "highest", "float32": "highest",
    "high": "high", "tensorfloat32": "high", "tf32": "high",
    "default": "default", "bfloat16": "default",
}
# explicit mantissa bits of the operands of a product at each JAX setting, on the accelerator where
# it is least precise: 'high' is TF32 on GPUs (bfloat16_3x, ~16 bits, on TPUs), 'default' is
# bfloat16 on TPUs (TF32 on GPUs)
_REDUCED_BITS = {"high": 10, "default": 7}
# reduced products are reported when the selected relative regularisation is below this many times
# their unit roundoff 2^-(bits+1) (see docs/precision.md, "Reduced-precision products")
REDUCED_PRODUCTS_MARGIN = 1.0


def resolve_matmul_precision(value: Any) -> str:
    """JAX's name for an estimator's ``matmul_precision``: 'highest' (None, 'highest', 'float32'),
    'high' ('high', 'tensorfloat32', 'tf32') or 'default' ('default', 'bfloat16'); anything else
    raises ParameterError naming the value.

    Example:
        >>> resolve_matmul_precision(None), resolve_matmul_precision("tf32")
        ('highest', 'high')
    """
    if not (value is None or isinstance(value, str)) or value not in MATMUL_PRECISIONS:
        names = ", ".join(repr(k) for k in MATMUL_PRECISIONS)
        raise ParameterError(f"matmul_precision must be one of {names}; received {value!r}.")
    return MATMUL_PRECISIONS[value]


def kernel_trace(kernel: Any, X: Any, weights: Any = None) -> float:
    """Σᵢ wᵢ K(xᵢ, xᵢ) over the (n, p) inputs X (wᵢ = 1 by default), in float64; the kernel is
    evaluated in the working precision (jnp.asarray narrows float64 inputs without a warning).

    Example:
        >>> from jaxmtl import Gaussian
        >>> kernel_trace(Gaussian(1.0), np.zeros((5, 2)))
        5.0
    """
    diag = np.asarray(kernel.diag(jnp.asarray(np.asarray(X))), np.float64)
    return float(np.sum(diag if weights is None else np.asarray(weights, np.float64) * diag))


def relative_regularisation(estimator: Any) -> float | None:
    """The selected model's regularisation relative to the kernel's scale, ρ, or None when the
    fitted estimator records neither a spectral filter and parameter (``filter_``,
    ``best_params_``) nor a regularised system (``_ridge_system``).

    One scale for every estimator: a Tikhonov-type model solves (G + μI)c = y for the PSD
    matrix G of its kernel on the training examples, and ρ = μ / s with s ≥ λ_max(G) the kernel's
    scale — the trace for a scalar kernel's Gram (Σᵢ K(xᵢ, xᵢ), :func:`kernel_trace`), so that
    ρ ≤ μ / λ_max(G) and 1/ρ bounds the system's condition number.

    * Spectral filters (λ of (K/n + λI), G = K/n): ρ = λ / mean K(x, x) for Tikhonov, iterated
      Tikhonov and TSVD; 1/t for t Landweber steps and 1/t² for t ν-method steps (their residual
      at σ ≪ σ_max behaves as Tikhonov's at λ ≈ σ_max/t and σ_max/t²).
    * Other estimators return (μ, s) from ``_ridge_system()``, each mapping its own objective
      onto this system (the kernel machines' C, RLS2's λ with its scaled basis kernels, the output
      kernel's λ of [DOGP11] (3), the mixed-effect λ of [Din11] (5.4): see their docstrings).

    Per-task or per-class parameters give the smallest ρ.

    Example:
        >>> from jaxmtl import VectorValuedRegressor
        >>> X = np.linspace(0, 1, 20)[:, None]
        >>> m = VectorValuedRegressor(filter="landweber", n_steps=10).fit(X, np.sin(X))
        >>> relative_regularisation(m) == 1 / m.best_params_["param"]
        True
    """
    filt, params = getattr(estimator, "filter_", None), getattr(estimator, "best_params_", None)
    if filt is not None and isinstance(params, dict) and params.get("param") is not None:
        values = np.asarray(params["param"], np.float64)
        if filt.iterative:  # the most steps are the least regularisation
            return 1.0 / float(np.max(values)) ** (2 if filt.name == "nu_method" else 1)
        param = float(np.min(values))
        kernel, X = getattr(estimator, "kernel_", None), getattr(estimator, "X_fit_", None)
        mu, scale = param, (kernel_trace(kernel, X) / len(X) if kernel is not None and X is not None else 1.0)
    elif callable(getattr(estimator, "_ridge_system", None)) and hasattr(estimator, "X_fit_"):
        mu, scale = estimator._ridge_system()
    else:
        return None
    mu, scale = np.broadcast_arrays(np.asarray(mu, np.float64), np.asarray(scale, np.float64))
    return float(np.min(np.where(scale > 0, mu / np.where(scale > 0, scale, 1.0), mu)))


def warn_reduced_products(estimator: Any, matmul_precision: str) -> None:
    """Warn (UserWarning naming ``matmul_precision='highest'`` and ``dtype='float64'``) when
    ``estimator`` was fitted in float32 with reduced products and its selected relative regularisation ρ
    (:func:`relative_regularisation`) is below ``REDUCED_PRODUCTS_MARGIN`` times their unit
    roundoff: its path steps and selection losses then resolve the model to less than the data
    hold (noiseless targets, very small λ, long Landweber or ν-method paths).
    """
    float32 = jax.dtypes.canonicalize_dtype(np.float64) == np.float32  # float64 products are never reduced
    bits = _REDUCED_BITS.get(matmul_precision) if float32 else None
    rho = None if bits is None else relative_regularisation(estimator)
    limit = REDUCED_PRODUCTS_MARGIN * 2.0 ** -(bits + 1) if bits is not None else 0.0
    if rho is not None and rho < limit:
        warnings.warn(
            f"{type(estimator).__name__} selected a regularisation of {rho:.2g} relative to the kernel's "
            f"scale, below the {limit:.2g} that matmul_precision={estimator.matmul_precision!r} products "
            f"resolve on GPUs and TPUs ({bits} mantissa bits); its accuracy may be lost there. Pass "
            "matmul_precision='highest' (or dtype='float64' for regularisation below ~1e-6).",
            UserWarning, stacklevel=3)


def sklearn_output(value: Any, labels: bool = False) -> Any:
    """A method's result in scikit-learn's conventions.

    Real arrays (NumPy or JAX, any float precision) become float64 NumPy arrays; with ``labels``
    (a classifier's ``predict``) arrays keep their dtype (that of ``classes_``); scalars become
    Python floats; tuples (``predict_parts``, ``predict(..., return_std=True)``) are converted
    element by element; anything else is returned unchanged.

    Example:
        >>> import jax.numpy as jnp
        >>> sklearn_output(jnp.ones(2, jnp.float32)).dtype, sklearn_output(np.float32(0.5))
        (dtype('float64'), 0.5)
    """
    if isinstance(value, tuple):
        return type(value)(*(sklearn_output(v, labels) for v in value)) if hasattr(value, "_fields") \
            else tuple(sklearn_output(v, labels) for v in value)
    if isinstance(value, (float, np.floating)) or (isinstance(value, (np.ndarray, jax.Array))
                                                   and np.ndim(value) == 0 and not labels):
        return float(value)
    if isinstance(value, (np.ndarray, jax.Array)):
        arr = np.asarray(value)
        return arr if labels or not np.issubdtype(arr.dtype, np.floating) else arr.astype(np.float64)
    return value


def in_working_precision(tree: Any) -> Any:
    """``tree`` (a kernel, any pytree) with its floating array leaves wider than JAX's current float
    precision narrowed to it, so that a kernel built in a float64 session computes in a float32
    estimator's precision (without JAX's truncation warning); other leaves, weakly typed scalars
    included, are left as they are.

    Example:
        >>> from jaxmtl import Gaussian
        >>> with jax.enable_x64(True):
        ...     k = Gaussian(1.0)
        >>> with jax.enable_x64(False):
        ...     print(in_working_precision(k).sigma.dtype)
        float32
    """
    dtype = jax.dtypes.canonicalize_dtype(np.float64)

    def cast(v):
        wider = (isinstance(v, (np.ndarray, jax.Array)) and np.issubdtype(v.dtype, np.floating)
                 and v.dtype.itemsize > dtype.itemsize)
        return jax.numpy.asarray(np.asarray(v), dtype) if wider else v

    return jax.tree_util.tree_map(cast, tree)


def _in_precision(name: str, method: Callable, convert: bool) -> Callable:
    """``method`` run in the estimator's precision, its result converted when ``convert``."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._precision():
            out = method(self, *args, **kwargs)
            if name == "fit":
                warn_reduced_products(self, resolve_matmul_precision(getattr(self, "matmul_precision", None)))
        if not convert:
            return out
        out = sklearn_output(out, labels=name == "predict" and hasattr(self, "classes_"))
        if name == "predict_proba" and isinstance(out, np.ndarray) and out.ndim == 2:
            out = out / out.sum(axis=1, keepdims=True)  # rows computed in float32 sum to 1 in float64 too
        return out

    wrapper._precision_wrapped = True  # type: ignore[attr-defined]
    return wrapper


class PrecisionMixin:
    """The ``dtype`` and ``matmul_precision`` parameters around the public methods, and
    scikit-learn's output dtypes (see the module docstring). Subclasses need only store ``dtype``
    and ``matmul_precision`` in ``__init__``."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name, convert in PRECISION_METHODS.items():
            method = getattr(cls, name, None)  # defined here, in a base or in a mixin
            if callable(method) and not getattr(method, "_precision_wrapped", False):
                setattr(cls, name, _in_precision(name, method, convert))

    def _precision(self):
        """Context manager setting the precision of this estimator's computations from its ``dtype``
        and the precision of its matrix products from its ``matmul_precision``.

        Both are checked here, before any work (ParameterError naming the value).
        ``dtype=None`` keeps JAX's setting (float32 unless ``jax_enable_x64`` is on);
        ``'float64'`` / ``'float32'`` compute in that precision without changing the global
        configuration (``jax.enable_x64`` is scoped to the ``with`` block and the thread).

        Example:
            >>> from jaxmtl import VectorValuedRegressor
            >>> with VectorValuedRegressor(dtype="float64")._precision():
            ...     import jax.numpy as jnp; print(jnp.ones(1).dtype)
            float64
        """
        resolved = resolve_dtype(getattr(self, "dtype", None))
        products = resolve_matmul_precision(getattr(self, "matmul_precision", None))
        stack = contextlib.ExitStack()
        if resolved is not None:
            stack.enter_context(jax.enable_x64(resolved == "float64"))
            stack.enter_context(requested_float(resolved))  # float32 inputs too take the requested dtype
        stack.enter_context(jax.default_matmul_precision(products))
        return stack
