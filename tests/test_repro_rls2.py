"""benchmarks/repro_rls2.py --quick runs, writes a well-formed JSON and passes its quick claims
(path time ≥ 10× faster than [Din11] Table 4.4, 13·(p+1) kernels, linear RLS2 = scikit-learn's Lasso).

Marked slow: the quick run compiles the RLS2 path twice and takes one to a few minutes on 2 cores."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_quick_run_writes_json_and_passes(tmp_path):
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path), "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "repro_rls2.py"), "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "claims:" in proc.stdout and "|" in proc.stdout
    payload = json.loads((tmp_path / "repro_rls2_quick.json").read_text())
    assert payload["name"] == "repro_rls2" and payload["mode"] == "quick"
    assert payload["ours"]["heart"]["70/30"]["test_set_lambda"]["m"] == 182
    assert payload["ours"]["lasso_identity"]["max_rel_diff"] <= 1e-6
    statuses = {c["status"] for c in payload["claims"]}
    assert statuses <= {"pass", "skipped (quick)"}, payload["claims"]
    assert any(c["status"] == "pass" for c in payload["claims"])
