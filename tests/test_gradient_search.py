"""search="gradient" on the spectral estimators: ARD on a problem with few relevant features, the
learned point against its start under an independent k-fold computation, and argument checks."""

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
import pytest

import jaxmtl
from jaxmtl import MultiClassClassifier, VectorValuedRegressor
from jaxmtl.errors import ParameterError
from jaxmtl.kernels.scalar import Gaussian
from jaxmtl.selection import kfold_masks

P, RELEVANT = 6, (0, 1)
SETTINGS = {"filter": "tikhonov", "omegas": [0.0, 0.25, 0.5, 0.75, 1.0]}


def few_relevant_features(n_train=100, n_test=300, p=P, noise=0.1, seed=0):
    """Two outputs depending only on features 0 and 1 (a shared and an output-specific part);
    the other p − 2 features are noise of the same scale."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_train + n_test, p))
    shared = np.sin(2.0 * X[:, 0])
    F = np.c_[shared + 0.5 * X[:, 1] ** 2, shared - X[:, 1]]
    Y = F + noise * rng.normal(size=F.shape)
    return X[:n_train], Y[:n_train], X[n_train:], F[n_train:]


def _gram(X1, X2, sigma):
    Z1, Z2 = X1 / sigma, X2 / sigma
    return np.exp(-((Z1[:, None, :] - Z2[None, :, :]) ** 2).sum(-1) / 2.0)


def kfold_reference(X, Y, sigma, omega, lam, masks):
    """Independent k-fold squared loss of the Tikhonov fit (centred outputs, dense NumPy solves)."""
    d = Y.shape[1]
    A = omega * np.ones((d, d)) + (1.0 - omega) * np.eye(d)
    Yc = Y - Y.mean(0)
    losses = []
    for m in masks:
        n_tr = int(m.sum())
        K = _gram(X[m], X[m], sigma)
        G = np.kron(K, A) + n_tr * lam * np.eye(n_tr * d)
        C = np.linalg.solve(G, Yc[m].reshape(-1)).reshape(n_tr, d)
        F = _gram(X[~m], X[m], sigma) @ C @ A
        losses.append(np.mean((F - Yc[~m]) ** 2))
    return float(np.mean(losses))


@pytest.fixture(scope="module")
def ard_fits():
    X, Y, Xt, Ft = few_relevant_features()
    grid = VectorValuedRegressor(**SETTINGS).fit(X, Y)
    ard = VectorValuedRegressor(kernel=Gaussian(np.ones(P)), search="gradient", **SETTINGS).fit(X, Y)
    return X, Y, Xt, Ft, grid, ard


def test_ard_finds_the_relevant_features_and_beats_the_isotropic_grid(ard_fits):
    _, _, Xt, Ft, grid, ard = ard_fits
    widths = np.asarray(ard.kernel_.sigma)
    assert widths.shape == (P,)
    assert set(np.argsort(widths)[: len(RELEVANT)]) == set(RELEVANT)
    assert ard.best_params_["kernel_width"] == pytest.approx(widths.tolist())
    err_grid = np.mean((grid.predict(Xt) - Ft) ** 2)
    err_ard = np.mean((ard.predict(Xt) - Ft) ** 2)
    assert err_ard < 0.5 * err_grid, (err_ard, err_grid)


def test_gradient_result_no_worse_than_its_start_on_validation(ard_fits):
    """The learned (widths, ω, λ) against the start, both scored by an explicit NumPy k-fold."""
    X, Y, _, _, _, ard = ard_fits
    masks = kfold_masks(X.shape[0], 5, 0, 3)  # n_repeats=None: ⌈1000 / 100⌉ partitions, at most 3
    start = ard.search_start_
    Y = Y / np.std(Y, axis=0)  # the criterion is that of the standardised outputs (normalize_y)
    before = kfold_reference(X, Y, np.asarray(start["kernel"].sigma), start["omega"], start["lambda"], masks)
    after = kfold_reference(X, Y, np.asarray(ard.kernel_.sigma), ard.best_params_["omega"],
                            ard.best_params_["lambda"], masks)
    assert after <= before
    np.testing.assert_allclose([ard.search_start_score_, ard.search_score_], [before, after], rtol=1e-8)
    # the fitted coefficients are the Tikhonov solution at the learned point
    assert ard.best_params_["param"] == ard.best_params_["lambda"]


def test_gradient_fitted_model_round_trips_through_save_and_load(ard_fits, tmp_path):
    _, _, Xt, _, _, ard = ard_fits
    jaxmtl.save(ard, tmp_path / "ard.npz")
    loaded = jaxmtl.load(tmp_path / "ard.npz")
    assert loaded.get_params()["search"] == "gradient"
    np.testing.assert_array_equal(np.asarray(loaded.kernel_.sigma), np.asarray(ard.kernel_.sigma))
    np.testing.assert_array_equal(np.asarray(loaded.search_trace_), np.asarray(ard.search_trace_))
    assert loaded.search_score_ == ard.search_score_
    a, b = ard.predict(Xt), loaded.predict(Xt)
    assert a.dtype == b.dtype == np.float64
    np.testing.assert_array_equal(a, b)


def test_a_fit_at_another_n_of_the_bucket_compiles_nothing(ard_fits):
    """The criterion's rows are padded to their size bucket and its data are arguments: after the
    100-row fit, a gradient fit on 98 rows (bucket 104 as well) compiles no program at all."""
    from jaxmtl.models._buckets import size_bucket

    X, Y, _, _ = few_relevant_features(n_train=98, seed=5)
    assert size_bucket(98) == size_bucket(ard_fits[0].shape[0])
    compiled = []
    listener = lambda event, duration, **kw: compiled.append(event) \
        if event == "/jax/core/compile/backend_compile_duration" else None
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        VectorValuedRegressor(kernel=Gaussian(np.ones(P)), search="gradient", **SETTINGS).fit(X, Y)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert compiled == []


@pytest.mark.parametrize("selection", ["loo", "gcv"])
def test_closed_form_criteria_on_padded_rows_equal_the_unpadded(monkeypatch, selection):
    """LOO and GCV on the bucket-padded rows (the Gram's padded block zero, the real n) equal the
    search on the rows as they are: the same criterion values along the same optimisation."""
    from jaxmtl.models import _gradient_search

    X, Y, _, _ = few_relevant_features(n_train=90, seed=2)  # bucket 96: six padded rows
    fits = []
    for bucket in (None, lambda n, bits=None: int(n)):
        if bucket is not None:
            monkeypatch.setattr(_gradient_search, "size_bucket", bucket)
        fits.append(VectorValuedRegressor(search="gradient", selection=selection, **SETTINGS).fit(X, Y))
    padded, plain = fits
    np.testing.assert_allclose(padded.search_trace_, plain.search_trace_, rtol=1e-8)
    np.testing.assert_allclose([padded.search_start_score_, padded.search_score_],
                               [plain.search_start_score_, plain.search_score_], rtol=1e-8)
    np.testing.assert_allclose(padded.best_params_["lambda"], plain.best_params_["lambda"], rtol=1e-7)


@pytest.mark.parametrize("bad", ["gradients", "Grid", None, 1])
def test_bad_search_raises_naming_the_argument(bad):
    X, Y, _, _ = few_relevant_features(n_train=20, n_test=0)
    with pytest.raises(ParameterError, match="search"):
        VectorValuedRegressor(search=bad).fit(X, Y)
    with pytest.raises(ParameterError, match="search"):
        MultiClassClassifier(search=bad).fit(X, (Y[:, 0] > 0).astype(int))


def test_gradient_search_needs_the_exact_kernel():
    X, Y, _, _ = few_relevant_features(n_train=20, n_test=0)
    with pytest.raises(ParameterError, match="search='gradient'"):
        VectorValuedRegressor(search="gradient", approximation="nystrom").fit(X, Y)


def test_grid_stays_the_default():
    assert VectorValuedRegressor().get_params()["search"] == "grid"
    assert MultiClassClassifier().get_params()["search"] == "grid"


@pytest.mark.slow
def test_classifier_gradient_search_iterative_filter(tmp_path):
    """Three classes, ν-method: width learned on the code criterion (ω cannot change a
    classifier's decision and is not searched), steps on the path."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 3))
    y = np.digitize(X[:, 0] + 0.3 * rng.normal(size=150), [-0.5, 0.5])
    clf = MultiClassClassifier(search="gradient", omegas=[0.0, 0.5, 1.0]).fit(X[:90], y[:90])
    grid = MultiClassClassifier(omegas=[0.0, 0.5, 1.0]).fit(X[:90], y[:90])
    assert clf.search_score_ <= clf.search_start_score_
    assert isinstance(clf.best_params_["param"], int)
    assert clf.score(X[90:], y[90:]) >= grid.score(X[90:], y[90:]) - 0.05
    jaxmtl.save(clf, tmp_path / "clf.npz")
    loaded = jaxmtl.load(tmp_path / "clf.npz")
    np.testing.assert_array_equal(loaded.predict_proba(X[90:]), clf.predict_proba(X[90:]))
    np.testing.assert_array_equal(loaded.predict(X[90:]), clf.predict(X[90:]))
