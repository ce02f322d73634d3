"""Iterative paths: explicit loops, the eigen path, batched ω paths, iterated Tikhonov, errors."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from _reference import dense_filter_coefficients, gaussian_gram, problem, random_psd
from jaxmtl.errors import DivergenceError, NonFiniteError, ParameterError, ShapeError
from jaxmtl.filters import IteratedTikhonov, Landweber, NuMethod, Tikhonov
from jaxmtl.paths import batched_nu_path_over_omegas, common_similarity_path, iterated_tikhonov_path, eval_map, iterative_path, path_predictions, path_scan
from jaxmtl.operators import DenseOperator, SeparableOperator, separable_eigh
from jaxmtl.operators import task_indexed_operator
from jaxmtl.kernels.outputs import common_similarity, common_similarity_eigh
from jaxmtl.paths import spectral_path
from jaxmtl.selection import kfold_masks

OMEGAS = np.array([0.0, 0.3, 0.7, 1.0])


def _loop(G, y, n, filt, tau, T):
    """Dense NumPy iterations of the filter on Γ/n (G is nd × nd); coefficients per step."""
    c, cp = np.zeros_like(y), np.zeros_like(y)
    out = []
    for i in range(1, T + 1):
        if isinstance(filt, Landweber):
            c = c + tau * (y / n - G @ c / n)
        else:
            u, w = (float(v) for v in filt.coefficients(i))
            c, cp = c + u * (c - cp) + tau * w * (y / n - G @ c / n), c
        out.append(c.copy())
    return out


@pytest.mark.parametrize("filt", [Landweber(), NuMethod()])
def test_paths_equal_explicit_loops_on_a_task_indexed_operator(filt):
    rng = np.random.default_rng(0)
    N, T_ = 18, 3
    X = rng.normal(size=(N, 2))
    tasks = np.r_[0, 1, 2, rng.integers(0, 3, N - 3)]
    op = task_indexed_operator(gaussian_gram(X, X, 1.0), random_psd(T_, rng), tasks)
    G = np.asarray(op.as_matrix())
    y = np.sin(X[:, :1]) + 0.1 * rng.normal(size=(N, 1))
    tau = 0.9 / np.linalg.eigvalsh(G / N).max()
    steps = 15
    res = iterative_path(op, y, filt, steps, tau=tau, eval_op=op, Y_eval=jnp.asarray(y))
    ref = _loop(G, y, N, filt, tau, steps)
    losses = [np.mean((G @ c - y) ** 2) for c in ref]
    np.testing.assert_allclose(res.losses, losses, rtol=1e-9)
    np.testing.assert_allclose(res.coef, ref[-1], rtol=1e-9, atol=1e-12)
    k = int(np.argmin(losses))
    assert int(res.best_step) == k + 1
    np.testing.assert_allclose(res.best_coef, ref[k], rtol=1e-9, atol=1e-12)
    for t in (1, 2, 7):  # a shorter path stops at step t exactly
        np.testing.assert_allclose(iterative_path(op, y, filt, t, tau=tau).coef, ref[t - 1], rtol=1e-9, atol=1e-12)
        # and so does the full-length program told to stop there (one program for every step count)
        stopped = path_scan(op, jnp.asarray(y), filt, steps, tau=tau, stop=t)
        np.testing.assert_allclose(stopped.coef, ref[t - 1], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(stopped.best_coef, ref[t - 1], rtol=1e-9, atol=1e-12)
        assert int(stopped.best_step) == t and not bool(stopped.diverged)


@pytest.mark.parametrize("filt", [Landweber(), NuMethod()])
def test_omega_batch_equals_eigen_path_and_separate_runs(filt):
    _, K, _, Y = problem(n=30, d=3)
    n, d = Y.shape
    Kv = jnp.asarray(K[:12])
    res = common_similarity_path(K, Y, OMEGAS, filt, 40, K_eval=Kv, Y_eval=Y[:12])
    a, V = common_similarity_eigh(d, OMEGAS)
    s, U = np.linalg.eigh(K)
    from jaxmtl.operators import SeparableEigh

    eig = SeparableEigh(jnp.asarray(np.maximum(s, 0)), jnp.asarray(U), jnp.asarray(a), jnp.asarray(V))
    steps = jnp.arange(1, 41)
    tau = res.tau  # the batched path's per-ω step sizes, used by the eigen path too
    for w in range(len(OMEGAS)):
        e1 = SeparableEigh(eig.s, eig.U, eig.a[w], eig.V)
        C = spectral_path(e1, jnp.asarray(Y), filt, steps, tau=tau[w], output="coefficients")[-1]
        assert float(jnp.abs(res.coef[w] - C).max() / jnp.abs(C).max()) < 1e-8
        op = SeparableOperator(jnp.asarray(K), jnp.asarray(common_similarity(d, OMEGAS[w])))
        one = path_scan(op, jnp.asarray(Y), filt, 40, SeparableOperator(Kv, op.A), jnp.asarray(Y[:12]),
                        None, tau[w])
        np.testing.assert_allclose(res.losses[w], one.losses, rtol=1e-9)
        assert int(res.best_step[w]) == int(one.best_step)
        np.testing.assert_allclose(res.best_coef[w], one.best_coef, rtol=1e-9, atol=1e-13)
    # default τ is 1/σ_max per ω (within the power-iteration margin)
    smax = np.linalg.eigvalsh(K).max() * (1 + (d - 1) * OMEGAS) / n
    assert np.all(np.asarray(tau) * smax <= 1.0) and np.all(np.asarray(tau) * smax > 0.9)


def test_vmap_of_the_generic_path_over_omegas_gives_the_same_numbers():
    """jax.vmap over ω of a separable path (K @ C batched → one GEMM) = the stacked batch."""
    _, K, _, Y = problem(n=20, d=2)
    Kj, Yj = jnp.asarray(K), jnp.asarray(Y)
    om = jnp.asarray(OMEGAS)
    t0 = 0.9 * 20 / (np.linalg.eigvalsh(K).max() * 2)  # below 1/σ_max for every ω
    tau = jnp.full((4,), t0)

    def one(w, t):
        A = w * jnp.ones((2, 2)) + (1 - w) * jnp.eye(2)
        return path_scan(SeparableOperator(Kj, A), Yj, NuMethod(), 25, tau=t).coef

    np.testing.assert_allclose(jax.jit(jax.vmap(one))(om, tau),
                               common_similarity_path(K, Y, OMEGAS, "nu_method", 25, tau=t0).coef,
                               rtol=1e-10, atol=1e-13)


def test_kfold_masks_share_the_training_product_and_equal_separate_runs():
    _, K, _, Y = problem(n=24, d=2)
    masks = kfold_masks(24, 3, 0)
    held = (~masks).astype(float)
    w = held / held.sum(1, keepdims=True)
    res = common_similarity_path(K, Y, OMEGAS, "nu_method", 20, Y_eval=Y, w_eval=w, mask=masks)
    assert res.losses.shape == (3, 4, 20) and res.coef.shape == (3, 4, 24, 2)
    for f in range(3):
        for j, om in enumerate(OMEGAS):
            op = SeparableOperator(jnp.asarray(K), jnp.asarray(common_similarity(2, om)))
            one = path_scan(op, jnp.asarray(Y), NuMethod(), 20, op, jnp.asarray(Y), jnp.asarray(w[f]),
                            res.tau[f, j], jnp.asarray(masks[f]))
            np.testing.assert_allclose(res.losses[f, j], one.losses, rtol=1e-9)
            np.testing.assert_allclose(res.coef[f, j], one.coef, rtol=1e-9, atol=1e-13)
            assert np.all(np.asarray(res.coef[f, j])[~masks[f]] == 0)  # held-out rows stay absent


def test_nu_method_reaches_landweber_best_in_about_sqrt_steps():
    rng = np.random.default_rng(1)
    X, Xv = rng.uniform(-1, 1, (100, 1)), rng.uniform(-1, 1, (150, 1))
    f = lambda x: np.c_[np.sin(4 * x), np.sin(4 * x) + 0.3 * x]
    Y = f(X) + 0.1 * rng.normal(size=(100, 2))
    K, Kv = gaussian_gram(X, X, 0.3), gaussian_gram(Xv, X, 0.3)
    kw = dict(K_eval=Kv, Y_eval=f(Xv))
    land = common_similarity_path(K, Y, [0.5], "landweber", 3000, **kw)
    nu = batched_nu_path_over_omegas(K, Y, [0.5], 300, **kw)
    t = int(land.best_step[0])
    best = float(np.min(land.losses[0]))
    ok = np.asarray(nu.losses[0]) <= best * 1.001
    assert ok.any()
    assert int(np.argmax(ok)) + 1 <= 3 * np.sqrt(t)


def test_divergence_is_reported_or_flagged():
    _, K, _, Y = problem(n=20, d=2)
    smax = np.linalg.eigvalsh(K).max() * (1 + OMEGAS[-1]) / 20  # largest σ over the grid
    with pytest.raises(DivergenceError, match=r"tau=.* exceeds 2/σ_max≈"):
        common_similarity_path(K, Y, OMEGAS, "landweber", 300, tau=3.0 / smax)
    res = common_similarity_path(K, Y, OMEGAS, "landweber", 300, tau=3.0 / smax, check=False,
                                 K_eval=K, Y_eval=Y)
    assert bool(res.diverged[-1]) and np.all(np.isfinite(res.coef)) and np.all(np.isfinite(res.best_coef))
    assert np.isinf(np.asarray(res.losses)[-1, -1])
    op = SeparableOperator(jnp.asarray(K), jnp.eye(2))
    sig = np.linalg.eigvalsh(K).max() / 20
    with pytest.raises(DivergenceError, match="tau"):
        iterative_path(op, Y, "nu_method", 200, tau=3.0 / sig)


@pytest.mark.parametrize("dense", [False, True])
def test_iterated_tikhonov_equals_the_filter_on_the_eigen_path(dense):
    _, K, A, Y = problem(n=15, d=3)
    op = SeparableOperator(jnp.asarray(K), jnp.asarray(A))
    arg = np.kron(K, A) if dense else op
    Kv = K[:6]
    lam = 0.05
    res = iterated_tikhonov_path(arg, Y, lam, 6, eval_op=SeparableOperator(jnp.asarray(Kv), jnp.asarray(A)),
                                 Y_eval=Y[:6])
    losses = []
    for order in range(1, 7):  # the filter of each order on the eigenvalues of (K ⊗ A)/n
        g = lambda w: np.asarray(IteratedTikhonov(order=order)(jnp.asarray(w), lam))
        C = dense_filter_coefficients(K, A, Y, g)
        losses.append(np.mean((Kv @ C @ A - Y[:6]) ** 2))
    np.testing.assert_allclose(res.losses, losses, rtol=1e-8)
    assert float(np.abs(res.coef - C).max() / np.abs(C).max()) < 1e-8
    assert int(res.best_order) == int(np.argmin(losses)) + 1
    if not dense:  # a batch of λ (one Cholesky each); order 1 is Tikhonov on the eigen path
        lams = np.array([0.01, 0.1, 1.0])
        batch = iterated_tikhonov_path(op, Y, lams, 1)
        ridge = spectral_path(separable_eigh(K, A), jnp.asarray(Y), Tikhonov(), jnp.asarray(lams),
                              output="coefficients")
        np.testing.assert_allclose(batch.coef, ridge, rtol=1e-8, atol=1e-12)


def test_bad_inputs_are_reported():
    _, K, _, Y = problem(n=12, d=2)
    with pytest.raises(ShapeError, match="K must be"):
        common_similarity_path(K[:5], Y, OMEGAS, "nu_method", 5)
    Kn = K.copy()
    Kn[0, 0] = np.nan
    with pytest.raises(NonFiniteError, match="K"):
        common_similarity_path(Kn, Y, OMEGAS, "nu_method", 5)
    Yi = Y.copy()
    Yi[1, 1] = np.inf
    with pytest.raises(NonFiniteError, match="Y"):
        common_similarity_path(K, Yi, OMEGAS, "nu_method", 5)
    with pytest.raises(ParameterError, match="omegas"):
        common_similarity_path(K, Y, [1.5], "nu_method", 5)
    with pytest.raises(ParameterError, match="iterative"):
        common_similarity_path(K, Y, OMEGAS, Tikhonov(), 5)
    with pytest.raises(ParameterError, match="n_steps"):
        common_similarity_path(K, Y, OMEGAS, "nu_method", 0)
    with pytest.raises(ShapeError, match="mask"):
        common_similarity_path(K, Y, OMEGAS, "nu_method", 5, mask=np.ones(11, bool))
    with pytest.raises(ShapeError, match="K_eval"):
        common_similarity_path(K, Y, OMEGAS, "nu_method", 5, K_eval=K[:3, :4], Y_eval=Y[:3])
    with pytest.raises(ParameterError, match="tau"):
        common_similarity_path(K, Y, OMEGAS, "nu_method", 5, tau=-1.0)
    op = SeparableOperator(jnp.asarray(K), jnp.eye(2))
    with pytest.raises(ParameterError, match="lam"):
        iterated_tikhonov_path(op, Y, 0.0, 3)
    with pytest.raises(ParameterError, match="order"):
        iterated_tikhonov_path(op, Y, 0.1, 0)
    with pytest.raises(ShapeError, match="shape"):
        iterated_tikhonov_path(op, Y[:, :1], 0.1, 3)
    with pytest.raises(ShapeError, match="Gram"):
        iterated_tikhonov_path(np.eye(5), Y, 0.1, 3)
    with pytest.raises(NonFiniteError):
        iterated_tikhonov_path(op, Yi, 0.1, 3)
    with pytest.raises(DivergenceError, match="Cholesky"):  # an indefinite "Gram" matrix
        iterated_tikhonov_path(DenseOperator(-jnp.eye(24), 2), Y, 0.01, 3)


def test_eval_map_and_per_step_predictions():
    _, K, A, Y = problem(n=16, d=2)
    op = SeparableOperator(jnp.asarray(K), jnp.asarray(A[:2, :2]))
    ev = eval_map(lambda C, Kv, B: Kv @ C @ B, K[:5], A[:2, :2])
    res = iterative_path(op, Y, "nu_method", 12, eval_op=ev, Y_eval=Y[:5])
    F = path_predictions(op, Y, "nu_method", 12, eval_op=ev, tau=res.tau)
    assert F.shape == (12, 5, 2)
    np.testing.assert_allclose(F[-1], K[:5] @ np.asarray(res.coef) @ A[:2, :2], rtol=1e-10)
    np.testing.assert_allclose(res.losses, np.mean((np.asarray(F) - Y[:5]) ** 2, axis=(1, 2)), rtol=1e-10)
    with pytest.raises(DivergenceError, match="tau"):
        path_predictions(op, Y, "landweber", 300, eval_op=ev, tau=float(res.tau) * 5)
