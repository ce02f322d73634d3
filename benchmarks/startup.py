"""What a new process waits for before its first answer: import times, and the first fit with JAX's
persistent compilation cache off, empty and filled (``jaxmtl.enable_compilation_cache``).

**Imports.** Each statement runs in its own fresh process, ``repeats`` times; the median wall time
of the statement alone (measured inside the process, interpreter start excluded) is recorded:
``import jax``, ``import jaxmtl``, the functional core (``from jaxmtl import Gaussian,
regularization_path``), the estimators (``from jaxmtl import VectorValuedRegressor``) and
``import sklearn.base`` (what scikit-learn's tools add: the estimators implement its protocol
without importing it; the grid search's process pays it).

**First fit.** ``VectorValuedRegressor().fit`` in a fresh process, import included (the wall time of
the whole process, as the user waits for it), JAX's default configuration (float32), in three
states of the cache: off (JAX's default), enabled on an empty folder, and enabled on the folder
the previous process filled; beside it ``GridSearchCV(KernelRidge(kernel='rbf'), 6 α × 30 γ,
cv=5)`` in its own fresh process. The data are those of ``compile_times.py``. Each state is
measured ``repeats`` times (a fresh empty folder each time for "empty"); medians recorded.

Usage::

    python benchmarks/startup.py [--quick] [--sizes 100 200 1000] [--repeats 3] [--shared]

``--quick``: n = 100, one repeat (``results/startup_quick.json``); otherwise
``results/startup.json``. ``--shared``: the machine ran other work at the same time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time

from _bench import ROOT, first_answer_header, fresh_process_env, table, write

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
if kind == "jaxmtl":
    import jaxmtl
    if cache != "off":
        jaxmtl.enable_compilation_cache(cache)
    model = jaxmtl.VectorValuedRegressor()
else:
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV
    grid = {"alpha": np.logspace(-6, 1, 6).tolist(), "gamma": np.logspace(-3, 2, 30).tolist()}
    model = GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=5)
warnings.simplefilter("ignore")
rng = np.random.default_rng(n)  # the data of compile_times.py
X = rng.normal(size=(n, 2))
Y = np.c_[np.sin(X[:, 0]) + X[:, 1], np.cos(X[:, 1])] + 0.1 * rng.normal(size=(n, 2))
model.fit(X, Y)
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


def first_fits(n: int, repeats: int) -> dict:
    """Median process wall seconds of the first fit at ``n`` for each cache state, and scikit-learn's."""
    runs: dict[str, list[float]] = {"cache off": [], "cache empty": [], "cache filled": [], "GridSearchCV": []}
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            runs["cache off"].append(_python(["-c", _FIT, "jaxmtl", str(n), "off"])[0])
            runs["cache empty"].append(_python(["-c", _FIT, "jaxmtl", str(n), folder])[0])
            runs["cache filled"].append(_python(["-c", _FIT, "jaxmtl", str(n), folder])[0])
        runs["GridSearchCV"].append(_python(["-c", _FIT, "sklearn", str(n), "off"])[0])
    medians = {k: statistics.median(v) for k, v in runs.items()}
    return {"n": n, **{f"{k} s": v for k, v in medians.items()},
            **{f"{k} / GridSearchCV": medians[k] / medians["GridSearchCV"] for k in runs if k != "GridSearchCV"},
            "runs_s": runs}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 100, one repeat")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shared", action="store_true", help="the machine ran other work at the same time")
    args = parser.parse_args(argv)
    sizes, repeats = ([100], 1) if args.quick else (args.sizes, args.repeats)
    imports = import_times(max(repeats, 3))
    print(table(imports, ["what", "median_s", "ratio_to_import_jax"]), flush=True)
    fits = []
    for n in sizes:
        fits.append(first_fits(n, repeats))
        print(table([fits[-1]], [c for c in fits[-1] if c != "runs_s"]), flush=True)
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
