"""benchmarks/independent_filter.py --quick: both filters of the independent family fit and score."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(os.environ.get("JAXMTL_SKIP_REPRO") == "1", reason="JAXMTL_SKIP_REPRO=1")
def test_quick_comparison_runs_and_records_both_filters(tmp_path):
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "independent_filter.py"), "--quick"],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    payload = json.loads((tmp_path / "independent_filter_quick.json").read_text())
    (row,) = payload["rows"]
    assert row["set"] == "slump" and payload["folds"] == 2
    for f in ("tikhonov", "nu_method"):  # aRRMSE of a fitted model: better than predicting the mean
        assert 0 < row[f"{f}_arrmse"] < 1 and row[f"{f}_cpu_s"] > 0
