"""First and warm fit of ``VectorValuedRegressor()`` and the XLA programs each compiles, beside
scikit-learn's ``GridSearchCV(KernelRidge)`` over a 180-point grid.

Each size runs in its own process, JAX's default configuration (float32, x64 off, no persistent
compilation cache): the first ``fit`` (compilation included, what a new process waits for), then a
warm ``fit`` on the same data (every program already compiled; on other data of the same shape a
fit whose best step lies on the edge of its path continues the path, a longer program compiled
then). Around each fit the
child records ``cpu_s`` (``time.process_time()``: all threads' user + system seconds), ``wall_s``,
``programs`` (XLA compilations: ``jax.monitoring``'s backend-compile events) and ``compile_s``
(their summed durations). One more process fits 200 rows and then 207: the programs the second
size compiles again (a fit's shapes follow n; docs/performance.md, "Compilation").

The data: X ~ N(0, 1) with 2 features, outputs [sin x₀ + x₁, cos x₁] plus noise 0.1. The
scikit-learn baseline is ``GridSearchCV(KernelRidge(kernel='rbf'), 6 α × 30 γ, cv=5)`` (float64),
timed the same way in its own process (first fit, then a warm one).

Usage::

    python benchmarks/compile_times.py [--quick] [--sizes 100 200 207 1000] [--shared]

``--quick``: n = 100 only (``results/compile_times_quick.json``). ``--shared`` records that the
machine ran other work at the same time. Writes ``benchmarks/results/compile_times.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from _bench import COMPILE_COUNTER, ROOT, table, versions, write

_CHILD = """
import json, sys, time, warnings
import numpy as np
import jax
kind, sizes = sys.argv[1], [int(s) for s in sys.argv[2:]]
""" + COMPILE_COUNTER + """
if kind == "jaxmtl":
    from jaxmtl import VectorValuedRegressor
    make = VectorValuedRegressor
else:
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV
    grid = {"alpha": np.logspace(-6, 1, 6).tolist(), "gamma": np.logspace(-3, 2, 30).tolist()}
    make = lambda: GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=5)
warnings.simplefilter("ignore")
out = []
for n in sizes:
    rng = np.random.default_rng(n)  # the same data for the same n
    X = rng.normal(size=(n, 2))
    Y = np.c_[np.sin(X[:, 0]) + X[:, 1], np.cos(X[:, 1])] + 0.1 * rng.normal(size=(n, 2))
    before = dict(counts)
    c, t = time.process_time(), time.perf_counter()
    make().fit(X, Y)
    out.append({"n": n, "cpu_s": time.process_time() - c, "wall_s": time.perf_counter() - t,
                "programs": counts["programs"] - before["programs"],
                "compile_s": counts["compile_s"] - before["compile_s"]})
print(json.dumps(out))
"""


def _run(kind: str, sizes: list[int]) -> list[dict]:
    """The per-fit records of one child process fitting ``sizes`` in turn."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_"))}  # JAX's defaults
    proc = subprocess.run([sys.executable, "-c", _CHILD, kind, *map(str, sizes)], capture_output=True,
                          text=True, cwd=ROOT, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} fit at {sizes} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 100 only")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 207, 1000])
    parser.add_argument("--shared", action="store_true", help="the machine ran other work at the same time")
    args = parser.parse_args(argv)
    sizes = [100] if args.quick else args.sizes
    rows = []
    for kind, name in (("jaxmtl", "VectorValuedRegressor"), ("sklearn", "GridSearchCV(KernelRidge, 6 α × 30 γ)")):
        for n in sizes:
            first, warm = _run(kind, [n, n])
            rows.append({"estimator": name, "n": n, "first": first, "warm": warm})
            print(f"{name} n={n}: first {first['cpu_s']:.2f} CPU s ({first['programs']} programs), "
                  f"warm {warm['cpu_s']:.2f} CPU s ({warm['programs']} programs)", flush=True)
    payload = {
        "dtype": "float32",
        "dtype_note": "jaxmtl in JAX's default configuration (x64 off); scikit-learn in float64",
        "versions": versions(),
        "shared_machine": args.shared,
        "load_1min": os.getloadavg()[0],
        "rows": rows,
    }
    if not args.quick:
        first, then = _run("jaxmtl", [200, 207])
        payload["fit_207_after_200"] = {"fit_200": first, "fit_207": then}
        print(f"VectorValuedRegressor: 207 rows after 200 compile {then['programs']} programs", flush=True)
    flat = [{"estimator": r["estimator"], "n": r["n"], **{f"{k}_{f}": r[k][f] for k in ("first", "warm")
                                                          for f in ("cpu_s", "wall_s", "programs")}} for r in rows]
    print(table(flat, ["estimator", "n", "first_cpu_s", "first_wall_s", "first_programs", "warm_cpu_s",
                       "warm_wall_s", "warm_programs"]))
    path = write("compile_times_quick" if args.quick else "compile_times", payload)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
