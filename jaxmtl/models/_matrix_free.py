"""Selection and refit on matrix-free paths, shared by the multi-task and vector-field models."""

from __future__ import annotations

from typing import Callable

import jax.numpy as jnp
import numpy as np

from .._checks import check_int
from ..errors import DivergenceError, ParameterError
from ..filters.spectral import IterativeFilter, get_filter
from ..paths.scan import grid_path_losses, path_scan, raise_divergence
from ._spectral import DEFAULT_STEPS, _GridSelection, _stack


class _MatrixFreeEstimator(_GridSelection):
    """Fits by an iterative filter over a Gram operator: grid of kernels × operator parameters
    × folds × steps in one compiled call, then a refit on all data at the chosen triple."""

    # The matrix-free estimators keep the narrower grid median × (1/4 … 4): their paths are long and
    # one width costs a full path, and their width search is not refined (see docs/defaults.md).
    _default_width_factors = (0.25, 0.5, 1.0, 2.0, 4.0)

    def _select_and_fit(self, X: np.ndarray, Y: np.ndarray, build: Callable, params: np.ndarray,
                        data) -> None:
        if isinstance(self.selection, str) and self.selection not in ("kfold", "holdout"):
            raise ParameterError(
                f"selection must be 'kfold' or 'holdout' for matrix-free paths; received {self.selection!r}."
            )
        filt = get_filter(self.filter)
        if not isinstance(filt, IterativeFilter):
            raise ParameterError(
                f"filter must be iterative ('nu_method' or 'landweber'); received {type(filt).__name__}."
            )
        steps = DEFAULT_STEPS.get(filt.name, 150) if self.n_steps is None else self.n_steps
        steps = check_int(steps, "n_steps", minimum=1)
        kernels, widths = self._resolve_kernels(X)
        masks = self._masks(X.shape[0])
        Yj = jnp.asarray(Y)
        pj = jnp.asarray(params, Yj.dtype)
        losses, diverged = grid_path_losses(build, _stack(kernels), pj, data, Yj, jnp.asarray(masks),
                                            filt, steps)
        scores = np.asarray(losses).mean(axis=1)  # (W, P, T)
        scores = np.where(np.isnan(scores), np.inf, scores)
        if not np.isfinite(scores).any():
            raise DivergenceError("every path of the grid diverged or produced non-finite losses.")
        iw, ip, it = np.unravel_index(int(np.argmin(scores)), scores.shape)
        self.kernel_ = kernels[iw]
        self.filter_ = filt
        self._op_param = float(params[ip])
        op = build(self.kernel_, pj[ip], data)
        res = path_scan(op, Yj, filt, int(it) + 1)
        if bool(res.diverged):
            raise_divergence(res.tau)
        self.coef_ = res.coef
        self.cv_scores_ = scores
        self.diverged_ = np.asarray(diverged)
        self.path_params_ = np.arange(1, steps + 1)
        self.kernel_widths_ = widths
        self.best_score_ = float(scores[iw, ip, it])
        self.best_params_ = {
            "kernel": self.kernel_,
            "kernel_width": None if widths is None else float(widths[iw]),
            "param": int(it) + 1,
        }
