"""The estimators' base classes: scikit-learn's estimator protocol, without importing scikit-learn.

scikit-learn's tools recognise an estimator by its protocol, not by its base class: ``clone``
reads ``get_params``; ``Pipeline``, ``GridSearchCV`` and ``cross_val_score`` (stratified folds for
classifiers) read ``__sklearn_tags__``; metadata routing reads ``get_metadata_routing`` and the
``set_{method}_request`` methods. :class:`BaseEstimator`, :class:`RegressorMixin` and
:class:`ClassifierMixin` implement that protocol here, so that importing the estimators does not
import scikit-learn (about a second: its base module brings scipy.stats, joblib and, where
installed, pandas). The objects only scikit-learn's tools ask for — its tags, its metadata
requests, the metrics of ``score`` — are built from scikit-learn when they are asked for, by
which time the caller has imported it. ``check_estimator`` passes on every estimator
(tests/test_sklearn_compat.py).

Input handling shared by every estimator:

* :meth:`BaseEstimator._validate_fit_inputs` records ``n_features_in_`` and, for a pandas
  DataFrame with string column names, ``feature_names_in_``; for a translation-invariant kernel
  (:meth:`BaseEstimator._shift_invariant`) it centres the inputs on the coordinate-wise median
  **in float64 on the host**, before they are narrowed to the working precision, records the
  shift as ``_input_offset_`` and warns when narrowing merges rows that were distinct
  (:func:`_centre_and_narrow`);
* :meth:`BaseEstimator._validate_predict_inputs` checks that the model is fitted and that new
  inputs have the same features (scikit-learn's messages, so its tools read them), and applies
  the same shift;
* every ``fit`` is atomic (:func:`_atomic_fit`, applied to each subclass by
  ``__init_subclass__``): when it raises, the instance's attributes are restored to what they were
  before the call, so a failed refit leaves the earlier fit exactly as it was;
* :class:`~jaxmtl.models._precision.PrecisionMixin` runs the public methods in the precision of
  the ``dtype`` parameter (float64 or float32 whatever JAX's global ``jax_enable_x64``, or JAX's
  default when ``dtype`` is None) and returns their results in scikit-learn's dtypes.
"""

from __future__ import annotations

import copy
import functools
import inspect
import os
import threading
import warnings
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from .._checks import check_inputs, narrow
from .. import errors
from ..errors import ParameterError, RangeError, ShapeError
from ..filters.spectral import SpectralFilter, get_filter
from ._precision import PrecisionMixin

__all__ = ["BaseEstimator", "RegressorMixin", "ClassifierMixin", "resolve_filter"]

# scikit-learn's metadata-routed methods (sklearn.utils.metadata_routing.SIMPLE_METHODS) and the
# arguments that are data, not metadata
ROUTED_METHODS = ("fit", "partial_fit", "predict", "predict_proba", "predict_log_proba", "decision_function", "score",
                  "split", "transform", "inverse_transform")
_DATA_ARGUMENTS = frozenset({"X", "y", "Y", "Xt", "yt"})
_UNCHANGED = "$UNCHANGED$"  # sklearn.utils.metadata_routing.UNCHANGED: leave a request as it is


def _feature_names(X: Any) -> np.ndarray | None:
    """Column names of a DataFrame-like X when all of them are strings, else None."""
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    names = np.asarray(list(columns), dtype=object)
    if len(names) and all(isinstance(c, str) for c in names):
        return names
    return None


def min_spread(dtype: Any) -> float:
    """Smallest spread s = max |x − offset| of inputs whose kernel values ``dtype`` computes to its eps.

    Squared differences below ``tiny`` (the smallest normal number) are flushed to 0 on CPU and
    GPU; with a width σ ≥ s/2 that changes a kernel value exp(−d²/2σ²) by at most tiny/(2σ²), which
    stays below eps when s ≥ sqrt(tiny/eps) (float32: 3.1e-16; float64: 1e-146).

    Example:
        >>> f"{min_spread(np.float32):.2g}"
        '3.1e-16'
    """
    info = np.finfo(dtype)
    return float(np.sqrt(info.tiny / info.eps))


def _check_spread(X: np.ndarray, name: str) -> None:
    """Refuse inputs whose spread (max |entry|, after centring) is positive but below
    :func:`min_spread` of their dtype: their squared differences underflow to 0."""
    top = float(np.max(np.abs(X))) if X.size else 0.0
    limit = min_spread(X.dtype)
    if 0.0 < top < limit:
        fix = ("pass dtype='float64' (or enable jax_enable_x64) or rescale the features"
               if X.dtype == np.float32 else "rescale the features")
        raise RangeError(f"{name} holds values within {top:.3g} of their centre; in {X.dtype.name} squared "
                         f"differences that small underflow to 0 (smallest safe spread {limit:.3g}): {fix}.")


def _centre_and_narrow(X64: np.ndarray, offset: np.ndarray | None, name: str = "X",
                       warn: bool = False, check_spread: bool = False) -> np.ndarray:
    """Inputs shifted by ``offset`` in float64 on the host, then narrowed to the working precision.

    Args:
      X64: (n, p) float32 or float64 inputs, not yet narrowed.
      offset: (p,) float64 shift, or None (no shift).
      name: the argument's name for messages.
      warn: warn (UserWarning naming ``dtype='float64'``) when narrowing to float32 merges rows
        that are distinct in float64: the information that separates them is lost.
      check_spread: refuse (RangeError) narrowed inputs whose spread is below :func:`min_spread`
        of their dtype (for a model that does not rescale its inputs itself).

    Returns:
      (n, p) array in the working precision (float32 unless x64 is enabled; float32 inputs stay
      float32).

    Example:
        >>> X = np.array([[1e8], [1e8 + 1.0]])
        >>> np.diff(_centre_and_narrow(X, np.median(X, 0))[:, 0]).tolist()
        [1.0]
    """
    shifted = X64 if offset is None else X64.astype(np.float64) - offset
    out = narrow(shifted, name, source=X64.dtype)
    if check_spread:
        _check_spread(out, name)
    if warn and out.dtype != shifted.dtype:
        before = len(np.unique(shifted, axis=0))
        after = len(np.unique(out, axis=0))
        if after < before:
            warnings.warn(
                f"{name} loses the information separating its rows when narrowed from {shifted.dtype} to "
                f"{out.dtype}: {before} distinct rows become {after}. Pass dtype='float64' (or enable "
                "jax_enable_x64), or rescale the features.", UserWarning, stacklevel=4)
    return out


_IN_FIT = threading.local()  # ids of the instances whose fit is running in this thread


def _snapshot(state: dict) -> dict:
    """A deep copy of an instance's ``__dict__`` that shares its immutable JAX parts.

    JAX arrays, equinox modules (kernels, filters, predictors), device meshes and devices cannot
    change in place (and devices cannot be copied), so they are kept as they are; everything else (NumPy arrays, lists, dicts, nested estimators) is
    copied, so that a ``fit`` that mutates an attribute in place cannot alter the snapshot.
    """
    import equinox as eqx

    memo: dict = {}
    for leaf in jax.tree_util.tree_leaves(state, is_leaf=lambda x: isinstance(x, eqx.Module)):
        if isinstance(leaf, (jax.Array, eqx.Module, jax.sharding.Mesh, jax.Device)):
            memo[id(leaf)] = leaf
    return copy.deepcopy(state, memo)


def _atomic_fit(fit):
    """Wrap a ``fit`` method so that an exception leaves the instance exactly as before the call.

    The instance's ``__dict__`` (parameters and fitted attributes) is snapshotted on entry
    (:func:`_snapshot`) and put back, attributes added by the failed call removed, when ``fit``
    raises; the exception then propagates unchanged. A ``fit`` called from inside another
    ``fit`` of the same instance (``super().fit``) is covered by the outer call.

    Example:
        >>> import numpy as np
        >>> from jaxmtl import VectorValuedRegressor
        >>> m = VectorValuedRegressor().fit(np.arange(20.0)[:, None], np.arange(20.0))
        >>> before = m.predict(np.ones((1, 1)))
        >>> try:
        ...     m.fit(np.full((20, 1), np.nan), np.arange(20.0))
        ... except ValueError:
        ...     pass
        >>> bool(np.array_equal(m.predict(np.ones((1, 1))), before))
        True
    """
    if getattr(fit, "_jaxmtl_atomic", False):
        return fit

    @functools.wraps(fit)
    def atomic(self, *args, **kwargs):
        active = getattr(_IN_FIT, "ids", None)
        if active is None:
            active = _IN_FIT.ids = set()
        if id(self) in active:
            return fit(self, *args, **kwargs)
        saved = _snapshot(self.__dict__)
        active.add(id(self))
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise
        finally:
            active.discard(id(self))

    atomic._jaxmtl_atomic = True  # type: ignore[attr-defined]
    return atomic


def _metadata_arguments(cls: type, method: str) -> list[str]:
    """The metadata arguments of ``cls.<method>`` as scikit-learn's routing reads them: its
    arguments after ``self`` other than the data (X, y, Y) and ``*args`` / ``**kwargs``.

    Example:
        >>> class Model:
        ...     def fit(self, X, y, tasks=None, **kwargs): ...
        >>> _metadata_arguments(Model, "fit"), _metadata_arguments(Model, "predict")
        (['tasks'], [])
    """
    method_fn = getattr(cls, method, None)
    if not inspect.isfunction(method_fn):
        return []
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [p.name for p in list(inspect.signature(method_fn).parameters.values())[1:]
            if p.name not in _DATA_ARGUMENTS and p.kind not in variadic]


def _request_setter(method: str, arguments: list[str]):
    """``set_{method}_request(**aliases)``, as scikit-learn's ``RequestMethod`` makes it: records,
    for metadata routing, whether each metadata argument of ``method`` is requested (True, False,
    None or an alias); only while routing is enabled (``sklearn.set_config(enable_metadata_routing=True)``)."""

    def set_request(self, **aliases):
        import sklearn
        from sklearn.utils.metadata_routing import UNCHANGED

        if not sklearn.get_config().get("enable_metadata_routing", False):
            raise RuntimeError("This method is only available when metadata routing is enabled. You can enable it "
                               "using sklearn.set_config(enable_metadata_routing=True).")
        unknown = set(aliases) - set(arguments)
        if unknown:
            raise TypeError(f"Unexpected args: {unknown} in {method}. Accepted arguments are: {set(arguments)}")
        requests = self._get_metadata_request()
        for name, alias in aliases.items():
            if alias is not UNCHANGED:
                getattr(requests, method).add_request(param=name, alias=alias)
        self._metadata_request = requests
        return self

    set_request.__name__ = set_request.__qualname__ = f"set_{method}_request"
    set_request.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(a, inspect.Parameter.KEYWORD_ONLY, default=_UNCHANGED, annotation="bool | str | None")
           for a in arguments], return_annotation="BaseEstimator")
    set_request.__doc__ = (f"Request metadata passed to ``{method}`` (scikit-learn's metadata routing): "
                           f"each of {', '.join(arguments)} True, False, None or an alias. Returns self.")
    return set_request


class BaseEstimator(PrecisionMixin):
    """Stores ``__init__`` keyword arguments unchanged; ``get_params`` / ``set_params`` read
    and write them, as scikit-learn's ``BaseEstimator`` does; ``__sklearn_tags__`` and metadata
    routing as scikit-learn's tools read them (module docstring).

    Every subclass's ``fit`` is made atomic (:func:`_atomic_fit`), and every method with metadata
    arguments gets its ``set_{method}_request`` (``MultiTaskRegressor().set_fit_request(tasks=True)``)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fit = getattr(cls, "fit", None)
        if callable(fit) and not getattr(fit, "_jaxmtl_atomic", False):
            setattr(cls, "fit", _atomic_fit(fit))
        for method in ROUTED_METHODS:
            arguments = _metadata_arguments(cls, method)
            if arguments:
                setattr(cls, f"set_{method}_request", _request_setter(method, arguments))

    if TYPE_CHECKING:  # parameters are set by each subclass's __init__, which the shared code reads
        def __getattr__(self, name: str) -> Any: ...

    def _get_metadata_request(self) -> Any:
        """scikit-learn's ``MetadataRequest`` of this instance: the requests set so far, else each
        routed method's metadata arguments unrequested (None)."""
        from sklearn.utils.metadata_routing import MetadataRequest

        if hasattr(self, "_metadata_request"):
            return copy.deepcopy(self._metadata_request)
        requests = MetadataRequest(owner=type(self).__name__)
        for method in ROUTED_METHODS:
            for name in _metadata_arguments(type(self), method):
                getattr(requests, method).add_request(param=name, alias=None)
        return requests

    def get_metadata_routing(self) -> Any:
        """The metadata this estimator requests, for scikit-learn's metadata routing."""
        return self._get_metadata_request()

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p not in ("self", "args", "kwargs")]

    def get_params(self, deep: bool = True) -> dict:
        """The constructor arguments as a dict."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params) -> "BaseEstimator":
        """Set constructor arguments; unknown names raise ParameterError."""
        valid = self._param_names()
        for key, value in params.items():
            if key not in valid:
                raise ParameterError(
                    f"{type(self).__name__} has no parameter {key!r}; valid: {valid}."
                )
            setattr(self, key, value)
        return self

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "n_features_in_")

    def __sklearn_tags__(self):
        from sklearn.utils import InputTags, Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=True), input_tags=InputTags(allow_nan=False))

    def _check_fitted(self, attribute: str = "coef_") -> None:
        if not hasattr(self, attribute):
            raise errors.NotFittedError(
                f"This {type(self).__name__} is not fitted yet; call fit(...) before using it."
            )

    def _rescales_inputs(self) -> bool:
        """True for a model that divides its inputs by their spread itself (RLS2's standardisation):
        inputs of tiny spread are then fine; the others refuse them (:func:`_check_spread`)."""
        return False

    def _shift_invariant(self) -> bool:
        """Whether the fitted model is unchanged when all inputs move by the same vector.

        True when every kernel the model evaluates on the inputs — ``kernel`` (one kernel or a list
        to choose from) and, where the estimator has one, ``task_kernel`` (one kernel or a mapping
        task → kernel) — is
        translation-invariant (Gaussian, Laplacian, Matérn: they depend on x − x' only) or the
        default (None: a Gaussian); False when any is Linear, Polynomial, SobolevSpline or a kernel
        this library does not know, whose inputs are used as given.
        """
        from collections.abc import Mapping

        from ..kernels.scalar import Gaussian, Laplacian, Matern

        kernel = getattr(self, "kernel", None)
        kernels = list(kernel) if isinstance(kernel, (list, tuple)) else [kernel]
        task_kernel = getattr(self, "task_kernel", None)
        kernels += list(task_kernel.values()) if isinstance(task_kernel, Mapping) else [task_kernel]
        return all(k is None or isinstance(k, (Gaussian, Laplacian, Matern)) for k in kernels)

    def _validate_fit_inputs(self, X: Any) -> np.ndarray:
        """(n, p) float inputs for ``fit``; records ``n_features_in_`` and ``feature_names_in_``.

        For a shift-invariant model the inputs are centred on their coordinate-wise median in
        float64 before they are narrowed (the shift, ``_input_offset_``, is applied again in
        prediction): ``X + 1e8`` fits as ``X`` does in float32.
        """
        names = _feature_names(X)
        arr = check_inputs(X, allow_1d=False, keep_float64=True)
        offset = np.median(arr.astype(np.float64), axis=0) if self._shift_invariant() else None
        arr = _centre_and_narrow(arr, offset, warn=True, check_spread=not self._rescales_inputs())
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_features_in_ = arr.shape[1]
        self._input_offset_ = offset
        return arr

    def _validate_predict_inputs(self, X: Any) -> np.ndarray:
        """(m, p) float inputs for prediction, checked against what ``fit`` saw."""
        self._check_fitted()
        names = _feature_names(X)
        fitted = getattr(self, "feature_names_in_", None)
        name = type(self).__name__
        if fitted is not None and names is None:
            warnings.warn(f"X does not have valid feature names, but {name} was fitted with feature names",
                          UserWarning, stacklevel=3)
        elif fitted is None and names is not None:
            warnings.warn(f"X has feature names, but {name} was fitted without feature names",
                          UserWarning, stacklevel=3)
        elif fitted is not None and names is not None and (
                len(fitted) != len(names) or np.any(fitted != names)):
            raise ShapeError(
                "The feature names should match those that were passed during fit; "
                f"fitted with {list(fitted)}, received {list(names)}."
            )
        arr = check_inputs(X, allow_1d=False, keep_float64=True)
        if arr.shape[1] != self.n_features_in_:
            raise ShapeError(
                f"X has {arr.shape[1]} features, but {name} is expecting {self.n_features_in_} "
                "features as input."
            )
        return _centre_and_narrow(arr, getattr(self, "_input_offset_", None))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Save the fitted estimator to a portable file; see :func:`jaxmtl.io.save`."""
        from ..io import save

        save(self, path)


class RegressorMixin:
    """Marks a regressor (scikit-learn's tags) and scores it by R², as ``sklearn.base.RegressorMixin``."""

    _estimator_type = "regressor"

    def __sklearn_tags__(self):
        from sklearn.utils import RegressorTags

        tags = super().__sklearn_tags__()  # type: ignore[misc]
        tags.estimator_type = "regressor"
        tags.regressor_tags = RegressorTags()
        tags.target_tags.single_output = True
        tags.target_tags.multi_output = True
        return tags

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """R² of ``self.predict(X)`` against y (averaged over outputs), as ``sklearn.metrics.r2_score``."""
        from sklearn.metrics import r2_score

        return float(r2_score(y, self.predict(X), sample_weight=sample_weight))  # type: ignore[attr-defined]


class ClassifierMixin:
    """Marks a classifier (scikit-learn's tags) and scores it by accuracy, as ``sklearn.base.ClassifierMixin``."""

    _estimator_type = "classifier"

    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags

        tags = super().__sklearn_tags__()  # type: ignore[misc]
        tags.estimator_type = "classifier"
        tags.classifier_tags = ClassifierTags(multi_class=True)
        return tags

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Accuracy of ``self.predict(X)`` against y, as ``sklearn.metrics.accuracy_score``."""
        from sklearn.metrics import accuracy_score

        return float(accuracy_score(y, self.predict(X), sample_weight=sample_weight))  # type: ignore[attr-defined]


def resolve_filter(spec: Any, independent: bool = False) -> SpectralFilter:
    """The filter a family runs: ``spec`` (a :class:`~jaxmtl.filters.SpectralFilter` or its name)
    for every family, or for ``spec=None`` the ν-method in the coupled families (their path scales
    matrix-free) and Tikhonov in the independent one (``independent=True``): there every task or
    output is its own KernelRidge, the baseline that family must contain, and its
    eigendecomposition makes every λ free.

    Example:
        >>> resolve_filter(None).name, resolve_filter(None, independent=True).name
        ('nu_method', 'tikhonov')
    """
    if spec is None:
        return get_filter("tikhonov" if independent else "nu_method")
    return get_filter(spec)
