"""The reproduction scripts check real paper claims, even in --quick mode, and can fail.

Each script runs with --quick (a reduced but meaningful problem) and must pass at least one paper
claim (not only the finiteness checks); every claim records the paper's statement, the figures
and the tolerance. The claim helpers are tested on figures where the answer is known, a failing
claim makes a script exit non-zero, and the README generator lists failing claims openly.

Not marked ``slow`` on purpose: the quick runs take a few minutes together on 2 idle cores.
Set ``JAXMTL_SKIP_REPRO=1`` to skip them.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ["repro_school", "repro_ida", "repro_toy", "repro_fields", "repro_mulan", "repro_ida_svm"]
KEYS = ("name", "mode", "paper", "protocol", "seeds", "ours", "claims", "versions", "machine", "command",
        "elapsed_s")
skip_runs = pytest.mark.skipif(os.environ.get("JAXMTL_SKIP_REPRO") == "1", reason="JAXMTL_SKIP_REPRO=1")


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


_repro = _load("_repro_under_test", ROOT / "benchmarks" / "_repro.py")
readme = _load("readme_results_under_test", ROOT / "scripts" / "readme_results.py")


@skip_runs
@pytest.mark.parametrize("name", SCRIPTS)
def test_quick_run_checks_a_paper_claim_and_records_its_figures(name, tmp_path):
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path), "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "claims:" in proc.stdout and "|" in proc.stdout  # the side-by-side table was printed
    payload = json.loads((tmp_path / f"{name}_quick.json").read_text())
    for key in KEYS:
        assert key in payload, key
    assert payload["name"] == name and payload["mode"] == "quick"
    assert payload["command"] == f"python benchmarks/{name}.py --quick"
    assert payload["versions"]["jax"] and payload["machine"]["cpu_count"]
    assert payload["ours"] and payload["paper"]
    claims = payload["claims"]
    assert {c["status"] for c in claims} <= {"pass", "skipped (quick)"}, claims
    paper = [c for c in claims if c["kind"] == "paper"]
    assert paper and all(c["paper"] not in (None, "") and c["ours"] not in (None, "") and c["tolerance"]
                         for c in paper), paper
    assert any(c["status"] == "pass" for c in paper), "the quick run checks no paper claim"


def test_mean_vs_published_is_two_sided_with_standard_errors():
    rng = np.random.default_rng(0)
    close = 31 + rng.normal(size=10)  # mean ≈ 31, std ≈ 1
    assert _repro.mean_vs_published(close, 31, 3, 10)["ok"]
    res = _repro.mean_vs_published(close + 3.5, 31, 3, 10)  # above by 3.5 > 2·√(1/10 + 9/10) ≈ 2
    assert not res["ok"] and res["tolerance"] == pytest.approx(2 * np.hypot(np.std(close, ddof=1) / np.sqrt(10),
                                                                           3 / np.sqrt(10)))
    assert not _repro.mean_vs_published(close - 3.5, 31, 3, 10)["ok"]  # below fails too
    p = _repro.paired([1.0, 1.1, 0.9, 1.0], [2.0, 2.1, 1.9, 2.05])
    assert p["below"] and not p["indistinguishable"]
    p = _repro.paired([1.0, 3.0, 1.0, 3.0], [2.0, 2.0, 2.0, 2.0])
    assert not p["below"] and p["indistinguishable"]


def test_a_failing_claim_is_recorded_and_makes_the_script_exit_non_zero(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_repro, "RESULTS", tmp_path)
    claims = _repro.Claims(quick=True)
    claims.check("a claim checked in quick runs", False, paper="31 ± 3 %", ours="20 %", tolerance="two-sided",
                 quick=True, explanation="known reason")
    claims.check("a full-run claim", False, paper="x", ours="y", tolerance="z")
    assert [c["status"] for c in claims.items] == ["FAIL", "skipped (quick)"]
    with pytest.raises(SystemExit) as exit_:
        _repro.finish("repro_fake", SimpleNamespace(quick=True), 0.0, {"p": 1}, {}, {}, {"o": 1}, claims, ["t\n| a |"])
    assert exit_.value.code == 1
    saved = json.loads((tmp_path / "repro_fake_quick.json").read_text())["claims"][0]
    assert saved["status"] == "FAIL" and saved["paper"] == "31 ± 3 %" and saved["explanation"] == "known reason"
    assert "why: known reason" in capsys.readouterr().out


def test_readme_lists_failing_claims_with_figures_and_reasons(tmp_path, monkeypatch):
    claims = [{"claim": "School: ν-method reproduced", "kind": "paper", "status": "FAIL", "paper": "31 ± 3 %",
               "ours": "20 %", "tolerance": "2 SE", "detail": "", "explanation": "a reason"},
              {"claim": "finite", "kind": "sanity", "status": "pass", "paper": "", "ours": "", "tolerance": ""}]
    res = {"command": "python benchmarks/repro_school.py", "elapsed_s": 60, "machine": {"cpu_count": 2},
           "tables": ["caption\n| a |"], "claims": claims}
    (tmp_path / "repro_school.json").write_text(json.dumps(res))
    monkeypatch.setattr(readme, "RESULTS", tmp_path)
    text = readme.reproductions()
    head = text.split("###")[0]
    assert "Claims not reproduced" in head and "School: ν-method reproduced" in head
    assert "**FAIL** — School: ν-method reproduced. paper: 31 ± 3 % · ours: 20 % · tolerance: 2 SE" in text
    assert "*Why:* a reason" in text and "finite" not in text
    assert "No full run recorded yet: `python benchmarks/repro_ida.py`" in text


def test_readme_and_performance_tables_match_the_recorded_results():
    """README.md and docs/performance.md quote exactly what benchmarks/results/*.json hold."""
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "readme_results.py"), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, "stale: run python scripts/readme_results.py\n" + proc.stderr
