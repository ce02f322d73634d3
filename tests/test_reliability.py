"""Reliability: fuzzed malformed inputs, degenerate data, determinism, the error contract.

The suites live in ``scripts/reliability_report.py`` (which runs them with a larger budget);
here they run with budgets small enough for CI.
"""

import jax

jax.config.update("jax_enable_x64", True)

import inspect

import numpy as np
import pytest
from _report import load_report

import jaxmtl
from jaxmtl import errors

report = load_report()


def _show(tally):
    return "\n".join(f"{case}: {detail}" for case, detail in tally.problems)


@pytest.mark.parametrize("seed", [11])
def test_fuzz_every_call_succeeds_finitely_or_raises_a_documented_error(seed):
    tally = report.fuzz(budget=15, seed=seed)
    assert tally.tried >= 15
    assert tally.unexpected == 0, _show(tally)
    assert tally.non_finite == 0, _show(tally)
    assert tally.documented_errors > 0 and tally.succeeded > 0


def test_degenerate_data_behaves_as_documented():
    tally = report.degenerate(fast=True)
    assert tally.ok, _show(tally)
    assert tally.tried >= 40


def test_persistence_suite_round_trips_and_rejects_damage():
    tally = report.persistence(n_flips=6, seed=1, fast=True)
    assert tally.round_trips >= 3 and tally.round_trips_identical == tally.round_trips, _show(tally)
    assert tally.corrupted > 30 and tally.corrupted_rejected == tally.corrupted, _show(tally)
    assert tally.unexpected == 0, _show(tally)


def test_report_script_exit_status_reflects_must_be_zero_figures(capsys, monkeypatch):
    bad = report.Tally(unexpected=1, problems=[("case", "boom")])
    assert not bad.ok
    assert not report.Tally(round_trips=2, round_trips_identical=1).ok
    assert not report.Tally(corrupted=2, corrupted_rejected=1).ok
    assert report.Tally(tried=3, succeeded=3).ok
    monkeypatch.setattr(report, "fuzz", lambda budget, seed: bad)
    # the valid-inputs suite (every estimator family fitted: tests/test_reliability_must_accept.py) is
    # not what this test checks: the exit status and the printed must-be-zero figures are
    monkeypatch.setattr(report, "must_accept", lambda: report.Tally(tried=1, succeeded=1))
    monkeypatch.setattr(report, "degenerate", lambda: report.Tally())
    monkeypatch.setattr(report, "persistence", lambda flips, seed: report.Tally())
    monkeypatch.setattr(report, "hostile", lambda n, seed: {})
    x64 = bool(jax.config.jax_enable_x64)
    try:
        assert report.main(["--budget", "1", "--x64"]) == 1
    finally:
        jax.config.update("jax_enable_x64", x64)
    out = capsys.readouterr().out
    assert "unexpected exceptions        1" in out and "RESULT: FAIL" in out


# --------------------------------------------------------------------------- the error contract
def test_every_library_error_is_a_jaxmtl_error_and_a_builtin():
    for name in errors.__all__:
        cls = getattr(errors, name)
        if issubclass(cls, Warning):  # GridEdgeWarning: a warning category, not an error
            assert issubclass(cls, UserWarning), name
            continue
        assert issubclass(cls, errors.JaxmtlError)
        if cls is not errors.JaxmtlError:
            # DistributedError: a lost process, not a bad input, is a RuntimeError
            assert issubclass(cls, (ValueError, TypeError, ArithmeticError, RuntimeError)), name
    assert issubclass(errors.NotFittedError, AttributeError)


@pytest.mark.parametrize("call, exc, words", [
    (lambda: jaxmtl.VectorValuedRegressor().fit(np.ones((4, 2, 2)), np.ones(4)), errors.ShapeError,
     ["rank 1 or 2", "(4, 2, 2)"]),
    (lambda: jaxmtl.VectorValuedRegressor().fit(np.ones((4, 2)), np.ones(3)), errors.ShapeError,
     ["expected 4 rows", "(3, 1)"]),
    (lambda: jaxmtl.VectorValuedRegressor().fit(np.array([[np.nan]] * 4), np.ones(4)), errors.NonFiniteError,
     ["4 NaN or infinite"]),
    (lambda: jaxmtl.VectorValuedRegressor().fit(np.array([["a"]] * 4), np.ones(4)), errors.DTypeError,
     ["real numbers", "<U1"]),
    (lambda: jaxmtl.VectorValuedRegressor(validation_fraction=1.5, selection="holdout").fit(
        np.eye(4), np.ones(4)), errors.ParameterError, ["(0, 1)", "1.5"]),
    (lambda: jaxmtl.VectorValuedRegressor(random_state=-3, n_folds=2).fit(np.eye(4), np.ones(4)), errors.ParameterError,
     ["non-negative integer", "-3"]),
    (lambda: jaxmtl.VectorValuedRegressor(fit_intercept="yes", n_folds=2).fit(np.eye(4), np.ones(4)),
     errors.ParameterError, ["True or False", "'yes'"]),
    (lambda: jaxmtl.MultiClassClassifier().fit(np.eye(4), ["a"] * 4), errors.LabelError, ["single class", "'a'"]),
    (lambda: jaxmtl.VectorValuedRegressor(output=[[1.0, 3.0], [3.0, 1.0]]).fit(np.eye(4), np.ones((4, 2))),
     errors.OutputMatrixError, ["positive semidefinite", "-2"]),
    (lambda: jaxmtl.NuMethod(1e9), errors.ParameterError, ["(0, 1e6]"]),
])
def test_messages_say_what_was_received_and_what_is_expected(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_float16_and_integer_inputs_are_promoted_explicitly():
    from jaxmtl._checks import as_float_array

    assert as_float_array(np.ones(3, np.float16), "x").dtype == np.float64
    assert as_float_array(np.arange(3), "x").dtype == np.float64
    assert as_float_array(np.ones(3, np.float32), "x").dtype == np.float32
    assert as_float_array([True, False], "x").dtype == np.float64


# --------------------------------------------------------------------------- determinism
def test_fits_are_bit_identical_on_cpu():
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(20, 2)), rng.normal(size=(20, 2))
    runs = [jaxmtl.VectorValuedRegressor(n_steps=15, n_folds=3).fit(X, Y) for _ in range(2)]
    np.testing.assert_array_equal(np.asarray(runs[0].coef_), np.asarray(runs[1].coef_))
    np.testing.assert_array_equal(runs[0].cv_scores_, runs[1].cv_scores_)
    np.testing.assert_array_equal(runs[0].predict(X), runs[1].predict(X))


def test_max_eigenvalue_is_deterministic_for_a_fixed_key():
    import jax.numpy as jnp

    from jaxmtl.operators import max_eigenvalue

    K = jnp.asarray(np.random.default_rng(0).normal(size=(8, 8)))
    K = K @ K.T
    key = jax.random.PRNGKey(3)
    a = max_eigenvalue(lambda c: K @ c, (8, 1), K.dtype, key=key)
    b = max_eigenvalue(lambda c: K @ c, (8, 1), K.dtype, key=key)
    assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


# --------------------------------------------------------------------------- documented tolerances
def test_float32_and_float64_agree_within_documented_tolerance():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 3))
    Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1])]
    kw = dict(kernel=jaxmtl.Gaussian(1.5), filter="tikhonov", lambdas=[1e-3], output="independent")
    p64 = jaxmtl.VectorValuedRegressor(**kw).fit(X, Y).predict(X)
    p32 = jaxmtl.VectorValuedRegressor(**kw).fit(X.astype(np.float32), Y.astype(np.float32)).predict(
        X.astype(np.float32))
    assert p32.dtype == np.float64  # computed in float32, returned in scikit-learn's float64
    assert np.max(np.abs(p32 - p64)) <= 1e-3 * np.max(np.abs(p64))  # docs/errors.md


def test_signature_of_public_estimators_is_covered_by_the_fuzz():
    """Every public estimator class has a fuzzer (new ones must be added to the report)."""
    from jaxmtl.models._base import BaseEstimator

    public = {n for n in jaxmtl.__all__ if inspect.isclass(getattr(jaxmtl, n))
              and issubclass(getattr(jaxmtl, n), BaseEstimator)}
    source = inspect.getsource(report)
    missing = {n for n in public if f"import {n}" not in source and f", {n}" not in source}
    # Fuzzers not written yet for these; their own test files check every bad input they document
    # (tests/test_kernel_machine.py, tests/test_mixed_effect.py, tests/test_rls2.py). Listed, not hidden:
    # this list may only shrink.
    pending = {"KernelMachine", "KernelMachineClassifier", "MixedEffectRegressor", "RLS2Regressor",
               "RLS2Classifier"}
    assert not missing - pending, f"estimators without a fuzzer: {sorted(missing - pending)}"
