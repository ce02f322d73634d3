"""Dense NumPy references shared by the tests (never used by the library)."""

import numpy as np


def gaussian_gram(X1, X2, sigma):
    d2 = ((X1[:, None, :] - X2[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * sigma**2))


def random_psd(d, rng, rank=None):
    B = rng.normal(size=(d, rank or d))
    return B @ B.T / (rank or d) + (0.0 if rank else 0.1) * np.eye(d)


def problem(n=25, d=3, p=2, seed=0):
    """Inputs, a Gaussian Gram, a non-diagonal PSD output matrix and outputs."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    K = gaussian_gram(X, X, 1.0)
    A = random_psd(d, rng)
    Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1]), X[:, 0] * X[:, 1]][:, :d] + 0.1 * rng.normal(size=(n, d))
    return X, K, A, Y


def dense_filter_coefficients(K, A, Y, g):
    """C = g(Γ/n) Y / n from an explicit eigendecomposition of the nd×nd matrix K ⊗ A."""
    n, d = Y.shape
    G = np.kron(K, A) / n
    w, W = np.linalg.eigh(G)
    w = np.maximum(w, 0)
    return (W @ (g(w) * (W.T @ Y.reshape(-1)))).reshape(n, d) / n
