r"""Mixed-effect multi-task regression ([Din11] ch. 5) as a scikit-learn estimator.

Data in long form (xᵢ, tᵢ, yᵢ); the kernel (5.2) α K̄ + (1 − α) [t = t'] K̃ᵗ; the coefficients of
(5.4) computed by Algorithm 4 (:mod:`jaxmtl.mixed_effect.centralized`), whose cost grows with the
number n of *distinct* inputs (O(Σⱼ ℓⱼ³ + n³)) rather than the number ℓ of examples (O(ℓ³)):
recommender data, where many users rate the same items, have n ≪ ℓ. Predictions are the sum
ḡ + g̃ₜ of an average task and an individual shift (5.3); a task not seen in ``fit`` gets ḡ.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.integers(0, 10, (60, 1)) / 10.0; t = rng.integers(0, 6, 60)
    >>> y = np.sin(6 * X[:, 0]) + 0.3 * t + 0.01 * rng.normal(size=60)
    >>> model = MixedEffectRegressor(alpha=0.5, lam=0.01).fit(X, y, t)
    >>> model.predict(X[:3], t[:3]).shape
    (3,)
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import as_float_array, check_bool, check_fraction, check_random_state
from ..errors import ParameterError, ShapeError
from ..kernels.scalar import Gaussian, Kernel, median_heuristic
from ..mixed_effect.centralized import build_query, predict_query, prepare, solve, task_layout, unique_inputs
from ..mixed_effect.kernel import check_alpha, check_lam, check_kernel, resolve_task_kernel
from ..operators.tasks import check_tasks
from ._base import BaseEstimator, RegressorMixin
from ._precision import in_working_precision

__all__ = ["MixedEffectRegressor"]

ALPHAS = np.linspace(0.0, 1.0, 15)        # [Din11] §5.4: 15 values of α linearly spaced in [0, 1]
LAMS = np.logspace(-7.0, 0.0, 15)         # and 15 values of λ log-spaced in [1e-7, 1]


@partial(jax.jit, static_argnames=("fit_intercept",))
def _with_bias(c_unique, c, fit_intercept: bool):
    """Coefficients with the unpenalized bias b = 1ᵀSy / 1ᵀS1 (columns [y, 1]); b = 0 without."""
    if not fit_intercept:
        return c_unique[:, 0], c[:, 0], jnp.zeros((), c.dtype)
    s = jnp.sum(c, axis=0)
    b = s[0] / s[1]
    return c_unique[:, 0] - b * c_unique[:, 1], c[:, 0] - b * c[:, 1], b


@partial(jax.jit, static_argnames=("fit_intercept", "batch_size"))
def _grid_losses(prep, Y, query, y_val, s_val, grid, fit_intercept: bool, batch_size: int):
    """Weighted validation MSE of Algorithm 4 for every (α, λ) row of ``grid`` (lax.map in batches)."""
    def one(al):
        cu, c, b = _with_bias(*solve(prep, Y, al[0], al[1]), fit_intercept)
        g_bar, g_tilde = predict_query(query, cu, c, al[0])
        return jnp.sum(s_val * (g_bar + g_tilde + b - y_val) ** 2) / jnp.sum(s_val)

    return jax.lax.map(one, grid, batch_size=batch_size)


class MixedEffectRegressor(RegressorMixin, BaseEstimator):
    """Multi-task kernel ridge regression with the mixed-effect kernel (5.2), by Algorithm 4.

    Args:
      alpha: α in [0, 1] (0: separate tasks, 1: one pooled task); None selects it on ``alphas``.
      lam: λ > 0 of (5.4), unnormalised as in the thesis; None selects it on ``lams``.
      kernel: K̄ (default: Gaussian of width the median distance between inputs).
      task_kernel: K̃ʲ: None (= ``kernel``), one kernel for every task, or a mapping task → kernel.
      fit_intercept: an unpenalized bias b shared by all tasks (the thesis's "parametric bias
        term"); False solves (5.4) exactly.
      alphas, lams: the grids searched when ``alpha`` / ``lam`` is None (default: 15 × 15 of
        [Din11] §5.4); every pair is evaluated in one compiled call.
      validation_fraction: share of the examples held out to score the grid.
      random_state: seed of the hold-out split.
      dtype: None (JAX's default), 'float32' or 'float64': the precision of fit and predict whatever
        JAX's global setting (see docs/precision.md); outputs are float64 either way.

    ``sample_weight`` follows scikit-learn: the loss is Σᵢ sᵢ (yᵢ − g(xᵢ, tᵢ))², i.e. the thesis's
    wᵢ = 1/sᵢ in (5.4); examples of weight 0 are dropped.

    Attributes (after fit): alpha_, lam_, intercept_, coef_ (ℓ,) c of (5.4), coef_unique_ (n,)
    č = Pᵀc (5.8), X_unique_ (n, p), X_fit_, task_codes_, tasks_ (labels), kernel_,
    cv_scores_ (len(alphas), len(lams)) validation MSE or None, n_features_in_.
    """

    def __init__(self, alpha: float | None = None, lam: float | None = None, kernel: Kernel | None = None,
                 task_kernel: Any = None, fit_intercept: bool = True, alphas: Any = None, lams: Any = None,
                 validation_fraction: float = 0.2, random_state: int | None = 0, dtype: Any = None):
        self.alpha = alpha
        self.lam = lam
        self.kernel = kernel
        self.task_kernel = task_kernel
        self.fit_intercept = fit_intercept
        self.alphas = alphas
        self.lams = lams
        self.validation_fraction = validation_fraction
        self.random_state = random_state
        self.dtype = dtype

    # ------------------------------------------------------------------ helpers
    def _kernel_of(self, labels):
        """Function task code → K̃ʲ (TaskError for a label missing from a mapping)."""
        lookup, _ = resolve_task_kernel(self.task_kernel, self.kernel_)
        return lambda t: lookup(labels[t].item() if isinstance(labels[t], np.generic) else labels[t])

    def _prepare(self, X, codes, w, labels):
        Xu, inverse = unique_inputs(X)
        layout = task_layout(codes, len(labels), self._kernel_of(labels))
        return Xu, layout, prepare(Xu, inverse, w, layout, self.kernel_)

    def _select(self, X, y, codes, w, s, labels, alphas, lams, fi):
        n_val = int(round(check_fraction(self.validation_fraction, "validation_fraction") * len(y)))
        if n_val < 1 or n_val >= len(y):
            raise ParameterError(f"validation_fraction={self.validation_fraction} leaves {len(y) - n_val} "
                                 f"training and {n_val} validation examples; both must be >= 1.")
        rng = np.random.default_rng(check_random_state(self.random_state))
        val = np.zeros(len(y), bool)
        val[rng.permutation(len(y))[:n_val]] = True
        tr = ~val
        Xu, layout, prep = self._prepare(X[tr], codes[tr], w[tr], labels)
        query = build_query(X[val], layout.slot[codes[val]], Xu, X[tr], layout, self.kernel_)
        grid = np.array([(a, lam) for a in alphas for lam in lams])
        losses = _grid_losses(prep, self._rhs(y[tr], fi, prep), query, jnp.asarray(y[val]), jnp.asarray(s[val]),
                              jnp.asarray(grid), fi, min(len(grid), 15))
        return np.asarray(losses).reshape(len(alphas), len(lams))

    @staticmethod
    def _rhs(y, fi, prep):
        Y = np.c_[y, np.ones_like(y)] if fi else y[:, None]
        return jnp.asarray(Y, prep.C.dtype)

    # ------------------------------------------------------------------ API
    def fit(self, X, y, tasks, sample_weight=None) -> "MixedEffectRegressor":
        """Fit on long-form data X (ℓ, p), y (ℓ,), tasks (ℓ,) (any hashable labels)."""
        X = self._validate_fit_inputs(X)
        y = as_float_array(y, "y", ndim=(1, 2))
        if y.ndim == 2 and y.shape[1] != 1 or y.shape[0] != X.shape[0]:
            raise ShapeError(f"y must be 1-D with one entry per row of X ({X.shape[0]}); received {y.shape}.")
        y = y.reshape(-1).astype(np.float64)
        codes, labels = check_tasks(tasks, X.shape[0])
        fi = check_bool(self.fit_intercept, "fit_intercept")
        alphas = ALPHAS if self.alphas is None else np.atleast_1d(as_float_array(self.alphas, "alphas", ndim=(0, 1)))
        lams = LAMS if self.lams is None else np.atleast_1d(as_float_array(self.lams, "lams", ndim=(0, 1)))
        alphas = [check_alpha(a, "alphas") for a in alphas] if self.alpha is None else [check_alpha(self.alpha)]
        lams = [check_lam(v, "lams") for v in lams] if self.lam is None else [check_lam(self.lam)]
        s = np.ones(len(y)) if sample_weight is None else as_float_array(sample_weight, "sample_weight", ndim=1)
        if s.shape != y.shape:
            raise ShapeError(f"sample_weight must have shape {y.shape}; received {s.shape}.")
        if np.any(s < 0):
            raise ParameterError(f"sample_weight must be non-negative; received {int(np.sum(s < 0))} negative value(s).")
        keep = s > 0
        if not keep.any():
            raise ParameterError("sample_weight is zero everywhere: there is nothing to fit.")
        X, y, s, codes = X[keep], y[keep], s[keep].astype(np.float64), codes[keep]
        w = 1.0 / s
        self.kernel_ = Gaussian(median_heuristic(X)) if self.kernel is None else in_working_precision(check_kernel(self.kernel, "kernel"))
        kernel_of = self._kernel_of(labels)
        for t in range(len(labels)):
            kernel_of(t)
        if len(alphas) * len(lams) > 1:
            self.cv_scores_ = self._select(X, y, codes, w, s, labels, alphas, lams, fi)
            i, j = np.unravel_index(np.argmin(self.cv_scores_), self.cv_scores_.shape)
            self.alpha_, self.lam_ = float(alphas[i]), float(lams[j])
        else:
            self.cv_scores_ = None
            self.alpha_, self.lam_ = alphas[0], lams[0]
        self.alphas_, self.lams_ = np.asarray(alphas), np.asarray(lams)
        Xu, _, prep = self._prepare(X, codes, w, labels)
        cu, c, b = _with_bias(*solve(prep, self._rhs(y, fi, prep), self.alpha_, self.lam_), fi)
        self.coef_unique_, self.coef_, self.intercept_ = np.asarray(cu), np.asarray(c), float(b)
        self.X_unique_, self.X_fit_, self.task_codes_, self.tasks_ = Xu, X, codes, labels
        return self

    def predict_parts(self, X, tasks) -> tuple[np.ndarray, np.ndarray]:
        """(ḡ(X) + intercept, g̃ₜ(X)): the average task and each row's task shift (5.3).

        Rows of a task not seen in ``fit`` get g̃ = 0 (their estimate is the average task).
        """
        X = self._validate_predict_inputs(X)
        arr = np.asarray(tasks)
        if arr.ndim != 1 or arr.shape[0] != X.shape[0]:
            raise ShapeError(f"tasks must be 1-D with one id per row of X ({X.shape[0]}); received {arr.shape}.")
        index = {t: i for i, t in enumerate(self.tasks_.tolist())}
        codes_q = np.array([index.get(t, -1) for t in arr.tolist()], dtype=np.int64)
        layout = task_layout(self.task_codes_, len(self.tasks_), self._kernel_of(self.tasks_))
        slots = np.where(codes_q[:, None] >= 0, layout.slot[np.maximum(codes_q, 0)], -1)
        query = build_query(X.astype(np.float64), slots, self.X_unique_, self.X_fit_, layout, self.kernel_)
        g_bar, g_tilde = predict_query(query, jnp.asarray(self.coef_unique_), jnp.asarray(self.coef_), self.alpha_)
        return np.asarray(g_bar) + self.intercept_, np.asarray(g_tilde)

    def predict(self, X, tasks) -> np.ndarray:
        """(q,) predictions ḡ(x) + g̃ₜ(x) + intercept for inputs X of tasks ``tasks``."""
        g_bar, g_tilde = self.predict_parts(X, tasks)
        return g_bar + g_tilde

    def score(self, X, y, tasks, sample_weight=None) -> float:
        """R² = 1 − Σ s(y − ŷ)² / Σ s(y − ȳ)² of ``predict(X, tasks)`` (scikit-learn's ``r2_score``)."""
        pred = self.predict(X, tasks)
        y = as_float_array(y, "y", ndim=1)
        if y.shape != pred.shape:
            raise ShapeError(f"y must have shape {pred.shape}; received {y.shape}.")
        s = np.ones_like(y) if sample_weight is None else as_float_array(sample_weight, "sample_weight", ndim=1)
        total = np.sum(s * (y - np.average(y, weights=s)) ** 2)
        if not total > 0:
            raise ParameterError("R² is undefined for constant y (its variance is 0).")
        return float(1.0 - np.sum(s * (y - pred) ** 2) / total)
