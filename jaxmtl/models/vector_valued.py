r"""VectorValuedRegressor: f: ℝᵖ → ℝᵈ with Γ(x, x') = K(x, x')·A and a spectral filter ([BRBV11] §2–4).

Two families, selected on the same folds with the same loss (``family='auto'``): the coupled
family of ``output`` (A_ω = ω11ᵀ + (1−ω)I by default: one width and one filter parameter for
all outputs, ω chosen), and the independent family (:mod:`jaxmtl.models._per_task`): every
output its own Gaussian width, filter parameter and mean — KernelRidge tuned per output, all
outputs in one compiled call. As in :class:`~jaxmtl.MultiTaskRegressor`, the independent family
is compared by its cross-fitted validation loss.

Example:
    >>> import numpy as np
    >>> X = np.random.default_rng(0).uniform(-2, 2, (80, 1))
    >>> Y = np.c_[np.sin(4 * X[:, 0]), 5 * X[:, 0] ** 2]
    >>> model = VectorValuedRegressor(n_steps=50).fit(X, Y)
    >>> model.family_ in ("common_similarity", "independent"), model.predict(X[:2]).shape
    (True, (2, 2))
"""

from __future__ import annotations

from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .._checks import check_bool, check_outputs, check_random_state
from .._jit import jit
from ..errors import ParameterError, ShapeError
from ..filters.spectral import SpectralFilter
from ..kernels.scalar import Gaussian, Kernel
from ._base import RegressorMixin, resolve_filter
from ._buckets import pad_rows, size_bucket
from ._gradient_search import check_search
from ._output_scale import output_scales, unscale_fitted
from ._per_task import FAMILIES, independent_params, output_lambdas, output_predict, select_outputs
from ._row_blocks import in_row_blocks
from ._spectral import _SpectralEstimator
from .approximate import ApproximationMixin
from .predictors import PerOutputGaussian, PerOutputPredictor, Predictor, PredictorMixin

__all__ = ["VectorValuedRegressor"]


@jit
def _either_family(independent, kernel, widths, X_fit, coef, A, X_new):
    """(m, d) predictions of either family in one program (``lax.cond`` runs one branch): the
    per-output family's [K_{σ_j}(X_new, X_fit) coef_j]_j A (``widths`` (d,)) where ``independent``,
    else the coupled family's K(X_new, X_fit) coef A (``kernel`` a Gaussian of one width)."""
    return jax.lax.cond(independent, lambda: output_predict(widths, X_fit, coef, X_new) @ A,
                        lambda: kernel(X_new, X_fit) @ coef @ A)


class VectorValuedRegressor(RegressorMixin, ApproximationMixin, PredictorMixin, _SpectralEstimator):
    """Vector-valued kernel regression with a separable kernel K(x, x')·A and a spectral filter.

    Args:
      kernel: a :class:`~jaxmtl.kernels.Kernel`; a list of kernels (yours too), the one of least
        validation loss chosen with ω and the filter parameter (exact path only); None selects a
        Gaussian width from ``median_distance × width_factors``.
      output: 'common_similarity' (ω chosen on ``omegas``, [BRBV11] eq. 18), 'independent'
        (A = I), a (d, d) symmetric PSD matrix (see :mod:`jaxmtl.outputs`), or the name of a
        family given to :func:`jaxmtl.register_output_family` (its parameter chosen on
        ``omegas``, default the family's grid).
      filter: a :class:`~jaxmtl.filters.SpectralFilter` or its name, for both families; None
        (default): the ν-method in the coupled family and Tikhonov in the independent one —
        KernelRidge per output, the baseline that family must contain, every λ free on its
        eigendecomposition (see docs/defaults.md).
      selection: 'kfold', 'loo' (closed form), 'gcv', 'holdout', or a predefined split given as
        boolean training masks of shape (k, n) (or (n,) for one validation set).
      n_folds: folds for 'kfold'.
      n_repeats: shuffles of the k-fold partition the validation losses are averaged over, as
        :class:`~jaxmtl.MultiClassClassifier`'s (None: ⌈1000 / n⌉, at most 3; an approximation
        scores one partition).
      n_steps: path length of iterative filters (default 300 for the ν-method, 3000 for
        Landweber).
      lambdas: λ grid of the other filters (default 30 values in [1e-6, 1]·mean K(x, x); the
        independent family's default continues it down to float32's resolution, 1.4·10⁻⁸, in
        both precisions, :func:`~jaxmtl.models._per_task.output_lambdas`).
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
      family: 'auto' (default): the coupled family of ``output`` and the independent family
        (every output its own Gaussian width, filter parameter and mean), the one of lower
        validation loss on the same folds kept — the independent family by its cross-fitted
        loss (see :mod:`jaxmtl.models._per_task`); 'auto' keeps the coupled family for a single
        output, and where the independent family does not apply: a kernel other than
        None or a Gaussian of one width, ``output`` other than 'common_similarity', selection
        'loo' / 'gcv', an approximation or ``search='gradient'``. 'common_similarity': the coupled
        family of ``output`` alone; 'independent' the independent family alone (an error in those settings).
      route: how the coupled family's grid is computed (exact kernel, grid search): 'auto'
        (default) the cheaper of the two over the whole grid — points × ω × folds × distinct
        output eigenvalues — by the cost model of :mod:`jaxmtl.paths.routes`; 'eigen': one
        ``eigh`` per kernel and fold, shared by every point (every filter); 'direct': a Cholesky
        factor per kernel, fold, λ and distinct output eigenvalue (Tikhonov and iterated Tikhonov
        only; :mod:`jaxmtl.paths.direct`). Both give the same losses to rounding; the route taken
        is ``route_``. The ν-method default always runs on the eigen route. With an
        ``approximation``: 'auto' or 'eigen' (the D × D path), or 'cg', Falkon's CG over the whole
        grid, as :class:`~jaxmtl.models.approximate.ApproximateKernelRegressor` ('direct' takes 'eigen').
      mesh: None, or with an ``approximation`` a ``("rows",)`` mesh over the devices of every
        process of a multi-process run (:func:`~jaxmtl.distributed.global_mesh`): each process
        holds only its own rows of X and y and every process ends with the same model (as
        :class:`~jaxmtl.ApproximateKernelRegressor`'s ``mesh``; docs/distributed.md).

    Attributes (after fit):
      family_ ('independent' or the coupled family: 'common_similarity' — also for
      output='independent', its ω = 0 member —, 'custom' for a matrix, or a registered family's
      name), family_scores_ ({family: the loss compared, in the units of ``best_score_``}),
      coef_ (n, d), output_matrix_ (d, d), kernel_, filter_, best_params_, best_score_,
      cv_scores_ (n_kernels, n_omegas, n_params) validation losses (of the scaled outputs when
      ``normalize_y``), path_params_, omegas_, kernel_widths_, y_mean_, y_scale_ (d,) (ones
      without ``normalize_y``), n_features_in_, approximate_. With an approximation: coef_ (D, d)
      on the features ``feature_map_``, cv_scores_ (n_omegas, n_params). With the independent
      family: output_widths_, output_params_ (d,) each output's width and steps or λ (0 or
      inf where the output keeps its training mean, by the rule below paired over the parts
      of its held-out rows),
      coef_[:, j] output j's coefficients on its kernel, output_matrix_ diag(y_scale_²),
      best_params_ with per-output arrays (kernel and omega None), kernel_ None; the coupled
      family's search attributes stay when 'auto' fitted both. null_score_: the validation loss of
      C = 0 (t = 0 / λ = ∞: the training mean) on the same folds; the coupled family keeps it, with
      best_params_['param'] 0 (steps) or inf (λ) and coef_ zero, where no point of its path beats it
      by more than one standard error of the paired per-fold difference (eigen route). route_:
      'eigen' or 'direct', the route of the coupled family's grid on all rows (and of its refit).
    """

    def __init__(self, kernel: Kernel | list[Kernel] | None = None, output: str | ArrayLike = "common_similarity",
                 filter: str | SpectralFilter | None = None, selection: str | ArrayLike = "kfold",
                 n_folds: int | None = 5, n_steps: int | None = None, lambdas: ArrayLike | None = None,
                 omegas: ArrayLike | None = None, width_factors: ArrayLike | None = None,
                 validation_fraction: float = 0.2, fit_intercept: bool = True, random_state: int | None = 0,
                 verbose: bool = False, approximation: str | None = None, n_components: int | None = None,
                 search: str = "grid", dtype: DTypeLike | None = None, normalize_y: bool = True,
                 n_repeats: int | None = None,
                 matmul_precision: str | None = None, family: str = "auto", mesh: Any = None,
                 route: str = "auto") -> None:
        super().__init__(kernel, output, filter, selection, n_folds, n_steps, lambdas, omegas,
                         width_factors, validation_fraction, fit_intercept, random_state, verbose)
        self.normalize_y = normalize_y
        self.n_repeats = n_repeats
        self.approximation = approximation
        self.n_components = n_components
        self.search = search
        self.dtype = dtype
        self.matmul_precision = matmul_precision
        self.route = route
        self.family = family
        self.mesh = mesh

    def _family(self, d: int) -> str:
        """The family or families to fit: 'auto' falls back to the coupled one where the
        independent family does not apply; an explicit 'independent' there is an error."""
        if not isinstance(self.family, str) or self.family not in FAMILIES:
            raise ParameterError(f"family must be one of {FAMILIES}; received {self.family!r}.")
        if self.family == "common_similarity":
            return self.family
        closed_form = isinstance(self.selection, str) and self.selection in ("loo", "gcv")
        gaussian = self.kernel is None or (isinstance(self.kernel, Gaussian) and np.ndim(self.kernel.sigma) == 0)
        blocked = [(closed_form, f"selects on folds: selection must be 'kfold', 'holdout' or masks; received "
                                 f"{self.selection!r}"),
                   (not gaussian, f"fits a Gaussian kernel per output: kernel must be None or a Gaussian with one "
                                  f"width; received {self.kernel!r}"),
                   (not (isinstance(self.output, str) and self.output == "common_similarity"),
                    f"replaces the output matrix: output must be 'common_similarity'; received {self.output!r}"),
                   (self.approximation is not None, "fits the exact kernel: approximation must be None; received "
                                                    f"{self.approximation!r}"),
                   (self.search != "grid", f"selects on its grid: search must be 'grid'; received {self.search!r}")]
        reasons = [why for hit, why in blocked if hit]
        if self.family == "independent" and reasons:
            raise ParameterError(f"family='independent' {reasons[0]}.")
        return "common_similarity" if self.family == "auto" and (reasons or d == 1) else self.family

    def fit(self, X: ArrayLike, y: ArrayLike) -> "VectorValuedRegressor":
        """Select the hyperparameters on the path and fit on all data.

        Args:
          X: (n, p) inputs (array, list or DataFrame); y: (n, d) or (n,) outputs; with ``mesh``
            arrays, memory maps or ``.npy`` paths, the same on every process.
        """
        self._family(2)  # the family's name and settings, before anything is traced
        if self.mesh is not None:
            if self.approximation is None:
                raise ParameterError("mesh= spreads the rows of an approximate fit over processes: pass approximation="
                                     "'nystrom' or 'random_features' (the exact kernel across processes is "
                                     "jaxmtl.distributed.DistributedKernelRegressor); received approximation=None.")
            check_search(self)
            return self._fit_on_mesh(X, y)
        X = self._validate_fit_inputs(X)
        Y, self._y_1d = check_outputs(y, X.shape[0], "y")
        Y = Y.astype(X.dtype)
        check_search(self)
        family = self._family(Y.shape[1])
        scales = output_scales(Y, self.normalize_y)
        Ys = (Y / scales).astype(Y.dtype)
        scores = {}
        if family != "independent":
            self._fit_exact_or_approximate(X, Ys)
            scores[self._output_family()] = self.best_score_
        if family != "common_similarity":
            fit, plain, scores["independent"], offset = self._select_outputs(X, Ys)
        self.family_ = min(scores, key=lambda f: scores[f])  # the one fitted, or the better of two
        self.family_scores_ = scores
        if self.family_ == "independent":
            dtype = fit.coef.dtype
            self.coef_, self.X_fit_, self.kernel_ = fit.coef, fit.X, None
            self.output_matrix_ = jax.device_put(np.eye(Y.shape[1], dtype=dtype))
            self.output_widths_, self.output_params_ = fit.widths, fit.params
            self.y_mean_ = (offset + fit.means).astype(Ys.dtype)
            self.filter_, self.n_outputs_, self.approximate_ = resolve_filter(self.filter, True), Y.shape[1], False
            self.best_params_ = {"kernel": None, "kernel_width": fit.widths, "omega": None, "param": fit.params}
            self.best_score_ = plain
        unscale_fitted(self, scales)
        return self

    def _select_outputs(self, X: np.ndarray, Y: np.ndarray):
        """The independent family on the estimator's folds: (IndependentFit, validation loss,
        cross-fitted validation loss, the outputs' means (d,) it was centred on)."""
        if X.shape[0] < 2:
            raise ShapeError(f"at least 2 samples are needed to fit; received n_samples={X.shape[0]}.")
        offset = Y.mean(axis=0) if check_bool(self.fit_intercept, "fit_intercept") else np.zeros(Y.shape[1], Y.dtype)
        dtype = jax.dtypes.canonicalize_dtype(Y.dtype)
        filt = resolve_filter(self.filter, independent=True)
        kernels, widths = self._resolve_kernels(X)
        fit, plain, crossed = select_outputs(
            np.asarray(X, dtype), (Y - offset).astype(dtype), self._masks(X.shape[0]), filt,
            self._output_params(filt), np.array([float(cast(Gaussian, kernels[0]).sigma)]) if widths is None else widths,
            refine=self.kernel is None and self.width_factors is None, random_state=check_random_state(self.random_state),
            subsample=self._width_search_rows(X.shape[0]))
        return fit, plain, crossed, offset

    def _output_params(self, filt: SpectralFilter) -> np.ndarray:
        """The independent family's filter parameters: with a closed-form filter and ``lambdas=None``
        :func:`output_lambdas` (every output shares all n rows, so the coupled grid's floor of 10⁻⁶
        would be KernelRidge's α ≥ n·10⁻⁶), otherwise :func:`independent_params`."""
        if filt.iterative or self.lambdas is not None:
            return independent_params(self, filt)
        return output_lambdas()

    def _decision(self, X) -> np.ndarray:
        independent = getattr(self, "family_", "common_similarity") == "independent"  # files saved before families
        both = len(getattr(self, "family_scores_", {})) == 2
        if not (independent or both):
            return super()._decision(X)
        X = self._validate_predict_inputs(X)
        dtype = self.X_fit_.dtype
        A = np.asarray(self.output_matrix_, dtype)
        size = size_bucket(self.X_fit_.shape[0])  # the fitted rows padded (zero coefficients): a program per bucket
        X_fit, coef = (jax.device_put(pad_rows(np.asarray(a), size)) for a in (self.X_fit_, self.coef_))
        if not both:
            widths = np.asarray(self.output_widths_, dtype)
            G = in_row_blocks(lambda B: np.asarray(output_predict(widths, X_fit, coef, np.asarray(B, dtype))) @ A, X)
            return G + self.y_mean_
        # both families were candidates: one program predicts with either, so that the folds of a
        # cross-validation that select different families compile one prediction program
        width = np.asarray(self.output_widths_ if independent else cast(Gaussian, self.kernel_).sigma, dtype)
        widths = np.broadcast_to(width, (self.n_outputs_,))  # the unused branch's operands: any of their shapes
        kernel, flag = Gaussian(widths[0]), np.asarray(independent)
        G = in_row_blocks(lambda B: _either_family(flag, kernel, widths, X_fit, coef, A, np.asarray(B, dtype)), X)
        return G + self.y_mean_

    def predictor(self) -> Predictor:
        """The fitted prediction function as a :class:`Predictor` pytree (the same fields for both
        families): a :class:`SeparablePredictor` for the coupled family, a :class:`PerOutputPredictor`
        (its kernel a :class:`PerOutputGaussian`, a width per output) for the independent one."""
        if getattr(self, "family_", None) != "independent":
            return super().predictor()
        return PerOutputPredictor(PerOutputGaussian(jnp.asarray(self.output_widths_, self.X_fit_.dtype)),
                                  *self._leaves())

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
