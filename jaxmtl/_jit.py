"""The library's compiled programs: :func:`jit` and :func:`filter_jit`, compiled with the options they need.

Every program the library compiles for itself goes through :func:`jit` or :func:`filter_jit`.
Called from the top level (no transformation tracing the caller), the program is compiled with
:data:`COMPILE_OPTIONS`, which switches off XLA:CPU's MLIR fusion emitters: its elementwise fusions
take XLA's LLVM emitters instead. On the 2-core CPU a default fit's programs then compile in
about half the time (``VectorValuedRegressor()`` at 200 rows 1.22 → 0.74 s of compilation,
``MultiTaskRegressor()`` 2.32 → 1.28 s) and warm fits run as fast (2000 rows: 11.79 s without,
11.88 s with);
docs/performance.md, "Compilation", has the measurements and the command that repeats them.

Called inside a transformation — the user's own ``jax.jit``, ``vmap`` or ``grad``, or another
library program — it is the plain ``jax.jit`` program: JAX accepts compile options on the
outermost program only, and a nested program is compiled as part of its caller, with the caller's
options. So the option never reaches the user's own programs, and JAX's global configuration is
left as it is. It is a per-program XLA debug option: GPU and TPU compilers ignore it, and JAX keys
its persistent compilation cache on it. Where the installed JAX lacks either the option or the
means to tell the top level from a trace (JAX before 0.10, the versions not tested with it), the
programs are plain ``jax.jit`` ones; so they are with ``JAXMTL_PLAIN_JIT=1`` in the environment
when the process starts (to compare, or to rule the option out when a result puzzles you).

Example:
    >>> import jax, jax.numpy as jnp
    >>> double = jit(lambda x: 2 * x)
    >>> double(jnp.arange(3)).tolist(), jax.jit(lambda x: double(x) + 1)(jnp.arange(3)).tolist()
    ([0, 2, 4], [1, 3, 5])
"""

from __future__ import annotations

import functools
import os
from typing import Any, Callable

import equinox as eqx
import jax

__all__ = ["COMPILE_OPTIONS", "filter_jit", "jit"]


def _top_level_test() -> Callable[[], bool] | None:
    """JAX's test for "no transformation is tracing the caller", or None where JAX has none."""
    try:
        from jax._src import core
    except ImportError:  # pragma: no cover - JAX's layout changed
        return None
    context = getattr(core, "trace_ctx", None)
    return getattr(context, "is_top_level", None)


# JAXMTL_PLAIN_JIT=1 in the environment: plain jax.jit programs (XLA's defaults), to compare or to rule the option out
_PLAIN = os.environ.get("JAXMTL_PLAIN_JIT", "") not in ("", "0")
_IS_TOP_LEVEL = None if _PLAIN or jax.__version_info__ < (0, 10) else _top_level_test()

# XLA:CPU's elementwise fusions through the LLVM emitters instead of the MLIR fusion emitters:
# the same kernels, about half the compile time on the library's programs (module docstring).
COMPILE_OPTIONS: dict[str, Any] | None = None if _IS_TOP_LEVEL is None else {"xla_cpu_use_fusion_emitters": False}


class _Program:
    """A function with two compiled forms, each compiled when first called in its context: with
    :data:`COMPILE_OPTIONS` from the top level, plain ``jax.jit`` (or ``equinox.filter_jit``)
    inside a transformation. Other attributes (``lower``, ``trace``, ``eval_shape``) are the
    top-level form's."""

    def __init__(self, make: Callable[..., Any], fun: Callable[..., Any], kwargs: dict[str, Any]):
        functools.update_wrapper(self, fun)
        self._plain = make(fun, **kwargs)
        self._top = make(fun, compiler_options=COMPILE_OPTIONS, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        program = self._top if _IS_TOP_LEVEL is not None and _IS_TOP_LEVEL() else self._plain
        return program(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_plain", "_top"):
            raise AttributeError(name)
        return getattr(self._top, name)


def _compiled(make: Callable[..., Any], fun: Any, kwargs: dict[str, Any]) -> Any:
    if fun is None:
        return functools.partial(_compiled, make, kwargs=kwargs)
    return make(fun, **kwargs) if COMPILE_OPTIONS is None else _Program(make, fun, kwargs)


def jit(fun: Any = None, /, **kwargs: Any) -> Any:
    """``jax.jit(fun, **kwargs)``, compiled with :data:`COMPILE_OPTIONS` when called from the top
    level; a decorator with or without arguments (``@jit``, ``@partial(jit, static_argnames=...)``,
    ``jit(f, static_argnums=0)``).

    Args:
      fun: the function to compile (None: return a decorator taking it).
      kwargs: ``jax.jit``'s keyword arguments.

    Example:
        >>> from functools import partial
        >>> @partial(jit, static_argnames="k")
        ... def power(x, k):
        ...     return x ** k
        >>> float(power(3.0, k=2)), float(jax.grad(power)(3.0, k=2))
        (9.0, 6.0)
    """
    return _compiled(jax.jit, fun, kwargs)


def filter_jit(fun: Any = None, /, **kwargs: Any) -> Any:
    """``equinox.filter_jit(fun, **kwargs)`` (array leaves traced, everything else static),
    compiled with :data:`COMPILE_OPTIONS` when called from the top level; a decorator with or
    without arguments, as :func:`jit`.

    Example:
        >>> import jax.numpy as jnp
        >>> scale = filter_jit(lambda x, factor: factor * x)   # ``factor`` a Python float: static
        >>> scale(jnp.ones(2), 3.0).tolist()
        [3.0, 3.0]
    """
    return _compiled(eqx.filter_jit, fun, kwargs)
