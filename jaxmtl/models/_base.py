"""The estimators' base class: scikit-learn's conventions, and scikit-learn's own classes when installed.

When scikit-learn is importable, :class:`BaseEstimator` derives from ``sklearn.base.BaseEstimator``
and the regressors / classifiers mix in ``RegressorMixin`` / ``ClassifierMixin``, so that
``clone``, ``Pipeline``, ``GridSearchCV``, ``cross_val_score`` (stratified folds for classifiers,
through ``is_classifier``) and ``check_estimator`` recognise them. Without scikit-learn the same
interface (``get_params``, ``set_params``, ``score``) is provided here, and jaxmtl has no hard
dependency on it.

Input handling shared by every estimator:

* :meth:`BaseEstimator._validate_fit_inputs` records ``n_features_in_`` and, for a pandas
  DataFrame with string column names, ``feature_names_in_``;
* :meth:`BaseEstimator._validate_predict_inputs` checks that the model is fitted and that new
  inputs have the same features (scikit-learn's messages, so its tools read them);
* :class:`~jaxmtl.models._precision.PrecisionMixin` runs the public methods in the precision of
  the ``dtype`` parameter (float64 or float32 whatever JAX's global ``jax_enable_x64``, or JAX's
  default when ``dtype`` is None) and returns their results in scikit-learn's dtypes.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import numpy as np

from .._checks import check_inputs
from ..errors import NotFittedError, ParameterError, ShapeError
from ._precision import PrecisionMixin

try:  # scikit-learn is optional: use its base classes when it is installed
    from sklearn.base import BaseEstimator as _SklearnBase
    from sklearn.base import ClassifierMixin as _SklearnClassifierMixin
    from sklearn.base import RegressorMixin as _SklearnRegressorMixin

    HAVE_SKLEARN = True
except ImportError:  # pragma: no cover - exercised only without scikit-learn
    HAVE_SKLEARN = False
    _SklearnBase = object

    class _SklearnRegressorMixin:  # type: ignore[no-redef]
        _estimator_type = "regressor"

    class _SklearnClassifierMixin:  # type: ignore[no-redef]
        _estimator_type = "classifier"


__all__ = ["BaseEstimator", "RegressorMixin", "ClassifierMixin", "HAVE_SKLEARN"]


def _feature_names(X: Any) -> np.ndarray | None:
    """Column names of a DataFrame-like X when all of them are strings, else None."""
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    names = np.asarray(list(columns), dtype=object)
    if len(names) and all(isinstance(c, str) for c in names):
        return names
    return None


class BaseEstimator(PrecisionMixin, _SklearnBase):
    """Stores ``__init__`` keyword arguments unchanged; ``get_params`` / ``set_params`` read
    and write them, as scikit-learn's ``BaseEstimator`` does (and is, when installed)."""

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
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.target_tags.required = True
        return tags

    def _check_fitted(self, attribute: str = "coef_") -> None:
        if not hasattr(self, attribute):
            raise NotFittedError(
                f"This {type(self).__name__} is not fitted yet; call fit(...) before using it."
            )

    def _validate_fit_inputs(self, X: Any) -> np.ndarray:
        """(n, p) float inputs for ``fit``; records ``n_features_in_`` and ``feature_names_in_``."""
        names = _feature_names(X)
        arr = check_inputs(X, allow_1d=False)
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_features_in_ = arr.shape[1]
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
        arr = check_inputs(X, allow_1d=False)
        if arr.shape[1] != self.n_features_in_:
            raise ShapeError(
                f"X has {arr.shape[1]} features, but {name} is expecting {self.n_features_in_} "
                "features as input."
            )
        return arr

    def save(self, path) -> None:
        """Save the fitted estimator to a portable file; see :func:`jaxmtl.io.save`."""
        from ..io import save

        save(self, path)


class RegressorMixin(_SklearnRegressorMixin):
    """Marks a regressor (scikit-learn's ``RegressorMixin`` when installed)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.single_output = True
        tags.target_tags.multi_output = True
        return tags


class ClassifierMixin(_SklearnClassifierMixin):
    """Marks a classifier (scikit-learn's ``ClassifierMixin`` when installed)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags
