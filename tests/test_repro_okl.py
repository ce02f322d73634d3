"""benchmarks/repro_okl.py --quick runs, writes a well-formed JSON and passes its quick claim (the learned
output kernel beats the identity on sim2; the Sylvester timings are recorded, not checked: timings belong
to the full benchmark run), the C step equals scipy's solution, and the raw-pixel MNIST part (600 / 400
images from the bundled file) is recorded.

Marked slow: the quick run fits the selection estimators and times scipy's Sylvester solver (about
two to three minutes on 2 cores)."""

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
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "repro_okl.py"), "--quick"], check=False, cwd=ROOT,
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "claims:" in proc.stdout and "|" in proc.stdout
    payload = json.loads((tmp_path / "repro_okl_quick.json").read_text())
    assert payload["name"] == "repro_okl" and payload["mode"] == "quick"
    assert set(payload["ours"]["sims"]) == {"sim0", "sim2"}
    assert payload["ours"]["sylvester"]["max_rel_diff"] <= 1e-8
    pixels = payload["ours"]["pixels"]  # raw-pixel MNIST at 600 / 400: a Gaussian-kernel model is far above chance
    assert (pixels["n_train"], pixels["n_test"]) == (600, 400)
    for key in ("okl", "multiclass", "svc"):
        assert pixels[key]["accuracy"] > 0.8 and pixels[key]["fit_cpu_s"] > 0, (key, pixels[key])
    assert any("raw-pixel" in c["claim"] and c["status"] == "skipped (quick)" for c in payload["claims"])
    statuses = {c["status"] for c in payload["claims"]}
    assert statuses <= {"pass", "skipped (quick)"}, payload["claims"]
    passed = [c for c in payload["claims"] if c["status"] == "pass" and c["kind"] == "paper"]
    assert any("sim2" in str(c["ours"]) for c in passed)
