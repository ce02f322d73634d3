"""The estimators' ``dtype``: float64 or float32 computations whatever JAX's global setting, and
scikit-learn's output dtypes whatever the precision inside."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge

from _estimators import NAMES, fit_data, make

from jaxmtl import Gaussian, MultiClassClassifier, Tikhonov, VectorValuedRegressor
from jaxmtl.errors import ParameterError
from jaxmtl.models._precision import in_working_precision, sklearn_output


def data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    return X, np.c_[np.sin(X[:, 0]), np.cos(X[:, 1])]


def test_float64_in_a_float32_session_equals_kernel_ridge_and_leaves_the_setting_alone():
    X, Y = data()
    lam = 1e-6
    model = VectorValuedRegressor(kernel=Gaussian(1.0), output="independent", filter=Tikhonov(),
                                  lambdas=[lam], fit_intercept=False, dtype="float64")
    with jax.enable_x64(False):
        model.fit(X, Y)
        assert not jax.config.jax_enable_x64
        F = model.predict(X[:7])
    assert model.coef_.dtype == np.float64 and F.dtype == np.float64
    ref = KernelRidge(alpha=len(X) * lam, kernel="rbf", gamma=0.5).fit(X, Y).predict(X[:7])
    np.testing.assert_allclose(F, ref, rtol=1e-8, atol=1e-10)  # beyond float32's reach at λ = 1e-6


def test_float32_in_a_float64_session_returns_float64_outputs():
    X, y = data()[0], (data()[1][:, 0] > 0).astype(int)
    with jax.enable_x64(True):
        kernel = Gaussian(1.0)  # a float64 kernel: the fit computes with it in float32
        model = MultiClassClassifier(kernel=kernel, n_steps=20, dtype="float32").fit(X, y)
        assert jax.config.jax_enable_x64
        proba = model.predict_proba(X)
    assert model.coef_.dtype == np.float32 and model.kernel_.sigma.dtype == np.float32
    assert model.decision_function(X).dtype == np.float64 and proba.dtype == np.float64
    assert model.predict(X).dtype == y.dtype
    score = model.score(X, y)
    assert type(score) is float and score > 0.9


@pytest.mark.parametrize("bad", ["float16", "int32", 3, "double precision"])
def test_a_bad_dtype_is_refused_by_name(bad):
    X, Y = data(10)
    with pytest.raises(ParameterError, match="dtype must be None, 'float32' or 'float64'"):
        VectorValuedRegressor(dtype=bad).fit(X, Y)


@pytest.mark.parametrize("setting, bad, message", [
    ("dtype", "bfloat16", r"dtype must be None, 'float32' or 'float64'; received 'bfloat16'"),
    ("matmul_precision", "fp8", r"matmul_precision must be .*; received 'fp8'"),
])
@pytest.mark.parametrize("name", NAMES)
def test_every_estimator_takes_the_precision_settings_and_refuses_a_bad_one_before_fitting(name, setting, bad,
                                                                                           message):
    fit_args, _ = fit_data(name, n=12)
    assert make(name).get_params()[setting] is None
    with pytest.raises(ParameterError, match=message):
        make(name, **{setting: bad}).fit(*fit_args)
    assert not hasattr(make(name), "coef_")


def test_outputs_follow_scikit_learn_conventions():
    f32 = jnp.asarray([0.5, 1.5], jnp.float32)
    assert sklearn_output(f32).dtype == np.float64 and isinstance(sklearn_output(f32), np.ndarray)
    labels = np.array(["a", "b"])
    assert sklearn_output(labels, labels=True) is labels
    floats = np.array([1.0, 2.0], np.float32)  # float labels keep classes_' dtype
    assert sklearn_output(floats, labels=True).dtype == np.float32
    assert sklearn_output(np.float32(0.25)) == 0.25 and type(sklearn_output(np.float32(0.25))) is float
    mean, std = sklearn_output((f32, f32))
    assert mean.dtype == std.dtype == np.float64
    assert sklearn_output(np.arange(3)).dtype == np.arange(3).dtype  # integers are left alone


def test_kernels_are_cast_to_the_working_precision():
    with jax.enable_x64(True):
        kernel = Gaussian(np.ones(2))
        assert kernel.sigma.dtype == np.float64
    with jax.enable_x64(False):
        assert in_working_precision(kernel).sigma.dtype == np.float32
