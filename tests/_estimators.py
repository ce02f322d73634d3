"""Every exported estimator, with small grids, for the tests that run all of them (scikit-learn's
check_estimator, the float32 run, the no-warnings test).

``FAST`` holds, per estimator, settings that keep one fit under a second or two (a short path,
one to three kernel widths, few folds); the defaults themselves are exercised elsewhere.
Estimators whose ``fit`` needs more than (X, y) go through :class:`TasksFromSign` (task labels
from the sign of the first feature: a function of each row alone, so the checks' reorderings and
subsets keep every row's task) or :class:`FieldFromTarget` (the field whose every component is y).
"""

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

import jaxmtl.models as M

FAST = {
    "VectorValuedRegressor": {"n_steps": 30, "width_factors": (0.5, 1.0, 2.0)},
    "MultiClassClassifier": {"n_steps": 30, "width_factors": (0.5, 1.0, 2.0), "n_repeats": 1},
    "MultiTaskRegressor": {"n_steps": 30, "width_factors": (1.0,), "omegas": (0.0, 0.5, 1.0)},
    "VectorFieldRegressor": {"kind": "curl_free", "n_steps": 20, "width_factors": (1.0,), "n_folds": 3},
    "MixedEffectRegressor": {"alphas": (0.25, 0.75), "lams": (1e-3, 1e-1)},
    "KernelMachine": {"Cs": (0.1, 1.0, 10.0), "n_folds": 3},
    "KernelMachineClassifier": {"Cs": (0.1, 1.0, 10.0), "n_folds": 3},
    "RLS2Regressor": {"kernels": "linear", "n_lambdas": 5, "cv": 3},
    "RLS2Classifier": {"kernels": "linear", "n_lambdas": 5, "cv": 3},
    "ApproximateKernelRegressor": {"approximation": "random_features", "n_components": 40, "n_steps": 30,
                                   "width_factors": (0.5, 1.0, 2.0)},
    "OutputKernelRegressor": {"lambdas": (1e-3, 1e-1, 10.0), "width_factors": (1.0,), "n_folds": 3},
    "OutputKernelClassifier": {"lambdas": (1e-3, 1e-1, 10.0), "width_factors": (1.0,), "n_folds": 3},
}
NEEDS_TASKS = ("MultiTaskRegressor", "MixedEffectRegressor")
NAMES = tuple(FAST)


def make(name: str, **params):
    """The estimator ``name`` with the small settings of ``FAST`` (and ``params`` on top)."""
    return getattr(M, name)(**{**FAST[name], **params})


def tasks_of(X) -> np.ndarray:
    """Two tasks by the sign of the first feature (a function of each row alone)."""
    return (np.asarray(X, dtype=float)[:, 0] > 0).astype(int)


class _Adapter(RegressorMixin, BaseEstimator):
    """A regressor of ``fit(X, y)`` form around ``estimator``; X and y are checked by
    scikit-learn's ``validate_data`` (its messages for sparse, empty or 1-D inputs)."""

    def __init__(self, estimator=None):
        self.estimator = estimator

    def fit(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True)
        self.estimator_ = clone(self.estimator).fit(X, *self._targets(X, y))
        return self

    def predict(self, X):
        check_is_fitted(self)
        return self._outputs(self.estimator_, validate_data(self, X, reset=False))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


class TasksFromSign(_Adapter):
    """A task-taking regressor (``fit(X, y, tasks)``) seen as ``fit(X, y)``: tasks = :func:`tasks_of`."""

    @staticmethod
    def _targets(X, y):
        return y, tasks_of(X)

    @staticmethod
    def _outputs(model, X):
        return model.predict(X, tasks_of(X))


class FieldFromTarget(_Adapter):
    """``VectorFieldRegressor`` seen as a scalar regressor: it fits the field V whose p components
    all equal y, and predicts their mean."""

    @staticmethod
    def _targets(X, y):
        return (np.repeat(y[:, None], X.shape[1], axis=1),)

    @staticmethod
    def _outputs(model, X):
        return model.predict(X).mean(axis=1)


def as_xy(name: str, **params):
    """An estimator of ``fit(X, y)`` form: the estimator itself, or its adapter."""
    est = make(name, **params)
    if name in NEEDS_TASKS:
        return TasksFromSign(est)
    if name == "VectorFieldRegressor":
        return FieldFromTarget(est)
    return est


def fit_data(name: str, n: int = 40, seed: int = 0):
    """(fit arguments, predict arguments) for ``name`` on a small smooth problem: two features,
    two outputs (one with tasks), or three classes for a classifier."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    Y = np.c_[np.sin(X[:, 0]) + 0.5 * X[:, 1], np.cos(X[:, 1])] + 0.05 * rng.normal(size=(n, 2))
    if name.endswith("Classifier"):
        labels = (X[:, 0] > 0.5).astype(int) + (X[:, 1] > 0.5)
        return (X, labels), (X,)
    if name in NEEDS_TASKS:
        return (X, Y[:, 0], tasks_of(X)), (X, tasks_of(X))
    return (X, Y), (X,)
