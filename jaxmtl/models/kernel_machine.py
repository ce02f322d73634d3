r"""Kernel machines for any convex loss — SVM, SVR, robust and logistic regression — on matrix-valued kernels.

Minimises Σᵢⱼ C·L(yᵢⱼ, f_j(xᵢ)) + ½‖f‖² over f(x) = Σᵢ K(x, xᵢ) A cᵢ + b (Γ = K·A, [BRBV11]
§2–4) with the solvers of [Din11] ch. 2 (:mod:`jaxmtl.solvers`): the fixed-point iteration (2.10)
(default with an intercept) or coordinate descent (Algorithm 1) — and, for the hinge and
ε-insensitive losses on independent outputs (A diagonal), libsvm's SMO (:func:`jaxmtl.solvers.smo`,
the default there). C is scikit-learn's C of SVC / SVR: with A = I, one output and the hinge loss
this is SVC's problem, with 'epsilon_insensitive' SVR's.

* :class:`KernelMachine` — real-valued outputs (``predict``; a regressor has no ``decision_function``,
  scikit-learn's convention), R² score;
  the classification losses need ±1 targets (the sign is the user's job).
* :class:`KernelMachineClassifier` — any labels; two classes are coded ±1 (``classes_[1]`` ↦ +1),
  more by the one-vs-all coding (30) of [BRBV11] §5 with a = 1, b = −1 (the hinge needs ±1),
  one output per class coupled by the output matrix A, and the argmax rule (31).

With ``C=None`` (default) C is chosen on the grid ``Cs`` by k-fold cross-validation in one compiled
call: folds ``vmap``-ed, the C path warm-started (:func:`jaxmtl.solvers.fixed_point_path`). The
validation criterion is the error rate of the sign / argmax rule for the classifier and for the
classification losses, the mean squared error for 'square', the mean absolute error for the
robust losses ('absolute', 'epsilon_insensitive', 'huber').

[Din11] F. Dinuzzo, *Learning functions with kernel methods*, PhD thesis, 2011, ch. 2.
[BRBV11] L. Baldassarre, L. Rosasco, A. Barla, A. Verri, *Multi-output learning via spectral filtering*, 2011.

Example:
    >>> import numpy as np
    >>> from jaxmtl.models.kernel_machine import KernelMachineClassifier
    >>> X = np.random.default_rng(0).normal(size=(40, 2))
    >>> clf = KernelMachineClassifier(C=1.0).fit(X, np.where(X[:, 0] > 0, "a", "b"))
    >>> clf.predict(X[:3]).tolist() == np.where(X[:3, 0] > 0, "a", "b").tolist()
    True
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .._checks import check_bool, check_int, check_n_folds, check_output_matrix, check_outputs, check_random_state
from .._jit import jit
from .. import errors
from ..errors import LabelError, ParameterError, ShapeError
from ..kernels.scalar import Gaussian, Kernel, median_heuristic
from ..operators import SeparableOperator
from ..selection import kfold_masks
from ..solvers import (SMO_LOSSES, Loss, coordinate_descent, coordinate_descent_path, fixed_point,
                       fixed_point_path, get_loss, smo, smo_path)
from ..solvers._common import check_C
from ._base import BaseEstimator, ClassifierMixin, RegressorMixin
from ._buckets import pad_rows, size_bucket
from ._precision import in_working_precision, kernel_trace
from ._row_blocks import in_row_blocks
from .multiclass import MultiClassClassifier, _check_two_classes, _encode_labels
from .predictors import SeparablePredictor, _cast, input_shift
from .vector_valued import VectorValuedRegressor

__all__ = ["KernelMachine", "KernelMachineClassifier"]

DEFAULT_CS = tuple(np.logspace(-2, 2, 9))
SOLVERS = ("auto", "smo", "fixed_point", "coordinate_descent")

@jit
def _predict(kern, X_new, X_fit, coef, A, b):
    return kern(X_new, X_fit) @ coef @ A + b


@jit
def _masked_gram(kern, X, n):
    """K(X, X) with the rows and columns past the first ``n`` (the padding) zero."""
    real = jnp.arange(X.shape[0]) < n
    return kern(X, X) * (real[:, None] & real[None, :]).astype(X.dtype)


@jit
def _held_out_predictions(K, coef, A, b):
    """(k, n_C, n, d) predictions Γc + b of every fold's path on every row."""
    return jnp.einsum("ij,kcjd,de->kcie", K, coef, A) + b[:, :, None, :]


class _KernelMachineBase(BaseEstimator):
    """Shared fit / predict of the kernel machines (see the module docstring)."""

    _classifier = False

    def __init__(self, loss: str | Loss = "square", C: float | None = None, kernel: Kernel | None = None,
                 epsilon: float = 0.1, output: str | ArrayLike | None = None, fit_intercept: bool = True,
                 solver: str = "auto", Cs: ArrayLike | None = None, n_folds: int = 5, tol: float = 1e-4,
                 max_iter: int | None = None, random_state: int | None = 0, dtype: DTypeLike | None = None,
                 matmul_precision: str | None = None) -> None:
        self.loss = loss
        self.C = C
        self.kernel = kernel
        self.epsilon = epsilon
        self.output = output
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.Cs = Cs
        self.n_folds = n_folds
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.dtype = dtype
        self.matmul_precision = matmul_precision

    # ---- configuration -----------------------------------------------------------------------
    def _solver_kwargs(self, A=None):
        """(single solve, path, keyword arguments) of the solver; A (d, d) the output matrix, if known."""
        if self.solver not in SOLVERS:
            raise ParameterError(f"solver must be one of {SOLVERS}; received {self.solver!r}.")
        intercept = check_bool(self.fit_intercept, "fit_intercept")
        loss = get_loss(self.loss)
        solver = self.solver
        if solver == "auto":
            independent = A is not None and np.count_nonzero(A - np.diag(np.diagonal(A))) == 0
            solver = ("smo" if loss.name in SMO_LOSSES and independent
                      else "fixed_point" if intercept else "coordinate_descent")
        if solver == "coordinate_descent" and intercept:
            raise ParameterError("solver='coordinate_descent' has no intercept: pass fit_intercept=False or "
                                 "solver='fixed_point' / 'smo'.")
        kw = {"loss": loss, "epsilon": self.epsilon, "tol": self.tol}
        if self.max_iter is not None:
            kw["max_iter"] = check_int(self.max_iter, "max_iter")
        if solver == "smo":
            return smo, smo_path, {**kw, "fit_intercept": intercept}
        if solver == "fixed_point":
            return fixed_point, fixed_point_path, {**kw, "fit_intercept": intercept}
        seed = check_random_state(self.random_state) or 0
        return coordinate_descent, coordinate_descent_path, {**kw, "random_state": seed}

    def _resolve_kernel(self, X):
        if self.kernel is None:
            width = median_heuristic(X)
            return Gaussian(float(width) if width > 0 else 1.0)
        if not isinstance(self.kernel, Kernel):
            raise ParameterError(f"kernel must be a jaxmtl.kernels.Kernel or None; received {self.kernel!r}.")
        return in_working_precision(self.kernel)

    def _resolve_output(self, d):
        if self.output is None or (isinstance(self.output, str) and self.output == "independent"):
            return np.eye(d)
        if isinstance(self.output, str):
            raise ParameterError(f"output must be None, 'independent' or a ({d}, {d}) symmetric PSD matrix; "
                                 f"received {self.output!r}.")
        return check_output_matrix(self.output, d, name="output")

    # ---- fitting -----------------------------------------------------------------------------
    def _fit_targets(self, X, Y):
        """Fit on (n, p) inputs and (n, d) float targets (validated).

        The solvers see the rows padded to their size bucket (docs/design.md, "Size buckets"):
        the padded rows' and columns of the Gram zero, their weights 0 (their coefficients 0),
        in no fold; every n of a bucket runs the same programs."""
        n, d = Y.shape
        A = self._resolve_output(d).astype(X.dtype)
        single, path, kw = self._solver_kwargs(A)
        self.kernel_ = self._resolve_kernel(X)
        N = size_bucket(n)
        K = _masked_gram(self.kernel_, pad_rows(X, N), np.int32(n))  # NumPy arguments: no conversion program
        op = SeparableOperator(K, jax.device_put(A))
        # padded targets: a label where the loss needs ±1 (weight 0: it costs nothing)
        Yp = np.concatenate([Y, np.full((N - n, d), 1.0 if get_loss(self.loss).labels or self._classifier else 0.0,
                                        Y.dtype)])
        valid = np.arange(N) < n
        if self.C is None:
            self.C_ = self._select_C(op, Yp, path, kw, valid)
        else:
            C = check_C(self.C)
            if C.size != 1:
                raise ParameterError(f"C must be one number or None (selected on Cs); received {self.C!r}.")
            self.C_ = float(C[0])
        r = single(op, Yp, self.C_, weights=valid.astype(Y.dtype), **kw)
        if not bool(r.converged):
            criterion = "KKT violation" if single is smo else \
                f"relative duality gap {float(r.gap / abs(r.primal)):.2g}"
            warnings.warn(f"{type(self).__name__} did not converge in {int(r.n_iter)} iterations ({criterion} > "
                          f"tol={self.tol}); increase max_iter.", errors.ConvergenceWarning, stacklevel=3)
        self.coef_ = np.asarray(r.coef)[:n]
        self.intercept_ = np.asarray(r.intercept)
        self.n_iter_ = int(r.n_iter)
        self.converged_ = bool(r.converged)
        self.dual_gap_ = float(r.gap)
        self.output_matrix_ = A
        self.X_fit_ = X
        return self

    def _select_C(self, op, Y, path, kw, valid):
        """C of least k-fold validation error on the grid ``Cs``; Y (N, d) the padded targets,
        ``valid`` (N,) the real rows (the folds split those only)."""
        grid = np.sort(check_C(DEFAULT_CS if self.Cs is None else self.Cs, "Cs"))
        n = int(valid.sum())
        k = check_n_folds(self.n_folds, n)
        masks = np.pad(kfold_masks(n, k, check_random_state(self.random_state)), ((0, 0), (0, len(valid) - n)))
        r = path(op, Y, grid, masks=masks, **kw)
        F = np.asarray(_held_out_predictions(op.K, r.coef, op.A, r.intercept))
        held = ~masks & valid
        errors = np.array([[self._validation_error(F[f, c][held[f]], Y[held[f]]) for c in range(len(grid))]
                           for f in range(k)])
        self.Cs_ = grid
        self.cv_scores_ = errors.mean(axis=0)
        return float(grid[int(np.argmin(self.cv_scores_))])

    def _ridge_system(self) -> tuple[float, float]:
        """(μ, s) of the fitted model for :func:`~jaxmtl.models._precision.relative_regularisation`:
        μ = 1/C, s = Σᵢ K(xᵢ, xᵢ), so ρ = 1/(n·C·mean K(x, x)).

        The objective Σᵢⱼ C·L(yᵢⱼ, fⱼ(xᵢ)) + ½‖f‖², divided by n·C, is (1/n) Σ L + (1/(2nC))‖f‖². The
        library's losses halve their quadratic parts ('square' is (y − z)²/2), so this is half the
        spectral Tikhonov objective (1/n) Σ (y − f)² + λ‖f‖² at λ = 1/(nC): for the square loss the
        same minimiser, (K + I/C)c = y (the fixed point's stationarity), i.e. (K/n + λI) at
        λ = 1/(nC); for the hinge and the other losses the same λ (twice the SVM convention
        (1/n) Σ L + λ'‖f‖², λ' = 1/(2nC), whose hinge is not halved). As for the spectral
        estimators, the output matrix A of Γ = K·A is left out of the scale.
        """
        return 1.0 / self.C_, kernel_trace(self.kernel_, self.X_fit_)

    def _validation_error(self, F, Y) -> float:
        loss = get_loss(self.loss)
        if self._classifier and Y.shape[1] > 1:
            return float(np.mean(np.argmax(F, axis=1) != np.argmax(Y, axis=1)))
        if self._classifier or loss.labels:
            return float(np.mean(np.where(F >= 0, 1.0, -1.0) != Y))
        if loss.name == "square":
            return float(np.mean((F - Y) ** 2))
        return float(np.mean(np.abs(F - Y)))

    def _decision(self, X) -> np.ndarray:
        """(m, d) real-valued outputs Σᵢ K(x, xᵢ) A cᵢ + b."""
        X = self._validate_predict_inputs(X)
        X_fit, coef, A, b = (jnp.asarray(a) for a in (self.X_fit_, self.coef_, self.output_matrix_, self.intercept_))
        return in_row_blocks(lambda B: _predict(self.kernel_, jnp.asarray(B, X_fit.dtype), X_fit, coef, A, b), X)


    def predictor(self) -> SeparablePredictor:
        """The fitted prediction function Σᵢ K(x, xᵢ) cᵢ A + b as a
        :class:`~jaxmtl.models.SeparablePredictor`, (m, d) outputs: a classifier's decision scores
        ((m, 1) for two classes, the ``decision_function``; one column per class otherwise)."""
        self._check_fitted()
        dtype = self.X_fit_.dtype
        leaves: tuple = (jnp.asarray(self.X_fit_), *(jnp.asarray(a, dtype) for a in (self.coef_, self.output_matrix_,
                                                                                   self.intercept_)), input_shift(self, dtype))
        return SeparablePredictor(_cast(self.kernel_, dtype), *leaves)


class KernelMachine(RegressorMixin, _KernelMachineBase):
    """Kernel machine for any convex loss of :data:`jaxmtl.solvers.LOSSES`, on Γ = K·A.

    Args:
      loss: 'square' (RLS), 'hinge' (SVM), 'squared_hinge', 'logistic' (±1 targets), 'absolute',
        'epsilon_insensitive' (SVR), 'huber'; or a :class:`jaxmtl.solvers.Loss`.
      C: weight of the loss (> 0), or None to select it on ``Cs`` by k-fold cross-validation.
      kernel: a :class:`~jaxmtl.kernels.Kernel`; None is a Gaussian of median-distance width.
      epsilon: SVR tube width / Huber threshold.
      output: None or 'independent' (A = I), or a (d, d) symmetric PSD output matrix
        (:mod:`jaxmtl.outputs`).
      fit_intercept: an unregularised bias per output (SMO or fixed-point solver).
      solver: 'auto' (SMO for the hinge and ε-insensitive losses with a diagonal output matrix,
        else the fixed point with an intercept, coordinate descent without), 'smo',
        'fixed_point', 'coordinate_descent'.
      Cs: the C grid when C is None (default 9 values in [1e-2, 1e2]).
      n_folds: folds of the C selection.
      tol: relative duality gap at which the solver stops (SMO: maximal KKT violation, libsvm's tol).
      max_iter: iteration cap (None: the solver's default).
      random_state: seed of the folds and of coordinate descent's permutations.
      matmul_precision: None or 'highest' (full float32 matrix products, the default), 'high' /
        'tensorfloat32' / 'tf32' or 'default' / 'bfloat16': reduced-precision products on GPUs and
        TPUs for path steps, eigen-path products and selection losses (Gram evaluations stay
        full precision); warns when the selected model is beyond them (docs/precision.md).
      dtype: None (JAX's default), 'float32' or 'float64': the precision of fit and predict whatever
        JAX's global setting (see docs/precision.md); outputs are float64 either way.

    Attributes (after fit):
      coef_ (n, d) with f(x) = Σᵢ K(x, xᵢ) A coef_[i] + intercept_, intercept_ (d,), C_, kernel_,
      output_matrix_ (d, d), n_iter_, converged_, dual_gap_, Cs_ and cv_scores_ (when C is
      selected), n_features_in_.
    """

    def fit(self, X: ArrayLike, y: ArrayLike) -> "KernelMachine":
        """Fit on (n, p) inputs and (n,) or (n, d) targets (±1 for the classification losses)."""
        X = self._validate_fit_inputs(X)
        Y, self._y_1d = check_outputs(y, X.shape[0], "y")
        loss = get_loss(self.loss)
        if loss.labels and not np.all(np.abs(Y) == 1.0):
            raise LabelError(f"loss={loss.name!r} needs targets coded -1 / +1; y holds "
                             f"{np.unique(Y[np.abs(Y) != 1])[:5].tolist()}. Use KernelMachineClassifier for "
                             "class labels of any kind.")
        return self._fit_targets(X, Y.astype(X.dtype))

    def predict(self, X: ArrayLike) -> np.ndarray:
        """(m, d) real-valued outputs ((m,) when fitted on 1-D y); no sign is taken."""
        F = self._decision(X)
        return F[:, 0] if self._y_1d else F

    score = VectorValuedRegressor.score


class KernelMachineClassifier(ClassifierMixin, _KernelMachineBase):
    """Classifier on any labels by a kernel machine (default the hinge loss: an SVM).

    Two classes: one ±1 output, ``decision_function`` (m,) positive for ``classes_[1]`` (as
    SVC). More classes: one-vs-all codes ±1 ([BRBV11] eq. 30 with a = 1, b = −1), one output per
    class — independent SVMs with ``output=None``, coupled through a (c, c) output matrix
    otherwise — and the argmax rule (31).

    Args: as :class:`KernelMachine` (default ``loss='hinge'``).

    Attributes (after fit): classes_ plus those of :class:`KernelMachine`.
    """

    _classifier = True

    def __init__(self, loss: str | Loss = "hinge", C: float | None = None, kernel: Kernel | None = None,
                 epsilon: float = 0.1, output: str | ArrayLike | None = None, fit_intercept: bool = True,
                 solver: str = "auto", Cs: ArrayLike | None = None, n_folds: int = 5, tol: float = 1e-4,
                 max_iter: int | None = None, random_state: int | None = 0, dtype: DTypeLike | None = None,
                 matmul_precision: str | None = None) -> None:
        super().__init__(loss, C, kernel, epsilon, output, fit_intercept, solver, Cs, n_folds, tol, max_iter,
                         random_state, dtype, matmul_precision)

    def fit(self, X: ArrayLike, y: ArrayLike) -> "KernelMachineClassifier":
        """Fit on (n, p) inputs and (n,) labels of any hashable type (at least two classes)."""
        X = self._validate_fit_inputs(X)
        classes, codes = _encode_labels(y)
        if codes.shape[0] != X.shape[0]:
            raise ShapeError(f"y must have one label per input: expected {X.shape[0]}, received {codes.shape[0]}.")
        _check_two_classes(classes)
        self.classes_ = classes
        if len(classes) == 2:
            Y = np.where(codes == 1, 1.0, -1.0)[:, None]
        else:
            Y = -np.ones((X.shape[0], len(classes)))
            Y[np.arange(X.shape[0]), codes] = 1.0
        return self._fit_targets(X, Y.astype(X.dtype))

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """(m,) scores for two classes (positive ↦ ``classes_[1]``), else (m, n_classes)."""
        F = self._decision(X)
        return F[:, 0] if F.shape[1] == 1 else F

    def predict(self, X: ArrayLike) -> np.ndarray:
        """(m,) labels in the dtype of ``classes_``: sign rule (two classes) or argmax (31)."""
        F = self._decision(X)
        idx = (F[:, 0] >= 0).astype(int) if F.shape[1] == 1 else np.argmax(F, axis=1)
        return self.classes_[idx]

    score = MultiClassClassifier.score
