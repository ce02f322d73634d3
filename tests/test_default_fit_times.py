"""benchmarks/default_fit_times.py --outputs-table: the default's first and warm fit against outputs
and rows, beside GridSearchCV(KernelRidge) per output scaled from one measured output."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "default_fit_times.py"


def _module():
    sys.path.insert(0, str(SCRIPT.parent))  # the script imports _bench beside it
    try:
        spec = importlib.util.spec_from_file_location("default_fit_times_under_test", SCRIPT)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(SCRIPT.parent))
    return mod


def test_baseline_scaling_is_one_output_times_d_and_the_grid_ratio():
    mod = _module()
    rec = {"first": {"cpu_s": 3.0, "wall_s": 4.0}, "warm": {"cpu_s": 2.0, "wall_s": 2.5}}
    # every grid point measured on one output: d outputs are the first one's fit and d − 1 warm ones
    all_points = mod._scaled_baseline(rec, 7, 1, "all")
    assert all_points["first"]["cpu_s"] == pytest.approx(3.0 + 6 * 2.0)
    assert all_points["warm"]["wall_s"] == pytest.approx(7 * 2.5)
    # two outputs measured: per-output seconds are half; 2 of 180 points: 5·2 + 1 fits stand for 5·180 + 1
    sub = mod._scaled_baseline(rec, 3, 2, "2")
    per_fit = (5 * 180 + 1) / (5 * 2 + 1)
    assert sub["warm"]["cpu_s"] == pytest.approx(round(3 * 2.0 / 2 * per_fit, 2))
    assert sub["first"]["cpu_s"] == pytest.approx(round((3.0 / 2 + 2 * 2.0 / 2) * per_fit, 2))


def test_children_are_pinned_to_one_thread_and_jax_defaults():
    mod = _module()
    os.environ["JAX_ENABLE_X64"] = "1"
    try:
        env = mod._thread_env(1)
    finally:
        del os.environ["JAX_ENABLE_X64"]
    assert "JAX_ENABLE_X64" not in env
    assert env["OPENBLAS_NUM_THREADS"] == env["OMP_NUM_THREADS"] == "1"
    assert "--xla_cpu_multi_thread_eigen=false" in env["XLA_FLAGS"]
    assert "XLA_FLAGS" not in mod._thread_env(0) or "multi_thread" not in mod._thread_env(0)["XLA_FLAGS"]


@pytest.mark.scripts
def test_outputs_table_quick_mode_records_first_and_warm_fits(tmp_path):
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=900,
                          cwd=SCRIPT.parent, env=env, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    payload = json.loads((tmp_path / "default_fit_times_outputs_quick.json").read_text())
    assert payload["machine"]["jax"] and payload["versions"]["sklearn"] and payload["threads"] == 1
    assert payload["dtype"].startswith("float32")
    assert [(r["n"], r["d"]) for r in payload["rows"]] == [(200, 1), (200, 2)]
    for r in payload["rows"]:
        ours, measured = r["default"], r["baseline_measured"]
        assert not ours["exceeded"] and ours["first"]["programs"] > 0
        assert ours["warm"]["programs"] == 0  # the same data: every program compiled by the first fit
        # the scaled baseline from the measured output, recomputed here
        assert r["baseline"]["first"]["cpu_s"] == pytest.approx(
            measured["first"]["cpu_s"] + (r["d"] - 1) * measured["warm"]["cpu_s"], abs=0.011)
        assert r["baseline"]["warm"]["cpu_s"] == pytest.approx(r["d"] * measured["warm"]["cpu_s"], abs=0.011)
        assert r["first_ratio"] == pytest.approx(ours["first"]["cpu_s"] / r["baseline"]["first"]["cpu_s"], rel=1e-2)
