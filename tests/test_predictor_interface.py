"""One predictor interface for every family: the same fields, Jacobians against central finite
differences, gradients against closed forms, and the precision rule (a float64 predictor where JAX
computes in float32 refuses by name; JAX never prints its truncation warnings)."""

import dataclasses
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import X64

from _reference import gaussian_gram
from jaxmtl import Gaussian, VectorValuedRegressor
from jaxmtl.errors import DTypeError, ParameterError, ShapeError
from jaxmtl.models import PerOutputGaussian, PerOutputPredictor, Predictor, SeparablePredictor

FIELDS = ["kernel", "X_fit", "coef", "output_matrix", "offset", "input_offset", "dtype"]


def data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.c_[np.sin(X[:, 0]), X[:, 1] ** 2 - X[:, 2]]


def fitted(family, dtype="float64"):
    """A model fitted in ``dtype`` whatever the run's precision (one λ, no search: fast compiles)."""
    X, Y = data()
    omegas = [0.5] if family == "common_similarity" else None
    return X, VectorValuedRegressor(kernel=Gaussian(1.5), filter="tikhonov", lambdas=[1e-3], omegas=omegas,
                                    family=family, dtype=dtype).fit(X, Y)


def dense_prediction(f, X):
    """Σᵢ k(x − s, xᵢ) cᵢ A + b by explicit NumPy sums, output by output for the per-output family."""
    Xc = X - (0 if f.input_offset is None else np.asarray(f.input_offset))
    Xf, C, A, b = (np.asarray(a, np.float64) for a in (f.X_fit, f.coef, f.output_matrix, f.offset))
    if isinstance(f, PerOutputPredictor):
        E = np.stack([gaussian_gram(Xc, Xf, w) @ C[:, j] for j, w in enumerate(np.asarray(f.kernel.sigma))], 1)
    else:
        E = gaussian_gram(Xc, Xf, float(f.kernel.sigma)) @ C
    return E @ A + b


@pytest.mark.parametrize("family", ["common_similarity", "independent"])
def test_every_family_has_the_same_fields_and_predicts_as_the_dense_sum(family):
    X, model = fitted(family)
    f = model.predictor()
    assert isinstance(f, Predictor) and type(f) is {"common_similarity": SeparablePredictor,
                                                    "independent": PerOutputPredictor}[family]
    assert [fld.name for fld in dataclasses.fields(f)] == FIELDS
    assert f.dtype == "float64" and f.n_features == 3 and f.n_outputs == 2
    width_shape = {"common_similarity": (), "independent": (2,)}[family]
    assert f.kernel.sigma.shape == width_shape  # the width leaf: one, or one per output
    with jax.enable_x64(True):
        F = jax.jit(lambda model, x: model(x))(f, X[:6])
        np.testing.assert_allclose(F, dense_prediction(f, X[:6]), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(F, model.predict(X[:6]), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(f(X[0]), F[0], rtol=1e-12, atol=1e-12)  # one (p,) input → (d,)


@pytest.mark.parametrize("family", ["common_similarity", "independent"])
def test_jacobian_at_one_input_matches_central_finite_differences(family):
    X, model = fitted(family)
    f = model.predictor()
    x, h = X[3], 1e-5
    with jax.enable_x64(True):
        J = np.asarray(jax.jit(jax.jacfwd(f))(x))
        columns = [(np.asarray(f(x + h * e)) - np.asarray(f(x - h * e))) / (2 * h) for e in np.eye(3)]
    assert J.shape == (2, 3)  # d × p
    np.testing.assert_allclose(J, np.stack(columns, 1), rtol=1e-6, atol=1e-8)


def test_gradients_through_the_leaves_match_closed_forms_and_finite_differences():
    X, model = fitted("common_similarity")
    f = model.predictor()
    Z = X[:5]
    with jax.enable_x64(True):
        g = jax.grad(lambda m: m(Z).sum())(f)
        # ∂/∂C Σ (K C A + b) = Kᵀ 1 1ᵀ Aᵀ; ∂/∂b = m · 1
        K = gaussian_gram(Z - np.asarray(f.input_offset), np.asarray(f.X_fit), float(f.kernel.sigma))
        expected = K.T @ np.ones((5, 2)) @ np.asarray(f.output_matrix).T
        np.testing.assert_allclose(g.coef, expected, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g.offset, [5.0, 5.0], rtol=1e-12)
        # the per-output widths: the same field name, differentiated against central differences
        _, per_output = fitted("independent")
        p = per_output.predictor()
        g = jax.grad(lambda m: m(Z).sum())(p).kernel.sigma
        h = 1e-6
        fd = [(p.__class__(PerOutputGaussian(p.kernel.sigma + h * e), *leaves)(Z).sum()
               - p.__class__(PerOutputGaussian(p.kernel.sigma - h * e), *leaves)(Z).sum()) / (2 * h)
              for e in np.eye(2) for leaves in [(p.X_fit, p.coef, p.output_matrix, p.offset, p.input_offset)]]
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
        np.testing.assert_array_equal(p.widths, p.kernel.sigma)  # the former field name, kept as a property


def test_per_output_gaussian_gives_one_gram_per_width_and_refuses_a_scalar():
    X, _ = data(6)
    K = PerOutputGaussian(jnp.array([0.5, 2.0]))(X[:4], X)
    for j, w in enumerate([0.5, 2.0]):
        np.testing.assert_allclose(K[j], gaussian_gram(X[:4], X, w), rtol=1e-5, atol=1e-6)
    with pytest.raises(ShapeError, match=r"sigma must be a \(d,\) vector"):
        PerOutputGaussian(1.0)
    with pytest.raises(ParameterError, match="sigma"):
        PerOutputGaussian(jnp.array([1.0, -1.0]))


def test_bad_inputs_are_refused_by_name_before_tracing():
    X, model = fitted("common_similarity")
    f = model.predictor()
    with jax.enable_x64(True), pytest.raises(ShapeError, match=r"X must have shape \(m, 3\) or \(3,\).*received shape \(4, 2\)"):
        jax.jit(lambda m, x: m(x))(f, X[:4, :2])
    with jax.enable_x64(True), pytest.raises(ShapeError, match=r"received shape \(2, 2, 3\)"):
        f(np.zeros((2, 2, 3)))
    with jax.enable_x64(True), pytest.raises(DTypeError, match="real numbers"):
        f(np.array([["a", "b", "c"]]))
    with pytest.raises(ParameterError, match="dtype must be 'float32' or 'float64'; received 'bfloat16'"):
        f.astype("bfloat16")
    with pytest.raises(ShapeError, match=r"coef must have shape \(30, ·\)"):
        SeparablePredictor(f.kernel, f.X_fit, f.coef[:5], f.output_matrix, f.offset)


def _truncation_warnings(record):
    return [str(w.message) for w in record if "truncated" in str(w.message) or "not available" in str(w.message)]


def test_float64_predictor_where_jax_computes_in_float32_refuses_by_name_and_casts_on_request():
    X, model = fitted("independent")
    f64 = model.predictor()
    with jax.enable_x64(True):
        reference = np.asarray(f64(X[:5]))
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", False)
    try:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            for call in (lambda: f64(X[:5]), lambda: jax.jit(lambda m, x: m(x))(f64, X[:5]), lambda: jax.vmap(f64)(X),
                         lambda: jax.jacfwd(f64)(X[0]), lambda: jax.grad(lambda m: m(X).sum())(f64),
                         lambda: f64.astype("float64")):
                with pytest.raises(DTypeError, match=r"fitted in float64.*jax_enable_x64 is off.*astype\('float32'\)"):
                    call()
            # in a float64 block it computes in float64; astype('float32') converts it once, explicitly
            with jax.enable_x64(True):
                inside = jax.jit(lambda m, x: m(x))(f64, X[:5])
            f32 = f64.astype("float32")
            F32 = jax.jit(lambda m, x: m(x))(f32, X[:5])
        assert _truncation_warnings(record) == []
        assert inside.dtype == jnp.float64 and f32.dtype == "float32" and F32.dtype == jnp.float32
        assert all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(f32))
        np.testing.assert_allclose(inside, reference, rtol=1e-12, atol=1e-12)
        scale = np.abs(np.asarray(f64.coef)).sum(0).max() + np.abs(reference).max()  # the sums' size
        np.testing.assert_allclose(F32, reference, rtol=0, atol=1e-5 * scale)
    finally:
        jax.config.update("jax_enable_x64", previous)


def test_float32_predictor_computes_in_float32_in_any_process():
    X, model = fitted("common_similarity", dtype="float32")
    f = model.predictor()
    assert f.dtype == "float32" and all(leaf.dtype == jnp.float32 for leaf in jax.tree.leaves(f))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        F = jax.jit(lambda m, x: m(x))(f, X[:5])  # float64 inputs under x64 are cast to float32
    assert _truncation_warnings(record) == [] and F.dtype == jnp.float32
    np.testing.assert_allclose(F, model.predict(X[:5]), rtol=1e-5, atol=1e-5)
    if X64:
        np.testing.assert_allclose(f.astype("float64")(X[:5]), dense_prediction(f, X[:5]), rtol=1e-10, atol=1e-10)
