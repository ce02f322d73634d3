r"""Multi-task regression with different inputs per task ([BRBV11] §6).

Data in long form (xᵢ, tᵢ, yᵢ); the joint kernel Q((x,t),(x',t')) = K(x,x')·A_ω[t,t'] with the
common-similarity family A_ω = ω11ᵀ + (1−ω)I (eq. 18): ω = 0 is exactly independent tasks
(one shared width), ω = 1 one pooled function. Q is not a Kronecker product: up to
``EXACT_MAX_UNKNOWNS`` rows it is materialised and eigendecomposed per ω (every filter, LOO and
GCV; :mod:`jaxmtl.paths.dense`), above that the path is matrix-free (:mod:`jaxmtl.paths.scan`):
Q_ω C = ωKC + (1−ω)(K∘S)C with the same-task part K∘S stored once as per-task blocks
(:class:`~jaxmtl.operators.TaskBlocks`), the ω grid vmapped (stacked right-hand sides), steps
scanned.

Example:
    >>> import numpy as np
    >>> from jaxmtl.datasets import make_multitask_toy
    >>> d = make_multitask_toy(15, 0)
    >>> model = MultiTaskRegressor(n_steps=50).fit(d.x, d.y, d.tasks)
    >>> model.predict(d.x[:3], d.tasks[:3]).shape
    (3,)
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_bool, check_outputs, check_unit_interval
from ..errors import ParameterError, ShapeError
from ..kernels.scalar import Kernel
from ..operators.tasks import (
    CommonSimilarityTaskOperator,
    blocks_pay_off,
    check_tasks,
    same_task_mask,
    task_block_index,
    task_blocks,
)
from ._base import RegressorMixin
from ._matrix_free import _MatrixFreeEstimator

__all__ = ["MultiTaskRegressor"]


def _same_task(rows, cols):
    """Data for the same-task part: per-task block ids, or the dense mask when blocks would not pay."""
    ri, ci = task_block_index(rows, cols)
    if blocks_pay_off(ri, ci, len(rows), len(cols)):
        return jnp.asarray(ri), jnp.asarray(ci), None
    return None, None, same_task_mask(rows, cols)


def _operator(K, omega, row_index, col_index, S):
    KS = K * S.astype(K.dtype) if S is not None else task_blocks(K, row_index, col_index)
    return CommonSimilarityTaskOperator(K, KS, omega)


def _build(kern, omega, data):
    X, *same = data
    return _operator(kern(X, X), omega, *same)


@jax.jit
def _predict(kern, omega, X_new, X_fit, same, coef):
    return _operator(kern(X_new, X_fit), omega, *same).mv(coef)[:, 0]


class MultiTaskRegressor(RegressorMixin, _MatrixFreeEstimator):
    """Multi-task kernel regression with the common-similarity kernel and an iterative filter.

    Args:
      kernel: scalar kernel; None selects a Gaussian width from median × 4ᵏ, k = −2 … 3,
        refined around the best (or ``median × width_factors`` when given).
      omegas: ω grid in [0, 1] (default 0, 0.1, …, 1): ω = 0 independent tasks, 1 pooled.
      filter: 'nu_method' (default), 'landweber'; on the exact route also 'tikhonov', 'tsvd',
        'iterated_tikhonov' (or an instance).
      n_steps: path length (default 300 for the ν-method, 3000 for Landweber, evaluated on a
        geometric grid and continued when the best step is the last).
      selection: 'holdout', 'kfold' (folds vmapped), on the exact route also 'loo' and 'gcv'
        (closed form), or boolean training masks (k, N) / (N,).
      n_folds, validation_fraction, width_factors, random_state: as in
        :class:`~jaxmtl.VectorValuedRegressor`.
      fit_intercept: centre y on its training mean.
      lambdas: λ grid of a closed-form filter, relative to the Gram's mean diagonal (default 30
        values in [1e-6, 1]).
      route: 'auto' (exact up to ``EXACT_MAX_UNKNOWNS`` = 1500 rows, else matrix-free), 'exact'
        or 'matrix_free'.
      verbose: print each stage of the fit with its time, and a bar of the steps done on the
        matrix-free route, on stderr.

    Attributes (after fit): coef_ (N, 1), kernel_, route_, best_params_ (kernel_width, omega,
    param = steps or λ), cv_scores_ (n_kernels, n_omegas, n_params), path_params_ (the steps or
    λ scored), tasks_ (task labels), n_features_in_.
    """

    def __init__(self, kernel: Kernel | None = None, omegas: Any = None, filter: Any = "nu_method",
                 n_steps: int | None = None, selection: str = "holdout", n_folds: int = 5,
                 validation_fraction: float = 0.25, width_factors: Any = None,
                 fit_intercept: bool = True, random_state: int = 0, lambdas: Any = None,
                 route: str = "auto", verbose: bool = False):
        self.kernel = kernel
        self.omegas = omegas
        self.filter = filter
        self.n_steps = n_steps
        self.selection = selection
        self.n_folds = n_folds
        self.validation_fraction = validation_fraction
        self.width_factors = width_factors
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.lambdas = lambdas
        self.route = route
        self.verbose = verbose

    def fit(self, X, y, tasks) -> "MultiTaskRegressor":
        """Fit on long-form data.

        Args:
          X: (N, p) inputs; y: (N,) outputs; tasks: (N,) task ids (any hashable labels).
        """
        X = self._validate_fit_inputs(X)
        Y, _ = check_outputs(y, X.shape[0], "y")
        if Y.shape[1] != 1:
            raise ShapeError(f"y must be 1-D (one output per example); received shape {Y.shape}.")
        codes, self.tasks_ = check_tasks(tasks, X.shape[0])
        omegas = np.linspace(0, 1, 11) if self.omegas is None else self.omegas
        omegas = check_unit_interval(omegas, "omegas")
        self.y_mean_ = float(Y.mean()) if check_bool(self.fit_intercept, "fit_intercept") else 0.0
        Y = (Y - self.y_mean_).astype(X.dtype)
        Xj = jnp.asarray(X)
        self._select_and_fit(X, Y, _build, omegas, (Xj, *_same_task(codes, codes)),
                             lambda rows: (Xj[rows], *_same_task(codes[rows], codes[rows])))
        self.best_params_["omega"] = self._op_param
        self.X_fit_, self.task_codes_ = Xj, jnp.asarray(codes)
        return self

    def predict(self, X, tasks) -> np.ndarray:
        """(m,) predictions for inputs X of the given (known) tasks."""
        X = self._validate_predict_inputs(X)
        codes, _ = check_tasks(tasks, X.shape[0], known=self.tasks_)
        same = _same_task(codes, np.asarray(self.task_codes_))
        F = _predict(self.kernel_, jnp.asarray(self._op_param, self.X_fit_.dtype),
                     jnp.asarray(X, self.X_fit_.dtype), self.X_fit_, same, self.coef_)
        return np.asarray(F) + self.y_mean_

    def score(self, X, y, tasks) -> float:
        """Explained variance 1 − MSE / Var(y) over all tasks (the School score)."""
        pred = self.predict(X, tasks)
        y, _ = check_outputs(y, pred.shape[0], "y")
        y = y[:, 0]
        if not np.var(y) > 0:
            raise ParameterError("explained variance is undefined for constant y (its variance is 0).")
        return float(1.0 - np.mean((y - pred) ** 2) / np.var(y))
