r"""MultiClassClassifier: multi-class classification as vector-valued regression ([BRBV11] §5, eqs. 30–31)."""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .. import errors
from ..errors import LabelError, ParameterError, ShapeError
from ..filters.spectral import SpectralFilter
from ..kernels import outputs as _outputs
from ..kernels.scalar import Kernel
from ..paths.eigen import code_losses
from ._base import ClassifierMixin
from ._gradient_search import check_search
from ._spectral import _SpectralEstimator
from .approximate import ApproximationMixin
from .predictors import PredictorMixin

__all__ = ["MultiClassClassifier"]

def _encode_labels(y) -> tuple[np.ndarray, np.ndarray]:
    """(classes in y's dtype, sorted when sortable, else by first appearance; integer codes).

    Raises LabelError for continuous targets ("Unknown label type"), None/NaN labels and 2-D y.
    """
    if y is None:
        raise LabelError("requires y to be passed, but the target y is None.")
    arr = y if isinstance(y, np.ndarray) else np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected; y is read as y.ravel().",
                      errors.DataConversionWarning, stacklevel=3)
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ShapeError(f"y must be 1-D (one label per sample); received shape {arr.shape}.")
    if arr.size == 0:
        raise ShapeError("y must not be empty.")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise LabelError("y holds NaN or infinite labels; every example needs a class.")
        if np.any(arr != np.round(arr)):
            raise LabelError(
                "Unknown label type: continuous. y holds non-integer numbers; classification needs "
                "discrete class labels (use VectorValuedRegressor for regression)."
            )
    if arr.dtype.kind == "O":
        items = arr.tolist()
        if any(x is None or (isinstance(x, float) and not np.isfinite(x)) for x in items):
            raise LabelError("y holds None or NaN labels; every example needs a class.")
        try:
            ordered = sorted(set(items))
        except TypeError:
            ordered = list(dict.fromkeys(items))
        index = {c: i for i, c in enumerate(ordered)}
        codes = np.array([index[x] for x in items])
        out = np.empty(len(ordered), dtype=object)
        out[:] = ordered
        return out, codes
    classes, codes = np.unique(arr, return_inverse=True)
    return classes, codes.reshape(-1)


def _check_two_classes(classes: np.ndarray) -> None:
    """LabelError unless ``classes`` (from :func:`_encode_labels`) holds at least two classes; the
    message says "one class", the words scikit-learn's checks look for."""
    if len(classes) < 2:
        raise LabelError(f"y holds a single class ({classes.tolist()[0]!r}); a classifier needs at least two "
                         "(one class leaves nothing to separate).")


def _softmax(Z: np.ndarray) -> np.ndarray:
    Z = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True)


def _fit_softmax_scale(F: np.ndarray, codes: np.ndarray, gap: float) -> float:
    """The scale s on a log grid that minimises the log-loss of softmax(s·F) on (F, codes)."""
    scales = np.logspace(0.0, 3.0, 41) / gap
    logp = [np.log(np.maximum(_softmax(F * s)[np.arange(len(codes)), codes], 1e-300)).mean() for s in scales]
    return float(scales[int(np.argmax(logp))])


class MultiClassClassifier(ClassifierMixin, ApproximationMixin, PredictorMixin, _SpectralEstimator):
    """Multi-class classification as vector-valued regression ([BRBV11] §5).

    Each class k is coded by ℓ_k = (b, …, a, …, b) (eq. 30) — one-vs-all a = 1, b = 0, or
    simplex/sum-to-zero a = 1, b = −1/(c−1) — a vector-valued model is fitted with the spectral
    filter, and an input goes to the class of its largest component (eq. 31).

    Model selection ranks the grid by the validation squared loss on the codes (smooth, so it
    does not jump between near-equivalent points as the 0/1 loss does on small validation sets)
    and, among the points within one standard error (over folds) of the least squared loss — the
    one-standard-error rule, at least 1 % —, takes the one with the fewest validation errors of
    the deployed rule — argmax of the scores with the intercept added back,
    exactly what ``predict`` applies.

    The ω grid of the common-similarity family A = ω11ᵀ + (1 − ω)I is not searched (ω = 0): it
    cannot change a decision. A acts as 1 + (c − 1)ω on the all-ones output direction and as
    1 − ω on its complement, and the two never mix, so the scores' component along 1 — a shift
    of every class score of a row by the same amount, which neither the argmax rule nor the
    softmax of ``predict_proba`` sees — is all that ω sets apart; on the complement every filter
    sees (1 − ω)K ⊗ I, so ω only rescales the regularization parameter (Tikhonov at (ω, λ) is
    ω = 0 at λ/(1 − ω)) or shortens the iterative filters' step (a slower path), and ω = 1 leaves
    nothing but the intercept. With two classes this is the familiar ℓ₀ = −ℓ₁ after centring.

    Args:
      coding: 'one_vs_all', 'simplex', or a pair (a, b) with a > b.
      approximation, n_components: None (exact), or 'nystrom' / 'random_features' with that
        many components, as :class:`VectorValuedRegressor` (the grid is then ranked by the
        squared loss on the codes only).
      search: 'grid' (default) or 'gradient': as :class:`VectorValuedRegressor` (the criterion is
        the squared loss on the codes).
      n_repeats: independent shuffles of the k-fold partition the validation losses are averaged
        over (repeated k-fold). None (default): ⌈1000 / n⌉, at most 3 — 3 at 400 rows, 1 from
        1000 on (the width search on a 400-row subsample of a larger set uses 3). One arbitrary
        partition of a few hundred rows moves the selected width and step by chance: on the IDA
        banana set it sent one split of ten to four times the width most chose (split-to-split
        std 0.88 points with one partition, 0.62 with three; per split in
        ``benchmarks/results/defaults_vs_tuned_ida.json``; ``benchmarks/selection_repeats.py``
        checks the choice on sets outside IDA). The approximate route scores one partition.
      route: 'auto', 'eigen' or 'direct': as :class:`VectorValuedRegressor` (the direct route
        serves filter='tikhonov' / 'iterated_tikhonov'; with an ``approximation`` also 'cg').
      (the other arguments as :class:`VectorValuedRegressor`)

    Attributes (after fit): classes_; cv_errors_ (validation error rates) and cv_scores_se_
    (standard errors over folds of the squared loss), both (n_kernels, n_omegas, n_params) like
    cv_scores_; plus those of :class:`VectorValuedRegressor`.
    """

    _loss = staticmethod(code_losses)

    def __init__(self, kernel: Kernel | None = None, output: str | ArrayLike = "common_similarity",
                 filter: str | SpectralFilter = "nu_method", selection: str | ArrayLike = "kfold",
                 n_folds: int | None = 5, n_steps: int | None = None, lambdas: ArrayLike | None = None,
                 omegas: ArrayLike | None = None, width_factors: ArrayLike | None = None,
                 validation_fraction: float = 0.2, fit_intercept: bool = True, random_state: int | None = 0,
                 verbose: bool = False, coding: str = "one_vs_all", approximation: str | None = None,
                 n_components: int | None = None, search: str = "grid", dtype: DTypeLike | None = None,
                 n_repeats: int | None = None,
                 matmul_precision: str | None = None, route: str = "auto") -> None:
        super().__init__(kernel, output, filter, selection, n_folds, n_steps, lambdas, omegas,
                         width_factors, validation_fraction, fit_intercept, random_state, verbose)
        self.coding = coding
        self.approximation = approximation
        self.n_components = n_components
        self.search = search
        self.dtype = dtype
        self.matmul_precision = matmul_precision
        self.route = route
        self.n_repeats = n_repeats

    def _resolve_output(self, d: int):
        a, V, omegas = super()._resolve_output(d)
        if omegas is not None and self._output_family() == "common_similarity":  # ω cannot change a decision (see the class docstring)
            omegas = np.zeros(1)
            a, V = (np.asarray(m) for m in _outputs.common_similarity_eigh(d, omegas))
        return a, V, omegas

    def _coded_targets(self, X: np.ndarray, y) -> tuple[np.ndarray, np.ndarray, tuple[float, float]]:
        """Checked labels as (codes (n,), coded targets Y (n, c), code values (a, b)); sets ``classes_``."""
        classes, codes = _encode_labels(y)
        if codes.shape[0] != X.shape[0]:
            raise ShapeError(
                f"y must have one label per input: expected {X.shape[0]}, received {codes.shape[0]}."
            )
        if X.shape[0] < 2:
            raise ShapeError(f"at least 2 samples are needed to fit; received n_samples={X.shape[0]}.")
        _check_two_classes(classes)
        a, b = self._code_values(len(classes))
        Y = np.full((X.shape[0], len(classes)), b, dtype=X.dtype)
        Y[np.arange(X.shape[0]), codes] = a
        self.classes_ = classes
        return codes, Y, (a, b)

    def _code_values(self, c: int) -> tuple[float, float]:
        if isinstance(self.coding, str):
            if self.coding == "one_vs_all":
                return 1.0, 0.0
            if self.coding == "simplex":
                return 1.0, -1.0 / (c - 1)
            raise ParameterError(
                f"coding must be 'one_vs_all', 'simplex' or a pair (a, b); received {self.coding!r}."
            )
        try:
            a, b = (float(v) for v in self.coding)
        except (TypeError, ValueError):
            raise ParameterError(f"coding must be a string or a pair (a, b); received {self.coding!r}.") from None
        if not a > b:
            raise ParameterError(f"coding (a, b) needs a > b; received {self.coding!r}.")
        return a, b

    def fit(self, X: ArrayLike, y: ArrayLike) -> "MultiClassClassifier":
        """Fit on (n, p) inputs and n labels of any hashable type (at least two classes).

        Args:
          X: (n, p) inputs (array, list or DataFrame).
          y: (n,) labels: integers, strings or any hashable values; ``classes_`` and ``predict``
            keep y's dtype.
        """
        X = self._validate_fit_inputs(X)
        codes, Y, (a, b) = self._coded_targets(X, y)
        check_search(self)
        self._fit_exact_or_approximate(X, Y)
        self.proba_scale_ = _fit_softmax_scale(self._decision(X), codes, a - b)
        return self

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Scores: (m, n_classes), or (m,) for two classes (score of ``classes_[1]`` minus that of
        ``classes_[0]``: positive means ``classes_[1]``, as in scikit-learn)."""
        F = self._decision(X)
        return F[:, 1] - F[:, 0] if F.shape[1] == 2 else F

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """(m, n_classes) class probabilities: the softmax of the coded scores times ``proba_scale_``.

        The scale is the one (on a log grid of 41 values in [1, 1000]/(a − b)) that minimises the
        log-loss of the fitted model on its training data: probabilities rank the classes exactly as
        ``predict`` does and are calibrated enough for ranking and thresholds, but they are not
        the output of a probabilistic model (use scikit-learn's ``CalibratedClassifierCV`` on
        held-out data for calibrated probabilities).
        """
        return _softmax(self._decision(X) * self.proba_scale_)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """(m,) predicted labels by the argmax rule (eq. 31), in the dtype of ``classes_``."""
        F = self._decision(X)  # checks that the model is fitted
        return self.classes_[np.argmax(F, axis=1)]

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        """Accuracy (weighted by ``sample_weight`` when given)."""
        pred = self.predict(X)
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.shape != pred.shape:
            raise ShapeError(f"y must have shape {pred.shape}; received {y.shape}.")
        return float(np.average(pred == y, weights=None if sample_weight is None else np.asarray(sample_weight)))
