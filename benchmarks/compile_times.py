"""First, warm and same-bucket fits of the default estimators and the XLA programs each compiles,
beside scikit-learn's ``GridSearchCV(KernelRidge)`` over a 180-point grid.

Every row runs in its own process, JAX's default configuration (float32, x64 off, no persistent
compilation cache), import included in ``process_wall_s``: ``VectorValuedRegressor()``,
``MultiClassClassifier()`` and ``MultiTaskRegressor()`` with their defaults fit n rows (the first
fit: compilation included, what a new process waits for), the same data again (warm), then
another n of the same size bucket (``jaxmtl.models._buckets``: a fit compiles for the bucket of
n, so this one should compile nothing). Around each fit the child records ``cpu_s``
(``time.process_time()``: all threads' user + system seconds), ``wall_s``, ``programs`` (XLA
compilations: ``jax.monitoring``'s backend-compile events), ``compile_s`` (their summed
durations) and ``since_start_s`` (seconds since the child began, before its imports). The first
answer is the first fit's ``since_start_s`` — imports, data and the first fit, what a new process
waits for — compared with the grid search's own (``first_answer_vs_grid_search``);
``process_wall_s`` also counts the later fits and the interpreter's start. One more process per
estimator runs k-fold cross-validation as ``cross_val_score`` does (fit on the training rows,
predict the held-out ones) with cv = 3, 5 and 10 in turn: the programs of each first fold and of
the later folds (0 when folds reuse the first fold's programs). One more runs scikit-learn's
``GridSearchCV`` (cv = 3) over parameters of the estimator that change no array shape
(``SEARCH_GRIDS``: normalize_y or fit_intercept, and random_state): the programs of its first fit,
of the later fold fits and of the refit on all rows (another size bucket: its own programs)
(``grid_search_over_parameters``). A child's stderr is searched for XLA's slow-constant-folding
warning (``constant_folding_warnings``).

The data: X ~ N(0, 1) with 2 features, outputs [sin x₀ + x₁, cos x₁] plus noise 0.1; the
classifier's labels (x₀ > 0) + (x₁ > 0.5) (3 classes); the multi-task outputs the first output
plus its task's offset, 4 tasks dealt in turn. The scikit-learn baseline is
``GridSearchCV(KernelRidge(kernel='rbf'), 6 α × 30 γ, cv=5)`` (float64) on the vector-valued
data, timed the same way in its own process.

Usage::

    python benchmarks/compile_times.py [--quick] [--sizes 100 200 500 1000 5000] [--repeats 3] [--shared]
    python benchmarks/compile_times.py --sizes 100 200 500 1000 --merge
    python benchmarks/compile_times.py --rerun MultiTaskRegressor:5000
    python benchmarks/compile_times.py --others

``--others``: the other estimators with their defaults (classifiers on the 3-class labels, the
mixed effect on the tasks), each in a fresh process, first fit at 200 rows and a fit at another n
of its bucket: their programs and wall times (``results/compile_times_others.json``).
Below n = 5000 each cell — the grid search's and each estimator's — runs ``--repeats`` (3) fresh
processes and keeps the one of median first answer (every run's first answer is recorded in
``first_answer_runs_s``). ``--merge`` keeps the recorded rows at the sizes not measured (their run
named in ``merged_runs``), and the cross-validation and grid searches recorded on another number of
rows. ``--quick``: n = 100 only, one process per cell, the grid search over parameters of
``VectorValuedRegressor`` only (``results/compile_times_quick.json``).
``--rerun ESTIMATOR:N`` measures that row again and replaces it in ``results/compile_times.json``
(its ratio against the recorded grid search at N). ``--shared`` records that the machine ran other
work at the same time. Writes ``benchmarks/results/compile_times.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from _bench import (COMPILE_COUNTER, CONSTANT_FOLDING, FIRST_ANSWER_FIT, ROOT, first_answer_header, fresh_process_env, table,
                    write)

ESTIMATORS = ("VectorValuedRegressor", "MultiClassClassifier", "MultiTaskRegressor")
OTHERS = ("KernelMachine", "KernelMachineClassifier", "RLS2Regressor", "RLS2Classifier", "MixedEffectRegressor",
          "OutputKernelRegressor", "OutputKernelClassifier", "VectorFieldRegressor", "ApproximateKernelRegressor")
CV_FOLDS = (3, 5, 10)
# Below this n every cell runs --repeats fresh processes and keeps the median first answer: a
# process's first answer varies by ±15 % run to run on the idle 2-core machine (the grid search at
# 500 rows took 5.8 to 7.1 s in three runs). At and above it one process: the grid search alone
# takes 11 minutes at 5000 rows, where the ratios are 0.1–0.3.
REPEAT_BELOW = 5000

# GridSearchCV over parameters of each estimator that change no array shape (job "search")
SEARCH_GRIDS = {"VectorValuedRegressor": {"normalize_y": [True, False], "random_state": [0, 1]},
                "MultiClassClassifier": {"fit_intercept": [True, False], "random_state": [0, 1]},
                "MultiTaskRegressor": {"fit_intercept": [True, False], "random_state": [0, 1]}}
SEARCH_CV = 3

_SEARCH = """
elif job == "search":  # GridSearchCV over parameters that change no array shape: the programs of each fit
    from sklearn.model_selection import GridSearchCV
    n, cv, grid = sizes[0], sizes[1], json.loads(sys.argv[-1])
    X, Y, tasks = data(n)
    cls = getattr(jaxmtl, kind)
    plain_fit, fits = cls.fit, []
    def counted_fit(self, X, *args, **kwargs):
        before = counts["programs"]
        out = plain_fit(self, X, *args, **kwargs)
        fits.append({"n": len(X), "programs": counts["programs"] - before})
        return out
    cls.fit = counted_fit
    y = ((X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5) if kind.endswith("Classifier") else
         Y[:, 0] + tasks if kind == "MultiTaskRegressor" else Y)
    extra = {"tasks": tasks} if kind == "MultiTaskRegressor" else {}
    before = counts["programs"]
    GridSearchCV(cls(), grid, cv=cv).fit(X, y, **extra)
    out = {"n": n, "cv": cv, "grid": grid, "fits": fits, "first_fit_programs": fits[0]["programs"],
           "later_fold_fits_programs": sum(f["programs"] for f in fits[1:-1]), "refit_n": fits[-1]["n"],
           "refit_programs": fits[-1]["programs"], "search_programs": counts["programs"] - before}
"""

_CHILD = """
import json, sys, time, warnings
START = time.perf_counter()  # before numpy, JAX and the estimators (or scikit-learn) are imported
import numpy as np
import jax
kind, job, sizes = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3:] if s.isdigit()]
""" + COMPILE_COUNTER + """
warnings.simplefilter("ignore")
""" + FIRST_ANSWER_FIT + """
def timed(f, *args):
    before = dict(counts)
    c, t = time.process_time(), time.perf_counter()
    out = f(*args)
    rec = {"cpu_s": time.process_time() - c, "wall_s": time.perf_counter() - t,
           "programs": counts["programs"] - before["programs"], "compile_s": counts["compile_s"] - before["compile_s"],
           "since_start_s": time.perf_counter() - START}
    return out, rec

out = []
if job == "fits":
    for n in sizes:
        X, Y, tasks = data(n)
        _, rec = timed(fit, X, Y, tasks)
        out.append({"n": n, **rec})
elif job == "cv":  # cross-validation as cross_val_score runs it, cv = each of sizes[1:], on sizes[0] rows
    from sklearn.model_selection import KFold
    n = sizes[0]
    X, Y, tasks = data(n)
    for cv in sizes[1:]:
        folds = []
        for train, test in KFold(cv, shuffle=True, random_state=0).split(X):
            model, rec = timed(fit, X[train], Y[train], tasks[train])
            args = (X[test], tasks[test]) if kind == "MultiTaskRegressor" else (X[test],)
            _, pred = timed(model.predict, *args)
            folds.append({"n_train": len(train), "fit": rec, "predict_programs": pred["programs"]})
        out.append({"cv": cv, "n": n, "first_fold_programs": folds[0]["fit"]["programs"],
                    "later_folds_programs": sum(f["fit"]["programs"] for f in folds[1:]),
                    "later_predict_programs": sum(f["predict_programs"] for f in folds[1:]),
                    "wall_s": sum(f["fit"]["wall_s"] for f in folds), "folds": folds})
""" + _SEARCH + """
print(json.dumps(out))
"""




def _run(kind: str, job: str, sizes: list[int], *extra: str) -> tuple[list[dict], float, int]:
    """The records of one child process, its wall time (import included) and the slow-constant-
    folding warnings on its stderr."""
    env = fresh_process_env()
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, kind, job, *map(str, sizes), *extra], capture_output=True,
                          text=True, cwd=ROOT, env=env, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} {job} at {sizes} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall, proc.stderr.lower().count(CONSTANT_FOLDING)


def same_bucket(n: int) -> int:
    """Another size of n's bucket (n itself where the bucket holds one size): of its fine bucket, the
    matrix-free route's, which lies inside its bucket of every other route."""
    sys.path.insert(0, str(ROOT))
    from jaxmtl.models._buckets import FINE_BUCKET_BITS, size_bucket

    fine = size_bucket(n, FINE_BUCKET_BITS)
    others = [m for m in range(max(n - 8, 2), fine + 1) if m != n and size_bucket(m, FINE_BUCKET_BITS) == fine]
    return others[0] if others else n


def _median_run(kind: str, job: str, sizes: list[int], repeats: int) -> tuple[list[dict], float, int, list[float]]:
    """``repeats`` fresh processes of one cell: the records and wall time of the one of median first
    answer (its first record's ``since_start_s``), the warnings of all, and every run's first answer."""
    runs = [_run(kind, job, sizes) for _ in range(repeats)]
    answers = [records[0]["since_start_s"] for records, _, _ in runs]
    median = sorted(range(repeats), key=answers.__getitem__)[repeats // 2]
    return runs[median][0], runs[median][1], sum(warned for _, _, warned in runs), answers


def _estimator_row(name: str, n: int, base: dict, repeats: int = 1) -> dict:
    """One estimator's first, warm and same-bucket fits at n in a fresh process (the median of
    ``repeats`` processes by first answer), beside ``base`` (the grid search's first record at n)."""
    other = same_bucket(n)
    (first, warm, then), wall, warned, answers = _median_run(name, "fits", [n, n, other], repeats)
    answer = first["since_start_s"] / base["since_start_s"]
    print(f"{name} n={n}: first answer {first['since_start_s']:.2f} s against {base['since_start_s']:.2f} s "
          f"({answer:.2f} ×; median of {repeats}), first fit {first['programs']} "
          f"programs, warm {warm['programs']}, n={other} {then['programs']}", flush=True)
    return {"estimator": name, "n": n, "process_wall_s": wall, "first": first, "warm": warm, "same_bucket": then,
            "first_answer_s": first["since_start_s"], "first_answer_vs_grid_search": answer,
            "first_answer_runs_s": answers, "constant_folding_warnings": warned}


def rerun(cell: str, shared: bool) -> None:
    """``--rerun ESTIMATOR:N``: that row measured again and replaced in the recorded results."""
    import _bench

    name, _, n_text = cell.partition(":")
    if name not in ESTIMATORS or not n_text.isdigit():
        raise SystemExit(f"--rerun takes ESTIMATOR:N with ESTIMATOR one of {ESTIMATORS}; received {cell!r}")
    path = _bench.RESULTS / "compile_times.json"
    res = json.loads(path.read_text())
    n = int(n_text)
    at = [i for i, r in enumerate(res["rows"]) if r["n"] == n and r["estimator"] == name]
    base = next((r["first"] for r in res["rows"] if r["n"] == n and "warm" not in r), None)
    if not at or base is None:
        raise SystemExit(f"--rerun: no {name} row and grid-search row at n = {n} in {path.name}")
    row = _estimator_row(name, n, base)
    res["constant_folding_warnings"] += row.pop("constant_folding_warnings")
    res["rows"][at[0]] = {**row, "command": f"python benchmarks/compile_times.py --rerun {cell}",
                          "shared_machine": shared, "machine": _bench.machine()}
    res["merged_runs"] = res.get("merged_runs", []) + [{"command": f"python benchmarks/compile_times.py --rerun {cell}",
                                                         "shared_machine": shared}]
    path.write_text(json.dumps(res, indent=2, default=float))
    print(f"wrote {path}")


def others(n: int, shared: bool) -> None:
    """``--others``: each of ``OTHERS`` fits n rows, then another n of its bucket, in a fresh process."""
    other, rows = same_bucket(n), []
    for name in OTHERS:
        (first, then), wall, warned = _run(name, "fits", [n, other])
        rows.append({"estimator": name, "n": n, "first_programs": first["programs"], "first_wall_s": first["wall_s"],
                     "first_compile_s": first["compile_s"], "other_n": other, "other_n_programs": then["programs"],
                     "other_n_wall_s": then["wall_s"], "process_wall_s": wall, "constant_folding_warnings": warned})
        print(f"{name}: {first['programs']} programs at n={n} ({first['wall_s']:.2f} s), "
              f"{then['programs']} at n={other} ({then['wall_s']:.2f} s)", flush=True)
    path = write("compile_times_others", {**first_answer_header(shared), "rows": rows,
                                          "cache": "none (JAX's persistent compilation cache off, its default)"})
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 100 only, one process per cell")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 500, 1000, 5000])
    parser.add_argument("--shared", action="store_true", help="the machine ran other work at the same time")
    parser.add_argument("--rerun", default=None, metavar="ESTIMATOR:N",
                        help="measure one estimator's row at n = N again (a fresh process, the grid search's time "
                             "of the recorded run) and replace it in results/compile_times.json")
    parser.add_argument("--others", action="store_true",
                        help="the other estimators' programs at 200 rows and at another n of the bucket")
    parser.add_argument("--repeats", type=int, default=3,
                        help=f"fresh processes per cell below n = {REPEAT_BELOW} (the median is kept; one above)")
    parser.add_argument("--merge", action="store_true",
                        help="keep the recorded rows at the sizes not measured (results/compile_times.json)")
    args = parser.parse_args(argv)
    if args.others:
        return others(200, args.shared)
    if args.rerun:
        return rerun(args.rerun, args.shared)
    sizes = [100] if args.quick else args.sizes
    rows, folding = [], 0
    for n in sizes:
        repeats = args.repeats if n < REPEAT_BELOW and not args.quick else 1
        (base, *_), base_wall, warned, answers = _median_run("sklearn", "fits", [n], repeats)
        folding += warned
        rows.append({"estimator": "GridSearchCV(KernelRidge, 6 α × 30 γ)", "n": n, "process_wall_s": base_wall,
                     "first": base, "first_answer_runs_s": answers})
        for name in ESTIMATORS:
            rows.append(_estimator_row(name, n, base, repeats))
            folding += rows[-1].pop("constant_folding_warnings")
    cv_n = sizes[0]
    cross = []
    for name in ESTIMATORS:
        records, _, warned = _run(name, "cv", [cv_n, *CV_FOLDS])
        folding += warned
        cross.append({"estimator": name, "runs": records})
        print(f"{name} cross-validation on {cv_n} rows: " + ", ".join(
            f"cv={r['cv']}: first fold {r['first_fold_programs']}, later {r['later_folds_programs']}" for r in records),
            flush=True)
    searches = []
    for name in ESTIMATORS[:1] if args.quick else ESTIMATORS:  # quick: the search of one estimator
        record, _, warned = _run(name, "search", [cv_n, SEARCH_CV], json.dumps(SEARCH_GRIDS[name]))
        folding += warned
        searches.append({"estimator": name, **record})
        print(f"{name} GridSearchCV over {SEARCH_GRIDS[name]} on {cv_n} rows, cv={SEARCH_CV}: first fit "
              f"{record['first_fit_programs']} programs, later fold fits {record['later_fold_fits_programs']}, "
              f"refit on {record['refit_n']} rows {record['refit_programs']}", flush=True)
    merged = []
    if args.merge:  # the recorded rows at the other sizes, with the header of the run that measured them
        import _bench

        recorded = json.loads((_bench.RESULTS / "compile_times.json").read_text())
        kept = [r for r in recorded["rows"] if r["n"] not in sizes]
        rows = sorted(kept + rows, key=lambda r: r["n"])  # stable: the grid search first at each n
        # cross-validation and grid searches recorded on other row counts, kept beside this run's
        cross += [c for c in recorded.get("cross_validation", []) if c["runs"][0]["n"] != cv_n]
        searches += [g for g in recorded.get("grid_search_over_parameters", []) if g["n"] != cv_n]
        merged = [{"rows_at": sorted({r["n"] for r in kept}), "machine": recorded["machine"],
                   "load_1min": recorded.get("load_1min"), "command": "python benchmarks/compile_times.py"},
                  *recorded.get("merged_runs", [])]
    payload = {
        **first_answer_header(args.shared),
        **({"merged_runs": merged} if merged else {}),
        "repeats": "1 fresh process per cell" if args.quick else
        f"{args.repeats} fresh processes per cell below n = {REPEAT_BELOW}, the median kept; 1 above",
        "rows": rows,
        "cross_validation": cross,
        "grid_search_over_parameters": searches,
        "constant_folding_warnings": folding,
        "cache": "none (JAX's persistent compilation cache off, its default)",
    }
    flat = [{"estimator": r["estimator"], "n": r["n"], "first_answer_s": r["first"]["since_start_s"],
             "vs_grid_search": r.get("first_answer_vs_grid_search", 1.0),
             **{f"{k}_programs": r[k]["programs"] for k in ("first", "warm", "same_bucket") if k in r},
             "first_wall_s": r["first"]["wall_s"]} for r in rows]
    print(table(flat, ["estimator", "n", "first_answer_s", "vs_grid_search", "first_wall_s", "first_programs",
                       "warm_programs", "same_bucket_programs"]))
    path = write("compile_times_quick" if args.quick else "compile_times", payload)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
