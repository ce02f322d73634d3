"""Estimator selection against brute force: every criterion's scores recomputed by explicit refits.

For each selection mode of :class:`~jaxmtl.VectorValuedRegressor` (k-fold, leave-one-out, GCV and a
predefined hold-out split), the recorded ``cv_scores_`` are recomputed here from scratch in NumPy —
dense joint Gram K ⊗ A_ω with A_ω = ω11ᵀ + (1−ω)I ([BRBV11] eq. 18), one linear solve (Tikhonov) or
one explicit ν-method loop ([BRBV11] §3.3) per fold and parameter, leave-one-out by n refits — and the
selected parameters and the final predictions are checked against the brute-force argmin and a
brute-force refit on all the data. The estimator centres the outputs once on all rows
(``fit_intercept``), so the references do too.

(Classifier selection against brute-force refits on imbalanced classes: tests/test_classifier_selection.py.)
"""

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
import pytest

from _reference import gaussian_gram, nu_method_loop
from jaxmtl import Gaussian, NuMethod, Tikhonov, VectorValuedRegressor
from jaxmtl.selection import kfold_masks

SIGMA = 1.2
OMEGAS = np.array([0.0, 0.4, 0.8])
LAMBDAS = np.array([1e-1, 1e-2, 1e-3, 1e-4])


def data(n=24, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    f = np.sin(X[:, :1]) + 0.5 * X[:, 1:]
    Y = np.c_[f, f + 0.3 * X[:, :1]] + 0.2 * rng.normal(size=(n, 2))
    return X, Y


def A_of(om, d=2):
    return om * np.ones((d, d)) + (1 - om) * np.eye(d)


def tikhonov_coef(K, A, Y, penalty):
    """(K ⊗ A + penalty·I) vec C = vec Y, rows of C in input order."""
    n, d = Y.shape
    return np.linalg.solve(np.kron(K, A) + penalty * np.eye(n * d), Y.reshape(-1)).reshape(n, d)


def nu_iterates(K, A, Y, T, nu=1.0):
    """Explicit ν-method loop ([BRBV11] §3.3) on the joint problem, τ = n / σ_max(K ⊗ A)."""
    n, d = Y.shape
    G = np.kron(K, A)
    tau = n / np.linalg.eigvalsh(G).max()
    return [c.reshape(n, d) for c in nu_method_loop(G, Y.reshape(-1), tau, n, T, nu)]


def fit(selection, filt=None, n=24, **kw):
    X, Y = data(n)
    model = VectorValuedRegressor(kernel=Gaussian(SIGMA), output="common_similarity", omegas=OMEGAS,
                                  filter=filt or Tikhonov(), lambdas=LAMBDAS, selection=selection,
                                  normalize_y=False, **kw)
    return X, Y, model.fit(X, Y)


def check_selection_and_refit(model, X, Y, ref, params, coef_at):
    """Scores equal the brute-force ones; the chosen (ω, parameter) is their argmin; predictions
    equal a brute-force refit on all rows at that pair."""
    np.testing.assert_allclose(model.cv_scores_[0], ref, rtol=1e-7)
    io, ip = np.unravel_index(int(np.argmin(ref)), ref.shape)
    assert model.best_params_["omega"] == OMEGAS[io]
    assert model.best_params_["param"] == pytest.approx(params[ip])
    ym = Y.mean(0)
    C = coef_at(gaussian_gram(X, X, SIGMA), A_of(OMEGAS[io]), Y - ym, params[ip])
    Xt, _ = data(7, seed=5)
    np.testing.assert_allclose(model.predict(Xt), gaussian_gram(Xt, X, SIGMA) @ C @ A_of(OMEGAS[io]) + ym,
                               rtol=1e-6, atol=1e-8)


# n_repeats=None at n = 26: ⌈1000 / 26⌉ partitions, at most 3
@pytest.mark.parametrize("n_repeats, partitions", [(1, 1), (3, 3), (None, 3)])
def test_kfold_tikhonov_scores_equal_refits_on_each_fold(n_repeats, partitions):
    """Repeated k-fold: the scores are the mean over the folds of all the partitions."""
    X, Y, model = fit("kfold", n=26, n_folds=4, n_repeats=n_repeats)  # folds of 7, 7, 6 and 6 rows: padding
    lams = model.path_params_
    K, Yc = gaussian_gram(X, X, SIGMA), Y - Y.mean(0)
    ref = np.zeros((len(OMEGAS), len(lams)))
    for io, om in enumerate(OMEGAS):
        for il, lam in enumerate(lams):
            errs = []
            for m in kfold_masks(len(X), 4, 0, partitions):
                tr, va = np.flatnonzero(m), np.flatnonzero(~m)
                C = tikhonov_coef(K[np.ix_(tr, tr)], A_of(om), Yc[tr], len(tr) * lam)
                errs.append(np.mean((K[np.ix_(va, tr)] @ C @ A_of(om) - Yc[va]) ** 2))
            ref[io, il] = np.mean(errs)
    check_selection_and_refit(model, X, Y, ref, lams,
                              lambda K, A, Yc, lam: tikhonov_coef(K, A, Yc, len(K) * lam))


def test_kfold_nu_method_scores_equal_explicit_loops_on_each_fold():
    T = 25
    X, Y, model = fit("kfold", filt=NuMethod(), n=26, n_folds=3, n_steps=T, n_repeats=1)  # folds of 9, 9, 8 rows
    K, Yc = gaussian_gram(X, X, SIGMA), Y - Y.mean(0)
    ref = np.zeros((len(OMEGAS), T))
    masks = kfold_masks(len(X), 3, 0)
    for io, om in enumerate(OMEGAS):
        for m in masks:
            tr, va = np.flatnonzero(m), np.flatnonzero(~m)
            for t, C in enumerate(nu_iterates(K[np.ix_(tr, tr)], A_of(om), Yc[tr], T)):
                ref[io, t] += np.mean((K[np.ix_(va, tr)] @ C @ A_of(om) - Yc[va]) ** 2) / len(masks)
    check_selection_and_refit(model, X, Y, ref, np.arange(1, T + 1),
                              lambda K, A, Yc, t: nu_iterates(K, A, Yc, int(t))[-1])


def test_loo_scores_equal_n_refits_for_tikhonov():
    """Leave-one-out by n explicit refits (the penalty nλ of the full problem held fixed, as the
    closed form of Rifkin & Lippert 2007 computes it)."""
    X, Y, model = fit("loo")
    lams = model.path_params_
    K, Yc = gaussian_gram(X, X, SIGMA), Y - Y.mean(0)
    n = len(X)
    ref = np.zeros((len(OMEGAS), len(lams)))
    for io, om in enumerate(OMEGAS):
        for il, lam in enumerate(lams):
            err = 0.0
            for i in range(n):
                tr = np.r_[0:i, i + 1:n]
                C = tikhonov_coef(K[np.ix_(tr, tr)], A_of(om), Yc[tr], n * lam)
                err += np.mean((K[i, tr] @ C @ A_of(om) - Yc[i]) ** 2) / n
            ref[io, il] = err
    check_selection_and_refit(model, X, Y, ref, lams, lambda K, A, Yc, lam: tikhonov_coef(K, A, Yc, n * lam))


def test_gcv_scores_equal_the_dense_hat_matrix_formula():
    X, Y, model = fit("gcv")
    lams = model.path_params_
    K, Yc = gaussian_gram(X, X, SIGMA), Y - Y.mean(0)
    nd = Yc.size
    ref = np.zeros((len(OMEGAS), len(lams)))
    for io, om in enumerate(OMEGAS):
        G = np.kron(K, A_of(om))
        for il, lam in enumerate(lams):
            H = G @ np.linalg.inv(G + len(X) * lam * np.eye(nd))
            r = Yc.reshape(-1) - H @ Yc.reshape(-1)
            ref[io, il] = (r @ r / nd) / (1 - np.trace(H) / nd) ** 2
    check_selection_and_refit(model, X, Y, ref, lams, lambda K, A, Yc, lam: tikhonov_coef(K, A, Yc, len(K) * lam))


def test_predefined_holdout_scores_equal_one_refit_on_the_training_rows():
    X, Y = data()
    train = np.random.default_rng(7).permutation(len(X)) >= 8  # 8 validation rows, scattered
    model = VectorValuedRegressor(kernel=Gaussian(SIGMA), output="common_similarity", omegas=OMEGAS,
                                  filter=Tikhonov(), lambdas=LAMBDAS, selection=train, normalize_y=False).fit(X, Y)
    lams = model.path_params_
    K, Yc = gaussian_gram(X, X, SIGMA), Y - Y.mean(0)
    tr, va = np.flatnonzero(train), np.flatnonzero(~train)
    ref = np.array([[np.mean((K[np.ix_(va, tr)] @ tikhonov_coef(K[np.ix_(tr, tr)], A_of(om), Yc[tr], len(tr) * lam)
                              @ A_of(om) - Yc[va]) ** 2) for lam in lams] for om in OMEGAS])
    check_selection_and_refit(model, X, Y, ref, lams, lambda K, A, Yc, lam: tikhonov_coef(K, A, Yc, len(K) * lam))


def test_n_repeats_is_checked_and_an_approximation_scores_one_partition():
    from jaxmtl.errors import ParameterError

    X, Y = data()
    for bad in (0, 1.5, "3"):
        for selection in ("kfold", "gcv"):  # checked whatever the selection
            with pytest.raises(ParameterError, match="n_repeats"):
                VectorValuedRegressor(kernel=Gaussian(SIGMA), n_steps=5, n_repeats=bad, selection=selection).fit(X, Y)
    with pytest.raises(ParameterError, match="n_repeats=2 needs the exact route"):
        VectorValuedRegressor(kernel=Gaussian(SIGMA), n_steps=5, approximation="nystrom", n_components=10,
                              n_repeats=2).fit(X, Y)
    one = VectorValuedRegressor(kernel=Gaussian(SIGMA), n_steps=5, approximation="nystrom", n_components=10,
                                n_repeats=1).fit(X, Y)
    default = VectorValuedRegressor(kernel=Gaussian(SIGMA), n_steps=5, approximation="nystrom",
                                    n_components=10).fit(X, Y)
    np.testing.assert_array_equal(default.cv_scores_, one.cv_scores_)


def test_repeated_kfold_masks_without_a_seed_are_partitions():
    masks = kfold_masks(10, 5, None, n_repeats=3).reshape(3, 5, 10)
    np.testing.assert_array_equal((~masks).sum(axis=1), np.ones((3, 10)))  # each row held out once per partition
    np.testing.assert_array_equal((~masks).sum(axis=2), np.full((3, 5), 2))
