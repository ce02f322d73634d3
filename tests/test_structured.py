"""Structured Gram operators against dense references built with explicit loops."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from _reference import gaussian_gram, random_psd
from jaxmtl.errors import OutputMatrixError, ShapeError, TaskError
from jaxmtl.kernels import Gaussian, Linear
from jaxmtl.structured import (
    CommonSimilarityTaskOperator,
    SumOfSeparableOperator,
    TransformableOperator,
    check_tasks,
    div_curl,
    same_task_mask,
    task_indexed,
)

RNG = np.random.default_rng(0)


def test_task_indexed_equals_loop_and_common_similarity():
    N, T = 14, 3
    X = RNG.normal(size=(N, 2))
    tasks = np.r_[0, 1, 2, RNG.integers(0, 3, N - 3)]
    A = random_psd(T, RNG)
    op = task_indexed(Gaussian(1.0), X, tasks, A)
    K = gaussian_gram(X, X, 1.0)
    Q = np.array([[K[i, j] * A[tasks[i], tasks[j]] for j in range(N)] for i in range(N)])
    c = RNG.normal(size=(N, 1))
    np.testing.assert_allclose(op.mv(jnp.asarray(c)), Q @ c, rtol=1e-10)
    np.testing.assert_allclose(op.as_matrix(), Q, rtol=1e-10, atol=1e-12)
    om = 0.4
    Aom = om * np.ones((T, T)) + (1 - om) * np.eye(T)
    S = np.asarray(same_task_mask(tasks, tasks), float)
    cs = CommonSimilarityTaskOperator(jnp.asarray(K), jnp.asarray(K * S), jnp.asarray(om))
    Qom = np.array([[K[i, j] * Aom[tasks[i], tasks[j]] for j in range(N)] for i in range(N)])
    np.testing.assert_allclose(cs.mv(jnp.asarray(c)), Qom @ c, rtol=1e-10)


def test_div_free_and_curl_free_equal_formulas_26_27():
    n, p, s = 7, 3, 0.9
    X = RNG.normal(size=(n, p))
    for gamma in (0.0, 1.0, 0.3):
        op = div_curl(Gaussian(s), X, gamma)
        G = np.zeros((n * p, n * p))
        for i in range(n):
            for j in range(n):
                u = (X[i] - X[j]) / s
                w = np.exp(-u @ u / 2) / s**2
                cf = w * (np.eye(p) - np.outer(u, u))
                df = w * (np.outer(u, u) + ((p - 1) - u @ u) * np.eye(p))
                G[i * p:(i + 1) * p, j * p:(j + 1) * p] = gamma * cf + (1 - gamma) * df
        np.testing.assert_allclose(op.as_matrix(), G, atol=1e-12)
        C = RNG.normal(size=(n, p))
        curl, div = op.parts(jnp.asarray(C))
        np.testing.assert_allclose(np.asarray(curl) + np.asarray(div), (G @ C.reshape(-1)).reshape(n, p), atol=1e-12)


def test_div_free_columns_have_zero_divergence_and_curl_free_zero_curl():
    """Finite differences of x ↦ Γ(x, x₀)c: div of the div-free part, curl of the curl-free part."""
    x0 = np.array([[0.3, -0.2]])
    c = jnp.asarray([[0.7, -1.1]])
    h = 1e-5

    def field(x, gamma):
        return np.asarray(div_curl(Gaussian(0.8), np.atleast_2d(x), gamma, X_cols=x0).mv(c))[0]

    x = np.array([0.1, 0.5])
    e = np.eye(2) * h
    J = lambda g: np.stack([(field(x + e[k], g) - field(x - e[k], g)) / (2 * h) for k in range(2)], 1)
    assert abs(np.trace(J(0.0))) < 1e-6          # divergence of div-free field
    Jc = J(1.0)
    assert abs(Jc[1, 0] - Jc[0, 1]) < 1e-6        # curl of curl-free field


def test_sum_of_separable_and_transformable_equal_dense():
    n, d = 6, 2
    X = RNG.normal(size=(n, 2))
    Ks = np.stack([gaussian_gram(X, X, 1.0), X @ X.T])
    Bs = np.stack([random_psd(d, RNG), random_psd(d, RNG)])
    op = SumOfSeparableOperator(jnp.asarray(Ks), jnp.asarray(Bs))
    np.testing.assert_allclose(op.as_matrix(), np.kron(Ks[0], Bs[0]) + np.kron(Ks[1], Bs[1]), atol=1e-12)
    shifts = np.array([0.0, 0.5])
    Z = np.stack([X + t for t in shifts])
    tr = TransformableOperator(Linear(), jnp.asarray(Z), jnp.asarray(Z))
    G = np.zeros((n * d, n * d))
    for i in range(n):
        for j in range(n):
            for a in range(d):
                for b in range(d):
                    G[i * d + a, j * d + b] = (X[i] + shifts[a]) @ (X[j] + shifts[b])
    np.testing.assert_allclose(tr.as_matrix(), G, atol=1e-12)


def test_bad_task_and_field_inputs():
    X = RNG.normal(size=(5, 2))
    A = np.eye(3)
    with pytest.raises(TaskError, match="0..2"):
        task_indexed(Gaussian(1.0), X, np.array([0, 1, 2, 3, 0]), A)
    with pytest.raises(TaskError, match="no examples"):
        task_indexed(Gaussian(1.0), X, np.array([0, 1, 0, 1, 0]), A)
    with pytest.raises(TaskError, match="integer"):
        task_indexed(Gaussian(1.0), X, np.array([0.5, 1, 2, 0, 1]), A)
    with pytest.raises(OutputMatrixError):
        task_indexed(Gaussian(1.0), X, np.array([0, 1, 2, 0, 1]), -np.eye(3))
    with pytest.raises(TaskError, match="not seen"):
        check_tasks(["a", "z"], 2, known=np.array(["a", "b"]))
    with pytest.raises(ShapeError, match="one entry per input"):
        check_tasks([0, 1], 3)
    with pytest.raises(TaskError, match="NaN"):
        check_tasks([0.0, np.nan], 2)
    with pytest.raises(ShapeError, match="features"):
        div_curl(Gaussian(1.0), X, 0.5, X_cols=np.ones((3, 3)))
