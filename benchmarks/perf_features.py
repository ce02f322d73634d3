"""Two costs around fitted feature maps and predictors, each measured against the form it replaced.

* ``statistics``: ``stream_statistics`` (ΦᵀΦ, ΦᵀY, YᵀY) of a Gaussian Nyström map over ``rows``
  rows of 28 inputs, chunks of 8192, float32: ΦᵀΦ formed by its lower column blocks (the library's
  form from ``GRAM_BLOCKS_FROM`` = 1024 features) against the plain product (the constant raised
  in that process). Median of 3 warm calls; the first call apart.
* ``closed_over``: ``VectorValuedRegressor`` (one Gaussian kernel, one (λ, ω)) fitted on n rows of
  8 inputs, its predictor closed over in a user's ``jax.jit`` (the fitted rows become constants of
  that program): the first call's wall time, the compilation events' seconds, and whether XLA
  printed its slow-constant-folding warning; then ``predict`` on 10 rows (median of 50 calls). The kernels' median shift reads at
  most ``SHIFT_ROWS`` = 255 evenly spaced fitted rows; ``shift_rows = n`` restores the sort of every
  fitted row (the earlier form).

Each case runs in a fresh process. Writes ``results/perf_features.json``::

    python benchmarks/perf_features.py --threads 0           # 16 384 rows, M = 2000 and 10 000; n = 5000
    python benchmarks/perf_features.py --quick --threads 0   # 4096 rows, M = 1100; n = 500
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from _bench import COMPILE_COUNTER, CONSTANT_FOLDING, isolated, median_time, parse_args, report, set_threads

set_threads()  # before numpy / jax: --threads 0 for all cores, as the docs' figures


def _captured_stderr(fn):
    """(fn(), what was written to file descriptor 2 meanwhile): XLA logs from C++, past sys.stderr."""
    with tempfile.TemporaryFile(mode="w+") as f:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(f.fileno(), 2)
        try:
            out = fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        return out, f.read()


def statistics(task: dict) -> dict:
    import jax
    import numpy as np

    import jaxmtl.operators.nystrom as nystrom
    from jaxmtl.kernels import Gaussian
    from jaxmtl.operators.nystrom import NystromFeatures
    from jaxmtl.operators.streaming import stream_statistics

    if not task["blocked"]:
        nystrom.GRAM_BLOCKS_FROM = 10**9  # the plain product RᵀR at every size
    rng = np.random.default_rng(0)
    X = rng.normal(size=(task["rows"], 28)).astype(np.float32)
    Y = rng.normal(size=(task["rows"], 8)).astype(np.float32)
    fmap = NystromFeatures.from_centres(Gaussian(np.sqrt(28.0)), X[: task["M"]])

    def run():
        return jax.block_until_ready(stream_statistics(fmap, X, Y, chunk_rows=8192).G)

    t0 = time.perf_counter()
    G = run()
    first = time.perf_counter() - t0
    return {"first_s": first, "median_s": median_time(run, 3), "trace": float(np.trace(np.asarray(G[0], np.float64)))}


def closed_over(task: dict) -> dict:
    import jax
    import numpy as np

    import jaxmtl.kernels.scalar as scalar
    from jaxmtl import VectorValuedRegressor
    from jaxmtl.kernels import Gaussian

    scalar.SHIFT_ROWS = task["shift_rows"]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(task["n"], 8)).astype(np.float32)
    Y = np.stack([np.sin(X[:, 0]) + X[:, 1], np.cos(X[:, 1])], 1) + 0.1 * rng.normal(size=(task["n"], 2))
    # one kernel and one grid point: the fit is not what is measured (a default fit at 5000 rows takes minutes)
    est = VectorValuedRegressor(Gaussian(2.0), lambdas=[1e-3], omegas=[0.5], selection="gcv").fit(X, Y)
    f = est.predictor()
    user = jax.jit(lambda x: f(x))
    counter: dict = {"jax": jax}
    exec(COMPILE_COUNTER, counter)  # counter["counts"]: the programs compiled from here on, their seconds
    t0 = time.perf_counter()
    _, err = _captured_stderr(lambda: jax.block_until_ready(user(X[:10])))
    first = time.perf_counter() - t0
    compiled = dict(counter["counts"])
    est.predict(X[:10])
    return {"first_call_s": first, "programs": compiled["programs"], "compile_s": compiled["compile_s"],
            "slow_folding_warning": CONSTANT_FOLDING in err.lower(), "median_s": median_time(lambda: est.predict(X[:10]), 50)}


WORKERS = {"statistics": statistics, "closed_over": closed_over}


def main(argv=None) -> None:
    args = parse_args(__doc__, lambda task: WORKERS[task["case"]](task), argv)
    if args is None:
        return
    rows_n, Ms, n = (4096, (1100,), 500) if args.quick else (16_384, (2000, 10_000), 5000)
    tasks = [{"case": "statistics", "rows": rows_n, "M": M, "blocked": b} for M in Ms for b in (True, False)]
    tasks += [{"case": "closed_over", "n": n, "shift_rows": s} for s in (255, n)]
    rows = []
    for task in tasks:
        res = {**isolated(__file__, {**task, "threads": args.threads}, timeout=1800), **task}
        print({k: v for k, v in res.items() if k != "task"}, flush=True)
        rows.append(res)
    targets = {}
    for M in Ms:
        b, p = (next(r for r in rows if r["case"] == "statistics" and r["M"] == M and r["blocked"] is x) for x in (True, False))
        if "median_s" in b and "median_s" in p:
            targets[f"statistics_M{M}"] = {"blocked_over_plain": b["median_s"] / p["median_s"],
                                          "trace_rel_diff": abs(b["trace"] - p["trace"]) / abs(p["trace"]),
                                          "met": b["median_s"] < p["median_s"]}
    new, old = (next(r for r in rows if r["case"] == "closed_over" and r["shift_rows"] == s) for s in (255, n))
    if "first_call_s" in new and "first_call_s" in old:
        targets["closed_over"] = {"first_call_over_earlier": new["first_call_s"] / old["first_call_s"],
                                  "predict_over_earlier": new["median_s"] / old["median_s"],
                                  "met": not new["slow_folding_warning"] and new["first_call_s"] < old["first_call_s"]}
    report("perf_features", args.quick, rows,
           ["case", "M", "blocked", "n", "shift_rows", "first_s", "first_call_s", "slow_folding_warning", "median_s"],
           targets, dtype="float32", command="python benchmarks/perf_features.py" + (" --quick" if args.quick else "")
           + f" --threads {args.threads}")


if __name__ == "__main__":
    main()
