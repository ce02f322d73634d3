"""Every estimator's precision and its outputs in scikit-learn's dtypes.

:class:`PrecisionMixin` (a base of every estimator, through ``BaseEstimator``) does two things
for each public method listed in :data:`PRECISION_METHODS`, whichever class or mixin defines it:

* runs it in the precision of the estimator's ``dtype`` parameter (:meth:`_precision`):
  ``'float64'`` / ``'float32'`` whatever JAX's global ``jax_enable_x64``, without changing it,
  or JAX's default when ``dtype`` is None;
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
from typing import Any, Callable

import jax
import numpy as np

from ..errors import ParameterError

__all__ = ["PrecisionMixin", "PRECISION_METHODS", "sklearn_output", "resolve_dtype", "in_working_precision"]

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
        if not convert:
            return out
        out = sklearn_output(out, labels=name == "predict" and hasattr(self, "classes_"))
        if name == "predict_proba" and isinstance(out, np.ndarray) and out.ndim == 2:
            out = out / out.sum(axis=1, keepdims=True)  # rows computed in float32 sum to 1 in float64 too
        return out

    wrapper._precision_wrapped = True  # type: ignore[attr-defined]
    return wrapper


class PrecisionMixin:
    """The ``dtype`` parameter's precision around the public methods, and scikit-learn's output
    dtypes (see the module docstring). Subclasses need only store ``dtype`` in ``__init__``."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name, convert in PRECISION_METHODS.items():
            method = getattr(cls, name, None)  # defined here, in a base or in a mixin
            if callable(method) and not getattr(method, "_precision_wrapped", False):
                setattr(cls, name, _in_precision(name, method, convert))

    def _precision(self):
        """Context manager setting the precision of this estimator's computations from its ``dtype``.

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
        if resolved is None:
            return contextlib.nullcontext()
        return jax.enable_x64(resolved == "float64")
