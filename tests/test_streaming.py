"""Streamed feature statistics and predictions, and hold-out losses in feature space, against dense
computations on the whole feature matrix; in float64 and (the float32 run) in JAX's default float32,
where the sums agree to float32's promise."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import FLOAT32_PROMISE, X64
from jaxmtl.errors import NonFiniteError, ShapeError, TracedArgumentError
from jaxmtl.filters import NuMethod, Tikhonov
from jaxmtl.kernels import Gaussian
from jaxmtl.kernels.outputs import common_similarity_eigh
from jaxmtl.operators import NystromFeatures, stream_holdout_losses, stream_predict, stream_statistics
from jaxmtl.operators.nystrom import GRAM_BLOCKS_FROM, feature_statistics
from jaxmtl.paths import feature_coefficients, feature_holdout_losses, feature_path_coefficients

RTOL = 1e-8 if X64 else FLOAT32_PROMISE["rtol"]
ATOL = 1e-10 if X64 else FLOAT32_PROMISE["atol"]


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
    P = P.astype(np.float64)
    scale = np.abs(P).T @ np.abs(P)  # sums of 233 terms: float32 round-off is relative to their magnitude
    np.testing.assert_allclose(st.G[0], P.T @ P, rtol=RTOL, atol=ATOL * scale.max())
    np.testing.assert_allclose(st.B[0], P.T @ Y, rtol=RTOL, atol=ATOL * (np.abs(P).T @ np.abs(Y)).max())
    np.testing.assert_allclose(st.S[0], Y.T @ Y, rtol=RTOL)
    assert float(st.counts[0]) == 233


def test_stream_predict_equals_features_times_weights(memmapped, tmp_path):
    Xm, _, X, _ = memmapped
    fm = NystromFeatures.fit(Gaussian(1.2), jnp.asarray(X), 20, random_state=0)
    W = np.random.default_rng(1).normal(size=(20, 2))
    W = W.astype(np.float64 if X64 else np.float32)
    out = np.lib.format.open_memmap(tmp_path / "P.npy", mode="w+", dtype=W.dtype, shape=(233, 2))
    got = stream_predict(fm, W, Xm, chunk_rows=64, out=out, block_size=16)  # the last chunk's last block: padding
    assert got is out
    np.testing.assert_allclose(np.load(tmp_path / "P.npy"), np.asarray(fm(jnp.asarray(X))) @ W, rtol=RTOL, atol=ATOL)


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
            np.testing.assert_allclose(L[w, k], np.mean((F - Y[va]) ** 2, axis=0), rtol=RTOL, atol=ATOL)
    # one parameter per output (A = I): each column is that output's own fit
    k = np.array([0, len(params) // 2, len(params) - 1])
    W = np.asarray(feature_coefficients(st_tr, jnp.ones(3), jnp.eye(3), filt, jnp.asarray(params[k])))
    for j in range(3):
        Wj = np.asarray(feature_coefficients(st_tr, jnp.ones(3), jnp.eye(3), filt, params[k[j]]))
        np.testing.assert_allclose(W[:, j], Wj[:, j], rtol=RTOL, atol=ATOL * np.abs(Wj).max())
        np.testing.assert_allclose(np.mean((P @ W[:, j] - Y[va, j]) ** 2), L[0, k[j], j], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("filt, params", [(Tikhonov(), np.logspace(-6, -1, 6)), (NuMethod(), np.arange(1, 31))])
def test_holdout_losses_from_predictions_equal_those_from_statistics(memmapped, filt, params):
    """Scoring the held rows by the predictions of the whole path's coefficients gives the losses
    of their statistics; each coefficient set is feature_coefficients' times A_ω."""
    Xm, Ym, X, Y = memmapped
    fm = NystromFeatures.fit(Gaussian(1.2), jnp.asarray(X[:150]), 25, random_state=0)
    st_tr = stream_statistics(fm, X[:150], Y[:150], chunk_rows=64)
    a, V = common_similarity_eigh(3, [0.0, 0.5, 1.0])
    C = feature_path_coefficients(st_tr, a, V, filt, jnp.asarray(params))
    assert C.shape == (3, len(params), 25, 3)
    for w, k in ((0, 0), (1, len(params) // 2), (2, len(params) - 1)):
        W = np.asarray(feature_coefficients(st_tr, a[w], V, filt, params[k])) @ np.asarray(V @ jnp.diag(a[w]) @ V.T)
        np.testing.assert_allclose(C[w, k], W, rtol=RTOL, atol=ATOL * np.abs(W).max())
    # held rows: the memmapped rows 150..232, read in chunks of 30 (a padded last chunk) and blocks of 8
    held = stream_holdout_losses(fm, C, Xm[150:], Ym[150:], chunk_rows=30, block_size=8)
    expected = feature_holdout_losses(st_tr, stream_statistics(fm, X[150:], Y[150:]), a, V, filt, jnp.asarray(params))
    np.testing.assert_allclose(held, expected, rtol=RTOL, atol=ATOL)


def test_statistics_of_many_features_form_their_gram_by_blocks():
    """From GRAM_BLOCKS_FROM features on ΦᵀΦ is formed by its lower column blocks (D not a multiple
    of the 4 blocks here); it equals the dense product, group by group."""
    D = GRAM_BLOCKS_FROM + 6
    X, Y = _data(D + 40, p=4)
    fm = NystromFeatures.from_centres(Gaussian(2.0), jnp.asarray(X[:D]))
    groups = np.arange(X.shape[0]) % 2
    st = feature_statistics(fm, jnp.asarray(X), jnp.asarray(Y), groups, 2)
    P = np.asarray(fm(jnp.asarray(X)), np.float64)
    for g in range(2):
        Pg = P[groups == g]
        scale = (np.abs(Pg).T @ np.abs(Pg)).max()
        np.testing.assert_allclose(st.G[g], Pg.T @ Pg, rtol=RTOL, atol=ATOL * scale)
        np.testing.assert_allclose(st.B[g], Pg.T @ Y[groups == g], rtol=RTOL, atol=ATOL * scale)


def test_feature_map_applies_coefficients_through_its_transform():
    """φ(X) W by the centres' coefficients raw(X) (T W) when W has fewer columns than features,
    by the features otherwise: both equal the features times W."""
    X, _ = _data(60)
    fm = NystromFeatures.from_centres(Gaussian(1.5), jnp.asarray(X[:12]))
    P = np.asarray(fm(jnp.asarray(X)), np.float64)
    for cols in (3, 12):
        W = np.random.default_rng(cols).normal(size=(12, cols)).astype(P.dtype if X64 else np.float32)
        np.testing.assert_allclose(fm.apply(jnp.asarray(X), jnp.asarray(W)), P @ W, rtol=RTOL,
                                   atol=ATOL * (np.abs(P) @ np.abs(W)).max())


def test_prepared_coefficients_trace_and_refuse_bad_shapes():
    """prepare + apply_prepared equal apply under jit, vmap over coefficient sets and grad (against
    finite differences); a W without one row per feature is refused by name."""
    X, _ = _data(30)
    fm = NystromFeatures.from_centres(Gaussian(1.5), jnp.asarray(X[:8]))
    Xj = jnp.asarray(X)
    Ws = jnp.asarray(np.random.default_rng(0).normal(size=(4, 8, 2)), Xj.dtype)
    jitted = jax.jit(lambda W: fm.apply_prepared(Xj, *fm.prepare(W)))
    np.testing.assert_allclose(jitted(Ws[0]), fm.apply(Xj, Ws[0]), rtol=RTOL, atol=ATOL)
    stacked = jax.vmap(lambda W: fm.apply_prepared(Xj, *fm.prepare(W)))(Ws)
    np.testing.assert_allclose(stacked[2], fm.apply(Xj, Ws[2]), rtol=RTOL, atol=ATOL)
    loss = lambda W: jnp.sum(fm.apply_prepared(Xj, *fm.prepare(W)) ** 2)  # noqa: E731
    g = jax.grad(loss)(Ws[0])
    E = jnp.zeros_like(Ws[0]).at[3, 1].set(1.0)
    h = 1e-6 if X64 else 1e-2
    fd = (loss(Ws[0] + h * E) - loss(Ws[0] - h * E)) / (2 * h)
    assert bool(jnp.all(jnp.isfinite(g)))
    assert float(g[3, 1]) == pytest.approx(float(fd), rel=1e-5 if X64 else 2e-2)
    for bad in (np.ones((7, 2)), np.ones(8)):
        with pytest.raises(ShapeError, match=r"W must have shape \(8, c\)"):
            fm.prepare(jnp.asarray(bad))


def test_streaming_refuses_mismatched_rows(memmapped):
    Xm, Ym, X, _ = memmapped
    fm = NystromFeatures.fit(Gaussian(1.2), jnp.asarray(X), 5, random_state=0)
    with pytest.raises(ShapeError, match="same number of rows"):
        stream_statistics(fm, Xm, Ym[:100])
    with pytest.raises(ShapeError, match="2-D array"):
        stream_statistics(fm, Xm[:, 0], Ym)
    with pytest.raises(ShapeError, match="W must have shape"):
        stream_predict(fm, np.ones((4, 1)), Xm)
    with pytest.raises(ShapeError, match="0 rows"):
        stream_statistics(fm, Xm[:0], Ym[:0])
    with pytest.raises(ShapeError, match=r"C must have shape \(\.\.\., 5, 3\).*received \(2, 4, 3\)"):
        stream_holdout_losses(fm, np.ones((2, 4, 3)), Xm, Ym)
    with pytest.raises(ShapeError, match="same number of rows"):
        stream_holdout_losses(fm, np.ones((5, 3)), Xm, Ym[:100])


def test_streaming_refuses_non_finite_rows_naming_the_row(memmapped):
    _, _, X, Y = memmapped
    fm = NystromFeatures.fit(Gaussian(1.2), jnp.asarray(X), 5, random_state=0)
    Xbad = np.array(X)
    Xbad[140, 1] = np.nan
    with pytest.raises(NonFiniteError, match="X has a non-finite value .* row 140"):
        stream_statistics(fm, Xbad, Y, chunk_rows=64)
    Ybad = np.array(Y)
    Ybad[7, 0] = np.inf
    with pytest.raises(NonFiniteError, match="Y has a non-finite value .* row 7"):
        stream_statistics(fm, X, Ybad)
    with pytest.raises(NonFiniteError, match="row 140"):
        stream_predict(fm, np.ones((5, 1)), Xbad, chunk_rows=64)


def test_streaming_refuses_traced_rows_by_name(memmapped):
    _, _, X, Y = memmapped
    fm = NystromFeatures.fit(Gaussian(1.2), jnp.asarray(X), 5, random_state=0)
    with pytest.raises(TracedArgumentError, match="X must be a concrete value"):
        jax.jit(lambda X: stream_statistics(fm, X, Y).G)(jnp.asarray(X))


def test_float32_nystrom_map_keeps_the_centres_a_float32_decomposition_drops():
    """Float32 centres: K(Z, Z) is decomposed in float64 and cut at eps₃₂·e_max, so ΦΦᵀ reproduces K on
    the centres; the float32 decomposition (traced centres) cuts at m·eps₃₂·e_max and drops some."""
    rng = np.random.default_rng(0)
    Z = jnp.asarray(rng.normal(size=(300, 4)), jnp.float32)
    kern = Gaussian(3.0)
    fm = NystromFeatures.from_centres(kern, Z)
    traced = jax.jit(lambda Z: NystromFeatures.from_centres(kern, Z).whitening)(Z)
    kept = int(np.sum(np.linalg.norm(np.asarray(fm.whitening), axis=0) > 0))
    kept_f32 = int(np.sum(np.linalg.norm(np.asarray(traced), axis=0) > 0))
    K = np.asarray(kern(Z, Z), np.float64)
    e = np.linalg.eigvalsh(K)
    assert kept == int(np.sum(e > np.finfo(np.float32).eps * e[-1]))
    assert kept_f32 < kept  # the m·eps₃₂ cut loses centres of this Gaussian Gram
    err = np.linalg.norm(np.asarray(fm.gram(Z), np.float64) - K) / np.linalg.norm(K)
    Wt = np.asarray(traced, np.float64)
    err_f32 = np.linalg.norm(K @ Wt @ Wt.T @ K - K) / np.linalg.norm(K)  # ΦΦᵀ on the centres, float32 cut
    assert err < 1e-3 and err < err_f32
