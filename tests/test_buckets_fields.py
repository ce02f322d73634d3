"""Size buckets for vector fields: ``VectorFieldRegressor``'s exact route on bucket-padded points.

Padded fits (the joint search up to 100 points in 2-D, the width stage and the path stage above)
against the same fits without padding (``size_bucket`` the identity): float64 to 1e-10, float32
the same validation losses within ``FLOAT32_PROMISE``; and the programs a default fit compiles at
another n of its bucket: none.
"""

import jax
import numpy as np
import pytest
from conftest import FLOAT32_PROMISE, X64

from jaxmtl import VectorFieldRegressor
from jaxmtl.datasets import vector_field_1
from jaxmtl.models import _buckets, _matrix_free, _spectral, fields
from test_buckets_multitask import _close_scores

TOL = {"rtol": 1e-10, "atol": 1e-10} if X64 else {"rtol": FLOAT32_PROMISE["rtol"], "atol": FLOAT32_PROMISE["atol"]}
# λ ≥ 10⁻⁶ (the default filter, Tikhonov, on the other estimators' grid): the fields' default grid runs
# down to the precision's resolution (10⁻¹² in float64), where two eigendecompositions of the same Gram
# (padded or not) agree only to ε‖K‖/(nλ) — 10⁻⁴ relative in the losses there, measured — whatever
# the padding; above 10⁻⁶ the 10⁻¹⁰ of TOL resolves what padding could change
LAMBDAS = np.geomspace(1e-6, 1.0, 30)
# the refit's coefficients carry the operator's condition number, up to ‖Γ‖/(nλ) ~ 10⁶ at λ = 10⁻⁶
# (2·10⁻⁸ relative measured at 105 points): held to ε·10¹⁰, far below a padded row's influence
REFIT_RTOL = 1e-6


def _unpadded(monkeypatch):
    """Fits without padding: every bucket its own size."""
    for module in (_spectral, _matrix_free, fields):
        monkeypatch.setattr(module, "size_bucket", lambda n: int(n))


def _field(n, seed=0, duplicates=0, noise=0.05):
    """(X (n, 2), V (n, 2)): field 1 at random points, the last ``duplicates`` repeating the first."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n - duplicates, 2))
    X = np.concatenate([X, X[:duplicates]])
    V, _, _ = vector_field_1(X, 0.3)
    return X, V + noise * rng.normal(size=V.shape)


@pytest.mark.parametrize("n, duplicates", [(37, 0), (37, 4), (105, 0)])
def test_field_fit_padded_equals_unpadded(monkeypatch, n, duplicates):
    X, V = _field(n, duplicates=duplicates)
    assert _buckets.size_bucket(n) > n  # 37 → 40 (the joint search), 105 → 112 (width and path stages)
    padded = VectorFieldRegressor(lambdas=LAMBDAS).fit(X, V)
    _unpadded(monkeypatch)
    plain = VectorFieldRegressor(lambdas=LAMBDAS).fit(X, V)
    # float32: at λ = 10⁻⁶ the losses keep few digits whatever the padding (6 % measured); the padded
    # ones are held to twice the unpadded ones' distance from float64 (test_buckets_multitask)
    reference = None if X64 else VectorFieldRegressor(lambdas=LAMBDAS, dtype="float64").fit(X, V)
    assert padded.kind_ == plain.kind_ and padded.coef_.shape == (n, 2)
    np.testing.assert_allclose(list(padded.kind_scores_.values()), list(plain.kind_scores_.values()), **TOL)
    _close_scores(padded.cv_scores_, plain.cv_scores_, None if reference is None else reference.cv_scores_)
    X_test, V_test = _field(300, seed=7, noise=0.0)
    if X64:
        assert repr(padded.best_params_) == repr(plain.best_params_)
        for a, b in ((padded.coef_, plain.coef_), (padded.predict(X_test), plain.predict(X_test))):
            b = np.asarray(b)
            np.testing.assert_allclose(np.asarray(a), b, rtol=REFIT_RTOL, atol=REFIT_RTOL * np.abs(b).max())
    elif repr(padded.best_params_) == repr(plain.best_params_):
        errors = [np.mean((m.predict(X_test) - V_test) ** 2) for m in (padded, plain)]
        factor, atol = FLOAT32_PROMISE["error_factor"], FLOAT32_PROMISE["error_atol"]
        assert errors[0] <= factor * errors[1] + atol and errors[1] <= factor * errors[0] + atol


def test_a_default_field_fit_compiles_nothing_at_another_n_of_its_bucket(programs):
    X, V = _field(44, seed=3)
    jax.clear_caches()
    VectorFieldRegressor().fit(X[:40], V[:40]).predict(X[:5])  # bucket 40
    first = programs.count
    assert first > 0
    for rows in (slice(0, 37), slice(1, 39), slice(4, 44)):  # 37, 38 and 40 points: the same bucket
        VectorFieldRegressor().fit(X[rows], V[rows]).predict(X[:5])
    assert programs.count == first
