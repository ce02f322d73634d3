"""Matrix-free paths: explicit iterations, the eigen path, acceleration, divergence, batching."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from _reference import gaussian_gram, problem
from jaxmtl.errors import DivergenceError, ParameterError
from jaxmtl.filters import Landweber, NuMethod, Tikhonov
from jaxmtl.kernels import Gaussian
from jaxmtl.paths import grid_path_losses, iterative_path, path_scan
from jaxmtl.operators import DenseOperator, SeparableOperator, separable_eigh
from jaxmtl.paths import spectral_path
from jaxmtl.operators import div_curl


def test_path_equals_explicit_loop_on_a_dense_operator():
    """Coefficients, losses, best step and best coefficients against an explicit NumPy loop.

    Noisy training outputs scored against the noiseless targets give a validation curve with an
    interior minimum, so ``best_coef`` (kept in the carry) differs from ``coef``
    (the last step) and is checked against the loop's iterate at that step.
    """
    rng = np.random.default_rng(0)
    X = rng.normal(size=(9, 2))
    op = div_curl(X, Gaussian(1.0), 0.4)
    G = np.asarray(op.as_matrix())
    Y = np.sin(X) + 0.5 * rng.normal(size=X.shape)
    n = 9
    tau = 0.9 / np.linalg.eigvalsh(G / n).max()
    T = 60
    res = iterative_path(DenseOperator(jnp.asarray(G), 2), Y, NuMethod(), T, tau=tau,
                         eval_op=op, Y_eval=jnp.asarray(np.sin(X)))
    c, cp, y = np.zeros(n * 2), np.zeros(n * 2), Y.reshape(-1)
    losses, iterates = [], []
    for i in range(1, T + 1):
        u, w = (float(v) for v in NuMethod().coefficients(i))
        c, cp = c + u * (c - cp) + tau * w / n * (y - G @ c), c
        iterates.append(c)
        losses.append(np.mean((G @ c - np.sin(X).reshape(-1)) ** 2))
    np.testing.assert_allclose(np.asarray(res.coef).reshape(-1), c, rtol=1e-9)
    np.testing.assert_allclose(res.losses, losses, rtol=1e-8)
    best = int(np.argmin(losses)) + 1
    assert int(res.best_step) == best
    assert best < T  # otherwise best_coef == coef and the next line would not test the carry
    np.testing.assert_allclose(np.asarray(res.best_coef).reshape(-1), iterates[best - 1], rtol=1e-9)
    assert np.abs(iterates[best - 1] - c).max() > 1e-3


@pytest.mark.parametrize("filt", [Landweber(), NuMethod()])
def test_separable_matrix_free_path_equals_eigen_path(filt):
    _, K, A, Y = problem()
    op = SeparableOperator(jnp.asarray(K), jnp.asarray(A))
    eig = separable_eigh(K, A)
    tau = 1.0 / (float(jnp.max(eig.s) * jnp.max(eig.a)) / Y.shape[0])
    Ke = jnp.asarray(K[:10])
    ev = SeparableOperator(Ke, jnp.asarray(A))
    res = iterative_path(op, Y, filt, 40, tau=tau, eval_op=ev, Y_eval=jnp.asarray(Y[:10]))
    eig_losses = spectral_path(eig, jnp.asarray(Y), filt, jnp.arange(1, 41), K_eval=Ke,
                               Y_eval=jnp.asarray(Y[:10]), output="loss")
    np.testing.assert_allclose(res.losses, eig_losses, rtol=1e-8)
    C = spectral_path(eig, jnp.asarray(Y), filt, jnp.arange(1, 41), output="coefficients")[-1]
    assert float(jnp.abs(res.coef - C).max() / jnp.abs(C).max()) < 1e-8


def test_nu_method_reaches_landweber_error_in_about_sqrt_steps():
    rng = np.random.default_rng(1)
    X, Xv = rng.uniform(-1, 1, (100, 1)), rng.uniform(-1, 1, (150, 1))
    f = lambda x: np.sin(4 * x)
    Y = f(X) + 0.1 * rng.normal(size=X.shape)
    op = SeparableOperator(jnp.asarray(gaussian_gram(X, X, 0.3)), jnp.eye(1))
    ev = SeparableOperator(jnp.asarray(gaussian_gram(Xv, X, 0.3)), jnp.eye(1))
    land = iterative_path(op, Y, "landweber", 4000, eval_op=ev, Y_eval=jnp.asarray(f(Xv)))
    nu = iterative_path(op, Y, "nu_method", 300, eval_op=ev, Y_eval=jnp.asarray(f(Xv)))
    t = int(land.best_step)
    best = float(np.min(land.losses))
    reach = int(np.argmax(np.asarray(nu.losses) <= best * 1.001)) + 1
    assert np.min(nu.losses) <= best * 1.001
    assert reach <= 3 * np.sqrt(t)


def test_divergence_is_reported_never_silent():
    _, K, A, Y = problem()
    op = SeparableOperator(jnp.asarray(K), jnp.asarray(A))
    sig = np.linalg.eigvalsh(np.kron(K, A) / Y.shape[0]).max()
    with pytest.raises(DivergenceError, match="tau"):
        iterative_path(op, Y, "landweber", 200, tau=3.0 / sig)
    res = iterative_path(op, Y, "landweber", 200, tau=3.0 / sig, check=False, eval_op=op,
                         Y_eval=jnp.asarray(Y))
    assert bool(res.diverged) and np.all(np.isfinite(res.coef)) and np.all(np.isfinite(res.best_coef))
    assert np.isinf(np.asarray(res.losses)[-1])


def test_vmap_over_folds_and_omegas_equals_separate_runs():
    from jaxmtl.selection import kfold_masks

    _, K, _, Y = problem(n=20, d=1)
    masks = jnp.asarray(kfold_masks(20, 4))
    op = SeparableOperator(jnp.asarray(K), jnp.eye(1))

    def build(kern, p, data):
        return SeparableOperator(p * data, jnp.eye(1))

    losses, div = grid_path_losses(build, Gaussian(jnp.array([1.0])), jnp.asarray([1.0, 2.0]),
                                   jnp.asarray(K), jnp.asarray(Y), masks, NuMethod(), 15)
    assert losses.shape == (1, 4, 2, 15) and not bool(div.any())
    for f in range(4):
        held = 1.0 - masks[f].astype(float)
        one = path_scan(op, jnp.asarray(Y), NuMethod(), 15, op, jnp.asarray(Y), held / held.sum(), None, masks[f])
        np.testing.assert_allclose(losses[0, f, 0], one.losses, rtol=1e-9)


def test_bad_arguments():
    _, K, A, Y = problem()
    op = SeparableOperator(jnp.asarray(K), jnp.asarray(A))
    with pytest.raises(ParameterError, match="iterative"):
        iterative_path(op, Y, Tikhonov(), 10)
    with pytest.raises(ParameterError, match="n_steps"):
        iterative_path(op, Y, "nu_method", 0)
    with pytest.raises(ParameterError, match="shape"):
        iterative_path(op, Y[:, :2], "nu_method", 5)


def test_max_eigenvalue_is_a_tight_upper_bound():
    """Lanczos σ̂ against eigvalsh: Gaussian Grams, a div/curl-free operator, a clustered top of
    the spectrum, and spaces smaller than the number of steps (exhausted Krylov space)."""
    from jaxmtl.operators import max_eigenvalue

    rng = np.random.default_rng(3)
    cases = []
    for n in (3, 7, 60, 250):
        X = rng.normal(size=(n, 2))
        K = np.asarray(Gaussian(1.0)(X, X))
        cases.append((lambda c, K=K: K @ c, (n, 1), np.linalg.eigvalsh(K).max()))
        op = div_curl(X, 0.7, 0.3)
        cases.append((op.mv, (n, 2), np.linalg.eigvalsh(np.asarray(op.as_matrix())).max()))
    Qm, _ = np.linalg.qr(rng.normal(size=(200, 200)))
    ev = np.r_[1.0, 1.0 - 1e-7, 1.0 - 2e-7, rng.random(197)]
    G = (Qm * ev) @ Qm.T
    cases.append((lambda c: G @ c, (200, 1), 1.0))
    for mv, shape, true in cases:
        est = float(max_eigenvalue(mv, shape, jnp.float64))
        assert true <= est <= 1.02 * true, (shape, est, true)
