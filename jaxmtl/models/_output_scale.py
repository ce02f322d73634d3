"""Per-output scaling of multi-output regressors (``normalize_y``).

A multi-output loss sums squared errors over outputs, so an output measured in large units
decides the selection alone, and the common-similarity family couples outputs whatever their
units. With ``normalize_y=True`` a regressor fits the outputs divided by their standard
deviations s (d,), then folds s back into the fitted model, so that prediction is unchanged
code: with F = K C A + m on the scaled outputs,

    F · diag(s) = K (C diag(1/s)) (diag(s) A diag(s)) + m ∘ s,

i.e. ``coef_`` ← C diag(1/s), ``output_matrix_`` ← diag(s) A diag(s) (symmetric PSD: the output
kernel in the outputs' own units) and ``y_mean_`` ← m ∘ s. Validation losses (``cv_scores_``,
``best_score_``) stay those of the scaled outputs: every output weighs the same in them.

Example::

    s = output_scales(Y)                    # (d,) standard deviations
    model.fit(X, Y / s); unscale_fitted(model, s)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_bool

__all__ = ["output_scales", "unscale_fitted"]


def output_scales(Y: np.ndarray, normalize_y=True) -> np.ndarray:
    """(d,) standard deviation of each column of Y (n, d) when ``normalize_y`` (checked to be a
    bool), else ones; 1 for a constant column, and ones for a single output (the filters are
    linear in Y: one scale changes no selection)."""
    if not check_bool(normalize_y, "normalize_y") or Y.shape[1] == 1:
        return np.ones(Y.shape[1])
    s = np.std(np.asarray(Y, dtype=np.float64), axis=0)
    return np.where(s > 0, s, 1.0)


def unscale_fitted(model, s: np.ndarray) -> None:
    """Fold the output scales s (d,) into a model fitted on Y / s (see the module doc).

    Reads and rewrites ``coef_`` (n or D, d), ``output_matrix_`` (d, d) and ``y_mean_`` (d,);
    stores ``y_scale_`` = s.
    """
    dtype = model.coef_.dtype
    # on the host (no compiled call), unless the coefficients live across processes (mesh=)
    xp = np if getattr(model.coef_, "is_fully_addressable", True) else jnp
    sj = xp.asarray(s, dtype)
    model.coef_ = jax.device_put((xp.asarray(model.coef_) / sj).astype(dtype))
    model.output_matrix_ = jax.device_put((sj[:, None] * xp.asarray(model.output_matrix_) * sj[None, :]).astype(dtype))
    model.y_mean_ = (np.asarray(model.y_mean_) * s).astype(np.asarray(model.y_mean_).dtype)
    model.y_scale_ = np.asarray(s, np.asarray(model.y_mean_).dtype)
