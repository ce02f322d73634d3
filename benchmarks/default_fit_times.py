"""Wall time of each exported estimator's no-argument fit at n = 200 and n = 1000 rows.

Every estimator is built with its defaults (``Estimator()``) and fitted once, compilation
included (what a new user waits for), on synthetic data: X ~ N(0, 1) with 2 features, outputs
sin(x₀) + x₁ (two columns for the output-kernel regressor), labels by the sign of x₀ − median,
two tasks alternating, the field (sin x₁, −sin x₀) for ``VectorFieldRegressor``. Each fit runs in
its own process under a wall-clock limit (``--limit``, default 600 s); a fit that exceeds it is
recorded as ``null`` with ``"exceeded": true``. The target is 60 s at n = 1000.

Usage::

    python benchmarks/default_fit_times.py [--sizes 200 1000] [--limit 600] [--shared]

``--shared`` records that the machine ran other work at the same time (timings then read high).
Writes ``benchmarks/results/default_fit_times.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time

from _bench import ROOT, table, write

_ONE_FIT = """
import importlib.util, json, sys, time, warnings
import numpy as np
spec = importlib.util.spec_from_file_location("rr", {report!r})
rr = sys.modules["rr"] = importlib.util.module_from_spec(spec); spec.loader.exec_module(rr)
name, make, fit_args, _ = next(c for c in rr.estimator_cases() if c[0] == {name!r})
X = np.random.default_rng(0).normal(size=({n}, 2))
args = fit_args(X)
warnings.simplefilter("ignore")
t = time.perf_counter()
type(make())().fit(*args)
print(json.dumps(time.perf_counter() - t))
"""


def fit_seconds(name: str, n: int, limit: float) -> float | None:
    """Seconds of ``name()``'s first fit on n rows in a fresh process, or None past ``limit``."""
    code = _ONE_FIT.format(report=str(ROOT / "scripts" / "reliability_report.py"), name=name, n=n)
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=limit,
                             cwd=str(ROOT), check=True)
    except subprocess.TimeoutExpired:
        return None
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--limit", type=float, default=600.0)
    parser.add_argument("--only", nargs="*", default=None, help="estimator names (default: all twelve)")
    parser.add_argument("--shared", action="store_true", help="the machine ran other work meanwhile")
    args = parser.parse_args(argv)
    spec = importlib.util.spec_from_file_location("rr", ROOT / "scripts" / "reliability_report.py")
    rr = sys.modules["rr"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rr)
    names = [c[0] for c in rr.estimator_cases() if args.only is None or c[0] in args.only]
    rows = []
    for name in names:
        row = {"estimator": name}
        for n in args.sizes:
            t0 = time.perf_counter()
            seconds = fit_seconds(name, n, args.limit)
            row[f"n={n} (s)"] = None if seconds is None else round(seconds, 2)
            row[f"n={n} exceeded"] = seconds is None
            print(f"{name} n={n}: {'> %.0f' % args.limit if seconds is None else '%.2f' % seconds} s "
                  f"(process {time.perf_counter() - t0:.1f} s)", flush=True)
        rows.append(row)
    payload = {"what": "first fit of Estimator() (defaults, compilation included), synthetic data, 2 features",
               "dtype": "float32 (JAX default)", "limit_s": args.limit, "target_s_at_1000": 60.0,
               "machine_shared": bool(args.shared), "rows": rows}
    path = write("default_fit_times", payload)
    print(table(rows, ["estimator"] + [f"n={n} (s)" for n in args.sizes]))
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
