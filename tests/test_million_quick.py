"""benchmarks/million.py --quick: the streamed eigen route, its CG twin, Falkon (when importable) and
scikit-learn on the same generated rows; the selection is the grid's minimum and the routes agree."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(os.environ.get("JAXMTL_SKIP_REPRO") == "1", reason="JAXMTL_SKIP_REPRO=1")
def test_quick_run_selects_from_the_whole_grid(tmp_path):
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path), "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "million.py"), "--quick", "--large-M", "500",
                           "--falkon-lambdas", "3", "--data-dir", str(tmp_path / "rows")], cwd=ROOT,
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads((tmp_path / "million_quick.json").read_text())
    X = np.load(tmp_path / "rows" / "X_train.npy", mmap_mode="r")
    assert X.shape == (10_000, 28) and X.dtype == np.float32  # rows written to memory-mapped files
    rows = {(r["method"], r["M"]): r for r in res["rows"]}
    ours = rows[("jaxmtl", 200)]
    assert "error" not in ours, ours.get("error")
    assert ours["passes_over_rows"] == 3 and ours["grid_points"] == 20 * 6 + 20 * 8
    grid = np.asarray(ours["val_mse_grid"]["best_per_omega"])
    if ours["selected"]["family"] == "common_similarity":  # the selected point is the grid's minimum
        assert ours["selected"]["val_mse"] == pytest.approx(grid.min(), rel=1e-6)
    else:
        assert ours["selected"]["val_mse"] <= grid.min() * (1 + 1e-6)
    # the CG route (Falkon's preconditioner, ω = 0) and scikit-learn reach the same error
    cg, sk = rows[("jaxmtl-cg", 500)], rows[("sklearn", 200)]
    assert rows[("jaxmtl", 500)]["test_rmse"] <= 1.02 * cg["test_rmse"] and ours["test_rmse"] <= 1.03 * sk["test_rmse"]
    # the validation pass: by the rows' statistics where the grid has 2M coefficient columns or more
    # (20 λ × 6 ω × 8 outputs = 960 ≥ 400), by the path's predictions below (960 < 1000)
    assert ours["route"].endswith("by statistics") and rows[("jaxmtl", 500)]["route"].endswith("by predictions")
    both = rows[("jaxmtl", 500)]  # the statistics' pass timed beside it gives the same losses
    assert both["validation_by_statistics_s"] > 0 and both["validation_losses_max_rel_diff"] < 5e-3
    est = rows[("estimator", 500)]  # the estimator at the same M: its route from the cost model, the same error
    assert est["route_taken"] in ("eigen", "cg") and est["test_rmse"] <= 1.02 * rows[("jaxmtl", 500)]["test_rmse"]
    falkon = rows[("falkon", 200)]
    if "fits" in falkon:  # Falkon installed: same centres, same λ: the same Nyström ridge
        assert ours["test_rmse"] <= 1.01 * falkon["best_test_rmse"]
    else:
        assert falkon["not_available"]
    # --add N:M measures both of jaxmtl's routes and Falkon at one more size and merges them
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "million.py"), "--quick", "--add", "10000:250",
                           "--data-dir", str(tmp_path / "rows")], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    merged = json.loads((tmp_path / "million_quick.json").read_text())
    added = {(r["method"], r["M"]): r for r in merged["rows"]}
    assert {("jaxmtl", 250), ("jaxmtl-cg", 250), ("falkon", 250)} <= added.keys()
    assert len(merged["rows"]) == len(res["rows"]) + 3 and merged["merged_runs"][-1]["command"].endswith("--add 10000:250")
    assert added[("jaxmtl", 250)]["test_rmse"] <= 1.02 * added[("jaxmtl-cg", 250)]["test_rmse"]
    target = merged["targets"]["n=10000,M=250"]  # the CG route beside the same Falkon fit, where Falkon ran
    assert target["cg_s"] == added[("jaxmtl-cg", 250)]["seconds_to_model"]
    if "falkon_one_fit_s" in target:
        assert target["cg_time_met"] == (target["cg_s"] < target["falkon_one_fit_s"])
    else:
        assert "cg_time_met" not in target and added[("falkon", 250)]["not_available"]
    # --rerun METHOD:N:M measures that one row again and leaves every other row as it was
    rerun = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "million.py"), "--quick", "--rerun",
                            "jaxmtl-cg:10000:250", "--data-dir", str(tmp_path / "rows")], cwd=ROOT, capture_output=True,
                           text=True, timeout=900, env=env)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    again = json.loads((tmp_path / "million_quick.json").read_text())
    changed = [(a["method"], a["M"]) for a, b in zip(again["rows"], merged["rows"]) if a != b]
    assert changed == [("jaxmtl-cg", 250)] and len(again["rows"]) == len(merged["rows"])
    assert again["merged_runs"][-1]["command"].endswith("--rerun jaxmtl-cg:10000:250")
    missing = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "million.py"), "--quick", "--rerun", "jaxmtl:1:2",
                              "--data-dir", str(tmp_path / "rows")], cwd=ROOT, capture_output=True, text=True,
                             timeout=300, env=env)
    assert missing.returncode == 1 and "no row 'jaxmtl:1:2'" in missing.stderr and "jaxmtl-cg:10000:250" in missing.stderr

    # --pair wants a Falkon row tuned on at least 5 λ (the one --add wrote has 2)
    unpaired = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "million.py"), "--quick", "--pair", "10000:250",
                               "--data-dir", str(tmp_path / "rows")], cwd=ROOT, capture_output=True, text=True,
                              timeout=300, env=env)
    assert unpaired.returncode == 1 and "no Falkon row with a tuned λ at n = 10000, M = 250" in unpaired.stderr

    badpair = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "million.py"), "--quick", "--pair", "10000"],
                             cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert badpair.returncode == 2 and "--pair takes N:M[,N:M]" in badpair.stderr and "'10000'" in badpair.stderr

    bad = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "million.py"), "--quick", "--add", "10000"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300, env=env)
    assert bad.returncode == 2 and "--add takes N:M" in bad.stderr and "'10000'" in bad.stderr

    for extra, says in ((["--rerun", "jaxmtl", "--lambda-indices", "3"], "--lambda-indices goes with --rerun falkon:N:M"),
                        (["--rerun", "falkon:10:2", "--lambda-indices", "25"], "indices into the 20-λ grid (0 to 19)")):
        refused = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "million.py"), "--quick", *extra], cwd=ROOT,
                                 capture_output=True, text=True, timeout=300, env=env)
        assert refused.returncode == 2 and says in refused.stderr, refused.stderr[-2000:]


def test_runs_apart_follows_the_fit_compared():
    """The tables say "measured in another run" unless jaxmtl's row and the Falkon fit it is compared
    with come from one command (a ``--pair`` run's refit at the tuned λ counts as Falkon's)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    sys.path.insert(0, str(ROOT / "scripts"))
    from _large_scale_sections import _runs_apart
    from million import compare

    fits = [{"lambda": lam, "fit_s": 5.0 + i, "val_rmse": [0.9, 0.5, 0.6, 0.7, 0.8][i], "test_rmse": 0.6}
            for i, lam in enumerate([1e-7, 1e-6, 1e-5, 1e-4, 1e-3])]
    rows = [{"method": "jaxmtl", "n": 10, "M": 2, "seconds_to_model": 6.5, "test_rmse": 0.59, "peak_rss_mb": 1.0},
            {"method": "falkon", "n": 10, "M": 2, "fits": fits, "best_test_rmse": 0.6, "peak_rss_mb": 2.0}]
    res = {"command": "python benchmarks/million.py", "rows": rows, "targets": compare(rows)}
    t = res["targets"]["n=10,M=2"]
    assert t["falkon_one_fit_s"] == 6.0 and not t["time_met"] and _runs_apart(res, 10, 2) == ""  # one run
    rows[0]["command"] = pair = "python benchmarks/million.py --pair 10:2"
    res["targets"] = compare(rows)
    assert "another run" in _runs_apart(res, 10, 2)
    rows[1]["paired_fits"] = [{"lambda": 1e-5, "fit_s": 4.0, "val_rmse": 0.5, "test_rmse": 0.6, "repeat_s": [4.0],
                               "command": pair}]  # not at the tuned λ
    res["targets"] = compare(rows)
    assert "another run" in _runs_apart(res, 10, 2) and res["targets"]["n=10,M=2"]["falkon_one_fit_s"] == 6.0
    rows[1]["paired_fits"].append({**rows[1]["paired_fits"][0], "lambda": 1e-6, "fit_s": 7.0, "repeat_s": [7.0]})
    res["targets"] = compare(rows)  # a slower refit: the tuning run's fit is compared, from another run
    t = res["targets"]["n=10,M=2"]
    assert "another run" in _runs_apart(res, 10, 2) and t["falkon_one_fit_s"] == 6.0
    assert t["falkon_fit_s_in_tuning_run"] == 6.0 and t["falkon_tuned_lambda"] == 1e-6  # the tuning is the grid's
    rows[1]["paired_fits"][1].update(fit_s=5.0, repeat_s=[5.0])  # a faster refit: compared, from jaxmtl's run
    rows[0]["seconds_to_model"] = 4.5
    res["targets"] = compare(rows)
    t = res["targets"]["n=10,M=2"]
    assert _runs_apart(res, 10, 2) == "" and t["falkon_one_fit_s"] == 5.0 and t["time_met"]
