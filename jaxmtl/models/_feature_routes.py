r"""The approximate estimators' two routes through a grid on m Nyström centres, and the choice between them.

* **eigen** (every filter and selection): every row's m features and their per-fold statistics in one
  pass, an m × m eigendecomposition per fold, then every grid point from them
  (:func:`~jaxmtl.paths.preconditioned.feature_kfold_losses`); the selected model comes from the
  statistics summed over every fold (:func:`eigen_scores`).
* **cg** (Nyström centres, the Tikhonov filter, one held-out split, rows in this process): Falkon's
  preconditioned CG for every (ω, λ, output) column of the grid in lock step, ``CG_STEPS`` = 20 passes
  over the training rows (Falkon's default ``maxiter``), the held-out rows scored by their predictions
  (:mod:`jaxmtl.paths.falkon_grid`, :func:`cg_scores`). Each split is padded to its size bucket
  (:mod:`._buckets`), so every n of a bucket runs one program. The selected model is the selected point's
  solution on the training split. Departure from the eigen route, whose coefficients on every row come
  free from the statistics: a refit on every row would cost as many passes again, each evaluating the
  rows' kernel, which costs as much as the grid's products where the grid has few columns.
* **auto**: the cheaper by :func:`~jaxmtl.paths.routes.choose_feature_route` where CG can serve (it
  wins with many centres and few grid columns, e.g. ``output='independent'`` at m = 10 000), else eigen;
  a forced ``route='cg'`` that CG cannot serve is refused by name before any work
  (:func:`requested_route`).

Both routes return the same (1, Ω, P) scores and (P, d) per-output losses, in the units of the k-fold
losses (Σ_held (F − Y)² / (n_held·d)), and ``model(omega, param, grid)`` -> (feature map, coefficients)
for output j at grid point (omega[j], param[j]) of the parameters ``grid`` (a continued path's, on the
eigen route; omega = Ω: the per-output family, A = I).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from ..errors import ParameterError
from ..filters.spectral import SpectralFilter, Tikhonov
from ..kernels.scalar import Kernel
from ..operators.nystrom import NystromFeatures
from ..paths.falkon_grid import _holdout_solve, _selected_coefficients, preconditioner
from ..paths.preconditioned import _feature_kfold_losses, feature_coefficients
from ..paths.routes import CG_STEPS, FeatureProblem, choose_feature_route
from ._buckets import pad_rows, size_bucket
from ._spectral import _path_params
from ._training_rows import InMemoryRows, TrainingRows

__all__ = ["auto_route", "cg_scores", "eigen_scores", "requested_route"]


def requested_route(route: Any, allowed: tuple[str, ...], approx: str, filt: SpectralFilter, n_scored: int,
                    rows: TrainingRows) -> str:
    """'eigen', 'cg' or 'auto' (decided by :func:`auto_route` once the grid is known). A route='cg' that
    CG cannot serve is refused by name; 'auto' then takes 'eigen' (so does an exact estimator's 'direct')."""
    if not (isinstance(route, str) and route in allowed):
        raise ParameterError(f"route must be one of {allowed} with approximation={approx!r}; received {route!r}.")
    if route not in ("auto", "cg"):
        return "eigen"
    needs = ("approximation='nystrom'" if approx != "nystrom" else
             "the Tikhonov filter" if type(filt) is not Tikhonov else
             "one held-out split (selection='holdout' or one mask)" if n_scored != 1 else
             "the rows in this process (no mesh)" if not isinstance(rows, InMemoryRows) else None)
    if needs is not None and route == "cg":
        raise ParameterError(f"route='cg' (Falkon's preconditioned CG over the grid) needs {needs}; received "
                             f"approximation={approx!r}, filter {type(filt).__name__}, {n_scored} held-out "
                             "split(s). route='eigen' serves every filter and selection.")
    return "eigen" if needs is not None else route


def auto_route(route: str, n: int, p: int, m: int, d: int, points: int, omegas: int, folds: int, held: int,
               dtype: Any) -> str:
    """``route``, or for 'auto' the cheaper for the whole grid (ω × λ × outputs columns) on this device."""
    if route != "auto":
        return route
    problem = FeatureProblem(n=n, p=p, m=m, d=d, points=points, omegas=omegas, folds=folds, held=held)
    return choose_feature_route(problem, np.dtype(dtype).name)


def _finite(x):
    return np.where(np.isfinite(x), x, np.inf)


def cg_scores(kernel: Kernel, rows: TrainingRows, groups: np.ndarray, m: int, sampling: str, block: int, seed,
              a: np.ndarray, V: np.ndarray, params: np.ndarray, per_output: bool):
    """Scores of the grid (output matrices ``a`` (Ω, d) sharing V, λ ``params``; with ``per_output`` also
    A = I) by Falkon's CG, trained on the rows of groups ≠ 0 and scored on group 0, and its ``model``."""
    d = rows.d
    Z = jax.device_put(rows.centres(kernel, m, sampling, seed, block))  # no padding: every centre is a row
    pre = preconditioner(kernel, Z)
    held = groups == 0
    (Xt, Yt), (Xh, Yh) = rows.take(np.flatnonzero(~held)), rows.take(np.flatnonzero(held))
    n_t, n_h = len(Xt), len(Xh)  # each split padded to its size bucket: one program for every count of a bucket
    Xt, Yt, Xh, Yh = (pad_rows(R, size_bucket(len(R))) for R in (Xt, Yt, Xh, Yh))
    a_all = np.concatenate([a, np.ones((1, d), a.dtype)]) if per_output else a
    losses, c = _holdout_solve(kernel, Z, Xt, Yt, a_all, V, params, Xh, Yh, np.int32(n_t), np.int32(n_h), *pre,
                               n_steps=CG_STEPS, block=min(block, Xt.shape[0]))
    both = _finite(np.asarray(losses) / d)  # (Ω(+1), P, d) in the k-fold losses' units
    fmap = NystromFeatures(kernel, Z, pre[1])

    def model(omega, param, _grid):  # each output's solution on the training split, sliced on the device
        return fmap, _selected_coefficients(c, V, np.asarray(omega, np.int32), np.asarray(param, np.int32))

    return (both[:-1] if per_output else both).sum(axis=-1)[None], both[-1] if per_output else None, model


def eigen_scores(stats, fmap, a: np.ndarray, V: np.ndarray, filt: SpectralFilter, grid: np.ndarray,
                 params: np.ndarray, scored: np.ndarray, per_output: bool):
    """Scores of the grid ``grid`` (λ, or the steps reported; ``params``: the filter's parameters in the
    working dtype, every step of an iterative path) from the per-fold statistics ``stats`` of the feature
    map ``fmap``, its ``model``, and ``path_scores(kernels, steps_or_lambdas, omega=None)``."""
    d = V.shape[0]
    dtype = a.dtype

    def path_scores(_kernels, steps_or_lambdas, omega=None):
        """(1, Ω or 1, P) mean fold losses on the selected kernel's statistics (its list ignored)."""
        full_g, rep_g, index_g = _path_params(filt, steps_or_lambdas)
        losses = np.asarray(_feature_kfold_losses(stats, a if omega is None else a[omega:omega + 1], V, filt,
                                                  np.asarray(full_g, params.dtype),
                                                  None if rep_g is None else np.asarray(rep_g)))
        return _finite((losses if index_g is None else losses[..., index_g])[scored].mean(axis=0))[None]

    def model(omega, param, grid):  # from the statistics summed over every fold: no second pass
        grid = np.asarray(grid, params.dtype)  # the path's parameters (a continued path's, if continued)
        if omega[0] == len(a):  # the per-output family: A = I, each output its own λ
            return fmap, feature_coefficients(stats, np.ones(d, dtype), np.eye(d, dtype=dtype), filt, grid[param])
        return fmap, feature_coefficients(stats, a[omega[0]], V, filt, np.full(d, grid[param[0]]))  # 1 program

    if not per_output:
        return path_scores(None, grid), None, model, path_scores
    # one call for both families: A = I appended as an extra output matrix (V diag(1) Vᵀ = I for any V)
    # shares each fold's D × D eigendecomposition; per-output losses (P, d)
    both = np.asarray(_feature_kfold_losses(stats, np.concatenate([a, np.ones((1, d), dtype)]), V, filt, params,
                                            per_output=True))[scored].mean(axis=0)
    return _finite(both[:-1].sum(axis=-1))[None], _finite(both[-1]), model, path_scores
