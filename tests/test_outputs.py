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


# --- further checks: every family PSD and in float64, eigensystems, more bad input ----------

from jaxmtl.errors import ShapeError

FAMILIES = {
    "independent": lambda: outputs.independent(4),
    "common_similarity": lambda: outputs.common_similarity(4, 0.6),
    "graph": lambda: outputs.graph_regularization(
        np.array([[0.5, 1.0, 0.0, 0.3], [1.0, 0.0, 2.0, 0.0], [0.0, 2.0, 0.0, 0.1], [0.3, 0.0, 0.1, 1.0]])),
    "clusters": lambda: outputs.output_clusters([2, 0, 2, 5], 0.3, 3.0),
    "mean_regularized": lambda: outputs.mean_regularized(4, 0.7),
    "low_rank": lambda: outputs.low_rank(np.random.default_rng(0).normal(size=(4, 2))),
    "custom": lambda: outputs.custom(np.diag([1.0, 2.0, 0.0, 3.0])),
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_family_is_symmetric_psd_float64(name):
    A = FAMILIES[name]()
    assert A.dtype == np.float64 and A.shape == (4, 4)
    A = np.asarray(A)
    np.testing.assert_array_equal(A, A.T)
    assert np.linalg.eigvalsh(A).min() > -1e-10 * np.abs(A).max()
    a, V = outputs.eigh_output(A)
    assert np.all(np.asarray(a) >= 0)
    np.testing.assert_allclose(np.asarray(V) @ np.diag(a) @ np.asarray(V).T, A, atol=1e-10)
    np.testing.assert_allclose(np.asarray(V).T @ np.asarray(V), np.eye(4), atol=1e-12)


def test_common_similarity_eigh_structure():
    for d in (1, 2, 5):
        om = np.array([0.0, 0.25, 0.9, 1.0])
        a, V = outputs.common_similarity_eigh(d, om)
        a, V = np.asarray(a), np.asarray(V)
        assert a.shape == (4, d) and V.shape == (d, d)
        np.testing.assert_allclose(V[:, 0], np.ones(d) / np.sqrt(d), atol=1e-14)
        np.testing.assert_allclose(V.T @ V, np.eye(d), atol=1e-12)
        np.testing.assert_allclose(a[:, 0], om * d + 1 - om)
        np.testing.assert_allclose(a[:, 1:], np.repeat((1 - om)[:, None], d - 1, 1))
        for k in range(4):
            np.testing.assert_allclose(V @ np.diag(a[k]) @ V.T, outputs.common_similarity(d, om[k]), atol=1e-12)


def test_common_similarity_regularizer_identity():
    # [BRBV11] §4.1: with γ = 1/(1 − ω + ωd), A⁻¹ = (1/(1−ω)) (I − ω γ 11ᵀ).
    d, om = 5, 0.4
    gamma = 1 / (1 - om + om * d)
    ref = (np.eye(d) - om * gamma * np.ones((d, d))) / (1 - om)
    np.testing.assert_allclose(np.linalg.inv(outputs.common_similarity(d, om)), ref, atol=1e-12)


def test_graph_regularization_with_self_weights_by_loops():
    M = np.array([[0.5, 1.0, 0.0], [1.0, 0.0, 2.0], [0.0, 2.0, 0.3]])
    D = np.zeros((3, 3))
    for l in range(3):
        D[l, l] = sum(M[l, h] for h in range(3)) + M[l, l]
    L = D - M
    A = np.asarray(outputs.graph_regularization(M))
    np.testing.assert_allclose(A, np.linalg.inv(L), atol=1e-12)  # self weights make L invertible
    # the regularizer of eq. (22) equals Σ_ℓq L_ℓq ⟨f^ℓ, f^q⟩ for coefficient vectors
    F = np.random.default_rng(1).normal(size=(3, 6))
    J = 0.5 * sum(np.sum((F[l] - F[q]) ** 2) * M[l, q] for l in range(3) for q in range(3))
    J += sum(np.sum(F[l] ** 2) * M[l, l] for l in range(3))
    assert np.trace(F.T @ L @ F) == pytest.approx(J)


def test_output_clusters_with_arbitrary_labels_by_loops():
    labels = ["b", "a", "b", "c", "a"]
    E = np.array([[1.0 if labels[i] == c else 0.0 for c in ("a", "b", "c")] for i in range(5)])
    M = np.zeros((5, 5))
    for l in range(5):
        for q in range(5):
            M[l, q] = sum(E[l, c] * E[q, c] / E[:, c].sum() for c in range(3))
    G = 0.7 * np.eye(5) + (0.2 - 0.7) * M
    np.testing.assert_allclose(outputs.output_clusters(labels, 0.7, 0.2), np.linalg.inv(G), atol=1e-12)


def test_mean_regularized_by_loops():
    d, c = 4, 0.5
    ref = np.array([[1 / c**2 + (i == j) for j in range(d)] for i in range(d)])
    np.testing.assert_allclose(outputs.mean_regularized(d, c), ref, atol=1e-12)


@pytest.mark.parametrize(
    "call,err,match",
    [(lambda: outputs.common_similarity(3, -0.1), ParameterError, "omega"),
     (lambda: outputs.common_similarity(3, [0.1, 0.2]), ParameterError, "omega"),
     (lambda: outputs.common_similarity(0, 0.5), ParameterError, "d"),
     (lambda: outputs.common_similarity_eigh(3, [0.2, 1.5]), ParameterError, "omegas"),
     (lambda: outputs.independent(2.5), ParameterError, "d"),
     (lambda: outputs.mean_regularized(3, -1.0), ParameterError, "c"),
     (lambda: outputs.mean_regularized(3, float("inf")), ParameterError, "c"),
     (lambda: outputs.output_clusters([0, 1], 1.0, -2.0), ParameterError, "eps2"),
     (lambda: outputs.output_clusters([[0, 1]], 1.0, 1.0), ShapeError, "assignments"),
     (lambda: outputs.graph_regularization([[0.0, 1.0], [0.5, 0.0]]), OutputMatrixError, "symmetric"),
     (lambda: outputs.graph_regularization(np.ones((2, 3))), OutputMatrixError, "square"),
     (lambda: outputs.custom(np.eye(3), d=2), OutputMatrixError, "3"),
     (lambda: outputs.eigh_output([[1.0, 2.0], [2.0, 1.0]]), OutputMatrixError, "semidefinite"),
     (lambda: outputs.low_rank(np.ones(3)), ShapeError, "B")],
)
def test_more_bad_output_arguments(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_eigh_output_under_jit():
    A = np.asarray(outputs.mean_regularized(3, 1.0))
    a, V = jax.jit(outputs.eigh_output)(A)
    np.testing.assert_allclose(np.sort(np.asarray(a)), [1.0, 1.0, 4.0], atol=1e-12)
