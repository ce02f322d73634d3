"""Gradients of the validation criteria (jaxmtl.learning.gradient) against independent references.

Every gradient is compared with central finite differences of the criterion's value, every value
with a dense NumPy computation (Kronecker systems, explicit fold solves, brute-force leave-one-out),
and the checkpointed matrix-free path with the plain scan and an explicit Python loop.
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from jaxmtl.filters import Landweber, NuMethod, Tikhonov
from jaxmtl.kernels import outputs as _outputs
from jaxmtl.kernels.scalar import Gaussian
from jaxmtl.learning.gradient import (
    RematCrossOperator,
    RematKernelOperator,
    checkpointed_path_losses,
    constrain,
    eigen_criterion,
    kfold_tikhonov_loss,
    minimize,
    partition_kernel,
    soft_min,
    tikhonov_solve,
    unconstrain,
)
from jaxmtl.operators import SeparableOperator
from jaxmtl.paths import path_scan
from jaxmtl.selection import kfold_masks

N, P, D = 24, 3, 3
RTOL = 1e-5


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, P))
    W = rng.normal(size=(P, D))
    Y = np.tanh(X @ W) + 0.1 * rng.normal(size=(N, D))
    return X, Y - Y.mean(0)


def fd(f, x, h=1e-5):
    """Central finite differences of a scalar function of a float or a 1-D/2-D array (float64)."""
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[idx] = h * max(1.0, abs(x[idx]))
        g[idx] = (float(f(x + e)) - float(f(x - e))) / (2 * e[idx])
    return g


def assert_grad(g, ref, rtol=RTOL):
    g, ref = np.asarray(g, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, ref, rtol=rtol, atol=rtol * 1e-2 * np.max(np.abs(ref)))


def cs(d, om):
    return om * jnp.ones((d, d)) + (1.0 - om) * jnp.eye(d)


def gram(X, sigma):
    """NumPy Gaussian Gram (scalar or per-feature widths): the reference of the kernel."""
    Z = np.asarray(X) / np.asarray(sigma)
    d2 = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / 2.0)


# ---------------------------------------------------------------- reparametrisations
def test_constrain_matches_formulas_and_round_trips():
    x = np.linspace(-6.0, 6.0, 13)
    spec = {"s": "positive", "w": "unit", "b": "real"}
    out = constrain({"s": jnp.asarray(x), "w": jnp.asarray(x), "b": jnp.asarray(x)}, spec)
    np.testing.assert_allclose(out["s"], np.log1p(np.exp(x)), rtol=1e-13)
    np.testing.assert_allclose(out["w"], 1.0 / (1.0 + np.exp(-x)), rtol=1e-13)
    np.testing.assert_allclose(out["b"], x)
    back = unconstrain(out, spec)
    for k in spec:
        np.testing.assert_allclose(back[k], x, rtol=1e-10, atol=1e-10)
    params = {"s": jnp.array([1e-4, 0.3, 50.0]), "w": jnp.array([1e-3, 0.5, 0.999])}
    spec2 = {"s": "positive", "w": "unit"}
    again = constrain(unconstrain(params, spec2), spec2)
    for k, v in params.items():
        np.testing.assert_allclose(again[k], v, rtol=1e-10)


def test_constrain_rejects_unknown_constraint():
    from jaxmtl.errors import ParameterError

    with pytest.raises(ParameterError, match="constraints"):
        constrain({"x": jnp.zeros(1)}, {"x": "bounded"})


def test_partition_kernel_separates_widths():
    leaves, rest = partition_kernel(Gaussian(np.ones(4)))
    np.testing.assert_allclose(leaves.sigma, np.ones(4))
    assert rest.sigma is None


# ---------------------------------------------------------------- Tikhonov solve
def _dense_solve(K, A, Y, lam):
    n, d = Y.shape
    G = np.kron(K, A) + n * lam * np.eye(n * d)  # row-major vec: vec(K C A) = (K ⊗ A) vec C, A = Aᵀ
    return np.linalg.solve(G, Y.reshape(-1)).reshape(n, d)


@pytest.mark.parametrize("d", [3, 40])  # Cholesky per output direction, and one eigh of K
def test_tikhonov_solve_matches_dense_kronecker(data, d):
    X, _ = data
    rng = np.random.default_rng(d)
    K = gram(X, 1.3)
    B = rng.normal(size=(d, 2))
    A = B @ B.T + 0.1 * np.eye(d)
    Y = rng.normal(size=(N, d))
    C = tikhonov_solve(jnp.asarray(K), jnp.asarray(A), jnp.asarray(Y), 0.01)
    np.testing.assert_allclose(C, _dense_solve(K, A, Y, 0.01), rtol=1e-9, atol=1e-11)


def test_tikhonov_solve_gradients_match_dense_autodiff(data):
    """The implicit VJP against reverse mode through a dense LU solve of the Kronecker system."""
    X, Y = data
    K = jnp.asarray(gram(X, 1.3))
    A = cs(D, 0.4)
    R = jnp.asarray(np.random.default_rng(1).normal(size=Y.shape))

    def dense(K, A, Y, lam):
        n, d = Y.shape
        G = jnp.kron(K, A.T) + n * lam * jnp.eye(n * d)  # exactly vec(K C A), also off the symmetric set
        return jnp.linalg.solve(G, Y.reshape(-1)).reshape(n, d)

    obj = lambda solve: lambda K, A, Y, lam: jnp.sum(R * solve(K, A, Y, lam)) + jnp.sum(solve(K, A, Y, lam) ** 2)
    g = jax.grad(obj(tikhonov_solve), argnums=(0, 1, 2, 3))(K, A, jnp.asarray(Y), 0.02)
    ref = jax.grad(obj(dense), argnums=(0, 1, 2, 3))(K, A, jnp.asarray(Y), 0.02)
    for a, b in zip(g, ref):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10 * float(jnp.max(jnp.abs(b))))


# ---------------------------------------------------------------- k-fold criterion
def _kfold_reference(X, Y, sigma, A, lam, masks):
    """Explicit reduced solves on each fold's training rows (NumPy)."""
    out = []
    for m in masks:
        K = gram(X, sigma)
        Ktr = K[np.ix_(m, m)]
        C = _dense_solve(Ktr, np.asarray(A), Y[m], lam)
        F = K[np.ix_(~m, m)] @ C @ np.asarray(A)
        out.append(np.mean((F - Y[~m]) ** 2))
    return np.mean(out)


def test_kfold_value_matches_explicit_fold_solves(data):
    X, Y = data
    masks = kfold_masks(N, 4, 0)
    sig = np.array([0.8, 1.5, 2.0])
    val = kfold_tikhonov_loss(Gaussian(sig)(X, X), cs(D, 0.3), jnp.asarray(Y), 0.01, jnp.asarray(masks))
    np.testing.assert_allclose(val, _kfold_reference(X, Y, sig, cs(D, 0.3), 0.01, masks), rtol=1e-10)


def test_kfold_gradients_match_finite_differences(data):
    X, Y = data
    Xj, Yj = jnp.asarray(X), jnp.asarray(Y)
    masks = jnp.asarray(kfold_masks(N, 4, 0))

    @jax.jit
    def loss(sigma, om, lam):
        return kfold_tikhonov_loss(Gaussian(sigma)(Xj, Xj), cs(D, om), Yj, lam, masks)

    # scalar width, ω and λ
    g = jax.grad(loss, argnums=(0, 1, 2))(1.4, 0.35, 0.02)
    assert_grad(g[0], fd(lambda s: loss(float(s), 0.35, 0.02), 1.4))
    assert_grad(g[1], fd(lambda o: loss(1.4, float(o), 0.02), 0.35))
    assert_grad(g[2], fd(lambda lam: loss(1.4, 0.35, float(lam)), 0.02, h=1e-4))
    # per-feature (ARD) widths
    sig = np.array([0.9, 1.6, 2.5])
    gs = jax.grad(lambda s: loss(s, 0.35, 0.02))(jnp.asarray(sig))
    assert_grad(gs, fd(lambda s: loss(jnp.asarray(s), 0.35, 0.02), sig))


def test_kfold_gradient_of_low_rank_output_factor(data):
    """A = BBᵀ (rank 2 < d): the implicit gradient needs no eigendecomposition of A."""
    X, Y = data
    Xj, Yj = jnp.asarray(X), jnp.asarray(Y)
    K = Gaussian(1.4)(Xj, Xj)
    masks = jnp.asarray(kfold_masks(N, 3, 1))
    B0 = np.random.default_rng(5).normal(size=(D, 2))

    @jax.jit
    def loss(B):
        return kfold_tikhonov_loss(K, B @ B.T, Yj, 0.02, masks)

    assert_grad(jax.grad(loss)(jnp.asarray(B0)), fd(loss, B0))


# ---------------------------------------------------------------- eigen-path criteria
def _loo_reference(K, A, Y, lam):
    """Brute-force leave-one-out: n reduced dense solves."""
    n = Y.shape[0]
    err = 0.0
    for i in range(n):
        m = np.arange(n) != i
        # the closed form (I − H_ii)⁻¹ R_i is the fit without row i at the full-data α = nλ
        C = np.linalg.solve(np.kron(K[np.ix_(m, m)], A) + n * lam * np.eye((n - 1) * A.shape[0]),
                            Y[m].reshape(-1)).reshape(n - 1, -1)
        err += np.sum((K[i, m] @ C @ A - Y[i]) ** 2)
    return err / (n * Y.shape[1])


def test_eigen_loo_value_matches_brute_force(data):
    X, Y = data
    K = gram(X, 1.4)
    a, V = _outputs.common_similarity_eigh(D, [0.3])
    A = (np.asarray(V) * np.asarray(a)[0]) @ np.asarray(V).T
    val = eigen_criterion(jnp.asarray(K), jnp.asarray(a)[0], jnp.asarray(V), jnp.asarray(Y), 0.02, criterion="loo")
    np.testing.assert_allclose(val, _loo_reference(K, A, Y, 0.02), rtol=1e-8)


def test_eigen_gcv_value_matches_dense_hat_matrix(data):
    X, Y = data
    K = gram(X, 1.4)
    A = np.asarray(cs(D, 0.3))
    n, d = Y.shape
    G = np.kron(K, A)
    H = G @ np.linalg.inv(G + n * 0.02 * np.eye(n * d))
    R = Y.reshape(-1) - H @ Y.reshape(-1)
    ref = (R @ R / (n * d)) / (1 - np.trace(H) / (n * d)) ** 2
    a, V = _outputs.common_similarity_eigh(D, [0.3])
    val = eigen_criterion(jnp.asarray(K), jnp.asarray(a)[0], jnp.asarray(V), jnp.asarray(Y), 0.02, criterion="gcv")
    np.testing.assert_allclose(val, ref, rtol=1e-9)


def _eig_a(om):
    """Eigenvalues of A_ω on the shared eigenvectors (first: the mean direction)."""
    return jnp.concatenate([jnp.reshape(om * D + 1.0 - om, (1,)), jnp.full((D - 1,), 1.0 - om)])


@pytest.mark.parametrize("criterion", ["loo", "gcv"])
def test_eigen_criterion_gradients_match_finite_differences(data, criterion):
    X, Y = data
    Xj, Yj = jnp.asarray(X), jnp.asarray(Y)
    V = jnp.asarray(_outputs.common_similarity_eigh(D, [0.0])[1])

    @jax.jit
    def loss(sigma, om, lam):
        return eigen_criterion(Gaussian(sigma)(Xj, Xj), _eig_a(om), V, Yj, lam, criterion=criterion)

    g = jax.grad(loss, argnums=(0, 1, 2))(1.4, 0.35, 0.05)
    assert_grad(g[0], fd(lambda s: loss(float(s), 0.35, 0.05), 1.4))
    assert_grad(g[1], fd(lambda o: loss(1.4, float(o), 0.05), 0.35))
    assert_grad(g[2], fd(lambda lam: loss(1.4, 0.35, float(lam)), 0.05, h=1e-4))
    sig = np.array([0.9, 1.6, 2.5])
    gs = jax.grad(lambda s: loss(s, 0.35, 0.05))(jnp.asarray(sig))
    assert_grad(gs, fd(lambda s: loss(jnp.asarray(s), 0.35, 0.05), sig))


@pytest.mark.slow
def test_eigen_criterion_iterative_soft_min(data):
    """Landweber path: the soft minimum of the LOO path; value against NumPy, gradient against FD."""
    X, Y = data
    Xj, Yj = jnp.asarray(X), jnp.asarray(Y)
    V = jnp.asarray(_outputs.common_similarity_eigh(D, [0.0])[1])

    @jax.jit
    def loss(sigma, om):
        return eigen_criterion(Gaussian(sigma)(Xj, Xj), _eig_a(om), V, Yj, 30, filt=Landweber(), criterion="loo")

    from jaxmtl.operators import separable_eigh
    from jaxmtl.selection import loo_path

    path = np.asarray(loo_path(separable_eigh(Gaussian(1.4)(Xj, Xj), cs(D, 0.35)), Yj, Landweber(), jnp.arange(1, 31)))
    assert np.all(np.isfinite(path))
    tau = 0.05 * path.min()
    ref = -tau * np.log(np.mean(np.exp(-path / tau)))
    np.testing.assert_allclose(loss(1.4, 0.35), ref, rtol=1e-9)
    g = jax.grad(loss, argnums=(0, 1))(1.4, 0.35)
    assert_grad(g[0], fd(lambda s: loss(float(s), 0.35), 1.4))
    assert_grad(g[1], fd(lambda o: loss(1.4, float(o)), 0.35))


def test_soft_min_limits_and_gradient():
    ell = jnp.array([3.0, 1.0, 2.0, jnp.inf])
    assert abs(float(soft_min(ell, 1e-6)) - 1.0) < 1e-5
    x = np.array([3.0, 1.2, 2.0])
    f = jax.jit(lambda v: soft_min(v, 0.5))
    assert_grad(jax.grad(f)(jnp.asarray(x)), fd(f, x))


# ---------------------------------------------------------------- checkpointed matrix-free path
TAU = 0.4  # a fixed step below 1/σ_max(Γ/n) for every width and ω used here


def _operators(X, sigma, A, n_train, block):
    k = Gaussian(sigma)
    op = RematKernelOperator(k, X[:n_train], A, block_size=block)
    ev = RematCrossOperator(k, X[n_train:], X[:n_train], A, block_size=block)
    return op, ev


@pytest.mark.parametrize("filt", [NuMethod(), Landweber()])
def test_checkpointed_losses_equal_plain_scan(data, filt):
    X, Y = data
    Xj, Yj = jnp.asarray(X), jnp.asarray(Y)
    op, ev = _operators(Xj, 1.4, cs(D, 0.3), 16, 5)
    got = checkpointed_path_losses(op, Yj[:16], filt, 24, ev, Yj[16:], tau=TAU, chunk=4)
    K = gram(X, 1.4)
    ref = path_scan(SeparableOperator(jnp.asarray(K[:16, :16]), cs(D, 0.3)), Yj[:16], filt, 24,
                    SeparableOperator(jnp.asarray(K[16:, :16]), cs(D, 0.3)), Yj[16:], tau=TAU).losses
    np.testing.assert_allclose(got, ref, rtol=1e-10)


def _explicit_loop_losses(X, Y, sigma, A, n_train, filt, T, tau):
    """The recurrence written out step by step (no scan, no checkpoint), dense Gram matrices."""
    K = Gaussian(sigma)(X, X)
    Ktr, Kev = K[:n_train, :n_train], K[n_train:, :n_train]
    rhs = Y[:n_train] / n_train
    state = filt.init(rhs)
    out = []
    for i in range(1, T + 1):
        state, C = filt.update(state, jnp.asarray(i), rhs, lambda C: Ktr @ C @ A / n_train, tau)
        out.append(jnp.mean((Kev @ C @ A - Y[n_train:]) ** 2))
    return jnp.stack(out)


def _ckpt_loss(X, Y, sigma, A, T=8):
    op, ev = _operators(X, sigma, A, 16, 6)
    return soft_min(checkpointed_path_losses(op, Y[:16], NuMethod(), T, ev, Y[16:], tau=TAU, chunk=2), 0.1)


def test_checkpointed_gradients_match_plain_autodiff_and_finite_differences(data):
    X, Y = data
    Xj, Yj = jnp.asarray(X), jnp.asarray(Y)
    T = 8
    ckpt = jax.jit(lambda sigma, om: _ckpt_loss(Xj, Yj, sigma, cs(D, om), T))

    def plain(sigma, om):
        K = Gaussian(sigma)(Xj, Xj)
        A = cs(D, om)
        res = path_scan(SeparableOperator(K[:16, :16], A), Yj[:16], NuMethod(), T,
                        SeparableOperator(K[16:, :16], A), Yj[16:], tau=TAU)
        return soft_min(res.losses, 0.1)

    def loop(sigma, om):
        return soft_min(_explicit_loop_losses(Xj, Yj, sigma, cs(D, om), 16, NuMethod(), T, TAU), 0.1)

    g = jax.grad(ckpt, argnums=(0, 1))(1.4, 0.3)
    for ref_fn in (plain, loop):
        ref = jax.jit(jax.grad(ref_fn, argnums=(0, 1)))(1.4, 0.3)
        np.testing.assert_allclose(np.array(g), np.array(ref), rtol=1e-9)
    assert_grad(g[0], fd(lambda s: ckpt(float(s), 0.3), 1.4))
    assert_grad(g[1], fd(lambda o: ckpt(1.4, float(o)), 0.3))


@pytest.mark.slow
def test_checkpointed_gradients_ard_and_low_rank_factor(data):
    """Per-feature widths and a low-rank output factor A = BBᵀ through the checkpointed path."""
    X, Y = data
    Xj, Yj = jnp.asarray(X), jnp.asarray(Y)
    B0 = 0.5 * np.random.default_rng(2).normal(size=(D, 2))
    sig = np.array([0.9, 1.6, 2.5])
    f = jax.jit(lambda s, B: _ckpt_loss(Xj, Yj, s, B @ B.T))
    gs, gb = jax.grad(f, argnums=(0, 1))(jnp.asarray(sig), jnp.asarray(B0))
    assert_grad(gs, fd(lambda s: f(jnp.asarray(s), jnp.asarray(B0)), sig))
    assert_grad(gb, fd(lambda B: f(jnp.asarray(sig), jnp.asarray(B)), B0))


@pytest.mark.slow
def test_checkpointed_masked_fold_matches_explicit_fold(data):
    """A k-fold mask on the full operator: same losses and gradient as the explicit sub-problem."""
    X, Y = data
    Xj, Yj = jnp.asarray(X), jnp.asarray(Y)
    mask = np.arange(N) < 16
    T = 12

    def masked(sigma):
        k = Gaussian(sigma)
        op = RematKernelOperator(k, Xj, cs(D, 0.3), block_size=7)
        held = jnp.asarray(~mask, Xj.dtype)
        ev = RematKernelOperator(k, Xj, cs(D, 0.3), block_size=7)
        return checkpointed_path_losses(op, Yj, Landweber(), T, ev, Yj, w_eval=held / held.sum(), tau=TAU,
                                        mask=jnp.asarray(mask), chunk=3)

    ref = lambda s: _explicit_loop_losses(Xj, Yj, s, cs(D, 0.3), 16, Landweber(), T, TAU)
    np.testing.assert_allclose(masked(1.4), ref(1.4), rtol=1e-10)
    np.testing.assert_allclose(jax.grad(lambda s: masked(s)[-1])(1.4), jax.grad(lambda s: ref(s)[-1])(1.4),
                               rtol=1e-9)


def test_checkpointed_rejects_bad_chunk(data):
    from jaxmtl.errors import ParameterError

    X, Y = data
    op, ev = _operators(jnp.asarray(X), 1.4, jnp.eye(D), 16, 8)
    with pytest.raises(ParameterError, match="multiple of chunk"):
        checkpointed_path_losses(op, jnp.asarray(Y[:16]), NuMethod(), 10, ev, jnp.asarray(Y[16:]), tau=TAU, chunk=3)


# ---------------------------------------------------------------- optimisation loop
@pytest.mark.parametrize("optimizer,steps", [("adam", 400), ("lbfgs", 30)])
def test_minimize_reaches_quadratic_optimum(optimizer, steps):
    rng = np.random.default_rng(0)
    M = rng.normal(size=(4, 4))
    Q = jnp.asarray(M @ M.T + np.eye(4))
    b = jnp.asarray(rng.normal(size=4))
    x_star = np.linalg.solve(np.asarray(Q), np.asarray(b))  # argmin ½xᵀQx − bᵀx

    def fun(p):
        return 0.5 * p["x"] @ Q @ p["x"] - b @ p["x"]

    best, trace = minimize(fun, {"x": jnp.zeros(4)}, optimizer, steps, learning_rate=0.05)
    np.testing.assert_allclose(best["x"], x_star, rtol=1e-3 if optimizer == "adam" else 1e-6, atol=1e-4)
    assert trace.shape == (steps,) and float(trace[-1]) < float(trace[0])


def test_minimize_through_softplus_reaches_positive_optimum():
    """Optimum of (log s − log 2)² over s = softplus(raw): s → 2 with no clipping."""
    spec = {"s": "positive"}
    fun = lambda raw: (jnp.log(constrain(raw, spec)["s"]) - jnp.log(2.0)) ** 2
    best, _ = minimize(fun, unconstrain({"s": jnp.asarray(0.1)}, spec), "lbfgs", 30)
    np.testing.assert_allclose(constrain(best, spec)["s"], 2.0, rtol=1e-6)


def test_minimize_skips_non_finite_steps_and_returns_best():
    fun = lambda p: jnp.where(p["x"] > 1.5, jnp.nan, (p["x"] - 1.0) ** 2)
    best, trace = minimize(fun, {"x": jnp.asarray(0.0)}, "adam", 100, learning_rate=0.3)
    assert np.isfinite(float(best["x"])) and float(fun(best)) <= float(np.nanmin(np.asarray(trace))) + 1e-12
    assert float(fun(best)) < 1e-2


def test_minimize_rejects_unknown_optimizer():
    from jaxmtl.errors import ParameterError

    with pytest.raises(ParameterError, match="optimizer"):
        minimize(lambda p: p**2, jnp.asarray(1.0), "sgd")


def test_tikhonov_filter_on_eigen_path_agrees_with_solve(data):
    """eigen_criterion's Tikhonov path and tikhonov_solve describe the same estimator (GCV residual)."""
    X, Y = data
    K = jnp.asarray(gram(X, 1.4))
    A = cs(D, 0.3)
    C = tikhonov_solve(K, A, jnp.asarray(Y), 0.05)
    n, d = Y.shape
    G = np.kron(np.asarray(K), np.asarray(A))
    H = G @ np.linalg.inv(G + n * 0.05 * np.eye(n * d))
    np.testing.assert_allclose((K @ C @ A).reshape(-1), H @ Y.reshape(-1), rtol=1e-9)
    a, V = _outputs.common_similarity_eigh(D, [0.3])
    v = eigen_criterion(K, jnp.asarray(a)[0], jnp.asarray(V), jnp.asarray(Y), 0.05, filt=Tikhonov(), criterion="gcv")
    R = np.asarray(Y - K @ C @ A)
    np.testing.assert_allclose(v, (R**2).sum() / (n * d) / (1 - np.trace(H) / (n * d)) ** 2, rtol=1e-9)
