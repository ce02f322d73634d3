"""Figures quoted in the prose of README.md and docs/defaults.md agree with the recorded results.

The generated tables are rewritten from ``benchmarks/results/*.json`` by ``scripts/readme_results.py``;
the sentences around them are written by hand. Each case here reads one quoted figure from a page
and the figure it quotes from its JSON, so the two cannot drift apart again (a rerun that changes
the figure fails this test until the sentence is updated). Reads text files only: fast.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCHOOL_SPEED = "benchmarks/results/defaults_vs_tuned_school_speed.json"


def _school_speed():
    """The School speed run: its one row, and its CPU-time target (from the claim's statement) with whether it held."""
    res = json.loads((ROOT / SCHOOL_SPEED).read_text())
    body = res["results"]["school_speed"]
    (row,) = body["rows"]
    (claim,) = [c for c in body["claims"] if "CPU time" in c["claim"]]
    target = float(re.search(r"≤ ([\d.]+) ×", claim["claim"]).group(1))
    assert claim["value"] == pytest.approx(row["ratio_fit_cpu_s"])  # the claim quotes the row's ratio
    return row, target, claim["pass"]


def _quoted(page: str, pattern: str) -> re.Match:
    """The one match of ``pattern`` in ``page`` (whitespace in the pattern matches any line break)."""
    text = (ROOT / page).read_text()
    found = list(re.finditer(pattern.replace(" ", r"\s+"), text))
    assert len(found) == 1, f"{page}: expected one sentence matching {pattern!r}, found {len(found)}"
    return found[0]


def test_readme_school_default_fit_time_and_mse_match_the_recorded_run():
    row, target, met = _school_speed()
    m = _quoted("README.md", r"test MSE ([\d.]+), as that family alone\); its fit takes ([\d.]+) × that "
                             r"family's CPU time, (within|above) the ([\d.]+) × target")
    assert float(m.group(1)) == round(row["default_mse"], 1) == round(row["common_family_mse"], 1)
    assert float(m.group(2)) == round(row["ratio_fit_cpu_s"], 2)
    assert (m.group(3) == "within") == met == (row["ratio_fit_cpu_s"] <= target)
    assert float(m.group(4)) == target


def test_defaults_page_school_speed_paragraph_matches_the_recorded_run():
    row, target, met = _school_speed()
    m = _quoted("docs/defaults.md", r"the fit costs ([\d.]+) × its CPU time \((met|not met)\)")
    assert float(m.group(1)) == round(row["ratio_fit_cpu_s"], 2) and (m.group(2) == "met") == met
    m = _quoted("docs/defaults.md", r"takes the default fit from ([\d.]+) to ([\d.]+) CPU seconds \(([\d.]+) ×, "
                                    r"target ([\d.]+) ×; wall ([\d.]+) and ([\d.]+) s\)")
    quoted = [float(g) for g in m.groups()]
    recorded = [row["common_family_fit_cpu_s"], row["default_fit_cpu_s"], row["ratio_fit_cpu_s"], target,
                row["common_family_fit_s"], row["default_fit_s"]]
    assert quoted == [round(v, 2 if i in (2, 3) else 1) for i, v in enumerate(recorded)]
    m = _quoted("docs/defaults.md", r"test MSE is that family's, ([\d.]+)\.")
    assert float(m.group(1)) == round(row["default_mse"], 1)
