"""Size buckets for the solver-based estimators: the convex-loss kernel machines and RLS2.

Padded fits are compared with the same fits where ``size_bucket`` is the identity (no padding),
and a fit at another n of the bucket compiles no program.

Kernel machines: SMO and the fixed-point iteration run the same iterates on the real rows (the
padded rows' weights are 0, so their coefficients stay 0; the Gram's padded block is zero), so
they agree to the round-off of sums over more zeros — float64 to 1e-9, float32 within
``FLOAT32_PROMISE``; coordinate descent visits the padded coordinates in its random sweeps, so its
visiting order of the real ones differs: it reaches the same minimiser within the solver's
tolerance.

RLS2: every Cholesky c-step, d-step and loss already weighs rows (its folds are weight vectors):
a padded row has weight 0 in every path, fold and loss, its Gram rows and columns are multiplied
by that 0 and its coefficient solves λc = 0. The problems are the same, but the solvers stop on
tolerances — the alternations at the relative residual δ = 10⁻², each d-step's simplex QP at
10⁻⁸ — and the round-off of sums over more zeros may change the step at which they stop: the same
selected λ and kernel, validation losses within 10⁻⁵ and decision values within 10⁻³ of their
scale in float64 (3.7·10⁻⁵ and 1.4·10⁻⁴ measured); in float32 the same selection gives test
errors within the precision's error factor.
"""

import jax
import numpy as np
import pytest
from conftest import FLOAT32_PROMISE, X64

from jaxmtl import KernelMachine, KernelMachineClassifier, RLS2Classifier, RLS2Regressor
from jaxmtl.models import _buckets, kernel_machine, rls2

TOL = {"rtol": 1e-9, "atol": 1e-9} if X64 else {"rtol": FLOAT32_PROMISE["rtol"], "atol": FLOAT32_PROMISE["atol"]}


def _data(n, seed=0):
    """(X (n, 2), y (n,) real, labels (n,) of three classes)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.sin(2 * X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=n)
    labels = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    return X, y, labels


def _padded_and_plain(monkeypatch, make, target):
    """(fit on 37 rows padded to their bucket of 40, the same fit unpadded): ``target`` 'y' or 'labels'."""
    X, y, labels = _data(37)
    assert _buckets.size_bucket(37) == 40
    t = y if target == "y" else labels
    padded = make().fit(X, t)
    for module in (kernel_machine, rls2):  # every bucket its own size
        monkeypatch.setattr(module, "size_bucket", lambda n, bits=None: int(n))
    return padded, make().fit(X, t)


def _compiles_nothing_at_another_n_of_its_bucket(programs, make, target):
    X, y, labels = _data(40, seed=3)
    t = y if target == "y" else labels
    jax.clear_caches()
    make().fit(X[:37], t[:37])  # bucket 40
    first = programs.count
    make().fit(X[1:39], t[1:39])  # 38 rows, other data
    make().fit(X, t)
    assert programs.count == first


GRID = {"Cs": (0.1, 1.0, 10.0), "n_folds": 3}  # C selected on a short grid: every program of the default's


@pytest.mark.parametrize("make, target", [
    (lambda: KernelMachine(loss="epsilon_insensitive", **GRID), "y"),  # SMO
    (lambda: KernelMachine(loss="huber", **GRID), "y"),  # the fixed-point iteration (with an intercept)
    (lambda: KernelMachineClassifier(**GRID), "labels"),  # SMO, one-vs-all: three outputs
    (lambda: KernelMachineClassifier(loss="logistic", **GRID), "labels"),  # the fixed-point iteration
])
def test_kernel_machine_fit_padded_equals_unpadded(monkeypatch, make, target):
    padded, plain = _padded_and_plain(monkeypatch, make, target)
    assert padded.coef_.shape == plain.coef_.shape and padded.coef_.shape[0] == 37
    assert padded.C_ == plain.C_
    np.testing.assert_allclose(padded.cv_scores_, plain.cv_scores_, atol=1e-12 if X64 else 0.03)
    X_test = _data(200, seed=5)[0]
    decide = (lambda m: m.predict(X_test)) if target == "y" else (lambda m: m.decision_function(X_test))
    np.testing.assert_allclose(np.asarray(padded.coef_), np.asarray(plain.coef_), **TOL)
    np.testing.assert_allclose(decide(padded), decide(plain), **TOL)


def test_coordinate_descent_padded_reaches_the_same_minimiser(monkeypatch):
    make = lambda: KernelMachine(loss="huber", fit_intercept=False, C=1.0, tol=1e-8 if X64 else 1e-5)  # noqa: E731
    padded, plain = _padded_and_plain(monkeypatch, make, "y")
    assert padded.converged_ and plain.converged_
    X_test = _data(200, seed=5)[0]
    F, G = padded.predict(X_test), plain.predict(X_test)
    assert np.max(np.abs(F - G)) <= (1e-5 if X64 else 2e-2) * np.max(np.abs(G))


@pytest.mark.parametrize("make", [KernelMachine, KernelMachineClassifier])
def test_a_default_kernel_machine_fit_compiles_nothing_at_another_n_of_its_bucket(programs, make):
    _compiles_nothing_at_another_n_of_its_bucket(programs, make, "y" if make is KernelMachine else "labels")


@pytest.mark.parametrize("make, target", [
    (lambda: RLS2Regressor(n_lambdas=5, cv=3), "y"),  # with the single-kernel check
    (lambda: RLS2Classifier(n_lambdas=4, cv=3, single_kernels=False), "labels"),  # one-vs-all, stratified folds
])
def test_rls2_fit_padded_equals_unpadded(monkeypatch, make, target):
    padded, plain = _padded_and_plain(monkeypatch, make, target)
    assert np.asarray(padded.dual_coef_).shape == np.asarray(plain.dual_coef_).shape
    X_test, y_test, labels_test = _data(100, seed=5)
    if not X64:
        if padded.lambda_ == plain.lambda_:
            truth = y_test if target == "y" else labels_test
            errors = [np.mean((m.predict(X_test) - truth) ** 2) if target == "y" else np.mean(m.predict(X_test) != truth)
                      for m in (padded, plain)]
            factor, atol = FLOAT32_PROMISE["error_factor"], 0.02
            assert errors[0] <= factor * errors[1] + atol and errors[1] <= factor * errors[0] + atol
        return
    assert padded.lambda_ == plain.lambda_ and padded.selected_kernel_ == plain.selected_kernel_
    np.testing.assert_allclose(padded.path_["cv_score"], plain.path_["cv_score"], rtol=1e-5)
    if plain.single_kernel_cv_ is not None:
        np.testing.assert_allclose(padded.single_kernel_cv_, plain.single_kernel_cv_, rtol=1e-5)
    decide = (lambda m: m.predict(X_test)) if target == "y" else (lambda m: m.decision_function(X_test))
    F, G = decide(padded), decide(plain)
    assert np.max(np.abs(F - G)) <= 1e-3 * np.max(np.abs(G))


def test_an_rls2_fit_compiles_nothing_at_another_n_of_its_bucket(programs):
    # the default's programs, on a shorter grid
    _compiles_nothing_at_another_n_of_its_bucket(programs, lambda: RLS2Regressor(n_lambdas=5, cv=3), "y")


@pytest.mark.parametrize("n_classes", [None, 2, 3, 7])
def test_rls2_row_sets_hold_every_fold_of_every_n_of_the_bucket(n_classes):
    # the folds' row sets are padded to one length per bucket; a fold of any n of the bucket, stratified
    # by up to 7 classes of any balance, must fit in it, else that n compiles the fold paths again
    rng = np.random.default_rng(0)
    model = RLS2Classifier()
    for N in (16, 208, 1024):
        for k in (2, 3, 5, 10):
            lower = max(N - N // 8, 2 * k)  # the bucket's sizes (padding below 12.5 %)
            for n in range(lower, N + 1):
                labels = None if n_classes is None else rng.integers(0, n_classes, n) ** 2  # unbalanced
                model.random_state = int(rng.integers(1000))
                most = int(model._fold_masks(n, k, labels).sum(1).max())
                assert most <= model._train_length(N, k, labels), (N, k, n)
