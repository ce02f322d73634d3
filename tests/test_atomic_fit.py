"""A failed ``fit`` leaves an earlier fit exactly as it was (every exported estimator)."""

import jax

jax.config.update("jax_enable_x64", True)

import warnings

import equinox as eqx
import numpy as np
import pytest
from _report import load_report

from jaxmtl.errors import JaxmtlError
from jaxmtl.models._base import BaseEstimator

CASES = load_report().estimator_cases()


def _same(a, b) -> bool:
    """Exact equality of fitted attributes: arrays bit for bit, containers element-wise."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, eqx.Module):
        la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
        return type(a) is type(b) and _same(la, lb)
    if isinstance(a, BaseEstimator) or (hasattr(a, "__dict__") and not callable(a)):
        return type(a) is type(b) and _same(vars(a), vars(b))
    if isinstance(a, (np.ndarray, jax.Array)):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    return type(a) is type(b) and repr(a) == repr(b)


@pytest.mark.parametrize("name, make, fit_args, predict", CASES, ids=[c[0] for c in CASES])
def test_failed_refit_leaves_the_earlier_fit(name, make, fit_args, predict):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(24, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make().fit(*fit_args(X))
    before_state = {k: v for k, v in vars(model).items()}
    before = np.asarray(predict(model, X))
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(JaxmtlError):
        model.fit(*fit_args(bad))
    assert vars(model).keys() == before_state.keys()
    for key, value in before_state.items():
        assert _same(vars(model)[key], value), key
    np.testing.assert_array_equal(np.asarray(predict(model, X)), before)


class _Mutating(BaseEstimator):
    """Fits by mutating its attributes in place, deleting one and adding one, then fails."""

    def __init__(self, fail=False):
        self.fail = fail

    def fit(self, X):
        if hasattr(self, "coef_"):
            self.coef_ += 1.0
            self.history_.append("refit")
            self.nested_["seen"].append(len(X))
            del self.scale_
            self.extra_ = 1
        else:
            self.coef_, self.history_, self.nested_, self.scale_ = np.zeros(3), ["fit"], {"seen": []}, 2.0
        if self.fail:
            raise ValueError("late failure")
        return self


def test_rollback_is_exact_for_in_place_mutation_deletion_and_addition():
    model = _Mutating().fit([1, 2])
    model.fail = True
    with pytest.raises(ValueError, match="late failure"):
        model.fit([1, 2, 3])
    assert sorted(vars(model)) == ["coef_", "fail", "history_", "nested_", "scale_"]
    np.testing.assert_array_equal(model.coef_, np.zeros(3))
    assert model.history_ == ["fit"] and model.nested_ == {"seen": []} and model.scale_ == 2.0
    model.fail = False
    assert model.fit([1]).history_ == ["fit", "refit"]  # a successful refit still changes the state


def test_a_failure_on_the_first_fit_leaves_an_unfitted_estimator():
    model = _Mutating(fail=True)
    with pytest.raises(ValueError):
        model.fit([1])
    assert vars(model) == {"fail": True}
