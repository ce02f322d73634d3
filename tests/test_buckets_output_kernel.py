"""Size buckets for the output-kernel estimators: ``OutputKernelRegressor`` and ``OutputKernelClassifier``.

A fit on n rows runs on its size bucket's rows (zero rows appended, the Gram masked); it is
compared with two independent references:

* the same estimator with ``size_bucket`` the identity (no padding): the same selected kernel and
  λ, the same grid of held-out losses and λ's;
* :func:`jaxmtl.learning.output_kernel.output_kernel_learning` on the *unpadded* Gram of the
  selected kernel at the selected λ (the public learning function, which knows nothing of buckets),
  in float64 whatever the run's precision: the same coefficients, output kernel and predictions.

Algorithm 1 stops when its relative residual falls below ``tol``: the padded and unpadded
iterates are the same up to the round-off of sums over more (zero) terms, but that round-off may
move the stop by an iteration, a change of order ``tol`` (at the default 10⁻⁶ the classifier's
held-out losses here differ by 9·10⁻⁷ relative where a fold's stop moved; the refits agree to
10⁻¹¹). The float64 tests therefore iterate to ``tol`` = 10⁻¹², near the round-off floor, where
a stop moved by a few iterations (41 against 43 for the regressor's refit) changes a value by at
most 4·10⁻¹⁰ (measured), well inside the 10⁻⁸ compared. The float32 tests keep the default
``tol`` and compare within ``FLOAT32_PROMISE`` (on the scale of the values where the reference
is float64). A default fit at another n of its bucket compiles no program.
"""

import jax
import numpy as np
import pytest
from conftest import FLOAT32_PROMISE, X64

from jaxmtl import OutputKernelClassifier, OutputKernelRegressor
from jaxmtl.learning.output_kernel import output_kernel_learning
from jaxmtl.models import _buckets, output_kernel

N = 37  # bucket 40: 3 padded rows
TOL = {"rtol": 1e-8, "atol": 1e-12} if X64 else {"rtol": FLOAT32_PROMISE["rtol"], "atol": FLOAT32_PROMISE["atol"]}
# the λ of the default grid compared to TOL: in float64 all of them; in float32 those ≥ 10⁻⁴·λ₀ —
# below, a fold's solve carries a condition number ‖K‖/λ of 10⁵–10⁶, where two float32
# eigendecompositions (of the padded or unpadded Gram, or of the same one in another order) agree
# to a few digits only (held-out losses 0.6 % apart at 10⁻⁶·λ₀, one error rate by a held-out row)
CONDITIONED = None if X64 else 11
GRID = {"lambdas": None, "width_factors": (0.25, 0.5, 1.0, 2.0), "n_folds": 3, "max_iter": 100,
        "tol": 1e-12 if X64 else 1e-6}


def _data(n, seed=0):
    """(X (n, 2), Y (n, 3) correlated outputs, labels (n,) of three classes)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    s = np.sin(2 * X[:, 0])
    Y = np.c_[s, s + 0.3 * X[:, 1], X[:, 1]] + 0.1 * rng.normal(size=(n, 3))
    labels = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    return X, Y, labels


def _padded_and_plain(monkeypatch, make, X, t):
    """(the fit padded to its bucket, the same fit unpadded)."""
    assert _buckets.size_bucket(len(X)) > len(X)
    padded = make().fit(X, t)
    monkeypatch.setattr(output_kernel, "size_bucket", lambda n, bits=None: int(n))  # every bucket its own size
    return padded, make().fit(X, t)


def _same_selection(padded, plain):
    """The same kernel, λ grid, selected grid point and held-out losses as the unpadded fit. The
    default λ grid is relative to λ₀ = (‖K‖_F ‖Y‖_F)^{2/3}, whose sums run over the padded zeros
    too: the same value up to the summation order's last bits."""
    assert repr(padded.kernel_) == repr(plain.kernel_)
    np.testing.assert_allclose(padded.lambdas_, plain.lambdas_, rtol=1e-13 if X64 else 1e-6)
    selected = lambda m: np.argwhere(m.lambdas_ == m.lambda_).tolist()  # noqa: E731  # [[kernel, λ]]
    assert selected(padded) == selected(plain)
    np.testing.assert_allclose(padded.lambda_, plain.lambda_, rtol=1e-13 if X64 else 1e-6)
    for name in ("cv_scores_", "cv_errors_")[:2 if hasattr(plain, "cv_errors_") else 1]:
        conditioned = (slice(None), slice(CONDITIONED))
        np.testing.assert_allclose(getattr(padded, name)[conditioned], getattr(plain, name)[conditioned], **TOL)
        assert np.all(np.isfinite(getattr(padded, name)))


def _close(actual, desired):
    """Within TOL, the absolute part on the scale of ``desired`` (its largest entry)."""
    desired = np.asarray(desired)
    np.testing.assert_allclose(np.asarray(actual), desired, rtol=TOL["rtol"],
                               atol=(1e-10 if X64 else FLOAT32_PROMISE["rtol"]) * np.abs(desired).max())


def _check(padded, plain, X, Y, decide):
    """The same selection and grid as the unpadded fit; the model of the learning function on the
    unpadded Gram at the selected kernel and λ, in float64 whatever the run's precision (the
    float32 fits are compared with it on the scale of the values: float32 itself is that far)."""
    _same_selection(padded, plain)
    X_test = _data(100, seed=5)[0]
    with jax.enable_x64(True):
        K = np.asarray(padded.kernel_(X, X))
        ref = output_kernel_learning(K, Y - padded.y_mean_, padded.lambda_, max_iter=padded.max_iter,
                                     tol=padded.tol)
        C, L = np.asarray(ref.coef), np.asarray(ref.output_kernel)
        F = np.asarray(padded.kernel_(X_test, X)) @ C @ L + padded.y_mean_
    assert np.asarray(padded.coef_).shape == C.shape == (len(X), Y.shape[1])
    _close(padded.output_kernel_, L)
    if X64:  # float32: C solves (L ⊗ K + λI) vec C = vec Y at a condition number of ~10⁴, its predictions far less
        _close(padded.coef_, C)
    _close(decide(padded, X_test), F)
    _close(decide(plain, X_test), F)


def test_regressor_fit_padded_equals_unpadded(monkeypatch):
    X, Y, _ = _data(N)
    padded, plain = _padded_and_plain(monkeypatch, lambda: OutputKernelRegressor(**GRID), X, Y)
    _check(padded, plain, X, Y, lambda m, Z: m.predict(Z))


def test_classifier_fit_padded_equals_unpadded(monkeypatch):
    X, _, labels = _data(N)
    padded, plain = _padded_and_plain(monkeypatch, lambda: OutputKernelClassifier(**GRID), X, labels)
    assert padded.proba_scale_ == plain.proba_scale_
    codes = np.eye(3)[np.searchsorted(padded.classes_, labels)]  # one-vs-all: a = 1, b = 0
    _check(padded, plain, X, codes, lambda m, Z: m._decision(Z))


def test_duplicate_rows_padded_equal_unpadded(monkeypatch):
    """Duplicate rows: the Gram's own null space and the padded rows share the eigenvalue 0, whose
    eigenvectors eigh may mix; its projector, hence every fold's path and the refit, is unchanged."""
    X, Y, _ = _data(N - 12)
    X, Y = np.r_[X, X[:12]], np.r_[Y, Y[:12] + 0.05]  # 12 inputs twice, with other outputs
    padded, plain = _padded_and_plain(monkeypatch, lambda: OutputKernelRegressor(**GRID), X, Y)
    _check(padded, plain, X, Y, lambda m, Z: m.predict(Z))


@pytest.mark.parametrize("make, target", [
    (lambda: OutputKernelRegressor(n_folds=3, max_iter=50), "y"),  # the default grid: 5 widths × 15 λ
    (lambda: OutputKernelClassifier(n_folds=3, max_iter=50), "labels"),
])
def test_a_default_fit_compiles_nothing_at_another_n_of_its_bucket(programs, make, target):
    X, Y, labels = _data(40, seed=3)
    t = Y if target == "y" else labels
    assert _buckets.size_bucket(37) == _buckets.size_bucket(38) == 40
    jax.clear_caches()
    make().fit(X[:37], t[:37]).predict(X)  # bucket 40
    first = programs.count
    make().fit(X[1:39], t[1:39]).predict(X)  # 38 rows, other data
    make().fit(X, t).predict(X)
    assert programs.count == first
