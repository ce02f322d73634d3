r"""OutputKernelRegressor and OutputKernelClassifier: the output kernel learned with the predictor.

Estimators around :mod:`jaxmtl.learning.output_kernel` (Algorithm 1 of Dinuzzo, Ong, Gehler and
Pillonetto, *Learning output kernels with block coordinate descent*, ICML 2011, [DOGP11]): the
model is g(x) = L Σᵢ cᵢ K(x, xᵢ) (+ the training mean of the outputs), and the d × d output
kernel L ⪰ 0 is learned with the coefficients by minimising objective (3). ``output_kernel_``
says which outputs (classes) the model found similar; :func:`jaxmtl.plotting.plot_output_kernel`
draws it.

Centring and what ``output_kernel_`` means. With ``fit_intercept=True`` (the default) the outputs
are centred on their training mean before L is learned. For the classifier every code row has the
same sum (a + (c − 1)b), so the centred codes satisfy Y·1 = 0, and then so does the solution:
from KCL + λC = Y, C·1 = 0 when L·1 = 0, and L = ½CᵀKC at the optimum, so L·1 = 0 exactly — the
learned kernel acts on contrasts between classes only, its rows sum to zero and most off-diagonal
entries are negative. Read it through its normalisation R_ij = L_ij / √(L_ii L_jj)
(``output_correlation_``, the correlation of the centred scores of classes i and j under the
model's prior): classes the model treats as unrelated have R_ij = −1/(c − 1), the value for
L ∝ I − 11ᵀ/c, so pairs above −1/(c − 1) are more similar than independent classes and pairs below
it less. With ``fit_intercept=False`` (the paper's model g(x) = L Σᵢ cᵢ K(x, xᵢ), 0/1 codes, §2.2)
L also carries the common component of the codes, its entries are mostly positive, and the
independent-class reference is R_ij = 0. On load_digits both give the same test accuracy (99.11 %
on two 50/50 splits, float32); on MNIST 4000 / 1000 see ``benchmarks/results/repro_okl.json``.

Selection. The paper computes "the solution for several values of λ by using a warm-start
procedure" (§5.1); here λ and, for the default Gaussian kernel, its width are chosen by k-fold
cross-validation in one compiled call: ``lax.map`` over the kernels, ``vmap`` over the folds
(each fold's training rows gathered into their own Gram, one eigendecomposition each, the path
scored on its held-out rows), and the warm-started λ path (``lax.scan``, decreasing λ, each
Algorithm 1 run from the previous L) inside.
The regressor ranks the grid by the held-out squared error; the classifier as
:class:`~jaxmtl.MultiClassClassifier` does (squared loss on the codes, near-ties broken by the
errors of the argmax rule). The selected pair is refitted on all rows.

Defaults: a Gaussian kernel of width median distance × (1/4, 1/2, 1, 2, 4) — above
``WIDTH_SUBSAMPLE`` = 400 rows searched on a random subsample of that size first, then the best
width × (1/2, 1, 2) on all rows, as :class:`~jaxmtl.MultiClassClassifier` does; λ on 15 values
log-spaced in [10⁻⁶, 10]·λ₀ with λ₀ = (‖K‖_F ‖Y‖_F)^{2/3} for each kernel. Objective (3) is not
scale-free: with one output, one example and L optimised out it is
(y − z)²/(2λ) + (3/2)(z²/(2k))^{2/3}, so the shrinkage is of order one at λ ≈ (k·|y|)^{2/3};
λ₀ is that scale with k and |y| replaced by the norms of K and Y. Cost: one eigendecomposition
of a fold's training Gram per kernel and fold (15 of (4n/5)² with five folds above 400 rows, plus
the refit's n × n), then O(n d² + d³) per iteration of Algorithm 1. The compiled calls see the rows
padded to their size bucket, the Gram masked (docs/design.md, "Size buckets"): every n of a bucket
runs the same programs.

Example:
    >>> import numpy as np
    >>> from jaxmtl import OutputKernelClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 2)); y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 0)
    >>> model = OutputKernelClassifier(n_folds=3).fit(X, y)
    >>> model.output_kernel_.shape, bool(model.score(X, y) > 0.8)
    ((4, 4), True)
"""

from __future__ import annotations

import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .._checks import (
    check_bool,
    check_int,
    check_outputs,
    check_positive,
    check_positive_array,
)
from .._jit import jit
from .._progress import StageReporter
from ..errors import GridEdgeWarning, ParameterError, ShapeError
from ..kernels.scalar import Gaussian, Kernel
from ..learning.output_kernel import okl_path, output_basis, output_kernel_learning
from ..linalg import clip_psd, eigh
from ..paths.eigen import code_losses, mse_loss
from ._base import ClassifierMixin, RegressorMixin
from ._buckets import pad_rows, padded_fold_indices, size_bucket
from ._precision import kernel_trace
from ._row_blocks import in_row_blocks
from ._grid_search import _stack
from ._spectral import WIDTH_SUBSAMPLE, _best_index, _GridSelection
from .kernel_machine import _masked_gram
from .multiclass import (
    MultiClassClassifier,
    _fit_softmax_scale,
    _softmax,
)
from .predictors import PredictorMixin

__all__ = ["OutputKernelClassifier", "OutputKernelRegressor", "output_correlation"]

DEFAULT_WIDTH_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
DEFAULT_LAMBDA_FACTORS = tuple(np.geomspace(10.0, 1e-6, 15))
SELECTIONS = ("kfold", "holdout")


def lambda_scale(K, Y):
    """λ₀ = (‖K‖_F ‖Y‖_F)^{2/3}: the λ at which objective (3) shrinks by a factor of order one."""
    return (jnp.linalg.norm(K) * jnp.linalg.norm(Y)) ** (2.0 / 3.0)


@partial(jit, static_argnames=("max_iter", "rank", "loss", "relative"))
def _score_grid(kernels, X, Y, n, lambdas, folds, offset, max_iter, tol, rank, loss, relative):
    """Held-out losses (W, P[, 2]) for every kernel × λ, folds averaged; and the λ grids (W, P).

    X, Y: the rows padded to their size bucket with zero rows, ``n`` the real ones (traced: every
    n of a bucket runs this program); the Gram is masked, so λ₀ reads the real rows only.
    ``folds``: :func:`~jaxmtl.models._buckets.padded_fold_indices` (real rows only). Each fold's
    training rows are gathered into their own Gram (padding positions zero rows and columns, which
    get C = 0 and leave the other rows' solution unchanged) and the path is scored on its held-out
    rows only, as :func:`jaxmtl.selection.kfold_path` does."""

    def one_kernel(kern):
        K = _masked_gram(kern, X, n)
        lams = lambdas * lambda_scale(K, Y) if relative else lambdas

        def one_fold(tr, held, vt, vh):
            vt, vh = vt.astype(K.dtype), vh.astype(K.dtype)
            s, U = eigh(K[tr][:, tr] * vt[:, None] * vt[None, :])
            Ym = Y[tr] * vt[:, None]
            if rank is None:
                back, Yr = None, Ym
            else:  # low-rank variant: Algorithm 1 on the r outputs Y W (W from the training rows)
                back = output_basis(Ym, rank)
                Yr = Ym @ back
            emit = lambda F: loss((F if back is None else F @ back.T) + offset, Y[held] + offset, vh / jnp.sum(vh))
            return okl_path(clip_psd(s), U, Yr, lams, K[held][:, tr] * vt[None, :], max_iter, tol,
                            emit=emit)

        return jnp.mean(jax.vmap(one_fold)(*folds), axis=0), lams

    if jax.tree_util.tree_leaves(kernels):
        scores, lams = jax.lax.map(one_kernel, kernels)
    else:  # a kernel without parameters (Linear): one kernel, nothing to map over
        scores, lams = jax.tree_util.tree_map(lambda x: x[None], one_kernel(kernels))
    return jnp.where(jnp.isnan(scores), jnp.inf, scores), lams


def output_correlation(L) -> np.ndarray:
    """(d, d) R = L_ij / √(L_ii L_jj): the learned output kernel as a correlation (0 where L_ii = 0).

    With centred outputs (``fit_intercept=True``) L·1 = 0 and independent outputs give R_ij = −1/(d − 1);
    without centring they give 0 (see the module docstring).

    Example:
        >>> float(output_correlation(np.array([[4.0, -1.0], [-1.0, 1.0]]))[0, 1])
        -0.5
    """
    L = np.asarray(L, np.float64)
    s = np.sqrt(np.clip(np.diag(L), 0.0, None))
    return np.divide(L, np.outer(s, s), out=np.zeros_like(L), where=np.outer(s, s) > 0)


@jit
def _predict(kern, X_new, X_fit, C, L):
    return kern(X_new, X_fit) @ C @ L


class _OutputKernelBase(PredictorMixin, _GridSelection):
    """Shared fitting machinery (parameters documented on the public classes)."""

    _default_width_factors = DEFAULT_WIDTH_FACTORS
    _loss = staticmethod(mse_loss)

    def __init__(self, kernel: Kernel | None = None, lambdas: ArrayLike | None = None,
                 width_factors: ArrayLike | None = None, rank: int | None = None, selection: str | ArrayLike = "kfold",
                 n_folds: int | None = 5, validation_fraction: float = 0.2, max_iter: int = 200, tol: float = 1e-6,
                 fit_intercept: bool = True, random_state: int | None = 0, verbose: bool = False,
                 dtype: DTypeLike | None = None,
                 matmul_precision: str | None = None) -> None:
        self.kernel = kernel
        self.lambdas = lambdas
        self.width_factors = width_factors
        self.rank = rank
        self.selection = selection
        self.n_folds = n_folds
        self.validation_fraction = validation_fraction
        self.max_iter = max_iter
        self.tol = tol
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.verbose = verbose
        self.dtype = dtype
        self.matmul_precision = matmul_precision

    def _fit_outputs(self, X: np.ndarray, Y: np.ndarray):
        n, d = Y.shape
        if n < 2:
            raise ShapeError(f"at least 2 samples are needed to fit; received n_samples={n}.")
        if isinstance(self.selection, str) and self.selection not in SELECTIONS:
            raise ParameterError(f"selection must be one of {SELECTIONS} or boolean training masks; "
                                 f"received {self.selection!r}.")
        max_iter = check_int(self.max_iter, "max_iter", minimum=1)
        tol = check_positive(self.tol, "tol")
        rank = None if self.rank is None else check_int(self.rank, "rank", minimum=1)
        if rank is not None and rank > d:
            raise ParameterError(f"rank must be at most the number of outputs {d}; received {rank}.")
        relative = self.lambdas is None
        lambdas = np.asarray(DEFAULT_LAMBDA_FACTORS) if relative else \
            np.sort(check_positive_array(self.lambdas, "lambdas"))[::-1]  # decreasing: warm starts
        kernels, widths = self._resolve_kernels(X)
        masks = self._masks(n)
        fit_intercept = check_bool(self.fit_intercept, "fit_intercept")
        report = StageReporter(type(self).__name__, check_bool(self.verbose, "verbose"))
        self.y_mean_ = Y.mean(axis=0) if fit_intercept else np.zeros(d, Y.dtype)
        dtype = Y.dtype
        # NumPy arguments in the working dtype: converting and slicing them compiles nothing; the
        # rows padded up the bucket ladder, the real count traced (docs/design.md, "Size buckets")
        N = size_bucket(n)
        Yc = pad_rows(np.asarray(Y - self.y_mean_, dtype), N)
        Xj = pad_rows(np.asarray(X, dtype), N)

        def score(kerns, rows=None, fold_masks=masks):
            m = n if rows is None else len(rows)
            Xr, Yr = (Xj, Yc) if rows is None else (pad_rows(A[rows], size_bucket(m)) for A in (Xj, Yc))
            scores, lams = _score_grid(_stack(kerns), Xr, Yr, np.int32(m), np.asarray(lambdas, dtype),
                                       padded_fold_indices(fold_masks, len(Xr)), np.asarray(self.y_mean_, dtype),
                                       max_iter, tol, rank, type(self)._loss, relative)
            return np.asarray(scores), np.asarray(lams)  # waits for the compiled call

        grid = f"{len(lambdas)} λ × {len(masks)} fold(s)"
        search_grid = widths
        if widths is not None and self.width_factors is None and n > WIDTH_SUBSAMPLE \
                and isinstance(self.selection, str):  # as MultiClassClassifier: widths on a subsample first
            rows = self._subsample_rows(n, WIDTH_SUBSAMPLE)
            with report.stage(f"width search on {WIDTH_SUBSAMPLE} of {n} rows: {len(widths)} widths × {grid}"):
                sub_scores, _ = score(kernels, rows, self._masks(WIDTH_SUBSAMPLE))
            widths = widths[_best_index(sub_scores[:, None])[0]] * np.array([0.5, 1.0, 2.0])
            kernels = [Gaussian(float(w)) for w in widths]
        with report.stage(f"{len(kernels)} kernel(s) × {grid}{'' if search_grid is widths else f' on all {n} rows'}"):
            scores, lams = score(kernels)
        iw, _, ip = _best_index(scores[:, None])
        self._warn_on_edges(None if widths is None else widths[iw], search_grid, len(lambdas), ip)
        lam = float(lams[iw, ip])
        with report.stage(f"refit at λ = {lam:.3g} on {n} rows"):
            K = _masked_gram(kernels[iw], Xj, np.int32(n))  # padded rows: C = 0 (docs/design.md)
            res = jax.block_until_ready(output_kernel_learning(K, Yc, lam, max_iter=max_iter, tol=tol, rank=rank))
        self.kernel_ = kernels[iw]
        self.coef_ = jax.device_put(np.asarray(res.coef)[:n])  # the padded rows' coefficients are zero
        self.output_kernel_ = np.asarray(res.output_kernel)
        self.output_matrix_ = res.output_kernel
        self.output_correlation_ = output_correlation(self.output_kernel_)
        self.lambda_ = lam
        self.n_iter_ = int(res.n_iter)
        self.converged_ = bool(res.converged)
        self.objective_ = np.asarray(res.objective)[: self.n_iter_]
        self.X_fit_ = jax.device_put(Xj[:n])
        self.n_outputs_ = d
        self.cv_scores_ = scores[..., 0] if scores.ndim == 3 else scores
        if scores.ndim == 3:
            self.cv_errors_ = scores[..., 1]
        self.lambdas_ = lams
        self.kernel_widths_ = widths
        self.best_params_ = {"kernel": self.kernel_, "kernel_width": None if widths is None else float(widths[iw]),
                             "lambda": lam}
        self.best_score_ = float(self.cv_scores_[iw, ip])
        return self

    def _ridge_system(self) -> tuple[float, float]:
        """(μ, s) of the fitted model for :func:`~jaxmtl.models._precision.relative_regularisation`:
        μ = λ, s = ‖L‖₂ Σᵢ K(xᵢ, xᵢ).

        At the learned L the C step of objective (3) is the Sylvester equation K C L + λC = Y
        (eq. 6), i.e. (L ⊗ K + λI) vec C = vec Y: Tikhonov with the kernel H = K·L (§3.2) and the
        unnormalised λ, the spectral system (K/n + λ'I) at λ' = λ/n for L = I. The scale of L is
        learned with C (objective (3) is not scale-free), so it enters the kernel's:
        λ_max(L ⊗ K) = ‖L‖₂ λ_max(K) ≤ ‖L‖₂ tr K.
        """
        L = np.asarray(self.output_kernel_, np.float64)
        return self.lambda_, float(np.linalg.norm(L, 2)) * kernel_trace(self.kernel_, self.X_fit_)

    def _warn_on_edges(self, width, grid, n_lambdas, ip):
        """Warn when the selected width lies at an end of the searched ``grid`` (or falls outside it:
        the refinement on all rows tries the subsample's best width × ½ and × 2) or λ is the smallest."""
        if width is not None and len(grid) > 1 and not grid.min() < width < grid.max():
            side = "smallest" if width <= grid.min() else "largest"
            warnings.warn(f"the selected kernel width {width:.4g} is at or past the {side} of the grid "
                          f"{grid.min():.3g} … {grid.max():.3g}; pass a kernel or width_factors reaching "
                          "further.", GridEdgeWarning, stacklevel=4)
        if n_lambdas > 1 and ip == n_lambdas - 1:
            warnings.warn("the selected λ is the smallest of the grid; pass smaller lambdas.", GridEdgeWarning,
                          stacklevel=4)

    def _decision(self, X) -> np.ndarray:
        X = self._validate_predict_inputs(X)
        dtype = self.X_fit_.dtype
        # the fitted rows padded to their size bucket (zero coefficients): one program per bucket
        size = size_bucket(self.X_fit_.shape[0])
        X_fit, coef = (jax.device_put(pad_rows(np.asarray(a), size)) for a in (self.X_fit_, self.coef_))
        F = in_row_blocks(lambda B: _predict(self.kernel_, jax.device_put(np.asarray(B, dtype)), X_fit, coef,
                                             self.output_matrix_), X)
        return F + self.y_mean_


_PARAMS_DOC = """
      kernel: a :class:`~jaxmtl.kernels.Kernel` (e.g. ``Linear()``); None selects a Gaussian width
        from ``median_distance × width_factors``.
      lambdas: λ grid of objective (3) (absolute values); default 15 values log-spaced in
        [10⁻⁶, 10]·λ₀, λ₀ = (‖K‖_F ‖Y‖_F)^{2/3} (see the module docstring).
      width_factors: multipliers of the median distance for the default kernel (default
        1/4, 1/2, 1, 2, 4).
      rank: None for the full d × d output kernel, or r < d for the low-rank variant
        L = W M Wᵀ (W: top-r right singular vectors of the training outputs).
      selection: 'kfold', 'holdout', or boolean training masks of shape (k, n) or (n,).
      n_folds: folds for 'kfold'; validation_fraction: held-out share for 'holdout'.
      max_iter, tol: Algorithm 1 stops when ‖Z + λC − Y‖_F < tol·‖Y‖_F or after max_iter
        iterations (per λ).
      fit_intercept: centre the outputs on their training mean (added back by ``predict``).
      random_state: seed of the fold / hold-out split.
      verbose: print each stage of the fit with its time, on stderr.
      matmul_precision: None or 'highest' (full float32 matrix products, the default), 'high' /
        'tensorfloat32' / 'tf32' or 'default' / 'bfloat16': reduced-precision products on GPUs and
        TPUs for path steps, eigen-path products and selection losses (Gram evaluations stay
        full precision); warns when the selected model is beyond them (docs/precision.md).
      dtype: None (JAX's default), 'float32' or 'float64': the precision of fit and predict whatever
        JAX's global setting (see docs/precision.md); outputs are float64 either way."""

_ATTRS_DOC = """
      output_kernel_: (d, d) learned output kernel L (symmetric PSD; L·1 = 0 for the classifier with
      ``fit_intercept=True``); output_correlation_: L normalised to unit diagonal (see the module
      docstring for its reference values); coef_: (n, d)
      coefficients C; lambda_, kernel_, best_params_, best_score_; cv_scores_ (n_kernels, n_λ)
      mean held-out losses and lambdas_ (n_kernels, n_λ) the λ grid of each kernel;
      kernel_widths_; n_iter_, converged_, objective_ (objective (3) per iteration) of the refit;
      y_mean_, n_features_in_."""


class OutputKernelRegressor(RegressorMixin, _OutputKernelBase):
    __doc__ = ("""Vector-valued regression with the output kernel L learned by block coordinate descent ([DOGP11]).

    Args:""" + _PARAMS_DOC + """

    Attributes (after fit):""" + _ATTRS_DOC + "\n    ")

    def fit(self, X: ArrayLike, y: ArrayLike) -> OutputKernelRegressor:
        """Select (kernel, λ) by cross-validation and fit on all rows.

        Args:
          X: (n, p) inputs; y: (n, d) or (n,) outputs.
        """
        X = self._validate_fit_inputs(X)
        Y, self._y_1d = check_outputs(y, X.shape[0], "y")
        return self._fit_outputs(X, Y.astype(X.dtype))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """(m, d) predictions ((m,) if fitted on 1-D outputs)."""
        F = self._decision(X)
        return F[:, 0] if self._y_1d else F


class OutputKernelClassifier(ClassifierMixin, _OutputKernelBase):
    __doc__ = ("""Multi-class classification with a learned output kernel between the classes ([DOGP11] §2.2, §5).

    Labels are coded as :class:`~jaxmtl.MultiClassClassifier` codes them (``coding``: 'one_vs_all'
    a = 1, b = 0; 'simplex' a = 1, b = −1/(c − 1); or a pair (a, b) with a > b), the vector-valued
    model and L are learned on the codes, and an input goes to the class of its largest score.
    ``output_kernel_`` is the learned class similarity (c × c).

    Args:""" + _PARAMS_DOC + """
      coding: label coding, as :class:`~jaxmtl.MultiClassClassifier`.

    Attributes (after fit): classes_, cv_errors_ (held-out error rates) plus""" + _ATTRS_DOC + "\n    ")

    _loss = staticmethod(code_losses)

    def __init__(self, kernel: Kernel | None = None, lambdas: ArrayLike | None = None,
                 width_factors: ArrayLike | None = None, rank: int | None = None, selection: str | ArrayLike = "kfold",
                 n_folds: int | None = 5, validation_fraction: float = 0.2, max_iter: int = 200, tol: float = 1e-6,
                 fit_intercept: bool = True, random_state: int | None = 0, verbose: bool = False,
                 coding: str = "one_vs_all", dtype: DTypeLike | None = None,
                 matmul_precision: str | None = None) -> None:
        super().__init__(kernel, lambdas, width_factors, rank, selection, n_folds, validation_fraction,
                         max_iter, tol, fit_intercept, random_state, verbose, dtype, matmul_precision)
        self.coding = coding

    _code_values = MultiClassClassifier._code_values
    _coded_targets = MultiClassClassifier._coded_targets

    def fit(self, X: ArrayLike, y: ArrayLike) -> OutputKernelClassifier:
        """Fit on (n, p) inputs and n labels of any hashable type (at least two classes)."""
        X = self._validate_fit_inputs(X)
        codes, Y, (a, b) = self._coded_targets(X, y)  # type: ignore[misc]  # borrowed from MultiClassClassifier
        self._fit_outputs(X, Y)
        self.proba_scale_ = _fit_softmax_scale(self._decision(X), codes, a - b)
        return self

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Scores (m, n_classes), or (m,) for two classes (``classes_[1]`` minus ``classes_[0]``)."""
        F = self._decision(X)
        return F[:, 1] - F[:, 0] if F.shape[1] == 2 else F

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """(m, n_classes) softmax of the scores times ``proba_scale_`` (as MultiClassClassifier)."""
        return _softmax(self._decision(X) * self.proba_scale_)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """(m,) labels by the argmax rule, in the dtype of ``classes_``."""
        F = self._decision(X)  # checks that the model is fitted (before classes_ is read)
        return self.classes_[np.argmax(F, axis=1)]
