"""benchmarks/perf_scale.py --quick: every method of the scaling table and the claim's two fits run."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_perf_scale_quick_runs():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "perf_scale.py"), "--quick", "--no-write"],
                          check=False, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "FAILED" not in proc.stderr, proc.stderr[-2000:]
    for method in ("exact", "blocked", "nystrom", "rff"):
        assert any(line.startswith(method) and "rmse" in line for line in proc.stdout.splitlines()), method
    assert "claim: nystrom m=60 on 600 rows" in proc.stdout


def test_perf_scale_results_record_machine_dtype_and_claims():
    path = ROOT / "benchmarks" / "results" / "perf_scale.json"
    payload = json.loads(path.read_text())
    assert payload["machine"]["jax_backend"] == "cpu" and "note" in payload
    rows = [r for r in payload["rows"] if "seconds" in r]
    if rows:  # the scaling table (a --claim run alone records the claim only)
        assert payload["dtype"] == "float64" and payload["versions"]["jax"]
        assert {r["method"] for r in rows} <= {"exact", "blocked", "nystrom", "rff"}
    claims = {c["claim"]: c for c in payload["claims"]}
    assert any("40000 rows" in c and "≤ 180 s" in c for c in claims)
    assert all(isinstance(c["pass"], bool) for c in claims.values())
    assert payload["claim_runs"] and payload["demo"] == payload["claim_runs"][-1]
