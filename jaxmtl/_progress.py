"""Progress of long compiled work, reported between chunks of steps (never inside every step).

The one place where fits report progress (``verbose=True``):

* :class:`StageReporter` prints each stage of a fit (each one compiled call) and its time; while
  a stage runs, it is the *active* stage;
* :func:`report_step` is called inside compiled scans (a static ``progress`` flag of the path
  functions turns it on, so the quiet compiled code is unchanged): every ``total // 20`` steps it
  makes one host callback that draws the active stage's :class:`ProgressBar` — steps done of the
  path, elapsed time. Paths vmapped over folds or parameters advance together and draw one bar;
  sequential paths (kernels in a ``lax.map``, λ or C grids) each draw theirs;
* :func:`chunked_scan` is ``lax.scan`` run as an outer scan over chunks of ``every`` steps with
  one host callback per chunk, for scans whose caller holds its own callback.

:class:`ProgressBar` is the host side: a one-line bar on stderr that terminals and notebooks both
render.

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

__all__ = ["ProgressBar", "StageReporter", "chunked_scan", "report_step", "reporting"]


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
        """Record that ``done`` steps (a count since the start) are finished, and redraw (only
        when the count changed: vmapped paths report the same step once per batch element)."""
        done = int(done)
        if done == self.done:
            return
        self.done = done
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


_ACTIVE: list["_Stage"] = []  # the stages running now, innermost last


def reporting() -> bool:
    """True while a stage of a ``verbose=True`` fit runs: pass it as the paths' static ``progress``."""
    return bool(_ACTIVE)


def _draw_step(done, total) -> None:
    if _ACTIVE:
        _ACTIVE[-1].step(int(done), int(total))


def report_step(step, total: int) -> None:
    """Inside a compiled scan body: report ``step`` (1 … total, a traced scalar) to the active stage,
    every ``max(1, total // 20)`` steps and at the last; one host callback each time.

    Example:
        >>> def body(c, i):
        ...     report_step(i, 100)
        ...     return c + i, None
        >>> float(jax.lax.scan(body, 0.0, jnp.arange(1, 101))[0])  # no stage active: prints nothing
        5050.0
    """
    every = max(1, int(total) // 20)
    jax.lax.cond((step % every == 0) | (step == total),
                 lambda s: jax.debug.callback(_draw_step, s, total), lambda s: None, step)


class _Stage:
    """One stage of a fit: prints itself on entry, its time on exit, and a step bar in between."""

    def __init__(self, reporter: "StageReporter", text: str):
        self.reporter, self.text = reporter, text
        self.bar: ProgressBar | None = None

    def __enter__(self):
        self.start = time.perf_counter()
        if self.reporter.enabled:
            self.reporter.stream.write(f"{self.reporter.name}: {self.text} …")
            self.reporter.stream.flush()
            _ACTIVE.append(self)
        return self

    def step(self, done: int, total: int) -> None:
        """Draw the bar of the path running now (a new bar when a path starts again from its beginning)."""
        if self.bar is None or done < self.bar.done or total != self.bar.total:
            if self.bar is None or self.bar.done < self.bar.total:
                self.reporter.stream.write("\n")
            self.bar = ProgressBar(total, "  steps", stream=self.reporter.stream)
            self.bar.start = self.start
        self.bar.update(done)

    def __exit__(self, *exc):
        if self.reporter.enabled:
            _ACTIVE.remove(self)
            elapsed = time.perf_counter() - self.start
            if self.bar is not None and self.bar.done < self.bar.total:  # a path stopped early
                self.reporter.stream.write("\n")
            self.reporter.stream.write(f" {elapsed:.1f} s\n" if self.bar is None
                                       else f"{self.reporter.name}: {self.text}: {elapsed:.1f} s\n")
            self.reporter.stream.flush()


class StageReporter:
    """Reports the stages of a fit (each one compiled call) with their wall time, on stderr.

    ``with reporter.stage("width search: 6 widths × 11 ω × 300 steps × 5 folds"):`` prints the
    stage when it starts and its time when it ends; paths compiled with ``progress=reporting()``
    draw their step bar in between. With ``enabled=False`` nothing is printed.
    """

    def __init__(self, name: str, enabled: bool = False, stream=None):
        self.name, self.enabled = name, bool(enabled)
        self.stream = stream or sys.stderr

    def stage(self, text: str) -> _Stage:
        return _Stage(self, text)
