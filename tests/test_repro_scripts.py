"""The reproduction scripts keep working: each runs with --quick and writes a well-formed JSON.

Marked ``slow``-free on purpose: the five quick runs take ~2–3 minutes together on 2 cores.
Set ``JAXMTL_SKIP_REPRO=1`` to skip them.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ["repro_school", "repro_ida", "repro_toy", "repro_fields", "repro_mulan"]
KEYS = ("name", "mode", "paper", "protocol", "seeds", "ours", "claims", "versions", "machine", "command",
        "elapsed_s")

pytestmark = pytest.mark.skipif(os.environ.get("JAXMTL_SKIP_REPRO") == "1", reason="JAXMTL_SKIP_REPRO=1")


@pytest.mark.parametrize("name", SCRIPTS)
def test_quick_run_writes_json(name, tmp_path):
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path), "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "claims:" in proc.stdout and "|" in proc.stdout  # the side-by-side table was printed
    payload = json.loads((tmp_path / f"{name}_quick.json").read_text())
    for key in KEYS:
        assert key in payload, key
    assert payload["name"] == name and payload["mode"] == "quick"
    assert payload["command"] == f"python benchmarks/{name}.py --quick"
    assert payload["versions"]["jax"] and payload["machine"]["cpu_count"]
    assert payload["ours"] and payload["paper"]
    statuses = {c["status"] for c in payload["claims"]}
    assert statuses <= {"pass", "skipped (quick)"}, payload["claims"]
    assert any(c["status"] == "pass" for c in payload["claims"])


def test_readme_and_performance_tables_match_the_recorded_results():
    """README.md and docs/performance.md quote exactly what benchmarks/results/*.json hold."""
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "readme_results.py"), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, "stale: run python scripts/readme_results.py\n" + proc.stderr
