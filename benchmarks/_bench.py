"""Shared helpers of the benchmark scripts: machine facts, timing, result files."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

# results/ beside the scripts; JAXMTL_RESULTS_DIR redirects them (the tests write to a temporary folder)
RESULTS = Path(os.environ.get("JAXMTL_RESULTS_DIR", Path(__file__).resolve().parent / "results"))
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the scripts import jaxmtl from this checkout
    sys.path.insert(0, str(ROOT))


# XLA's warning when constant folding is slow (data closed over as constants instead of arguments),
# searched for in a child's stderr in lower case
CONSTANT_FOLDING = "constant folding"

# Source lines for a child process (``python -c``) that count the XLA programs it compiles and their
# compilation seconds into ``counts``; the child imports jax first.
COMPILE_COUNTER = """
counts = {"programs": 0, "compile_s": 0.0}
def on_duration(event, duration, **kwargs):
    if event == "/jax/core/compile/backend_compile_duration":
        counts["programs"] += 1
        counts["compile_s"] += duration
jax.monitoring.register_event_duration_secs_listener(on_duration)
"""


# Source lines for a first-answer child process (``python -c``, after ``import numpy as np``,
# ``kind`` the estimator's name or "sklearn"): ``data(n)`` (X, Y, tasks) and ``fit(X, Y, tasks)``, the
# estimator with its defaults (or GridSearchCV(KernelRidge, 6 α × 30 γ, cv=5)) fitted as a new
# user would. X ~ N(0, 1) with 2 features, outputs [sin x₀ + x₁, cos x₁] plus noise 0.1; the
# classifier's labels (x₀ > 0) + (x₁ > 0.5); the multi-task outputs the first output plus its
# task's offset, 4 tasks dealt in turn.
FIRST_ANSWER_FIT = """
def data(n):
    rng = np.random.default_rng(n)  # the same data for the same n
    X = rng.normal(size=(n, 2))
    Y = np.c_[np.sin(X[:, 0]) + X[:, 1], np.cos(X[:, 1])] + 0.1 * rng.normal(size=(n, 2))
    tasks = np.arange(n) % 4
    return X, Y, tasks

if kind == "sklearn":
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV
    grid = {"alpha": np.logspace(-6, 1, 6).tolist(), "gamma": np.logspace(-3, 2, 30).tolist()}
    fit = lambda X, Y, tasks: GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=5).fit(X, Y)
else:
    import jaxmtl
    make = getattr(jaxmtl, kind)
    def fit(X, Y, tasks):
        if kind.endswith("Classifier"):
            return make().fit(X, (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5))
        if kind in ("MultiTaskRegressor", "MixedEffectRegressor"):
            return make().fit(X, Y[:, 0] + tasks, tasks)
        return make().fit(X, Y)
"""


def fresh_process_env() -> dict:
    """The environment of a first-answer benchmark's fresh processes: JAX's and XLA's defaults (no
    ``JAX_*`` / ``XLA_*`` variable), and Python's bytecode cache on, as in a user's process.

    pip compiles every installed package's bytecode, scikit-learn's and JAX's included; an
    editable or source checkout of jaxmtl is compiled here (:mod:`compileall`, once) so that both
    sides import from bytecode. Without it, a process started with ``PYTHONDONTWRITEBYTECODE``
    compiles jaxmtl's sources at every import (about 0.15 s of a 0.9 s import on a 2-core CPU)."""
    import compileall

    compileall.compile_dir(str(ROOT / "jaxmtl"), quiet=1)
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("JAX_", "XLA_")) and k != "PYTHONDONTWRITEBYTECODE"}


def first_answer_header(shared: bool) -> dict:
    """The fields a first-answer benchmark (compile_times.py, startup.py) records before its rows:
    the precision of each side, the versions and whether the machine ran other work."""
    return {
        "dtype": "float32",
        "dtype_note": "jaxmtl in JAX's default configuration (x64 off); scikit-learn in float64",
        "bytecode": "compiled, as pip leaves an installed package (fresh_process_env)",
        "versions": versions(),
        "shared_machine": shared,
        "load_1min": os.getloadavg()[0],
    }


def machine() -> dict:
    """Platform, processor, cores, memory and library versions."""
    import jax
    import numpy as np

    info = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "jax": jax.__version__,
        "numpy": np.__version__,
        "jax_backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
    }
    try:
        with open("/proc/meminfo") as fh:
            info["memory_total_kb"] = int(fh.readline().split()[1])
        with open("/proc/cpuinfo") as fh:
            names = [ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")]
        if names:
            info["cpu_model"] = names[0]
    except OSError:
        pass
    return info


def median_time(fn, repeats: int = 3) -> float:
    """Median wall time of ``fn()`` over ``repeats`` calls (``fn`` must block until done)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def alternate(fns: dict, repeats: int) -> dict:
    """Median wall time of each blocking callable, the callables timed in turn ``repeats`` times."""
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in times.items()}


def first_call_time(fn) -> float:
    """Wall time of one call (compilation included when it is the first)."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def write(name: str, payload: dict) -> Path:
    """Write ``results/<name>.json`` with the machine facts added."""
    import jax

    RESULTS.mkdir(parents=True, exist_ok=True)
    if jax.default_backend() != "cpu":  # accelerator runs sit beside the CPU results, never over them
        name = f"{name}_{jax.default_backend()}"
    payload = {"benchmark": name, "machine": machine(), **payload}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=float))
    return path


def table(rows: list[dict], columns: list[str]) -> str:
    """A plain-text table of ``rows`` restricted to ``columns``."""
    fmt = lambda v: f"{v:.4g}" if isinstance(v, float) else str(v)
    cells = [[fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


# --------------------------------------------------------------------------- shared by perf_*.py
def versions() -> dict:
    """Versions of the libraries the comparisons use (None when not installed)."""
    out = {}
    for mod in ("jax", "jaxlib", "numpy", "scipy", "sklearn", "himalaya", "equinox"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - absent peer
            out[mod] = None
    out["python"] = sys.version.split()[0]
    return out


def proc_status_kb(field: str) -> int:
    """A field of /proc/self/status in kB (VmHWM = peak resident set, VmRSS = current)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def gemm_gflops(size: int, dtype, repeats: int = 3) -> dict:
    """Square matrix-product throughput of JAX on this machine (GFLOP/s), compile excluded."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    M = jnp.asarray(np.random.default_rng(0).normal(size=(size, size)), dtype)
    f = jax.jit(lambda a: a @ a)
    f(M).block_until_ready()
    t = median_time(lambda: f(M).block_until_ready(), repeats)
    return {"size": size, "seconds": t, "gflops": 2 * size**3 / t / 1e9}


def bare_kc_seconds(n: int, d: int, dtype, repeats: int = 5) -> float:
    """Median time of one bare K @ C (n×n by n×d) in JAX, compile excluded."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(1)
    K = jnp.asarray(rng.normal(size=(n, n)), dtype)
    C = jnp.asarray(rng.normal(size=(n, d)), dtype)
    f = jax.jit(lambda K, C: K @ C)
    f(K, C).block_until_ready()
    t = median_time(lambda: f(K, C).block_until_ready(), repeats)
    return t


def reset_peak() -> int:
    """Reset the peak resident set (Linux ``clear_refs``) and return the current one in kB."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:  # not Linux: the peak then counts from the process start
        pass
    return proc_status_kb("VmRSS")


def timed(fn, repeats: int) -> dict:
    """Warm-up call (reported, not counted), then the median of ``repeats`` calls.

    ``fn`` must block until its result is ready and return it. With ``repeats == 0`` the
    warm-up call is the only measurement (used for single ~minute-long LAPACK calls). The peak
    resident set is reset first; ``rss_base_kb`` is the resident set then (data loaded, code
    compiled), for :func:`worker_memory`.
    """
    rss_base = reset_peak()
    start = time.perf_counter()
    out = fn()
    first = time.perf_counter() - start
    if repeats == 0:
        return {"first_s": first, "median_s": first, "repeats": 1, "times": [first], "result": out,
                "rss_base_kb": rss_base}
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return {"first_s": first, "median_s": statistics.median(times), "repeats": repeats,
            "times": times, "result": out, "rss_base_kb": rss_base}


def compile_seconds(jitted, *args, **kwargs) -> tuple[float, object]:
    """Ahead-of-time compile time of ``jitted`` for these arguments; returns (seconds, compiled)."""
    start = time.perf_counter()
    compiled = jitted.lower(*args, **kwargs).compile()
    return time.perf_counter() - start, compiled


def isolated(script: str, task: dict, timeout: float = 900) -> dict:
    """Run ``script --worker JSON`` in a fresh Python process and return its result dict.

    The worker prints ``RESULT <json>`` as its last line; a fresh process per measurement keeps
    the peak resident set (VmHWM) of one method from mixing with another's.
    """
    import subprocess

    proc = subprocess.run([sys.executable, script, "--worker", json.dumps(task)], capture_output=True,
                          text=True, timeout=timeout)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr or proc.stdout)[-2000:], "task": task}
    return json.loads(lines[-1][len("RESULT "):])


def worker_memory(base_kb: int, ref_bytes: float) -> dict:
    """Peak resident set of the measured calls against ``ref_bytes`` (the arrays the job needs).

    ``base_kb`` is :func:`timed`'s ``rss_base_kb``: the resident set when the peak was reset,
    after the inputs were loaded and the code compiled, so peak − base is what the measured
    calls allocated (the Gram matrices, factorisations, workspaces, outputs) without the JAX
    runtime and compiler (~100–200 MB whatever the size).
    """
    peak = proc_status_kb("VmHWM")
    inc = (peak - base_kb) * 1024.0
    return {"rss_base_mb": base_kb / 1024, "rss_peak_mb": peak / 1024, "alloc_peak_mb": inc / 2**20,
            "ref_mb": ref_bytes / 2**20, "alloc_over_ref": inc / ref_bytes}


def emit(result: dict) -> None:
    """Print a worker's result for :func:`isolated`."""
    print("RESULT " + json.dumps(result, default=float), flush=True)


def fit_slope(ns, ts) -> float:
    """Least-squares slope of log t against log n."""
    import numpy as np

    ns, ts = np.asarray(ns, float), np.asarray(ts, float)
    ok = np.isfinite(ts) & (ts > 0)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(ns[ok]), np.log(ts[ok]), 1)[0])


def set_threads(argv=None) -> int:
    """Pin BLAS/LAPACK (OpenBLAS, MKL, OpenMP) and XLA to ``--threads N`` (default 1) threads.

    Must run before numpy / jax are imported; workers inherit the environment. On a small,
    shared machine multi-threaded OpenBLAS slows down 5–10× when other jobs hold the cores
    (spinning threads), which would distort the peers' timings; one thread for every method
    keeps the comparison fair and stable. ``--threads 0`` leaves the libraries' defaults.
    """
    argv = sys.argv[1:] if argv is None else argv
    n = int(os.environ.get("JAXMTL_BENCH_THREADS", "1"))  # inherited by the workers
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            n = int(argv[i + 1])
        elif a.startswith("--threads="):
            n = int(a.split("=", 1)[1])
    os.environ["JAXMTL_BENCH_THREADS"] = str(n)
    if n > 0:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(n)
        if n == 1:
            flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
            os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flags).strip()
    return n


def float64_jax():
    """Enable float64 in JAX and start its backend (a worker's first step, before its timings); returns jax."""
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.numpy.zeros(1).block_until_ready()
    return jax


def run_isolated(script: str, tasks: list[dict], keys: tuple[str, ...], timeout: float = 900) -> list[dict]:
    """Each task in a fresh process (:func:`isolated`), in order; one row per task, with its ``keys``.

    Prints a progress line per task: its keys, the median time, the XLA peak (``peak_mb``) when the
    worker reports one, the wall time and the tail of any error.
    """
    rows = []
    for task in tasks:
        t0 = time.perf_counter()
        res = isolated(script, task, timeout)
        res.update({k: task[k] for k in keys})
        rows.append(res)
        peak = f", peak {res['xla']['peak_mb']:8.1f} MB" if "xla" in res else ""
        print(f"  {' '.join(f'{k}={task[k]}' for k in keys)} {res.get('median_s', float('nan')):9.3f} s{peak} "
              f"(wall {time.perf_counter() - t0:.1f} s) {res.get('error', '')[-400:]}", flush=True)
    return rows


def report(name: str, quick: bool, rows: list[dict], columns: list[str], targets: dict, /, **fields) -> Path:
    """Print the table and the targets, write ``results/<name>[_quick].json`` and return its path.

    The file holds the thread count, dtype (``fields['dtype']``, default float64), library versions,
    the other ``fields`` in order, then the rows and targets.
    """
    print(table(rows, columns))
    for k, t in targets.items():
        met = f"{'MET' if t['met'] else 'NOT MET'}  " if isinstance(t, dict) and "met" in t else ""
        print(f"target {k}: {met}{t}")
    payload = {"threads": int(os.environ.get("JAXMTL_BENCH_THREADS", "1")), "dtype": fields.pop("dtype", "float64"),
               "versions": versions(), **fields, "rows": rows, "targets": targets}
    path = write(name + ("_quick" if quick else ""), payload)
    print("wrote", path)
    return path


def pop_only(argv: list[str]) -> tuple[list[str] | None, list[str]]:
    """(the comma-separated names after ``--only``, or None; argv without that option): the rows to
    rerun, the others kept from the last results file."""
    argv = list(argv)
    if "--only" not in argv:
        return None, argv
    i = argv.index("--only")
    only = argv[i + 1].split(",")
    del argv[i:i + 2]
    return only, argv


def parse_args(doc: str, worker, argv=None, float32: bool = False):
    """Common command line of the perf scripts; runs ``worker`` and returns None in worker mode.

    Flags: ``--quick`` (small sizes), ``--threads N`` (see :func:`set_threads`), the hidden
    ``--worker JSON`` used by :func:`isolated`, and ``--float32`` when ``float32`` is True.
    """
    import argparse

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    if float32:
        parser.add_argument("--float32", action="store_true")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help="BLAS/XLA threads per process (0: library default)")
    args = parser.parse_args(argv)
    if args.worker:
        emit(worker(json.loads(args.worker)))
        return None
    return args
