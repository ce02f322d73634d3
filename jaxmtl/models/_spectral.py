r"""Estimators in scikit-learn's conventions over the separable eigen path.

:class:`VectorValuedRegressor` learns f: ℝᵖ → ℝᵈ with Γ(x, x') = K(x, x')·A and a spectral
filter; :class:`MultiClassClassifier` codes the labels as vectors ([BRBV11] eq. 30), regresses
and classifies by the argmax rule (31).

Model selection is one compiled call: for every kernel of a grid (``lax.map``), every output
matrix of a family sharing eigenvectors (``vmap`` over the eigenvalues), every fold (``vmap``)
and every filter parameter (``vmap`` or ``lax.scan``), the validation loss; the best triple is
refitted on all the data.

With no arguments both estimators use a Gaussian kernel whose width is chosen from
``median_distance × (0.25, 0.5, 1, 2, 4)``, the common-similarity output family with ω on
{0, 0.1, …, 1}, the ν-method for up to 300 steps, and 5-fold cross-validation.

Example:
    >>> import numpy as np
    >>> from jaxmtl import VectorValuedRegressor
    >>> X = np.random.default_rng(0).normal(size=(60, 3))
    >>> Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1])]
    >>> model = VectorValuedRegressor().fit(X, Y)
    >>> model.predict(X[:2]).shape
    (2, 2)
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import (check_bool, check_fraction, check_int, check_n_folds, check_output_matrix, check_positive_array,
                       check_random_state, check_unit_interval)
from .._jit import jit
from .._progress import StageReporter
from ..errors import ParameterError, ShapeError
from ..filters.spectral import SpectralFilter
from ..kernels import outputs as _outputs
from ..kernels.families import family_eigh, family_names, output_family
from ..kernels.scalar import Gaussian, Kernel, median_heuristic
from ..paths.eigen import mse_loss
from ..selection.criteria import fold_indices, kfold_masks
from ._base import BaseEstimator, resolve_filter
from ._buckets import fold_targets, mean_diag, pad_folds, pad_rows, size_bucket
from ._gradient_search import check_search, fit_gradient
from ._grid_routes import _score_grid, grid_route, on_route, refit
from ._grid_search import _best_index, _refine_widths, _score_kernels, _warn_on_edges, fold_means
from ._null_model import null_wins
from ._precision import in_working_precision
from ._row_blocks import in_row_blocks

__all__: list[str] = []

# Default Gaussian widths: median distance × 4^k, k = −2 … 3 (1/16 … 64), then refined around the
# best (× 2^±1) or extended past an edge (× 4^±1, 4^±2; see ._grid_search.WIDTH_EXTENSIONS).
DEFAULT_WIDTH_FACTORS = tuple(4.0 ** np.arange(-2, 4))
# Above this many rows the width grid is searched on a random subsample of this size first, where
# that costs fewer eigendecompositions' flops than searching all rows (_GridSelection._subsample_pays).
WIDTH_SUBSAMPLE = 400
# Default Tikhonov λ: LAMBDA_COUNT values in [LAMBDA_FLOOR, 1] × the kernel's mean diagonal (below
# that floor k-fold losses read off one eigendecomposition of all rows drift from per-fold refits
# in float64; the per-output family, which decomposes every fold, continues it: _per_task.output_lambdas).
LAMBDA_FLOOR, LAMBDA_COUNT = 1e-6, 30
MAX_STEPS = 1_000_000  # longest path: its (steps, …) arrays must fit in memory
DEFAULT_STEPS = {"nu_method": 300, "landweber": 3000}
# A default path whose best step is its last is continued to 2**STEP_DOUBLINGS times its length.
STEP_DOUBLINGS = 3
# Default iterative paths run every step but evaluate (k-fold / LOO / GCV) only a geometric
# grid of steps with this ratio (all of 1 … 7, then every ~15 %): validation losses change
# slowly in t, and each evaluated step costs a product with the held-out Gram.
STEP_RATIO = 1.15
# Kernels per compiled grid-scoring call (the refined search on all rows scores 3 widths).
KERNEL_BATCH = 3
SELECTIONS = ("kfold", "loo", "gcv", "holdout")
# n_repeats=None (estimators that take it): k-fold repeated over independent shuffles until about
# REPEAT_PREDICTIONS validation predictions per grid point, at most MAX_REPEATS partitions.
REPEAT_PREDICTIONS = 1000
MAX_REPEATS = 3


def _step_grid(T: int) -> np.ndarray:
    """Steps 1 … T on a geometric grid of ratio ``STEP_RATIO`` (T included).

    Example:
        >>> _step_grid(20).tolist()
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 15, 17, 20]
    """
    n_points = int(np.ceil(np.log(T) / np.log(STEP_RATIO))) + 1 if T > 1 else 1
    return np.unique(np.round(np.geomspace(1, T, n_points)).astype(np.int64))


def _path_params(filt: SpectralFilter, params: np.ndarray, length: int | None = None):
    """(params, report, index) of a compiled path evaluating ``params``: an iterative filter runs
    steps 1 … T (T the last listed step), evaluates the listed ones (``report``) and ``index``
    picks them out of the (…, T) scores; other filters evaluate ``params`` as they are.

    ``length`` (≥ the last step): the path is compiled for steps 1 … length and stops after the
    last listed step (:func:`~jaxmtl.paths.eigen.path_map`'s segments), so that a default path and
    its continuation (:func:`_continue_path`) are one program.

    Example:
        >>> from jaxmtl.filters import NuMethod
        >>> full, report, index = _path_params(NuMethod(), np.array([1, 2, 4]), length=8)
        >>> full.tolist(), report.tolist(), index.tolist()
        ([1, 2, 3, 4, 5, 6, 7, 8], [True, True, False, True, False, False, False, False], [0, 1, 3])
    """
    params = np.asarray(params)
    if not filt.iterative or (length is None and np.array_equal(params, np.arange(1, params.size + 1))):
        return params, None, None
    full = np.arange(1, max(int(params[-1]), length or 0) + 1)
    return full, np.isin(full, params), params - 1


@jit
def _predict(kern, X_new, X_fit, C, A):
    return kern(X_new, X_fit) @ C @ A


@jit
def _gram(kern, X):
    """K(X, X) as one compiled call (eagerly, distances and kernel compile a program per operation)."""
    return kern(X, X)


def _continued_steps(steps: np.ndarray) -> np.ndarray:
    """The steps of a default path continued to 2^STEP_DOUBLINGS times its length: its own and
    the geometric grid of the longer path (:func:`_continue_path`).

    Example:
        >>> _continued_steps(_step_grid(20))[-3:].tolist()
        [122, 139, 160]
    """
    return np.union1d(steps, _step_grid(2**STEP_DOUBLINGS * int(steps[-1])))


def _continue_path(kernels, steps, scores, score):
    """Continue a default iterative path whose best step is its last to 2^STEP_DOUBLINGS times its
    length, in one call: a path cut short selects its last step, which is no selection at all.

    Only the selected kernel's and output matrix's path is continued: the other grid points keep
    their losses up to the original length, +inf beyond. ``score(kernels, steps, omega=i)``
    scores output matrix i alone. Returns (kernels, steps, scores).
    """
    iw, io, ip = _best_index(scores)
    if ip != len(steps) - 1:
        return kernels, steps, scores
    longer = _continued_steps(steps)  # one path: one compilation
    best_row = score([kernels[iw]], longer, omega=io)
    padded = np.full(scores.shape[:2] + (len(longer),) + scores.shape[3:], np.inf)
    padded[:, :, np.searchsorted(longer, steps)] = scores
    padded[iw, io] = best_row[0, 0]
    return kernels, longer, padded


class _GridSelection(BaseEstimator):
    """Kernel-width grids and fold masks shared by every estimator that selects on a path.

    ``kernel`` is a kernel, None (a Gaussian of every width of the grid) or, where the class sets
    ``_kernel_lists``, a list of kernels scored as the widths are. Reads the attributes ``kernel``, ``width_factors``, ``selection``, ``n_folds`` (None: the
    class's ``_default_n_folds``, at most one fold per sample), ``n_repeats`` (a class default of
    1; see :meth:`_n_repeats`), ``validation_fraction`` and ``random_state``.
    """

    _default_width_factors = DEFAULT_WIDTH_FACTORS
    _default_n_folds = 5
    n_repeats: int | None = 1  # one k-fold partition, unless an estimator takes ``n_repeats`` as a parameter
    _kernel_lists = False  # whether ``kernel`` may be a list of kernels to choose from by the selection

    def _resolve_kernels(self, X: np.ndarray) -> tuple[list[Kernel], np.ndarray | None]:
        if self.kernel is None:
            factors = check_positive_array(
                type(self)._default_width_factors if self.width_factors is None else self.width_factors,
                "width_factors",
            )
            base = median_heuristic(X)
            if not base > 0:
                base = 1.0
            widths = base * factors
            return [Gaussian(float(w)) for w in widths], widths
        kernels = list(self.kernel) if isinstance(self.kernel, (list, tuple)) else [self.kernel]
        many = type(self)._kernel_lists and getattr(self, "approximation", None) is None
        if not kernels or not all(isinstance(k, Kernel) for k in kernels) or (len(kernels) > 1 and not many):
            raise ParameterError(
                "kernel must be a jaxmtl.kernels.Kernel, None"
                + (", or a non-empty list of kernels to choose from" if many else
                   f" (a list of kernels is searched on the exact path only: {type(self).__name__} "
                   + ("with approximation=None)" if type(self)._kernel_lists else "takes one kernel)"))
                + f"; received {self.kernel!r}."
            )
        return [in_working_precision(k) for k in kernels], None

    def _subsample_rows(self, n: int, size: int) -> np.ndarray:
        """(size,) sorted random rows of n (size ≤ n), from ``random_state``: where the default
        width grid is searched first when n > size (``WIDTH_SUBSAMPLE`` of the calling module)."""
        rng = np.random.default_rng(check_random_state(self.random_state))
        return np.sort(rng.choice(n, size, replace=False))

    def _width_search_rows(self, n: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(rows, masks) of the subsample the default width grid is searched on first — with
        ``kernel`` and ``width_factors`` None, a named selection, n > ``WIDTH_SUBSAMPLE`` rows and
        a search there cheaper than on all rows (:meth:`_subsample_pays`): :meth:`_subsample_rows`
        and the selection's training masks on them — else None."""
        if self.kernel is None and self.width_factors is None and n > WIDTH_SUBSAMPLE \
                and isinstance(self.selection, str) and self._subsample_pays(n):
            return self._subsample_rows(n, WIDTH_SUBSAMPLE), self._masks(WIDTH_SUBSAMPLE)
        return None

    def _subsample_pays(self, n: int) -> bool:
        """Whether the width search on ``WIDTH_SUBSAMPLE`` rows, then 3 widths on all n, costs
        fewer eigendecomposition flops than the search on all n rows: W·r_s·N_s³ + 3·r·N³ < W·r·N³,
        W the default widths and one refinement's two, N and N_s the size buckets of n and of the
        subsample, r and r_s their k-fold partitions (1 for the other selections; the folds'
        training fraction is common to both sides). Just above the subsample's size it does not
        pay, and its second set of shapes compiles every scoring program twice: there (401 to 512
        rows with the default repeats) all rows are searched, as below the subsample's size.

        Example:
            >>> from jaxmtl import VectorValuedRegressor
            >>> [VectorValuedRegressor()._subsample_pays(n) for n in (500, 600, 2000)]
            [False, True, True]
        """
        def cost(m: int) -> float:
            return (self._n_repeats(m) if self.selection == "kfold" else 1) * float(size_bucket(m)) ** 3

        widths = len(DEFAULT_WIDTH_FACTORS) + 2
        return widths * cost(WIDTH_SUBSAMPLE) + 3 * cost(n) < widths * cost(n)

    def _n_repeats(self, n: int) -> int:
        """Partitions of a k-fold selection on n rows: ``n_repeats`` (1 for estimators without the
        parameter); None: ⌈REPEAT_PREDICTIONS / N⌉ for the size bucket N of n (``_buckets``: every
        n of a bucket folds alike), at most ``MAX_REPEATS`` (3 partitions at 400 rows, 1 from 961
        on: small sets, where one partition's arbitrary split moves the
        selection most, are also where repeating it costs least)."""
        if self.n_repeats is None:  # of the size bucket: every n of a bucket has the same folds' shapes
            return int(min(MAX_REPEATS, -(-REPEAT_PREDICTIONS // size_bucket(n))))
        return check_int(self.n_repeats, "n_repeats", minimum=1)

    def _masks(self, n: int, partitions: int | None = None) -> np.ndarray:
        """(m, n) training masks of the selection; k-fold stacks ``partitions`` shuffles (None:
        :meth:`_n_repeats`, checked whatever the selection)."""
        repeats = self._n_repeats(n) if partitions is None else partitions
        if not isinstance(self.selection, str):  # a predefined split: (k, n) or (n,) training masks
            masks = np.asarray(self.selection)
            masks = masks[None, :] if masks.ndim == 1 else masks
            if masks.dtype != bool or masks.ndim != 2 or masks.shape[1] != n:
                raise ParameterError(
                    f"selection given as masks must be boolean of shape (k, {n}) or ({n},) with True "
                    f"on training rows; received {masks.dtype} of shape {masks.shape}."
                )
            if not (masks.any(axis=1).all() and (~masks).any(axis=1).all()):
                raise ParameterError("every selection mask needs training (True) and validation (False) rows.")
            return masks
        if self.selection == "kfold":
            if self.n_folds is None:  # the estimator's default, at most one fold per sample
                k = min(type(self)._default_n_folds, n)
            else:
                k = check_n_folds(self.n_folds, n)
            return kfold_masks(n, k, check_random_state(self.random_state), repeats)
        if self.selection == "holdout":
            frac = check_fraction(self.validation_fraction, "validation_fraction")
            n_val = int(round(frac * n))
            if n_val < 1 or n_val >= n:
                raise ParameterError(
                    f"validation_fraction={frac} leaves no training or validation sample for n_samples={n}."
                )
            perm = np.random.default_rng(check_random_state(self.random_state)).permutation(n)
            mask = np.ones(n, dtype=bool)
            mask[perm[:n_val]] = False
            return mask[None, :]
        return np.ones((1, n), dtype=bool)


class _SpectralEstimator(_GridSelection):
    """Shared fit machinery: grids, selection and refit on the eigen path."""

    _loss = staticmethod(mse_loss)
    _kernel_lists = True

    def __init__(
        self,
        kernel: Kernel | list[Kernel] | None = None,
        output: Any = "common_similarity",
        filter: Any = "nu_method",
        selection: Any = "kfold",
        n_folds: int | None = 5,
        n_steps: int | None = None,
        lambdas: Any = None,
        omegas: Any = None,
        width_factors: Any = None,
        validation_fraction: float = 0.2,
        fit_intercept: bool = True,
        random_state: int | None = 0,
        verbose: bool = False,
    ):
        self.kernel = kernel
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
        self.random_state = random_state
        self.verbose = verbose

    def _output_family(self) -> str:
        """The name of the coupled family ``output`` gives: 'common_similarity' (its ω = 0 member
        for 'independent'), 'custom' for a matrix, or a registered family's name."""
        return self.output if isinstance(self.output, str) and self.output != "independent" else \
            "common_similarity" if isinstance(self.output, str) else "custom"

    def _resolve_output(self, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(a (Ω, d), V (d, d), omegas or None); a registered family's parameters as omegas."""
        out = self.output
        if isinstance(out, str) and out == "common_similarity":
            omegas = np.linspace(0.0, 1.0, 11) if self.omegas is None else self.omegas
            omegas = check_unit_interval(omegas, "omegas")
            if d == 1:
                omegas = omegas[:1]
            a, V = _outputs.common_similarity_eigh(d, omegas)
            return np.asarray(a), np.asarray(V), omegas
        if isinstance(out, str) and out == "independent":
            return np.ones((1, d)), np.eye(d), None
        if isinstance(out, str):
            family = output_family(out)
            if family is None:
                raise ParameterError(
                    "output must be 'common_similarity', 'independent', a (d, d) symmetric PSD matrix or "
                    f"the name of a family given to jaxmtl.register_output_family {family_names()}; received {out!r}."
                )
            return family_eigh(family, d, self.omegas)
        A = check_output_matrix(out, d, name="output")
        a, V = np.linalg.eigh(A.astype(np.float64))
        return np.maximum(a, 0.0)[None, :], V, None

    def _resolve_params(self, filt: SpectralFilter, scale: float) -> np.ndarray:
        if filt.iterative:
            steps = DEFAULT_STEPS.get(filt.name, 150) if self.n_steps is None else self.n_steps
            steps = check_int(steps, "n_steps", minimum=1, maximum=MAX_STEPS)
            return np.arange(1, steps + 1)
        lambdas = np.geomspace(LAMBDA_FLOOR, 1.0, LAMBDA_COUNT) * scale if self.lambdas is None else self.lambdas
        lambdas = np.sort(check_positive_array(lambdas, "lambdas"))[::-1]
        return lambdas

    # ----------------------------------------------------------------- fit / predict
    def _fit_coded(self, X: np.ndarray, Y: np.ndarray):
        if check_search(self) == "gradient":  # the grid's choice is where the gradient starts
            if isinstance(self.output, str) and output_family(self.output) is not None:
                raise ParameterError(f"search='gradient' learns ω of the common-similarity family; output "
                                     f"{self.output!r} is a registered family: pass search='grid'.")
            return fit_gradient(self, X, Y)
        if isinstance(self.selection, str) and self.selection not in SELECTIONS:
            raise ParameterError(f"selection must be one of {SELECTIONS}; received {self.selection!r}.")
        n, d = Y.shape
        if n < 2:
            raise ShapeError(f"at least 2 samples are needed to fit; received n_samples={n}.")
        filt = resolve_filter(self.filter)
        kernels, widths = self._resolve_kernels(X)
        a, V, omegas = self._resolve_output(d)
        dtype = jax.dtypes.canonicalize_dtype(Y.dtype)
        # padded up the bucket ladder (docs/design.md, "Size buckets")
        mode = self.selection if isinstance(self.selection, str) else "masks"
        closed_form = mode in ("loo", "gcv")
        N = size_bucket(n)
        Xj = pad_rows(np.asarray(X, dtype), N)
        scale = 1.0
        if not filt.iterative and self.lambdas is None:  # λ relative to the mean of the kernel's diagonal
            scale = max(float(mean_diag(k, Xj, np.int32(n))) for k in kernels)
        params = self._resolve_params(filt, scale if scale > 0 else 1.0)
        path_length = None  # a default iterative path: compiled for its continued length
        if filt.iterative and self.n_steps is None:
            params = _step_grid(int(params[-1]))
            path_length = int(_continued_steps(params)[-1])
        masks = self._masks(n)
        self.y_mean_ = Y.mean(axis=0) if check_bool(self.fit_intercept, "fit_intercept") \
            else np.zeros(d, Y.dtype)
        # the compiled calls' arguments stay NumPy arrays in JAX's dtype: slicing and converting
        # them is then no compiled call of its own
        Yc = pad_rows((Y - self.y_mean_).astype(dtype), N)
        aj, Vj = np.asarray(a, dtype), np.asarray(V, dtype)
        param_dtype = np.int32 if filt.iterative else dtype

        def folds(fold_masks, size):  # padded gather indices of the folds (None: closed forms need none)
            if closed_form:
                return None
            per_partition = len(fold_masks) // self._n_repeats(fold_masks.shape[1]) if mode == "kfold" else 1
            return pad_folds(fold_indices(fold_masks), fold_targets(mode, fold_masks, per_partition, size))

        # per kernel (by identity) its latest per-fold losses on all rows: (kernel, ω index scored
        # alone or None, (k, Ω, P[, 2])); and C = 0's per-fold losses on all rows
        fold_record: dict[int, tuple] = {}
        null_folds: list[np.ndarray] = []

        def score(kerns, steps_or_lambdas, rows=None, fold_masks=masks, omega=None):
            full, rep, index = _path_params(filt, steps_or_lambdas, path_length)
            Xr, Yr = (Xj, Yc) if rows is None else \
                (pad_rows(Xj[rows], size_bucket(len(rows))), pad_rows(Yc[rows], size_bucket(len(rows))))
            args = (Xr, Yr, aj, Vj, filt, np.asarray(full, param_dtype), mode, folds(fold_masks, len(Xr)),
                    type(self)._loss, np.asarray(self.y_mean_, dtype), rep)
            route = grid_route(self.route, filt, mode, len(Xr), args[2], len(full), args[7], dtype)
            if rows is None:
                self.route_ = route  # the route of the grid on all rows (the refit's too)
            # kernels in batches of KERNEL_BATCH (the last padded by repeating, the padding skipped at
            # run time): one compilation serves every call of a width search, whatever the number
            # of widths it adds; a default iterative path is compiled for its continued length and
            # stops after its last listed step, so that its continuation (one kernel, a longer
            # path; every ω scored, output matrix ``omega`` kept) is the same program
            grid_fn = partial(_score_grid, n=np.int32(n if rows is None else len(rows))) if closed_form else _score_grid
            out = _score_kernels(kerns, lambda stacked, active: on_route(partial(grid_fn, active=active), stacked, args,
                                                                         route), KERNEL_BATCH)
            per_fold = out[:, :, :, :-1] if index is None else out[:, :, :, index]  # (W, k, Ω, P[, 2])
            per_fold = per_fold if omega is None else per_fold[:, :, omega:omega + 1]
            if rows is None:
                null_folds[:] = [out[0, :, 0, -1]]
                fold_record.update({id(k): (k, omega, f) for k, f in zip(kerns, per_fold)})
            return fold_means(per_fold, self._n_repeats(fold_masks.shape[1]) if mode == "kfold" else 1)

        report = StageReporter(type(self).__name__, check_bool(self.verbose, "verbose"))
        grid = f"{len(a)} ω × {len(params)} {'steps' if filt.iterative else 'λ'} × {len(masks)} folds"
        search_grid = widths
        if widths is not None and self.width_factors is None:
            subsample = self._width_search_rows(n)
            if subsample is not None:  # widths on a subsample first, then the 3 around the best on all rows
                rows, sub_masks = subsample

                def score_sub(kerns):
                    return score(kerns, params, rows, sub_masks)

                with report.stage(f"width search on {WIDTH_SUBSAMPLE} of {n} rows: {len(widths)}+ widths × {grid}"):
                    sub_kernels, search_grid, sub_scores = _refine_widths(kernels, widths, score_sub(kernels),
                                                                          score_sub)
                best = search_grid[_best_index(sub_scores)[0]]
                widths = best * np.array([0.5, 1.0, 2.0])
                kernels = [Gaussian(float(w)) for w in widths]
                with report.stage(f"all {n} rows: 3 widths × {grid}"):
                    scores = score(kernels, params)
            else:
                with report.stage(f"{len(widths)}+ widths × {grid}"):
                    kernels, widths, scores = _refine_widths(kernels, widths, score(kernels, params),
                                                             lambda k: score(k, params))
                search_grid = widths
        else:
            with report.stage(f"{len(kernels)} kernel(s) × {grid}"):
                scores = score(kernels, params)  # (W, Ω, P), or (W, Ω, P, 2) for the classifiers' code losses
        if filt.iterative and self.n_steps is None:
            with report.stage("continuing the path while its best step is the last"):
                kernels, params, scores = _continue_path(kernels, params, scores, score)
        iw, io, ip = _best_index(scores)
        # t = 0 / λ = ∞ (C = 0: predict the offset, the training mean) is a point of every path;
        # scored on the same folds, it is kept where no model beats it ([BRBV11] §4.3's filters at g = 0)
        null = False
        if scores.ndim == 3:
            _, omega, per_fold = fold_record[id(kernels[iw])]  # the selected kernel's latest path on all rows
            self.null_score_, null = null_wins(mode, masks, null_folds[0], per_fold[:, 0 if omega is not None else io, ip],
                                               float(scores[iw, io, ip]), self._n_repeats(n))
        _warn_on_edges(None if widths is None else widths[iw], search_grid, params, ip, filt,  # also when C = 0
                       self.width_factors is None and self.n_steps is None)  # is kept: a wider grid may beat it
        if scores.ndim == 4:
            self.cv_errors_ = scores[..., 1]
            self.cv_scores_se_ = scores[..., 2]
            scores = scores[..., 0]
        self.kernel_ = kernels[iw]
        self.filter_ = filt
        # NumPy results put on the device: jnp.asarray would compile a program per shape
        self.output_matrix_ = jax.device_put(((V * a[io]) @ V.T).astype(dtype))
        self.X_fit_ = jax.device_put(Xj[:n])
        coef = np.zeros((n, d), dtype) if null else refit(self.route_, self.kernel_, Xj, Yc, aj[io], Vj, filt,
                                                          np.asarray(params, param_dtype)[ip], np.int32(n))
        self.coef_ = jax.device_put(coef[:n])  # the padded rows' coefficients are zero
        self.n_outputs_ = d
        self.cv_scores_ = scores
        self.path_params_ = params
        self.kernel_widths_ = widths
        self.omegas_ = omegas
        self.best_params_ = {
            "kernel": self.kernel_,
            "kernel_width": None if widths is None else float(widths[iw]),
            "omega": None if omegas is None else float(omegas[io]),
            "param": (0 if filt.iterative else float("inf")) if null else
            (int(params[ip]) if filt.iterative else float(params[ip])),
        }
        self.best_score_ = self.null_score_ if null else float(scores[iw, io, ip])
        return self

    def _decision(self, X) -> np.ndarray:
        X = self._validate_predict_inputs(X)
        dtype = self.X_fit_.dtype
        # the fitted rows padded to their size bucket (zero coefficients): one program per bucket
        size = size_bucket(self.X_fit_.shape[0])
        X_fit, coef = (jax.device_put(pad_rows(np.asarray(a), size)) for a in (self.X_fit_, self.coef_))
        F = in_row_blocks(lambda B: _predict(self.kernel_, jax.device_put(np.asarray(B, dtype)), X_fit, coef,
                                             self.output_matrix_), X)
        return F + self.y_mean_
