r"""Multi-task regression with different inputs per task ([BRBV11] §6).

Data in long form (xᵢ, tᵢ, yᵢ). Two families, selected on the same folds with the same loss
(``family='auto'``):

* the common-similarity family: the joint kernel Q((x,t),(x',t')) = K(x,x')·A_ω[t,t'] with
  A_ω = ω11ᵀ + (1−ω)I (eq. 18): ω = 0 is independent tasks with one shared width, filter
  parameter and intercept, ω = 1 one pooled function;
* the independent family (:mod:`jaxmtl.models._per_task`): every task its own Gaussian width,
  filter parameter and mean, selected per task — the per-task baseline itself, in one compiled
  call over tasks padded to a common size.

In the common-similarity family Q is not a Kronecker product: up to
``EXACT_MAX_UNKNOWNS`` rows it is materialised and eigendecomposed per ω (every filter, LOO and
GCV; :mod:`jaxmtl.paths.dense`; the default widths searched on a random subsample of 400 rows
above that many, as on the matrix-free route, then only the best width on all rows), above
that the path is matrix-free (:mod:`jaxmtl.paths.scan`):
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

from typing import Any, Callable, cast

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from .._checks import check_bool, check_n_folds, check_outputs, check_random_state, check_unit_interval
from .._jit import jit
from ..errors import ParameterError, ShapeError, TaskError
from ..kernels.scalar import Gaussian, Kernel
from ..operators.base import DenseOperator
from ..operators.tasks import (
    CommonSimilarityTaskOperator,
    blocks_pay_off,
    check_tasks,
    same_task_mask,
    task_block_index,
    task_blocks,
)
from ._base import RegressorMixin, resolve_filter
from ._buckets import pad_rows, size_bucket, task_block
from ._matrix_free import Buckets, _MatrixFreeEstimator
from ._per_task import (
    FAMILIES,
    IndependentFit,
    independent_params,
    select_independent,
    task_predict,
)
from ._row_blocks import in_row_blocks
from ._task_folds import task_kfold_masks
from .predictor_kinds import TaskPredictor
from .predictors import PerOutputGaussian, _cast, input_shift

__all__ = ["MultiTaskRegressor"]

# With the default hold-out the independent family chooses each task's width and λ on k-fold
# splits stratified by task (every row of a task validated, as a per-task GridSearchCV does) up to
# this many rows, and the families are compared on those folds; above, on the hold-out (docs/defaults.md).
TASK_KFOLD_MAX_ROWS = 5000


def _operator(K, omega, row_index, col_index, S):
    KS = K * S.astype(K.dtype) if S is not None else task_blocks(K, row_index, col_index)
    return CommonSimilarityTaskOperator(K, KS, omega)


def _build(kern, omega, data):
    X, *same = data
    return _operator(kern(X, X), omega, *same)


def _build_dense(kern, omega, data):
    """The exact route's operator on bucket-padded rows: Q_ω = ωK + (1 − ω)K∘S materialised from
    ``data`` (X (N, p), S (N, N) the same-task mask), entry by entry as ``_operator``'s products
    give it; the padded rows' rows and columns are masked out by the exact path."""
    X, S = data
    K = kern(X, X)
    return DenseOperator(omega * K + (1.0 - omega) * (K * S.astype(K.dtype)), 1)


def _padded_data(X: np.ndarray, codes: np.ndarray) -> Callable:
    """``data(rows, size)`` of :func:`_build_dense`: rows of X (None: all) and their same-task mask,
    zero-padded to ``size`` rows (the padding of task −1: of no task), in NumPy."""
    def data(rows, size):
        Xr, cr = (X, codes) if rows is None else (X[rows], codes[rows])
        c = np.concatenate([cr, np.full(size - len(cr), -1, cr.dtype)])
        return pad_rows(Xr, size), c[:, None] == c[None, :]

    return data


def _padded_task_data(X: np.ndarray, codes: np.ndarray) -> Callable:
    """``data(rows, size)`` of :func:`_build` (the matrix-free route) on rows padded to ``size``: X
    zero-padded and the same-task part as task blocks whose width depends only on the rows' bucket
    (:func:`~jaxmtl.models._buckets.task_block`; id ``size`` marks a block's padding), or as the
    dense same-task mask where blocks would not pay. The padding rows are masked out by the path."""
    def data(rows, size):
        Xr, cr = (X, codes) if rows is None else (X[rows], codes[rows])
        ri, _ = task_block_index(cr, cr)  # (T, largest task), padded with len(cr)
        index = np.full((ri.shape[0], task_block(ri.shape[1], len(cr), ri.shape[0])), size, np.int32)
        index[:, :ri.shape[1]] = np.where(ri == len(cr), size, ri)
        if blocks_pay_off(index, index, size, size):
            return pad_rows(Xr, size), index, index, None
        c = np.concatenate([cr, np.full(size - len(cr), -1, cr.dtype)])  # the padding: of no task
        return pad_rows(Xr, size), None, None, c[:, None] == c[None, :]

    return data


@jit
def _predict(kern, omega, X_new, X_fit, codes_new, codes_fit, coef):
    """(m,) Q_ω(X_new, X_fit) coef, the same-task mask of the codes built inside the program."""
    return _operator(kern(X_new, X_fit), omega, None, None, same_task_mask(codes_new, codes_fit)).mv(coef)[:, 0]


class MultiTaskRegressor(RegressorMixin, _MatrixFreeEstimator):
    """Multi-task kernel regression with the common-similarity kernel and an iterative filter.

    Args:
      kernel: scalar kernel, or a list of kernels (yours too) to choose from with ω and the filter
        parameter on the same folds; None selects a Gaussian width from median × 4ᵏ, k = −2 … 3,
        refined around the best (or ``median × width_factors`` when given).
      omegas: ω grid in [0, 1] (default 0, 0.1, …, 1): ω = 0 independent tasks, 1 pooled.
      filter: for both families 'nu_method', 'landweber'; on the exact route and in the
        independent family also 'tikhonov', 'tsvd', 'iterated_tikhonov' (or an instance). None
        (default): the ν-method in the common-similarity family and Tikhonov in the independent
        one — KernelRidge per task, the baseline that family must contain (docs/defaults.md).
      n_steps: path length (default 300 for the ν-method, 3000 for Landweber, evaluated on a
        geometric grid and continued when the best step is the last).
      selection: 'auto' (default; below), 'holdout', 'kfold' (folds vmapped), on the exact route
        also 'loo' and 'gcv' (closed form), or boolean training masks (k, N) / (N,). 'auto': the
        common-similarity family selects by leave-one-out on the exact route (every row
        validated, at the cost of one hold-out) and on the hold-out on the matrix-free route; the
        independent family chooses each task's width and λ on ``n_folds``-fold splits stratified
        by task (every row of a task validated, repeated as ``n_repeats`` says; the hold-out
        above ``TASK_KFOLD_MAX_ROWS`` = 5000 rows), and the families are compared there — the
        common-similarity family at its selected width and ω. At tens of rows per task one
        hold-out validates a handful of each task's rows and loses to per-task tuned
        ``KernelRidge`` (docs/defaults.md).
      n_folds, validation_fraction, width_factors, random_state: as in
        :class:`~jaxmtl.VectorValuedRegressor`.
      fit_intercept: centre y on its training mean.
      lambdas: λ grid of a closed-form filter, relative to the Gram's mean diagonal (default 30
        values in [1e-6, 1]).
      route: 'auto' (exact up to ``EXACT_MAX_UNKNOWNS`` = 1500 rows, else matrix-free), 'exact'
        or 'matrix_free'.
      matmul_precision: None or 'highest' (full float32 matrix products, the default), 'high' /
        'tensorfloat32' / 'tf32' or 'default' / 'bfloat16': reduced-precision products on GPUs and
        TPUs for path steps, eigen-path products and selection losses (Gram evaluations stay
        full precision); warns when the selected model is beyond them (docs/precision.md).
      dtype: None (JAX's default), 'float32' or 'float64': the precision of fit and predict whatever
        JAX's global setting (see docs/precision.md); outputs are float64 either way.
      family: 'auto' (default): the common-similarity and the independent family, the one of
        lower validation loss on the comparison folds kept; 'common_similarity'; 'independent'
        (every task its own Gaussian width, filter parameter and mean; needs ``kernel=None`` or a
        :class:`~jaxmtl.kernels.Gaussian`, and 'auto', 'kfold', 'holdout' or masks — with 'loo' /
        'gcv' 'auto' keeps the common-similarity family, the only one with those closed forms).
      n_repeats: partitions of a 'kfold' selection (None: ⌈1000 / N⌉, at most 3: repeated
        k-fold where N is small, as :class:`~jaxmtl.MultiClassClassifier`).
      verbose: print each stage of the fit with its time, and a bar of the steps done on the
        matrix-free route, on stderr.

    Both families are compared on the same folds (those of the independent family: the k folds
    stratified by task with 'auto', else the hold-out, the k folds or the given masks), each task
    of the independent family selected on its rows in them, and by the same
    loss there: the held-out squared error averaged over each fold's rows, then over folds —
    for the independent family *cross-fitted* (each task's parameters chosen on one random
    half of its held-out rows score the other half, and vice versa; see
    :mod:`jaxmtl.models._per_task`), since choosing a width and a parameter per task on a few
    held-out rows each makes its plain validation loss optimistic.

    Attributes (after fit): family_, family_scores_ ({family: the loss compared: validation
    loss of the common-similarity family, cross-fitted validation loss of the independent
    one}), best_score_ (the chosen family's plain validation loss), coef_ (N, 1)
    (common-similarity) or (T, r) (independent: each task's coefficients on its rows, zero-padded
    to a block of r rows shared by every task, :func:`~._buckets.task_block`), kernel_, route_,
    best_params_ (kernel_width, omega, param = steps or λ; for the independent family per-task
    arrays and omega None), task_widths_, task_params_, task_means_ (T,) (independent family),
    cv_scores_ (n_kernels, n_omegas, n_params) of the common-similarity search, path_params_, tasks_
    (task labels), n_features_in_.
    """

    _kernel_lists = True

    def __init__(self, kernel: Kernel | list[Kernel] | None = None, omegas: Any = None, filter: Any = None,
                 n_steps: int | None = None, selection: Any = "auto", n_folds: int = 5,
                 validation_fraction: float = 0.25, width_factors: Any = None,
                 fit_intercept: bool = True, random_state: int = 0, lambdas: Any = None,
                 route: str = "auto", family: str = "auto", n_repeats: int | None = None,
                 dtype: Any = None, verbose: bool = False,
                 matmul_precision: str | None = None) -> None:
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
        self.dtype = dtype
        self.matmul_precision = matmul_precision
        self.family = family
        self.n_repeats = n_repeats
        self.verbose = verbose

    def _family(self) -> str:
        if not isinstance(self.family, str) or self.family not in FAMILIES:
            raise ParameterError(f"family must be one of {FAMILIES}; received {self.family!r}.")
        closed_form = isinstance(self.selection, str) and self.selection in ("loo", "gcv")
        if self.family == "independent" and closed_form:
            raise ParameterError(f"family='independent' selects on folds: selection must be 'auto', 'kfold', "
                                 f"'holdout' or masks; received {self.selection!r}.")
        if self.kernel is not None and not (isinstance(self.kernel, Gaussian) and np.ndim(self.kernel.sigma) == 0):
            if self.family == "independent":
                raise ParameterError("family='independent' fits a Gaussian kernel per task: kernel must be None "
                                     f"or a Gaussian with one width; received {self.kernel!r}.")
            return "common_similarity"
        return "common_similarity" if closed_form else self.family

    def _task_masks(self, codes: np.ndarray, selection: Any) -> np.ndarray:
        """(k, N) training masks of the independent family's selection and of the comparison of the
        families: with ``selection='auto'`` up to ``TASK_KFOLD_MAX_ROWS`` rows ``n_folds``-fold
        splits stratified by task (:func:`~jaxmtl.models._task_folds.task_kfold_masks`), repeated as
        ``n_repeats`` says; else the masks of ``selection`` (the hold-out above that size)."""
        n = len(codes)
        if isinstance(selection, str) and selection == "auto" and n <= TASK_KFOLD_MAX_ROWS:
            return task_kfold_masks(codes, check_n_folds(self.n_folds, n), check_random_state(self.random_state),
                                    self._n_repeats(n))
        return self._masks(n)

    def _coupled_selection(self, selection: Any, n: int) -> Any:
        """The common-similarity family's selection: ``selection``, or for 'auto' leave-one-out on
        the exact route (every row validated, at the hold-out's cost: one eigendecomposition per
        width and ω) and the hold-out on the matrix-free route (``selection`` is the parameter's
        value)."""
        if isinstance(selection, str) and selection == "auto":
            return "loo" if self._route(n) == "exact" else "holdout"
        return selection

    def fit(self, X: ArrayLike, y: ArrayLike, tasks: ArrayLike) -> "MultiTaskRegressor":
        """Fit on long-form data.

        Args:
          X: (N, p) inputs; y: (N,) outputs; tasks: (N,) task ids (integers or strings).

        Raises:
          TaskError: task ids of an unsupported type, or (with ``family='independent'``) a task
            with a single example — it has no validation fold of its own; ``family='auto'`` then
            keeps the common-similarity family.
        """
        family = self._family()
        X = self._validate_fit_inputs(X)
        Y, _ = check_outputs(y, X.shape[0], "y")
        if Y.shape[1] != 1:
            raise ShapeError(f"y must be 1-D (one output per example); received shape {Y.shape}.")
        codes, labels = check_tasks(tasks, X.shape[0])
        counts = np.bincount(codes, minlength=len(labels))
        if family == "auto" and counts.min() < 2:  # a task of one example has no fold of its own
            family = "common_similarity"
        if family != "common_similarity" and counts.min() < 2:
            single = labels[counts < 2].tolist()
            raise TaskError(f"tasks {single[:10]} have a single example: the independent family (family="
                            f"{self.family!r}) selects a width and a filter parameter per task on held-out "
                            "examples of that task. Pass family='common_similarity' to fit such tasks through "
                            "the shared part, or drop them.")
        omegas = np.linspace(0, 1, 11) if self.omegas is None else self.omegas
        omegas = check_unit_interval(omegas, "omegas")
        y_mean = float(Y.mean()) if check_bool(self.fit_intercept, "fit_intercept") else 0.0
        dtype = jax.dtypes.canonicalize_dtype(X.dtype)
        Y = (Y - y_mean).astype(dtype)
        filt = resolve_filter(self.filter, independent=True)
        selection = self.selection
        try:  # the families' own selections (see _coupled_selection and _task_masks)
            self.selection = "holdout" if isinstance(selection, str) and selection == "auto" else selection
            # the independent family's folds, where the families are compared: like is compared with like
            masks = self._task_masks(codes, selection) if family != "common_similarity" else None
            self.selection = self._coupled_selection(selection, X.shape[0])
            scores = {}
            if family != "independent":
                Xj = np.asarray(X, dtype)  # NumPy: its rows are sliced on the host
                compared = self._select_and_fit(X, Y, _build, omegas, None, compare_masks=masks, subsample_exact=True,
                                                buckets=Buckets(_build_dense, _padded_data(Xj, codes),
                                                                _padded_task_data(Xj, codes)))
                scores["common_similarity"] = self.best_score_ if compared is None else compared
                self.best_params_["omega"] = self._op_param
                self.X_fit_, self.task_codes_ = jax.device_put(Xj), jax.device_put(codes)
        finally:
            self.selection = selection
        if family != "common_similarity":
            kernels, widths = self._resolve_kernels(X)
            fit, independent_score, scores["independent"], _ = select_independent(
                np.asarray(X, dtype), Y[:, 0], codes, len(labels), cast(np.ndarray, masks), filt,
                independent_params(self, filt),
                np.array([float(cast(Gaussian, kernels[0]).sigma)]) if widths is None else widths,
                refine=self.kernel is None and self.width_factors is None,
                random_state=check_random_state(self.random_state))
        self.family_ = min(scores, key=lambda f: scores[f]) if family == "auto" else family
        self.family_scores_ = scores
        if self.family_ == "independent":
            self.coef_, self.X_fit_ = fit.coef, fit.X
            self.task_widths_, self.task_params_, self.task_means_ = fit.widths, fit.params, fit.means
            self.filter_ = filt
            self.best_params_ = {"kernel_width": fit.widths, "omega": None, "param": fit.params}
            self.best_score_ = independent_score
        self.y_mean_, self.tasks_ = y_mean, labels
        return self

    def predict(self, X: ArrayLike, tasks: ArrayLike) -> np.ndarray:
        """(m,) predictions for inputs X of the given (known) tasks."""
        X = self._validate_predict_inputs(X)
        codes, _ = check_tasks(tasks, X.shape[0], known=self.tasks_)
        if getattr(self, "family_", "common_similarity") == "independent":  # files saved before families
            fit = IndependentFit(self.task_widths_, self.task_params_, self.task_means_, self.coef_, self.X_fit_)
            return task_predict(fit, X, codes) + self.y_mean_
        dtype = self.X_fit_.dtype
        omega, n = np.asarray(self._op_param, dtype), self.X_fit_.shape[0]
        # the fitted rows padded to their size bucket (zero coefficients, task −1): one program per bucket
        size = size_bucket(n)
        X_fit, coef = (jax.device_put(pad_rows(np.asarray(a), size)) for a in (self.X_fit_, self.coef_))
        fitted_codes = jax.device_put(np.concatenate([np.asarray(self.task_codes_), np.full(size - n, -1, np.int32)]))
        F = in_row_blocks(lambda B, c: _predict(self.kernel_, omega, np.asarray(B, dtype), X_fit, np.asarray(c),
                                                fitted_codes, coef), X, codes)
        return F + self.y_mean_

    def predictor(self) -> TaskPredictor:
        """The fitted prediction function as a :class:`~jaxmtl.models.predictor_kinds.TaskPredictor`,
        called as ``f(X, codes)`` with ``codes`` the rows' indices into ``tasks_``; (m, 1) outputs.
        A code outside 0 … T − 1 is refused where it is concrete and gives NaN rows when traced
        or exported (``predict`` refuses an unknown task)."""
        self._check_fitted()
        dtype = self.X_fit_.dtype
        T = len(self.tasks_)
        if getattr(self, "family_", "common_similarity") == "independent":
            r = self.X_fit_.shape[1]
            return TaskPredictor(None, PerOutputGaussian(jnp.asarray(self.task_widths_, dtype)),
                                 jnp.reshape(self.X_fit_, (T * r, -1)), jnp.reshape(self.coef_, (T * r,)),
                                 np.repeat(np.arange(T), r), 0.0,
                                 np.asarray(self.task_means_, np.float64) + self.y_mean_, "nan",
                                 input_shift(self, dtype))
        kernel = _cast(self.kernel_, dtype)
        return TaskPredictor(kernel, kernel, self.X_fit_, jnp.asarray(self.coef_, dtype)[:, 0], self.task_codes_,
                             float(self._op_param), np.full(T, self.y_mean_), "nan", input_shift(self, dtype))

    def score(self, X: ArrayLike, y: ArrayLike, tasks: ArrayLike) -> float:  # type: ignore[override]  # + tasks
        """Explained variance 1 − MSE / Var(y) over all tasks (the School score)."""
        pred = self.predict(X, tasks)
        y, _ = check_outputs(y, pred.shape[0], "y")
        y = y[:, 0]
        if not np.var(y) > 0:
            raise ParameterError("explained variance is undefined for constant y (its variance is 0).")
        return float(1.0 - np.mean((y - pred) ** 2) / np.var(y))
