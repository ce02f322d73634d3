"""Reduced-precision matrix products (``matmul_precision``), emulated on the CPU.

A CPU multiplies float32 matrices in full precision whatever is asked, so TF32 (10 mantissa bits)
and bfloat16 (7 bits) products are emulated (:func:`jaxmtl._emulate.emulated_products`: operands
rounded, as tensor cores do). References: float64 fits of the same estimator (``dtype='float64'``)
and NumPy arithmetic for the rounding itself. Every fit pins its precision with ``dtype=`` (float32,
the precision whose products are reduced; float64 for references), so the module computes the
same programs whatever the run's precision: it runs in the float64 run only (not in
``FLOAT32_MODULES``).
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

from _estimators import fit_data, make
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


# Every estimator refuses a bad matmul_precision before fitting: tests/test_precision.py (with dtype).


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


@pytest.fixture(scope="module")
def heart_float64_predictions():
    """The float64 reference on IDA heart, fitted once for both reduced settings."""
    X, y, Xt, _ = heart()
    return _fit(small_classifier, X, y, Xt, dtype="float64")[0]


@pytest.mark.parametrize("setting", ["tf32", "bfloat16"])
def test_reduced_products_keep_the_test_error_on_noisy_data(setting, heart_float64_predictions):
    """IDA heart (noisy labels): the selected regularisation is far above the products' roundoff,
    the library does not warn, and the test error rate stays within the stated factor of float64's."""
    X, y, Xt, yt = heart()
    ref = heart_float64_predictions
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
    ρ above TF32's roundoff, and keeps float64's test error on these data: no warning.) The default
    family selection picks the per-output family on these data (a width and a parameter per
    strength); it is fitted alone here, so that each of the three fits compiles one family."""
    X, Y, Xt, Yt = slump()
    model = lambda **kw: VectorValuedRegressor(family="independent", **params, **kw)  # noqa: E731
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


# ---- the estimators that are not spectral filters: their regularisation on the same scale ρ ----

# a regularisation small enough for ρ < bfloat16's 2⁻⁸ on fit_data(n=40) (ρ = 1/(C·n) for a
# Gaussian kernel machine, λ for RLS2 under the trace scaling, λ/(n·‖L‖₂) for the output kernel,
# λ/n for the mixed effects)
SMALL_REGULARISATION = {
    "KernelMachine": {"C": 100.0},
    "KernelMachineClassifier": {"C": 100.0},
    "RLS2Regressor": {"lam": 1e-4},
    "RLS2Classifier": {"lam": 1e-4},
    "OutputKernelRegressor": {"lambdas": (1e-3,)},
    "OutputKernelClassifier": {"lambdas": (1e-2,)},
    "MixedEffectRegressor": {"alpha": 0.5, "lam": 1e-2},
}


@pytest.mark.parametrize("name", sorted(SMALL_REGULARISATION))
def test_a_small_regularisation_warns_under_bfloat16_products_and_not_with_the_default(name):
    fit_args, _ = fit_data(name, n=40)
    limit = REDUCED_PRODUCTS_MARGIN * 2.0 ** -(MANTISSA_BITS["bfloat16"] + 1)
    params = {**SMALL_REGULARISATION[name], "dtype": "float32"}
    with emulated_products(MANTISSA_BITS["bfloat16"]), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the solvers' own (convergence, float32 conditioning)
        with pytest.warns(UserWarning, match=r"matmul_precision='bfloat16'.*matmul_precision='highest'"):
            make(name, matmul_precision="bfloat16", **params).fit(*fit_args)
        warnings.filterwarnings("error", message=".*matmul_precision")
        model = make(name, **params).fit(*fit_args)  # full products: no warning
    assert relative_regularisation(model) < limit


def _standardised(X):
    return (X - X.mean(0)) / X.std(0)


def test_relative_regularisation_of_the_kernel_machines_is_one_over_C_times_the_trace():
    """(K + I/C)c = y: ρ = 1/(C·Σᵢ K(xᵢ, xᵢ)); a linear kernel's diagonal is ‖xᵢ‖²."""
    from jaxmtl import Linear

    (X, Y), _ = fit_data("KernelMachine", n=30)
    model = make("KernelMachine", kernel=Linear(), C=2.0, dtype="float32").fit(X, Y)
    assert relative_regularisation(model) == pytest.approx(1.0 / (2.0 * np.sum(X ** 2)), rel=1e-5)
    (X, labels), _ = fit_data("KernelMachineClassifier", n=30)
    model = make("KernelMachineClassifier", C=0.5, dtype="float32").fit(X, labels)  # Gaussian: K(x, x) = 1
    assert relative_regularisation(model) == pytest.approx(1.0 / (0.5 * 30), rel=1e-6)


def test_relative_regularisation_of_rls2_is_lambda_over_the_trace_of_the_combined_kernel():
    """(𝐊(d) + λI)c = y with 𝐊(d) = Σₖ dₖ sₖ K̃ₖ: linear kernels on single standardised features
    without scaling have tr K̃ₖ = Σᵢ x̃ᵢₖ²; under the trace scaling sₖ tr K̃ₖ = 1 (one ρ per class
    one-versus-all, the smallest reported)."""
    (X, Y), _ = fit_data("RLS2Regressor", n=30)
    model = make("RLS2Regressor", scaling="none", lam=1e-3, dtype="float32").fit(X, Y)
    trace = np.einsum("k,ik->", np.asarray(model.d_, np.float64), _standardised(X) ** 2)
    assert relative_regularisation(model) == pytest.approx(1e-3 / trace, rel=1e-5)
    (X, labels), _ = fit_data("RLS2Classifier", n=30)
    model = make("RLS2Classifier", lam=1e-3, dtype="float32").fit(X, labels)
    assert model.d_.shape[0] == 3
    expected = np.min(1e-3 / np.asarray(model.d_, np.float64).sum(axis=1))
    assert relative_regularisation(model) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("name", ["OutputKernelRegressor", "OutputKernelClassifier"])
def test_relative_regularisation_of_the_output_kernel_is_lambda_over_its_norm_times_the_trace(name):
    """K C L + λC = Y is (L ⊗ K + λI) vec C = vec Y: ρ = λ / (λ_max(L)·Σᵢ K(xᵢ, xᵢ)), Gaussian K(x, x) = 1."""
    fit_args, _ = fit_data(name, n=30)
    model = make(name, lambdas=(0.05,), dtype="float32").fit(*fit_args)
    top = np.linalg.eigvalsh(np.asarray(model.output_kernel_, np.float64))[-1]
    assert relative_regularisation(model) == pytest.approx(0.05 / (top * 30), rel=1e-5)


def test_relative_regularisation_of_the_mixed_effects_is_lambda_over_the_weighted_trace():
    """(K + λW)c = y with W = diag(1/sᵢ): ρ = λ / Σᵢ sᵢ (α K̄(xᵢ, xᵢ) + (1 − α) K̃ᵗ(xᵢ, xᵢ)) over the
    examples as given (repeats, merged inside fit, count with their weights); linear K̄ (‖xᵢ‖² on
    the diagonal), task 0 Gaussian K̃ (1), task 1 linear."""
    from jaxmtl import Gaussian, Linear

    (X, y, tasks), _ = fit_data("MixedEffectRegressor", n=30)
    X, y, tasks = np.r_[X, X[:6]], np.r_[y, y[:6] + 0.01], np.r_[tasks, tasks[:6]]  # six repeats
    s = np.random.default_rng(2).uniform(0.5, 2.0, len(y))
    model = make("MixedEffectRegressor", alpha=0.3, lam=0.05, kernel=Linear(),
                 task_kernel={0: Gaussian(1.0), 1: Linear()}, dtype="float32").fit(X, y, tasks, sample_weight=s)
    assert len(model.X_fit_) == 30
    sq = np.sum(X ** 2, axis=1)
    expected = 0.05 / np.sum(s * (0.3 * sq + 0.7 * np.where(tasks == 1, sq, 1.0)))
    assert relative_regularisation(model) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("filt,expected", [("nu_method", 1 / 400.0**2), ("landweber", 1 / 400.0), ("tikhonov", 1e-4)])
def test_per_output_parameters_give_the_least_regularised_output(filt, expected):
    """One parameter per output (the per-output family): ρ is that of the least regularised output —
    the most steps of an iterative filter, the smallest λ of Tikhonov (kernel trace / n = 1 here)."""
    from types import SimpleNamespace

    from jaxmtl.filters import get_filter

    params = {"nu_method": [16, 400], "landweber": [16, 400], "tikhonov": [1e-2, 1e-4]}[filt]
    fitted = SimpleNamespace(filter_=get_filter(filt), best_params_={"param": np.array(params)}, kernel_=None)
    assert relative_regularisation(fitted) == pytest.approx(expected)
