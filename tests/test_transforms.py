"""The functional core under JAX's transformations: jit, vmap and grad give what the untransformed
code and finite differences give."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np

from _reference import problem
from jaxmtl.filters import NuMethod, Tikhonov
from jaxmtl.kernels import Gaussian
from jaxmtl.operators import SeparableOperator, separable_eigh
from jaxmtl.paths import path_scan, spectral_path

X, K, A, Y = problem(n=30, d=3)
X_val = X[:10] + 0.1


def validation_loss(sigma, lam):
    kernel = Gaussian(sigma)
    eig = separable_eigh(kernel(X, X), jnp.asarray(A))
    losses = spectral_path(eig, Y, Tikhonov(), jnp.atleast_1d(lam), K_eval=kernel(X_val, X),
                           Y_eval=Y[:10], output="loss")
    return losses[0]


def test_grad_of_the_validation_loss_matches_central_differences():
    g_sigma, g_lam = jax.grad(validation_loss, argnums=(0, 1))(0.9, 1e-2)
    h = 1e-5
    fd_sigma = (validation_loss(0.9 + h, 1e-2) - validation_loss(0.9 - h, 1e-2)) / (2 * h)
    fd_lam = (validation_loss(0.9, 1e-2 + 1e-7) - validation_loss(0.9, 1e-2 - 1e-7)) / 2e-7
    np.testing.assert_allclose(g_sigma, fd_sigma, rtol=1e-5)
    np.testing.assert_allclose(g_lam, fd_lam, rtol=1e-5)


def test_jit_equals_eager_and_vmap_over_widths_equals_a_loop():
    jitted = jax.jit(validation_loss)
    np.testing.assert_allclose(jitted(0.9, 1e-2), validation_loss(0.9, 1e-2), rtol=1e-12)
    widths = jnp.array([0.5, 0.9, 1.7])
    batched = jax.vmap(validation_loss, in_axes=(0, None))(widths, 1e-2)
    np.testing.assert_allclose(batched, [validation_loss(w, 1e-2) for w in widths], rtol=1e-10)


def test_operator_products_vmap_over_right_hand_sides():
    op = SeparableOperator(jnp.asarray(K), jnp.asarray(A))
    Cs = jnp.asarray(np.random.default_rng(0).normal(size=(4, 30, 3)))
    dense = np.kron(K, A)
    np.testing.assert_allclose(jax.vmap(op.mv)(Cs), [(dense @ C.reshape(-1)).reshape(30, 3) for C in Cs],
                               rtol=1e-10, atol=1e-12)


def test_matrix_free_path_under_jit_and_grad_with_respect_to_the_outputs():
    op = SeparableOperator(jnp.asarray(K), jnp.asarray(A))

    def final_norm(Y):
        return jnp.sum(path_scan(op, Y, NuMethod(), 20).coef ** 2)

    np.testing.assert_allclose(jax.jit(final_norm)(Y), final_norm(Y), rtol=1e-12)
    direction = np.random.default_rng(1).normal(size=Y.shape)
    g = jax.grad(final_norm)(jnp.asarray(Y))
    h = 1e-6
    fd = (final_norm(Y + h * direction) - final_norm(Y - h * direction)) / (2 * h)
    np.testing.assert_allclose(jnp.sum(g * direction), fd, rtol=1e-6)
