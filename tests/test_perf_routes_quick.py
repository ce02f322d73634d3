"""benchmarks/perf_routes.py: every route and baseline of a cell runs and agrees on the selection;
the committed quick results record the machine, the load and where each route wins."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_perf_routes_runs_every_route_and_baseline(tmp_path):
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "perf_routes.py"), "--sizes", "100",
                           "--dtypes", "float64", "--repeats", "1", "--shared"],
                          check=False, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    payload = json.loads((tmp_path / "perf_routes.json").read_text())
    assert payload["shared_machine"] is True and payload["cells"] == 6
    for row in payload["rows"]:
        assert row["same_selection"], row
        assert row["auto_route"] in ("eigen", "direct")
        assert {"auto", "eigen", "direct", "jax_chol", "scipy_chol"} <= set(row["seconds"])
        # auto runs the route it names: its selected loss is that route's
        assert abs(row["selected_loss"]["auto"] - row["selected_loss"][row["auto_route"]]) <= 1e-9


def test_committed_quick_results_record_machine_load_and_winners():
    payload = json.loads((ROOT / "benchmarks" / "results" / "perf_routes_quick.json").read_text())
    assert payload["machine"]["jax_backend"] == "cpu" and "load_before" in payload
    assert isinstance(payload["shared_machine"], bool)
    assert {r["dtype"] for r in payload["rows"]} == {"float32", "float64"}
    assert all(r["same_selection"] for r in payload["rows"])
    assert sum(len(v) for v in payload["where_each_route_wins"].values()) == payload["cells"]


def test_partial_baselines_time_the_first_points_and_bound_the_ratio(tmp_path):
    """--baseline-points M: the k-fold cell's Cholesky baselines solve the first M λ only (their
    losses there agree with eigen's), direct is not timed, and the ratio is marked as a bound."""
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "perf_routes.py"), "--sizes", "100", "--grids",
                           "--kfold-sizes", "100", "--dtypes", "float64", "--repeats", "1", "--baseline-points", "3",
                           "--name", "partial"], check=False, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (row,) = json.loads((tmp_path / "partial.json").read_text())["rows"]
    assert row["baseline_points"] == 3 and row["baseline_lower_bound"] and row["same_selection"]
    assert "direct" not in row["seconds"] and {"auto", "eigen", "jax_chol", "scipy_chol"} <= set(row["seconds"])
    assert 0 <= row["selected_index"]["jax_chol"] < 6 * 3  # an index into the (6 ω, 3 λ) losses it solved


def test_partial_baselines_out_of_the_grid_are_refused_by_name():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "perf_routes.py"), "--baseline-points", "0",
                           "--no-write"], check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--baseline-points must be between 1" in proc.stderr
