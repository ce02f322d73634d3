"""JAX's persistent compilation cache (docs/performance.md, "Compilation"): a second process fitting
the same estimator reads the programs the first one compiled instead of compiling them again; and
the quick modes of benchmarks/compile_times.py, startup.py, first_fit_breakdown.py and
lapack_threads.py (the LAPACK threads beside XLA's, the same docs page) run."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# One fit and predict in a fresh process (JAX's default configuration, float32) with the cache in
# argv[1]; prints the XLA compilations (each backend compile event: a compilation or a read from the
# cache) and the cache hits among them, counted with jax.monitoring.
_CHILD = """
import json, sys, warnings
import jax
import numpy as np
import jaxmtl
from jaxmtl import VectorValuedRegressor
jaxmtl.enable_compilation_cache(sys.argv[1])
counts = {"programs": 0, "cache_hits": 0}
def on_event(event, **kwargs):
    if event == "/jax/compilation_cache/cache_hits":
        counts["cache_hits"] += 1
def on_duration(event, duration, **kwargs):
    if event == "/jax/core/compile/backend_compile_duration":
        counts["programs"] += 1
jax.monitoring.register_event_listener(on_event)
jax.monitoring.register_event_duration_secs_listener(on_duration)
rng = np.random.default_rng(0)
X = rng.normal(size=(30, 2)); Y = np.c_[np.sin(X[:, 0]), X[:, 1]]
warnings.simplefilter("ignore")
F = VectorValuedRegressor(n_steps=10, width_factors=(1.0,), n_folds=3).fit(X, Y).predict(X)
counts["prediction"] = F.tolist()
print(json.dumps(counts))
"""


def _fit_in_process(cache_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_"))}  # JAX's defaults
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(cache_dir)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_second_process_reads_the_compiled_programs_from_the_cache(tmp_path):
    cache = tmp_path / "jax_cache"
    first = _fit_in_process(cache)
    entries = [p for p in cache.rglob("*") if p.is_file()]
    # the first process compiles (a program compiled twice in it, the same computation under two
    # jitted functions, is read back the second time) and writes what it compiled
    assert first["programs"] > 0 and first["cache_hits"] <= first["programs"] // 10
    assert len(entries) >= first["programs"] - first["cache_hits"]
    second = _fit_in_process(cache)
    # the same programs, every one read back instead of compiled
    assert second["programs"] == first["programs"] and second["cache_hits"] == second["programs"]
    assert second["prediction"] == first["prediction"]  # the cached programs compute the same numbers


def _quick_run(script: str, tmp_path: Path) -> dict:
    """The JSON ``benchmarks/<script>.py --quick`` writes (to a temporary results folder)."""
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{script}.py"), "--quick"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads((tmp_path / f"{script}_quick.json").read_text())


@pytest.mark.scripts
def test_compile_times_quick_mode_runs_and_a_rerun_replaces_one_row(tmp_path):
    payload = _quick_run("compile_times", tmp_path)
    assert payload["dtype"] == "float32" and payload["machine"]["jax"]
    (row,) = [r for r in payload["rows"] if r["estimator"] == "VectorValuedRegressor"]
    assert row["n"] == 100 and row["first"]["programs"] > 0 and row["warm"]["programs"] == 0  # same data
    assert row["warm"]["cpu_s"] <= row["first"]["cpu_s"]
    # the first answer: imports, data and the first fit, so at least the fit and at most the process
    assert row["first"]["wall_s"] <= row["first_answer_s"] <= row["process_wall_s"]
    assert any(r["estimator"].startswith("GridSearchCV(KernelRidge") for r in payload["rows"])
    # GridSearchCV over parameters that change no array shape: its later fold fits compile nothing
    (search,) = payload["grid_search_over_parameters"]
    assert search["estimator"] == "VectorValuedRegressor" and len(search["fits"]) == 13  # 4 candidates × 3 + refit
    assert search["first_fit_programs"] > 0 and search["later_fold_fits_programs"] == 0
    # --rerun ESTIMATOR:N measures that row again and replaces it in compile_times.json
    (tmp_path / "compile_times.json").write_text(json.dumps(payload))
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compile_times.py"), "--rerun",
                           "MultiClassClassifier:100"], capture_output=True, text=True, timeout=600, cwd=ROOT, env=env,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    after = json.loads((tmp_path / "compile_times.json").read_text())
    (row,) = [r for r in after["rows"] if r["estimator"] == "MultiClassClassifier"]
    assert row["command"].endswith("--rerun MultiClassClassifier:100") and row["first"]["programs"] > 0
    base = next(r for r in after["rows"] if "warm" not in r)  # the recorded grid search, kept
    assert row["first_answer_vs_grid_search"] == pytest.approx(row["first_answer_s"] / base["first"]["since_start_s"])
    unchanged = [r for r in after["rows"] if r["estimator"] != "MultiClassClassifier"]
    assert unchanged == [r for r in payload["rows"] if r["estimator"] != "MultiClassClassifier"]
    assert after["merged_runs"][-1]["command"] == row["command"]


@pytest.mark.scripts
def test_startup_quick_mode_runs(tmp_path):
    payload = _quick_run("startup", tmp_path)
    imports = {row["what"]: row for row in payload["imports"]}
    assert imports["import jax"]["ratio_to_import_jax"] == 1.0
    assert imports["import jaxmtl"]["median_s"] < imports["estimators"]["median_s"]
    (fit,) = payload["first_fits"]
    (row,) = fit["estimators"]
    assert fit["n"] == 100 and fit["grid_search_source"] == "measured here" and row["estimator"] == "VectorValuedRegressor"
    assert all(row[f"{k} s"] > 0 for k in ("cache off", "cache empty", "cache filled"))
    assert row["cache filled / GridSearchCV"] == pytest.approx(row["cache filled s"] / fit["GridSearchCV s"])


@pytest.mark.scripts
def test_first_fit_breakdown_quick_mode_runs(tmp_path):
    payload = _quick_run("first_fit_breakdown", tmp_path)
    (row,) = payload["rows"]
    assert row["estimator"] == "VectorValuedRegressor" and row["n"] == 100 and row["xla_flags"] == "default"
    (run,) = row["runs"]
    # every compiled program named, its stages summed; the parts add up to the first fit
    assert 0 < run["n_programs"] <= 8 and len(run["programs"]) >= run["n_programs"]
    assert run["compile_s"] == pytest.approx(sum(p["compile_s"] for p in run["programs"].values()))
    parts = run["trace_s"] + run["lower_s"] + run["compile_s"] + run["warm_fit_s"] + run["other_s"]
    assert parts == pytest.approx(run["first_fit_s"])
    assert run["import_jax_s"] > 0 and run["import_estimators_s"] > 0


@pytest.mark.scripts
def test_lapack_threads_quick_mode_runs(tmp_path):
    payload = _quick_run("lapack_threads", tmp_path)
    rows = {(r["processes"], r["openblas_threads"]): r["ms"] for r in payload["rows"]}
    assert set(rows) == {(p, t) for p in (1, 2) for t in ("1", "default (one per core)")}
    for ms in rows.values():  # every operation and size timed, in positive milliseconds per matrix
        assert set(ms) == {f"{op}/{m}" for op in ("eigh", "cholesky") for m in (80, 200)}
        assert all(v > 0 for v in ms.values())
