r"""Vector-valued kernel regression on Nyström or random-feature kernels, selection included.

The kernel matrix is replaced by an approximate factorisation K ≈ ΦΦᵀ ([Din11] F. Dinuzzo,
*Learning functions with kernel methods*, PhD thesis, 2011, §1.6.3): Nyström with m centres
(:class:`~jaxmtl.operators.nystrom.NystromFeatures`) or D random Fourier features
(:class:`~jaxmtl.operators.random_features.RandomFourierFeatures`). The separable kernel
Φ Φᵀ ⊗ A, every spectral filter of [BRBV11] §3 and the common-similarity family then go
through the D × D problem (:func:`~jaxmtl.paths.preconditioned.feature_kfold_losses`): per fold,
the data enter only through ΦᵀΦ, ΦᵀY and YᵀY, accumulated in row blocks, so memory is
O(block·D + k·D²) and time O(n·D² + k·D³ + grid·D²·d), linear in n.

Selection (departure from the exact estimators, for speed): with the default Gaussian width
grid, the width is searched (coarse-to-fine, as :class:`~jaxmtl.VectorValuedRegressor`) on a
random subsample of ``WIDTH_SUBSAMPLE`` rows with at most ``WIDTH_COMPONENTS`` uniform centres; ω and the filter parameter
are then chosen by k-fold on all rows with the requested approximation, and the final
coefficients come from the same statistics summed over every fold (no second pass over the
data). A default iterative path runs, for every width and ω, to the length the exact estimators
continue theirs to when its best step is the last (2400 ν-method steps, evaluated on the same
geometric grid): on the D × D path a step is an elementwise update, and widths scored on a path
cut short lose to narrower ones whatever their losses further on. A best step still the last is
continued once more as the exact path (× 8, the selected ω alone: noiseless data).

:class:`ApproximationMixin` holds this logic for any estimator that stores the
:class:`~jaxmtl.VectorValuedRegressor` parameters plus ``approximation``, ``n_components``,
``sampling`` and ``block_size``; :class:`ApproximateKernelRegressor` is the standalone
estimator.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 3)); Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1])]
    >>> model = ApproximateKernelRegressor(n_components=60, filter="tikhonov").fit(X, Y)
    >>> model.predict(X[:2]).shape
    (2, 2)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from .._checks import check_bool, check_int, check_outputs, check_random_state
from .._jit import jit
from .._progress import StageReporter
from ..errors import DivergenceError, ParameterError, ShapeError
from ..filters.spectral import SpectralFilter, get_filter
from ..kernels.scalar import Gaussian, Kernel, Laplacian, Matern, median_heuristic_rows
from ..operators.nystrom import SAMPLINGS, FeatureMap, NystromFeatures, accumulate_statistics
from ..operators.random_features import RandomFourierFeatures, spectral_samples
from ..paths.preconditioned import _feature_kfold_losses
from ._feature_routes import auto_route, cg_scores, eigen_scores, requested_route
from ..distributed.data import open_rows
from ..distributed.mesh import check_mesh
from ..distributed.rows import ShardedRows, check_sampling
from ._base import RegressorMixin, resolve_filter
from ._buckets import mean_diag, pad_rows, size_bucket
from ._grid_search import _stack, default_lambdas, float32_lambda_hint
from ._output_scale import output_scales, unscale_fitted
from ._training_rows import InMemoryRows, TrainingRows, memory_map
from ._row_blocks import in_row_blocks
from .predictor_kinds import FeaturePredictor
from .predictors import Predictor, PredictorMixin
from ._spectral import (
    _best_index,
    _continue_path,
    _path_params,
    _refine_widths,
    STEP_DOUBLINGS,
    _SpectralEstimator,
    _step_grid,
    _warn_on_edges,
)

__all__ = ["APPROXIMATIONS", "ApproximateKernelRegressor", "ApproximationMixin"]

APPROXIMATIONS = ("nystrom", "random_features")
WIDTH_SUBSAMPLE = 4000  # rows of the width search (the exact estimators use 400: here n is large)
WIDTH_COMPONENTS = 500  # at most this many components during the width search
DEFAULT_COMPONENTS = 1000  # n_components=None: min(n, 1000) Nyström centres or 1000 random features
Array = jax.Array


def _unit_kernel(kernel: Kernel) -> tuple[Kernel, str]:
    """The same kernel family at width 1 and the name of its width attribute (random features)."""
    if isinstance(kernel, Gaussian):
        return Gaussian(1.0), "sigma"
    if isinstance(kernel, Laplacian):
        return Laplacian(1.0), "sigma"
    if isinstance(kernel, Matern):
        return Matern(kernel.nu, 1.0), "length_scale"
    raise ParameterError("approximation='random_features' needs a Gaussian, Laplacian or Matern kernel; "
                         f"received {type(kernel).__name__}.")


def _feature_map(kernel: Kernel, basis: Array | np.ndarray, approximation: str, m: Any = None) -> FeatureMap:
    """Nyström map on centres ``basis`` (the first ``m`` real, the others a bucket's padding: see
    :meth:`ApproximationMixin._basis`), or random features with unit frequencies ``basis`` / width."""
    if approximation == "nystrom":
        return NystromFeatures.from_centres(kernel, basis, n_real=m)
    width = getattr(kernel, _unit_kernel(kernel)[1])
    if isinstance(basis, np.ndarray):  # NumPy frequencies divided on the host: eagerly, a program per operation
        return RandomFourierFeatures(jax.device_put((basis / np.asarray(width)).astype(basis.dtype)))
    return RandomFourierFeatures(basis / width)


@jit
def _predict_block(fmap: FeatureMap, X: Array, coef: Array, A: Array) -> Array:
    return fmap.apply(X, coef @ A)


def _score(kernels, basis, m, X, Y, rows, ids, n_groups, a, V, filt, params, approximation, report=None):
    """(W, k, Ω, P) fold losses for a stack of kernels (``lax.map``: one kernel's statistics at a time)."""

    def one(kern):
        fmap = _feature_map(kern, basis, approximation, m)
        stats = accumulate_statistics(fmap, X, Y, rows, ids, n_groups)
        return _feature_kfold_losses(stats, a, V, filt, params, report)

    return jax.lax.map(one, kernels)


_score_jit = jit(_score, static_argnames=("n_groups", "filt", "approximation"))


if TYPE_CHECKING:  # the mixin runs inside a _SpectralEstimator: every estimator using it is one
    _MixinBase = _SpectralEstimator
else:
    _MixinBase = object


class ApproximationMixin(_MixinBase):
    """Fit and predict through a Nyström or random-feature approximation of the kernel.

    Reads the estimator's ``kernel``, ``output``, ``filter``, ``selection`` ('kfold', 'holdout'
    or boolean masks whose held-out rows are disjoint), ``n_folds``, ``n_steps``, ``lambdas``,
    ``omegas``, ``width_factors``, ``validation_fraction``, ``fit_intercept``, ``random_state``,
    ``verbose``, ``approximation``, ``n_components`` (None: min(n, 1000) centres or 1000
    features), ``sampling`` ('uniform' | 'leverage', Nyström only; default 'uniform') and
    ``block_size`` (default 2048). Fitted attributes: ``feature_map_``, ``coef_`` (D, d) on
    the features φ (f(x) = φ(x) coef_ A + y_mean_), ``output_matrix_``, ``kernel_``,
    ``filter_``, ``best_params_``, ``best_score_``, ``cv_scores_`` (Ω, P), ``width_scores_``,
    ``kernel_widths_``, ``omegas_``, ``path_params_``, ``y_mean_``, ``approximate_`` (True),
    ``n_components_`` (the number of centres or features used), ``route_`` ('eigen' or 'cg').

    Routes (``route``, where the estimator has it; 'auto' by default): 'eigen' scores the grid
    through the D × D problem as above; 'cg', Falkon's CG over the whole grid, and how 'auto'
    chooses: :mod:`jaxmtl.models._feature_routes`.

    Estimators whose ``approximation`` may be None (:class:`~jaxmtl.VectorValuedRegressor`,
    :class:`~jaxmtl.MultiClassClassifier`) fit through :meth:`_fit_exact_or_approximate`, and
    their ``_decision`` follows the fit: the exact one when ``approximate_`` is False.
    With a Nyström approximation on all rows (``n_components`` = n, n ≤ ``WIDTH_COMPONENTS``)
    and a default width grid, the selection is that of the exact estimator on ≤ 400 rows, up
    to round-off, but for the default iterative path: the exact estimators continue it to 2400
    ν-method steps for the selected width and ω when its best step is the last, the approximate
    fit runs every width and ω that far; the classifier breaks near-ties by misclassifications,
    the approximate fit ranks its grid by the squared loss only.
    """

    approximation: str | None  # parameters of the estimators using the mixin
    n_components: int | None
    _feature_routes: tuple[str, ...] = ("auto", "eigen", "direct", "cg")  # 'direct' (exact) takes the eigen route

    def _approximate_filter(self) -> SpectralFilter:
        """The filter of the D × D path: ``filter`` resolved as the exact estimator resolves it."""
        return resolve_filter(self.filter)

    def _approximate_params(self, filt: SpectralFilter, scale: float, dtype: Any) -> np.ndarray:
        """Its steps or λ grid (λ relative to the kernel's mean diagonal ``scale``), as the exact one's."""
        return self._resolve_params(filt, scale)

    def _approximate_edge_hint(self, filt: SpectralFilter, dtype: Any) -> str | None:
        """What a GridEdgeWarning of a λ on the grid's small end advises (None: a larger range)."""
        return None

    def _compares_per_output(self, filt: SpectralFilter, d: int) -> bool:
        """Whether the fit also scores the per-output family (A = I, a λ per output); not here."""
        return False

    def _approximation_settings(self, n: int) -> tuple[str, int, str, int]:
        approx = self.approximation
        if not (isinstance(approx, str) and approx in APPROXIMATIONS):
            raise ParameterError(f"approximation must be one of {APPROXIMATIONS}; received {approx!r}.")
        m = self.n_components
        if m is None:  # the default of the exact estimators' approximation option
            m = min(n, DEFAULT_COMPONENTS) if approx == "nystrom" else DEFAULT_COMPONENTS
        m = check_int(m, "n_components", minimum=2 if approx == "random_features" else 1)
        if approx == "nystrom" and m > n:
            raise ParameterError(f"n_components must be an integer in [1, n={n}] (Nyström centres are training "
                                 f"rows); received n_components={m} for the n={n} training rows.")
        if approx == "random_features" and m % 2:
            raise ParameterError(f"n_components of random features must be an even integer >= 2 (a cosine and a "
                                 f"sine per frequency); received {m}.")
        sampling = getattr(self, "sampling", "uniform")
        if not (isinstance(sampling, str) and sampling in SAMPLINGS):
            raise ParameterError(f"sampling must be one of {SAMPLINGS}; received {sampling!r}.")
        block = check_int(getattr(self, "block_size", 2048), "block_size", minimum=1)
        return approx, m, sampling, block

    def _groups(self, n: int) -> tuple[np.ndarray, int, np.ndarray]:
        """Held-out group of every row (k: never held out), the number of groups, the scored groups."""
        if isinstance(self.selection, str) and self.selection not in ("kfold", "holdout"):
            raise ParameterError("selection must be 'kfold', 'holdout' or boolean masks with approximation="
                                 f"{self.approximation!r}; received {self.selection!r}.")
        if self.n_repeats not in (None, 1):
            raise ParameterError(f"n_repeats={self.n_repeats!r} needs the exact route: an approximation scores "
                                 "one k-fold partition (its folds are groups of rows); pass n_repeats=None or 1.")
        held = ~self._masks(n, partitions=1)
        if np.any(held.sum(axis=0) > 1):
            raise ParameterError("selection masks must hold each row out at most once with an approximation "
                                 "(their held-out rows must be disjoint).")
        k = held.shape[0]
        always = ~held.any(axis=0)  # rows no split holds out: an extra group, trained on, never scored
        groups = np.where(always, k, np.argmax(held, axis=0))
        return groups, k + int(always.any()), np.arange(k)

    def _basis(self, kernel: Kernel, rows: TrainingRows, approx: str, m: int, sampling: str, block: int, seed):
        """Nyström centres — every row as a centre (m = n) padded to n's size bucket with zero rows, which
        the map weighs 0, so every n of a bucket compiles the same programs — or random frequencies."""
        if approx == "nystrom":
            Z = rows.centres(kernel, m, sampling, seed, block)
            return pad_rows(Z, size_bucket(m)) if m == rows.n else Z
        return spectral_samples(_unit_kernel(kernel)[0], rows.p, m // 2, seed).astype(rows.dtype)

    def _fit_approximate(self, X: np.ndarray, Y: np.ndarray):
        """Fit on in-memory rows X (n, p) and outputs Y (n, d), both in the working precision."""
        if Y.shape[0] < 2:
            raise ShapeError(f"at least 2 samples are needed to fit; received n_samples={Y.shape[0]}.")
        fit_intercept = check_bool(self.fit_intercept, "fit_intercept")
        return self._fit_approximate_rows(InMemoryRows(X, Y, fit_intercept))

    def _fit_approximate_rows(self, rows: TrainingRows):
        """Select and fit on ``rows``: in memory (:class:`InMemoryRows`) or spread over processes
        (:class:`~jaxmtl.distributed.rows.ShardedRows`); the same selection either way."""
        n, d = rows.n, rows.d
        approx, m, sampling, block = self._approximation_settings(n)
        self.n_components_ = m
        filt = self._approximate_filter()
        kernels, widths = self._resolve_kernels(rows.take(median_heuristic_rows(n))[0])  # the rows it reads
        if approx == "random_features":
            _unit_kernel(kernels[0])
        a, V, omegas = self._resolve_output(d)
        k = min(n, 100)  # rows of the mean diagonal, padded to their bucket
        scale = float(mean_diag(kernels[0], pad_rows(rows.take(np.arange(k))[0], size_bucket(k)), np.int32(k)))
        params = self._approximate_params(filt, scale if scale > 0 else 1.0, rows.dtype)
        if filt.iterative and self.n_steps is None:
            # the exact path's steps, as far as the exact estimators continue it, for every width and ω: a step
            # costs an update of the D × d eigenvalues here; a width scored on a path cut short loses to narrower
            params = _step_grid(2**STEP_DOUBLINGS * int(params[-1]))
        full, rep, index = _path_params(filt, params)
        # the compiled calls' arguments stay NumPy arrays: converting and slicing them compiles nothing
        rep = None if rep is None else np.asarray(rep)
        index = slice(None) if index is None else index
        groups, n_groups, scored = self._groups(n)
        route = requested_route(getattr(self, "route", "auto"), self._feature_routes, approx, filt, len(scored), rows)
        seed = check_random_state(self.random_state)
        self.y_mean_ = rows.y_mean
        dtype = rows.dtype
        aj, Vj = np.asarray(a, dtype), np.asarray(V, dtype)
        pj = np.asarray(full, np.int32 if filt.iterative else dtype)
        report = StageReporter(type(self).__name__, check_bool(self.verbose, "verbose"))
        grid = f"{len(a)} ω × {len(params)} {'steps' if filt.iterative else 'λ'} × {len(scored)} folds"

        search = widths
        self.width_scores_ = None
        if widths is not None and len(kernels) > 1:  # width grid on a subsample, uniform centres
            rows_sub = np.sort(np.random.default_rng(seed).choice(n, min(n, WIDTH_SUBSAMPLE), replace=False))
            cap = rows_sub.size if approx == "nystrom" else max(2, (rows_sub.size // 2) & ~1)
            m_sub = min(m, WIDTH_COMPONENTS, cap)
            sub = InMemoryRows(*rows.take(rows_sub), fit_intercept=False)  # centred on all rows' means
            basis = np.asarray(self._basis(kernels[0], sub, approx, m_sub, "uniform", block, seed))
            blocks = sub.blocks(groups[rows_sub], n_groups, block)  # shaped by the subsample's size bucket

            def score(kerns):  # one kernel per call: one compilation whatever the number of widths
                out = np.concatenate([np.asarray(_score_jit(_stack([k]), basis, np.int32(m_sub), *blocks, n_groups, aj,
                                                            Vj, filt, pj, approx, rep))[..., index]
                                      for k in kerns])
                out = out[:, scored].mean(axis=1)
                return np.where(np.isfinite(out), out, np.inf)

            with report.stage(f"width search on {rows_sub.size} of {n} rows, {m_sub} components: "
                              f"{len(kernels)}{'+' if self.width_factors is None else ''} widths × {grid}"):
                sub_scores = score(kernels)
                if self.width_factors is None:  # coarse-to-fine, as the exact estimators
                    kernels, search, sub_scores = _refine_widths(kernels, widths, sub_scores, score)
            iw = _best_index(sub_scores)[0]
            self.width_scores_ = sub_scores
            assert search is not None  # the searched widths (widths, or their refinement)
            kernels, widths = [kernels[iw]], np.array([search[iw]])
        kernel = kernels[0]
        compare = self._compares_per_output(filt, d)
        self.route_ = route = auto_route(route, n, rows.p, m, d, len(params), len(aj) + compare, len(scored),
                                         int(np.sum(groups == 0)), dtype)
        if route == "cg":
            with report.stage(f"Nyström with {m} centres on {n} rows: Falkon's CG over {grid}"):
                scores, per_output_losses, model = cg_scores(kernel, rows, groups, m, sampling, block, seed,
                                                             aj, Vj, pj, compare)
        else:
            with report.stage(f"{approx} with {m} components on {n} rows: statistics and {grid}"):
                basis = np.asarray(self._basis(kernel, rows, approx, m, sampling, block, seed))
                fmap = _feature_map(kernel, basis, approx, m)
                scores, per_output_losses, model, path_scores = eigen_scores(
                    rows.statistics(fmap, groups, n_groups, block), fmap, aj, Vj, filt, params, pj, scored, compare)
        if not np.isfinite(scores).any():
            raise DivergenceError("every path of the approximate grid produced non-finite losses.")
        if filt.iterative and self.n_steps is None:  # still the last: continued once more, as the exact path
            with report.stage("continuing the path while its best step is the last"):
                _, params, scores = _continue_path([kernel], params, scores, path_scores)
        _, io, ip = _best_index(scores)
        scores = scores[0]  # (Ω, P)
        family_scores = {self.output if isinstance(self.output, str) else "custom": float(scores[io, ip])}
        per_output = None
        if per_output_losses is not None:  # every output its own λ (A = I), on the same folds
            per_output = np.argmin(per_output_losses, axis=0)
            family_scores["independent"] = float(per_output_losses[per_output, np.arange(d)].sum())
        self.family_ = min(family_scores, key=lambda f: family_scores[f])
        self.family_scores_ = family_scores
        chosen = per_output if self.family_ == "independent" else None  # each output's λ index
        _warn_on_edges(None if widths is None else float(widths[0]), search, params,
                       ip if chosen is None else int(chosen.max()), filt,
                       self.width_factors is None and self.n_steps is None,
                       self._approximate_edge_hint(filt, dtype))
        self.approximate_ = True
        self.kernel_ = kernel
        self.filter_ = filt
        if chosen is None:
            self.output_matrix_ = jax.device_put(np.asarray((V * a[io]) @ V.T, dtype))
            self.feature_map_, self.coef_ = model(np.full(d, io), np.full(d, ip), params)
        else:  # the per-output family: the ω row after the family's
            self.output_matrix_ = jax.device_put(np.eye(d, dtype=dtype))
            self.feature_map_, self.coef_ = model(np.full(d, len(aj)), chosen, params)
        self.n_outputs_ = d
        self.cv_scores_ = scores
        self.path_params_ = params
        self.kernel_widths_ = search
        self.omegas_ = omegas
        self.best_params_ = {
            "kernel": kernel,
            "kernel_width": None if widths is None else float(widths[0]),
            "omega": None if omegas is None or chosen is not None else float(omegas[io]),
            "param": [float(params[j]) for j in chosen] if chosen is not None
            else int(params[ip]) if filt.iterative else float(params[ip]),
        }
        self.best_score_ = family_scores[self.family_]
        return self

    def _fit_on_mesh(self, X: Any, y: Any):
        """The fit on X (n, p), y (n,) or (n, d) spread over the processes of ``self.mesh`` (arrays,
        memory maps or ``.npy`` paths, the same on every process: :class:`ShardedRows`). The
        inputs' checks, shift and precision come from the width search's subsample, read whole on
        every process; every row is checked for finite values by the process that holds it."""
        mesh = check_mesh(self.mesh)
        source = open_rows(X)
        if len(source.shape) != 2 or source.shape[0] < 2:
            raise ShapeError(f"X must have shape (n, p) with n >= 2 rows; received shape {tuple(source.shape)}.")
        n = int(source.shape[0])
        approx, _, sampling, _ = self._approximation_settings(n)  # refused before the pass over every row
        if approx == "nystrom":
            check_sampling(sampling)
        probe = self._validate_fit_inputs(np.asarray(source[self._subsample_rows(n, min(n, WIDTH_SUBSAMPLE))]))
        rows = ShardedRows(source, y, mesh, self._input_offset_, probe.dtype,
                           check_bool(self.normalize_y, "normalize_y"), check_bool(self.fit_intercept, "fit_intercept"))
        self._y_1d = rows.y_1d
        self._fit_approximate_rows(rows)
        unscale_fitted(self, rows.scales)
        return self

    def _fit_exact_or_approximate(self, X: np.ndarray, Y: np.ndarray):
        """``approximation=None``: the exact estimator's fit (``_fit_coded``); else the approximate one."""
        if self.approximation is None:
            self.approximate_ = False
            return self._fit_coded(X, Y)
        return self._fit_approximate(X, Y)

    def _decision(self, X) -> np.ndarray:
        if getattr(self, "approximate_", False):
            return self._decision_approximate(X)
        return super()._decision(X)

    def predictor(self) -> Predictor:
        """The fitted prediction function as a pytree: a :class:`~jaxmtl.models.FeaturePredictor`
        on the fitted feature map, or for an exact fit the kernel expansion (``PredictorMixin``)."""
        self._check_fitted()
        return FeaturePredictor.of(self) if getattr(self, "approximate_", False) else PredictorMixin.predictor(self)

    def _decision_approximate(self, X) -> np.ndarray:
        X = self._validate_predict_inputs(X)
        dtype = self.coef_.dtype
        F = in_row_blocks(lambda B: _predict_block(self.feature_map_, jnp.asarray(B, dtype), self.coef_,
                                                   self.output_matrix_), X)
        return F + self.y_mean_


class ApproximateKernelRegressor(RegressorMixin, ApproximationMixin, _SpectralEstimator):
    """Vector-valued kernel regression with K ≈ ΦΦᵀ (Nyström or random features) and a spectral filter.

    The parameters of :class:`~jaxmtl.VectorValuedRegressor` (kernel, output, filter, selection
    'kfold' | 'holdout' | masks, n_folds, n_steps, lambdas, omegas, width_factors,
    validation_fraction, fit_intercept, random_state, verbose), plus:

    Args:
      approximation: 'nystrom' (m centres drawn from the training rows) or 'random_features'
        (Gaussian, Laplacian or Matérn kernels; n_components features, 2 per frequency).
      filter: a filter or its name; None (default): Tikhonov on the D × D path, every λ from one
        eigendecomposition, from 1 down to the working precision's resolution (10⁻⁸ in float32,
        10⁻¹² in float64, relative to the kernel's mean diagonal; ``default_lambdas`` in
        :mod:`jaxmtl.models.fields`), or the ν-method when ``n_steps`` is given. The ν-method's
        2400 steps reach an effective λ near 10⁻⁷ only, short of what noiseless data want.
      n_components: m centres or D features; None (default): min(n, 1000) Nyström centres (all
        rows when n < 1000, recorded in ``n_components_``) or 1000 random features.
      sampling: Nyström centres 'uniform' or by approximate ridge 'leverage' scores.
      block_size: rows of features evaluated at once (memory block_size × n_components).
      normalize_y: fit the outputs divided by their standard deviations (as
        :class:`~jaxmtl.VectorValuedRegressor`).
      matmul_precision: None or 'highest' (full float32 matrix products, the default), 'high' /
        'tensorfloat32' / 'tf32' or 'default' / 'bfloat16': reduced-precision products on GPUs and
        TPUs for path steps, eigen-path products and selection losses (Gram evaluations stay
        full precision); warns when the selected model is beyond them (docs/precision.md).
      dtype: None (JAX's default), 'float32' or 'float64': the precision of fit and predict whatever
        JAX's global setting (see docs/precision.md); outputs are float64 either way.

    With the default ``output`` and a closed-form filter (the default Tikhonov), the fit also scores
    the per-output family on the same folds — A = I and every output its own λ, the baseline of a
    ridge per output — and keeps the family of the lower k-fold loss (``family_``: 'independent'
    or 'common_similarity'; ``best_params_['param']`` then lists the outputs' λ).

      mesh: None (default: the rows in this process) or a ``("rows",)`` mesh over the devices of
        every process of a multi-process run (:func:`~jaxmtl.distributed.global_mesh`): every
        process calls ``fit`` with the same arguments — arrays, memory maps or ``.npy`` paths —
        and holds only its own rows; the statistics are summed over the processes and every
        process ends with the same model (docs/distributed.md). Needs ``approximation='nystrom'``
        with ``sampling='uniform'``, or random features.
      route: 'eigen' (every filter and selection), 'cg' (Nyström, Tikhonov, one held-out split:
        Falkon's CG over the whole grid, 20 passes over the training rows) or 'auto' (default): the
        cheaper by the cost model where CG can serve (:mod:`jaxmtl.models._feature_routes`); CG wins
        with many centres and few grid columns (e.g. ``output='independent'``). Taken: ``route_``.

    Attributes (after fit): see :class:`ApproximationMixin`, ``family_``, ``family_scores_``
    ({family: its k-fold loss, in the units of ``best_score_``}) and ``n_features_in_``.
    """

    def __init__(self, kernel: Kernel | None = None, approximation: str = "nystrom", n_components: int | None = None,
                 sampling: str = "uniform", output: Any = "common_similarity", filter: Any = None,
                 selection: Any = "kfold", n_folds: int = 5, n_steps: int | None = None, lambdas: Any = None,
                 omegas: Any = None, width_factors: Any = None, validation_fraction: float = 0.2,
                 fit_intercept: bool = True, block_size: int = 2048, random_state: int = 0,
                 verbose: bool = False, normalize_y: bool = True, dtype: Any = None,
                 matmul_precision: str | None = None, mesh: Any = None, route: str = "auto") -> None:
        self.kernel = kernel
        self.approximation = approximation
        self.n_components = n_components
        self.sampling = sampling
        self.output = output
        self.filter = filter
        self.selection = selection
        self.n_folds = n_folds
        self.n_steps = n_steps
        self.lambdas = lambdas
        self.omegas = omegas
        self.width_factors = width_factors
        self.validation_fraction = validation_fraction
        self.fit_intercept = fit_intercept
        self.block_size = block_size
        self.random_state = random_state
        self.verbose = verbose
        self.normalize_y = normalize_y
        self.dtype = dtype
        self.matmul_precision = matmul_precision
        self.mesh = mesh
        self.route = route

    _feature_routes = ("auto", "eigen", "cg")

    def _approximate_filter(self) -> SpectralFilter:
        """``filter`` resolved; None (the default): Tikhonov, or the ν-method when ``n_steps`` is given."""
        if self.filter is None:
            return get_filter("nu_method" if self.n_steps is not None else "tikhonov")
        return get_filter(self.filter)

    def _approximate_params(self, filt: SpectralFilter, scale: float, dtype: Any) -> np.ndarray:
        """The default λ grid reaches the working precision's resolution (:func:`default_lambdas`)."""
        if filt.iterative or self.lambdas is not None:
            return super()._approximate_params(filt, scale, dtype)
        return default_lambdas(dtype) * scale

    def _approximate_edge_hint(self, filt: SpectralFilter, dtype: Any) -> str | None:
        return float32_lambda_hint(filt, self.lambdas, dtype)

    def _compares_per_output(self, filt: SpectralFilter, d: int) -> bool:
        """The default output family with a closed-form filter and several outputs: the coupled
        A_ω grid and every output's own λ (A = I) are scored on the same folds, the lower kept."""
        return d > 1 and not filt.iterative and isinstance(self.output, str) and self.output == "common_similarity"

    def fit(self, X: ArrayLike, y: ArrayLike) -> ApproximateKernelRegressor:
        """Select width, ω and the filter parameter on the approximate path; fit on all rows.

        Args:
          X: (n, p) inputs; y: (n, d) or (n,) outputs — arrays or memory maps; with ``mesh``
            also ``.npy`` paths, the same on every process, each reading only its own rows.
        """
        if self.mesh is not None:
            return self._fit_on_mesh(X, y)
        X = self._validate_fit_inputs(memory_map(X))
        Y, self._y_1d = check_outputs(y, X.shape[0], "y")
        scales = output_scales(Y, self.normalize_y)
        self._fit_approximate(X, (Y / scales).astype(X.dtype))
        unscale_fitted(self, scales)
        return self

    def predict(self, X: ArrayLike) -> np.ndarray:
        """(m, d) predictions ((m,) if fitted on 1-D outputs), in row blocks; X an array, a memory
        map or a ``.npy`` path."""
        F = self._decision_approximate(memory_map(X))
        return F[:, 0] if self._y_1d else F
