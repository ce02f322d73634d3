"""Reduced-precision matrix products emulated on the CPU, for tests and benchmarks.

GPUs with tensor cores (A100, H100) run a float32 matrix product whose precision is not
``HIGHEST`` with its operands rounded to TF32 (10 explicit mantissa bits) and float32
accumulation; TPUs round them to bfloat16 (7 bits). A CPU computes every float32 product in full
precision, so the effect of ``matmul_precision`` cannot be seen there. Inside
:func:`emulated_products`, every float32 ``dot_general`` compiled for the CPU whose precision is
not ``HIGHEST`` (JAX's default, ``'default'``, ``'high'``, …) rounds both operands to ``bits``
mantissa bits (round to nearest even) and then multiplies them in full float32, as the tensor
cores do; products asked for ``HIGHEST`` and float64 products are left alone.

This reaches into JAX's lowering registry (``jax._src``); it is not part of the public API.

Example:
    >>> import jax, jax.numpy as jnp
    >>> a = jax.device_put(jnp.full((1, 1), 1.0 + 2.0 ** -12, jnp.float32), jax.devices("cpu")[0])
    >>> with emulated_products(10):
    ...     float(jnp.matmul(a, a)[0, 0]), float(jnp.matmul(a, a, precision="highest")[0, 0])
    (1.0, 1.00048828125)
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
from jax._src.interpreters import mlir
from jax._src.lax import lax as _lax

__all__ = ["round_mantissa", "emulated_products", "MANTISSA_BITS"]

# explicit mantissa bits of the operands of a reduced-precision product
MANTISSA_BITS = {"tf32": 10, "bfloat16": 7}


def round_mantissa(x: jax.Array, bits: int) -> jax.Array:
    """float32 ``x`` rounded to ``bits`` explicit mantissa bits (nearest, ties to even); other
    dtypes unchanged. Shape (any,) -> same shape.

    Example:
        >>> float(round_mantissa(jnp.float32(1.0 + 2.0 ** -9), 7))
        1.0
    """
    x = jnp.asarray(x)
    if x.dtype != jnp.float32 or bits >= 23:
        return x
    drop = 23 - bits
    u = jax.lax.bitcast_convert_type(x, jnp.uint32)
    bias = ((u >> drop) & 1) + np.uint32((1 << (drop - 1)) - 1)
    u = (u + bias) & np.uint32(~((1 << drop) - 1) & 0xFFFFFFFF)
    return jax.lax.bitcast_convert_type(u, jnp.float32)


_HIGHEST = (jax.lax.Precision.HIGHEST, jax.lax.Precision.HIGHEST)


@contextlib.contextmanager
def emulated_products(bits: int):
    """Within the block, CPU float32 products not asked for ``HIGHEST`` round their operands to
    ``bits`` mantissa bits (10: TF32, 7: bfloat16). Compilation caches are cleared on entry and
    exit, so that programs compiled outside are not reused inside and vice versa.
    """
    table = mlir._platform_specific_lowerings["cpu"]
    original = table[_lax.dot_general_p]

    def reduced(lhs, rhs, *, precision, **params):
        if lhs.dtype == jnp.float32 and rhs.dtype == jnp.float32:
            lhs, rhs = round_mantissa(lhs, bits), round_mantissa(rhs, bits)
        return _lax.dot_general_p.bind(lhs, rhs, precision=_HIGHEST, **params)

    lowered_reduced = mlir.lower_fun(reduced, multiple_results=False)

    def rule(ctx, lhs, rhs, *, precision, **params):
        if precision == _HIGHEST:
            return original.rule(ctx, lhs, rhs, precision=precision, **params)
        return lowered_reduced(ctx, lhs, rhs, precision=precision, **params)

    jax.clear_caches()
    mlir.register_lowering(_lax.dot_general_p, rule, platform="cpu")
    try:
        yield
    finally:
        table[_lax.dot_general_p] = original
        jax.clear_caches()
