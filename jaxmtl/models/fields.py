r"""Vector-field regression with divergence-free and curl-free kernels ([BRBV11] §4.1, §7.1).

A field v: ℝᵖ → ℝᵖ is learned with Γ_γ = γ·Γ_cf + (1−γ)·Γ_df, the Gaussian curl-free (27) and
divergence-free (26) kernels, by a spectral filter on the operator; γ is chosen on a grid, and the
fitted field splits into its curl-free and divergence-free parts (same coefficients, each
kernel's share).

Routes and filter. The default (``filter=None``) is Tikhonov on the materialised operator up to
``TIKHONOV_MAX_UNKNOWNS`` = 400 unknowns n·p (200 points in 2-D; with ``route='exact'`` at any
size), with λ from 1 down to the working precision's resolution (:func:`default_lambdas`: 10⁻⁸ in
float32, 10⁻¹² in float64, where the other estimators stop at 10⁻⁶), and the ν-method matrix-free
above. Noiseless fields are fitted best near interpolation: Tikhonov's eigen path reaches every λ
of that range at once, where the ν-method's effective λ stops near σ_max/t² at its last step
(~1.7·10⁻⁷ σ_max after 2400 steps). On the defaults benchmark (docs/defaults.md) field 1's mean
over γ went from 0.84 × to 0.81 × tuned KernelRidge, and on new fields of 20–200 points the default
is at or below the plain div/curl grid of its own precision at every size. Departure: [BRBV11] §7.1 runs the
ν-method; ``filter='nu_method'`` (or ``n_steps``) is the paper's, as in ``benchmarks/repro_fields.py``.

With ``route='auto'`` an iterative filter selected by k-fold or hold-out runs matrix-free above
``JOINT_MAX_UNKNOWNS`` = 200 unknowns n·p (one ``lax.scan`` of operator products per path, folds
and γ vmapped); other filters, LOO and GCV materialise the operator and eigendecompose it (up to
``EXACT_MAX_UNKNOWNS`` = 1500 unknowns). The eigen path cannot share a decomposition across γ:
Γ_cf and Γ_df do not commute (for p = 2, Γ_df = R Γ_cf Rᵀ with R the quarter turn, yet the
eigenvectors of their mixture move with γ), so it costs one eigendecomposition per width, γ and
fold, where a default ν-method path costs ~150 products of one GEMM each. With the two-stage
search below the two cost the same at 200 points in 2-D (Tikhonov 3 s, the ν-method 5 s per fit,
one core), and the eigendecompositions 1.6 × more at 400 points and 2.4 × at 700 (one-off
measurements on noisy field 1, equal errors) — hence ``TIKHONOV_MAX_UNKNOWNS``.

Selection in two stages (default widths, above ``JOINT_MAX_UNKNOWNS`` unknowns; at or below it,
where the joint search costs seconds, widths × every γ are scored jointly on the exact route as
before, because the coarse γ of the width stage chose worse widths there: on field 1 at 40 points
the angular error at γ = ¼ and ½ rose from 1.17× and 1.09× a tuned KernelRidge's to 1.42× and
1.31×). The width stage scores the default width search
(median × 4ᵏ, k = −2 … 3, extended past an edge, refined × 2^±1, polished × 2^±1/2 and × 2^±1/4)
at three γ only — the grid's least, middle and largest (0, ½, 1 by default) — on 5 folds
(``WIDTH_FOLDS``) of at most ``WIDTH_SUBSAMPLE`` = 400 random rows; the path stage scores every γ
and step at the chosen width on all rows and ``N_FOLDS`` folds. ``width_factors`` or a
``kernel`` score widths × every γ jointly instead. ``kind='independent'`` fits each component
with a scalar Gaussian kernel (Γ = K·I); ``kind='auto'`` (the default) selects both families on
the same folds and keeps the one of lower validation loss. Departure: the paper fits the
div/curl family only; a field whose curl-free and divergence-free parts are balanced (γ near ½)
is fitted better by the Gaussian ⊗ I (at γ = ½ the div/curl kernel is itself a scalar kernel
times I, a rougher one than the Gaussian), so the default lets validation decide. Selection is
10-fold by default (``N_FOLDS``), not 5-fold: fields are often sampled at a few dozen points,
where a 5-fold validation fold holds a handful of points and its losses are too noisy to choose
between the families and widths. On the few dozen points where one partition's losses are noisiest,
the 10 folds are repeated over ⌈1000 / N⌉ ≤ 3 independent shuffles (``n_repeats=None``, the rule of
the other estimators) and the losses averaged: on the mixed fields of the defaults benchmark at
20 and 40 points one 10-fold partition put the width or λ a grid step off on single draws.

Example:
    >>> import numpy as np
    >>> from jaxmtl.datasets import grid_2d, vector_field_1
    >>> X = grid_2d(8); V, _, _ = vector_field_1(X, 0.3)
    >>> model = VectorFieldRegressor(n_steps=50).fit(X, V)
    >>> model.predict_parts(X[:2])[0].shape
    (2, 2)
"""

from __future__ import annotations

from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from .._checks import check_bool, check_outputs, check_random_state, check_unit_interval
from .._jit import jit
from .._progress import StageReporter
from ..errors import ParameterError, ShapeError
from ..filters.spectral import SpectralFilter, get_filter
from ..kernels.scalar import Gaussian, Kernel
from ..operators.base import SeparableOperator
from ..operators.fields import field_operator
from ..selection.criteria import kfold_masks
from ._base import RegressorMixin
from ._row_blocks import in_row_blocks
from .predictor_kinds import FieldPredictor
from .predictors import Predictor, SeparablePredictor, _cast, input_shift
from ._buckets import FINE_BUCKET_BITS, pad_rows, size_bucket
from ._matrix_free import MATRIX_FREE_STEPS, Buckets, _MatrixFreeEstimator, _scorer, _search_widths
from ._grid_search import default_lambdas, float32_lambda_hint
from ._spectral import WIDTH_SUBSAMPLE, _best_index, _step_grid, _warn_on_edges

__all__ = ["VectorFieldRegressor", "angular_error", "default_lambdas"]

KINDS = ("auto", "div_curl", "curl_free", "div_free", "independent")
N_FOLDS = 10  # default folds (see the module docstring and docs/defaults.md)
WIDTH_FOLDS = 5  # default folds of the width stage (the other estimators' default)
JOINT_MAX_UNKNOWNS = 200  # at most this many unknowns n·p: widths × γ jointly on the exact route
# γ points of the width stage: the grid's least, middle and largest value
COARSE_GAMMAS = 3
# filter=None: Tikhonov up to this many unknowns n·p with route='auto' (the ν-method matrix-free above):
# there its eigendecompositions cost no more than the ν-method's path (200 points in 2-D: 3 s against
# 5 s per fit), beyond it they cost more (1.6 × at 400 points, 2.4 × at 700) for the same error on noisy fields
TIKHONOV_MAX_UNKNOWNS = 400


def _coarse(grid: np.ndarray) -> np.ndarray:
    """The width stage's γ points: the grid's least, middle and largest (all of it up to COARSE_GAMMAS).

    Example:
        >>> _coarse(np.linspace(0, 1, 11)).tolist()
        [0.0, 0.5, 1.0]
    """
    grid = np.unique(grid)
    return grid if grid.size <= COARSE_GAMMAS else grid[[0, (grid.size - 1) // 2, -1]]


def _build_div_curl(kern, gamma, X):
    return field_operator(X, X, kern.sigma, gamma)


def _build_independent(kern, gamma, X):
    return SeparableOperator(kern(X, X), jnp.eye(X.shape[1], dtype=X.dtype))


@jit
def _expansion(kern, X_new, X_fit, coef):
    return kern(X_new, X_fit) @ coef


@jit
def _parts(sigma, gamma, X_new, X_fit, coef):
    return field_operator(X_new, X_fit, sigma, gamma).parts(coef)


def angular_error(V_true: ArrayLike, V_pred: ArrayLike) -> float:
    """Mean angular error ([BRBV11] eq. 33) between fields V_true and V_pred, each (n, p), in radians.

    arccos of ⟨(v, 1), (v̂, 1)⟩ / (‖(v, 1)‖‖(v̂, 1)‖), averaged over points.
    """
    a = np.c_[np.asarray(V_true), np.ones(len(V_true))]  # type: ignore[arg-type]  # (n, p): sized
    b = np.c_[np.asarray(V_pred), np.ones(len(V_pred))]  # type: ignore[arg-type]
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return float(np.mean(np.arccos(np.clip(cos, -1.0, 1.0))))


class VectorFieldRegressor(RegressorMixin, _MatrixFreeEstimator):
    """Learn a vector field ℝᵖ → ℝᵖ with div-free / curl-free kernels.

    Args:
      kernel: a Gaussian kernel; None selects its width from median × 4ᵏ, k = −2 … 3, refined
        around the best (or ``median × width_factors`` when given).
      kind: 'auto' ('div_curl' or 'independent', whichever validates better), 'div_curl' (γ
        selected on ``gammas``), 'curl_free' (γ = 1), 'div_free' (γ = 0) or 'independent'
        (Gaussian ⊗ I).
      gammas: γ grid for 'div_curl' (default 0, 0.1, …, 1).
      filter: a spectral filter or its name; None (the default) runs Tikhonov on the exact route
        (up to ``TIKHONOV_MAX_UNKNOWNS`` unknowns n·p with ``route='auto'``) on the λ grid of
        :func:`default_lambdas`, and the ν-method matrix-free above; with ``n_steps`` given, the
        ν-method, with ``lambdas`` given, Tikhonov.
      n_steps, selection, n_folds, validation_fraction, width_factors, random_state,
        lambdas, route, verbose: as in :class:`~jaxmtl.MultiTaskRegressor`, but ``n_folds=None`` (the
        default) means ``N_FOLDS`` = 10 folds, one per sample below 10 samples (default
        selection: k-fold; on the exact route 'loo' leaves out one component of one point at a
        time).
      matmul_precision: None or 'highest' (full float32 matrix products, the default), 'high' /
        'tensorfloat32' / 'tf32' or 'default' / 'bfloat16': reduced-precision products on GPUs and
        TPUs for path steps, eigen-path products and selection losses (Gram evaluations stay
        full precision); warns when the selected model is beyond them (docs/precision.md).
      dtype: None (JAX's default), 'float32' or 'float64': the precision of fit and predict whatever
        JAX's global setting (see docs/precision.md); outputs are float64 either way.
      n_repeats: partitions of a 'kfold' selection in the joint search and the path stage (None:
        ⌈1000 / N⌉ for the size bucket N of the number of points, at most 3, as
        :class:`~jaxmtl.VectorValuedRegressor`: 3 partitions of 10 folds up to 333 points); the
        width stage above ``JOINT_MAX_UNKNOWNS`` scores one 5-fold partition.

    Attributes (after fit): coef_ (n, p), kernel_, kind_ (the fitted family), best_params_
    (kernel_width, gamma, param), cv_scores_ (n_kernels, n_gammas, n_steps), n_features_in_;
    with ``kind='auto'`` also kind_scores_ (validation loss of each family's best point). With the
    default widths (no ``kernel``, no ``width_factors``) the width stage's widths width_grid_ (W,)
    and losses width_scores_ (W, n_coarse_gammas, n_steps) (:meth:`_resolve_kernels`), and
    cv_scores_ holds the chosen width only; otherwise both are None.
    """

    width_grid_: np.ndarray | None  # set by fit (None when the widths were not searched in stages)
    width_scores_: np.ndarray | None

    _default_n_folds = N_FOLDS

    def __init__(self, kernel: Gaussian | None = None, kind: str = "auto", gammas: Any = None,
                 filter: Any = None, n_steps: int | None = None, selection: str = "kfold",
                 n_folds: int | None = None, validation_fraction: float = 0.25, width_factors: Any = None,
                 random_state: int = 0, lambdas: Any = None, route: str = "auto", dtype: Any = None,
                 verbose: bool = False,
                 matmul_precision: str | None = None, n_repeats: int | None = None) -> None:
        self.kernel = kernel
        self.kind = kind
        self.gammas = gammas
        self.filter = filter
        self.n_steps = n_steps
        self.selection = selection
        self.n_folds = n_folds
        self.validation_fraction = validation_fraction
        self.width_factors = width_factors
        self.random_state = random_state
        self.lambdas = lambdas
        self.route = route
        self.dtype = dtype
        self.matmul_precision = matmul_precision
        self.verbose = verbose
        self.n_repeats = n_repeats

    def fit(self, X: ArrayLike, V: ArrayLike) -> "VectorFieldRegressor":
        """Fit on (n, p) inputs and (n, p) field values."""
        X = self._validate_fit_inputs(X)
        V, _ = check_outputs(V, X.shape[0], "V")
        if V.shape[1] != X.shape[1]:
            raise ShapeError(
                f"a vector field maps R^p to R^p: X has {X.shape[1]} features but V has {V.shape[1]} components."
            )
        if X.shape[0] < 2:
            raise ShapeError(f"VectorFieldRegressor needs at least 2 samples to fit a field (its width and "
                             f"regularisation are chosen from the data); received n_samples={X.shape[0]}.")
        if self.kind not in KINDS:
            raise ParameterError(f"kind must be one of {KINDS}; received {self.kind!r}.")
        if self.kind != "independent" and X.shape[1] < 2:
            raise ShapeError(f"div-free and curl-free kernels need fields of dimension p >= 2; received "
                             f"n_features={X.shape[1]} (kind='independent' fits any dimension).")
        if self.kernel is not None and not isinstance(self.kernel, Gaussian):
            raise ParameterError(f"kernel must be a Gaussian (or None); received {self.kernel!r}.")
        if self.kind != "auto":
            self.__dict__.pop("kind_scores_", None)  # from an earlier fit with kind='auto'
            return self._fit_kind(X, V, self.kind)
        self._fit_kind(X, V, "div_curl")
        div_curl = dict(vars(self))
        self._fit_kind(X, V, "independent")
        scores = {"div_curl": div_curl["best_score_"], "independent": self.best_score_}
        if scores["div_curl"] <= scores["independent"]:
            self.__dict__.update(div_curl)
        self.kind_scores_ = scores
        return self

    def _fit_kind(self, X: np.ndarray, V: np.ndarray, kind: str) -> "VectorFieldRegressor":
        grid = {"div_curl": np.linspace(0, 1, 11) if self.gammas is None else self.gammas,
                "curl_free": [1.0], "div_free": [0.0], "independent": [0.0]}[kind]
        # one working precision for inputs, field, γ and kernel: float32 X under x64 computes in float64
        # (a float32 carry beside a float64 width or γ changes the path's scan carry dtype: TypeError)
        dtype = jax.dtypes.canonicalize_dtype(np.float64)
        X = X.astype(dtype)
        gammas = check_unit_interval(grid, "gammas").astype(dtype)
        build = _build_independent if kind == "independent" else _build_div_curl
        V = V.astype(dtype)  # NumPy arguments: converting and slicing them compiles nothing
        def padded(rows, size):  # the inputs of ``rows`` (None: all), zero-padded to ``size`` rows
            return pad_rows(X if rows is None else X[rows], size)

        stage: dict[str, Any] = {"build": build, "gammas": gammas, "padded": padded, "V": V, "searched": None}
        self._width_stage = stage
        try:  # every route on rows padded to their size bucket (docs/design.md, "Size buckets")
            self._select_and_fit(X, V, build, gammas, X, buckets=Buckets(build, stage["padded"], stage["padded"]))
        finally:
            del self._width_stage
        searched = stage["searched"]
        self.width_grid_, self.width_scores_ = (None, None) if searched is None else searched
        if searched is not None:  # the one width the path stage scored, out of the width stage's grid
            sigma = float(cast(Gaussian, self.kernel_).sigma)
            self.kernel_widths_ = np.array([sigma], dtype=float)
            self.best_params_["kernel_width"] = sigma
            _warn_on_edges(sigma, searched[0], [], 0, self.filter_, True)
        self.kind_ = kind
        self.gamma_ = None if kind == "independent" else self._op_param
        self.best_params_["gamma"] = self.gamma_
        self.X_fit_ = jax.device_put(X)
        return self

    def _family_filter(self, unknowns: int) -> SpectralFilter:
        """``filter`` resolved; None (the default): the ν-method when ``n_steps`` is given, Tikhonov
        when ``lambdas`` is, else Tikhonov with ``route='exact'`` or, with 'auto', up to
        ``TIKHONOV_MAX_UNKNOWNS`` unknowns, and the ν-method (matrix-free) above."""
        if self.filter is not None:
            return get_filter(self.filter)
        if self.n_steps is not None or self.lambdas is not None:
            return get_filter("nu_method" if self.n_steps is not None else "tikhonov")
        exact = isinstance(self.route, str) and (self.route == "exact" or (self.route == "auto"
                                                                           and unknowns <= TIKHONOV_MAX_UNKNOWNS))
        return get_filter("tikhonov" if exact else "nu_method")

    def _filter_params(self, filt: SpectralFilter) -> np.ndarray:
        """The shared rule, but for the default λ grid: down to the working precision's resolution
        (:func:`default_lambdas`), where the shared one stops at 10⁻⁶."""
        if filt.iterative or self.lambdas is not None:
            return super()._filter_params(filt)
        return default_lambdas(jax.dtypes.canonicalize_dtype(np.float64))

    def _lambda_edge_hint(self, filt: SpectralFilter) -> str | None:
        """At the default grid's smallest λ in float32: float64 resolves smaller ones."""
        return float32_lambda_hint(filt, self.lambdas, jax.dtypes.canonicalize_dtype(np.float64))

    def _route(self, unknowns: int) -> str:
        return self._route_of(self._family_filter(unknowns), unknowns)

    def _route_of(self, filt: SpectralFilter, unknowns: int) -> str:
        """route='auto' is matrix-free for iterative filters selected by k-fold or hold-out above
        ``JOINT_MAX_UNKNOWNS`` unknowns (see the module docstring), else the eigen-path estimators' rule."""
        if isinstance(self.route, str) and self.route == "auto" and filt.iterative \
                and not (isinstance(self.selection, str) and self.selection in ("loo", "gcv")) \
                and unknowns > JOINT_MAX_UNKNOWNS:
            return "matrix_free"
        return super()._route(unknowns)

    def _resolve_kernels(self, X: np.ndarray) -> tuple[list[Kernel], np.ndarray | None]:
        """During a fit with the default widths: the width stage's choice alone (its widths and
        losses are kept in ``_width_stage['searched']``); otherwise the shared rule.

        The width stage scores the default width search (median × 4ᵏ, extended, refined and
        polished) at the γ grid's least, middle and largest value (:func:`_coarse`), with
        ``WIDTH_FOLDS`` = 5 folds (or the ``n_folds`` / ``selection`` given), on a random subsample of
        ``WIDTH_SUBSAMPLE`` rows above that size; the path stage then scores every γ and step at
        the chosen width on all rows.
        """
        kernels, widths = super()._resolve_kernels(X)
        stage = self.__dict__.get("_width_stage")
        if stage is None or widths is None or self.width_factors is not None:
            return kernels, widths
        V = stage["V"]
        n, p = V.shape
        if n * p <= JOINT_MAX_UNKNOWNS:
            return kernels, widths
        named = isinstance(self.selection, str)
        rows = self._subsample_rows(n, WIDTH_SUBSAMPLE) if named and n > WIDTH_SUBSAMPLE else np.arange(n)
        m = rows.size
        if named and self.selection == "kfold" and self.n_folds is None:
            masks = kfold_masks(m, min(WIDTH_FOLDS, m), check_random_state(self.random_state))
        else:
            masks = self._masks(m)
        mode = self.selection if named and self.selection in ("loo", "gcv") else "kfold"
        filt = self._family_filter(n * p)  # the path stage's filter
        route = self._route_of(filt, m * p)
        path = self._filter_params(filt)
        if filt.iterative and self.n_steps is None:
            path = _step_grid(MATRIX_FREE_STEPS.get(filt.name, int(path[-1])) if route == "matrix_free"
                              else int(path[-1]))
        size = size_bucket(m) if route == "exact" else size_bucket(m, FINE_BUCKET_BITS)  # as the path stage's
        Yj = pad_rows(V[rows], size)
        coarse = _coarse(np.asarray(stage["gammas"]))
        score = _scorer(route, stage["build"], stage["padded"](rows, size), Yj, masks, filt,
                        np.asarray(coarse, Yj.dtype), mode, m)
        report = StageReporter(type(self).__name__, check_bool(self.verbose, "verbose"))
        with report.stage(f"width stage on {m} of {n} rows: {len(widths)}+ widths × {coarse.size} γ × "
                          f"{len(masks)} fold(s), {route}"):
            _, grid, scores = _search_widths(kernels, widths, score, path, polish=True)
        stage["searched"] = (grid, scores)
        return [Gaussian(float(grid[_best_index(scores)[0]]))], None

    def predictor(self) -> Predictor:
        """The fitted field as a pytree, (m, p) → (m, p): a
        :class:`~jaxmtl.models.predictor_kinds.FieldPredictor` (div/curl; its ``parts`` are
        :meth:`predict_parts`'), or a :class:`~jaxmtl.models.SeparablePredictor` with A = I for
        the independent family."""
        self._check_fitted()
        dtype = self.X_fit_.dtype
        kernel = _cast(self.kernel_, dtype)
        if self.kind_ == "independent":
            p = self.X_fit_.shape[1]
            leaves: tuple = (self.X_fit_, jnp.asarray(self.coef_, dtype), jnp.eye(p, dtype=dtype), jnp.zeros(p, dtype),
                             input_shift(self, dtype))
            return SeparablePredictor(kernel, *leaves)
        return FieldPredictor(kernel, self.gamma_, self.X_fit_, jnp.asarray(self.coef_, dtype), input_shift(self, dtype))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """(m, p) predicted field."""
        curl, div = self.predict_parts(X)
        return curl + div

    def predict_parts(self, X: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(curl-free part, divergence-free part) of the predicted field, each (m, p).

        For the 'independent' family (``kind_``) the whole field is returned as the first part.
        """
        X = self._validate_predict_inputs(X)
        dtype = self.X_fit_.dtype
        if self.kind_ == "independent":
            F = in_row_blocks(lambda B: _expansion(self.kernel_, jnp.asarray(B, dtype), self.X_fit_, self.coef_), X)
            return F, np.zeros(F.shape)
        sigma, gamma = cast(Gaussian, self.kernel_).sigma, jnp.asarray(self.gamma_, dtype)
        return in_row_blocks(lambda B: _parts(sigma, gamma, jnp.asarray(B, dtype), self.X_fit_, self.coef_), X)

    def score(self, X: ArrayLike, V: ArrayLike) -> float:  # type: ignore[override]  # a field V, no weights
        """Negative mean angular error (higher is better)."""
        return -angular_error(V, self.predict(X))
