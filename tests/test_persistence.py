"""Persistence: portable save / load, identical predictions, damaged files rejected, no pickle."""

import jax

jax.config.update("jax_enable_x64", True)

import io
import json
import os
import pathlib
import zipfile

import numpy as np
import pytest

import jaxmtl
from jaxmtl import (Gaussian, Matern, MultiClassClassifier, MultiTaskRegressor, Polynomial, Tikhonov,
                    VectorFieldRegressor, VectorValuedRegressor)
from jaxmtl.io import persistence
from jaxmtl.errors import JaxmtlError, NotFittedError, PersistenceError

RNG = np.random.default_rng(0)
X = RNG.normal(size=(14, 2))
Y = np.c_[np.sin(X[:, 0]), X[:, 1]]


@pytest.fixture(scope="module")
def fitted():
    # the coupled family (one kernel_); the per-output family's round trip is in test_vector_valued_families
    return VectorValuedRegressor(n_steps=10, n_folds=2, family="common_similarity").fit(X, Y)


@pytest.fixture(scope="module")
def saved(fitted, tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "model.npz"
    fitted.save(path)
    return path


def test_round_trip_is_bit_identical(fitted, saved):
    loaded = jaxmtl.load(saved)
    assert type(loaded) is VectorValuedRegressor
    np.testing.assert_array_equal(loaded.predict(X), fitted.predict(X))
    np.testing.assert_array_equal(np.asarray(loaded.coef_), np.asarray(fitted.coef_))
    assert loaded.get_params().keys() == fitted.get_params().keys()
    assert loaded.best_params_["param"] == fitted.best_params_["param"]
    assert loaded.best_params_["kernel"].spec() == fitted.best_params_["kernel"].spec()
    assert loaded.score(X, Y) == fitted.score(X, Y)


def test_file_is_a_plain_npz_with_json_metadata(saved):
    with np.load(saved, allow_pickle=False) as z:
        meta = json.loads(z["__meta__"].tobytes().decode())
        assert all(z[k].dtype != object for k in z.files)
    assert meta["format"] == "jaxmtl-model" and meta["format_version"] == persistence.FORMAT_VERSION
    assert meta["library_version"] == jaxmtl.__version__
    assert meta["estimator"] == "jaxmtl.models.vector_valued.VectorValuedRegressor"
    assert meta["fitted"]["kernel_"]["__kernel__"]["kernel"] == "Gaussian"
    assert meta["fitted"]["best_params_"]["param"] >= 1
    assert len(meta["arrays_sha256"]) == 64


@pytest.mark.parametrize("make, fit_args, predict", [
    (lambda: MultiClassClassifier(n_steps=8, n_folds=2), (X, np.where(X[:, 0] > 0, "yes", "no")),
     lambda m: m.predict(X)),
    (lambda: MultiClassClassifier(n_steps=8, n_folds=2, coding=(1.0, -1.0)), (X, np.arange(14) % 3 * 2.0),
     lambda m: m.decision_function(X)),
    (lambda: VectorValuedRegressor(kernel=Matern(0.5, 2.0), filter=Tikhonov(), selection="gcv",
                                   output=np.array([[2.0, 1.0], [1.0, 2.0]])), (X, Y), lambda m: m.predict(X)),
    (lambda: VectorValuedRegressor(kernel=Polynomial(2, 0.5, 1.0), filter="iterated_tikhonov",
                                   selection="loo"), (X, Y[:, 0]), lambda m: m.predict(X)),
    (lambda: VectorValuedRegressor(n_steps=8, selection=np.arange(14) % 3 > 0), (X.astype(np.float32), Y),
     lambda m: m.predict(X)),
    (lambda: MultiTaskRegressor(n_steps=8), (X, Y[:, 0], np.arange(14) % 2),
     lambda m: m.predict(X, np.arange(14) % 2)),
    (lambda: VectorFieldRegressor(n_steps=8, n_folds=2), (X, Y), lambda m: np.stack(m.predict_parts(X))),
])
def test_every_estimator_round_trips(tmp_path, make, fit_args, predict):
    model = make().fit(*fit_args)
    path = tmp_path / "m.jaxmtl"  # any file name; no suffix is added
    jaxmtl.save(model, path)
    assert os.listdir(tmp_path) == ["m.jaxmtl"]  # the temporary file is gone
    loaded = jaxmtl.load(path)
    a, b = predict(model), predict(loaded)
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)


def test_saving_unfitted_or_foreign_objects_is_refused(tmp_path):
    with pytest.raises(NotFittedError):
        VectorValuedRegressor().save(tmp_path / "m.npz")
    with pytest.raises(PersistenceError, match="jaxmtl estimators"):
        jaxmtl.save(object(), tmp_path / "m.npz")
    assert not os.listdir(tmp_path)


def test_unportable_labels_and_kernels_are_refused_at_save(tmp_path):
    model = MultiClassClassifier(n_steps=5, n_folds=2).fit(X, [1 + 1j, 2 - 1j] * 7)  # complex labels
    with pytest.raises(PersistenceError, match="classes_.*complex|labels must be str, int, float or bool"):
        model.save(tmp_path / "m.npz")

    class MyGaussian(Gaussian):
        pass

    model = VectorValuedRegressor(kernel=MyGaussian(1.0), n_steps=5, n_folds=2).fit(X, Y)
    with pytest.raises(PersistenceError, match="not one of jaxmtl's kernels"):
        model.save(tmp_path / "m.npz")
    assert not os.listdir(tmp_path)


def test_failed_save_keeps_the_previous_file(fitted, tmp_path):
    path = tmp_path / "m.npz"
    fitted.save(path)
    before = path.read_bytes()
    model = VectorValuedRegressor(n_steps=5, n_folds=2).fit(X, Y)
    model.width_factors = {1, 2}  # a set has no portable form
    with pytest.raises(PersistenceError):
        model.save(path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.npz"]


def _damaged(data: bytes):
    yield "empty", b""
    yield "not a zip", b"hello world" * 50
    for frac in (0.1, 0.5, 0.9):
        yield f"truncated {frac}", data[: int(len(data) * frac)]
    yield "last byte missing", data[:-1]
    yield "bytes appended", data + b"\x00"
    rng = np.random.default_rng(3)
    for _ in range(12):
        pos = int(rng.integers(len(data)))
        flipped = bytearray(data)
        flipped[pos] ^= 0x10
        yield f"flip {pos}", bytes(flipped)


def test_damaged_files_are_rejected(saved, tmp_path):
    data = saved.read_bytes()
    for name, bad in _damaged(data):
        path = tmp_path / "bad.npz"
        path.write_bytes(bad)
        with pytest.raises(PersistenceError):
            jaxmtl.load(path)
    with pytest.raises(PersistenceError, match="cannot read"):
        jaxmtl.load(tmp_path / "missing.npz")


def _rewrite(saved, tmp_path, mutate_meta=None, mutate_arrays=None):
    meta, arrays = persistence.read_archive(saved)
    if mutate_meta:
        mutate_meta(meta)
    if mutate_arrays:
        mutate_arrays(arrays)
    path = tmp_path / "rewritten.npz"
    persistence.write_archive(meta, arrays, path)
    return path


@pytest.mark.parametrize("mutate_meta, match", [
    (lambda m: m.update(format="other"), "unknown file format"),
    (lambda m: m.update(format_version=persistence.FORMAT_VERSION + 1), "Upgrade jaxmtl"),
    (lambda m: m.update(format_version="1"), "must be an integer"),
    (lambda m: m.update(estimator="builtins.eval"), "unknown estimator"),
    (lambda m: m["fitted"].update(kernel_={"__kernel__": {"kernel": "eval"}}), "unknown kernel"),
    (lambda m: m["fitted"].update(kernel_={"__kernel__": {"kernel": "Gaussian", "sigma": -2.0}}),
     "cannot rebuild"),
    (lambda m: m["fitted"].update(filter_={"__filter__": {"filter": "os.system"}}), "unknown filter"),
    (lambda m: m["params"].update(not_a_param=1), "do not match"),
    (lambda m: m["fitted"].update(__class__=1), "invalid attribute"),
    (lambda m: m.pop("arrays_sha256"), "lacks the field"),
    (lambda m: m.update(arrays_sha256="0" * 64), "SHA-256"),
    (lambda m: m["fitted"].pop("coef_"), "no fitted"),
])
def test_wrong_metadata_is_rejected(saved, tmp_path, mutate_meta, match):
    with pytest.raises(PersistenceError, match=match):
        jaxmtl.load(_rewrite(saved, tmp_path, mutate_meta=mutate_meta))


def test_tampered_or_missing_arrays_are_rejected(saved, tmp_path):
    def tamper(a):
        k = next(k for k in sorted(a) if a[k].dtype.kind == "f")
        a[k] = a[k] * 2

    with pytest.raises(PersistenceError, match="SHA-256"):
        jaxmtl.load(_rewrite(saved, tmp_path, mutate_arrays=tamper))
    with pytest.raises(PersistenceError, match="do not match"):
        jaxmtl.load(_rewrite(saved, tmp_path, mutate_arrays=lambda a: a.pop(sorted(a)[0])))

    def reshape(a):
        k = sorted(a)[0]
        a[k] = a[k].reshape(-1)[:-1] if a[k].size > 1 else np.zeros(3)

    with pytest.raises(PersistenceError, match="metadata records"):
        jaxmtl.load(_rewrite(saved, tmp_path, mutate_arrays=reshape))


def test_loading_never_unpickles(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        with zf.open("__meta__.npy", "w") as f:
            np.lib.format.write_array(f, np.array([print], dtype=object), allow_pickle=True)
    path = tmp_path / "pickle.npz"
    path.write_bytes(buf.getvalue())
    with pytest.raises(PersistenceError):
        jaxmtl.load(path)
    plain = tmp_path / "plain.npz"
    np.savez(plain, coef_=np.ones(3))
    with pytest.raises(PersistenceError):
        jaxmtl.load(plain)


def test_errors_are_library_errors():
    assert issubclass(PersistenceError, JaxmtlError) and issubclass(PersistenceError, ValueError)


def test_kernel_and_filter_specs_are_json_and_rebuild():
    from jaxmtl import filters, kernels

    for k in (Gaussian(0.3), kernels.Laplacian(2.0), kernels.Linear(), Polynomial(3, 0.5, 0.0),
              Matern(2.5, 1.5), kernels.SobolevSpline()):
        spec = json.loads(json.dumps(k.spec()))
        rebuilt = persistence._rebuild(spec, "kernel", persistence._kernel_registry(), "test")
        assert rebuilt.spec() == k.spec()
        Z = np.linspace(0.1, 0.9, 4)[:, None]
        np.testing.assert_array_equal(np.asarray(rebuilt(Z, Z)), np.asarray(k(Z, Z)))
    for f in (filters.Tikhonov(), filters.IteratedTikhonov(3), filters.TruncatedSVD(), filters.Landweber(),
              filters.NuMethod(2.0)):
        spec = json.loads(json.dumps(f.spec()))
        assert persistence._rebuild(spec, "filter", persistence._filter_registry(), "test") == f


DATA = pathlib.Path(__file__).resolve().parent / "data"


def test_files_of_format_1_written_before_the_registry_still_load():
    """A model file saved by the writer that special-cased the server (format 1, unchanged) loads and
    predicts as saved; a server file of version 1 (the (L, D, H) state) is refused by name."""
    from jaxmtl.mixed_effect import Server

    model = jaxmtl.load(DATA / "vector_valued_v1.npz")
    X = np.random.default_rng(0).normal(size=(12, 2))
    # the distances are now summed in the difference form (p ≤ 4): the same predictions up to round-off
    np.testing.assert_allclose(np.asarray(model.predict(X[:4])), np.load(DATA / "vector_valued_v1_predict.npy"),
                               rtol=1e-12, atol=1e-15)
    with pytest.raises(PersistenceError, match="server file version 1"):
        Server.load(DATA / "server_v1.npz")


def test_a_file_written_before_a_parameter_was_added_loads_with_its_default():
    """multitask_v1.npz predates MultiTaskRegressor's verbose parameter."""
    from jaxmtl.datasets import make_multitask_toy

    meta, _ = persistence.read_archive(DATA / "multitask_v1.npz")
    assert "verbose" not in meta["params"]
    model = jaxmtl.load(DATA / "multitask_v1.npz")
    assert model.verbose is False
    toy = make_multitask_toy(8, rng=0)
    np.testing.assert_allclose(np.asarray(model.predict(toy.x[:5], toy.tasks[:5])),
                               np.load(DATA / "multitask_v1_predict.npy"), rtol=1e-12, atol=1e-15)


def test_a_server_file_rewritten_by_the_registry_is_the_same_file(tmp_path):
    """A server saved, loaded and saved again through the registry holds the same metadata and arrays."""
    from jaxmtl.kernels import Gaussian
    from jaxmtl.mixed_effect import Server

    server = Server(0.5, 0.1, Gaussian(1.0))
    rng = np.random.default_rng(0)
    for j in range(6):
        server.client(j % 2).send(rng.normal(size=2), float(rng.normal()))
    jaxmtl.save(server, tmp_path / "first.npz")
    jaxmtl.save(Server.load(tmp_path / "first.npz"), tmp_path / "again.npz")
    old_meta, old_arrays = persistence.read_archive(tmp_path / "first.npz")
    meta, arrays = persistence.read_archive(tmp_path / "again.npz")
    assert meta == old_meta
    assert arrays.keys() == old_arrays.keys()
    for k in arrays:
        np.testing.assert_array_equal(arrays[k], old_arrays[k])


def test_loading_a_model_file_as_a_server_is_refused():
    from jaxmtl.mixed_effect import Server

    with pytest.raises(PersistenceError, match="not a 'jaxmtl-mixed-effect-server' file"):
        Server.load(DATA / "vector_valued_v1.npz")

