"""The multi-task and vector-field estimators against dense NumPy references.

Each fitted model is recomputed from scratch at its selected parameters: the joint Gram built
entry by entry from the paper's formulas — the common-similarity multi-task kernel
K(x,x')·(ω + (1−ω)[t = t']) ([BRBV11] eq. 18, §6) and the Gaussian divergence-free / curl-free
kernels (eqs. 26–27) — and the ν-method ([BRBV11] §3.3) as an explicit loop. The step size
τ = 1/σ̂ uses the library's Lanczos estimate σ̂ of σ_max(Q/N) on the same matrix
(``max_eigenvalue``, itself tested against ``eigvalsh`` in tests/test_matrix_free.py), so the
references reproduce the estimators' iterates exactly rather than up to the ≤ 2 % margin of σ̂.
Hold-out scores are recomputed by explicit loops on the training rows.
"""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from _reference import nu_method_loop
from jaxmtl import Gaussian, MultiTaskRegressor, VectorFieldRegressor
from jaxmtl.datasets import grid_2d, make_multitask_toy, vector_field_1
from jaxmtl.errors import NonFiniteError, ShapeError, TaskError
from jaxmtl.operators import max_eigenvalue


def nu_loop(Q, Y, T, mask=None, nu=1.0):
    """ν-method iterates on the rows of ``mask`` (all rows by default), as an explicit loop."""
    m = np.ones(len(Y), bool) if mask is None else mask
    Qm = Q * np.outer(m, m)
    n = m.sum()
    tau = 1.0 / float(max_eigenvalue(lambda C: jnp.asarray(Qm) @ C / n, Y.shape, jnp.float64))
    return nu_method_loop(Qm, Y * m[:, None], tau, n, T, nu)


def multitask_gram(X1, t1, X2, t2, width, omega):
    """Q[i, j] = exp(−‖x_i − x_j‖²/2σ²)·(ω + (1 − ω)[t_i = t_j])."""
    K = np.exp(-((X1[:, None, :] - X2[None, :, :]) ** 2).sum(-1) / (2 * width**2))
    return K * (omega + (1 - omega) * (t1[:, None] == t2[None, :]))


def field_gram(X1, X2, width, gamma):
    """(m·p × n·p) Gram of γ·Γ_cf + (1 − γ)·Γ_df ([BRBV11] eqs. 26–27), block (i, j) by block."""
    p = X1.shape[1]
    G = np.zeros((len(X1) * p, len(X2) * p))
    for i in range(len(X1)):
        for j in range(len(X2)):
            u = (X1[i] - X2[j]) / width
            w = np.exp(-u @ u / 2) / width**2
            cf = w * (np.eye(p) - np.outer(u, u))
            df = w * (np.outer(u, u) + ((p - 1) - u @ u) * np.eye(p))
            G[i * p:(i + 1) * p, j * p:(j + 1) * p] = gamma * cf + (1 - gamma) * df
    return G


def unequal_tasks():
    full = make_multitask_toy(30, 0)
    keep = np.ones(len(full.x), bool)
    keep[np.flatnonzero(full.tasks == 3)[8:]] = False  # task 3 has 8 examples, the others 30
    x, y, t = full.x[keep], full.y[keep], full.tasks[keep]
    return (x - x.mean()) / x.std(), y, t, (x.mean(), x.std())


def test_multitask_fit_equals_the_dense_reference_at_the_selected_parameters():
    x, y, t, (mu, sd) = unequal_tasks()
    model = MultiTaskRegressor(width_factors=(0.5, 1.0, 2.0), n_steps=80, route="matrix_free",
                               family="common_similarity").fit(x, y, t)
    bp = model.best_params_
    Q = multitask_gram(x, t, x, t, bp["kernel_width"], bp["omega"])
    C = nu_loop(Q, (y - y.mean())[:, None], bp["param"])[-1]
    test = make_multitask_toy(20, 1)
    xt = (test.x - mu) / sd
    ref = multitask_gram(xt, test.tasks, x, t, bp["kernel_width"], bp["omega"]) @ C[:, 0] + y.mean()
    np.testing.assert_allclose(model.predict(xt, test.tasks), ref, rtol=1e-7, atol=1e-9)
    assert model.coef_.shape == (len(x), 1) and model.n_features_in_ == 1
    with pytest.raises(TaskError, match="not seen"):
        model.predict(xt[:2], [0, 9])
    with pytest.raises(ShapeError, match="one entry per input"):
        MultiTaskRegressor().fit(x, y, t[:-1])
    with pytest.raises(NonFiniteError):
        MultiTaskRegressor().fit(np.r_[[[np.inf]], x[1:]], y, t)


def test_multitask_holdout_scores_and_choice_equal_brute_force():
    """Validation MSE of every (ω, step) by explicit loops on the training rows; the estimator's
    (ω, t) is their argmin."""
    x, y, t, _ = unequal_tasks()
    train = np.random.default_rng(3).random(len(x)) < 0.6
    omegas, T, width = [0.0, 0.5, 1.0], 30, 0.4
    model = MultiTaskRegressor(kernel=Gaussian(width), omegas=omegas, n_steps=T, selection=train,
                               route="matrix_free", family="common_similarity").fit(x, y, t)
    yc = (y - y.mean())[:, None]
    ref = np.empty((len(omegas), T))
    for io, om in enumerate(omegas):
        Q = multitask_gram(x, t, x, t, width, om)
        for s, C in enumerate(nu_loop(Q, yc, T, mask=train)):
            ref[io, s] = np.mean((Q[~train] @ C - yc[~train]) ** 2)
    np.testing.assert_allclose(model.cv_scores_[0], ref, rtol=1e-7)
    io, it = np.unravel_index(int(np.argmin(ref)), ref.shape)
    assert model.best_params_["omega"] == omegas[io] and model.best_params_["param"] == it + 1
    assert 0 < io < len(omegas) - 1 or it + 1 < T  # an interior choice: the test discriminates


def test_vector_field_fit_equals_the_dense_reference_at_the_selected_parameters():
    X = grid_2d(9)
    V, _, _ = vector_field_1(X, 0.4)
    idx = np.random.default_rng(0).choice(len(X), 30, replace=False)
    rest = np.setdiff1d(np.arange(len(X)), idx)
    mu, sd = X[idx].mean(0), X[idx].std(0)
    Xs, Xr = (X[idx] - mu) / sd, (X[rest] - mu) / sd
    model = VectorFieldRegressor(width_factors=(0.5, 1.0), n_steps=80, route="matrix_free").fit(Xs, V[idx])
    bp = model.best_params_
    G = field_gram(Xs, Xs, bp["kernel_width"], bp["gamma"])
    c = nu_loop(G, V[idx].reshape(-1, 1), bp["param"])[-1]
    ref = (field_gram(Xr, Xs, bp["kernel_width"], bp["gamma"]) @ c).reshape(-1, 2)
    pred = model.predict(Xr)
    np.testing.assert_allclose(pred, ref, rtol=1e-6, atol=1e-9)
    curl, div = model.predict_parts(Xr)
    np.testing.assert_allclose(curl + div, pred, atol=1e-10)
    ref_cf = (field_gram(Xr, Xs, bp["kernel_width"], 1.0) @ c).reshape(-1, 2) * bp["gamma"]
    np.testing.assert_allclose(curl, ref_cf, rtol=1e-6, atol=1e-9)
    with pytest.raises(ShapeError, match="R\\^p to R\\^p"):
        VectorFieldRegressor().fit(Xs, np.c_[V[idx], V[idx, :1]])


def test_same_task_part_is_blocks_or_dense_mask_with_equal_products():
    """Balanced tasks use per-task blocks, very unequal ones the dense mask; both give Q_ω C, on the
    rows as they are and padded (the padding's coefficients zero, its products unread)."""
    import jax.numpy as jnp

    from jaxmtl.models.multitask import _operator, _padded_task_data

    rng = np.random.default_rng(0)
    for tasks in (np.repeat(np.arange(4), 50), np.r_[np.zeros(40, int), np.arange(1, 9)]):
        n = len(tasks)
        X = rng.normal(size=(n, 2))
        for size in (n, n + 7):
            _, *same = _padded_task_data(X, tasks)(None, size)
            assert (same[2] is None) == (len(np.unique(np.bincount(tasks))) == 1)
            K = rng.normal(size=(size, size))
            C = np.r_[rng.normal(size=(n, 1)), np.zeros((size - n, 1))]
            ref = (0.3 * K[:n, :n] + 0.7 * K[:n, :n] * (tasks[:, None] == tasks[None, :])) @ C[:n]
            out = _operator(jnp.asarray(K), 0.3, *same).mv(jnp.asarray(C))
            np.testing.assert_allclose(out[:n], ref, atol=1e-12)
