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


def nu_method_loop(G, y, tau, n, T, nu=1.0):
    """Explicit ν-method recurrence ([BRBV11] §3.3) c ← c + u(c − c') + ωτ/n (y − G c), T steps.

    ``G`` is a dense (N, N) matrix and ``y`` an (N,) or (N, d) right-hand side; returns the T iterates.
    The step coefficients are written out here, independently of ``jaxmtl.filters``.
    """
    c = cp = np.zeros_like(y)
    out = []
    for i in range(1, T + 1):
        if i == 1:
            u, w = 0.0, (4 * nu + 2) / (4 * nu + 1)
        else:
            u = (i - 1) * (2 * i - 3) * (2 * i + 2 * nu - 1) / (
                (i + 2 * nu - 1) * (2 * i + 4 * nu - 1) * (2 * i + 2 * nu - 3))
            w = 4 * (2 * i + 2 * nu - 1) * (i + nu - 1) / ((i + 2 * nu - 1) * (2 * i + 4 * nu - 1))
        c, cp = c + u * (c - cp) + w * tau / n * (y - G @ c), c
        out.append(c)
    return out
