"""What a new process waits for before its first answer: import times, and the first fit with JAX's
persistent compilation cache off, empty and filled (``jaxmtl.enable_compilation_cache``).

**Imports.** Each statement runs in its own fresh process, ``repeats`` times; the median wall time
of the statement alone (measured inside the process, interpreter start excluded) is recorded:
``import jax``, ``import jaxmtl``, the functional core (``from jaxmtl import Gaussian,
regularization_path``), the estimators (``from jaxmtl import VectorValuedRegressor``) and
``import sklearn.base`` (what scikit-learn's tools add: the estimators implement its protocol
without importing it; the grid search's process pays it).

**First fit.** ``VectorValuedRegressor()``, ``MultiClassClassifier()`` and
``MultiTaskRegressor()`` fitted in a fresh process each, import included (the wall time of the
whole process, as the user waits for it), JAX's default configuration (float32), in three states
of the cache: off (JAX's default), enabled on an empty folder, and enabled on the folder the
previous process of the same estimator filled; beside them ``GridSearchCV(KernelRidge(kernel='rbf'),
6 α × 30 γ, cv=5)`` in its own fresh process. Data and fits are those of ``compile_times.py``
(``_bench.FIRST_ANSWER_FIT``). Below n = 5000 each state is measured ``repeats`` times (a fresh
empty folder each time for "empty"); medians recorded. At and above it one process per state,
"cache off" left to ``compile_times.py`` (whose first answers record it), and the grid search's
process taken from ``results/compile_times.json`` (named in ``grid_search_source``): it alone
takes 13 minutes at 5000 rows on the 2-core CPU.

Usage::

    python benchmarks/startup.py [--quick] [--sizes 100 200 500 1000 5000] [--repeats 3] [--shared]

``--quick``: n = 100, ``VectorValuedRegressor`` only, one repeat (``results/startup_quick.json``);
otherwise ``results/startup.json``. ``--shared``: the machine ran other work at the same time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time

from _bench import FIRST_ANSWER_FIT, RESULTS, ROOT, first_answer_header, fresh_process_env, table, write

ESTIMATORS = ("VectorValuedRegressor", "MultiClassClassifier", "MultiTaskRegressor")
STATES = ("cache off", "cache empty", "cache filled")
# At and above this n: one process per state, no "cache off" and the recorded grid search (see above)
LARGE = 5000

IMPORTS = {
    "import jax": "import jax",
    "import jaxmtl": "import jaxmtl",
    "functional core": "from jaxmtl import Gaussian, regularization_path",
    "estimators": "from jaxmtl import VectorValuedRegressor",
    "import sklearn.base": "import sklearn.base",
}

_TIME_IMPORT = """
import time
t = time.perf_counter()
{statement}
print(time.perf_counter() - t)
"""

_FIT = """
import sys, warnings
import numpy as np
kind, n, cache = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if cache != "off":
    import jaxmtl
    jaxmtl.enable_compilation_cache(cache)
warnings.simplefilter("ignore")
""" + FIRST_ANSWER_FIT + """
fit(*data(n))
"""


def _python(args: list[str]) -> tuple[float, str]:
    """(wall seconds of the whole process, its stdout); raises with its stderr when it fails."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT,
                          env=fresh_process_env(), check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{args[:3]} failed:\n{proc.stderr[-3000:]}")
    return wall, proc.stdout


def import_times(repeats: int) -> list[dict]:
    """Median seconds of each statement of IMPORTS, each in its own fresh process."""
    rows = []
    for name, statement in IMPORTS.items():
        times = [float(_python(["-c", _TIME_IMPORT.format(statement=statement)])[1].split()[-1])
                 for _ in range(repeats)]
        rows.append({"what": name, "statement": statement, "median_s": statistics.median(times), "runs_s": times})
    jax_s = rows[0]["median_s"]
    for row in rows:
        row["ratio_to_import_jax"] = row["median_s"] / jax_s
    return rows


def first_fits(n: int, repeats: int, estimators: tuple[str, ...]) -> dict:
    """Median process wall seconds of each estimator's first fit at ``n`` in each cache state, and
    the grid search's (its process run here, or below, at n ≥ LARGE, the one recorded by compile_times.py)."""
    large = n >= LARGE
    states = STATES[1:] if large else STATES
    runs: dict[str, dict[str, list[float]]] = {e: {s: [] for s in states} for e in estimators}
    grid_search: list[float] = []
    for _ in range(1 if large else repeats):
        for est in estimators:
            with tempfile.TemporaryDirectory() as folder:
                for state in states:
                    runs[est][state].append(_python(["-c", _FIT, est, str(n), "off" if state == "cache off" else folder])[0])
        if not large:
            grid_search.append(_python(["-c", _FIT, "sklearn", str(n), "off"])[0])
    source = "measured here"
    if large:
        grid_search, source = _recorded_grid_search(n)
    base = statistics.median(grid_search)
    rows = []
    for est in estimators:
        medians = {s: statistics.median(v) for s, v in runs[est].items()}
        rows.append({"estimator": est, "n": n, **{f"{s} s": v for s, v in medians.items()}, "GridSearchCV s": base,
                     **{f"{s} / GridSearchCV": v / base for s, v in medians.items()}, "runs_s": runs[est]})
    return {"n": n, "GridSearchCV s": base, "grid_search_runs_s": grid_search, "grid_search_source": source,
            "estimators": rows}


def _recorded_grid_search(n: int) -> tuple[list[float], str]:
    """The grid search's whole-process seconds at ``n`` recorded in results/compile_times.json."""
    record = json.loads((RESULTS / "compile_times.json").read_text())
    for row in record["rows"]:
        if row["estimator"].startswith("GridSearchCV") and row["n"] == n:
            return [row["process_wall_s"]], "results/compile_times.json (process_wall_s)"
    raise SystemExit(f"no grid search at n = {n} in results/compile_times.json: run compile_times.py --sizes {n}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 100, one repeat")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 500, 1000, 5000])
    parser.add_argument("--estimators", nargs="+", choices=ESTIMATORS, default=list(ESTIMATORS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shared", action="store_true", help="the machine ran other work at the same time")
    args = parser.parse_args(argv)
    sizes, repeats = ([100], 1) if args.quick else (args.sizes, args.repeats)
    estimators = ESTIMATORS[:1] if args.quick else tuple(args.estimators)
    imports = import_times(max(repeats, 3))
    print(table(imports, ["what", "median_s", "ratio_to_import_jax"]), flush=True)
    fits = []
    for n in sizes:
        fits.append(first_fits(n, repeats, estimators))
        rows = fits[-1]["estimators"]
        print(table(rows, [c for c in rows[0] if c != "runs_s"]), flush=True)
    payload = {
        **first_answer_header(args.shared),
        "repeats": repeats,
        "imports": imports,
        "first_fits": fits,
    }
    path = write("startup_quick" if args.quick else "startup", payload)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
