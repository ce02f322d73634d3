"""The mixed-effect client-server learner's cost per send and per prediction, and its refusals.

Two streams, JAX's default float32 configuration (the server's state is float64 on the host):

* ``music`` — 489 items on the unit sphere of R¹⁹, K̄ = ExponentialDot, K̃ = Linear, α = 0.14,
  λ = 1e-4 (the setting of ``repro_music.py``), 5 sends per user, users interleaved;
* ``ordinary_2d`` — distinct standard-normal points of R², K̄ = K̃ = Gaussian(1.0), α = 0.5,
  λ = 0.1, one send per point over 20 tasks (the thesis's Cholesky form refused the 36th such
  send in float32 and the 92nd in float64).

Recorded per stream: sends refused, the median time per send over blocks of 500 sends (the first
block, which compiles the kernel rows, left out), and the first and a cached prediction (the
shared O(n³) solve, then a lookup). Output: ``results/perf_server.json``.

Run: ``python benchmarks/perf_server.py [--quick]`` (the machine may be shared: quote ratios
within one run, not absolute times across runs).
"""

from __future__ import annotations

import statistics
import sys
import time

from _bench import set_threads, write

set_threads()

import jax  # noqa: E402
import numpy as np  # noqa: E402

from jaxmtl.kernels import Gaussian, Linear  # noqa: E402
from jaxmtl.mixed_effect import ExponentialDot, Server  # noqa: E402

BLOCK = 500


def stream(server, sends):
    """Send everything; returns (refused, per-send seconds of each block of BLOCK sends)."""
    refused, blocks, start = 0, [], time.perf_counter()
    for i, (task, x, y) in enumerate(sends):
        try:
            server.client(task).send(x, y)
        except ValueError:
            refused += 1
        if (i + 1) % BLOCK == 0:
            now = time.perf_counter()
            blocks.append((now - start) / BLOCK)
            start = now
    return refused, blocks


def measure(name, server, sends, Xq):
    refused, blocks = stream(server, sends)
    t0 = time.perf_counter()
    server.client(sends[0][0]).predict(Xq)
    t1 = time.perf_counter()
    server.client(sends[1][0]).predict(Xq)
    t2 = time.perf_counter()
    row = {"stream": name, "sends": len(sends), "refused": refused, "distinct_inputs": server.n_inputs,
           "ms_per_send_median": 1e3 * statistics.median(blocks[1:] or blocks),
           "first_prediction_s": t1 - t0, "cached_prediction_s": t2 - t1}
    print(row, flush=True)
    return row


def main(quick: bool) -> None:
    rng = np.random.default_rng(0)
    users = 200 if quick else 2000
    items = rng.normal(size=(489, 19))
    items /= np.linalg.norm(items, axis=1, keepdims=True)
    music = [(u, items[rng.integers(0, 489)], float(rng.normal())) for u in range(users) for _ in range(5)]
    music = [music[i] for i in rng.permutation(len(music))]
    n2 = 600 if quick else 3000
    points = rng.normal(size=(n2, 2))
    ordinary = [(i % 20, points[i], float(rng.normal())) for i in range(n2)]
    rows = [measure("music", Server(0.14, 1e-4, ExponentialDot(), Linear(), capacity=512), music, items[:20]),
            measure("ordinary_2d", Server(0.5, 0.1, Gaussian(1.0), capacity=16), ordinary, points[:20])]
    write("perf_server" + ("_quick" if quick else ""),
          {"mode": "quick" if quick else "full", "command": "python benchmarks/perf_server.py"
           + (" --quick" if quick else ""), "jax_enable_x64": bool(jax.config.jax_enable_x64),
           "state_dtype": "float64 (host)", "block": BLOCK, "rows": rows})


if __name__ == "__main__":
    main("--quick" in sys.argv[1:])
