r"""Mixed-effect multi-task regression ([Din11] ch. 5) as a scikit-learn estimator.

Data in long form (xᵢ, tᵢ, yᵢ); the kernel (5.2) α K̄ + (1 − α) [t = t'] K̃ᵗ; the coefficients of
(5.4) computed by Algorithm 4 (:mod:`jaxmtl.mixed_effect.centralized`), whose cost grows with the
number n of *distinct* inputs (O(Σⱼ ℓⱼ³ + n³)) rather than the number ℓ of examples (O(ℓ³)):
recommender data, where many users rate the same items, have n ≪ ℓ. Where ℓ is not much larger
than n, the (α, λ) grid is scored on a λ path instead, one ℓ × ℓ eigendecomposition per α
(:func:`~jaxmtl.mixed_effect.centralized.solve_path`), whichever costs less. Predictions are the sum
ḡ + g̃ₜ of an average task and an individual shift (5.3); a task not seen in ``fit`` gets ḡ. The
compiled calls see the examples, the distinct inputs, the validation rows and each kernel's task
blocks padded to their size buckets (:func:`_padded_size`, docs/design.md, "Size buckets"): every n of a
bucket runs the same programs.

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

import warnings
from functools import partial
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from .._checks import as_float_array, check_bool, check_fraction, check_random_state
from .._jit import jit
from ..errors import ParameterError, ShapeError
from ..kernels.scalar import Gaussian, Kernel, median_heuristic
from ..mixed_effect.centralized import (build_query, merge_repeats, predict_query, prepare, solve, solve_path,
                                        task_layout, unique_inputs)
from ..mixed_effect.kernel import check_alpha, check_lam, check_kernel, resolve_task_kernel
from ..operators.tasks import check_tasks
from ._base import BaseEstimator, RegressorMixin
from ._buckets import pad_rows, size_bucket, task_block
from ._precision import in_working_precision, kernel_trace
from ._row_blocks import in_row_blocks
from .predictor_kinds import TaskPredictor
from .predictors import PerOutputGaussian, _cast, input_shift

__all__ = ["MixedEffectRegressor"]

ALPHAS = np.linspace(0.0, 1.0, 15)        # [Din11] §5.4: 15 values of α linearly spaced in [0, 1]
LAMS = np.logspace(-7.0, 0.0, 15)         # and 15 values of λ log-spaced in [1e-7, 1]
FLOAT32_LIMIT = 1e-3                      # largest eps₃₂·κ (condition bound) computed in float32 without a warning
FLOAT32_REFUSE = 1e-2                     # eps₃₂·κ beyond which an explicit (α, λ) is refused in float32
ERROR_RATIO = 14.0                        # measured: float32 error ≤ 14·eps₃₂·κ × the outputs' scale
F64_FIX = "compute in float64 (jax.config.update('jax_enable_x64', True), or fit inside jax.enable_x64(True))"


def _padded_size(count: int, size: int) -> int:
    """The length ``count`` rows are padded to: ``size`` — what the same split of every n of a
    bucket holds at most, or the examples' length for their distinct inputs — where ``count`` is
    within the ladder's 1/8 of it (as many distinct inputs as examples: continuous inputs), else
    the size bucket of ``count`` (inputs repeated across tasks: Algorithm 4's n³ reads the
    distinct inputs, which padding to the examples' length would multiply).

    Example:
        >>> _padded_size(30, 32), _padded_size(32, 32), _padded_size(12, 32)
        (32, 32, 12)
    """
    return size if count <= size and 8 * count >= 7 * size else size_bucket(count)


def _padded_inputs(X_unique: np.ndarray, size: int) -> np.ndarray:
    """The distinct inputs of examples padded to ``size`` rows, zero rows appended up to
    :func:`_padded_size`'s length."""
    return pad_rows(X_unique, _padded_size(len(X_unique), size))


def condition_bound(prep, inverse: np.ndarray, w: np.ndarray, alpha, lam):
    """An upper bound κ on the condition numbers of Algorithm 4's solves, per (α, λ) (broadcast).

    With sᵢ = 1/wᵢ and Sᵢ the sum of s over the examples at distinct input i, Rʲ ≼ (λWʲ)⁻¹ gives
    G ≼ diag(S)/λ, so I + αCᵀGC has condition number at most 1 + α‖diag(S)^½ Ǩ diag(S)^½‖/λ; the
    per-task systems (1 − α)K̃ʲ + λWʲ at most 1 + (1 − α) maxⱼ ‖Wʲ^-½ K̃ʲ Wʲ^-½‖∞/λ. κ is the larger.
    Measured on 4 data sets with repeated inputs (80 examples on 6–40 distinct inputs, 3–10 tasks,
    Gaussian kernels) × 8 λ in [1e-7, 1] × 4 α: float32's error against a float64 dense solve was at
    most 14·eps₃₂·κ times the outputs' scale (1.6·eps₃₂·κ for α < 1).

    Args:
      prep: :func:`~jaxmtl.mixed_effect.centralized.prepare`'s output; inverse: (ℓ,) example →
        distinct input; w: (ℓ,) weights; alpha, lam: scalars or arrays (broadcast).

    Returns:
      κ with the broadcast shape of alpha and lam.
    """
    C = np.asarray(prep.C, np.float64)
    S = np.bincount(inverse, weights=1.0 / w, minlength=C.shape[0])
    kbar = float(np.linalg.norm(np.sqrt(S)[:, None] * C, 2) ** 2)
    kt = 0.0
    for b in prep.buckets:
        r = 1.0 / np.sqrt(np.asarray(b.w, np.float64))
        kt = max(kt, float(np.max(np.sum(np.abs(np.asarray(b.Kt, np.float64)) * r[:, :, None] * r[:, None, :],
                                         axis=-1))))
    alpha, lam = np.asarray(alpha, np.float64), np.asarray(lam, np.float64)
    return 1.0 + np.maximum(alpha * kbar, (1 - alpha) * kt) / lam


@partial(jit, static_argnames=("fit_intercept",))
def _with_bias(c_unique, c, fit_intercept: bool):
    """Coefficients with the unpenalized bias b = 1ᵀSy / 1ᵀS1 (columns [y, 1]); b = 0 without."""
    if not fit_intercept:
        return c_unique[:, 0], c[:, 0], jnp.zeros((), c.dtype)
    s = jnp.sum(c, axis=0)
    b = s[0] / s[1]
    return c_unique[:, 0] - b * c_unique[:, 1], c[:, 0] - b * c[:, 1], b


def _validation_loss(query, y_val, s_val, alpha, c_unique, c, fit_intercept: bool):
    """Weighted validation MSE of the solution (č, c) of (5.4) (columns [y, 1] with the bias)."""
    cu, c, b = _with_bias(c_unique, c, fit_intercept)
    g_bar, g_tilde = predict_query(query, cu, c, alpha)
    return jnp.sum(s_val * (g_bar + g_tilde + b - y_val) ** 2) / jnp.sum(s_val)


@partial(jit, static_argnames=("fit_intercept", "batch_size"))
def _grid_losses(prep, Y, query, y_val, s_val, grid, fit_intercept: bool, batch_size: int):
    """Weighted validation MSE of Algorithm 4 for every (α, λ) row of ``grid`` (lax.map in batches)."""
    def one(al):
        c_unique, c = solve(prep, Y, al[0], al[1])
        return _validation_loss(query, y_val, s_val, al[0], c_unique, c, fit_intercept)

    return jax.lax.map(one, grid, batch_size=batch_size)


@partial(jit, static_argnames=("fit_intercept",))
def _path_losses(prep, Y, query, y_val, s_val, alphas, lams, fit_intercept: bool):
    """(A, L) weighted validation MSE of every α × λ: one eigendecomposition per α, every λ from it
    (:func:`~jaxmtl.mixed_effect.centralized.solve_path`)."""
    def one(alpha):
        cu, c = solve_path(prep, Y, alpha, lams)
        return jax.vmap(lambda u, v: _validation_loss(query, y_val, s_val, alpha, u, v, fit_intercept))(cu, c)

    return jax.lax.map(one, alphas)


def _path_pays_off(prep, n_examples: int, n_lams: int) -> bool:
    """Whether the λ path (one ℓ × ℓ eigendecomposition per α, ~ℓ³) costs less than Algorithm 4
    at every λ (~Σⱼ Lⱼ³ + n³ each, Lⱼ the padded task sizes): on a 2-core CPU in float32 (ℓ = 800,
    two tasks, n = 196 and 515 distinct inputs) the two constants agreed within 30 %."""
    per_point = prep.C.shape[0] ** 3 + sum(b.Kt.shape[0] * b.Kt.shape[1] ** 3 for b in prep.buckets)
    return n_lams > 1 and float(n_examples) ** 3 <= n_lams * float(per_point)


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
        [Din11] §5.4); every pair is evaluated in one compiled call — one eigendecomposition per
        α and every λ from it, or Algorithm 4 per pair where the examples far outnumber the
        distinct inputs.
      validation_fraction: share of the examples held out to score the grid.
      random_state: seed of the hold-out split.
      matmul_precision: None or 'highest' (full float32 matrix products, the default), 'high' /
        'tensorfloat32' / 'tf32' or 'default' / 'bfloat16': reduced-precision products on GPUs and
        TPUs for path steps, eigen-path products and selection losses (Gram evaluations stay
        full precision); warns when the selected model is beyond them (docs/precision.md).
      dtype: None (JAX's default), 'float32' or 'float64': the precision of fit and predict whatever
        JAX's global setting (see docs/precision.md); outputs are float64 either way.

    ``sample_weight`` follows scikit-learn: the loss is Σᵢ sᵢ (yᵢ − g(xᵢ, tᵢ))², i.e. the thesis's
    wᵢ = 1/sᵢ in (5.4); examples of weight 0 are dropped.

    Repeats of an input inside a task are merged into one example first (weight Σ sᵢ, output
    Σ sᵢyᵢ / Σ sᵢ: exact for (5.4), see :func:`~jaxmtl.mixed_effect.centralized.merge_repeats`).
    In float32, (α, λ) pairs whose condition bound (:func:`condition_bound`) times float32's eps
    exceeds 1e-3 are left out of the grid (``cv_scores_`` = inf there), with a RuntimeWarning naming
    float64 as the fix when the grid is the user's (``alphas`` / ``lams``); the default grid, whose λ
    reach 1e-7, is cut silently. An explicit such pair warns, and one beyond 1e-2 raises
    ParameterError — both name float64 as the fix.

    Attributes (after fit): alpha_, lam_, intercept_, coef_ (ℓ',) c of (5.4) for the ℓ' merged
    examples X_fit_ (ℓ', p) of tasks task_codes_ and weights sample_weight_ (ℓ',) (each the sum of its
    examples' sample weights: the count of repeats without them), coef_unique_ (n,) č = Pᵀc (5.8), X_unique_ (n, p),
    tasks_ (labels), kernel_, cv_scores_ (len(alphas), len(lams)) validation MSE (inf where float32
    cannot resolve the pair) or None, n_features_in_.
    """

    def __init__(self, alpha: float | None = None, lam: float | None = None, kernel: Kernel | None = None,
                 task_kernel: Any = None, fit_intercept: bool = True, alphas: Any = None, lams: Any = None,
                 validation_fraction: float = 0.2, random_state: int | None = 0, dtype: Any = None,
                 matmul_precision: str | None = None) -> None:
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
        self.matmul_precision = matmul_precision

    # ------------------------------------------------------------------ helpers
    def _kernel_of(self, labels):
        """Function task code → K̃ʲ in the working precision (TaskError for a label missing from a mapping)."""
        lookup, _ = resolve_task_kernel(self.task_kernel, self.kernel_)
        return lambda t: in_working_precision(
            lookup(labels[t].item() if isinstance(labels[t], np.generic) else labels[t]))

    def _layout(self, codes, labels, size: int, n_unique: int):
        """:func:`~jaxmtl.mixed_effect.centralized.task_layout` of examples padded to ``size`` rows on
        ``n_unique`` (padded) distinct inputs: a kernel's tasks in one block of
        :func:`~jaxmtl.models._buckets.task_block`'s width, read on the padded rows."""
        block = lambda largest, rows, tasks: task_block(largest, _padded_size(rows, size), tasks)  # noqa: E731
        return task_layout(codes, len(labels), self._kernel_of(labels), block, n_unique)

    def _prepare(self, X, codes, w, labels, size: int):
        """(X̌, layout, :func:`~jaxmtl.mixed_effect.centralized.prepare`'s output, inverse) of the
        (merged) examples X, codes, weights w, padded to ``size`` rows, their distinct inputs X̌ to
        :func:`_padded_size`'s length (:func:`_padded_inputs`)."""
        Xu, inverse = unique_inputs(X)
        Xp = _padded_inputs(Xu, size)
        layout = self._layout(codes, labels, size, len(Xp))
        return Xu, layout, prepare(Xp, inverse, w, layout, self.kernel_, len(Xu), size), inverse

    @staticmethod
    def _float32_error(prep, inverse, w, alpha, lam):
        """eps₃₂·κ (:func:`condition_bound`) when Algorithm 4 runs in float32, else zeros."""
        if prep.C.dtype != np.float32:
            return np.zeros(np.broadcast(np.asarray(alpha), np.asarray(lam)).shape)
        return float(np.finfo(np.float32).eps) * condition_bound(prep, inverse, w, alpha, lam)

    def _select(self, X, y, codes, w, s, labels, alphas, lams, fi):
        """(len(alphas), len(lams)) validation MSE of every (α, λ) on a random hold-out (inf where
        float32 cannot resolve the pair), in one compiled call."""
        fraction = check_fraction(self.validation_fraction, "validation_fraction")
        n_val = int(round(fraction * len(y)))
        if n_val < 1 or n_val >= len(y):
            raise ParameterError(f"validation_fraction={self.validation_fraction} of n_samples={len(y)} leaves "
                                 f"{len(y) - n_val} training and {n_val} validation examples; both must be >= 1.")
        rng = np.random.default_rng(check_random_state(self.random_state))
        val = np.zeros(len(y), bool)
        val[rng.permutation(len(y))[:n_val]] = True
        tr = ~val
        # the split's lengths padded to what the split of any n of the rows' bucket N holds at most
        # (n − round(fn) and round(fn) grow with n)
        N = size_bucket(len(y))
        held = int(round(fraction * N))
        q = _padded_size(n_val, held)
        Xt, ct, yt, st = merge_repeats(X[tr], codes[tr], y[tr], s[tr])
        size = _padded_size(len(yt), N - held)
        Xu, layout, prep, inverse = self._prepare(Xt, ct, 1.0 / st, labels, size)
        slots = np.full((q, 2), -1)  # padded validation rows: no task, weight 0
        slots[:n_val] = layout.slot[codes[val]]
        query = build_query(pad_rows(X[val], q), slots, _padded_inputs(Xu, size), Xt, layout, self.kernel_, size)
        grid = np.array([(a, lam) for a in alphas for lam in lams])
        # NumPy arguments in the working dtype: converting them is no compiled call
        Y, y_val, s_val = (pad_rows(np.asarray(a, prep.C.dtype), n) for a, n in
                           ((self._rhs(yt, fi, prep), size), (y[val], q), (s[val], q)))
        if _path_pays_off(prep, size, len(lams)):
            a, b = (np.asarray(v, prep.C.dtype) for v in (alphas, lams))
            losses = _path_losses(prep, Y, query, y_val, s_val, a, b, fi)
        else:
            losses = _grid_losses(prep, Y, query, y_val, s_val, np.asarray(grid, prep.C.dtype), fi, min(len(grid), 15))
        losses = np.asarray(losses, np.float64).reshape(-1)
        unresolved = self._float32_error(prep, inverse, 1.0 / st, grid[:, 0], grid[:, 1]) > FLOAT32_LIMIT
        if unresolved.all():
            raise ParameterError(f"float32 cannot resolve any (alpha, lam) of the grid on these data (smallest lam "
                                 f"{min(lams):.3g}); {F64_FIX}, or pass larger lams.")
        if unresolved.any() and (self.alphas is not None or self.lams is not None):  # the user's own grid
            warnings.warn(f"{int(unresolved.sum())} of {len(grid)} (alpha, lam) grid points are beyond float32's "
                          f"precision on these data (condition bound × eps > {FLOAT32_LIMIT:g}; lam down to "
                          f"{grid[unresolved, 1].min():.3g}) and were not considered (cv_scores_ = inf); "
                          f"{F64_FIX} to search them.", RuntimeWarning, stacklevel=3)
        return np.where(unresolved, np.inf, losses).reshape(len(alphas), len(lams))

    @staticmethod
    def _rhs(y, fi, prep):
        """The right-hand sides of (5.4) in the working dtype: y, and a column of ones for the bias."""
        Y = np.c_[y, np.ones_like(y)] if fi else y[:, None]
        return np.asarray(Y, prep.C.dtype)

    # ------------------------------------------------------------------ API
    def fit(self, X: ArrayLike, y: ArrayLike, tasks: ArrayLike, sample_weight: ArrayLike | None = None) -> "MixedEffectRegressor":
        """Fit on long-form data X (ℓ, p), y (ℓ,), tasks (ℓ,) (any hashable labels)."""
        X = self._validate_fit_inputs(X)
        y = as_float_array(y, "y", ndim=(1, 2))
        if y.ndim == 2 and y.shape[1] != 1 or y.shape[0] != X.shape[0]:
            raise ShapeError(f"y must be 1-D with one entry per row of X ({X.shape[0]}); received {y.shape}.")
        y = y.reshape(-1).astype(np.float64)
        codes, labels = check_tasks(tasks, X.shape[0])
        fi = check_bool(self.fit_intercept, "fit_intercept")
        alpha_grid = ALPHAS if self.alphas is None else np.atleast_1d(as_float_array(self.alphas, "alphas", ndim=(0, 1)))
        lam_grid = LAMS if self.lams is None else np.atleast_1d(as_float_array(self.lams, "lams", ndim=(0, 1)))
        alphas = [check_alpha(a, "alphas") for a in alpha_grid] if self.alpha is None else [check_alpha(self.alpha)]
        lams = [check_lam(v, "lams") for v in lam_grid] if self.lam is None else [check_lam(self.lam)]
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
        X, codes, y, s = merge_repeats(X, codes, y, s)
        size = size_bucket(len(y))
        Xu, _, prep, inverse = self._prepare(X, codes, 1.0 / s, labels, size)
        err = float(self._float32_error(prep, inverse, 1.0 / s, self.alpha_, self.lam_))
        if err > FLOAT32_REFUSE:
            raise ParameterError(f"lam={self.lam_:.3g} with alpha={self.alpha_:.3g} is beyond float32's precision on "
                                 f"these data (condition bound × eps = {err:.2g}: errors up to {ERROR_RATIO * err:.2g} "
                                 f"× the outputs' scale); {F64_FIX}, or increase lam.")
        if err > FLOAT32_LIMIT:
            warnings.warn(f"lam={self.lam_:.3g} with alpha={self.alpha_:.3g} is near float32's precision on these "
                          f"data: expect errors up to about {ERROR_RATIO * err:.1g} × the outputs' scale; {F64_FIX}.",
                          RuntimeWarning, stacklevel=2)
        cu, c, b = _with_bias(*solve(prep, pad_rows(self._rhs(y, fi, prep), size), self.alpha_, self.lam_), fi)
        # the padded rows' coefficients are zero
        self.coef_unique_, self.coef_, self.intercept_ = np.asarray(cu)[:len(Xu)], np.asarray(c)[:len(y)], float(b)
        self.X_unique_, self.X_fit_, self.task_codes_, self.tasks_ = Xu, X, codes, labels
        self.sample_weight_ = s
        return self

    def _ridge_system(self) -> tuple[float, float]:
        """(μ, s) of the fitted model for :func:`~jaxmtl.models._precision.relative_regularisation`:
        μ = λ, s = Σᵢ sᵢ (α K̄(xᵢ, xᵢ) + (1 − α) K̃^{tᵢ}(xᵢ, xᵢ)) over the merged examples.

        (5.4), Σᵢ sᵢ (yᵢ − g(xᵢ, tᵢ))² + λ‖g‖² with the kernel (5.2) and the unnormalised λ, is
        solved by (K + λW)c = y, W = diag(1/sᵢ); in symmetric form (S^½ K S^½ + λI) S^-½c = S^½y,
        the spectral Tikhonov system at λ' = λ/Σᵢ sᵢ, so ρ = λ / tr(S^½ K S^½).
        """
        layout = task_layout(self.task_codes_, len(self.tasks_), self._kernel_of(self.tasks_))
        individual = sum(kernel_trace(k, self.X_fit_[rows[rows >= 0]], self.sample_weight_[rows[rows >= 0]])
                         for rows, k in layout.buckets)
        common = kernel_trace(self.kernel_, self.X_fit_, self.sample_weight_)
        return self.lam_, self.alpha_ * common + (1.0 - self.alpha_) * individual

    def predict_parts(self, X: ArrayLike, tasks: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(ḡ(X) + intercept, g̃ₜ(X)): the average task and each row's task shift (5.3).

        Rows of a task not seen in ``fit`` get g̃ = 0 (their estimate is the average task).
        """
        X = self._validate_predict_inputs(X)
        arr = np.asarray(tasks)
        if arr.ndim != 1 or arr.shape[0] != X.shape[0]:
            raise ShapeError(f"tasks must be 1-D with one id per row of X ({X.shape[0]}); received {arr.shape}.")
        index = {t: i for i, t in enumerate(self.tasks_.tolist())}
        codes_q = np.array([index.get(t, -1) for t in arr.tolist()], dtype=np.int64)
        # the fitted arrays padded as in fit (zero coefficients): the prediction programs are per bucket
        size = size_bucket(len(self.X_fit_))
        Xu = _padded_inputs(self.X_unique_, size)
        layout = self._layout(self.task_codes_, self.tasks_, size, len(Xu))
        slots = np.where(codes_q[:, None] >= 0, layout.slot[np.maximum(codes_q, 0)], -1)
        coef_unique = jax.device_put(pad_rows(self.coef_unique_, len(Xu)))
        coef = jax.device_put(pad_rows(self.coef_, size))
        g_bar, g_tilde = in_row_blocks(lambda B, s: predict_query(
            build_query(B, s, Xu, self.X_fit_, layout, self.kernel_, size), coef_unique, coef, self.alpha_),
            X.astype(np.float64), slots)
        return g_bar + self.intercept_, g_tilde

    def predictor(self) -> TaskPredictor:
        """The fitted prediction function as a :class:`~jaxmtl.models.predictor_kinds.TaskPredictor`,
        called as ``f(X, codes)`` with ``codes`` the rows' indices into ``tasks_``; (m, 1) outputs
        α K̄(x, ·)c + (1 − α) K̃ᵗ(x, ·)c over task t's examples + intercept (5.3), with K̄(x, x̌)č
        written Σᵢ K̄(x, xᵢ)cᵢ (č = Pᵀc, (5.8)). A code outside 0 … T − 1 is refused where it is
        concrete and gives the average task ḡ + intercept when traced or exported, as ``predict``
        gives a task not seen in fit. Task kernels: one for every task, or Gaussians of one width
        per task; other mappings raise ParameterError."""
        self._check_fitted()
        dtype = self.coef_.dtype
        kernel_of = self._kernel_of(self.tasks_)
        kernels = [kernel_of(t) for t in range(len(self.tasks_))]
        if all(eqx.tree_equal(k, kernels[0]) is True for k in kernels):
            task_kernel: Any = _cast(kernels[0], dtype)
        elif all(type(k) is Gaussian for k in kernels):
            task_kernel = PerOutputGaussian(jnp.asarray([float(k.sigma) for k in kernels], dtype))
        else:
            raise ParameterError("predictor() takes one task kernel for every task or Gaussians of one width per "
                                 "task; this model's task_kernel maps tasks to different kinds of kernel.")
        return TaskPredictor(_cast(self.kernel_, dtype), task_kernel, jnp.asarray(self.X_fit_, dtype),
                             jnp.asarray(self.coef_), self.task_codes_, self.alpha_,
                             np.full(len(self.tasks_), self.intercept_), "average", input_shift(self, dtype))

    def predict(self, X: ArrayLike, tasks: ArrayLike) -> np.ndarray:
        """(q,) predictions ḡ(x) + g̃ₜ(x) + intercept for inputs X of tasks ``tasks``."""
        g_bar, g_tilde = self.predict_parts(X, tasks)
        return g_bar + g_tilde

    def score(self, X: ArrayLike, y: ArrayLike, tasks: ArrayLike,  # type: ignore[override]  # + tasks
              sample_weight: ArrayLike | None = None) -> float:
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
