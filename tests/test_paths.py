"""The eigen path against dense nd×nd references and explicit iterations."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from _reference import dense_filter_coefficients, gaussian_gram, problem
from jaxmtl.errors import ShapeError
from jaxmtl.filters import IteratedTikhonov, Landweber, NuMethod, Tikhonov, TruncatedSVD
from jaxmtl.operators import DenseOperator, SeparableOperator, separable_eigh, separable_solve
from jaxmtl.paths import filtered_coefficients, path_map, spectral_path


def rel(a, b):
    return float(np.abs(np.asarray(a) - b).max() / np.abs(b).max())


def test_separable_operator_matches_kron():
    _, K, A, Y = problem()
    op = SeparableOperator(jnp.asarray(K), jnp.asarray(A))
    dense = np.kron(K, A)
    assert rel(op.mv(jnp.asarray(Y)), (dense @ Y.reshape(-1)).reshape(Y.shape)) < 1e-12
    assert rel(op.as_matrix(), dense) < 1e-12
    assert rel(DenseOperator(jnp.asarray(dense), 3).mv(jnp.asarray(Y)), op.mv(jnp.asarray(Y))) < 1e-12
    assert float(op.spectral_norm()) == pytest.approx(np.linalg.eigvalsh(dense).max(), rel=1e-10)


def test_tikhonov_path_equals_nd_solve():
    _, K, A, Y = problem()
    n, d = Y.shape
    lams = np.geomspace(1e-4, 1.0, 6)
    C = spectral_path(separable_eigh(K, A), jnp.asarray(Y), Tikhonov(), jnp.asarray(lams),
                      output="coefficients")
    for k, lam in enumerate(lams):
        ref = np.linalg.solve(np.kron(K, A) + n * lam * np.eye(n * d), Y.reshape(-1)).reshape(n, d)
        assert rel(C[k], ref) < 1e-8


@pytest.mark.parametrize("filt", [IteratedTikhonov(3), TruncatedSVD(), Tikhonov()])
def test_closed_form_paths_equal_dense_eigendecomposition(filt):
    _, K, A, Y = problem()
    lams = np.geomspace(1e-3, 0.5, 5)
    C = spectral_path(separable_eigh(K, A), jnp.asarray(Y), filt, jnp.asarray(lams), output="coefficients")
    for k, lam in enumerate(lams):
        ref = dense_filter_coefficients(K, A, Y, lambda w: np.asarray(filt(jnp.asarray(w), lam)))
        assert rel(C[k], ref) < 1e-8


@pytest.mark.parametrize("filt", [Landweber(), NuMethod()])
def test_iterative_paths_equal_explicit_iterations(filt):
    """Every step of the eigen path equals the matrix recurrence run on the nd×nd system."""
    _, K, A, Y = problem()
    n, d = Y.shape
    G = np.kron(K, A)
    tau = 1.0 / np.linalg.eigvalsh(G / n).max()
    T = 30
    C = spectral_path(separable_eigh(K, A), jnp.asarray(Y), filt, jnp.arange(1, T + 1),
                      output="coefficients")
    y = Y.reshape(-1)
    c, c_prev = np.zeros(n * d), np.zeros(n * d)
    for i in range(1, T + 1):
        if filt.name == "landweber":
            c, c_prev = c + tau / n * (y - G @ c), c
        else:
            u, w = (float(v) for v in filt.coefficients(i))
            c, c_prev = c + u * (c - c_prev) + tau * w / n * (y - G @ c), c
        assert rel(C[i - 1].reshape(-1), c) < 1e-8


def test_predictions_and_losses_are_consistent():
    X, K, A, Y = problem()
    Xe = np.random.default_rng(1).normal(size=(7, 2))
    Ke = gaussian_gram(Xe, X, 1.0)
    Ye = np.ones((7, 3))
    eig = separable_eigh(K, A)
    lams = jnp.asarray([1e-2, 1e-1])
    C = spectral_path(eig, jnp.asarray(Y), Tikhonov(), lams, output="coefficients")
    F = spectral_path(eig, jnp.asarray(Y), Tikhonov(), lams, K_eval=jnp.asarray(Ke))
    L = spectral_path(eig, jnp.asarray(Y), Tikhonov(), lams, K_eval=jnp.asarray(Ke),
                      Y_eval=jnp.asarray(Ye), output="loss")
    for k in range(2):
        ref = Ke @ np.asarray(C[k]) @ A
        assert rel(F[k], ref) < 1e-10
        assert float(L[k]) == pytest.approx(((ref - Ye) ** 2).mean(), rel=1e-10)
    single = filtered_coefficients(Tikhonov(), eig, jnp.asarray(Y), 1e-2)
    assert rel(single, np.asarray(C[0])) < 1e-10


def test_omega_family_batch_equals_separate_paths():
    from jaxmtl.kernels.outputs import common_similarity, common_similarity_eigh

    _, K, _, Y = problem()
    omegas = np.array([0.0, 0.3, 1.0])
    a, V = common_similarity_eigh(3, omegas)
    s, U = np.linalg.eigh(K)
    from jaxmtl.operators import SeparableEigh

    batched = spectral_path(SeparableEigh(jnp.asarray(s), jnp.asarray(U), jnp.asarray(a), jnp.asarray(V)),
                            jnp.asarray(Y), NuMethod(), jnp.arange(1, 21), output="coefficients")
    assert batched.shape == (3, 20, 25, 3)
    for j, om in enumerate(omegas):
        one = spectral_path(separable_eigh(K, np.asarray(common_similarity(3, om))), jnp.asarray(Y),
                            NuMethod(), jnp.arange(1, 21), output="coefficients")
        assert rel(batched[j], np.asarray(one)) < 1e-8


def test_tikhonov_matches_sklearn_kernel_ridge():
    """A = I, g = 1/(σ+λ) on Γ/n ⇔ KernelRidge(alpha = n·λ) (see jaxmtl.filters)."""
    sklearn = pytest.importorskip("sklearn.kernel_ridge")
    X, K, _, Y = problem(n=40)
    n = X.shape[0]
    Xe = np.random.default_rng(3).normal(size=(9, 2))
    Ke = gaussian_gram(Xe, X, 1.0)
    lam = 3e-3
    F = spectral_path(separable_eigh(K, np.eye(3)), jnp.asarray(Y), Tikhonov(), jnp.asarray([lam]),
                      K_eval=jnp.asarray(Ke))[0]
    kr = sklearn.KernelRidge(alpha=n * lam, kernel="rbf", gamma=0.5).fit(X, Y)
    np.testing.assert_allclose(np.asarray(F), kr.predict(Xe), rtol=1e-8, atol=1e-10)


def test_separable_solve_equals_the_nd_system_and_the_eigen_path():
    rng = np.random.default_rng(5)
    n, lam = 12, 1e-2
    X = rng.normal(size=(n, 2))
    K = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 2)
    for d in (4, 20):  # the Cholesky route and the eigen route (d > CHOLESKY_MAX_OUTPUTS)
        B = rng.normal(size=(d, d))
        A = B @ B.T / d + 0.1 * np.eye(d)  # dense, non-diagonal
        Y = rng.normal(size=(n, d))
        C = np.asarray(separable_solve(jnp.asarray(K), jnp.asarray(A), jnp.asarray(Y), lam))
        dense = np.linalg.solve(np.kron(K, A) + n * lam * np.eye(n * d), Y.reshape(-1)).reshape(n, d)
        np.testing.assert_allclose(C, dense, rtol=1e-8, atol=1e-11)
        eig = separable_eigh(jnp.asarray(K), jnp.asarray(A))
        np.testing.assert_allclose(C, filtered_coefficients(Tikhonov(), eig, jnp.asarray(Y), lam), rtol=1e-8,
                                   atol=1e-11)
    with pytest.raises(ShapeError, match="K \\(12, 12\\) and A \\(3, 3\\)"):
        separable_solve(jnp.asarray(K), jnp.eye(4), jnp.ones((n, 3)), lam)


@pytest.mark.parametrize("filt", [NuMethod(), Landweber()])
@pytest.mark.parametrize("T", [1, 33, 100])
def test_path_map_reporting_a_few_steps_equals_the_explicit_recurrence(filt, T):
    """With a report mask the path emits at the marked steps only (zeros elsewhere), with the
    values of an explicit step-by-step loop; gradients flow through the branch."""
    rng = np.random.default_rng(T)
    sigma = jnp.asarray(rng.uniform(0.0, 1.0, (30, 3)))
    B = jnp.asarray(rng.normal(size=(7, 30)))
    steps = jnp.arange(1, T + 1)
    report = np.zeros(T, bool)
    report[[0, T // 3, T - 1]] = True
    emit = lambda g: (B @ g, jnp.sum(g))  # noqa: E731
    got = path_map(filt, sigma, steps, 1.0, emit, jnp.asarray(report))
    state, ref_F, ref_s = filt.init(jnp.ones_like(sigma)), [], []
    for i in range(1, T + 1):  # the reference: the recurrence as a Python loop
        state, g = filt.update(state, i, jnp.ones_like(sigma), lambda v: sigma * v, 1.0)
        ref_F.append(np.asarray(B @ g) if report[i - 1] else np.zeros((7, 3)))
        ref_s.append(float(jnp.sum(g)) if report[i - 1] else 0.0)
    np.testing.assert_allclose(np.asarray(got[0]), np.stack(ref_F), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(ref_s), rtol=1e-10, atol=1e-12)
    loss = lambda s: jnp.sum(path_map(filt, s, steps, 1.0, lambda g: jnp.sum(g**2), jnp.asarray(report)))  # noqa: E731
    full = lambda s: jnp.sum(jnp.where(jnp.asarray(report), path_map(filt, s, steps, 1.0, lambda g: jnp.sum(g**2)), 0.0))  # noqa: E731
    np.testing.assert_allclose(np.asarray(jax.grad(loss)(sigma)), np.asarray(jax.grad(full)(sigma)), rtol=1e-10)


@pytest.mark.parametrize("filt", [NuMethod(), Landweber()])
def test_a_path_compiled_longer_than_its_report_stops_after_the_last_reported_step(filt):
    """A path of 8T steps reporting steps ≤ T only (its segments after the last reported step
    skipped) emits what the T-step path emits, zeros after, with the same gradients; reporting
    later steps runs them (one program for both, as a default path and its continuation)."""
    T = 12
    rng = np.random.default_rng(5)
    sigma = jnp.asarray(rng.uniform(0.0, 1.0, (20, 2)))
    short = np.zeros(T, bool)
    short[[0, 4, T - 1]] = True
    report = np.concatenate([short, np.zeros(7 * T, bool)])
    emit = lambda g: jnp.sum(g**2, axis=0)  # noqa: E731
    run = jax.jit(lambda s, r: path_map(filt, s, jnp.arange(1, 8 * T + 1), 1.0, emit, r))
    got = run(sigma, report)
    ref = path_map(filt, sigma, jnp.arange(1, T + 1), 1.0, emit, jnp.asarray(short))
    np.testing.assert_allclose(np.asarray(got[:T]), np.asarray(ref), rtol=1e-12)
    assert not np.asarray(got[T:]).any()
    longer = report.copy()
    longer[[5 * T, 8 * T - 1]] = True
    state = filt.init(jnp.ones_like(sigma))
    for i in range(1, 8 * T + 1):  # the reference: the recurrence as a Python loop
        state, g = filt.update(state, i, jnp.ones_like(sigma), lambda v: sigma * v, 1.0)
    np.testing.assert_allclose(np.asarray(run(sigma, longer)[-1]), np.asarray(emit(g)), rtol=1e-10)
    assert run._cache_size() == 1
    grad_long = jax.grad(lambda s: jnp.sum(run(s, report)))(sigma)
    grad_short = jax.grad(lambda s: jnp.sum(path_map(filt, s, jnp.arange(1, T + 1), 1.0, emit, jnp.asarray(short))))
    np.testing.assert_allclose(np.asarray(grad_long), np.asarray(grad_short(sigma)), rtol=1e-10)
