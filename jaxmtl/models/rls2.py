r"""RLS2Regressor and RLS2Classifier: sparse multiple kernel learning with the square loss.

Estimators around :mod:`jaxmtl.mkl` (Algorithm 3 of Dinuzzo, *Learning functions with kernel
methods*, PhD thesis, 2011, [Din11] ch. 4): a convex combination of basis kernels is learned with the
predictor; most weights are exactly zero, so the fit selects kernels (and, with kernels on single
features, features).

Protocol ([Din11] §4.5.2): features standardised (optional), the trace scaling (4.14) of every basis
kernel, an intercept equal to the mean training output subtracted for regression, a warm-started path
of 30 λ log-spaced in [10⁻⁶, 10⁶] with δ = 10⁻². The thesis reports the best λ on the test data; the
estimators pick λ by k-fold cross-validation on the training data instead (the fold paths in one
compiled call, each fold's c-steps factoring its own training rows alone): mean squared error for
regression, misclassification rate (ties broken by the squared error) for classification. The kernel
weights are fitted on the training objective, so the same k-fold also scores each of the dictionary's
kernels on all features alone (kernel ridge on the same folds and λ grid, one compiled call) and keeps
the best of them in place of the RLS2 path when its CV error is lower (``single_kernels``); above
``SINGLE_KERNEL_SUBSAMPLE`` = 400 rows these kernels are screened on a random subsample of that size
first (its own folds, as the other estimators' width searches) and the ``SINGLE_KERNEL_FINALISTS`` = 3
best are cross-validated on all rows. Classification: labels ±1 and the sign rule; more than two classes one-versus-all
(§4.5.3), each class with its own kernel weights.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 3)); y = np.sin(X[:, 0]) + 0.05 * rng.normal(size=40)
    >>> model = RLS2Regressor(n_lambdas=8, cv=3).fit(X, y)
    >>> model.d_.shape, bool(model.score(X, y) > 0.9)
    ((52,), True)
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .._checks import (check_bool, check_int, check_n_folds, check_output_matrix, check_outputs, check_positive,
                       check_random_state)
from ..errors import LabelError, ParameterError
from ..kernels.scalar import Kernel
from ..mkl.bayes import Predictive, predictive
from ..mkl.dictionaries import BasisKernel, KernelDictionary, dictionary, linear_dictionary, standard_dictionary
from ..mkl.rls2 import _resolve_solver
from ._base import BaseEstimator, ClassifierMixin, RegressorMixin
from ._buckets import fold_train_length, pad_rows, size_bucket
from ._row_blocks import in_row_blocks
from ._rls2_programs import _fold_paths, _predict, _refit, _row_sets, _single_kernel_paths
from ._spectral import WIDTH_SUBSAMPLE, _GridSelection
from .multiclass import _check_two_classes, _encode_labels
from .predictor_kinds import DictionaryKernel
from .predictors import KernelPredictor, PerOutputPredictor, SeparablePredictor, _cast, input_shift

__all__ = ["RLS2Regressor", "RLS2Classifier"]

DENSE_MAX_BYTES = 2**30  # store="auto": materialise the basis Grams up to 1 GiB
# Above this many rows the single kernels are screened on a random subsample of this size first (the
# width searches' subsample), and the SINGLE_KERNEL_FINALISTS best are cross-validated on all rows.
SINGLE_KERNEL_SUBSAMPLE = WIDTH_SUBSAMPLE
SINGLE_KERNEL_FINALISTS = 3


OUTLIER_SCALE_RATIO = 100.0


def _warn_if_outliers_dominate(X: np.ndarray, sd: np.ndarray) -> None:
    """Warn when a few far rows set a feature's standard deviation (standardising by it would squeeze
    every other row together and flatten the fit).

    Args:
      X: (n, p) training inputs; sd: (p,) their standard deviations.
    """
    mad = 1.4826 * np.median(np.abs(X - np.median(X, 0)), 0)
    bad = np.flatnonzero((mad > 0) & (sd > OUTLIER_SCALE_RATIO * mad))
    if bad.size:
        warnings.warn(f"features {bad.tolist()[:5]} have a standard deviation over {OUTLIER_SCALE_RATIO:g} times "
                      "their median absolute deviation: a few far rows set it, and standardising by it squeezes "
                      "the other rows together. Remove the outlying rows, or pass standardize=False.",
                      UserWarning, stacklevel=4)


class _RLS2Base(BaseEstimator):
    """Shared fitting machinery (parameters documented on the public classes)."""

    _one_vs_all = False
    n_iter_: np.ndarray  # set by fit: alternations of Algorithm 3 at the selected λ

    def __init__(self, kernels: str | KernelDictionary | Sequence[Kernel | BasisKernel | tuple] = "standard", lambdas: ArrayLike | None = None,
                 n_lambdas: int = 30, lambda_range: tuple[float, float] = (1e-6, 1e6), lam: float | None = None,
                 scaling: str | ArrayLike = "trace", standardize: bool = True, fit_intercept: bool = True,
                 output_matrix: ArrayLike | None = None, cv: int = 5, tol: float = 1e-2, max_iter: int = 200,
                 solver: str = "auto", store: str = "auto", random_state: int | None = 0, single_kernels: bool = True,
                 dtype: DTypeLike | None = None,
                 matmul_precision: str | None = None) -> None:
        self.kernels = kernels
        self.lambdas = lambdas
        self.n_lambdas = n_lambdas
        self.lambda_range = lambda_range
        self.lam = lam
        self.scaling = scaling
        self.standardize = standardize
        self.fit_intercept = fit_intercept
        self.output_matrix = output_matrix
        self.cv = cv
        self.tol = tol
        self.max_iter = max_iter
        self.solver = solver
        self.store = store
        self.random_state = random_state
        self.single_kernels = single_kernels
        self.dtype = dtype
        self.matmul_precision = matmul_precision

    # ---- validation (plain Python, before anything is traced) ----
    def _dictionary(self, p: int) -> KernelDictionary:
        k = self.kernels
        if isinstance(k, KernelDictionary):
            k.check_features(p)
            return k
        if isinstance(k, str):
            if k == "standard":
                return standard_dictionary(p)
            if k == "linear":
                return linear_dictionary(p)
            raise ParameterError(f"kernels must be 'standard', 'linear', a KernelDictionary or a list of kernels; "
                                 f"received {k!r}.")
        D = dictionary(k)
        D.check_features(p)
        return D

    def _grid(self) -> np.ndarray:
        if self.lam is not None:
            return np.array([check_positive(self.lam, "lam")])
        if self.lambdas is not None:
            from .._checks import check_positive_array

            return np.sort(check_positive_array(self.lambdas, "lambdas"))[::-1]
        n = check_int(self.n_lambdas, "n_lambdas", minimum=1)
        try:
            lo, hi = (check_positive(v, "lambda_range") for v in self.lambda_range)
        except TypeError:
            raise ParameterError(f"lambda_range must be a pair (low, high); received {self.lambda_range!r}.") from None
        if lo >= hi:
            raise ParameterError(f"lambda_range must have low < high; received {self.lambda_range!r}.")
        return np.geomspace(hi, lo, n)

    def _check_params(self, n: int) -> dict:
        check_bool(self.standardize, "standardize")
        check_bool(self.fit_intercept, "fit_intercept")
        check_bool(self.single_kernels, "single_kernels")
        check_positive(self.tol, "tol")
        check_int(self.max_iter, "max_iter")
        check_random_state(self.random_state)
        if self.store not in ("auto", "dense", "lazy"):
            raise ParameterError(f"store must be 'auto', 'dense' or 'lazy'; received {self.store!r}.")
        grid = self._grid()
        folds = None
        if len(grid) > 1:
            folds = check_n_folds(self.cv, n, "cv")
        return {"grid": grid, "folds": folds, "solver": _resolve_solver(self.solver, n)}

    # ---- fitting ----
    def _shift_invariant(self) -> bool:
        """Standardised features (the default) do not depend on a common shift of the inputs."""
        return self.standardize is True

    def _rescales_inputs(self) -> bool:
        """Standardised features (the default) are divided by their standard deviation."""
        return self.standardize is True

    def _prepare_X(self, X: np.ndarray) -> np.ndarray:
        return (X - self.x_mean_) / self.x_scale_

    def _stack(self, X1, X2=None):
        D, m = self.dictionary_, len(self.dictionary_)
        n1 = X1.shape[0]
        n2 = n1 if X2 is None else X2.shape[0]
        store = self.store if self.store != "auto" else ("dense" if m * n1 * n2 * 8 <= DENSE_MAX_BYTES else "lazy")
        return D.stack(X1, X2, scale=self.scale_, store=store)

    def _fit_targets(self, X, Y, labels=None):
        n = X.shape[0]
        opts = self._check_params(n)
        T = Y.shape[1]
        A = np.eye(T) if (self.output_matrix is None or self._one_vs_all) else check_output_matrix(
            self.output_matrix, T, "output_matrix")
        self.x_mean_ = X.mean(0) if self.standardize else np.zeros(X.shape[1])
        sd = X.std(0) if self.standardize else np.ones(X.shape[1])
        self.x_scale_ = np.where(sd > 0, sd, 1.0)
        if self.standardize:
            _warn_if_outliers_dominate(X, sd)
        Xs = self._prepare_X(X)
        self.dictionary_ = self._dictionary(X.shape[1])
        # the paths run on the rows padded to their size bucket (docs/design.md, "Size buckets"):
        # the padded rows' weight is 0 in every path, fold, scaling and loss, so their coefficients are 0
        N = size_bucket(n)
        Xp = pad_rows(Xs, N)
        valid = (np.arange(N) < n).astype(np.float64)
        self.scale_ = self.dictionary_.scaling(Xp, self.scaling, weights=valid,
                                               y=None if labels is None else np.r_[labels, np.ones(N - n)])
        self.kernel_names_ = self.dictionary_.names()
        stack = self._stack(Xp)
        # NumPy arguments in JAX's precision (float32 unless x64 is on): converting them is no compiled call
        Yj = pad_rows(np.asarray(Y, jax.dtypes.canonicalize_dtype(np.asarray(Y).dtype)), N)
        Aj, grid = np.asarray(A, Yj.dtype), np.asarray(opts["grid"], Yj.dtype)
        args = (float(self.tol), int(self.max_iter), opts["solver"], 1e-8, 100_000)
        valid = valid.astype(Yj.dtype)

        # the k fold paths (each on its own rows), then the path on all rows
        k = opts["folds"]
        masks = np.pad(self._fold_masks(n, k, labels) if k is not None else np.zeros((0, n)), ((0, 0), (0, N - n)))
        mus = self._means(masks, Yj, valid)
        cv_scores = None
        if k is not None:
            _, F = _fold_paths(stack, Yj, grid, Aj, np.asarray(masks, Yj.dtype),
                               np.asarray(_row_sets(masks, self._train_length(N, k, labels))), mus[:-1], *args,
                               self._one_vs_all)
            cv_scores = self._loss(np.asarray(F), pad_rows(Y, N), (1.0 - masks) * valid)
        paths, _ = _fold_paths(stack, Yj, grid, Aj, valid[None], None, mus[-1:], *args, self._one_vs_all)
        best = int(np.argmin(cv_scores)) if cv_scores is not None else 0
        full = jax.tree.map(lambda x: np.asarray(x)[0], paths)
        self._store(full, best, mus[-1], A, Xs, cv_scores, opts["grid"])
        self.selected_kernel_, self.single_kernel_cv_ = None, None
        self.single_kernel_screen_cv_, self.single_kernel_screen_rows_ = None, None
        candidates = [j for j, b in enumerate(self.dictionary_) if b.columns is None]
        if self.single_kernels and cv_scores is not None and candidates:
            self._select_single_kernel(stack, candidates, Y, Yj, grid, Aj, mus, masks, labels, opts, valid)
        self.y_fit_ = np.asarray(Yj[:n] - mus[-1])
        return self

    def _means(self, masks, Yj, valid):
        """(S + 1, T) the mean output of each mask's rows (S, N), then of the real rows (``valid``
        (N,)); zeros without intercept."""
        W = np.vstack([masks, valid[None]]).astype(Yj.dtype)
        return (W @ Yj) / np.sum(W, 1, keepdims=True) if self.fit_intercept else np.zeros((W.shape[0], Yj.shape[1]),
                                                                                          Yj.dtype)

    def _single_kernel_cv(self, stack, idx, Y, Yj, grid, Aj, masks, valid, labels):
        """(len(idx), L) mean held-out errors of kernel ridge with each basis kernel ``idx[j]`` alone on
        the folds ``masks`` (k, N) of the rows of ``stack`` (the real ones ``valid`` (N,); Y (N, T) and
        Yj their outputs, zero on the padding; ``labels`` the classes the folds are stratified by, or
        None), along the λ grid."""
        N, k = len(valid), len(masks)
        F = _single_kernel_paths(stack, np.asarray(idx), Yj, grid, Aj, np.asarray(masks, Yj.dtype),
                                 np.asarray(_row_sets(masks, self._train_length(N, k, labels))),
                                 self._means(masks, Yj, valid)[:-1])
        return self._loss(np.asarray(F), Y, (1.0 - masks) * valid)

    def _select_single_kernel(self, stack, candidates, Y, Yj, grid, Aj, mus, masks, labels, opts, valid):
        """Cross-validate each basis kernel on all features alone (kernel ridge on the same folds and λ
        grid) and keep the best of them in place of the RLS2 path when its CV error is lower: the kernel
        weights d are fitted on the training objective, so the CV error is what can tell whether learning
        them pays; the dictionary's own kernels, each on its own, are the baseline it must not lose to.

        Above ``SINGLE_KERNEL_SUBSAMPLE`` rows the kernels are screened first on a random subsample of
        that size (its own folds, as the other estimators' width searches), and only the
        ``SINGLE_KERNEL_FINALISTS`` best of them are cross-validated on all rows; the others' rows of
        ``single_kernel_cv_`` are NaN."""
        n = Y.shape[0]
        scores = np.full((len(candidates), len(grid)), np.nan)
        finalists = np.arange(len(candidates))
        if n > SINGLE_KERNEL_SUBSAMPLE >= 2 * opts["folds"] and len(candidates) > SINGLE_KERNEL_FINALISTS:
            rows = _GridSelection._subsample_rows(self, n, SINGLE_KERNEL_SUBSAMPLE)  # type: ignore[arg-type]  # borrowed
            sub_masks = self._fold_masks(rows.size, opts["folds"], None if labels is None else labels[rows])
            screen = self._single_kernel_cv(stack.take(rows, rows), candidates, Y[rows], Yj[rows], grid, Aj,
                                            sub_masks, np.ones(rows.size, Yj.dtype),
                                            None if labels is None else labels[rows])
            self.single_kernel_screen_cv_, self.single_kernel_screen_rows_ = screen, rows
            finalists = np.sort(np.argsort(screen.min(1), kind="stable")[:SINGLE_KERNEL_FINALISTS])
        scores[finalists] = self._single_kernel_cv(stack, [candidates[j] for j in finalists], pad_rows(Y, len(valid)),
                                                   Yj, grid, Aj, masks, valid, labels)
        self.single_kernel_cv_ = scores
        j, i = np.unravel_index(int(np.nanargmin(scores)), scores.shape)
        k = candidates[j]
        d = np.eye(len(self.dictionary_))[k]
        lam = float(grid[i])
        # solved whether or not the kernel wins (one c-step): the programs a fit compiles do not depend on its data
        C = np.asarray(_refit(stack, np.asarray(d, Yj.dtype), (Yj - mus[-1]) * valid[:, None], Aj,
                              np.asarray(lam, Yj.dtype), valid, opts["solver"]))[:n]
        if scores[j, i] >= np.min(self.path_["cv_score"]):
            return
        if self._one_vs_all:  # the same kernel for every class: weights (classes, m), coefficients (classes, n, 1)
            self.d_, self.dual_coef_ = np.tile(d, (C.shape[1], 1)), C.T[:, :, None]
        else:
            self.d_, self.dual_coef_ = d, C
        self.coef_ = self.dual_coef_
        self.lambda_ = lam
        self.n_kernels_ = np.count_nonzero(self.d_, axis=-1)
        self.n_iter_ = np.ones_like(self.n_iter_)  # one solve with the weights fixed
        self.selected_kernel_ = self.kernel_names_[k]

    @staticmethod
    def _train_length(size, k, labels):
        """The training rows every fold's row set is padded to: the most a fold of
        :meth:`_fold_masks` holds for any n of the bucket ``size`` (stratified by ``labels``' classes)."""
        return fold_train_length(size, k, 1 if labels is None else len(np.unique(labels)))

    def _fold_masks(self, n, k, labels):
        rng = np.random.default_rng(self.random_state)
        if labels is not None:  # stratified: deal each class's shuffled rows over the folds
            fold = np.empty(n, int)
            for c in np.unique(labels):
                idx = rng.permutation(np.flatnonzero(labels == c))
                fold[idx] = (np.arange(len(idx)) + rng.integers(k)) % k
        else:
            fold = rng.permutation(np.arange(n) % k)
        return (fold[None, :] != np.arange(k)[:, None]).astype(np.float64)

    def _loss(self, F, Y, held):
        """Mean over the k folds of the held-out squared error: F (..., k, L, n, T), held (k, n) → (..., L)."""
        err = np.einsum("kn,...klnt->...kl", held, (F - Y) ** 2) / np.sum(held, 1)[:, None]
        return err.mean(-2)

    def _store(self, full, best, mu, A, Xs, cv_scores, grid):
        take = (lambda x: x[:, best]) if self._one_vs_all else (lambda x: x[best])
        d = np.asarray(take(full.d))
        self.d_ = np.where(d > 0, d, 0.0)
        self.dual_coef_ = np.asarray(take(full.C))[..., :Xs.shape[0], :]  # the real rows (the padding's are 0)
        self.lambda_ = float(grid[best])
        self.intercept_ = np.asarray(mu)
        self.output_matrix_ = np.asarray(A)
        self.X_fit_ = Xs
        self.n_kernels_ = np.count_nonzero(self.d_, axis=-1)
        self.n_iter_ = np.asarray(take(full.n_iter))
        pd = np.asarray(full.d)
        self.path_: dict[str, Any] = {"lambdas": np.asarray(grid), "d": pd, "n_kernels": np.count_nonzero(pd > 0, axis=-1),
                      "n_iter": np.asarray(full.n_iter), "converged": np.asarray(full.converged),
                      "cv_score": cv_scores, "best_index": best}
        self.coef_ = self.dual_coef_  # marks the model as fitted (BaseEstimator._check_fitted)

    def _ridge_system(self) -> tuple[float, np.ndarray]:
        """(μ, s) of the fitted model for :func:`~jaxmtl.models._precision.relative_regularisation`:
        μ = λ, s = tr 𝐊(d) = Σₖ dₖ sₖ Σᵢ K̃ₖ(xᵢ, xᵢ) (one per class one-versus-all).

        The c-step (4.2) at the selected weights solves (𝐊(d) ⊗ A + λI)c = y with the thesis's
        unnormalised λ and 𝐊(d) = Σₖ dₖ sₖ K̃ₖ, the basis kernels scaled by sₖ (§4.4): the
        spectral Tikhonov system (K/n + λ'I) at λ' = λ/n, so ρ = λ / tr 𝐊(d). Under the default
        trace scaling (4.14) sₖ Σᵢ K̃ₖ(xᵢ, xᵢ) = 1 and d lies on the simplex, so ρ = λ. A single
        kernel kept in place of the path (``selected_kernel_``) is d = eₖ.
        """
        traces = np.sum(np.asarray(self.dictionary_.diagonal(self.X_fit_, self.scale_), np.float64), axis=1)
        return self.lambda_, np.asarray(self.d_, np.float64) @ traces

    # ---- prediction ----
    def _decision(self, X) -> np.ndarray:
        Xs = self._prepare_X(self._validate_predict_inputs(X))
        d, C, A = (jnp.asarray(a) for a in (self.d_, self.dual_coef_, self.output_matrix_))
        F = in_row_blocks(lambda B: _predict(self._stack(B, self.X_fit_), d, C, A, self._one_vs_all), Xs)
        return F + self.intercept_


    def predictor(self) -> KernelPredictor:
        """The fitted prediction function as a pytree: Σᵢ k(x − x̄, xᵢ) cᵢ A + b with k the
        :class:`~jaxmtl.models.predictor_kinds.DictionaryKernel` Σₖ dₖ sₖ K̃ₖ on the standardised
        inputs — a :class:`~jaxmtl.models.SeparablePredictor`, or one-versus-all a
        :class:`~jaxmtl.models.PerOutputPredictor` (one weight vector per class); (m, T)
        outputs, the decision scores for a classifier ((m, 1) for two classes)."""
        self._check_fitted()
        dtype = self.X_fit_.dtype
        scale = jnp.asarray(self.x_scale_, dtype)
        basis = self.dictionary_.stack(self.X_fit_[:1], scale=self.scale_, store="lazy")
        kernel = DictionaryKernel(_cast(basis, dtype), jnp.asarray(self.d_, dtype), scale)
        C, shift = jnp.asarray(self.dual_coef_, dtype), input_shift(self, dtype, self.x_mean_)
        X_fit, b = jnp.asarray(self.X_fit_) * scale, jnp.asarray(self.intercept_, dtype)
        if self._one_vs_all:  # (T, n, 1): one column per class, each on its own weights
            per_class: tuple = (X_fit, C[:, :, 0].T, jnp.eye(C.shape[0], dtype=dtype), b, shift)
            return PerOutputPredictor(kernel, *per_class)
        shared: tuple = (X_fit, C, jnp.asarray(self.output_matrix_, dtype), b, shift)
        return SeparablePredictor(kernel, *shared)


class RLS2Regressor(RegressorMixin, _RLS2Base):
    """Regression with RLS2: kernel weights d on the simplex learned with the predictor ([Din11] Alg. 3).

    Args:
      kernels: ``"standard"`` (the 13·(p + 1) kernels of [Din11] §4.5.2), ``"linear"`` (linear kernels
        on each feature, eq. 4.5: a scaled Lasso, §4.3), a :class:`jaxmtl.mkl.KernelDictionary`, or a
        list of kernels / ``(kernel, columns)`` pairs.
      lambdas: explicit λ grid; default ``n_lambdas`` values log-spaced over ``lambda_range``.
      lam: a single λ (no selection).
      scaling: s_k rule of §4.4 (``"trace"`` 4.14, ``"centered_trace"``, ``"none"``) or an array.
      standardize: standardise the features with the training mean and std first.
      fit_intercept: subtract the mean training output (restored in ``predict``).
      output_matrix: (T, T) PSD matrix A for T outputs: basis kernels 𝐊ᵏ ⊗ A with weights shared by all
        outputs (default identity).
      cv: folds of the cross-validation that picks λ on the path.
      tol: δ of the stopping test of Algorithm 3; max_iter: alternations per λ.
      solver: c-step solver, ``"auto"`` / ``"cholesky"`` / ``"cg"``; store: basis Grams ``"auto"`` /
        ``"dense"`` (O(n²m) memory) / ``"lazy"`` (evaluated on demand, O(n²)).
      random_state: seed of the fold assignment.
      single_kernels: also cross-validate each basis kernel on all features alone (kernel ridge on the
        same folds and λ grid; screened on a 400-row subsample above 400 rows, the 3 best then on all
        rows) and keep the best in place of the RLS2 path when its CV error is lower.
      matmul_precision: None or 'highest' (full float32 matrix products, the default), 'high' /
        'tensorfloat32' / 'tf32' or 'default' / 'bfloat16': reduced-precision products on GPUs and
        TPUs for path steps, eigen-path products and selection losses (Gram evaluations stay
        full precision); warns when the selected model is beyond them (docs/precision.md).
      dtype: None (JAX's default), 'float32' or 'float64': the precision of fit and predict whatever
        JAX's global setting (see docs/precision.md); outputs are float64 either way.

    Attributes:
      d_: (m,) kernel weights (sum 1, mostly 0); dual_coef_: (n, T) coefficients c; lambda_: selected λ;
      intercept_: (T,); n_kernels_: number of selected kernels; n_iter_: alternations of Algorithm 3 at
      the selected λ (per class for one-vs-all; 1 when a single kernel is kept: one solve);
      kernel_names_: labels of the basis
      kernels; scale_: s_k; path_: dict with per-λ ``lambdas``, ``d``, ``n_kernels``, ``n_iter``,
      ``converged``, ``cv_score`` (mean held-out MSE) and ``best_index`` of the RLS2 path;
      selected_kernel_: name of the single kernel kept instead of the path (None: the path);
      single_kernel_cv_: (n_all_feature_kernels, L) their mean held-out errors (None without CV; above
      ``SINGLE_KERNEL_SUBSAMPLE`` rows NaN for the kernels not among the finalists of the screen);
      single_kernel_screen_cv_, single_kernel_screen_rows_: the screen's errors on the subsample and its
      rows (None when there was no screen); n_features_in_.
    """

    def fit(self, X: ArrayLike, y: ArrayLike) -> "RLS2Regressor":
        """Fit on X (n, p) and y (n,) or (n, T); returns self."""
        X = self._validate_fit_inputs(X)
        Y, self._y_1d = check_outputs(y, X.shape[0], "y")
        return self._fit_targets(X, Y.astype(X.dtype))

    def predict(self, X: ArrayLike, return_std: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """(m,) or (m, T) predictions; with ``return_std`` also the predictive std of a new output
        under the MAP view of [Din11] §4.2 (:func:`jaxmtl.mkl.predictive`)."""
        if not return_std:
            F = self._decision(X)
            return F[:, 0] if self._y_1d else F
        post = self.predict_distribution(X)
        mean, sd = np.asarray(post.mean), np.sqrt(np.asarray(post.var_y))
        return (mean[:, 0], sd[:, 0]) if self._y_1d else (mean, sd)

    def predict_distribution(self, X: ArrayLike) -> Predictive:
        """The posterior of the two-layer Gaussian model at the learned weights ([Din11] §4.2)."""
        Xs = self._prepare_X(self._validate_predict_inputs(X))
        diag = self.dictionary_.diagonal(Xs, self.scale_)
        post = predictive(self._stack(self.X_fit_), self._stack(Xs, self.X_fit_), diag, self.d_,
                          self.y_fit_, self.lambda_, self.output_matrix_)
        return Predictive(np.asarray(post.mean) + self.intercept_, np.asarray(post.var_f), np.asarray(post.var_y))


class RLS2Classifier(ClassifierMixin, _RLS2Base):
    """Classification with RLS2: labels ±1, the sign rule; one-versus-all beyond two classes ([Din11] §4.5).

    Parameters as :class:`RLS2Regressor` (``output_matrix`` is not used; ``fit_intercept`` defaults to
    False, as in [Din11] §4.5.2, and ``scaling`` also accepts ``"fisher"``, the kernel form of 4.13, for
    two classes). λ is chosen by stratified k-fold cross-validation of the misclassification rate
    (ties broken by 10⁻³ × the squared error on the ±1 codes).

    Attributes:
      classes_: labels in y's dtype; d_: (m,) weights, or (n_classes, m) one-versus-all;
      others as :class:`RLS2Regressor`.
    """

    def __init__(self, kernels: str | KernelDictionary | Sequence[Kernel | BasisKernel | tuple] = "standard", lambdas: ArrayLike | None = None,
                 n_lambdas: int = 30, lambda_range: tuple[float, float] = (1e-6, 1e6), lam: float | None = None,
                 scaling: str | ArrayLike = "trace", standardize: bool = True, fit_intercept: bool = False,
                 output_matrix: ArrayLike | None = None, cv: int = 5, tol: float = 1e-2, max_iter: int = 200,
                 solver: str = "auto", store: str = "auto", random_state: int | None = 0, single_kernels: bool = True,
                 dtype: DTypeLike | None = None,
                 matmul_precision: str | None = None) -> None:
        super().__init__(kernels, lambdas, n_lambdas, lambda_range, lam, scaling, standardize, fit_intercept,
                         output_matrix, cv, tol, max_iter, solver, store, random_state, single_kernels, dtype,
                         matmul_precision)

    def fit(self, X: ArrayLike, y: ArrayLike) -> "RLS2Classifier":
        """Fit on X (n, p) and labels y (n,) of any hashable type; returns self."""
        X = self._validate_fit_inputs(X)
        classes, codes = _encode_labels(y)
        if len(codes) != X.shape[0]:
            raise LabelError(f"y must have one label per row of X: expected {X.shape[0]}, received {len(codes)}.")
        _check_two_classes(classes)
        self.classes_ = classes
        self._one_vs_all = len(classes) > 2
        if self._one_vs_all:
            Y = np.where(codes[:, None] == np.arange(len(classes))[None, :], 1.0, -1.0)
        else:
            Y = np.where(codes == 1, 1.0, -1.0)[:, None]
        Y = Y.astype(X.dtype)  # ±1 codes in the inputs' precision (float32 inputs stay float32 under x64)
        if isinstance(self.scaling, str) and self.scaling == "fisher" and self._one_vs_all:
            raise ParameterError("scaling='fisher' needs two classes; use 'trace' for one-versus-all.")
        return self._fit_targets(X, Y.astype(X.dtype), labels=codes if self._one_vs_all else Y[:, 0])

    def _loss(self, F, Y, held):
        """Mean over the k folds of the held-out error rate + 10⁻³ × squared error: F (..., k, L, n, T),
        held (k, n) → (..., L)."""
        wrong = np.argmax(F, -1) != np.argmax(Y, 1) if F.shape[-1] > 1 else (
            np.where(F[..., 0] >= 0, 1.0, -1.0) != Y[:, 0])
        mse = np.sum((F - Y) ** 2, axis=-1)
        err = np.einsum("kn,...kln->...kl", held, wrong + 1e-3 * mse) / np.sum(held, 1)[:, None]
        return err.mean(-2)

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """(m,) scores (positive: ``classes_[1]``) or (m, n_classes) one-versus-all confidences."""
        F = self._decision(X)
        return F if self._one_vs_all else F[:, 0]

    def predict(self, X: ArrayLike) -> np.ndarray:
        """(m,) labels in the dtype of ``classes_``: sign rule, or argmax one-versus-all."""
        F = self.decision_function(X)
        return self.classes_[np.argmax(F, 1)] if self._one_vs_all else self.classes_[(F >= 0).astype(int)]
