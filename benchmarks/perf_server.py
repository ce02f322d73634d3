"""The mixed-effect client-server learner's cost per send and per prediction, and its refusals.

Two streams, JAX's default float32 configuration (the server's state is float64 on the host):

* ``music`` — 489 items on the unit sphere of R¹⁹, K̄ = ExponentialDot, K̃ = Linear, α = 0.14,
  λ = 1e-4 (the setting of ``repro_music.py``), 5 sends per user, users interleaved;
* ``ordinary_2d`` — distinct standard-normal points of R², K̄ = K̃ = Gaussian(1.0), α = 0.5,
  λ = 0.1, one send per point over 20 tasks (the thesis's Cholesky form refused the 36th such
  send in float32 and the 92nd in float64).

Recorded per stream: sends refused, the median time per send over blocks of 500 sends (the first
block, which compiles the kernel rows, left out), and the first and a cached prediction (the
shared O(n³) solve, then a lookup).

Then, on a stream of 200 clients over 50 items of R² (Gaussian(1.0), α = 0.5, λ = 0.1):

* ``concurrency`` — sends per second into one in-process Server from 1 thread and from 8 threads
  (each its slice of the stream), in memory; the ratio 8 / 1 (the target is ≥ 0.8);
* ``log`` — the durable server's cost per send (``Server.open``): in memory, log fsync'd per send
  (``sync_every=1``) and per 64 sends (a power loss may drop up to 63 acknowledged sends);
* ``http`` — sends per second over HTTP to ``python -m jaxmtl.mixed_effect.serve`` (fsync per
  send) from 1 thread and from 8 concurrent threads, for a stream of 16 clients (needs the extra
  ``jaxmtl[serve]``).

Output: ``results/perf_server.json`` (``perf_server_quick.json`` with ``--quick``).

Run: ``python benchmarks/perf_server.py [--quick] [--shared]`` (``--shared``: the machine is shared
with other jobs, recorded with its load average; quote ratios within one run, not absolute times
across runs).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
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


def service_stream(n, n_clients=200):
    rng = np.random.default_rng(1)
    items = rng.normal(size=(50, 2))
    return [(int(rng.integers(n_clients)), items[rng.integers(50)], float(rng.normal())) for _ in range(n)]


def rate(send, parts):
    """Sends per second of ``send(task, x, y)`` over ``parts``, one thread per part (run concurrently);
    any failed send fails the measurement."""
    failures = []

    def run(part):
        try:
            for task, x, y in part:
                send(task, x, y)
        except Exception as exc:                       # noqa: BLE001 - re-raised below
            failures.append(exc)
    threads = [threading.Thread(target=run, args=(p,)) for p in parts]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    return sum(map(len, parts)) / (time.perf_counter() - t0)


def new_server():
    return Server(0.5, 0.1, Gaussian(1.0), capacity=64)


def concurrency(n):
    """In-process sends per second from 1 and 8 threads; the warm-up stream compiles the kernel rows."""
    stream, rows = service_stream(n), []
    for threads in (1, 8, 1, 8):                      # alternated, so that both see the same load
        server = new_server()
        rate(lambda t, x, y: server.client(t).send(x, y), [stream[:200]])
        rows.append({"threads": threads, "sends": n,
                     "sends_per_s": rate(lambda t, x, y: server.client(t).send(x, y),
                                         [stream[k::threads] for k in range(threads)])})
    best = {k: max(r["sends_per_s"] for r in rows if r["threads"] == k) for k in (1, 8)}
    print(rows, flush=True)
    return {"rows": rows, "best_sends_per_s": best, "ratio_8_over_1": best[8] / best[1]}


def log_cost(n):
    """Seconds per send in memory and durable (fsync per send, per 64 sends), same stream."""
    stream, out = service_stream(n), {}
    for name, sync in (("memory", None), ("fsync_every_send", 1), ("fsync_every_64", 64), ("memory_again", None)):
        with tempfile.TemporaryDirectory() as d:
            server = new_server() if sync is None else Server.open(d, new_server(), sync_every=sync)
            rate(lambda t, x, y: server.client(t).send(x, y), [stream[:200]])
            out[name] = 1.0 / rate(lambda t, x, y: server.client(t).send(x, y), [stream])
            server.close()
    base = min(out["memory"], out["memory_again"])
    res = {"s_per_send": out, "log_cost_s_per_send": {k: out[k] - base for k in ("fsync_every_send", "fsync_every_64")}}
    print(res, flush=True)
    return res


def http(n):
    """Sends per second over HTTP (a server process on 127.0.0.1, fsync per send), 1 and 8 clients."""
    try:
        from jaxmtl.mixed_effect.remote import RemoteClient
        from jaxmtl.mixed_effect.serve import issue_tokens
    except ImportError as exc:
        return {"skipped": str(exc)}
    stream, out = service_stream(n, n_clients=16), {}      # 16 clients, each with its keep-alive connection
    with tempfile.TemporaryDirectory() as d:
        Server.open(os.path.join(d, "state"), new_server()).close()
        tokens = issue_tokens(os.path.join(d, "tokens"), range(16))
        port_file = os.path.join(d, "port")
        proc = subprocess.Popen([sys.executable, "-m", "jaxmtl.mixed_effect.serve", "--state",
                                 os.path.join(d, "state"), "--tokens", os.path.join(d, "tokens"), "--port", "0",
                                 "--port-file", port_file])
        try:
            while not os.path.exists(port_file):
                time.sleep(0.1)
            url = f"http://127.0.0.1:{open(port_file).read()}"
            clients = {t: RemoteClient(url, tok) for t, tok in tokens.items()}
            while True:
                try:
                    clients[0].health()
                    break
                except Exception:                      # noqa: BLE001 - not listening yet
                    time.sleep(0.1)
            rate(lambda t, x, y: clients[t].send(x, y), [stream[:100]])
            for threads in (1, 8, 1, 8):
                out.setdefault(threads, []).append(rate(lambda t, x, y: clients[t].send(x, y),
                                                        [stream[k::threads] for k in range(threads)]))
        finally:
            proc.kill()
            proc.wait()
    res = {"sends": n, "sends_per_s": {f"{k}_threads": max(v) for k, v in out.items()}, "fsync": "every send"}
    print(res, flush=True)
    return res


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
           "state_dtype": "float64 (host)", "block": BLOCK, "rows": rows,
           "concurrency": concurrency(2000 if quick else 16000), "log": log_cost(1000 if quick else 4000),
           "http": http(400 if quick else 2000), "shared_machine": "--shared" in sys.argv[1:],
           "load_average": os.getloadavg()})


if __name__ == "__main__":
    main("--quick" in sys.argv[1:])
