"""benchmarks/perf_features.py --quick: the blocked ΦᵀΦ gives the plain product's statistics, and a
fitted predictor closed over in a user's jit compiles without XLA's slow-constant-folding warning."""

import os

import pytest
from _quick import run_quick


@pytest.mark.skipif(os.environ.get("JAXMTL_SKIP_REPRO") == "1", reason="JAXMTL_SKIP_REPRO=1")
def test_quick_run_records_both_forms_of_each_cost(tmp_path):
    res = run_quick("perf_features.py", tmp_path, env={"JAX_PLATFORMS": "cpu"})
    assert not [r["error"] for r in res["rows"] if "error" in r]
    stats = {r["blocked"]: r for r in res["rows"] if r["case"] == "statistics"}
    assert stats[True]["M"] == 1100 >= 1024  # the blocked form applies from GRAM_BLOCKS_FROM features on
    assert stats[True]["trace"] == pytest.approx(stats[False]["trace"], rel=1e-5)
    closed = {r["shift_rows"]: r for r in res["rows"] if r["case"] == "closed_over"}
    assert set(closed) == {255, 500} and not closed[255]["slow_folding_warning"] and closed[255]["programs"] >= 1
    assert res["command"] == "python benchmarks/perf_features.py --quick --threads 1"
