"""Output matrices against their formulas built by hand."""

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
import pytest

from jaxmtl import outputs
from jaxmtl.errors import OutputMatrixError, ParameterError


def test_common_similarity_and_its_shared_eigensystem():
    d = 4
    for om in (0.0, 0.3, 1.0):
        A = np.asarray(outputs.common_similarity(d, om))
        ref = np.array([[1.0 if i == j else om for j in range(d)] for i in range(d)])
        np.testing.assert_allclose(A, ref)
    a, V = outputs.common_similarity_eigh(d, [0.0, 0.3, 1.0])
    np.testing.assert_allclose(np.asarray(V).T @ np.asarray(V), np.eye(d), atol=1e-12)
    for k, om in enumerate((0.0, 0.3, 1.0)):
        np.testing.assert_allclose(np.asarray(V) @ np.diag(a[k]) @ np.asarray(V).T,
                                   outputs.common_similarity(d, om), atol=1e-12)


def test_graph_regularization_is_pinv_of_its_laplacian():
    M = np.array([[0.0, 1.0, 0.2], [1.0, 0.0, 0.0], [0.2, 0.0, 0.0]])
    d = 3
    L = np.zeros((d, d))
    for l in range(d):
        for q in range(d):
            L[l, q] = (sum(M[l]) + M[l, q] if l == q else 0.0) - M[l, q]
    np.testing.assert_allclose(outputs.graph_regularization(M), np.linalg.pinv(L), atol=1e-12)


def test_output_clusters_and_mean_regularized_and_low_rank():
    labels = [0, 0, 1, 1, 1]
    G = np.zeros((5, 5))
    for l in range(5):
        for q in range(5):
            same = labels[l] == labels[q]
            m = 1.0 / labels.count(labels[l]) if same else 0.0
            G[l, q] = 2.0 * (l == q) + (0.5 - 2.0) * m
    np.testing.assert_allclose(outputs.output_clusters(labels, 2.0, 0.5), np.linalg.pinv(G), atol=1e-12)
    np.testing.assert_allclose(outputs.mean_regularized(3, 2.0), np.ones((3, 3)) / 4 + np.eye(3))
    B = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(outputs.low_rank(B), B @ B.T)
    np.testing.assert_allclose(outputs.independent(3), np.eye(3))
    a, V = outputs.eigh_output(outputs.low_rank(B))
    np.testing.assert_allclose(np.asarray(V) @ np.diag(a) @ np.asarray(V).T, B @ B.T, atol=1e-10)


@pytest.mark.parametrize(
    "call,err,match",
    [(lambda: outputs.common_similarity(3, 1.5), ParameterError, "omega"),
     (lambda: outputs.mean_regularized(3, 0.0), ParameterError, "c"),
     (lambda: outputs.custom([[1.0, 2.0], [0.0, 1.0]]), OutputMatrixError, "symmetric"),
     (lambda: outputs.custom([[1.0, 2.0], [2.0, 1.0]]), OutputMatrixError, "semidefinite"),
     (lambda: outputs.custom(np.ones((2, 3))), OutputMatrixError, "square"),
     (lambda: outputs.graph_regularization([[0.0, -1.0], [-1.0, 0.0]]), OutputMatrixError, "non-negative"),
     (lambda: outputs.output_clusters([0, 1], 0.0, 1.0), ParameterError, "eps1")],
)
def test_bad_output_matrices(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_singular_custom_matrix_is_accepted():
    A = np.ones((3, 3))  # rank one, PSD: allowed (the pseudo-inverse defines the norm)
    np.testing.assert_allclose(outputs.custom(A), A)
