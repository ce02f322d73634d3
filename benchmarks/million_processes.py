"""One estimator from one process to several: ApproximateKernelRegressor(mesh=...) on 1 and 2 processes.

The rows are the first n training rows of ``benchmarks/million.py``'s data set (its generator,
its files: HIGGS-shaped inputs, 8 outputs of rank-4 structure plus noise, float32 on disk), read
from the memory-mapped ``.npy`` files by every process — each process its own rows, widened to
float64 by the estimator's ``dtype='float64'``. The
estimator is the library's default ``ApproximateKernelRegressor`` (Nyström, min(n, 1000) uniform
centres, the default width search, Tikhonov's λ grid to the precision floor, the coupled and the
per-output families by 5-fold CV) with ``mesh=jaxmtl.distributed.global_mesh()``, in float64.
Each configuration runs as its own set of processes (``python -m jaxmtl.distributed.launch``),
each process with one CPU thread, so that 2 processes use the 2 cores of this machine and 1
process one of them.

Recorded per configuration: wall time of the fit (compilation included: every process compiles
once, as a user's run does), of reading the rows (``ShardedRows``: the rows, the outputs'
moments, every row's check) and of one warm statistics pass (ΦᵀΦ, ΦᵀY, YᵀY per fold over
every process's rows and the ``psum``), peak resident memory per process, the selection, and the
test RMSE per output of the predictions on the test rows.

Checks: (1) 2 processes select what 1 process selects and their test predictions equal its
predictions to 1e-6 relative; (2) the scaling model of docs/distributed.md — each process does
the replicated work and 1/P of the row work (reading and the statistics pass), both slowed by the
machine's contention factor (measured here: P independent copies of the one-process fit run at
once), plus a ring all-reduce of the statistics (k·D·(D + d) numbers, 8 bytes each) at the
loopback latency and bandwidth fitted in ``perf_distributed.json`` — predicts the 2-process fit
time within 25 %
(not checked with ``--quick``, where compilation dominates the fit).

Usage: python benchmarks/million_processes.py [--quick] [--n 100000] [--processes 1,2]
Writes benchmarks/results/million_processes[_quick].json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

PARSER = argparse.ArgumentParser(description=__doc__.splitlines()[0])
PARSER.add_argument("--quick", action="store_true", help="2 000 training rows, 200 centres (seconds)")
PARSER.add_argument("--n", type=int, default=None, help="training rows (default 100 000; --quick 2 000)")
PARSER.add_argument("--processes", default="1,2", help="process counts to run (comma-separated)")
PARSER.add_argument("--timeout", type=float, default=3000.0, help="seconds allowed to each configuration")
PARSER.add_argument("--worker", default=None, help=argparse.SUPPRESS)

SINGLE_THREAD = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
                 "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
TOLERANCE = 1e-6  # predictions of P processes against one process, relative (float64)
MODEL_TOLERANCE = 0.25  # the scaling model's 2-process fit time, relative


def worker(task: dict) -> None:
    """One process of a configuration: fit, time the row work, predict; print one RESULT line."""
    from jaxmtl.distributed import initialize

    initialize(timeout=120)
    import jax

    jax.config.update("jax_enable_x64", True)
    import numpy as np

    from jaxmtl import ApproximateKernelRegressor
    from jaxmtl.distributed import ShardedRows, global_mesh

    n, m = task["n"], task["n_components"]
    X = np.load(task["X"], mmap_mode="r")[:n]  # the first n rows: a view, nothing read yet
    Y = np.load(task["Y"], mmap_mode="r")[:n]
    mesh = global_mesh()
    model = ApproximateKernelRegressor(n_components=m, mesh=mesh, dtype="float64")
    t0 = time.perf_counter()
    model.fit(X, Y)
    fit_s = time.perf_counter() - t0
    # the row work of the fit, timed apart: reading the rows (and their moments), one statistics pass
    with model._precision():
        t0 = time.perf_counter()
        rows = ShardedRows(X, Y, mesh, model._input_offset_, np.float64)
        read_s = time.perf_counter() - t0
        groups = np.arange(n) % 5  # five groups, as the fit's folds
        rows.statistics(model.feature_map_, groups, 5, 2048)  # compiled by the fit already
        t0 = time.perf_counter()
        jax.block_until_ready(rows.statistics(model.feature_map_, groups, 5, 2048))
        stats_s = time.perf_counter() - t0
    Xt, Yt = np.load(task["Xt"], mmap_mode="r"), np.load(task["Yt"], mmap_mode="r")
    pred = model.predict(np.asarray(Xt))
    if jax.process_index() == 0:
        np.save(task["pred"], pred)
    out = {"process": jax.process_index(), "processes": jax.process_count(), "fit_s": fit_s, "read_s": read_s,
           "stats_s": stats_s, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "best_params": {"kernel_width": model.best_params_["kernel_width"], "omega": model.best_params_["omega"],
                           "param": model.best_params_["param"]},
           "family": model.family_, "n_components": int(model.n_components_),
           "test_rmse": np.sqrt(np.mean((pred - np.asarray(Yt, np.float64)) ** 2, axis=0)).tolist()}
    print("RESULT " + json.dumps(out), flush=True)


def _start(P: int, task: dict, timeout: float) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "jaxmtl.distributed.launch", "--processes", str(P), "--timeout", str(timeout),
           str(Path(__file__).resolve()), "--worker", json.dumps(task)]
    env = {**os.environ, **SINGLE_THREAD, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(HERE.parent)}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _results(proc: subprocess.Popen, P: int, timeout: float) -> list[dict]:
    stdout, stderr = proc.communicate(timeout=timeout + 60)
    results = [json.loads(line.split("RESULT ", 1)[1]) for line in stdout.splitlines() if "RESULT " in line]
    if proc.returncode != 0 or len(results) != P:
        raise RuntimeError(f"{P} processes failed (status {proc.returncode}):\n{stdout[-3000:]}\n{stderr[-3000:]}")
    return sorted(results, key=lambda r: r["process"])


def concurrent_fit_time(copies: int, task: dict, timeout: float) -> float:
    """The one-process fit's time when ``copies`` independent copies of it run at once (no
    collectives): what sharing the machine's cores costs each process, measured on this workload."""
    procs = [_start(1, {**task, "pred": f"{task['pred']}.copy{i}.npy"}, timeout) for i in range(copies)]
    times = [_results(p, 1, timeout)[0]["fit_s"] for p in procs]
    for i in range(copies):
        Path(f"{task['pred']}.copy{i}.npy").unlink(missing_ok=True)
    return max(times)


def run(P: int, task: dict, timeout: float) -> dict:
    """The configuration on P processes: the slowest process's times, process 0's selection."""
    t0 = time.perf_counter()
    results = _results(_start(P, task, timeout), P, timeout)
    wall = time.perf_counter() - t0
    row = {k: max(r[k] for r in results) for k in ("fit_s", "read_s", "stats_s", "peak_rss_mb")}
    row.update({"processes": P, "launch_wall_s": wall, "per_process": results,
                "best_params": results[0]["best_params"], "family": results[0]["family"],
                "test_rmse": results[0]["test_rmse"],
                "every_process_same_selection": all(r["best_params"] == results[0]["best_params"] for r in results)})
    return row


def model_time(one: dict, P: int, k: int, D: int, d: int, contention: float, alpha: float, beta: float) -> dict:
    """The P-process fit time the scaling model predicts from the 1-process run (see the module doc):
    the replicated work and 1/P of the row work, each slowed by ``contention`` (P copies of the
    one-process fit running at once take that factor longer each), plus a ring all-reduce of the
    statistics."""
    row_work = one["read_s"] + one["stats_s"]
    nbytes = 8 * k * D * (D + d)
    allreduce = 2 * (P - 1) * alpha + 2 * (P - 1) / P * nbytes / beta
    return {"processes": P, "contention": contention, "replicated_s": one["fit_s"] - row_work,
            "row_work_s": row_work / P, "allreduce_s": allreduce,
            "fit_s": contention * (one["fit_s"] - row_work + row_work / P) + allreduce}


def main(argv=None) -> int:
    args = PARSER.parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    import numpy as np

    import _bench
    import million

    n = args.n or (2000 if args.quick else 100_000)
    m = 200 if args.quick else 1000
    folder = HERE / ".cache" / ("million_quick" if args.quick else "million")
    sizes = dict(million.QUICK if args.quick else million.FULL)
    paths = million.make_files(folder, sizes)
    if n > sizes["n_train"]:
        raise SystemExit(f"--n {n} exceeds the {sizes['n_train']} training rows of the data set.")
    start = time.perf_counter()
    train = paths["train"]
    rows = []
    for P in [int(p) for p in args.processes.split(",")]:
        task = {"n": n, "n_components": m, "X": train[0], "Y": train[1], "Xt": paths["test"][0],
                "Yt": paths["test"][1], "pred": str(folder / f"pred_processes_{P}.npy")}
        row = run(P, task, args.timeout)
        row["pred_file"] = task["pred"]
        rows.append(row)
        print(f"{P} process(es): fit {row['fit_s']:.1f} s (rows {row['read_s']:.1f} s, statistics pass "
              f"{row['stats_s']:.1f} s), peak {row['peak_rss_mb']:.0f} MB per process, test RMSE "
              f"{np.mean(row['test_rmse']):.4f}, selected {row['best_params']} ({row['family']})", flush=True)
    checks = {}
    one = next((r for r in rows if r["processes"] == 1), None)
    if one is not None:
        ref = np.load(one["pred_file"])
        perf = json.loads((HERE / "results" / "perf_distributed.json").read_text())["model"]
        for r in rows:
            if r["processes"] == 1:
                continue
            diff = float(np.abs(np.load(r["pred_file"]) - ref).max() / np.abs(ref).max())
            together = concurrent_fit_time(r["processes"], {**task, "pred": str(folder / "pred_concurrent")},
                                           args.timeout)
            r["concurrent_one_process_fit_s"] = together
            predicted = model_time(one, r["processes"], 6, m, million.D_OUTPUTS, together / one["fit_s"],
                                   perf["loopback_alpha_s"], perf["loopback_beta_bytes_per_s"])
            r["relative_difference_to_one_process"] = diff
            r["model"] = predicted
            checks[f"{r['processes']} processes equal 1 process (predictions ≤ {TOLERANCE:g} relative, same selection)"] = \
                bool(diff <= TOLERANCE and r["best_params"] == one["best_params"] and r["every_process_same_selection"])
            if not args.quick:  # seconds of compilation dominate the quick run's fits
                checks[f"scaling model predicts the {r['processes']}-process fit within {MODEL_TOLERANCE:.0%}"] = \
                    bool(abs(predicted["fit_s"] - r["fit_s"]) <= MODEL_TOLERANCE * r["fit_s"])
            print(f"{r['processes']} processes vs 1: predictions {diff:.2e} relative apart; model fit "
                  f"{predicted['fit_s']:.1f} s against {r['fit_s']:.1f} s measured", flush=True)
    for r in rows:
        del r["pred_file"]
    result = {"what": "ApproximateKernelRegressor(mesh=global_mesh()) on 1 and 2 CPU processes, float64, "
                      "rows read from memory-mapped .npy files by each process",
              "n": n, "n_components": m, "p": million.P_INPUTS, "d": million.D_OUTPUTS, "n_test": sizes["n_test"],
              "threads_per_process": 1, "rows": rows, "checks": checks, "elapsed_s": time.perf_counter() - start,
              "command": "python benchmarks/million_processes.py" + (" --quick" if args.quick else ""),
              "machine": _bench.machine(), "versions": _bench.versions()}
    path = _bench.write(f"million_processes{'_quick' if args.quick else ''}", result)
    print(f"wrote {path.name}; checks: {checks}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
