"""ApproximateKernelRegressor(mesh=...) in one process: the multi-process route (rows read from
.npy files into a global array, moments and statistics by collectives) fits the model the
in-memory route fits. Two processes against one: tests/test_distributed.py."""

import numpy as np
import pytest

from jaxmtl import ApproximateKernelRegressor, VectorValuedRegressor
from jaxmtl.distributed import global_mesh
from jaxmtl.errors import ParameterError, ShapeError


def data(n=150, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) + 100.0  # an offset: the input shift must be the same in both routes
    Y = np.c_[np.sin(X[:, 0]) + 0.1 * rng.normal(size=n), 20 * np.cos(X[:, 1]) + 3]
    return X, Y


@pytest.mark.parametrize("kwargs", [{"n_components": 20}, {"approximation": "random_features", "n_components": 20},
                                    pytest.param({"n_components": 20, "filter": "nu_method", "omegas": [0.0, 0.5]},
                                                 marks=pytest.mark.long)])
def test_mesh_route_on_files_equals_the_in_memory_fit(tmp_path, kwargs):
    X, Y = data()
    np.save(tmp_path / "X.npy", X)
    np.save(tmp_path / "Y.npy", Y)
    ref = ApproximateKernelRegressor(**kwargs).fit(X, Y)
    got = ApproximateKernelRegressor(mesh=global_mesh(), **kwargs).fit(str(tmp_path / "X.npy"),
                                                                      np.load(tmp_path / "Y.npy", mmap_mode="r"))
    assert got.best_params_["kernel_width"] == ref.best_params_["kernel_width"]
    assert got.best_params_["param"] == ref.best_params_["param"]
    np.testing.assert_allclose(got.y_mean_, ref.y_mean_, rtol=1e-5)
    np.testing.assert_allclose(got.y_scale_, ref.y_scale_, rtol=1e-5)
    np.testing.assert_allclose(got._input_offset_, ref._input_offset_)
    Xt = X[:25] + 0.05
    scale = np.abs(ref.predict(Xt)).max()
    np.testing.assert_allclose(got.predict(Xt), ref.predict(Xt), atol=1e-5 * scale)
    np.save(tmp_path / "Xt.npy", Xt)
    np.testing.assert_allclose(got.predict(str(tmp_path / "Xt.npy")), ref.predict(Xt), atol=1e-5 * scale)


@pytest.mark.long
def test_mesh_route_one_output_and_no_intercept():
    X, Y = data(120)
    ref = ApproximateKernelRegressor(n_components=30, fit_intercept=False).fit(X, Y[:, 1])
    got = ApproximateKernelRegressor(n_components=30, fit_intercept=False, mesh=global_mesh()).fit(X, Y[:, 1])
    assert got.predict(X[:5]).shape == (5,)
    assert np.all(got.y_mean_ == 0)
    np.testing.assert_allclose(got.predict(X[:5]), ref.predict(X[:5]), rtol=1e-4)


def test_mesh_route_refuses_what_needs_every_row_in_one_process_by_name():
    X, Y = data(60)
    with pytest.raises(ParameterError, match="sampling must be 'uniform' with mesh="):
        ApproximateKernelRegressor(n_components=20, sampling="leverage", mesh=global_mesh()).fit(X, Y)
    with pytest.raises(ParameterError, match="mesh must be a jax.sharding.Mesh"):
        ApproximateKernelRegressor(mesh="rows").fit(X, Y)
    with pytest.raises(ShapeError, match="y must have shape"):
        ApproximateKernelRegressor(mesh=global_mesh()).fit(X, Y[:-1])
    model = ApproximateKernelRegressor(n_components=20, mesh=global_mesh()).fit(X, Y)
    before = model.predict(X[:3])
    Xbad = X.copy()
    Xbad[7, 1] = np.inf
    with pytest.raises(ValueError, match="X"):
        model.fit(Xbad, Y)
    np.testing.assert_array_equal(model.predict(X[:3]), before)  # the failed fit left the earlier one


def test_vector_valued_regressor_with_an_approximation_takes_the_mesh():
    X, Y = data(100)
    kwargs = {"approximation": "nystrom", "n_components": 20, "n_steps": 40}
    ref = VectorValuedRegressor(**kwargs).fit(X, Y)
    got = VectorValuedRegressor(mesh=global_mesh(), **kwargs).fit(X, Y)
    assert got.best_params_["param"] == ref.best_params_["param"] and got.family_ == ref.family_
    np.testing.assert_allclose(got.predict(X[:5]), ref.predict(X[:5]), rtol=1e-4, atol=1e-4)
    with pytest.raises(ParameterError, match="mesh= spreads the rows of an approximate fit"):
        VectorValuedRegressor(mesh=global_mesh()).fit(X, Y)


def test_mesh_route_reads_the_rows_of_pandas_objects():
    pd = pytest.importorskip("pandas")
    X, Y = data(80)
    frame, series = pd.DataFrame(X, columns=["a", "b", "c"]), pd.Series(Y[:, 0])
    ref = ApproximateKernelRegressor(n_components=20).fit(X, Y[:, 0])
    got = ApproximateKernelRegressor(n_components=20, mesh=global_mesh()).fit(frame, series)  # [] selects columns
    np.testing.assert_allclose(got.predict(X[:5]), ref.predict(X[:5]), rtol=1e-4, atol=1e-6)


def test_rows_helpers_refuse_traced_arguments_by_name():
    import jax

    from jaxmtl.distributed.mesh import RowLayout
    from jaxmtl.distributed.rows import device_blocks, gather_sum
    from jaxmtl.errors import TracedArgumentError

    layout = RowLayout.of(4, global_mesh())
    with pytest.raises(TracedArgumentError, match="groups must be a concrete value"):
        jax.jit(lambda g: device_blocks(g, layout, 2, 2)[0])(np.array([0, 1, 0, 1]))
    with pytest.raises(TracedArgumentError, match="x must be a concrete value"):
        jax.jit(gather_sum)(np.ones(2))
    from jaxmtl.errors import ParameterError
    from jaxmtl.kernels import median_heuristic, median_heuristic_rows

    with pytest.raises(TracedArgumentError, match="n must be a concrete value"):
        jax.jit(median_heuristic_rows)(5)
    with pytest.raises(ParameterError, match="n must be an integer >= 0; received -1"):
        median_heuristic_rows(-1)
    X = np.random.default_rng(0).normal(size=(50, 2))  # the rows the median heuristic reads
    assert median_heuristic(X[median_heuristic_rows(50, 7)]) == median_heuristic(X, 7)


def test_mesh_route_refuses_its_settings_before_reading_every_row(monkeypatch):
    from jaxmtl.distributed import rows

    def no_pass(*args, **kwargs):
        raise AssertionError("the rows were read before the settings were checked")

    monkeypatch.setattr(rows.ShardedRows, "__init__", no_pass)
    X, Y = data(60)
    with pytest.raises(ParameterError, match="sampling must be 'uniform' with mesh="):
        ApproximateKernelRegressor(n_components=20, sampling="leverage", mesh=global_mesh()).fit(X, Y)
    with pytest.raises(ParameterError, match="n_components"):
        ApproximateKernelRegressor(n_components=1000, mesh=global_mesh()).fit(X, Y)
