"""A benchmark script run in a fresh process with its results written to a temporary folder: the
quick-mode tests share it."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_quick(script: str, tmp_path: Path, *args: str, timeout: int = 600, env: dict | None = None) -> dict:
    """The JSON that ``benchmarks/<script> --quick <args>`` writes (``<name>_quick.json`` in ``tmp_path``),
    after checking that it exited cleanly."""
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path), "MPLBACKEND": "Agg", **(env or {})}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--quick", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads((tmp_path / f"{Path(script).stem}_quick.json").read_text())
