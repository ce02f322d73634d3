"""Size buckets for vector fields: ``VectorFieldRegressor`` pads its points up the bucket ladder.

Padded fits are compared with the same fits where ``size_bucket`` is the identity (no padding):
float64 to 1e-10, float32 within ``FLOAT32_PROMISE``, on each of the estimator's stages — the
joint search of widths × γ (at most 200 unknowns), the width stage before the path stage (more),
and the matrix-free route — and a fit at another n of the bucket compiles no program.
"""

from functools import partial

import jax
import numpy as np
import pytest
from conftest import FLOAT32_PROMISE, X64

from jaxmtl import VectorFieldRegressor
from jaxmtl.datasets import vector_field_1
from jaxmtl.models import _buckets, _matrix_free, fields

# λ ≥ 10⁻⁶ (as in test_buckets.py): the default grid's 10⁻¹² carries a condition number of 10¹²,
# where two eigendecompositions (padded or not) agree only to ~10⁻⁴ near the best whatever the padding
LAMBDAS = np.geomspace(1e-6, 1.0, 30)
NEAR_BEST = 10.0
FAR_RTOL = 1e-3
TOL = {"rtol": 1e-10, "atol": 1e-10} if X64 else {"rtol": FLOAT32_PROMISE["rtol"], "atol": FLOAT32_PROMISE["atol"]}


def _field(n, seed=0, noise=0.05):
    """(X (n, 2), V (n, 2)): field 1 at γ = 0.3 on random points, plus noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.5, 1.5, size=(n, 2))
    V, _, _ = vector_field_1(X, 0.3)
    return X, V + noise * rng.normal(size=V.shape)


def _unpadded(monkeypatch):
    """Fits without padding: every bucket its own size."""
    for module in (_matrix_free, fields):
        monkeypatch.setattr(module, "size_bucket", lambda n, bits=None: int(n))


def _compare(padded, plain, reference, X, V):
    """The same selection and field: float64 to TOL; float32 the same validation losses as far as
    float32's own error allows, and where the same point is selected test errors within the
    precision's error factor.

    Losses within ``NEAR_BEST`` × the best are compared to TOL in float64, the others to
    ``FAR_RTOL``: at λ = 10⁻⁶ far from the best a fold's solve carries a condition number of up to
    10⁶ (the width search reaches 64 × the median distance). In float32 such a solve keeps few
    digits whatever the padding: the padded losses near the best lie within twice the distance
    of the unpadded ones from the float64 ``reference`` fit's (+ atol)."""
    scores, plain_scores = np.asarray(padded.cv_scores_), np.asarray(plain.cv_scores_)
    finite = np.isfinite(plain_scores)
    np.testing.assert_array_equal(np.isfinite(scores), finite)
    near = finite & (plain_scores <= NEAR_BEST * np.min(plain_scores[finite]))
    assert padded.kind_ == plain.kind_ and np.asarray(padded.coef_).shape == np.asarray(plain.coef_).shape
    if X64:
        np.testing.assert_allclose(scores[near], plain_scores[near], **TOL)
        np.testing.assert_allclose(scores[finite], plain_scores[finite], rtol=FAR_RTOL, atol=TOL["atol"])
        assert repr(padded.best_params_) == repr(plain.best_params_)
        np.testing.assert_allclose(np.asarray(padded.coef_), np.asarray(plain.coef_), **TOL)
        np.testing.assert_allclose(padded.predict(X), plain.predict(X), **TOL)
        return
    if np.shape(reference.cv_scores_) == plain_scores.shape:  # the same grid searched
        error = np.max(np.abs(plain_scores[near] - np.asarray(reference.cv_scores_)[near]))
        assert np.max(np.abs(scores[near] - plain_scores[near])) <= 2 * error + FLOAT32_PROMISE["atol"]
    if repr(padded.best_params_) == repr(plain.best_params_):
        errors = [np.mean((m.predict(X) - V) ** 2) for m in (padded, plain)]
        factor, atol = FLOAT32_PROMISE["error_factor"], FLOAT32_PROMISE["error_atol"]
        assert errors[0] <= factor * errors[1] + atol and errors[1] <= factor * errors[0] + atol


@pytest.mark.parametrize("n, make", [
    (41, partial(VectorFieldRegressor, kind="div_curl", lambdas=LAMBDAS)),  # 82 unknowns: widths × γ jointly; bucket 44
    (113, partial(VectorFieldRegressor, kind="div_curl", lambdas=LAMBDAS)),  # 226: the width stage, then the path stage
    (129, partial(VectorFieldRegressor, kind="independent", filter="nu_method", n_steps=60,
                  route="matrix_free")),  # the matrix-free route's finer bucket: 132
])
def test_field_fit_padded_equals_unpadded(monkeypatch, n, make):
    X, V = _field(n)
    X_test, V_test = _field(300, seed=7, noise=0.0)
    padded = make().fit(X, V)
    assert _buckets.size_bucket(n, _buckets.FINE_BUCKET_BITS if padded.route_ == "matrix_free" else
                                _buckets.BUCKET_BITS) > n  # padded rows
    _unpadded(monkeypatch)
    plain = make().fit(X, V)
    _compare(padded, plain, None if X64 else make(dtype="float64").fit(X, V), X_test, V_test)


def test_a_default_field_fit_compiles_nothing_at_another_n_of_its_bucket(programs):
    X, V = _field(48, seed=2)
    jax.clear_caches()
    VectorFieldRegressor().fit(X[:45], V[:45])  # bucket 48: both kinds
    first = programs.count
    assert _buckets.size_bucket(45) == _buckets.size_bucket(46) == 48
    VectorFieldRegressor().fit(X[2:], V[2:])  # 46 rows, other points
    VectorFieldRegressor().fit(X, V)
    assert programs.count == first
