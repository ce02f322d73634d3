"""Shared helpers of the benchmark scripts: machine facts, timing, result files."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> dict:
    """Platform, processor, cores, memory and library versions."""
    import jax
    import numpy as np

    info = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "jax": jax.__version__,
        "numpy": np.__version__,
        "jax_backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
    }
    try:
        with open("/proc/meminfo") as fh:
            info["memory_total_kb"] = int(fh.readline().split()[1])
        with open("/proc/cpuinfo") as fh:
            names = [ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")]
        if names:
            info["cpu_model"] = names[0]
    except OSError:
        pass
    return info


def median_time(fn, repeats: int = 3) -> float:
    """Median wall time of ``fn()`` over ``repeats`` calls (``fn`` must block until done)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def first_call_time(fn) -> float:
    """Wall time of one call (compilation included when it is the first)."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def write(name: str, payload: dict) -> Path:
    """Write ``results/<name>.json`` with the machine facts added."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "machine": machine(), **payload}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=float))
    return path


def table(rows: list[dict], columns: list[str]) -> str:
    """A plain-text table of ``rows`` restricted to ``columns``."""
    fmt = lambda v: f"{v:.4g}" if isinstance(v, float) else str(v)
    cells = [[fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)
