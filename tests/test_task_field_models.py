"""MultiTaskRegressor and VectorFieldRegressor: defaults that work, selection, bad input."""

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
import pytest

from jaxmtl import Gaussian, MultiTaskRegressor, VectorFieldRegressor
from jaxmtl.datasets import grid_2d, make_multitask_toy, vector_field_1
from jaxmtl.errors import NonFiniteError, ParameterError, ShapeError, TaskError
from jaxmtl.models import angular_error


def test_multitask_coupling_beats_independent_on_the_toy():
    train, test = make_multitask_toy(20, 0), make_multitask_toy(100, 1)
    coupled = MultiTaskRegressor(n_steps=150, family="common_similarity").fit(train.x, train.y, train.tasks)
    indep = MultiTaskRegressor(omegas=[0.0], n_steps=150, family="common_similarity").fit(train.x, train.y, train.tasks)
    mse = lambda m: np.mean((m.predict(test.x, test.tasks) - test.f) ** 2)
    assert mse(coupled) < mse(indep)
    assert coupled.best_params_["omega"] > 0
    assert coupled.cv_scores_.shape == (len(coupled.kernel_widths_), 11, 150)
    assert coupled.route_ == "exact" and len(coupled.kernel_widths_) >= 6
    assert coupled.score(test.x, test.y, test.tasks) > 0.5


def test_multitask_string_task_ids_and_errors():
    d = make_multitask_toy(8, 0)
    names = np.array(["a", "b", "c", "d"])[d.tasks]
    m = MultiTaskRegressor(n_steps=20, selection="kfold", n_folds=3).fit(d.x, d.y, names)
    assert m.predict(d.x[:2], names[:2]).shape == (2,)
    with pytest.raises(TaskError, match="not seen"):
        m.predict(d.x[:1], ["zzz"])
    with pytest.raises(ShapeError, match="one entry per input"):
        MultiTaskRegressor().fit(d.x, d.y, names[:-1])
    with pytest.raises(NonFiniteError):
        MultiTaskRegressor().fit(d.x, np.r_[np.nan, d.y[1:]], names)
    with pytest.raises(ParameterError, match="omegas"):
        MultiTaskRegressor(omegas=[2.0]).fit(d.x, d.y, names)
    with pytest.raises(ParameterError, match="iterative"):
        MultiTaskRegressor(filter="tikhonov", route="matrix_free").fit(d.x, d.y, names)
    with pytest.raises(ParameterError, match="selection"):
        MultiTaskRegressor(selection="loo", route="matrix_free").fit(d.x, d.y, names)
    with pytest.raises(ParameterError, match="route"):
        MultiTaskRegressor(route="dense").fit(d.x, d.y, names)


def test_vector_field_recovers_gamma_and_splits_parts():
    X = grid_2d(16)
    V, curl, div = vector_field_1(X, 0.3)
    rng = np.random.default_rng(0)
    idx = rng.choice(len(X), 60, replace=False)
    rest = np.setdiff1d(np.arange(len(X)), idx)
    model = VectorFieldRegressor(kernel=Gaussian(0.8), kind="div_curl", n_steps=300).fit(X[idx], V[idx])
    assert abs(model.gamma_ - 0.3) <= 0.15
    c_hat, d_hat = model.predict_parts(X[rest])
    assert angular_error(V[rest], model.predict(X[rest])) < 0.1
    # the field is 0.3·curl + 0.7·div (jaxmtl.datasets.vector_field_1); the parts carry the weights
    true_c, true_d = 0.3 * curl[rest], 0.7 * div[rest]
    assert np.mean((c_hat - true_c) ** 2) < 0.25 * np.mean(true_c**2)
    assert np.mean((d_hat - true_d) ** 2) < 0.25 * np.mean(true_d**2)


def test_vector_field_defaults_and_bad_input():
    X = grid_2d(10)
    V, _, _ = vector_field_1(X, 0.5)
    m = VectorFieldRegressor(n_steps=50).fit(X, V)
    assert m.predict(X[:3]).shape == (3, 2)
    # kind='independent' fitted and predicting: test_vector_field_auto_kind_keeps_the_family_that_validates_better
    with pytest.raises(ShapeError, match="R\\^p to R\\^p"):
        VectorFieldRegressor().fit(X, V[:, :1])
    # scikit-learn's wording (n_features=…, n_samples=…), which its check_estimator looks for
    with pytest.raises(ShapeError, match="p >= 2; received n_features=1"):
        VectorFieldRegressor().fit(X[:, :1], V[:, :1])
    with pytest.raises(ShapeError, match="at least 2 samples.*received n_samples=1"):
        VectorFieldRegressor().fit(X[:1], V[:1])
    with pytest.raises(ParameterError, match="kind"):
        VectorFieldRegressor(kind="solenoidal").fit(X, V)
    with pytest.raises(ParameterError, match="Gaussian"):
        from jaxmtl.kernels import Laplacian

        VectorFieldRegressor(kernel=Laplacian(1.0)).fit(X, V)


@pytest.mark.parametrize(("width_factors", "family"), [((0.5, 1.0), "div_curl"), ((0.125, 0.25), "independent")])
def test_vector_field_auto_kind_keeps_the_family_that_validates_better(width_factors, family):
    """kind='auto' equals the explicit fit of whichever family (div/curl, Gaussian ⊗ I) has the
    lower validation loss on the same folds (both outcomes exercised)."""
    X = grid_2d(12)
    V, _, _ = vector_field_1(X, 0.5)
    idx = np.random.default_rng(0).choice(len(X), 40, replace=False)
    kw = {"n_steps": 200, "width_factors": width_factors}
    auto = VectorFieldRegressor(**kw).fit(X[idx], V[idx])
    fits = {k: VectorFieldRegressor(kind=k, **kw).fit(X[idx], V[idx]) for k in ("div_curl", "independent")}
    assert auto.kind_scores_ == {k: m.best_score_ for k, m in fits.items()}
    assert min(fits, key=lambda k: fits[k].best_score_) == auto.kind_ == family
    assert auto.best_params_ == fits[family].best_params_
    np.testing.assert_array_equal(auto.predict(X), fits[family].predict(X))


def _dense_field_gram(A, B, sigma, gamma):
    """Reference (2m, 2n) Gram, row-major vec: γ·Γ_cf + (1 − γ)·Γ_df ([BRBV11] eqs. 27, 26), or the
    Gaussian ⊗ I for ``gamma=None``."""
    U = (A[:, None, :] - B[None, :, :]) / sigma
    r2 = (U**2).sum(-1)
    I = np.eye(2)
    if gamma is None:
        blocks = np.exp(-r2 / 2)[..., None, None] * I
    else:
        uu = U[..., :, None] * U[..., None, :]
        w = (np.exp(-r2 / 2) / sigma**2)[..., None, None]
        blocks = gamma * w * (I - uu) + (1 - gamma) * w * (uu + (1 - r2)[..., None, None] * I)
    return blocks.transpose(0, 2, 1, 3).reshape(2 * len(A), 2 * len(B))


def _reference_cv_loss(X, V, masks, sigma, gamma, lam):
    """Mean over folds of the validation MSE of Tikhonov by a dense solve (G + n·λ·ḡ·I) c = y on
    each fold's n training rows (ḡ the mean diagonal of G)."""
    losses = []
    for train in masks:
        G = _dense_field_gram(X[train], X[train], sigma, gamma)
        c = np.linalg.solve(G + train.sum() * lam * np.mean(np.diag(G)) * np.eye(len(G)), V[train].ravel())
        F = _dense_field_gram(X[~train], X[train], sigma, gamma) @ c
        losses.append(np.mean((F - V[~train].ravel()) ** 2))
    return np.mean(losses)


@pytest.mark.parametrize("kind", ["div_curl", "independent"])
def test_vector_field_selects_on_three_ten_fold_partitions_by_default(kind):
    """With the default n_folds and n_repeats (40 points: ⌈1000 / 40⌉ → 3 partitions) every
    validation loss of the grid (widths × γ × λ) equals the mean over the 30 folds of
    ``kfold_masks(40, 10, 0, 3)`` of dense Tikhonov solves, and the selected point is the least of
    them; n_repeats=1 scores the first partition alone."""
    from jaxmtl.selection.criteria import kfold_masks

    X = grid_2d(12)
    V, _, _ = vector_field_1(X, 0.3)
    idx = np.random.default_rng(0).choice(len(X), 40, replace=False)
    Xt, Vt = X[idx], V[idx]
    gammas = [0.0, 0.5, 1.0]
    m = VectorFieldRegressor(kind=kind, gammas=gammas, filter="tikhonov", lambdas=[1e-5, 1e-3, 1e-1],
                             width_factors=(0.5, 1.0)).fit(Xt, Vt)
    masks = kfold_masks(40, 10, 0, 3)
    ref = np.array([[[_reference_cv_loss(Xt, Vt, masks, w, None if kind == "independent" else g, lam)
                      for lam in m.path_params_] for g in (gammas if kind == "div_curl" else [None])]
                    for w in m.kernel_widths_])
    np.testing.assert_allclose(m.cv_scores_, ref, rtol=1e-6)
    one = VectorFieldRegressor(kind=kind, gammas=gammas, filter="tikhonov", lambdas=[1e-5, 1e-3, 1e-1],
                               width_factors=(0.5, 1.0), n_repeats=1).fit(Xt, Vt)
    np.testing.assert_allclose(one.cv_scores_[0, 0, 1], _reference_cv_loss(
        Xt, Vt, masks[:10], one.kernel_widths_[0], None if kind == "independent" else gammas[0], 1e-3), rtol=1e-6)
    best = np.unravel_index(np.argmin(ref), ref.shape)
    chosen = (m.best_params_["kernel_width"], m.best_params_["gamma"], m.best_params_["param"])
    gamma = gammas[best[1]] if kind == "div_curl" else None
    assert chosen == pytest.approx((m.kernel_widths_[best[0]], gamma, m.path_params_[best[2]]))


def test_vector_field_default_folds_are_at_most_one_per_sample():
    """n_folds=None: 10 folds, one per sample below 10 samples; an explicit n_folds above the
    sample count is refused by name."""
    X = grid_2d(12)[::20][:6]
    V, _, _ = vector_field_1(X, 0.3)
    m = VectorFieldRegressor(kind="independent", filter="tikhonov", lambdas=[1e-3], width_factors=(1.0,)).fit(X, V)
    loo = VectorFieldRegressor(kind="independent", filter="tikhonov", lambdas=[1e-3], width_factors=(1.0,),
                               n_folds=6).fit(X, V)
    np.testing.assert_allclose(m.cv_scores_, loo.cv_scores_, rtol=1e-12)
    with pytest.raises(ParameterError, match="n_folds=10 folds need at least 10 samples; received n_samples=6"):
        VectorFieldRegressor(n_folds=10).fit(X, V)


def test_multitask_score_on_constant_targets_is_refused():
    d = make_multitask_toy(8, 0)
    m = MultiTaskRegressor(n_steps=10, omegas=[0.5]).fit(d.x, d.y, d.tasks)
    with pytest.raises(ParameterError, match="constant y"):
        m.score(d.x, np.ones_like(d.y), d.tasks)
    with pytest.raises(ParameterError, match="fit_intercept"):
        MultiTaskRegressor(fit_intercept="yes").fit(d.x, d.y, d.tasks)


@pytest.mark.parametrize("route", ["exact", "matrix_free"])
def test_vector_field_fits_float32_inputs_under_x64(route):
    """float32 X with x64 on computes in float64 on both routes (a float32 scan carry beside a
    float64 width or γ raised TypeError), and equals the fit on the same inputs in float64."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2)).astype(np.float32)
    V = np.c_[X[:, 0], X[:, 0]]
    kw = {"kind": "curl_free", "n_steps": 10, "width_factors": (1.0,), "n_folds": 3, "route": route}
    p32 = VectorFieldRegressor(**kw).fit(X, V).predict(X)
    p64 = VectorFieldRegressor(**kw).fit(X.astype(np.float64), V).predict(X)
    np.testing.assert_allclose(p32, p64, atol=1e-4)


def test_vector_field_two_stage_selection_equals_brute_force_refits(monkeypatch):
    """Default widths: the width stage's losses are, for every width it tried, the 5-fold dense
    Tikhonov losses at γ ∈ {0, ½, 1} (the grid's least, middle, largest), its width is their least;
    the path stage's losses at that width are the losses over three 10-fold partitions (20
    points: n_repeats=None gives 3) at every γ, and the selected
    (γ, λ) is their least — every loss from an explicit loop of dense solves. (The two stages are
    the default above JOINT_MAX_UNKNOWNS; lowered here to keep the dense loops small.)"""
    from jaxmtl.kernels.scalar import median_heuristic
    from jaxmtl.models import fields

    monkeypatch.setattr(fields, "JOINT_MAX_UNKNOWNS", 0)
    from jaxmtl.selection.criteria import kfold_masks

    X = grid_2d(12)
    V, _, _ = vector_field_1(X, 0.3)
    idx = np.random.default_rng(1).choice(len(X), 20, replace=False)
    Xt, Vt = X[idx], V[idx]
    gammas, lambdas = [0.0, 0.25, 0.5, 0.75, 1.0], [1e-2, 1e-4]
    m = VectorFieldRegressor(kind="div_curl", gammas=gammas, filter="tikhonov", lambdas=lambdas, route="exact").fit(Xt, Vt)
    base = median_heuristic(Xt) * 4.0 ** np.arange(-2, 4)
    assert all(np.isclose(m.width_grid_, w).any() for w in base) and len(m.width_grid_) > len(base)
    coarse, masks5, masks10 = [0.0, 0.5, 1.0], kfold_masks(20, 5, 0), kfold_masks(20, 10, 0, 3)
    ref = np.array([[[_reference_cv_loss(Xt, Vt, masks5, w, g, lam) for lam in m.path_params_] for g in coarse]
                    for w in m.width_grid_])
    np.testing.assert_allclose(m.width_scores_, ref, rtol=1e-6)
    width = m.width_grid_[np.argmin(ref.min(axis=(1, 2)))]
    assert m.best_params_["kernel_width"] == pytest.approx(width) and m.kernel_widths_.tolist() == [width]
    ref2 = np.array([[_reference_cv_loss(Xt, Vt, masks10, width, g, lam) for lam in m.path_params_] for g in gammas])
    np.testing.assert_allclose(m.cv_scores_[0], ref2, rtol=1e-6)
    ig, il = np.unravel_index(np.argmin(ref2), ref2.shape)
    assert (m.gamma_, m.best_params_["param"]) == pytest.approx((gammas[ig], m.path_params_[il]))


def test_vector_field_n_repeats_refused_by_name_and_failed_fit_keeps_the_earlier_one():
    """n_repeats below 1 is refused by name before anything is traced, and the refused refit
    leaves the earlier fit as it was."""
    X = grid_2d(8)
    V, _, _ = vector_field_1(X, 0.3)
    m = VectorFieldRegressor(kind="independent", filter="tikhonov", lambdas=[1e-3], width_factors=(1.0,)).fit(X, V)
    before = m.predict(X[:3])
    with pytest.raises(ParameterError, match="n_repeats"):
        m.set_params(n_repeats=0).fit(X, V)
    np.testing.assert_array_equal(m.predict(X[:3]), before)
