"""Where the first fit's wall time goes in a fresh process: imports, tracing, lowering, XLA's
compilation of each program, and the rest (execution and the host's work).

Each estimator with its defaults (``VectorValuedRegressor``, ``MultiClassClassifier``,
``MultiTaskRegressor``; the data of ``compile_times.py``) fits n rows in its own fresh process,
JAX's default configuration (float32, no persistent cache). The child records

* ``import_jax_s`` (``import jax``) and ``import_estimators_s`` (``import jaxmtl`` and the
  estimator: scikit-learn, equinox and the library's modules);
* per XLA program (named by ``jax.monitoring``'s ``fun_name``): its tracing
  (``/jax/core/compile/jaxpr_trace_duration``), lowering to MLIR
  (``jaxpr_to_mlir_module_duration``) and backend compilation (``backend_compile_duration``)
  seconds; their sums over the first fit;
* ``first_fit_s`` (wall, and ``first_fit_cpu_s``: all threads' CPU seconds) and ``warm_fit_s``,
  the same fit again (the fastest of two: execution and host work without compilation);
  ``other_s`` = first fit − tracing − lowering − compilation − warm fit (what the first call of
  each program costs beyond its compilation: dispatch set-up, first-touch memory).

``--xla-flags=FLAGS`` (once per variant) adds variants run with ``XLA_FLAGS`` set to each given
string (e.g. ``--xla_backend_optimization_level=0``), and ``--plain-jit`` a variant with
``JAXMTL_PLAIN_JIT=1`` (the library's programs as plain ``jax.jit`` ones, without the compile options
of ``jaxmtl._jit``), alternated with the default configuration in every repeat, so that their
ratios are measured under the same load.

Usage::

    python benchmarks/first_fit_breakdown.py [--quick] [--n 200] [--repeats 3] [--estimators ...]
        [--xla-flags=--xla_backend_optimization_level=0] [--plain-jit] [--shared] [--name first_fit_breakdown]

``--quick``: ``VectorValuedRegressor`` at n = 100, one repeat (``<name>_quick``). Writes
``benchmarks/results/<name>.json`` (medians over the repeats, every run kept).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from _bench import FIRST_ANSWER_FIT, ROOT, first_answer_header, fresh_process_env, table, write

ESTIMATORS = ("VectorValuedRegressor", "MultiClassClassifier", "MultiTaskRegressor")
PLAIN_JIT = "JAXMTL_PLAIN_JIT=1"  # the variant of --plain-jit
STAGES = {"jaxpr_trace_duration": "trace_s", "jaxpr_to_mlir_module_duration": "lower_s",
          "backend_compile_duration": "compile_s"}

_CHILD = """
import json, sys, time, warnings
t0 = time.perf_counter()
import numpy as np
import jax
t_jax = time.perf_counter()
kind, n = sys.argv[1], int(sys.argv[2])
programs = {}
def on_duration(event, duration, fun_name="?", **kwargs):
    stage = event.rsplit("/", 1)[-1]
    if stage in STAGES:  # tracing names the function, lowering and compiling "jit(function)"
        name = fun_name[4:-1] if fun_name.startswith("jit(") and fun_name.endswith(")") else fun_name
        row = programs.setdefault(name, {v: 0.0 for v in STAGES.values()})
        row[STAGES[stage]] += duration
jax.monitoring.register_event_duration_secs_listener(on_duration)
warnings.simplefilter("ignore")
""" + FIRST_ANSWER_FIT + """
t_imp = time.perf_counter()
X, Y, tasks = data(n)
c, t = time.process_time(), time.perf_counter()
fit(X, Y, tasks)
first, first_cpu = time.perf_counter() - t, time.process_time() - c
snapshot = {k: dict(v) for k, v in programs.items()}
warm = []
for _ in range(2):
    t = time.perf_counter()
    fit(X, Y, tasks)
    warm.append(time.perf_counter() - t)
print(json.dumps({"import_jax_s": t_jax - t0, "import_estimators_s": t_imp - t_jax, "first_fit_s": first,
                  "first_fit_cpu_s": first_cpu, "warm_fit_s": min(warm), "programs": snapshot}))
"""


def _child(kind: str, n: int, flags: str) -> dict:
    """One fresh process: its record (see the module's docstring) and its whole wall time."""
    env = fresh_process_env()
    if flags == PLAIN_JIT:
        env["JAXMTL_PLAIN_JIT"] = "1"
    elif flags:
        env["XLA_FLAGS"] = flags
    code = f"STAGES = {STAGES!r}\n" + _CHILD
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, kind, str(n)], capture_output=True, text=True, cwd=ROOT,
                          env=env, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} at n={n} ({flags or 'default'}) failed:\n{proc.stderr[-3000:]}")
    rec = json.loads(proc.stdout.strip().splitlines()[-1])
    for stage in STAGES.values():
        rec[stage] = sum(p[stage] for p in rec["programs"].values())
    rec["n_programs"] = sum(p["compile_s"] > 0 for p in rec["programs"].values())
    rec["other_s"] = rec["first_fit_s"] - rec["trace_s"] - rec["lower_s"] - rec["compile_s"] - rec["warm_fit_s"]
    rec["process_wall_s"] = wall
    return rec


SUMMARY = ("process_wall_s", "import_jax_s", "import_estimators_s", "first_fit_s", "first_fit_cpu_s", "trace_s",
           "lower_s", "compile_s", "warm_fit_s", "other_s", "n_programs")


def summarise(runs: list[dict]) -> dict:
    """Medians of the summary fields and of each program's stages over ``runs``."""
    out = {k: statistics.median(r[k] for r in runs) for k in SUMMARY}
    names = sorted({p for r in runs for p in r["programs"]})
    out["programs"] = {p: {s: statistics.median(r["programs"].get(p, {}).get(s, 0.0) for r in runs)
                           for s in STAGES.values()} for p in names}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="VectorValuedRegressor at n = 100, one repeat")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--estimators", nargs="+", default=list(ESTIMATORS), choices=ESTIMATORS)
    parser.add_argument("--xla-flags", action="append", default=[], help="XLA_FLAGS strings to compare with the default")
    parser.add_argument("--plain-jit", action="store_true",
                        help="a variant with JAXMTL_PLAIN_JIT=1: the library's programs without their compile options")
    parser.add_argument("--shared", action="store_true", help="the machine ran other work at the same time")
    parser.add_argument("--name", default="first_fit_breakdown")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.repeats, args.estimators, args.name = 100, 1, ["VectorValuedRegressor"], "first_fit_breakdown_quick"
    variants = ["", *args.xla_flags, *([PLAIN_JIT] if args.plain_jit else [])]
    rows = []
    for kind in args.estimators:
        runs: dict[str, list[dict]] = {v: [] for v in variants}
        for _ in range(args.repeats):  # variants alternated: each repeat sees them under the same load
            for v in variants:
                runs[v].append(_child(kind, args.n, v))
        for v in variants:
            rows.append({"estimator": kind, "n": args.n, "xla_flags": v or "default",
                         **summarise(runs[v]), "runs": runs[v]})
            print(table([rows[-1]], ["estimator", "xla_flags", *SUMMARY]), flush=True)
    payload = {**first_answer_header(args.shared), "repeats": args.repeats, "rows": rows}
    print(f"wrote {write(args.name, payload)}")


if __name__ == "__main__":
    main()
