r"""Selection and refit for operator families, shared by the multi-task and vector-field models.

Two routes over the same grid of kernels × operator parameters (ω, γ) × filter parameters:

* ``'exact'`` — the operator is materialised (N × N, N = n·d) and eigendecomposed once per
  kernel and parameter (:mod:`jaxmtl.paths.dense`): every filter (Tikhonov, TSVD, iterated
  Tikhonov, Landweber, ν-method) and every selection ('kfold', 'holdout', closed-form 'loo' and
  'gcv', given masks);
* ``'matrix_free'`` — iterative filters only, as one ``lax.scan`` of operator products per path
  (:mod:`jaxmtl.paths.scan`), selection by k-fold / hold-out masks.

An estimator that passes :class:`Buckets` (the multi-task one) runs every call — exact route, and
matrix-free where it gives the padded data of its operator — on its rows padded to their size
bucket (:mod:`jaxmtl.models._buckets`): one set of programs per bucket.

``route='auto'`` takes the exact route up to ``EXACT_MAX_UNKNOWNS`` unknowns: at N = 1500 one
eigendecomposition costs about as much as a few hundred operator products, the length of one
default path, and it serves every filter parameter, fold and step at once.

The search is the eigen-path estimators' (:mod:`jaxmtl.models._spectral`): widths median × 4ᵏ,
k = −2 … 3, refined or extended past an edge (on the exact route refined further, × 2^±1/2 and
× 2^±1/4 around the best; on the matrix-free route — and on the exact route too where the
estimator asks, as the multi-task one does — searched so on a random subsample of
``WIDTH_SUBSAMPLE`` = 400 rows by the exact route, then only the best width runs on all rows);
iterative paths evaluated on a geometric step grid (on the matrix-free route half as long by
default, ``MATRIX_FREE_STEPS``) and continued when their best step is the last; a ``GridEdgeWarning`` when a selected value still
lies on an edge.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_bool
from .._jit import jit
from .._progress import StageReporter, reporting
from ..errors import DivergenceError, ParameterError
from ..filters.spectral import SpectralFilter
from ..kernels.scalar import Gaussian
from ..paths.dense import dense_coefficients, dense_grid_losses
from ..paths.eigen import mse_loss
from ..paths.scan import grid_path_losses, path_scan, raise_divergence, step_size
from ..selection.criteria import fold_sizes
from ._base import resolve_filter
from ._buckets import FINE_BUCKET_BITS, pad_rows, padded_fold_indices, size_bucket
from ._grid_search import _score_kernels
from ._spectral import (
    KERNEL_BATCH,
    SELECTIONS,
    WIDTH_SUBSAMPLE,
    _best_index,
    _continue_path,
    _continued_steps,
    _GridSelection,
    _path_params,
    _refine_widths,
    _SpectralEstimator,
    _step_grid,
    _warn_on_edges,
)

ROUTES = ("auto", "exact", "matrix_free")
# On the exact route the width search goes on past the eigen-path estimators' × 2^±1 refinement:
# × 2^±1/2, then × 2^±1/4 around the best (a width costs little there, and noiseless fields are
# sensitive to it: at 40 points of a smooth field the angular error doubles from 0.8 to 1.05).
POLISH_RATIOS = (2.0**0.5, 2.0**0.25)
# route='auto' materialises operators with at most this many unknowns n·d (see the module doc).
EXACT_MAX_UNKNOWNS = 1500
# Default path lengths on the matrix-free route, half the eigen path's: every step there is an
# operator product for every ω / γ, and a path whose best step is its last is continued (to
# 2**STEP_DOUBLINGS times its length) for the selected kernel and parameter anyway.
MATRIX_FREE_STEPS = {"nu_method": 150, "landweber": 1500}


def _polish_widths(kernels, widths, scores, score):
    """Refine the width search around the best at the ratios ``POLISH_RATIOS`` in turn.

    Same contract as :func:`~jaxmtl.models._spectral._refine_widths`: ``score(kernels)`` gives
    the losses of a list of kernels; returns kernels, widths and scores sorted by width.
    """
    for ratio in POLISH_RATIOS:
        best = widths[_best_index(scores)[0]]
        new = np.array([w for w in best * np.array([1 / ratio, ratio]) if not np.any(np.isclose(w, widths))])
        if new.size:
            extra = [Gaussian(float(w)) for w in new]
            kernels, widths = kernels + extra, np.concatenate([widths, new])
            scores = np.concatenate([scores, score(extra)])
    order = np.argsort(widths)
    return [kernels[i] for i in order], widths[order], scores[order]


def _search_widths(kernels, widths, score, path, polish: bool):
    """Coarse-to-fine width search (:func:`~jaxmtl.models._spectral._refine_widths`, then
    :func:`_polish_widths` when ``polish``) with ``score(kernels, path)``."""
    kernels, widths, scores = _refine_widths(kernels, widths, score(kernels, path), lambda k: score(k, path))
    if polish:
        kernels, widths, scores = _polish_widths(kernels, widths, scores, lambda k: score(k, path))
    return kernels, widths, scores


class Buckets(NamedTuple):
    """How an estimator runs on bucket-padded rows (docs/design.md, "Size buckets").

    Exact route: ``build(kernel, param, data)`` the operator of ``data(rows, size)`` — the data of
    ``rows`` ((r,) indices; None: all rows) followed by zero padding up to ``size`` rows, whose rows
    and columns of the materialised operator the exact path masks out. Matrix-free route (when
    given): ``matrix_free(rows, size)`` the same rows' data for the estimator's own operator
    ``build``; the padding rows are masked out of every product, fold and loss
    (:func:`~jaxmtl.paths.scan.grid_path_losses`'s ``valid``)."""

    build: Callable
    data: Callable
    matrix_free: Callable | None = None


def _scorer(route: str, build: Callable, data, Yj, masks: np.ndarray, filt, pj, mode: str,
            n: int | None = None, path_length: int | None = None) -> Callable:
    """``score(kernels, path_params, omega=None)`` → (W, P, L) validation losses of kernels ×
    operator parameters ``pj`` (or only ``pj[omega]``) × filter parameters, on one route.

    ``n``: the real rows of ``data`` and ``Yj`` (the first n, the others zero padding; ``masks``
    (k, n) over the real rows), scored as :func:`dense_grid_losses` with ``n`` (exact route) or
    :func:`grid_path_losses` with the real rows ``valid`` (matrix-free). ``path_length`` (exact
    route, iterative filters): the paths are compiled for that many steps and stop after the last
    listed one, and ``omega`` skips the other parameters at run time: a default path's
    continuation is the grid's program (:func:`~._spectral._path_params`)."""
    mj = np.asarray(masks)  # NumPy arguments: converting them is no compiled call of its own
    dtype = Yj.dtype
    valid = None
    if n is None:
        folds, sizes, real = mj, fold_sizes(masks), None
    elif route == "exact":  # fold indices padded for every n of the bucket (none for the closed forms)
        folds = None if mode in ("loo", "gcv") else padded_fold_indices(mj, len(Yj))
        sizes, real = None, np.int32(n)
    else:  # training masks False on the padding, which is neither trained on nor scored
        mj = np.pad(mj, ((0, 0), (0, len(Yj) - mj.shape[1])))
        valid = np.arange(len(Yj)) < n

    def score_batch(stacked, active, ps, full, report, param_active):
        if route == "exact":
            return np.asarray(dense_grid_losses(
                build, stacked, ps, data, Yj, filt, np.asarray(full, np.int32 if filt.iterative else dtype),
                mode, folds, sizes, mse_loss, report, real, active, param_active))
        losses, _ = grid_path_losses(build, stacked, ps, data, Yj, mj, filt, int(full[-1]), mse_loss, report,
                                     reporting(), valid)
        return np.asarray(losses).mean(axis=1)  # (W, P, T)

    def score(kerns, path_params, omega=None):
        full, report, index = _path_params(filt, path_params, path_length)
        one = omega is not None and path_length is None  # score pj[omega] alone, a program of its own
        ps = pj[omega:omega + 1] if one else pj
        # with path_length every parameter is in the program and those not scored are skipped at run
        # time (each builds and decomposes its own operator): the continuation runs the grid's program
        param_active = None if path_length is None else np.arange(len(pj)) == omega if omega is not None \
            else np.ones(len(pj), bool)
        # exact route: kernels in batches of KERNEL_BATCH, the last padded, its padding skipped at
        # run time: one program for every call of a width search; matrix-free: one kernel per call
        out = _score_kernels(kerns, lambda stacked, active: score_batch(stacked, active, ps, full, report,
                                                                        param_active),
                             KERNEL_BATCH if route == "exact" else 1)
        out = np.where(np.isnan(out), np.inf, out)
        out = out if omega is None or one else out[:, omega:omega + 1]
        return out if index is None else out[:, :, index]

    return score


@partial(jit, static_argnames=("build", "filt"))
def _dense_refit(build, kernel, param, data, Y, filt, path_param, n=None):
    """Coefficients of the materialised operator ``build(kernel, param, data)`` at ``path_param``
    (``n``: the real rows, the others padding with zero coefficients)."""
    return dense_coefficients(build(kernel, param, data), Y, filt, path_param, n)


@partial(jit, static_argnames=("build", "filt", "n_steps", "progress"))
def _path_refit(build, kernel, param, data, Y, filt, n_steps, stop, progress=False, n=None):
    """The path of the operator ``build(kernel, param, data)`` (built in the same program: eager,
    its kernel evaluation compiled a program per operation and shape) to step ``stop`` (traced) in a
    program for ``n_steps``; ``n``: the real rows, the others padding, masked out (zero
    coefficients) with the step size of the real rows."""
    op = build(kernel, param, data)
    if n is None:
        return path_scan(op, Y, filt, n_steps, progress=progress, stop=stop)
    valid = jnp.arange(Y.shape[0]) < n
    return path_scan(op, Y, filt, n_steps, tau=step_size(op, Y, valid, valid), mask=valid, progress=progress,
                     stop=stop)


class _MatrixFreeEstimator(_GridSelection):
    """Grid of kernels × operator parameters × folds × filter parameters, scored in compiled
    calls, then a refit on all data at the chosen point.

    Reads ``route``, ``filter``, ``n_steps``, ``lambdas`` and the attributes of
    :class:`~jaxmtl.models._spectral._GridSelection`.
    """

    def _family_filter(self, unknowns: int) -> SpectralFilter:
        """The filter the grid runs for ``unknowns`` n·d: ``filter`` resolved (None: the ν-method)."""
        return resolve_filter(self.filter)

    def _filter_params(self, filt: SpectralFilter) -> np.ndarray:
        """The filter parameters a path scores: steps 1 … ``n_steps`` or the λ grid (relative to the
        Gram's mean diagonal), as the eigen-path estimators' (``_SpectralEstimator._resolve_params``)."""
        return _SpectralEstimator._resolve_params(self, filt, 1.0)  # type: ignore[arg-type]  # borrowed: reads parameters only

    def _lambda_edge_hint(self, filt: SpectralFilter) -> str | None:
        """What the GridEdgeWarning of a λ on the grid's small end advises (None: a larger range)."""
        return None

    def _route(self, unknowns: int) -> str:
        if not isinstance(self.route, str) or self.route not in ROUTES:
            raise ParameterError(f"route must be one of {ROUTES}; received {self.route!r}.")
        if self.route == "auto":
            return "exact" if unknowns <= EXACT_MAX_UNKNOWNS else "matrix_free"
        return self.route

    def _select_and_fit(self, X: np.ndarray, Y: np.ndarray, build: Callable, params: np.ndarray,
                        data, subset: Callable | None = None, compare_masks: np.ndarray | None = None,
                        subsample_exact: bool = False, buckets: Buckets | None = None) -> float | None:
        """Select on the grid and refit; ``subset(rows)`` gives ``data`` of a subsample (rows
        (r,) sorted indices), used on the matrix-free route (and with ``subsample_exact`` on the
        exact route too) to search widths on ``WIDTH_SUBSAMPLE`` rows by the exact route first.

        With ``compare_masks`` (k, n) returns the validation loss on those folds of the selected
        kernel and operator parameter, least over the path (the selection's own loss when they
        are its folds): what a comparison with another family on the same folds needs.

        With ``buckets`` every exact-route call (the grid, the subsample's width search, the
        comparison and the refit) runs on the rows padded to their size bucket
        (:mod:`._buckets`): every n of a bucket the same programs; the matrix-free route too
        where ``buckets.matrix_free`` is given (``data`` and ``subset`` are then not used)."""
        n, d = Y.shape
        route = self._route(n * d)
        filt = self._family_filter(n * d)
        allowed = SELECTIONS if route == "exact" else ("kfold", "holdout")
        if isinstance(self.selection, str) and self.selection not in allowed:
            raise ParameterError(
                f"selection must be one of {allowed} on the {route} route (n·d = {n * d}); "
                f"received {self.selection!r}."
                + ("" if route == "exact" else " route='exact' offers 'loo' and 'gcv' on small problems.")
            )
        if route == "matrix_free" and not filt.iterative:
            raise ParameterError(
                f"filter must be iterative ('nu_method' or 'landweber') on the matrix_free route "
                f"(n·d = {n * d} > {EXACT_MAX_UNKNOWNS}, or route='matrix_free'); received "
                f"{type(filt).__name__}. route='exact' materialises the operator instead."
            )
        path = self._filter_params(filt)
        default_steps = filt.iterative and self.n_steps is None
        if default_steps:
            path = _step_grid(MATRIX_FREE_STEPS.get(filt.name, int(path[-1])) if route == "matrix_free"
                              else int(path[-1]))
        kernels, widths = self._resolve_kernels(X)
        masks = self._masks(n)
        named = isinstance(self.selection, str)
        mode = self.selection if named and self.selection in ("loo", "gcv") else "kfold"  # hold-out: one masked fold
        Yj = np.asarray(Y)  # NumPy arrays: slicing them is no compiled call
        pj = np.asarray(params, Yj.dtype)

        def on_rows(rows, on):  # (build, data, Y, real rows) of route ``on`` on rows (None: all), padded
            pad = None if buckets is None else buckets.data if on == "exact" else buckets.matrix_free
            if buckets is None or pad is None:  # no buckets for this route: the rows as they are
                return build, data if rows is None else cast(Callable, subset)(rows), \
                    Yj if rows is None else Yj[rows], None
            r = n if rows is None else len(rows)
            size = size_bucket(r) if on == "exact" else size_bucket(r, FINE_BUCKET_BITS)
            return (buckets.build if on == "exact" else build), pad(rows, size), \
                pad_rows(Yj if rows is None else Yj[rows], size), r

        build_all, data_all, Y_all, real = on_rows(None, route)
        score = _scorer(route, build_all, data_all, Y_all, masks, filt, pj, mode, real,
                        int(_continued_steps(path)[-1]) if default_steps and route == "exact" else None)
        report = StageReporter(type(self).__name__, check_bool(self.verbose, "verbose"))
        grid = (f"{len(params)} parameter(s) × {f'{int(path[-1])} steps' if filt.iterative else f'{len(path)} λ'} × "
                f"{len(masks)} fold(s), {route}")
        search_grid = widths
        if widths is not None and self.width_factors is None:
            if (route == "matrix_free" or subsample_exact) and (subset is not None or buckets is not None) \
                    and named and n > WIDTH_SUBSAMPLE:
                # widths on a random subsample by the exact route, then the best one on all rows
                rows = self._subsample_rows(n, WIDTH_SUBSAMPLE)
                sub_build, sub_data, sub_Y, sub_real = on_rows(rows, "exact")
                sub = _scorer("exact", sub_build, sub_data, sub_Y, self._masks(WIDTH_SUBSAMPLE), filt, pj, mode,
                              sub_real)
                with report.stage(f"width search on {WIDTH_SUBSAMPLE} of {n} rows, exact route"):
                    _, search_grid, sub_scores = _search_widths(kernels, widths, sub, path, polish=True)
                widths = search_grid[[_best_index(sub_scores)[0]]]
                kernels = [Gaussian(float(widths[0]))]
                with report.stage(f"all {n} rows: 1 width × {grid}"):
                    scores = score(kernels, path)
            else:
                with report.stage(f"{len(widths)}+ widths × {grid}"):
                    kernels, widths, scores = _search_widths(kernels, widths, score, path, polish=route == "exact")
                search_grid = widths
        else:
            with report.stage(f"{len(kernels)} kernel(s) × {grid}"):
                scores = score(kernels, path)
        base_path = path
        if default_steps:
            with report.stage("continuing the path while its best step is the last"):
                kernels, path, scores = _continue_path(kernels, path, scores, score)
        if not np.isfinite(scores).any():
            raise DivergenceError("every path of the grid diverged or produced non-finite losses.")
        iw, ip, it = _best_index(scores)
        _warn_on_edges(None if widths is None else widths[iw], search_grid, path, it, filt,
                       self.width_factors is None and self.n_steps is None, self._lambda_edge_hint(filt))
        self.kernel_ = kernels[iw]
        self.filter_ = filt
        self.route_ = route
        self._op_param = float(params[ip])
        param = int(path[it]) if filt.iterative else float(path[it])
        if route == "exact":  # the operator built and solved in one program; the padded rows' coefficients are 0
            coef = _dense_refit(build_all, self.kernel_, pj[ip], data_all, Y_all, filt,
                                np.asarray(param, np.int32 if filt.iterative else Yj.dtype),
                                None if real is None else np.int32(real))
            self.coef_ = coef if real is None else jax.device_put(np.asarray(coef)[:n])  # NumPy: no slice program
        else:
            # compiled for the path's length (the continued one's where it was continued: a program
            # of the continuation's), stopped at the selected step: one program whatever that step
            with report.stage(f"refit: {param} steps on all {n} rows"):
                res = _path_refit(build, self.kernel_, pj[ip], data_all, Y_all, filt, int(path[-1]), np.int32(param),
                                  reporting(), None if real is None else np.int32(real))
                res.coef.block_until_ready()
            if bool(res.diverged):
                raise_divergence(res.tau)
            self.coef_ = res.coef if real is None else jax.device_put(np.asarray(res.coef)[:n])
        compared = None
        if compare_masks is not None:
            same = compare_masks.shape == masks.shape and np.array_equal(compare_masks, masks)
            if same:
                compared = float(np.min(scores[iw, ip]))
            else:
                # on the exact route a default path is scored at its continued length whether or not it
                # was continued, and its loss read on the steps of the selection's path: one program
                # whatever the data decided (the recurrence is elementwise there, the eigendecompositions
                # the cost); matrix-free, every step is an operator product: the selection's path only
                steps = _continued_steps(base_path) if default_steps and route == "exact" else path
                losses = _scorer(route, build_all, data_all, Y_all, compare_masks, filt, pj[ip:ip + 1], "kfold",
                                 real)([self.kernel_], steps)
                compared = float(np.min(losses[..., np.isin(steps, path)]))
        self.cv_scores_ = scores
        self.path_params_ = np.asarray(path)
        self.kernel_widths_ = widths
        self.best_score_ = float(scores[iw, ip, it])
        self.best_params_ = {
            "kernel": self.kernel_,
            "kernel_width": None if widths is None else float(widths[iw]),
            "param": param,
        }
        return compared
