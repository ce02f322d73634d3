"""The library's programs (jaxmtl._jit): compiled with COMPILE_OPTIONS from the top level, plain
``jax.jit`` inside the user's transformations, the same numbers either way."""

import os
import subprocess
import sys
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmtl._jit import COMPILE_OPTIONS, filter_jit, jit


def _gaussian_row_sums(X, sigma):
    D = jnp.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    return jnp.exp(-D / (2 * sigma ** 2)).sum(axis=1)


def _reference(X, sigma):
    X = np.asarray(X, np.float64)
    D = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    return np.exp(-D / (2 * sigma ** 2)).sum(1)


@pytest.mark.skipif(os.environ.get("JAXMTL_PLAIN_JIT", "") not in ("", "0"), reason="plain programs asked for")
def test_the_installed_jax_takes_the_options():
    """CI installs the newest JAX: this fails when it drops the option or the top-level test,
    rather than letting every fit compile at the slower default without notice."""
    assert COMPILE_OPTIONS == {"xla_cpu_use_fusion_emitters": False}
    compiled = jax.jit(lambda x: jnp.exp(x) + 1, compiler_options=COMPILE_OPTIONS).lower(jnp.ones(3)).compile()
    np.testing.assert_allclose(np.asarray(compiled(jnp.zeros(3))), 2.0)


def test_top_level_calls_take_the_options_and_nested_ones_the_plain_program():
    f = jit(_gaussian_row_sums)
    X = jnp.asarray(np.random.default_rng(0).normal(size=(7, 2)))  # JAX's default precision: float32 or float64
    rtol = 1e-5 if X.dtype == jnp.float32 else 1e-12  # a few float32 roundings of sums of 7 terms
    out = f(X, 1.5)
    assert f._top._cache_size() == 1 and f._plain._cache_size() == 0
    np.testing.assert_allclose(np.asarray(out), _reference(X, 1.5), rtol=rtol)
    # inside the user's jit, vmap and grad: JAX refuses compile options on a nested jit
    nested = jax.jit(lambda X: f(X, 1.5) * 2)(X)
    np.testing.assert_allclose(np.asarray(nested), 2 * _reference(X, 1.5), rtol=rtol)
    batched = jax.vmap(lambda s: f(X, s))(jnp.array([1.0, 2.0], X.dtype))
    np.testing.assert_allclose(np.asarray(batched), np.stack([_reference(X, 1.0), _reference(X, 2.0)]), rtol=rtol)
    grad = float(jax.grad(lambda s: f(X, s).sum())(1.5))
    step = 1e-3
    finite = (_reference(X, 1.5 + step).sum() - _reference(X, 1.5 - step).sum()) / (2 * step)
    assert grad == pytest.approx(finite, rel=1e-3)
    assert f._top._cache_size() == 1  # the nested calls compiled no top-level program of their own


def test_decorator_forms_and_static_arguments():
    @partial(jit, static_argnames="k")
    def power(x, k):
        return x ** k

    assert float(power(3.0, k=3)) == 27.0 and power.__name__ == "power"
    scale = filter_jit(lambda x, factor: factor * x)
    np.testing.assert_array_equal(np.asarray(scale(jnp.arange(3.0), 2.0)), [0.0, 2.0, 4.0])
    assert float(jax.jit(lambda x: scale(x, 3.0).sum())(jnp.ones(2))) == 6.0
    lowered = jit(lambda x: x + 1).lower(jnp.ones(2))  # jax.jit's own methods: the top-level program's
    np.testing.assert_array_equal(np.asarray(lowered.compile()(jnp.ones(2))), [2.0, 2.0])


def test_plain_jit_from_the_environment():
    """JAXMTL_PLAIN_JIT=1 when the process starts: no options, the programs plain ``jax.jit`` ones
    (and the same numbers)."""
    code = ("import jax.numpy as jnp; from jaxmtl._jit import COMPILE_OPTIONS, jit; f = jit(lambda x: 2 * x); "
            "print(COMPILE_OPTIONS is None, type(f).__name__, f(jnp.arange(3)).tolist())")
    env = {**os.environ, "JAXMTL_PLAIN_JIT": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split("\n")[0] == "True PjitFunction [0, 2, 4]"
