"""benchmarks/perf_solvers_table.py --quick: ours and libsvm fit every configuration to the same accuracy."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = str(ROOT / "benchmarks" / "perf_solvers_table.py")


@pytest.mark.skipif(os.environ.get("JAXMTL_SKIP_REPRO") == "1", reason="JAXMTL_SKIP_REPRO=1")
def test_quick_table_runs_and_prints_its_markdown(tmp_path):
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, SCRIPT, "--quick"], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    payload = json.loads((tmp_path / "perf_solvers_table_quick.json").read_text())
    rows = payload["rows"]
    assert {(r["data"], r["task"]) for r in rows} == {("banana", "svm"), ("digits", "svm"), ("parkinsons", "svr"),
                                                      ("friedman1", "svr")}
    for r in rows:  # the same optimum as libsvm: equal test metrics, decision values within the tolerance's reach
        assert r["converged"] and r["ours_s"] > 0 and r["libsvm_s"] > 0
        assert r["ours_metric"] == pytest.approx(r["libsvm_metric"], rel=0.02, abs=0.01), r
        assert r["max_decision_diff"] < 0.05, r
    assert payload["targets"]["configurations ≥ 12"]["count"] == 4
    (tmp_path / "perf_solvers_table.json").write_text(json.dumps(payload))
    md = subprocess.run([sys.executable, SCRIPT, "--markdown"], capture_output=True, text=True, timeout=120, env=env)
    table = [ln for ln in md.stdout.splitlines() if ln.startswith("|")]
    assert md.returncode == 0 and len(table) == 2 + len(rows), md.stdout + md.stderr  # header, rule, rows
