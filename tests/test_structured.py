"""Structured Gram operators against dense references built with explicit loops."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from _reference import gaussian_gram, random_psd
from jaxmtl.errors import NonFiniteError, OutputMatrixError, ParameterError, ShapeError, TaskError
from jaxmtl.kernels import Gaussian
from jaxmtl.operators import CommonSimilarityTaskOperator, check_tasks, same_task_mask, sum_of_separable_operator, task_block_index, task_blocks, task_indexed, task_indexed_operator, transformable_operator

RNG = np.random.default_rng(0)
_dense = jax.jit(lambda op: op.as_matrix())  # one compiled build instead of eager vmapped products


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
    Qom = np.array([[K[i, j] * Aom[tasks[i], tasks[j]] for j in range(N)] for i in range(N)])
    blocks = task_blocks(K, *task_block_index(tasks, tasks))
    for KS in (jnp.asarray(K * S), blocks):  # dense same-task part and per-task blocks
        cs = CommonSimilarityTaskOperator(jnp.asarray(K), KS, jnp.asarray(om))
        np.testing.assert_allclose(cs.mv(jnp.asarray(c)), Qom @ c, rtol=1e-10)
    assert blocks.blocks.size < N * N


def test_task_blocks_equal_the_masked_cross_gram():
    """Rows and columns with different task sets (a task only among the rows, one only among the
    columns), unequal task sizes, several right-hand sides, under jit and vmap."""
    rows = np.array([3, 0, 0, 2, 3, 3, 0, 5])
    cols = np.array([0, 1, 3, 3, 0, 2, 2, 3, 1, 0])
    K = RNG.normal(size=(len(rows), len(cols)))
    C = RNG.normal(size=(len(cols), 3))
    ref = (K * (rows[:, None] == cols[None, :])) @ C
    ri, ci = task_block_index(rows, cols)
    blocks = jax.jit(task_blocks)(K, ri, ci)
    np.testing.assert_allclose(blocks @ jnp.asarray(C), ref, atol=1e-12)
    scaled = jax.vmap(lambda a: blocks @ (a * jnp.asarray(C)))(jnp.array([1.0, 2.0]))
    np.testing.assert_allclose(scaled[1], 2 * ref, atol=1e-12)
    # the ids of each task, padded with m / N (explicit loop reference)
    for t, (r, c) in enumerate(zip(ri, ci)):
        task = np.union1d(rows, cols)[t]
        np.testing.assert_array_equal(r[r < len(rows)], np.flatnonzero(rows == task))
        np.testing.assert_array_equal(c[c < len(cols)], np.flatnonzero(cols == task))
    with pytest.raises(ShapeError, match="row_tasks must be a non-empty 1-D"):
        task_block_index(rows[:, None], cols)
    with pytest.raises(ShapeError, match="col_tasks"):
        task_block_index(rows, np.array([], int))


def test_bad_task_inputs():
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


def test_task_indexed_operator_equals_loop_and_validates():
    N, T = 13, 4
    X = RNG.normal(size=(N, 2))
    K = gaussian_gram(X, X, 1.0)
    tasks = np.r_[0, 1, 2, 3, RNG.integers(0, T, N - 4)]
    A = random_psd(T, RNG, rank=2)  # a low-rank A: the factor has 2 columns
    op = task_indexed_operator(K, A, tasks)
    assert op.L.shape == (T, 2)
    Q = np.array([[K[i, j] * A[tasks[i], tasks[j]] for j in range(N)] for i in range(N)])
    np.testing.assert_allclose(_dense(op), Q, atol=1e-12)
    with pytest.raises(TaskError, match="unknown ids \\[4, 7\\]"):
        task_indexed_operator(K, A, np.r_[tasks[:-2], 4, 7])
    with pytest.raises(TaskError, match="task 3 has no examples"):
        task_indexed_operator(K, A, np.where(tasks == 3, 0, tasks))
    with pytest.raises(TaskError, match="integer"):
        task_indexed_operator(K, A, tasks + 0.5)
    with pytest.raises(ShapeError, match="one id per example"):
        task_indexed_operator(K, A, tasks[:-1])
    Kn = K.copy()
    Kn[0, 1] = np.inf
    with pytest.raises(NonFiniteError):
        task_indexed_operator(Kn, A, tasks)
    with pytest.raises(ShapeError, match="square"):
        task_indexed_operator(K[:, :5], A, tasks)
    with pytest.raises(OutputMatrixError):
        task_indexed_operator(K, -np.eye(T), tasks)


def test_sum_of_separable_and_transformable_equal_dense_and_validate():
    n, d = 6, 3
    X = RNG.normal(size=(n, 2))
    Ks = np.stack([gaussian_gram(X, X, 1.0), gaussian_gram(X, X, 0.3)])
    Bs = np.stack([random_psd(d, RNG), random_psd(d, RNG)])
    op = sum_of_separable_operator(Ks, Bs)
    np.testing.assert_allclose(_dense(op), np.kron(Ks[0], Bs[0]) + np.kron(Ks[1], Bs[1]), atol=1e-12)
    with pytest.raises(ShapeError, match="same number of terms"):
        sum_of_separable_operator(Ks, Bs[:1])
    with pytest.raises(ShapeError, match="square"):
        sum_of_separable_operator(Ks[:, :, :4], Bs)
    with pytest.raises(OutputMatrixError):
        sum_of_separable_operator(Ks, np.stack([Bs[0], -Bs[1]]))
    Kn = Ks.copy()
    Kn[1, 0, 0] = np.nan
    with pytest.raises(NonFiniteError):
        sum_of_separable_operator(Kn, Bs)

    shifts = np.array([[0.0, 0.0], [0.5, -0.2], [1.0, 0.3]])
    Xr = RNG.normal(size=(4, 2))
    tr = transformable_operator(Gaussian(0.7), X, shifts, X_rows=Xr)
    G = np.zeros((4 * d, n * d))
    for i in range(4):
        for j in range(n):
            for a in range(d):
                for b in range(d):
                    G[i * d + a, j * d + b] = gaussian_gram((Xr[i] + shifts[a])[None], (X[j] + shifts[b])[None], 0.7)[0, 0]
    C = RNG.normal(size=(n, d))
    np.testing.assert_allclose(tr.mv(jnp.asarray(C)).reshape(-1), G @ C.reshape(-1), atol=1e-12)
    Z = np.stack([X + t for t in shifts])
    np.testing.assert_allclose(_dense(transformable_operator(Gaussian(0.7), None, Z=Z)),
                               _dense(transformable_operator(Gaussian(0.7), X, shifts)), atol=1e-14)
    with pytest.raises(ParameterError, match="exactly one"):
        transformable_operator(Gaussian(1.0), X)
    with pytest.raises(ShapeError, match="shifts"):
        transformable_operator(Gaussian(1.0), X, np.ones((3, 3)))
    with pytest.raises(ParameterError, match="Kernel"):
        transformable_operator("rbf", X, shifts)
    with pytest.raises(NonFiniteError):
        transformable_operator(Gaussian(1.0), X, np.r_[shifts[:2], [[np.nan, 0.0]]])
