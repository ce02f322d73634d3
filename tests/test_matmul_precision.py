"""Reduced-precision matrix products (``matmul_precision``), emulated on the CPU.

A CPU multiplies float32 matrices in full precision whatever is asked, so TF32 (10 mantissa bits)
and bfloat16 (7 bits) products are emulated (:func:`jaxmtl._emulate.emulated_products`: operands
rounded, as tensor cores do). References: float64 fits of the same estimator (``dtype='float64'``)
and NumPy arithmetic for the rounding itself. Runs in both precision runs; the fits use
``dtype=`` so they compute in float32 (the precision whose products are reduced) in either.
"""

import contextlib
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from _estimators import NAMES, fit_data, make
from jaxmtl import MultiClassClassifier, VectorValuedRegressor
from jaxmtl._emulate import MANTISSA_BITS, emulated_products, round_mantissa
from jaxmtl.datasets import load_ida, load_mulan
from jaxmtl.errors import ParameterError
from jaxmtl.kernels.scalar import squared_distances
from jaxmtl.models._precision import REDUCED_PRODUCTS_MARGIN, relative_regularisation

# what reduced products promise where the library does not warn: the selected model's test error
# rate within this factor of float64's, plus one test point in ten
REDUCED_ERROR_FACTOR = 1.1
REDUCED_ERROR_ATOL = 0.1


def numpy_round(x, bits):
    """Reference rounding to ``bits`` mantissa bits in float64 arithmetic (ties to even)."""
    m, e = np.frexp(np.asarray(x, np.float64))  # x = m·2^e, 0.5 <= |m| < 1: m holds 24 bits in float32
    return np.ldexp(np.round(m * 2.0 ** (bits + 1)) / 2.0 ** (bits + 1), e).astype(np.float32)


@pytest.mark.parametrize("bits", sorted(MANTISSA_BITS.values()))
def test_rounding_matches_a_float64_reference(bits):
    x = np.random.default_rng(0).normal(scale=100.0, size=2000).astype(np.float32)
    x[:2] = [1.0 + 2.0 ** -(bits + 1), 1.0 + 3 * 2.0 ** -(bits + 1)]  # ties: to even, down then up
    np.testing.assert_array_equal(np.asarray(round_mantissa(jnp.asarray(x), bits)), numpy_round(x, bits))


def test_emulation_rounds_reduced_products_only():
    rng = np.random.default_rng(1)
    A, B = (jnp.asarray(rng.normal(size=(30, 8)), jnp.float32) for _ in range(2))
    exact = np.asarray(A, np.float64) @ np.asarray(B, np.float64).T
    tf32 = numpy_round(A, 10).astype(np.float64) @ numpy_round(B, 10).astype(np.float64).T
    with emulated_products(10):
        reduced = np.asarray(jax.jit(lambda a, b: jnp.matmul(a, b.T, precision="high"))(A, B))
        full = np.asarray(jax.jit(lambda a, b: jnp.matmul(a, b.T, precision="highest"))(A, B))
        d2 = np.asarray(jax.jit(squared_distances)(A, B))
    np.testing.assert_allclose(reduced, tf32, rtol=0, atol=1e-5)
    assert np.abs(reduced - exact).max() > 1e-3  # the emulation does change reduced products
    np.testing.assert_allclose(full, exact, rtol=0, atol=1e-5)
    ref = ((np.asarray(A, np.float64)[:, None] - np.asarray(B, np.float64)[None]) ** 2).sum(-1)
    np.testing.assert_allclose(d2, ref, rtol=1e-5)  # Gram evaluation always in full precision


@pytest.mark.parametrize("bad", ["tf16", "HIGHEST", 3, ("high",)])
def test_a_bad_matmul_precision_is_refused_by_name(bad):
    X, y = fit_data("VectorValuedRegressor", n=10)[0]
    with pytest.raises(ParameterError, match=r"matmul_precision must be one of None, 'highest'.*; received "
                                             + repr(bad).replace("(", r"\(").replace(")", r"\)")):
        VectorValuedRegressor(matmul_precision=bad).fit(X, y)


@pytest.mark.parametrize("name", NAMES)
def test_every_estimator_takes_matmul_precision_and_refuses_a_bad_one_before_fitting(name):
    fit_args, _ = fit_data(name, n=12)
    assert make(name).get_params()["matmul_precision"] is None
    with pytest.raises(ParameterError, match=r"matmul_precision must be .*; received 'fp8'"):
        make(name, matmul_precision="fp8").fit(*fit_args)
    assert not hasattr(make(name), "coef_")


def _fit(make_model, X, y, Xt, bits=None, **params):
    """Predictions on Xt and the fitted model, under emulated products of ``bits`` bits (or none)."""
    with emulated_products(bits) if bits else contextlib.nullcontext():
        model = make_model(**params).fit(X, y)
        return model.predict(Xt), model


def heart():
    s = load_ida("heart", split=0)
    return s.X_train, s.y_train, s.X_test, s.y_test


def small_classifier(**params):
    return MultiClassClassifier(n_steps=60, width_factors=(0.5, 1.0, 2.0), n_folds=3, **params)


def test_the_default_keeps_full_products_under_tf32():
    X, y, Xt, _ = heart()
    plain, _ = _fit(small_classifier, X, y, Xt, dtype="float32")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*matmul_precision")
        emulated, _ = _fit(small_classifier, X, y, Xt, bits=10, dtype="float32")
    np.testing.assert_array_equal(emulated, plain)


@pytest.mark.parametrize("setting", ["tf32", "bfloat16"])
def test_reduced_products_keep_the_test_error_on_noisy_data(setting):
    """IDA heart (noisy labels): the selected regularisation is far above the products' roundoff,
    the library does not warn, and the test error rate stays within the stated factor of float64's."""
    X, y, Xt, yt = heart()
    ref, _ = _fit(small_classifier, X, y, Xt, dtype="float64")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*matmul_precision")
        pred, model = _fit(small_classifier, X, y, Xt, bits=MANTISSA_BITS[setting], dtype="float32",
                           matmul_precision=setting)
    bits = MANTISSA_BITS[setting]
    assert relative_regularisation(model) >= REDUCED_PRODUCTS_MARGIN * 2.0 ** -(bits + 1)
    assert np.mean(pred != yt) <= REDUCED_ERROR_FACTOR * np.mean(ref != yt) + REDUCED_ERROR_ATOL


def slump():
    d = load_mulan("slump")
    idx = np.random.default_rng(0).permutation(len(d.X))
    return d.X[idx[:70]], d.Y[idx[:70]], d.X[idx[70:]], d.Y[idx[70:]]


@pytest.mark.parametrize("params", [{"filter": "tikhonov", "lambdas": np.geomspace(1e-7, 1.0, 15)},
                                    {"filter": "nu_method"}])
def test_reduced_products_warn_where_the_model_needs_full_ones(params):
    """Slump (three concrete strengths from seven mixture proportions, little noise) selects
    λ ≈ 1e-6 or a ν-method path of hundreds of steps in float64; with TF32 products the library
    warns, naming the settings that fix it. (A Landweber path selects fewer steps under TF32, at
    ρ above TF32's roundoff, and keeps float64's test error on these data: no warning.)"""
    X, Y, Xt, Yt = slump()
    model = lambda **kw: VectorValuedRegressor(**params, **kw)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the grid-edge warnings of float64's choice
        ref, full = _fit(model, X, Y, Xt, dtype="float64")
    assert relative_regularisation(full) < 2.0 ** -11  # the float64 model is beyond TF32
    with pytest.warns(UserWarning, match=r"matmul_precision='tf32'.*matmul_precision='highest'.*dtype='float64'"):
        pred, _ = _fit(model, X, Y, Xt, bits=10, dtype="float32", matmul_precision="tf32")
    assert np.isfinite(pred).all() and np.mean((pred - Yt) ** 2) > 0.9 * np.mean((ref - Yt) ** 2)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*matmul_precision")  # float64 products are not reduced
        _fit(model, X, Y, Xt, bits=10, dtype="float64", matmul_precision="tf32")


@pytest.mark.skipif(not jax.config.jax_enable_x64, reason="the script fixes its dtypes: once, in the float64 run")
def test_the_precision_benchmark_quick_mode_records_its_figures(tmp_path):
    """``benchmarks/precision.py --quick``: float32's error within FLOAT32_PROMISE of float64's,
    reduced products within the stated factor unless the library warned."""
    from conftest import FLOAT32_PROMISE

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(root / "benchmarks" / "precision.py"), "--quick"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((tmp_path / "precision_quick.json").read_text())
    assert {"machine", "versions", "dtype", "command", "rows"} <= set(result)
    assert [r["estimator"] for r in result["rows"]] == ["VectorValuedRegressor", "MultiClassClassifier"]
    for r in result["rows"]:
        assert r["error_float32"] <= FLOAT32_PROMISE["error_factor"] * r["error_float64"] + FLOAT32_PROMISE["error_atol"]
        for s in ("tf32", "bfloat16"):
            assert r[f"warned_{s}"] or r[f"error_{s}"] <= REDUCED_ERROR_FACTOR * r["error_float64"] + REDUCED_ERROR_ATOL
