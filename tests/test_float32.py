"""What float32 — JAX's default, the configuration users run — promises, whatever the suite's precision.

Each test computes in float32 (``jax.enable_x64(False)`` or ``dtype='float32'``) and compares
with a float64 reference computed independently in NumPy (dense eigendecompositions, explicit
recurrences) or with the same estimator in float64, at the tolerances of
``conftest.FLOAT32_PROMISE``. Covered: every estimator (default fit and predict without a
warning; test error against float64), every filter on the eigen path, the matrix-free path,
the selection criteria (k-fold, LOO, GCV), persistence and predictors.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _estimators import NAMES, fit_data, make
from _reference import dense_filter_coefficients, nu_method_loop, problem
from conftest import FLOAT32_PROMISE

import jaxmtl.models as M
from jaxmtl import IteratedTikhonov, Landweber, NuMethod, Tikhonov, TruncatedSVD, load, spectral_path
from jaxmtl.operators import SeparableOperator, separable_eigh
from jaxmtl.paths import iterative_path, tridiagonal_path
from jaxmtl.selection import gcv_path, kfold_masks, kfold_path, loo_path

RTOL, ATOL = FLOAT32_PROMISE["rtol"], FLOAT32_PROMISE["atol"]


def rel(a, b):
    return np.linalg.norm(np.asarray(a, np.float64) - b) / np.linalg.norm(b)


@pytest.fixture
def float32():
    """JAX's default configuration for the test's duration."""
    with jax.enable_x64(False):
        yield


@pytest.mark.parametrize("name", NAMES)
def test_default_fit_and_predict_raise_no_warning(name, float32):
    fit_args, predict_args = fit_data(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = getattr(M, name)().fit(*fit_args)
        out = model.predict(*predict_args)
    assert model.coef_.dtype == np.float32
    assert out.dtype == (np.float64 if not name.endswith("Classifier") else fit_args[1].dtype)


def _test_error(name, model, seed=1):
    (X, y, *tasks), _ = fit_data(name, n=60, seed=seed)
    F = model.predict(X, *tasks)
    if name.endswith("Classifier"):
        return float(np.mean(F != y))
    return float(np.mean((F - y) ** 2))


@pytest.mark.parametrize("name", NAMES)
def test_float32_fit_costs_little_test_error_and_keeps_the_global_setting(name):
    fit_args, predict_args = fit_data(name)
    before = jax.config.jax_enable_x64
    errors = {}
    for dtype in ("float32", "float64"):
        model = make(name, dtype=dtype).fit(*fit_args)
        assert jax.config.jax_enable_x64 == before
        assert np.asarray(model.coef_).dtype == dtype
        out = model.predict(*predict_args)
        assert isinstance(out, np.ndarray)
        assert out.dtype == (fit_args[1].dtype if name.endswith("Classifier") else np.float64)
        errors[dtype] = _test_error(name, model)
    f = FLOAT32_PROMISE
    factor = FLOAT32_ERROR_EXCEPTIONS.get(name, f["error_factor"])
    assert errors["float32"] <= factor * errors["float64"] + f["error_atol"], errors


def test_vector_field_default_tikhonov_grid_in_float32_costs_little_test_error():
    """The field default (Tikhonov on the eigen path, λ down to the working precision) in float32 and
    float64 on a noisy field: each searches its own dtype's grid, and float32's test error keeps the
    promise."""
    from jaxmtl.datasets import grid_2d, vector_field_1
    from jaxmtl.models.fields import angular_error, default_lambdas

    X = grid_2d(12)
    V, _, _ = vector_field_1(X, 0.3)
    rng = np.random.default_rng(0)
    idx = rng.choice(len(X), 40, replace=False)
    rest = np.setdiff1d(np.arange(len(X)), idx)
    Vn = V[idx] + 0.05 * rng.normal(size=(40, 2))
    errors = {}
    for dtype in ("float32", "float64"):
        model = M.VectorFieldRegressor(dtype=dtype).fit(X[idx], Vn)
        assert model.filter_.name == "tikhonov" and np.asarray(model.coef_).dtype == dtype
        np.testing.assert_allclose(model.path_params_, default_lambdas(np.dtype(dtype)))
        errors[dtype] = angular_error(V[rest], model.predict(X[rest]))
    f = FLOAT32_PROMISE
    assert errors["float32"] <= f["error_factor"] * errors["float64"] + f["error_atol"], errors


def test_approximate_default_tikhonov_grid_and_per_output_family_in_float32():
    """ApproximateKernelRegressor()'s default (Tikhonov on the D × D path, λ down to the working
    precision, the per-output family compared) in float32 and float64 on two noisy outputs: each
    searches its own dtype's grid, both compare the same families, and float32's test error keeps
    the promise."""
    from jaxmtl.models.fields import default_lambdas

    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, (160, 3))
    F = np.c_[np.sin(2 * X[:, 0]) + X[:, 1] ** 2, np.cos(X[:, 1] + X[:, 2])]
    Y = F + np.c_[0.05 * rng.normal(size=160), 0.3 * rng.normal(size=160)]
    errors = {}
    for dtype in ("float32", "float64"):
        model = M.ApproximateKernelRegressor(dtype=dtype).fit(X[:120], Y[:120])
        assert model.filter_.name == "tikhonov" and np.asarray(model.coef_).dtype == dtype
        np.testing.assert_allclose(model.path_params_, default_lambdas(np.dtype(dtype)), rtol=1e-6)
        assert set(model.family_scores_) == {"common_similarity", "independent"}
        errors[dtype] = float(np.mean((model.predict(X[120:]) - F[120:]) ** 2))
    f = FLOAT32_PROMISE
    assert errors["float32"] <= f["error_factor"] * errors["float64"] + f["error_atol"], errors


# Estimators whose float32 test error is allowed more than the promise, with the reason (docs/precision.md):
# MixedEffectRegressor's default λ grid reaches 1e-7, beyond float32's resolution on these data; those
# grid points are left out in float32, so it selects a larger λ than float64 does (1.8 × the error here).
FLOAT32_ERROR_EXCEPTIONS = {"MixedEffectRegressor": 2.0}


@pytest.mark.parametrize("filt", [Tikhonov(), IteratedTikhonov(3), TruncatedSVD()])
def test_closed_form_filters_on_the_eigen_path(filt, float32):
    _, K, A, Y = problem()
    lams = np.geomspace(1e-3, 0.5, 5)
    C = spectral_path(separable_eigh(jnp.asarray(K, jnp.float32), jnp.asarray(A, jnp.float32)),
                      jnp.asarray(Y, jnp.float32), filt, jnp.asarray(lams, jnp.float32), output="coefficients")
    assert C.dtype == jnp.float32
    for k, lam in enumerate(lams):
        with jax.enable_x64(True):
            ref = dense_filter_coefficients(K, A, Y, lambda w: np.asarray(filt(jnp.asarray(w), lam)))
        if isinstance(filt, TruncatedSVD):  # a kept eigenvalue within roundoff of λ may flip
            assert rel(C[k], ref) < 20 * RTOL
        else:
            assert rel(C[k], ref) < RTOL


@pytest.mark.parametrize("filt", [Tikhonov(), IteratedTikhonov(3)])
def test_resolvent_filters_on_the_tridiagonal_path(filt, float32):
    _, K, A, Y = problem()
    lams = np.geomspace(1e-3, 0.5, 5)
    C = tridiagonal_path(jnp.asarray(K, jnp.float32), jnp.asarray(Y, jnp.float32), jnp.asarray(lams, jnp.float32),
                         A=jnp.asarray(A, jnp.float32), filt=filt, output="coefficients")
    assert C.dtype == jnp.float32
    for k, lam in enumerate(lams):
        with jax.enable_x64(True):
            ref = dense_filter_coefficients(K, A, Y, lambda w: np.asarray(filt(jnp.asarray(w), lam)))
        assert rel(C[k], ref) < RTOL


@pytest.mark.parametrize("filt", [Landweber(), NuMethod()])
def test_iterative_filters_on_the_eigen_and_matrix_free_paths(filt, float32):
    _, K, A, Y = problem()
    n, d = Y.shape
    G = np.kron(K, A)
    tau = 1.0 / np.linalg.eigvalsh(G / n).max()
    T = 60
    if filt.name == "landweber":
        c, refs = np.zeros(n * d), []
        for _ in range(T):
            c = c + tau / n * (Y.reshape(-1) - G @ c)
            refs.append(c)
    else:
        refs = nu_method_loop(G, Y.reshape(-1), tau, n, T)
    Kj, Aj, Yj = (jnp.asarray(v, jnp.float32) for v in (K, A, Y))
    C = spectral_path(separable_eigh(Kj, Aj), Yj, filt, jnp.arange(1, T + 1), output="coefficients",
                      tau=jnp.float32(tau))
    for t in (0, 9, T - 1):
        assert rel(C[t], refs[t].reshape(n, d)) < RTOL
    res = iterative_path(SeparableOperator(Kj, Aj), Yj, filt, T, tau=jnp.float32(tau))
    assert rel(res.coef, refs[-1].reshape(n, d)) < RTOL


def test_selection_criteria_choose_as_float64(float32):
    """k-fold, LOO and GCV in float32: the parameter chosen has a float64 loss within the promised
    factor of float64's least."""
    _, K, A, Y = problem(n=40)
    lams = np.geomspace(1e-4, 1.0, 12)
    a, V = np.linalg.eigh(A)
    masks = kfold_masks(40, 4, seed=0)

    def losses():
        Kj, Yj, lj = jnp.asarray(K), jnp.asarray(Y), jnp.asarray(lams)
        eig = separable_eigh(Kj, jnp.asarray(A))
        return {"kfold": np.asarray(kfold_path(Kj, Yj, jnp.asarray(a), jnp.asarray(V), Tikhonov(), lj,
                                               jnp.asarray(masks))).mean(axis=0),
                "loo": np.asarray(loo_path(eig, Yj, Tikhonov(), lj)),
                "gcv": np.asarray(gcv_path(eig, Yj, Tikhonov(), lj))}

    single = losses()
    with jax.enable_x64(True):
        double = losses()
    for name, curve in single.items():
        assert curve.dtype == np.float32
        best = double[name].min()
        assert double[name][np.argmin(curve)] <= FLOAT32_PROMISE["error_factor"] * best, name
        np.testing.assert_allclose(curve, double[name], rtol=RTOL * 10)


@pytest.mark.filterwarnings("ignore::jaxmtl.errors.GridEdgeWarning")  # FAST's short path: not what is tested
def test_persistence_and_predictor_keep_float32(tmp_path, float32):
    (X, Y), _ = fit_data("VectorValuedRegressor")
    model = make("VectorValuedRegressor").fit(X, Y)  # the settings (and programs) of the float32 fits above
    model.save(tmp_path / "m.npz")
    back = load(tmp_path / "m.npz")
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    assert back.coef_.dtype == np.float32
    pred = model.predictor()
    F = jax.jit(lambda p, x: p(x))(pred, jnp.asarray(X, jnp.float32))
    assert F.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(F), model.predict(X), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["VectorValuedRegressor", "MultiClassClassifier"])
def test_a_rows_prediction_hardly_depends_on_the_other_rows_of_the_batch(name):
    """scikit-learn's sample-order and subset invariance checks, at float32's tolerance: a row's
    output moves by a few roundoffs with the batch (XLA's products sum in shape-dependent order)."""
    (X, y), _ = fit_data(name)
    model = make(name, dtype="float32").fit(X, y)
    method = model.decision_function if name.endswith("Classifier") else model.predict
    full, order = method(X), np.random.default_rng(0).permutation(len(X))
    atol = 1e-5 * np.abs(full).max()  # roundoff scales with the outputs' size, not with each entry's
    np.testing.assert_allclose(method(X[order]), full[order], rtol=1e-5, atol=atol)
    np.testing.assert_allclose(method(X[:7]), full[:7], rtol=1e-5, atol=atol)
