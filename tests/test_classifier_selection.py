"""Classifier selection against brute-force refits, on imbalanced classes: the rule scored is the
rule deployed (argmax with the intercept added back), ranked by the squared loss on the codes with
the one-standard-error rule."""

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
import pytest

from _reference import gaussian_gram
from jaxmtl import Gaussian, MultiClassClassifier, Tikhonov
from jaxmtl.selection import kfold_masks


def imbalanced(n=90, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.choice(3, size=n, p=[0.7, 0.2, 0.1])
    X = rng.normal(size=(n, 2)) + np.array([[0.0, 0.0], [1.2, 0.0], [0.0, 1.2]])[y]
    return X, y


def brute_force(X, y, sigma, lambdas, omegas, n_folds, seed, n_repeats=1):
    n, c = len(y), 3
    Y = np.eye(c)[y]
    ybar = Y.mean(0)
    Yc = Y - ybar
    masks = kfold_masks(n, n_folds, seed, n_repeats)
    sq_folds = np.zeros((len(masks), len(omegas), len(lambdas)))
    err = np.zeros((len(omegas), len(lambdas)))
    for io, om in enumerate(omegas):
        A = om * np.ones((c, c)) + (1 - om) * np.eye(c)
        for il, lam in enumerate(lambdas):
            for f, m in enumerate(masks):
                tr, va = m, ~m
                K = gaussian_gram(X[tr], X[tr], sigma)
                ntr = tr.sum()
                G = np.kron(K, A) + ntr * lam * np.eye(ntr * c)  # (Γ + nλI) vec C = vec Y
                C = np.linalg.solve(G, Yc[tr].reshape(-1)).reshape(ntr, c)
                F = gaussian_gram(X[va], X[tr], sigma) @ C @ A + ybar  # deployed scores
                sq_folds[f, io, il] = np.mean(np.sum((F - Y[va]) ** 2, 1)) / c
                err[io, il] += np.mean(np.argmax(F, 1) != y[va]) / len(masks)
    sq = sq_folds.mean(0)
    # one-standard-error rule: within the standard error over folds of the least squared loss
    # (and at least within 1 %), the fewest validation errors, then the least squared loss; over
    # repeated partitions the standard error of one k-fold estimate (√n_folds, not √(folds in all))
    se = sq_folds.std(0, ddof=1) / np.sqrt(n_folds)
    near = sq <= sq.min() + max(0.01 * sq.min(), se.ravel()[np.argmin(sq)])
    order = np.lexsort((sq.ravel(), np.where(near.ravel(), err.ravel(), np.inf)))
    return np.unravel_index(order[0], sq.shape), sq, err, se


@pytest.mark.parametrize("n_repeats, partitions", [(1, 1), (None, 3)])  # None at n = 90: ⌈1000 / 90⌉ → at most 3
def test_selection_equals_brute_force_refits_on_imbalanced_classes(n_repeats, partitions):
    X, y = imbalanced(seed=6)  # a draw where the one-standard-error rule and a 1 % tolerance disagree
    lambdas = np.array([1e-1, 3e-2, 1e-2, 3e-3, 1e-3])
    # with the intercept fitted ω cannot matter (see the next test): the grid is ω = 0 whatever is asked
    model = MultiClassClassifier(kernel=Gaussian(0.7), filter=Tikhonov(), lambdas=lambdas, omegas=[0.0, 0.5, 0.9],
                                 n_folds=3, random_state=0, n_repeats=n_repeats).fit(X, y)
    assert model.omegas_.tolist() == [0.0]
    (io, il), sq, err, se = brute_force(X, y, 0.7, lambdas, np.array([0.0]), 3, 0, partitions)
    # lambdas are searched in decreasing order by the estimator: compare by value
    np.testing.assert_allclose(model.cv_scores_[0], sq[:, np.argsort(-lambdas)], rtol=1e-8)
    np.testing.assert_allclose(model.cv_errors_[0], err[:, np.argsort(-lambdas)], atol=1e-12)
    np.testing.assert_allclose(model.cv_scores_se_[0], se[:, np.argsort(-lambdas)], rtol=1e-8)
    assert model.best_params_["param"] == lambdas[il]


def dense_scores(X, y, X_new, sigma, omega, lam, intercept):
    """Deployed scores of Tikhonov with Γ = K·A_ω by the dense nc × nc solve (Γ + nλI) vec C = vec Y."""
    n, c = len(y), 3
    Y = np.eye(c)[y]
    ybar = Y.mean(0) if intercept else np.zeros(c)
    A = omega * np.ones((c, c)) + (1 - omega) * np.eye(c)
    G = np.kron(gaussian_gram(X, X, sigma), A) + n * lam * np.eye(n * c)
    C = np.linalg.solve(G, (Y - ybar).reshape(-1)).reshape(n, c)
    return gaussian_gram(X_new, X, sigma) @ C @ A + ybar


def test_omega_cannot_change_a_decision():
    """A_ω acts as (1 − ω)I off the all-ones direction: Tikhonov at (ω, λ) is ω = 0 at λ / (1 − ω)
    up to a shift of each row's scores by one amount (none once the codes are centred), so the
    argmax rule and the softmax are unchanged and ω is not searched, with or without intercept."""
    X, y = imbalanced(seed=2)
    X_new = X[:20] + 0.1
    model = MultiClassClassifier(kernel=Gaussian(0.7), filter=Tikhonov(), lambdas=[0.02], omegas=[0.0, 0.5]).fit(X, y)
    assert model.omegas_.tolist() == [0.0]
    np.testing.assert_allclose(model.decision_function(X_new), dense_scores(X, y, X_new, 0.7, 0.5, 0.01, True),
                               rtol=1e-8, atol=1e-10)
    no_intercept = dense_scores(X, y, X_new, 0.7, 0.5, 0.01, False)
    shift = no_intercept - dense_scores(X, y, X_new, 0.7, 0.0, 0.02, False)
    assert np.abs(shift).max() > 1e-3  # the scores differ ...
    np.testing.assert_allclose(shift, shift[:, :1] * np.ones((1, 3)), atol=1e-10)  # ... by one amount per row
    kept = MultiClassClassifier(kernel=Gaussian(0.7), filter=Tikhonov(), lambdas=[0.02], omegas=[0.0, 0.5],
                                fit_intercept=False).fit(X, y)
    assert kept.omegas_.tolist() == [0.0]
    np.testing.assert_array_equal(np.argmax(kept.decision_function(X_new), 1), np.argmax(no_intercept, 1))


def test_binary_problems_search_no_omega_and_beat_the_majority():
    rng = np.random.default_rng(3)
    y = (rng.random(160) < 0.25).astype(int)                # 75 / 25 imbalance
    X = rng.normal(size=(160, 2)) + 2.5 * y[:, None]
    model = MultiClassClassifier(n_steps=50).fit(X[:100], y[:100])
    assert model.omegas_.tolist() == [0.0]
    majority = max(np.mean(y[100:]), 1 - np.mean(y[100:]))
    assert model.score(X[100:], y[100:]) >= majority + 0.1


def test_n_repeats_is_checked_and_an_approximation_scores_one_partition():
    from jaxmtl.errors import ParameterError

    X, y = imbalanced(n=60)
    for selection in ("kfold", "loo"):  # checked whatever the selection
        with pytest.raises(ParameterError, match="n_repeats"):
            MultiClassClassifier(kernel=Gaussian(0.7), n_steps=5, n_repeats=0, selection=selection).fit(X, y)
    with pytest.raises(ParameterError, match="n_repeats=2 needs the exact route"):
        MultiClassClassifier(kernel=Gaussian(0.7), n_steps=5, approximation="nystrom", n_components=20,
                             n_repeats=2).fit(X, y)
    model = MultiClassClassifier(kernel=Gaussian(0.7), n_steps=5, approximation="nystrom", n_components=20).fit(X, y)
    assert model.score(X, y) > 0.5
