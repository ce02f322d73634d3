"""The reliability report separates inputs rejected as documented from valid inputs rejected.

``scripts/reliability_report.py`` counts a library error on an input the documentation accepts
as "rejected though valid" (a must-be-zero figure), never as a documented rejection.
"""

import jax

jax.config.update("jax_enable_x64", True)

import importlib.util
import os
import sys

import numpy as np
import pytest

from jaxmtl.errors import ParameterError

_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts",
                     "reliability_report.py")
_spec = importlib.util.spec_from_file_location("reliability_report_valid", _PATH)
report = importlib.util.module_from_spec(_spec)
sys.modules["reliability_report_valid"] = report
_spec.loader.exec_module(report)


class _Rejecting:
    """An estimator that wrongly rejects a valid input."""

    def fit(self, X, Y):
        raise ParameterError("X must be float64; received float32.")


class _Accepting:
    def fit(self, X, Y):
        self.mean_ = np.mean(Y)
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)


def test_a_valid_input_rejected_is_counted_and_fails_the_report():
    X, Y = np.ones((4, 2), np.float32), np.arange(4.0)
    tally = report.must_accept([("rejecting", _Rejecting, (X, Y), (X,)), ("accepting", _Accepting, (X, Y), (X,))])
    assert tally.rejected_valid == 1 and tally.documented_errors == 0
    assert tally.succeeded == 2  # the accepting estimator's fit and predict
    assert not tally.ok and "valid input rejected" in tally.problems[0][1]
    assert not report.Tally(rejected_valid=1).ok and report.Tally(documented_errors=3).ok


def test_an_invalid_input_rejected_counts_as_documented():
    tally = report.Tally()
    report._attempt(tally, "invalid", lambda: _Rejecting().fit(None, None))
    assert tally.documented_errors == 1 and tally.rejected_valid == 0 and tally.ok


def test_valid_inputs_of_every_estimator_family_are_accepted():
    cases = report._valid_cases()
    names = ("VectorValuedRegressor: float32 X", "VectorValuedRegressor: rank-one PSD output 11ᵀ",
             "VectorValuedRegressor: 2 folds on 6 samples",
             "MultiClassClassifier: string labels, simplex", "MultiTaskRegressor: string tasks",
             "VectorFieldRegressor: kind 'div_curl'")
    chosen = [c for c in cases if c[0] in names]
    assert len(chosen) == len(names) and len(cases) >= 30
    tally = report.must_accept(chosen)
    assert tally.rejected_valid == 0 and tally.unexpected == 0 and tally.non_finite == 0, tally.problems
    assert tally.succeeded == 2 * len(names)


@pytest.mark.slow
def test_every_valid_input_of_the_list_is_accepted():
    tally = report.must_accept()
    assert tally.rejected_valid == 0 and tally.unexpected == 0 and tally.non_finite == 0, tally.problems
    assert tally.succeeded == 2 * len(report._valid_cases())
