"""The README's main job runs end to end on bundled data."""

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
import pytest

from jaxmtl import VectorValuedRegressor
from jaxmtl.demo import main
from jaxmtl.errors import ParameterError


def test_default_demo_is_the_school_protocol(capsys):
    result = main([])
    out = capsys.readouterr().out
    assert "School" in out and "explained variance" in out
    # one split of [BRBV11] §7.2; the paper reports 31 ± 3 % over 10 splits
    assert 0.25 < result["explained_variance"] < 0.45
    assert 0.0 <= result["omega"] <= 1.0 and 1 <= result["param"] <= 150


def test_demo_runs_on_a_bundled_mulan_set(capsys):
    result = main(["--data", "slump"])
    out = capsys.readouterr().out
    assert "test R^2" in out and "selected" in out
    assert np.isfinite(result["test_aRRMSE"]) and result["test_aRRMSE"] < 1.0


def test_predefined_validation_mask_is_used():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    Y = np.sin(X[:, :1])
    mask = np.arange(30) < 20
    a = VectorValuedRegressor(selection=mask, n_steps=30, omegas=[0.0]).fit(X, Y)
    b = VectorValuedRegressor(selection=mask[None, :], n_steps=30, omegas=[0.0]).fit(X, Y)
    np.testing.assert_array_equal(a.cv_scores_, b.cv_scores_)
    with pytest.raises(ParameterError, match="boolean"):
        VectorValuedRegressor(selection=np.arange(30)).fit(X, Y)
    with pytest.raises(ParameterError, match="training"):
        VectorValuedRegressor(selection=np.ones(30, bool)).fit(X, Y)
