"""Streamed feature statistics and predictions, and hold-out losses in feature space, against dense
computations on the whole feature matrix."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxmtl.errors import ShapeError
from jaxmtl.filters import NuMethod, Tikhonov
from jaxmtl.kernels import Gaussian
from jaxmtl.kernels.outputs import common_similarity_eigh
from jaxmtl.operators import NystromFeatures, stream_predict, stream_statistics
from jaxmtl.paths import feature_coefficients, feature_holdout_losses


def _data(n, p=3, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    Y = np.c_[np.sin(X[:, :1]), np.cos(X[:, 1:2]), X[:, :1] * X[:, 2:3]][:, :d] + 0.1 * rng.normal(size=(n, d))
    return X, Y


@pytest.fixture(scope="module")
def memmapped(tmp_path_factory):
    """Rows in memory-mapped .npy files, as the large-data route reads them."""
    X, Y = _data(233)
    folder = tmp_path_factory.mktemp("rows")
    np.save(folder / "X.npy", X)
    np.save(folder / "Y.npy", Y)
    return np.load(folder / "X.npy", mmap_mode="r"), np.load(folder / "Y.npy", mmap_mode="r"), X, Y


def test_stream_statistics_equal_dense_sums(memmapped):
    Xm, Ym, X, Y = memmapped
    fm = NystromFeatures.fit(Gaussian(1.2), jnp.asarray(X), 20, random_state=0)
    st = stream_statistics(fm, Xm, Ym, chunk_rows=50, block_size=16)  # 233 rows: a padded last chunk
    P = np.asarray(fm(jnp.asarray(X)))
    np.testing.assert_allclose(st.G[0], P.T @ P, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(st.B[0], P.T @ Y, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(st.S[0], Y.T @ Y, rtol=1e-10)
    assert float(st.counts[0]) == 233


def test_stream_predict_equals_features_times_weights(memmapped, tmp_path):
    Xm, _, X, _ = memmapped
    fm = NystromFeatures.fit(Gaussian(1.2), jnp.asarray(X), 20, random_state=0)
    W = np.random.default_rng(1).normal(size=(20, 2))
    out = np.lib.format.open_memmap(tmp_path / "P.npy", mode="w+", dtype=np.float64, shape=(233, 2))
    got = stream_predict(fm, W, Xm, chunk_rows=64, out=out)
    assert got is out
    np.testing.assert_allclose(np.load(tmp_path / "P.npy"), np.asarray(fm(jnp.asarray(X))) @ W, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("filt, params", [(Tikhonov(), np.logspace(-6, -1, 6)), (NuMethod(), np.arange(1, 31))])
def test_holdout_losses_equal_explicit_predictions(memmapped, filt, params):
    """Per-direction hold-out losses equal the mean squared error of explicit predictions on the held rows."""
    _, _, X, Y = memmapped
    tr, va = slice(0, 150), slice(150, None)
    fm = NystromFeatures.fit(Gaussian(1.2), jnp.asarray(X[tr]), 25, random_state=0)
    st_tr = stream_statistics(fm, X[tr], Y[tr], chunk_rows=64)
    st_va = stream_statistics(fm, X[va], Y[va], chunk_rows=64)
    a, V = common_similarity_eigh(3, [0.0, 0.5])
    L = np.asarray(feature_holdout_losses(st_tr, st_va, a, V, filt, jnp.asarray(params)))
    assert L.shape == (2, len(params), 3)
    P = np.asarray(fm(jnp.asarray(X[va])))
    for w in range(2):
        for k in (0, len(params) // 2, len(params) - 1):
            W = np.asarray(feature_coefficients(st_tr, a[w], V, filt, params[k]))
            F = P @ W @ np.asarray(V @ jnp.diag(a[w]) @ V.T)
            np.testing.assert_allclose(L[w, k], np.mean((F - Y[va]) ** 2, axis=0), rtol=1e-8)
    # one parameter per output (A = I): each column is that output's own fit
    k = np.array([0, len(params) // 2, len(params) - 1])
    W = np.asarray(feature_coefficients(st_tr, jnp.ones(3), jnp.eye(3), filt, jnp.asarray(params[k])))
    for j in range(3):
        Wj = np.asarray(feature_coefficients(st_tr, jnp.ones(3), jnp.eye(3), filt, params[k[j]]))
        np.testing.assert_allclose(W[:, j], Wj[:, j], rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(np.mean((P @ W[:, j] - Y[va, j]) ** 2), L[0, k[j], j], rtol=1e-8)


def test_streaming_refuses_mismatched_rows(memmapped):
    Xm, Ym, X, _ = memmapped
    fm = NystromFeatures.fit(Gaussian(1.2), jnp.asarray(X), 5, random_state=0)
    with pytest.raises(ShapeError, match="same number of rows"):
        stream_statistics(fm, Xm, Ym[:100])
    with pytest.raises(ShapeError, match="2-D array"):
        stream_statistics(fm, Xm[:, 0], Ym)
    with pytest.raises(ShapeError, match="W must have shape"):
        stream_predict(fm, np.ones((4, 1)), Xm)
