r"""VectorValuedRegressor: f: ℝᵖ → ℝᵈ with Γ(x, x') = K(x, x')·A and a spectral filter ([BRBV11] §2–4)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .._checks import check_outputs
from ..filters.spectral import SpectralFilter
from ..kernels.scalar import Kernel
from ._base import RegressorMixin
from ._gradient_search import check_search
from ._output_scale import output_scales, unscale_fitted
from ._spectral import _SpectralEstimator
from .approximate import ApproximationMixin
from .predictors import PredictorMixin

__all__ = ["VectorValuedRegressor"]


class VectorValuedRegressor(RegressorMixin, ApproximationMixin, PredictorMixin, _SpectralEstimator):
    """Vector-valued kernel regression with a separable kernel K(x, x')·A and a spectral filter.

    Args:
      kernel: a :class:`~jaxmtl.kernels.Kernel`; None selects a Gaussian width from
        ``median_distance × width_factors``.
      output: 'common_similarity' (ω chosen on ``omegas``, [BRBV11] eq. 18), 'independent'
        (A = I), or a (d, d) symmetric PSD matrix (see :mod:`jaxmtl.outputs`).
      filter: a :class:`~jaxmtl.filters.SpectralFilter` or its name.
      selection: 'kfold', 'loo' (closed form), 'gcv', 'holdout', or a predefined split given as
        boolean training masks of shape (k, n) (or (n,) for one validation set).
      n_folds: folds for 'kfold'.
      n_repeats: shuffles of the k-fold partition the validation losses are averaged over, as
        :class:`~jaxmtl.MultiClassClassifier`'s (None: ⌈1000 / n⌉, at most 3; an approximation
        scores one partition).
      n_steps: path length of iterative filters (default 300 for the ν-method, 3000 for
        Landweber).
      lambdas: λ grid of the other filters (default 30 values in [1e-6, 1]·mean K(x, x)).
      omegas: ω grid of the common-similarity family (default 0, 0.1, …, 1).
      width_factors: multipliers of the median distance for the default kernel.
      validation_fraction: held-out share for 'holdout'.
      fit_intercept: centre the outputs on their training mean.
      normalize_y: fit the outputs divided by their standard deviations, so that every output
        weighs the same in the selection loss and the common-similarity family couples outputs
        in comparable units; the scales are folded back into ``coef_``, ``output_matrix_`` and
        ``y_mean_`` (see :mod:`jaxmtl.models._output_scale`). Nothing to scale for a single output.
      random_state: seed of the fold / hold-out split (and of the width-search subsample).
      verbose: print each stage of the fit (each one compiled call) with its time, on stderr.
      approximation: None (exact kernel), 'nystrom' or 'random_features': K ≈ ΦΦᵀ and the
        selection and fit through the D × D problem (see
        :class:`~jaxmtl.models.approximate.ApproximationMixin`; selection 'kfold', 'holdout'
        or masks).
      n_components: Nyström centres or random features (None: min(n, 1000) centres, 1000
        features); ignored when ``approximation`` is None.
      search: 'grid' (default): every hyperparameter selected on its grid; 'gradient': the
        grid's choice is the start from which the continuous hyperparameters — the kernel width,
        per-feature widths when the kernel is built with a vector (``Gaussian(np.ones(p))``, ARD),
        ω of the common-similarity output, the Tikhonov λ — are learned by Adam on a
        differentiable k-fold (LOO / GCV for those selections) criterion, constrained by softplus
        and sigmoid reparametrisations (see :mod:`jaxmtl.models._gradient_search`); ``kernel_``
        is the learned kernel and ``search_start_``, ``search_start_score_``, ``search_score_``,
        ``search_trace_`` record the start, the criterion before and after, and its trace.
      matmul_precision: None or 'highest' (full float32 matrix products, the default), 'high' /
        'tensorfloat32' / 'tf32' or 'default' / 'bfloat16': reduced-precision products on GPUs and
        TPUs for path steps, eigen-path products and selection losses (Gram evaluations stay
        full precision); warns when the selected model is beyond them (docs/precision.md).
      dtype: None (JAX's default: float32 unless ``jax_enable_x64`` is on), 'float32' or
        'float64': the precision of fit and predict, whatever the global setting and without
        changing it (``jax.enable_x64`` scoped to the call). float64 reaches the small
        regularization a noiseless problem needs (see docs/defaults.md); float32 halves memory.

    Attributes (after fit):
      coef_ (n, d), output_matrix_ (d, d), kernel_, filter_, best_params_, best_score_,
      cv_scores_ (n_kernels, n_omegas, n_params) validation losses (of the scaled outputs when
      ``normalize_y``), path_params_, omegas_, kernel_widths_, y_mean_, y_scale_ (d,) (ones
      without ``normalize_y``), n_features_in_, approximate_. With an approximation: coef_ (D, d)
      on the features ``feature_map_``, cv_scores_ (n_omegas, n_params).
    """

    def __init__(self, kernel: Kernel | None = None, output: str | ArrayLike = "common_similarity",
                 filter: str | SpectralFilter = "nu_method", selection: str | ArrayLike = "kfold",
                 n_folds: int | None = 5, n_steps: int | None = None, lambdas: ArrayLike | None = None,
                 omegas: ArrayLike | None = None, width_factors: ArrayLike | None = None,
                 validation_fraction: float = 0.2, fit_intercept: bool = True, random_state: int | None = 0,
                 verbose: bool = False, approximation: str | None = None, n_components: int | None = None,
                 search: str = "grid", dtype: DTypeLike | None = None, normalize_y: bool = True,
                 n_repeats: int | None = None,
                 matmul_precision: str | None = None) -> None:
        super().__init__(kernel, output, filter, selection, n_folds, n_steps, lambdas, omegas,
                         width_factors, validation_fraction, fit_intercept, random_state, verbose)
        self.normalize_y = normalize_y
        self.n_repeats = n_repeats
        self.approximation = approximation
        self.n_components = n_components
        self.search = search
        self.dtype = dtype
        self.matmul_precision = matmul_precision

    def fit(self, X: ArrayLike, y: ArrayLike) -> "VectorValuedRegressor":
        """Select the hyperparameters on the path and fit on all data.

        Args:
          X: (n, p) inputs (array, list or DataFrame); y: (n, d) or (n,) outputs.
        """
        X = self._validate_fit_inputs(X)
        Y, self._y_1d = check_outputs(y, X.shape[0], "y")
        Y = Y.astype(X.dtype)
        check_search(self)
        scales = output_scales(Y, self.normalize_y)
        self._fit_exact_or_approximate(X, (Y / scales).astype(Y.dtype))
        unscale_fitted(self, scales)
        return self

    def predict(self, X: ArrayLike) -> np.ndarray:
        """(m, d) predictions ((m,) if fitted on 1-D outputs)."""
        F = self._decision(X)
        return F[:, 0] if self._y_1d else F

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        """Coefficient of determination R², averaged uniformly over outputs (as scikit-learn's
        ``r2_score(..., multioutput='uniform_average')``)."""
        F = self._decision(X)
        Y, _ = check_outputs(y, F.shape[0], "y")
        w = np.ones(F.shape[0]) if sample_weight is None else np.asarray(sample_weight, dtype=float)
        mean = np.average(Y, axis=0, weights=w)
        ss_res = (w[:, None] * (Y - F) ** 2).sum(axis=0)
        ss_tot = (w[:, None] * (Y - mean) ** 2).sum(axis=0)
        return float(np.mean(1.0 - ss_res / np.where(ss_tot > 0, ss_tot, 1.0)))
