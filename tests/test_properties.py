"""Property-based tests (hypothesis) over random shapes, dtypes and hyperparameters."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxmtl import errors, filters, outputs
from jaxmtl._checks import as_float_array, check_output_matrix
from jaxmtl.operators import DenseOperator, SeparableOperator, separable_eigh
from jaxmtl.paths import filtered_coefficients, spectral_path
from jaxmtl.selection import loo_path

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
HEAVY = settings(SETTINGS, max_examples=10)  # each example compiles or runs op by op
# few distinct shapes keep the number of compilations (the cost of these tests) small
N = st.sampled_from([3, 5, 8])
D = st.sampled_from([1, 2, 3])


def _psd(rng, k, rank=None):
    B = rng.normal(size=(k, rank or k))
    return B @ B.T


@SETTINGS
@given(n=N, d=D, seed=st.integers(0, 2**16), rank=st.sampled_from([None, 1]))
def test_separable_product_equals_dense_reference(n, d, seed, rank):
    rng = np.random.default_rng(seed)
    K, A = _psd(rng, n), _psd(rng, d, None if rank is None else 1)
    C = rng.normal(size=(n, d))
    op = SeparableOperator(jnp.asarray(K), jnp.asarray(A))
    dense = DenseOperator(jnp.asarray(np.kron(K, A)), d)
    np.testing.assert_allclose(op.mv(C), dense.mv(C), rtol=1e-10, atol=1e-10 * np.abs(K).max() * np.abs(A).max())


FILTERS = st.sampled_from([
    ("tikhonov", None), ("iterated_tikhonov", None), ("tsvd", None), ("landweber", None), ("nu_method", 1.0),
    ("nu_method", 0.5), ("nu_method", 3.0),
])


@SETTINGS
@given(spec=FILTERS, seed=st.integers(0, 2**16), t=st.integers(1, 60), log_lam=st.floats(-8, 1))
def test_filter_factor_is_bounded(spec, seed, t, log_lam):
    """0 ≤ σ·g(σ) ≤ 1 on σ ∈ [0, σ_max] (τ = 1/σ_max); ≤ 2 for the ν-method (|1 − σg| ≤ 1)."""
    name, nu = spec
    filt = filters.NuMethod(nu) if name == "nu_method" else filters.get_filter(name)
    rng = np.random.default_rng(seed)
    sigma = np.r_[0.0, np.sort(rng.uniform(0, 1, 30)) * 10 ** rng.uniform(-3, 3)]
    smax = sigma.max()
    param = t if filt.iterative else 10 ** log_lam * smax
    h = np.asarray(filt.residual(jnp.asarray(sigma), param, 1.0 / smax))
    assert np.all(np.isfinite(h))
    upper = 2.0 if name == "nu_method" else 1.0
    tol = 1e-9
    assert np.all(h >= -tol) and np.all(h <= upper + tol), (h.min(), h.max())


@HEAVY
@given(spec=FILTERS, n=N, d=D, seed=st.integers(0, 2**16))
def test_filtered_coefficients_equal_dense_filter(spec, n, d, seed):
    """C = g(Γ/n) Y / n from the Kronecker eigensystem equals the filter applied to the nd×nd Γ."""
    name, nu = spec
    filt = filters.NuMethod(nu) if name == "nu_method" else filters.get_filter(name)
    rng = np.random.default_rng(seed)
    K, A, Y = _psd(rng, n), _psd(rng, d), rng.normal(size=(n, d))
    eig = separable_eigh(jnp.asarray(K), jnp.asarray(A))
    G = np.kron(K, A) / n
    w, W = np.linalg.eigh(G)
    w = np.maximum(w, 0.0)
    tau = 1.0 / w.max()
    param = 7 if filt.iterative else 0.05 * w.max()
    C = np.asarray(filtered_coefficients(filt, eig, jnp.asarray(Y), param, tau))
    g = np.asarray(filt(jnp.asarray(w), param, tau))
    C_ref = (W @ (g * (W.T @ Y.reshape(-1)))).reshape(n, d) / n
    np.testing.assert_allclose(C, C_ref, rtol=1e-6, atol=1e-8 * max(1.0, np.abs(C_ref).max()))


@SETTINGS
@given(n=st.sampled_from([5, 7]), d=st.sampled_from([1, 2]), seed=st.integers(0, 2**16),
       log_lam=st.floats(-4, 0))
def test_tikhonov_loo_equals_brute_force(n, d, seed, log_lam):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 2)
    A = _psd(rng, d) + 0.1 * np.eye(d)
    Y = rng.normal(size=(n, d))
    lam = 10 ** log_lam
    fast = float(loo_path(separable_eigh(jnp.asarray(K), jnp.asarray(A)), jnp.asarray(Y), filters.Tikhonov(),
                          jnp.asarray([lam]))[0])
    errs = []
    for i in range(n):  # penalty nλ fixed, as the closed form (Rifkin & Lippert)
        keep = np.arange(n) != i
        G = np.kron(K[np.ix_(keep, keep)], A)
        c = np.linalg.solve(G + n * lam * np.eye(G.shape[0]), Y[keep].reshape(-1)).reshape(-1, d)
        pred = K[i, keep] @ c @ A
        errs.append(np.sum((pred - Y[i]) ** 2) / d)
    np.testing.assert_allclose(fast, np.mean(errs), rtol=1e-6)


@HEAVY
@given(spec=FILTERS, n=N, seed=st.integers(0, 2**16), T=st.integers(1, 12))
def test_path_predictions_equal_one_parameter_at_a_time(spec, n, seed, T):
    name, nu = spec
    filt = filters.NuMethod(nu) if name == "nu_method" else filters.get_filter(name)
    rng = np.random.default_rng(seed)
    K, Y = _psd(rng, n), rng.normal(size=(n, 2))
    eig = separable_eigh(jnp.asarray(K), jnp.eye(2))
    params = jnp.arange(1, T + 1) if filt.iterative else jnp.asarray(np.geomspace(1e-3, 1.0, T))
    path = np.asarray(spectral_path(eig, jnp.asarray(Y), filt, params, K_eval=jnp.asarray(K)))
    assert path.shape == (T, n, 2) and np.all(np.isfinite(path))
    tau = 1.0 / (eig.s.max() / n)
    for j in (0, T - 1):
        C = filtered_coefficients(filt, eig, jnp.asarray(Y), params[j], tau)
        np.testing.assert_allclose(path[j], K @ np.asarray(C), rtol=1e-7, atol=1e-9 * (1 + np.abs(path[j]).max()))


ARRAY_DTYPES = st.sampled_from([np.float16, np.float32, np.float64, np.int8, np.int64, np.uint8, np.bool_])


@SETTINGS
@given(shape=st.lists(st.integers(0, 3), min_size=0, max_size=3), dtype=ARRAY_DTYPES,
       poison=st.sampled_from([None, np.nan, np.inf]))
def test_as_float_array_returns_finite_float_or_raises_documented_error(shape, dtype, poison):
    x = np.ones(shape, dtype=dtype)
    if poison is not None and x.size and np.dtype(dtype).kind == "f":
        x.flat[0] = poison
    try:
        out = as_float_array(x, "x", ndim=(1, 2))
    except errors.JaxmtlError as exc:
        assert isinstance(exc, (errors.ShapeError, errors.NonFiniteError, errors.DTypeError))
        return
    assert out.dtype in (np.float32, np.float64) and out.size > 0 and np.all(np.isfinite(out))
    assert out.dtype == (np.float32 if dtype == np.float32 else np.float64)


@SETTINGS
@given(d=D, seed=st.integers(0, 2**16), kind=st.sampled_from(["psd", "singular", "asym", "indefinite"]))
def test_output_matrix_check_accepts_psd_and_rejects_the_rest(d, seed, kind):
    rng = np.random.default_rng(seed)
    A = _psd(rng, d, 1) if kind == "singular" else _psd(rng, d) + 1e-3 * np.eye(d)
    if kind == "asym":
        if d == 1:
            return
        A = A + np.triu(np.ones((d, d)), 1)
    if kind == "indefinite":
        A = A - (np.linalg.eigvalsh(A).max() + 1.0) * np.eye(d)
    if kind in ("psd", "singular"):
        out = check_output_matrix(A)
        np.testing.assert_array_equal(out, out.T)
        a, _ = outputs.eigh_output(A)
        assert np.all(np.asarray(a) >= 0)
    else:
        with pytest.raises(errors.OutputMatrixError):
            check_output_matrix(A)


@settings(SETTINGS, max_examples=5)
@given(n=st.sampled_from([6, 10]), d=st.sampled_from([1, 2]), seed=st.integers(0, 2**16),
       spec=st.sampled_from(["nu_method", "tikhonov", "landweber"]),
       scale=st.sampled_from([1e-6, 1.0, 1e6]), dup=st.booleans())
def test_estimator_fits_random_problems_finitely(n, d, seed, spec, scale, dup):
    from jaxmtl import VectorValuedRegressor

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    if dup:
        X[n // 2:] = X[0]
    Y = scale * rng.normal(size=(n, d))
    model = VectorValuedRegressor(filter=spec, n_steps=12, n_folds=2, lambdas=[1e-3, 1e-1]).fit(X, Y)
    P = model.predict(X)
    assert P.shape == (n, d) and np.all(np.isfinite(P))
    assert np.max(np.abs(P - Y.mean(0))) <= 10 * np.max(np.abs(Y - Y.mean(0))) + 1e-12
