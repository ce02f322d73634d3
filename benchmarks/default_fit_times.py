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
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys

from _bench import RESULTS, ROOT, table, write

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
    parser.add_argument("--cpu-limit", type=float, default=600.0, help="CPU seconds per fit")
    parser.add_argument("--only", nargs="*", default=None, help="estimator names (default: all twelve and the two-output row)")
    parser.add_argument("--shared", action="store_true", help="the machine ran other work meanwhile")
    args = parser.parse_args(argv)
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
