"""The estimators' ``dtype``: float64 or float32 computations whatever JAX's global setting."""

import jax
import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge

from jaxmtl import Gaussian, MultiClassClassifier, Tikhonov, VectorValuedRegressor
from jaxmtl.errors import ParameterError


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


def test_float32_in_a_float64_session():
    X, y = data()[0], (data()[1][:, 0] > 0).astype(int)
    model = MultiClassClassifier(kernel=Gaussian(1.0), n_steps=20, dtype="float32").fit(X, y)
    assert jax.config.jax_enable_x64
    assert model.coef_.dtype == np.float32
    assert model.decision_function(X).dtype == np.float32
    assert model.score(X, y) > 0.9


@pytest.mark.parametrize("bad", ["float16", "int32", 3, "double precision"])
def test_a_bad_dtype_is_refused_by_name(bad):
    X, Y = data(10)
    with pytest.raises(ParameterError, match="dtype must be None, 'float32' or 'float64'"):
        VectorValuedRegressor(dtype=bad).fit(X, Y)
