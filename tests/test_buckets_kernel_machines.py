"""Size buckets for the convex-loss kernel machines: the solvers see the rows padded to their bucket.

Padded fits are compared with the same fits where ``size_bucket`` is the identity (no padding), on
each solver: SMO and the fixed-point iteration run the same iterates on the real rows (the padded
rows' weights are 0, so their coefficients stay 0; the Gram's padded block is zero), so they agree
to the round-off of sums over more zeros — float64 to 1e-9, float32 within ``FLOAT32_PROMISE``;
coordinate descent visits the padded coordinates in its random sweeps, so its visiting order of
the real ones differs: it reaches the same minimiser within the solver's tolerance. A default fit
at another n of the bucket compiles no program.
"""

import jax
import numpy as np
import pytest
from conftest import FLOAT32_PROMISE, X64

from jaxmtl import KernelMachine, KernelMachineClassifier
from jaxmtl.models import _buckets, kernel_machine

TOL = {"rtol": 1e-9, "atol": 1e-9} if X64 else {"rtol": FLOAT32_PROMISE["rtol"], "atol": FLOAT32_PROMISE["atol"]}


def _data(n, seed=0):
    """(X (n, 2), y (n,) real, labels (n,) of three classes)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.sin(2 * X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=n)
    labels = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    return X, y, labels


def _unpadded(monkeypatch):
    """Fits without padding: every bucket its own size."""
    monkeypatch.setattr(kernel_machine, "size_bucket", lambda n, bits=None: int(n))


@pytest.mark.parametrize("make, target", [
    (lambda: KernelMachine(loss="epsilon_insensitive"), "y"),  # SMO
    (lambda: KernelMachine(loss="huber"), "y"),  # the fixed-point iteration (with an intercept)
    (lambda: KernelMachineClassifier(), "labels"),  # SMO, one-vs-all: three outputs
    (lambda: KernelMachineClassifier(loss="logistic"), "labels"),  # the fixed-point iteration, three outputs
])
def test_kernel_machine_fit_padded_equals_unpadded(monkeypatch, make, target):
    X, y, labels = _data(37)  # bucket 40
    assert _buckets.size_bucket(37) == 40
    t = y if target == "y" else labels
    padded = make().fit(X, t)
    _unpadded(monkeypatch)
    plain = make().fit(X, t)
    assert padded.coef_.shape == plain.coef_.shape and padded.coef_.shape[0] == 37
    assert padded.C_ == plain.C_
    np.testing.assert_allclose(padded.cv_scores_, plain.cv_scores_, atol=1e-12 if X64 else 0.03)
    X_test = _data(200, seed=5)[0]
    decide = (lambda m: m.predict(X_test)) if target == "y" else (lambda m: m.decision_function(X_test))
    np.testing.assert_allclose(np.asarray(padded.coef_), np.asarray(plain.coef_), **TOL)
    np.testing.assert_allclose(decide(padded), decide(plain), **TOL)


def test_coordinate_descent_padded_reaches_the_same_minimiser(monkeypatch):
    X, y, _ = _data(37, seed=1)
    make = lambda: KernelMachine(loss="huber", fit_intercept=False, C=1.0, tol=1e-8 if X64 else 1e-5)  # noqa: E731
    padded = make().fit(X, y)
    _unpadded(monkeypatch)
    plain = make().fit(X, y)
    assert padded.converged_ and plain.converged_
    X_test = _data(200, seed=5)[0]
    F, G = padded.predict(X_test), plain.predict(X_test)
    assert np.max(np.abs(F - G)) <= (1e-5 if X64 else 2e-2) * np.max(np.abs(G))


@pytest.mark.parametrize("make", [KernelMachine, KernelMachineClassifier])
def test_a_default_kernel_machine_fit_compiles_nothing_at_another_n_of_its_bucket(programs, make):
    X, y, labels = _data(40, seed=3)
    t = y if make is KernelMachine else labels
    jax.clear_caches()
    make().fit(X[:37], t[:37])  # bucket 40
    first = programs.count
    make().fit(X[1:39], t[1:39])  # 38 rows, other data
    make().fit(X, t)
    assert programs.count == first
