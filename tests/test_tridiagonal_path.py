"""The tridiagonal Tikhonov path against dense nd×nd references, the eigen path and its memory."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from _reference import dense_filter_coefficients, gaussian_gram, problem
from jaxmtl.errors import JaxmtlError, ParameterError, ShapeError
from jaxmtl.filters import IteratedTikhonov, NuMethod, Tikhonov, TruncatedSVD
from jaxmtl.operators import separable_eigh
from jaxmtl.paths import mse_loss, spectral_path, tridiagonal_path
from jaxmtl.paths.tridiagonal import BLOCK, _tridiagonal_path


def rel(a, b):
    return float(np.abs(np.asarray(a) - b).max() / np.abs(b).max())


@pytest.mark.parametrize("n", [25, 2 * BLOCK + 7])  # one block; three, the last clamped to the matrix
@pytest.mark.parametrize("filt", [Tikhonov(), IteratedTikhonov(3)])
def test_coefficients_equal_the_dense_filter(filt, n):
    _, K, A, Y = problem(n=n)
    lams = np.geomspace(1e-3, 0.5, 5)
    C = tridiagonal_path(jnp.asarray(K), jnp.asarray(Y), jnp.asarray(lams), A=jnp.asarray(A), filt=filt,
                         output="coefficients")
    assert C.shape == (5, n, 3)
    for k, lam in enumerate(lams):
        ref = dense_filter_coefficients(K, A, Y, lambda w: np.asarray(filt(jnp.asarray(w), lam)))
        assert rel(C[k], ref) < 1e-8


@pytest.mark.parametrize("output", ["predictions", "loss"])
def test_predictions_and_losses_equal_the_eigen_path(output):
    rng = np.random.default_rng(3)
    X, Xv = rng.normal(size=(150, 2)), rng.normal(size=(40, 2))
    K, Kv = gaussian_gram(X, X, 1.0), gaussian_gram(Xv, X, 1.0)
    Y, Yv = rng.normal(size=(150, 2)), rng.normal(size=(40, 2))
    lams = jnp.asarray(np.geomspace(1e-5, 1.0, 7))
    ours = tridiagonal_path(jnp.asarray(K), jnp.asarray(Y), lams, K_eval=jnp.asarray(Kv), Y_eval=jnp.asarray(Yv),
                            output=output)
    ref = spectral_path(separable_eigh(jnp.asarray(K), jnp.eye(2)), jnp.asarray(Y), Tikhonov(), lams,
                        K_eval=jnp.asarray(Kv), Y_eval=jnp.asarray(Yv), output=output)
    assert rel(ours, np.asarray(ref)) < 1e-8
    if output == "loss":  # and against an explicit solve per λ
        for k, lam in enumerate(np.asarray(lams)):
            F = Kv @ np.linalg.solve(K + 150 * lam * np.eye(150), Y)
            assert float(ours[k]) == pytest.approx(np.mean((F - Yv) ** 2), rel=1e-8)


def test_one_n_by_n_matrix_besides_the_gram_build():
    """XLA's buffers of the whole path from the raw inputs: K (its build and LAPACK's column-major
    copy), K_eval and K_eval Q; forming Q, U or a copy of the reflectors would add another n × n."""
    n, m, d = 600, 150, 4
    rng = np.random.default_rng(0)
    X, Xv = jnp.asarray(rng.normal(size=(n, 3))), jnp.asarray(rng.normal(size=(m, 3)))
    Y, Yv = jnp.asarray(rng.normal(size=(n, d))), jnp.asarray(rng.normal(size=(m, d)))
    gram = lambda A, B: jnp.exp(-jnp.sum((A[:, None] - B[None]) ** 2, -1) / 2)  # noqa: E731
    f = jax.jit(lambda X, Y, Xv, Yv, lams: _tridiagonal_path(gram(X, X), Y, lams, gram(Xv, X), Yv,
                                                            jnp.full((m,), 1.0 / m), None, Tikhonov(), None,
                                                            "loss", mse_loss))
    temp = f.lower(X, Y, Xv, Yv, jnp.ones(30)).compile().memory_analysis().temp_size_in_bytes
    k_bytes = n * n * 8
    assert temp <= 2 * k_bytes + 2 * m * n * 8  # two n × n at most (the Gram's build), never Q nor U


def test_bad_input_is_refused():
    K, Y = jnp.eye(4), jnp.ones((4, 2))
    with pytest.raises(ParameterError, match="TruncatedSVD"):
        tridiagonal_path(K, Y, jnp.ones(2), filt=TruncatedSVD(), output="coefficients")
    with pytest.raises(ParameterError, match="NuMethod"):
        tridiagonal_path(K, Y, jnp.ones(2), filt=NuMethod(), output="coefficients")
    for bad in ([0.1, 0.0], [np.nan], "x"):
        with pytest.raises(JaxmtlError, match="params"):
            tridiagonal_path(K, Y, bad)
    with pytest.raises(ParameterError, match="output"):
        tridiagonal_path(K, Y, jnp.ones(2), output="curve")
    with pytest.raises(ShapeError, match="K_eval"):
        tridiagonal_path(K, Y, jnp.ones(2))
    with pytest.raises(ShapeError, match="K"):
        tridiagonal_path(jnp.eye(3), Y, jnp.ones(2), output="coefficients")
    with pytest.raises(ShapeError, match="Y_eval"):
        tridiagonal_path(K, Y, jnp.ones(2), K_eval=K, output="loss")
