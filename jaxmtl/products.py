"""The precision of jaxmtl's matrix products: full float32 unless the caller chose otherwise.

Under JAX's default configuration a float32 matrix product on a GPU with tensor cores (A100,
H100, H200) rounds its operands to TF32 (10 mantissa bits, relative error about 5·10⁻⁴), and a
TPU rounds them to bfloat16; only the CPU computes them in full float32. jaxmtl's paths solve
ill-conditioned systems (a kernel Gram plus a small λ): with TF32 products a conjugate-gradient
solve through :func:`jaxmtl.operators.as_lineax` returned NaN on an H200, streamed predictions
were off by 7 % relative, and an exported model differed from the model it came from by 1 %.

So every public function and operator method of jaxmtl's functional modules traces its body
under ``jax.default_matmul_precision("highest")`` (:func:`full_precision`) — the products it
contains carry ``Precision.HIGHEST`` in the program, also inside a caller's ``jit``, ``grad`` or
``vmap`` — unless the caller has set JAX's default precision themselves: inside
``with jax.default_matmul_precision("tensorfloat32"):`` (or with the flag
``jax_default_matmul_precision`` set) jaxmtl uses the caller's choice, and its products run at
tensor-core speed with the error above. The estimators do the same through their
``matmul_precision`` parameter (docs/precision.md).

Example:
    >>> import jax, jax.numpy as jnp
    >>> @full_precision
    ... def product(a, b):
    ...     return a @ b
    >>> a = jnp.ones((2, 2))
    >>> str(jax.make_jaxpr(product)(a, a).eqns[0].params["precision"][0])
    'HIGHEST'
    >>> with jax.default_matmul_precision("tensorfloat32"):  # the caller's choice is kept
    ...     str(jax.make_jaxpr(product)(a, a).eqns[0].params["precision"][0])
    'HIGH'
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, TypeVar

import jax

__all__ = ["full_precision", "full_precision_scope"]

F = TypeVar("F", bound=Callable[..., Any])


def full_precision_scope() -> contextlib.AbstractContextManager:
    """Context in which JAX's default matrix-product precision is ``'highest'``, unless the caller
    has set one (then it is left as it is).

    Example:
        >>> import jax
        >>> with full_precision_scope():
        ...     jax.config.jax_default_matmul_precision
        'highest'
    """
    if jax.config.jax_default_matmul_precision is None:  # type: ignore[attr-defined]
        return jax.default_matmul_precision("highest")
    return contextlib.nullcontext()


def full_precision(fn: F) -> F:
    """``fn`` traced and run inside :func:`full_precision_scope`; marked ``__full_precision__``.

    Put it closest to the ``def`` (below ``jax.jit``), so that the products are fixed when the
    body is traced and the jitted function keeps its attributes.

    Example:
        >>> @full_precision
        ... def product(a, b):
        ...     return a @ b
        >>> product.__full_precision__
        True
    """
    @functools.wraps(fn)
    def scoped(*args: Any, **kwargs: Any) -> Any:
        with full_precision_scope():
            return fn(*args, **kwargs)

    scoped.__full_precision__ = True  # type: ignore[attr-defined]
    return scoped  # type: ignore[return-value]
