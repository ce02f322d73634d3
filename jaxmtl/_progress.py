"""Progress of long compiled work, reported between chunks of steps (never inside every step).

:func:`chunked_scan` is ``lax.scan`` run as an outer scan over chunks of ``every`` steps with one
host callback (``jax.debug.callback``) per chunk, so a 3000-step path with ``every=100`` makes 30
callbacks and the compiled inner loop is unchanged. With ``callback=None`` it is exactly
``lax.scan``. :class:`ProgressBar` is the host side: a one-line bar on stderr that terminals and
notebooks both render.

Example:
    >>> import jax.numpy as jnp
    >>> bar = ProgressBar(total=100, desc="path", enabled=False)
    >>> carry, ys = chunked_scan(lambda c, x: (c + x, c), 0.0, jnp.arange(100.0), every=10,
    ...                          callback=bar.update)
    >>> float(carry), ys.shape
    (4950.0, (100,))
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp

__all__ = ["ProgressBar", "StageReporter", "chunked_scan"]


class ProgressBar:
    """A one-line progress bar on stderr: ``desc [#####     ] done/total  elapsed s``.

    Args:
      total: the number of steps of the whole job.
      desc: a short label.
      enabled: False makes every method a no-op (the estimators' ``verbose=False``).
      stream: where to write (stderr by default).
    """

    def __init__(self, total: int, desc: str = "", enabled: bool = True, stream=None):
        self.total, self.desc, self.enabled = int(total), desc, bool(enabled)
        self.stream = stream or sys.stderr
        self.done = 0
        self.start = time.perf_counter()

    def update(self, done) -> None:
        """Record that ``done`` steps (a count since the start) are finished, and redraw."""
        self.done = int(done)
        if not self.enabled:
            return
        width = 30
        filled = int(width * min(self.done, self.total) / max(self.total, 1))
        elapsed = time.perf_counter() - self.start
        self.stream.write(f"\r{self.desc} [{'#' * filled}{' ' * (width - filled)}] "
                          f"{self.done}/{self.total}  {elapsed:.1f} s")
        if self.done >= self.total:
            self.stream.write("\n")
        self.stream.flush()


def chunked_scan(body: Callable, carry: Any, xs: jax.Array, every: int,
                 callback: Callable[[int], None] | None = None) -> tuple[Any, Any]:
    """``lax.scan(body, carry, xs)`` with ``callback(steps_done)`` on the host after each chunk.

    Args:
      body: the scan body ``(carry, x) -> (carry, y)``.
      carry: the initial carry (a pytree).
      xs: (T, ...) the scanned-over array (step indices, typically).
      every: steps per chunk (≥ 1); the last chunk may be shorter.
      callback: called with the number of finished steps after each chunk, or None.

    Returns:
      (final carry, stacked outputs of shape (T, ...)), identical to ``lax.scan``.
    """
    if callback is None:
        return jax.lax.scan(body, carry, xs)
    T = xs.shape[0]
    every = max(1, min(int(every), T))
    n_full, rest = divmod(T, every)

    def chunk(c, k_and_xs):
        k, xs_chunk = k_and_xs
        c, ys = jax.lax.scan(body, c, xs_chunk)
        jax.debug.callback(lambda k: callback((int(k) + 1) * every), k, ordered=True)
        return c, ys

    head = xs[: n_full * every].reshape((n_full, every) + xs.shape[1:])
    carry, ys = jax.lax.scan(chunk, carry, (jnp.arange(n_full), head))
    ys = jax.tree_util.tree_map(lambda y: y.reshape((n_full * every,) + y.shape[2:]), ys)
    if rest:
        carry, ys_rest = jax.lax.scan(body, carry, xs[n_full * every:])
        ys = jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), ys, ys_rest)
        jax.debug.callback(lambda: callback(T), ordered=True)
    return carry, ys


class StageReporter:
    """Reports the stages of a fit (each one compiled call) with their wall time, on stderr.

    ``with reporter.stage("width search: 6 widths × 11 ω × 300 steps × 5 folds"):`` prints the
    stage when it starts and its time when it ends; with ``enabled=False`` nothing is printed.
    """

    def __init__(self, name: str, enabled: bool = False, stream=None):
        self.name, self.enabled = name, bool(enabled)
        self.stream = stream or sys.stderr

    def stage(self, text: str):
        reporter = self

        class _Stage:
            def __enter__(self):
                self.start = time.perf_counter()
                if reporter.enabled:
                    reporter.stream.write(f"{reporter.name}: {text} …")
                    reporter.stream.flush()

            def __exit__(self, *exc):
                if reporter.enabled:
                    reporter.stream.write(f" {time.perf_counter() - self.start:.1f} s\n")
                    reporter.stream.flush()

        return _Stage()

