"""Derivatives of every path and criterion in every continuous hyperparameter.

Each case is a scalar validation loss as a function of one hyperparameter θ (ω of an output
family, a kernel width, λ, γ of the fields, α of the mixed effect, an output family's own
parameter), built only from public functions as a user writes it inside ``jax.grad``.

* float64 run: ``jax.grad`` equals the central finite difference (f(θ+h) − f(θ−h)) / 2h with
  h = 1e-5·max(1, |θ|), to rtol 1e-5 (+ atol 1e-9 × the loss's scale) — a finite difference
  has error O(h²) + O(ε/h) ≈ 1e-10 relative here, so 1e-5 leaves room for the paths'
  conditioning and catches a wrong term (the repeated-eigenvalue derivative of ``eigh`` was off
  by 3 % to a wrong sign).
* float32 run: the gradient is finite and equals the float64 gradient of the same function
  (computed in the same process under ``jax.enable_x64``) to rtol 5e-2 + atol 1e-3 × its scale:
  float32 paths lose log10(κ) digits.

Boundary points (ω = 0 or 1, where A_ω has an exactly repeated or zero eigenvalue) compare with
the one-sided difference into the domain, at h = 1e-6, to rtol 1e-4.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmtl.filters import NuMethod, Tikhonov
from jaxmtl.kernels import Gaussian
from jaxmtl.kernels import outputs
from jaxmtl.mixed_effect import mixed_effect_gram
from jaxmtl.operators import SeparableEigh, SeparableOperator, separable_eigh
from jaxmtl.operators.fields import field_operator
from jaxmtl.paths import path_scan, spectral_path
from jaxmtl.selection import gcv_path, holdout_path, kfold_masks, fold_sizes, kfold_path, loo_path

X64 = bool(jax.config.read("jax_enable_x64"))
N_TRAIN, N_VAL, D = 30, 12, 3


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N_TRAIN + N_VAL, 2))
    Y = np.c_[np.sin(X[:, 0]), np.sin(X[:, 0]) + 0.5 * X[:, 1], np.cos(X[:, 1])]
    Y = Y + 0.1 * rng.normal(size=Y.shape)
    return X[:N_TRAIN], Y[:N_TRAIN], X[N_TRAIN:], Y[N_TRAIN:]


def _common(omega):
    """A_ω built by hand, as the README did."""
    return omega * jnp.ones((D, D)) + (1 - omega) * jnp.eye(D)


def _holdout_loss(A, width=1.0, filt=NuMethod(), params=None, step=14):
    X_tr, Y_tr, X_val, Y_val = (jnp.asarray(v) for v in _data())
    kernel = Gaussian(width)
    params = jnp.arange(1, 21) if params is None else params
    eig = separable_eigh(kernel(X_tr, X_tr), A)
    losses = spectral_path(eig, Y_tr, filt, params, K_eval=kernel(X_val, X_tr), Y_eval=Y_val, output="loss")
    return losses[step]


def _criterion_case(criterion):
    """A loss of (ω, log width) through one selection criterion (Tikhonov, λ = 0.01, 0.1)."""
    def f(omega, log_width):
        X_tr, Y_tr, X_val, Y_val = (jnp.asarray(v) for v in _data())
        kernel = Gaussian(jnp.exp(log_width))
        a, V = outputs.eigh_output(_common(omega))
        lams = jnp.array([0.01, 0.1])
        K = kernel(X_tr, X_tr)
        if criterion == "loo":
            return loo_path(separable_eigh(K, _common(omega)), Y_tr, Tikhonov(), lams)[0]
        if criterion == "gcv":
            return gcv_path(separable_eigh(K, _common(omega)), Y_tr, Tikhonov(), lams)[1]
        if criterion == "kfold":
            masks = kfold_masks(N_TRAIN, 3)
            return jnp.mean(kfold_path(K, Y_tr, a, V, Tikhonov(), lams, masks, sizes=fold_sizes(masks))[:, 0])
        return holdout_path(K, kernel(X_val, X_tr), Y_tr, Y_val, a, V, Tikhonov(), lams)[0]
    return f


def _matrix_free(omega, log_width=0.0):
    X_tr, Y_tr, X_val, Y_val = (jnp.asarray(v) for v in _data())
    kernel = Gaussian(jnp.exp(log_width))
    A = _common(omega)
    res = path_scan(SeparableOperator(kernel(X_tr, X_tr), A), Y_tr, NuMethod(), 15,
                    SeparableOperator(kernel(X_val, X_tr), A), Y_val)
    return res.losses[-1]


def _field(log_sigma, gamma):
    rng = np.random.default_rng(1)
    X_np = rng.normal(size=(16, 2))
    X, V = jnp.asarray(X_np), jnp.asarray(np.c_[-X_np[:, 1], X_np[:, 0]] + 0.3 * X_np)  # rotation + gradient
    tr, va = slice(0, 11), slice(11, 16)
    sigma = jnp.exp(log_sigma)
    res = path_scan(field_operator(X[tr], X[tr], sigma, gamma), V[tr], NuMethod(), 12,
                    field_operator(X[va], X[tr], sigma, gamma), V[va])
    return res.losses[-1]


def _mixed(alpha):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(24, 2))
    tasks = np.repeat(np.arange(4), 6)
    y = (np.sin(X[:, 0]) + 0.3 * tasks)[:, None]
    tr, va = np.arange(24) % 3 != 0, np.arange(24) % 3 == 0
    kern = Gaussian(1.0)
    K = mixed_effect_gram(X[tr], tasks[tr], X[tr], tasks[tr], alpha, kern, kern)
    K_val = mixed_effect_gram(X[va], tasks[va], X[tr], tasks[tr], alpha, kern, kern)
    eig = separable_eigh(jnp.asarray(K), jnp.eye(1, dtype=jnp.asarray(K).dtype))
    return spectral_path(eig, jnp.asarray(y[tr]), Tikhonov(), jnp.array([0.05]), K_eval=jnp.asarray(K_val),
                         Y_eval=jnp.asarray(y[va]), output="loss")[0]


# (name, f(θ), θ values) — every case differentiates a validation loss in one hyperparameter
CASES = [
    ("omega, A built by hand (README)", lambda om: _holdout_loss(_common(om)), [0.2, 0.4, 0.7]),
    ("omega, common_similarity", lambda om: _holdout_loss(outputs.common_similarity(D, om)), [0.7]),
    ("omega, closed-form eigensystem", lambda om: _holdout_loss_eigh(om), [0.7]),
    ("log width", lambda s: _holdout_loss(_common(0.4), width=jnp.exp(s)), [0.3]),
    ("log lambda, Tikhonov", lambda t: _holdout_loss(_common(0.4), filt=Tikhonov(),
                                                    params=jnp.exp(t)[None], step=0), [-3.0]),
    ("c, mean_regularized", lambda c: _holdout_loss(outputs.mean_regularized(D, c)), [0.7]),
    ("eps1, output_clusters", lambda e: _holdout_loss(outputs.output_clusters([0, 0, 1], e, 0.5)), [0.3]),
    ("eps2, output_clusters", lambda e: _holdout_loss(outputs.output_clusters([0, 0, 1], 1.0, e)), [2.0]),
    ("scale, low_rank", lambda b: _holdout_loss(outputs.low_rank(b * jnp.array([[1.0, 0.2], [0.5, 1.0], [0.1, -1.0]]))
                                                + 0.1 * jnp.eye(D)), [1.5]),
    ("weight, graph_regularization", lambda m: _holdout_loss(outputs.graph_regularization(
        jnp.array([[1.0, m, 0.0], [m, 1.0, 0.3], [0.0, 0.3, 1.0]]))), [0.6]),
    ("omega, leave-one-out", lambda om: _criterion_case("loo")(om, 0.0), [0.6]),
    ("log width, leave-one-out", lambda s: _criterion_case("loo")(0.4, s), [0.2]),
    ("omega, GCV", lambda om: _criterion_case("gcv")(om, 0.0), [0.6]),
    ("log width, GCV", lambda s: _criterion_case("gcv")(0.4, s), [0.2]),
    ("omega, k-fold", lambda om: _criterion_case("kfold")(om, 0.0), [0.6]),
    ("log width, k-fold", lambda s: _criterion_case("kfold")(0.4, s), [0.2]),
    ("omega, hold-out", lambda om: _criterion_case("holdout")(om, 0.0), [0.6]),
    ("omega, matrix-free path", lambda om: _matrix_free(om), [0.6]),
    ("log width, matrix-free path", lambda s: _matrix_free(0.4, s), [0.2]),
    ("gamma, fields", lambda g: _field(0.0, g), [0.4]),
    ("log sigma, fields", lambda s: _field(s, 0.5), [0.1]),
    ("alpha, mixed effect", _mixed, [0.3]),
]


def _holdout_loss_eigh(omega, filt=NuMethod(), params=None, step=14):
    """The loss through the family's closed-form eigensystem (eigenvectors independent of ω)."""
    a, V = outputs.common_similarity_eigh(D, jnp.reshape(omega, (1,)))
    X_tr, Y_tr, X_val, Y_val = (jnp.asarray(v) for v in _data())
    kernel = Gaussian(1.0)
    s, U = jnp.linalg.eigh(kernel(X_tr, X_tr))
    eig = SeparableEigh(jnp.maximum(s, 0.0), U, a[0], V)
    params = jnp.arange(1, 21) if params is None else params
    return spectral_path(eig, Y_tr, filt, params, K_eval=kernel(X_val, X_tr), Y_eval=Y_val, output="loss")[step]


def _central(f, x, h):
    return (float(f(x + h)) - float(f(x - h))) / (2 * h)


def _grad64(f, x):
    with jax.enable_x64(True):
        value, grad = jax.jit(jax.value_and_grad(f))(jnp.float64(x))
        return float(grad), float(value)


@pytest.mark.parametrize("name, f, x", [(n, f, x) for n, f, xs in CASES for x in xs],
                         ids=[f"{n} at {x}" for n, _, xs in CASES for x in xs])
def test_gradient_matches_finite_differences(name, f, x):
    if X64:
        f_jit = jax.jit(f)  # one program for the values, one for the gradient
        g = float(jax.jit(jax.grad(f))(x))
        h = 1e-5 * max(1.0, abs(x))
        fd = _central(f_jit, x, h)
        scale = abs(float(f_jit(x)))
        assert np.isfinite(g)
        assert g == pytest.approx(fd, rel=1e-5, abs=1e-9 * max(scale, 1.0)), (name, x, g, fd)
    else:
        g32 = float(jax.jit(jax.grad(f))(jnp.float32(x)))
        g64, value = _grad64(f, x)
        assert np.isfinite(g32), (name, x)
        assert g32 == pytest.approx(g64, rel=5e-2, abs=1e-3 * max(abs(value), abs(g64))), (name, x, g32, g64)


@pytest.mark.parametrize("f, side", [(lambda om: _holdout_loss(_common(om)), -1),
                                     (lambda om: _holdout_loss_eigh(om, Tikhonov(), jnp.array([0.05]), 0), +1)],
                         ids=["hand-built A at omega = 1 (left)", "closed form at omega = 0 (right)"])
def test_gradient_at_the_ends_of_omega(f, side):
    """ω = 1: A_ω = 11ᵀ has d − 1 zero eigenvalues (clipped for roundoff); ω = 0: A = I, all repeated.

    At ω = 0 an iterative filter's default step τ = 1/σ_max has a kink (the largest eigenvalue of
    A_ω changes branch there), so the right derivative is checked on Tikhonov.
    """
    x = 1.0 if side < 0 else 0.0
    if X64:
        h = 1e-6
        one_sided = (float(f(x)) - float(f(x + side * h))) / (-side * h)
        g = float(jax.grad(f)(x))
        assert g == pytest.approx(one_sided, rel=1e-4, abs=1e-8), (g, one_sided)
    else:
        g32 = float(jax.grad(f)(jnp.float32(x)))
        g64, value = _grad64(f, x)
        assert np.isfinite(g32)
        assert g32 == pytest.approx(g64, rel=5e-2, abs=1e-3 * max(abs(value), abs(g64)))


def test_omega_and_width_trained_by_gradient_stay_finite():
    """The README task: Adam on (log width, ω) through a hold-out ν path, A built by hand; no NaN."""
    import optax

    def loss(p):
        return _holdout_loss(_common(jax.nn.sigmoid(p["logit_omega"])), width=jnp.exp(p["log_width"]))

    params = {"log_width": jnp.asarray(0.0), "logit_omega": jnp.asarray(-3.0)}  # ω ≈ 0.05: near-repeated
    opt = optax.adam(0.05)
    state = opt.init(params)
    step = jax.jit(lambda p, s: _adam_step(loss, opt, p, s))
    first = float(loss(params))
    for _ in range(30):
        params, state = step(params, state)
    assert all(np.isfinite(float(v)) for v in jax.tree_util.tree_leaves(params))
    assert float(loss(params)) < first


def _adam_step(loss, opt, params, state):
    import optax

    grads = jax.grad(loss)(params)
    updates, state = opt.update(grads, state)
    return optax.apply_updates(params, updates), state
