r"""Memory plans of batched sweeps: how many right-hand sides one compiled call may hold.

A batched sweep (every ω, fold or output sharing one Gram K) keeps its right-hand sides side
by side as the columns of one n × (batch) matrix, so its memory is a fixed part (K, the
cross-Gram, the data) plus a part proportional to the batch. :func:`plan_chunk` turns a
budget in bytes into the largest batch that fits, and refuses a plan in which not even one
member fits — a clear :class:`~jaxmtl.errors.ParameterError` naming the budget before anything
is allocated, instead of an out-of-memory crash inside the compiled call.

The default budget (:func:`default_memory_budget`) is a fraction of the free memory the device
reports (``device.memory_stats()``: GPUs and TPUs), else :data:`FIXED_BUDGET` (the CPU backend
reports none).

Example:
    >>> plan_chunk(100, fixed_bytes=1000, bytes_per_member=10, budget=1500)
    50
"""

from __future__ import annotations

import jax

from .._checks import check_int
from ..errors import ParameterError

__all__ = ["FIXED_BUDGET", "DEVICE_FRACTION", "default_memory_budget", "plan_chunk"]

FIXED_BUDGET = 4 * 2**30  # bytes, where the device reports no memory (the CPU backend)
DEVICE_FRACTION = 0.75  # of the device's free memory: room for XLA's workspaces and the caller's arrays


def default_memory_budget(device: jax.Device | None = None) -> int:
    """Bytes a batched sweep may use on ``device`` (default: JAX's first device).

    ``DEVICE_FRACTION`` × (bytes_limit − bytes_in_use) when the device reports its memory, else
    ``FIXED_BUDGET``.

    Example:
        >>> default_memory_budget() > 0
        True
    """
    device = jax.devices()[0] if device is None else device
    try:
        stats = device.memory_stats()
    except Exception:  # noqa: BLE001 - backends without memory statistics
        stats = None
    if stats and stats.get("bytes_limit"):
        return int(DEVICE_FRACTION * (stats["bytes_limit"] - stats.get("bytes_in_use", 0)))
    return FIXED_BUDGET


def plan_chunk(n_members: int, fixed_bytes: int, bytes_per_member: int, budget: int | None = None,
               what: str = "batch member") -> int:
    """Largest number of batch members per call with fixed + chunk · per-member ≤ budget.

    Args:
      n_members: size of the whole batch (≥ 1).
      fixed_bytes: memory that does not grow with the batch (Gram matrices, data).
      bytes_per_member: memory one more member adds (its columns, carries, temporaries).
      budget: bytes (> 0), or None for :func:`default_memory_budget`.
      what: the name of one member in the error message.

    Returns:
      the chunk size, between 1 and ``n_members``.

    Raises:
      ParameterError: the budget is not a positive number, or not even one member fits.
    """
    n_members = check_int(n_members, "n_members", minimum=1)
    if budget is None:
        budget = default_memory_budget()
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not budget > 0:
        raise ParameterError(f"memory_budget must be a positive number of bytes; received {budget!r}.")
    room = budget - fixed_bytes
    if room < bytes_per_member:
        raise ParameterError(
            f"memory_budget={int(budget)} bytes ({budget / 2**20:.1f} MiB) cannot hold one {what}: the shared "
            f"arrays need {int(fixed_bytes)} bytes and each {what} {int(bytes_per_member)} more. Raise "
            "memory_budget, use float32, or take the matrix-free or blocked route with fewer rows.")
    return int(min(n_members, room // bytes_per_member))
