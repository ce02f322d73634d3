"""CPU and wall time of each exported estimator's no-argument fit at n = 200 and n = 1000 rows.

Every estimator is built with its defaults (``Estimator()``) and fitted once, compilation
included (what a new user waits for), on synthetic data: X ~ N(0, 1) with 2 features, outputs
sin(x₀) + x₁ (two columns for the output-kernel regressor), labels by the sign of x₀ − median,
two tasks alternating, the field (sin x₁, −sin x₀) for ``VectorFieldRegressor``; one more row,
``VectorValuedRegressor, 2 outputs``, fits [sin x₀ + x₁, cos x₁], where the default compares its
two families (with one output they coincide and only the coupled one is fitted).

Each fit runs in its own process. The child reports, around ``fit`` alone, ``cpu_s`` (the
``time.process_time()`` delta: user + system seconds of all the process's threads) and ``wall_s``
(``time.perf_counter()``). **The target is judged on CPU seconds**: a fit is a single process that
never waits on I/O, so on an idle machine one of its threads is always running and its wall time is
at most its CPU time (idle wall ≤ cpu_s), and at least cpu_s / cores. ``cpu_s ≤ 60`` at n = 1000
therefore means the fit takes at most 60 s on an idle machine of this kind, whatever other jobs
inflated the wall time of the measurement; contention itself only adds CPU seconds (shared caches and
memory bandwidth, waiting pool threads), so on a shared machine ``cpu_s`` errs high. ``wall_s`` is kept for the
record and reads high under load.

A fit is stopped past ``--limit`` wall seconds or ``--cpu-limit`` CPU seconds (``RLIMIT_CPU`` of
the child); it is then recorded with ``"exceeded": true``, ``cpu_s`` null and ``cpu_at_stop_s``
the CPU seconds the child had used (a lower bound, imports included). ``load_1min`` is the
1-minute load average when the fit started.

Usage::

    python benchmarks/default_fit_times.py [--sizes 200 1000] [--limit 900] [--cpu-limit 600]
                                           [--only NAME ...] [--shared]

``--shared`` records that the machine ran other work at the same time. Writes
``benchmarks/results/default_fit_times.json``; with ``--only`` the named estimators' entries
replace theirs in an existing file (the others, and other sizes, are kept), so estimators and sizes
can be run one at a time.

**Outputs table** (``--outputs-table``): ``VectorValuedRegressor()``'s first and warm fit against
the number of outputs d and rows n, beside ``GridSearchCV(KernelRidge)`` fitted per output::

    python benchmarks/default_fit_times.py --outputs-table [--outputs 1 2 7 20] [--rows 200 1000 3000]
                                           [--cpu-limit 1800] [--threads 1] [--quick] [--shared]

Data: X ~ N(0, 1) with 2 features; output j = sin(f_j x₀ + j) + ½ cos(x₁ / 2 + j) + 0.1 noise
with f_j = 0.5 + 0.375 (j mod 5), the same X and functions for every d. Each (n, d) of
the default runs in its own process: the first ``fit`` (compilation included), then a warm ``fit``
on the same data; ``cpu_s`` and ``wall_s`` around each, ``programs`` and ``compile_s`` (XLA
compilations and their summed durations, ``jax.monitoring``), float32 (JAX's default).

The baseline's grid: ``alpha`` ∈ 10^{−6…1} (6 values) × ``gamma`` ∈ 10^{−3…2} (30 values), 5-fold,
180 points per output. That is the number of (width, filter parameter) points the default's
independent family — the per-output KernelRidge it contains and must beat — scores per output
before its width refinement: the 6 default widths (median × 4ᵏ, k = −2 … 3) × its 30 Tikhonov λ.
(Its refinement adds 2 widths × 30 λ per output, scored on the 400-row subsample above 400 rows,
and 3 widths × 30 λ on all rows; the coupled family scores every width × 11 ω × its whole step
path, which an eigendecomposition gives at once, so a count of its points says nothing of its
cost.) GridSearchCV(KernelRidge) is fitted one output at a time, float64, in its own process
(first, then warm). Its arithmetic does not depend on the output's values, so it is measured on
one output (``--baseline-outputs``) and scaled: d outputs cost first₁ + (d − 1)·warm₁ (first) and
d·warm₁ (warm). From ``--baseline-full-max`` rows on (default 5000) it fits 2 of the 180 points
(one α, two γ: 5·2 + 1 fits) and scales by (5·180 + 1)/(5·2 + 1); rows marked
``baseline_scaled_points``.

Every child runs single-threaded (``--threads 1``: OpenBLAS, OpenMP and XLA's Eigen pool pinned
to one thread, as ``_bench.set_threads``): on a shared 2-core machine XLA's multi-threaded pool
spins while other jobs hold the cores and inflated one warm field fit from 0.7 to 37 CPU s; one
thread keeps CPU seconds a property of the fit. A child past ``--cpu-limit`` CPU seconds is
stopped and recorded as exceeded with the CPU seconds it had used. n = 10 000 is left out of the
default rows (``--rows ... 10000`` adds it): the default's eigendecompositions of 8 000–10 000 rows
(about 20 for the coupled family, 5 per distinct width and one per output for the independent
one) and the baseline's 901 Cholesky fits of 8 000 rows per output each take hours on one core,
past the half hour the table is meant to take. ``--quick``: n = 200, d = 1 and
2, one baseline output (``results/default_fit_times_outputs_quick.json``); otherwise
``results/default_fit_times_outputs.json``. A run replaces the rows of the (n, d) it measures and keeps
the file's other rows, so sizes can be added one at a time (each row records its own load).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys

from _bench import COMPILE_COUNTER, RESULTS, ROOT, table, versions, write

_ONE_FIT = """
import importlib.util, json, sys, time, warnings
import numpy as np
spec = importlib.util.spec_from_file_location("rr", {report!r})
rr = sys.modules["rr"] = importlib.util.module_from_spec(spec); spec.loader.exec_module(rr)
name, make, fit_args, _ = next(c for c in rr.estimator_cases() + {extra} if c[0] == {name!r})
X = np.random.default_rng(0).normal(size=({n}, 2))
args = fit_args(X)
warnings.simplefilter("ignore")
c, t = time.process_time(), time.perf_counter()
type(make())().fit(*args)
print(json.dumps({{"cpu_s": time.process_time() - c, "wall_s": time.perf_counter() - t}}))
"""


# (name, make, fit_args, predict) beside the reliability report's twelve; evaluated in the child
EXTRA = ('[("VectorValuedRegressor, 2 outputs", __import__("jaxmtl").VectorValuedRegressor, '
         'lambda X: (X, np.c_[rr._targets(X)[0], np.cos(X[:, 1])]), None)]')
EXTRA_NAMES = ["VectorValuedRegressor, 2 outputs"]


_OUTPUTS_CHILD = """
import json, sys, time, warnings
import numpy as np
import jax
kind, n, d, fit_outputs, points = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
""" + COMPILE_COUNTER + """
rng = np.random.default_rng(0)
X = rng.normal(size=(n, 2))
j = np.arange(d)
Y = np.sin((0.5 + 0.375 * (j % 5)) * X[:, :1] + j) + 0.5 * np.cos(X[:, 1:] / 2 + j) + 0.1 * rng.normal(size=(n, d))
if kind == "jaxmtl":
    from jaxmtl import VectorValuedRegressor
    fit = lambda: VectorValuedRegressor().fit(X, Y)
else:
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV
    grid = {"alpha": np.logspace(-6, 1, 6).tolist(), "gamma": np.logspace(-3, 2, 30).tolist()}
    if points != "all":
        grid = {"alpha": grid["alpha"][3:4], "gamma": grid["gamma"][10:10 + int(points)]}
    def fit():
        for k in range(fit_outputs):
            GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=5).fit(X, Y[:, k])
warnings.simplefilter("ignore")
for stage in ("first", "warm"):
    before = dict(counts)
    c, t = time.process_time(), time.perf_counter()
    fit()
    print(json.dumps({"stage": stage, "cpu_s": time.process_time() - c, "wall_s": time.perf_counter() - t,
                      "programs": counts["programs"] - before["programs"],
                      "compile_s": counts["compile_s"] - before["compile_s"]}), flush=True)
"""

GRID_POINTS = 180  # the baseline's grid per output: 6 alpha x 30 gamma (see the module docstring)
BASELINE_SUB_POINTS = 2  # grid points the baseline fits from --baseline-full-max rows on


def _thread_env(threads: int) -> dict:
    """The children's environment: JAX's defaults (no JAX_ variable), BLAS and XLA pinned to
    ``threads`` threads (0: the libraries' defaults)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    if threads > 0:
        env.update({var: str(threads) for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")})
        if threads == 1:
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false "
                                "intra_op_parallelism_threads=1").strip()
    return env


def output_fit_times(kind: str, n: int, d: int, fit_outputs: int, points: str, cpu_limit: float,
                     env: dict) -> dict:
    """``{first, warm}`` records (cpu_s, wall_s, programs, compile_s) of one child fitting ``kind``
    ('jaxmtl': ``VectorValuedRegressor()`` on d outputs; 'sklearn': GridSearchCV(KernelRidge) on
    the first ``fit_outputs`` of them, on ``points`` of the grid or 'all') twice; past
    ``cpu_limit`` CPU seconds ``{"exceeded": true, "cpu_at_stop_s": …}`` with the stages done."""
    soft = int(cpu_limit)

    def cap_cpu():  # SIGXCPU at the soft limit, SIGKILL a few seconds later
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 5))

    load = os.getloadavg()[0]
    before = _children_cpu()
    proc = subprocess.run([sys.executable, "-c", _OUTPUTS_CHILD, kind, str(n), str(d), str(fit_outputs), points],
                          capture_output=True, text=True, cwd=str(ROOT), env=env, preexec_fn=cap_cpu, check=False)
    used = _children_cpu() - before
    out = {"load_1min": round(load, 1)}
    for line in proc.stdout.strip().splitlines():
        rec = json.loads(line)
        stage = rec.pop("stage")
        out[stage] = {k: round(v, 2) if isinstance(v, float) else v for k, v in rec.items()}
    if proc.returncode == 0:
        return {**out, "exceeded": False}
    if proc.returncode not in (-24, -9):  # not SIGXCPU / SIGKILL: a real failure
        raise RuntimeError(f"{kind} n={n} d={d} failed:\n{proc.stderr[-2000:]}")
    return {**out, "exceeded": True, "cpu_at_stop_s": round(used, 1)}


def _scaled_baseline(rec: dict, d: int, fit_outputs: int, points: str) -> dict:
    """The per-output baseline's first and warm CPU / wall seconds for d outputs from a child
    that fitted ``fit_outputs`` outputs on ``points`` grid points (see the module docstring)."""
    grid = 1.0 if points == "all" else (5 * GRID_POINTS + 1) / (5 * int(points) + 1)
    per_first = {k: rec["first"][k] * grid / fit_outputs for k in ("cpu_s", "wall_s")}
    per_warm = {k: rec["warm"][k] * grid / fit_outputs for k in ("cpu_s", "wall_s")}
    return {"first": {k: round(per_first[k] + (d - 1) * per_warm[k], 2) for k in per_first},
            "warm": {k: round(d * per_warm[k], 2) for k in per_warm}}


def outputs_table(outputs: list[int], rows: list[int], cpu_limit: float, threads: int, baseline_outputs: int,
                  baseline_full_max: int) -> list[dict]:
    """One record per (n, d): the default's first and warm fit and the scaled per-output baseline."""
    env = _thread_env(threads)
    records = []
    for n in rows:
        points = "all" if n < baseline_full_max else str(BASELINE_SUB_POINTS)
        base = output_fit_times("sklearn", n, baseline_outputs, baseline_outputs, points, cpu_limit, env)
        print(f"GridSearchCV(KernelRidge) n={n}, {baseline_outputs} output(s), {points} point(s): "
              f"{base.get('first')} / {base.get('warm')}", flush=True)
        for d in outputs:
            ours = output_fit_times("jaxmtl", n, d, d, "all", cpu_limit, env)
            rec = {"n": n, "d": d, "default": ours, "baseline_measured": base,
                   "baseline_outputs_measured": baseline_outputs,
                   "baseline_scaled_points": None if points == "all" else int(points)}
            if not base.get("exceeded"):
                rec["baseline"] = _scaled_baseline(base, d, baseline_outputs, points)
                for stage in ("first", "warm"):
                    mine = ours.get(stage)
                    rec[f"{stage}_ratio"] = (round(mine["cpu_s"] / rec["baseline"][stage]["cpu_s"], 3)
                                             if mine else None)
            shown = {s: ours[s]["cpu_s"] for s in ("first", "warm") if s in ours}
            print(f"VectorValuedRegressor() n={n} d={d}: {shown} CPU s"
                  + (f" (stopped after {ours['cpu_at_stop_s']} CPU s)" if ours["exceeded"] else "")
                  + f"; baseline {rec.get('baseline')}", flush=True)
            records.append(rec)
    return records


def _outputs_main(args) -> int:
    outputs, rows = ([1, 2], [200]) if args.quick else (args.outputs, args.rows)
    records = outputs_table(outputs, rows, args.cpu_limit, args.threads, args.baseline_outputs,
                            args.baseline_full_max)
    name = "default_fit_times_outputs_quick" if args.quick else "default_fit_times_outputs"
    if (RESULTS / f"{name}.json").exists():  # rows of other (n, d) from earlier runs are kept
        measured = {(r["n"], r["d"]) for r in records}
        kept = [r for r in json.loads((RESULTS / f"{name}.json").read_text())["rows"] if (r["n"], r["d"]) not in measured]
        records = sorted(kept + records, key=lambda r: (r["n"], r["d"]))
    below = [r for r in records if r.get("first_ratio") is not None and r.get("warm_ratio") is not None]
    payload = {"what": "VectorValuedRegressor() first and warm fit (compilation in the first) against outputs d "
                       "and rows n, beside GridSearchCV(KernelRidge) per output (180 points, 5-fold)",
               "dtype": "float32 (JAX default) for VectorValuedRegressor; float64 for scikit-learn",
               "threads": args.threads, "cpu_limit_s": args.cpu_limit, "versions": versions(),
               "machine_shared": bool(args.shared), "quick": bool(args.quick),
               "target": "first and warm cpu_s below the per-output baseline's at every (n, d)",
               "met": bool(below) and len(below) == len(records)
                      and all(r["first_ratio"] < 1 and r["warm_ratio"] < 1 for r in below),
               "rows": records}
    path = write(name, payload)
    flat = [{"n": r["n"], "d": r["d"],
             **{f"{s} cpu_s": (r["default"][s]["cpu_s"] if s in r["default"] else f"> {r['default'].get('cpu_at_stop_s')}")
                for s in ("first", "warm")},
             **{f"baseline {s} cpu_s": r.get("baseline", {}).get(s, {}).get("cpu_s") for s in ("first", "warm")},
             "first_ratio": r.get("first_ratio"), "warm_ratio": r.get("warm_ratio")} for r in records]
    print(table(flat, list(flat[0]) if flat else []))
    print(f"written {path}")
    return 0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fit_times(name: str, n: int, limit: float, cpu_limit: float) -> dict:
    """``{cpu_s, wall_s, exceeded, cpu_at_stop_s, load_1min}`` of ``name()``'s first fit on n rows."""
    code = _ONE_FIT.format(report=str(ROOT / "scripts" / "reliability_report.py"), name=name, n=n, extra=EXTRA)
    soft = int(cpu_limit)

    def cap_cpu():  # SIGXCPU at the soft limit, SIGKILL a few seconds later
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 5))

    load = os.getloadavg()[0]
    before = _children_cpu()
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=limit,
                              cwd=str(ROOT), preexec_fn=cap_cpu)
    except subprocess.TimeoutExpired:
        proc = None
    used = _children_cpu() - before
    if proc is not None and proc.returncode == 0:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        return {"cpu_s": round(out["cpu_s"], 2), "wall_s": round(out["wall_s"], 2), "exceeded": False,
                "cpu_at_stop_s": None, "load_1min": round(load, 1)}
    if proc is not None and proc.returncode not in (-24, -9):  # not SIGXCPU / SIGKILL: a real failure
        raise RuntimeError(f"{name} n={n} failed:\n{proc.stderr[-2000:]}")
    return {"cpu_s": None, "wall_s": None, "exceeded": True, "cpu_at_stop_s": round(used, 1),
            "load_1min": round(load, 1)}


def _earlier_rows() -> dict:
    path = RESULTS / "default_fit_times.json"
    if not path.exists():
        return {}
    return {r["estimator"]: r for r in json.loads(path.read_text()).get("rows", [])}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--limit", type=float, default=900.0, help="wall seconds per fit")
    parser.add_argument("--cpu-limit", type=float, default=None,
                        help="CPU seconds per fit (default 600; 1800 per child with --outputs-table)")
    parser.add_argument("--only", nargs="*", default=None, help="estimator names (default: all twelve and the two-output row)")
    parser.add_argument("--shared", action="store_true", help="the machine ran other work meanwhile")
    parser.add_argument("--outputs-table", action="store_true",
                        help="VectorValuedRegressor() against outputs and rows beside GridSearchCV(KernelRidge) per output")
    parser.add_argument("--outputs", type=int, nargs="+", default=[1, 2, 7, 20], help="outputs d (--outputs-table)")
    parser.add_argument("--rows", type=int, nargs="+", default=[200, 1000, 3000], help="rows n (--outputs-table)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS / XLA threads of each child (--outputs-table)")
    parser.add_argument("--baseline-outputs", type=int, default=1, help="outputs the baseline is measured on")
    parser.add_argument("--baseline-full-max", type=int, default=5000,
                        help="from this many rows on the baseline fits 2 grid points and is scaled")
    parser.add_argument("--quick", action="store_true", help="--outputs-table at n = 200, d = 1 and 2")
    args = parser.parse_args(argv)
    if args.outputs_table or args.quick:
        args.cpu_limit = 1800.0 if args.cpu_limit is None else args.cpu_limit
        return _outputs_main(args)
    args.cpu_limit = 600.0 if args.cpu_limit is None else args.cpu_limit
    spec = importlib.util.spec_from_file_location("rr", ROOT / "scripts" / "reliability_report.py")
    rr = sys.modules["rr"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rr)
    order = [c[0] for c in rr.estimator_cases()] + EXTRA_NAMES
    names = [name for name in order if args.only is None or name in args.only]
    measured = {}
    for name in names:
        for n in args.sizes:
            res = measured.setdefault(name, {})[f"n={n}"] = fit_times(name, n, args.limit, args.cpu_limit)
            shown = (f"cpu {res['cpu_s']:.1f} s, wall {res['wall_s']:.1f} s" if not res["exceeded"]
                     else f"stopped after {res['cpu_at_stop_s']:.0f} CPU s")
            print(f"{name} n={n}: {shown} (load {res['load_1min']})", flush=True)
    rows = _earlier_rows() if args.only is not None else {}  # read now: another run may have written
    for name, sizes in measured.items():
        rows.setdefault(name, {"estimator": name}).update(sizes)
    ordered = [rows[name] for name in order if name in rows]
    payload = {"what": "first fit of Estimator() (defaults, compilation included), synthetic data, 2 features",
               "dtype": "float32 (JAX default)", "limit_s": args.limit, "cpu_limit_s": args.cpu_limit,
               "target": "cpu_s <= 60 at n = 1000 (idle wall <= cpu_s)",
               "machine_shared": bool(args.shared), "rows": ordered}
    path = write("default_fit_times", payload)
    flat = [{"estimator": r["estimator"], **{f"{k} cpu_s": (v["cpu_s"] if not v["exceeded"]
                                                             else f"> {v['cpu_at_stop_s']}")
                                             for k, v in r.items() if k.startswith("n=")}} for r in ordered]
    print(table(flat, ["estimator"] + [f"n={n} cpu_s" for n in args.sizes]))
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
