"""LAPACK's threads under JAX's CPU backend, alone and beside a second process.

JAX's CPU backend runs its factorisations and eigendecompositions (``eigh``, ``cholesky``,
triangular solves) through the OpenBLAS that SciPy ships, whose own thread pool sits beside XLA's.
This script times a batch of ``jnp.linalg.eigh`` and ``jnp.linalg.cholesky`` calls in a fresh
process with ``OPENBLAS_NUM_THREADS`` = 1 or unset (OpenBLAS's default: one thread per core),
alone and with a twin process doing the same at the same time (two test workers, two jobs of a
sweep, …), and writes ``results/lapack_threads.json``: the median milliseconds per matrix.

    python benchmarks/lapack_threads.py            # sizes 80, 200, 500, 1000, 2000
    python benchmarks/lapack_threads.py --quick    # sizes 80, 200
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from _bench import write

CHILD = """
import json, sys, time
import numpy as np, jax, jax.numpy as jnp
out = {}
for m in map(int, sys.argv[1].split(",")):
    A = np.random.default_rng(m).normal(size=(m, m)).astype(np.float32)
    A = np.stack([A @ A.T / m + np.eye(m, dtype=np.float32)] * max(2, 4000 // m))
    for name, f in (("eigh", jax.jit(jax.vmap(lambda a: jnp.linalg.eigh(a)[0]))),
                    ("cholesky", jax.jit(jax.vmap(jnp.linalg.cholesky)))):
        f(A).block_until_ready()
        runs = []
        for _ in range(int(sys.argv[2])):
            t = time.perf_counter(); f(A).block_until_ready(); runs.append(time.perf_counter() - t)
        out[f"{name}/{m}"] = sorted(runs)[len(runs) // 2] / len(A) * 1e3
print(json.dumps(out))
"""


def run(sizes: str, repeats: int, threads: str | None, processes: int) -> dict:
    """Median ms per matrix of each (operation, size) in the first of ``processes`` concurrent twins."""
    env = dict(os.environ)
    env.pop("OPENBLAS_NUM_THREADS", None)
    if threads is not None:
        env["OPENBLAS_NUM_THREADS"] = threads
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, sizes, str(repeats)], env=env, stdout=subprocess.PIPE,
                              text=True) for _ in range(processes)]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError("a timing process failed")
    return json.loads(outs[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes 80 and 200, 3 repeats")
    args = parser.parse_args()
    sizes = "80,200" if args.quick else "80,200,500,1000,2000"
    repeats = 3 if args.quick else 5
    rows = []
    for processes in (1, 2):
        for threads in (None, "1"):
            ms = run(sizes, repeats, threads, processes)
            rows.append({"processes": processes, "openblas_threads": threads or "default (one per core)", "ms": ms})
            print(processes, threads or "default", json.dumps({k: round(v, 3) for k, v in ms.items()}), flush=True)
    write("lapack_threads_quick" if args.quick else "lapack_threads",
          {"quick": args.quick, "load_1min_at_end": os.getloadavg()[0], "dtype": "float32",
           "rows": rows})


if __name__ == "__main__":
    main()
