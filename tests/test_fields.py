"""Divergence-free / curl-free field operators (eqs. 26, 27) against loop-built dense references."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from jaxmtl.errors import NonFiniteError, ParameterError, ShapeError
from jaxmtl.operators import DivCurlOperator, check_field, curl_free, div_curl, div_free, split_field
from jaxmtl.paths import iterative_path
from jaxmtl.kernels import Gaussian, Laplacian
from jaxmtl.operators import DenseOperator
from jaxmtl.operators import sum_of_separable_operator

RNG = np.random.default_rng(0)
_dense = jax.jit(lambda op: op.as_matrix())  # one compiled build instead of eager vmapped products


def field_blocks(Xr, Xc, s):
    """Dense (m·p, n·p) curl-free and div-free Gram matrices, eqs. (27) and (26), pair by pair."""
    m, p = Xr.shape
    n = Xc.shape[0]
    CF, DF = np.zeros((m * p, n * p)), np.zeros((m * p, n * p))
    for i in range(m):
        for j in range(n):
            u = (Xr[i] - Xc[j]) / s
            w = np.exp(-u @ u / 2) / s**2
            CF[i * p:(i + 1) * p, j * p:(j + 1) * p] = w * (np.eye(p) - np.outer(u, u))
            DF[i * p:(i + 1) * p, j * p:(j + 1) * p] = w * (np.outer(u, u) + ((p - 1) - u @ u) * np.eye(p))
    return CF, DF


@pytest.mark.parametrize("p", [2, 3])
def test_field_operator_equals_loop_reference_and_splits(p):
    s = 0.8
    X = RNG.normal(size=(9, p)) + 4.0  # far from the origin: the centring keeps it exact
    Xr = RNG.normal(size=(5, p)) + 4.0
    C = RNG.normal(size=(9, p))
    CF, DF = field_blocks(X, X, s)
    CFr, DFr = field_blocks(Xr, X, s)
    for gamma in (0.0, 1.0, 0.35):
        op = div_curl(X, s, gamma)
        np.testing.assert_allclose(_dense(op), gamma * CF + (1 - gamma) * DF, atol=1e-12)
        ev = div_curl(X, Gaussian(s), gamma, X_rows=Xr)
        curl, div = split_field(ev, C)
        np.testing.assert_allclose(curl, (gamma * CFr @ C.reshape(-1)).reshape(5, p), atol=1e-12)
        np.testing.assert_allclose(div, ((1 - gamma) * DFr @ C.reshape(-1)).reshape(5, p), atol=1e-12)
        np.testing.assert_allclose(ev.mv(jnp.asarray(C)), np.asarray(curl) + np.asarray(div), atol=1e-12)
    np.testing.assert_allclose(_dense(div_free(X, s)), DF, atol=1e-12)
    np.testing.assert_allclose(_dense(curl_free(X, s)), CF, atol=1e-12)


def test_parts_are_divergence_free_and_curl_free():
    """Finite differences of x ↦ Γ(x, X)c: zero divergence of the div-free part, zero curl of the other."""
    X = RNG.normal(size=(4, 2))
    C = RNG.normal(size=(4, 2))
    x, h = np.array([0.2, -0.4]), 1e-5

    def parts(x):
        return [np.asarray(v)[0] for v in split_field(div_curl(X, 0.9, 0.5, X_rows=x[None]), C)]

    e = np.eye(2) * h
    J = [np.stack([(parts(x + e[k])[q] - parts(x - e[k])[q]) / (2 * h) for k in range(2)], 1) for q in (0, 1)]
    assert abs(J[0][1, 0] - J[0][0, 1]) < 1e-6   # curl of the curl-free part
    assert abs(np.trace(J[1])) < 1e-6            # divergence of the div-free part


def test_field_operator_is_a_pytree_for_jit_vmap_and_paths():
    X = RNG.normal(size=(12, 2))
    Y = np.c_[np.sin(X[:, 0]), np.cos(X[:, 1])]
    op = div_curl(X, 1.0, 0.5)
    C = jnp.asarray(RNG.normal(size=(12, 2)))
    gam = jnp.array([0.0, 0.5, 1.0])
    batch = jax.vmap(lambda g: DivCurlOperator(op.W, op.Z_rows, op.Z_cols, g).mv(C))(gam)
    for k, g in enumerate((0.0, 0.5, 1.0)):
        np.testing.assert_allclose(batch[k], div_curl(X, 1.0, g).mv(C), atol=1e-12)
    a = iterative_path(op, Y, "nu_method", 30, eval_op=op, Y_eval=jnp.asarray(Y))
    b = iterative_path(DenseOperator(_dense(op), 2), Y, "nu_method", 30, tau=a.tau, eval_op=op,
                       Y_eval=jnp.asarray(Y))
    np.testing.assert_allclose(a.losses, b.losses, rtol=1e-9)


def test_field_bad_inputs():
    X = RNG.normal(size=(6, 2))
    with pytest.raises(ShapeError, match="R\\^p -> R\\^p"):
        div_curl(X, 1.0, 0.5, V=np.ones((6, 3)))
    with pytest.raises(ShapeError, match="R\\^p -> R\\^p"):
        check_field(X, np.ones(6))
    with pytest.raises(ShapeError, match="one row per input"):
        check_field(X, np.ones((5, 2)))
    with pytest.raises(ShapeError, match="p >= 2"):
        div_free(X[:, :1], 1.0)
    assert curl_free(X[:, :1], 1.0).shape == (6, 1)  # curl-free is fine in 1-D
    with pytest.raises(ShapeError, match="features"):
        div_curl(X, 1.0, X_rows=np.ones((2, 3)))
    Xn = X.copy()
    Xn[2, 1] = np.nan
    with pytest.raises(NonFiniteError):
        div_curl(Xn, 1.0)
    with pytest.raises(ParameterError, match="sigma"):
        div_curl(X, 0.0)
    with pytest.raises(ParameterError, match="Gaussian"):
        div_curl(X, Laplacian(1.0))
    with pytest.raises(ParameterError, match="gamma"):
        div_curl(X, 1.0, 1.5)
    with pytest.raises(ShapeError, match="shape"):
        split_field(div_curl(X, 1.0), np.ones((5, 2)))
    with pytest.raises(ParameterError, match="div/curl"):
        split_field(sum_of_separable_operator(np.eye(2)[None], np.eye(2)[None]), np.ones((2, 2)))
