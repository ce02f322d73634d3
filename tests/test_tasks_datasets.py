"""The bundled multi-task sets beside School: shapes, tasks, and the file recorded in the provenance."""

import gzip
import hashlib
from importlib import resources

import numpy as np
import pytest

from jaxmtl.datasets import load_computer_survey, load_parkinsons
from jaxmtl.errors import ParameterError


def test_parkinsons_file_is_the_recorded_one_and_loads_as_tasks_and_outputs():
    raw = gzip.decompress((resources.files("jaxmtl.datasets") / "parkinsons_updrs.csv.gz").read_bytes())
    assert hashlib.md5(raw).hexdigest() == "d3a39dca924ada1fad108b1aa17d3515"
    d = load_parkinsons()
    assert d.X.shape == (5875, 19) and d.y.shape == (5875,)
    counts = np.bincount(d.tasks)[1:]
    assert len(counts) == 42 and counts.min() == 101 and counts.max() == 168
    assert "total_UPDRS" not in d.feature_names and "test_time" in d.feature_names
    first = raw.decode().splitlines()[1].split(",")
    np.testing.assert_allclose(d.y[0], float(first[5]))
    both = load_parkinsons(outputs=True)
    np.testing.assert_array_equal(both.y[:, 1], d.y)
    np.testing.assert_array_equal(both.y[:, 0], load_parkinsons("motor_UPDRS").y)
    with pytest.raises(ParameterError, match="target must be one of"):
        load_parkinsons("UPDRS")


def test_computer_survey_splits():
    train, test, everything = (load_computer_survey(s) for s in ("train", "test", "all"))
    assert train.X.shape == (2880, 13) and test.X.shape == (720, 13) and everything.X.shape == (3600, 13)
    assert np.all(np.bincount(train.tasks) == 16) and np.all(np.bincount(test.tasks) == 4)
    assert set(np.unique(train.X)) == {-1.0, 1.0} and train.y.min() == 0 and train.y.max() == 10
    with pytest.raises(ParameterError, match="split must be"):
        load_computer_survey("validation")
