"""Figures quoted in the prose of README.md and the documentation pages agree with the recorded results.

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


def test_defaults_page_sarcos_figures_match_the_recorded_run():
    """The SARCOS test-MSE ratio and wall seconds quoted for the robot-arm part are the recorded
    run's, and the CPU seconds at n = 3000, d = 7 are the fit-cost table's."""
    res = json.loads((ROOT / "benchmarks/results/defaults_vs_tuned_robot_arm.json").read_text())
    (row,) = res["results"]["robot_arm"]["rows"]
    m = _quoted("docs/defaults.md", r"both targets are met: the accuracy \(([\d.]+) ×\) and the time, a default fit "
                                    r"taking\s+a median (\d+) s against (\d+) s for the shared search \(([\d.]+) ×")
    assert float(m.group(1)) == round(row["ours_smse"] / row["per_output_smse"], 3)
    assert [int(m.group(2)), int(m.group(3))] == [round(row["ours_fit_s"]), round(row["tuned_fit_s"])]
    assert float(m.group(4)) == round(row["ours_fit_s"] / row["tuned_fit_s"], 2)
    table = json.loads((ROOT / "benchmarks/results/default_fit_times_outputs.json").read_text())
    (cell,) = [r for r in table["rows"] if (r["n"], r["d"]) == (3000, 7)]
    m = _quoted("docs/defaults.md", r"n = 3000 and d = 7 the default's first fit costs ([\d.]+) CPU s against "
                                    r"([\d.]+) for seven per-output searches \(([\d.]+)\)")
    assert [float(g) for g in m.groups()] == [round(cell["default"]["first"]["cpu_s"], 1),
                                              round(cell["baseline"]["first"]["cpu_s"], 1), round(cell["first_ratio"], 2)]


def test_performance_page_gpu_paragraph_matches_the_recorded_run():
    res = json.loads((ROOT / "benchmarks/results/gpu_suite.json").read_text())
    t = res["targets"]
    krr = {r["peer"]: r for r in t["c_peers"]["rows"] if r["task"].startswith("kernel")}
    page = "docs/performance.md"
    m = _quoted(page, r"streams the Gram at (\d+) % of the HBM peak")
    assert int(m.group(1)) == round(t["a_bandwidth"]["percent_of_peak"])
    at = {r["columns"]: r["percent_of_gemm"] for r in t["b_batched_flops"]["rows"]}
    m = _quoted(page, r"reaches (\d+) % of the GEMM rate with 1024 columns \(64 columns, one ω grid of 8 outputs, "
                      r"is a thin product: (\d+) %\)")
    assert [int(g) for g in m.groups()] == [round(at[1024]), round(at[64])]
    m = _quoted(page, r"is ([\d.]+)× faster than himalaya's `torch_cuda` backend and ([\d.]+)× faster than scikit-learn")
    assert [float(g) for g in m.groups()] == [round(krr["himalaya.KernelRidge[torch_cuda]"]["peer_over_ours"], 1),
                                              round(krr["sklearn.KernelRidge (CPU)"]["peer_over_ours"], 1)]
    m = _quoted(page, r"but ([\d.]+)× slower than one Cholesky per λ in plain PyTorch \(([\d.]+)× than GPyTorch's Cholesky\)")
    assert [float(g) for g in m.groups()] == [round(1 / krr["torch.linalg.cholesky per λ (CUDA)"]["peer_over_ours"], 1),
                                              round(1 / krr["gpytorch solve (Cholesky)"]["peer_over_ours"], 1)]
    cg = krr["gpytorch solve (CG)"]
    m = _quoted(page, r"([\d.]+)× worse in test MSE \(([\d.]+) against ([\d.]+):")
    assert float(m.group(1)) == round(cg["peer_best_test_mse"] / cg["ours_best_test_mse_highest_precision"], 1)
    assert [float(m.group(2)), float(m.group(3))] == [round(cg["peer_best_test_mse"], 4),
                                                      round(cg["ours_best_test_mse_highest_precision"], 4)]
    chol = krr["torch.linalg.cholesky per λ (CUDA)"]
    m = _quoted(page, r"Our best test MSE, ([\d.]+), is ([\d.]+) % above the peers' ([\d.]+) with")
    assert float(m.group(1)) == round(chol["ours_best_test_mse"], 5)
    assert float(m.group(3)) == round(chol["peer_best_test_mse"], 5)
    assert float(m.group(2)) == round(100 * (chol["ours_best_test_mse"] / chol["peer_best_test_mse"] - 1), 1)
    m = _quoted(page, r"gives ([\d.]+), the peers' figure")
    assert float(m.group(1)) == round(chol["ours_best_test_mse_highest_precision"], 6)
    m = _quoted(page, r"\(e\) prices TF32 at ([\d.]+) % of")
    assert float(m.group(1)) == round(100 * t["e_precision"]["tf32"]["max_rel_loss_error_vs_float64"], 1)
    svm = t["d_svm"]["rows"][0]
    m = _quoted(page, r"The SMO solver is (\d+)× faster than libsvm on the host at n = ([\d ]+) with the same test error")
    assert int(m.group(1)) == round(1 / svm["ours_over_peer"]) and int(m.group(2).replace(" ", "")) == svm["n"]
    assert svm["ours_test_error"] == svm["peer_test_error"]


def test_scale_page_million_paragraph_matches_the_recorded_runs():
    cpu = json.loads((ROOT / "benchmarks/results/million.json").read_text())
    gpu = json.loads((ROOT / "benchmarks/results/million_gpu.json").read_text())
    ours = {r["n"]: r for r in cpu["rows"] if r["method"] == "jaxmtl" and r["M"] == 2000}
    sk = {r["n"]: r for r in cpu["rows"] if r["method"] == "sklearn"}
    page = "docs/scale.md"
    big, small = ours[1_000_000], ours[10_000]
    m = _quoted(page, r"\(([\d.]+) s of the ([\d.]+) s at 10⁶ rows, M = 2000\)")
    assert [float(x) for x in m.groups()] == [round(big["train_pass_s"]), round(big["seconds_to_model"])]
    m = _quoted(page, r"\(([\d.]+) s of the ([\d.]+) s at 10⁴ rows, ([\d.]+) s of it the predictions of the 100 000 validation")
    fixed = small["seconds_to_model"] - small["train_pass_s"]
    assert [float(x) for x in m.groups()] == [round(fixed, 1), round(small["seconds_to_model"], 1),
                                              round(small["validation_pass_s"], 1)]
    assert all(r["selected"]["family"] == "per_output" for r in ours.values())  # "picked each output's own λ"
    falkon = {r["n"]: r for r in cpu["rows"] if r["method"] == "falkon" and r["M"] == 2000}
    targets = cpu["targets"]
    tuned = {n: targets[f"n={n},M=2000"] for n in (10_000, 100_000, 1_000_000)}
    assert all(t["falkon_one_fit_is"].startswith("the fit at its tuned λ") for t in tuned.values())
    # the tuning run's fit at the tuned λ (its test RMSE is quoted); the time compared is the faster of it
    # and its refit beside jaxmtl's rows (--pair)
    fit_at = {n: next(f for f in falkon[n]["fits"] if f["lambda"] == tuned[n]["falkon_tuned_lambda"])
              for n in tuned}
    one_fit = {n: tuned[n]["falkon_one_fit_s"] for n in tuned}
    assert all(one_fit[n] == min(fit_at[n]["fit_s"],
                                 next(f["fit_s"] for f in falkon[n]["paired_fits"]
                                      if f["lambda"] == tuned[n]["falkon_tuned_lambda"])) for n in tuned)
    slow = [f["fit_s"] for f in falkon[100_000]["fits"] if f["lambda"] <= 8.9e-7]
    m = _quoted(page, r"at\s+10⁵ rows, M = 2000: ([\d.]+)–([\d.]+) s for λ ≤ 8.9e-07, ([\d.]+) s from 2.1e-06 on, in the "
                      r"tuning run\)")
    assert [float(x) for x in m.groups()] == [round(min(slow)), round(max(slow)), round(fit_at[100_000]["fit_s"])]
    assert falkon[10_000]["lambdas_fitted"] == 20 and falkon[100_000]["lambdas_fitted"] == 8
    assert all(tuned[n]["falkon_tuned_interior"] for n in tuned)
    m = _quoted(page, r"grid, 280 models, takes ([\d.]+) s to the selected model and ([\d.]+) GB; tuned Falkon's one\s+"
                      r"fit, λ = ([\d.e+-]+), takes ([\d.]+) s and ([\d.]+) GB: the grid costs ([\d.]+) of one tuned fit "
                      r"\(\*\*(met|not met)\*\*")
    assert [float(x) for x in m.groups()[:-1]] == [
        round(big["seconds_to_model"]), round(big["peak_rss_mb"] / 1000, 1), float(f"{tuned[1_000_000]['falkon_tuned_lambda']:.1e}"),
        round(one_fit[1_000_000]), round(falkon[1_000_000]["peak_rss_mb"] / 1000, 1),
        round(big["seconds_to_model"] / one_fit[1_000_000], 2)]
    assert big["grid_points"] == 280 and m.group(7) == ("met" if tuned[1_000_000]["time_met"] else "not met")
    m = _quoted(page, r"test RMSE is ([\d.]+) against Falkon's ([\d.]+)\. At 10⁵ rows the grid takes ([\d.]+) s\s+"
                      r"against one tuned fit's ([\d.]+) s \(test RMSE ([\d.]+) against ([\d.]+)\), at 10⁴ rows ([\d.]+) s "
                      r"against ([\d.]+) s \(([\d.]+)\s+against ([\d.]+)\)")
    mid = ours[100_000]
    assert [float(x) for x in m.groups()] == [
        round(big["test_rmse"], 3), round(fit_at[1_000_000]["test_rmse"], 3), round(mid["seconds_to_model"]),
        round(one_fit[100_000]), round(mid["test_rmse"], 3), round(fit_at[100_000]["test_rmse"], 3),
        round(small["seconds_to_model"], 1), round(one_fit[10_000], 1), round(small["test_rmse"], 3),
        round(fit_at[10_000]["test_rmse"], 3)]
    m = _quoted(page, r"at 10⁴ rows the grid costs ([\d.]+) tuned fits \(\*\*(met|not met)\*\*\)")
    assert float(m.group(1)) == round(small["seconds_to_model"] / one_fit[10_000], 2)
    assert m.group(2) == ("met" if tuned[10_000]["time_met"] else "not met")
    m = _quoted(page, r"took ([\d.]+)–([\d.]+) s against the predictions' ([\d.]+)–([\d.]+) s, and the two passes' "
                      r"losses differ by at most ([\d.]+) %")
    stats = [r["validation_by_statistics_s"] for r in ours.values()]
    preds = [r["validation_pass_s"] for r in ours.values()]
    assert [float(x) for x in m.groups()[:4]] == [round(min(stats), 1), round(max(stats), 1), round(min(preds), 1),
                                                  round(max(preds), 1)]
    assert max(r["validation_losses_max_rel_diff"] for r in ours.values()) <= float(m.group(5)) / 100
    # the refits beside jaxmtl's rows: their times and models against the tuning run's, jaxmtl's spread
    refit = {n: next(f for f in falkon[n]["paired_fits"] if f["lambda"] == tuned[n]["falkon_tuned_lambda"]) for n in tuned}
    m = _quoted(page, r"its fits\s+took ([\d.]+)–([\d.]+) s at 10⁴ rows \(([\d.]+) s in the tuning run\), ([\d.]+)–([\d.]+) s at "
                      r"10⁵ \(([\d.]+) s\), ([\d.]+) s at 10⁶\s+\(([\d.]+) s\)")
    assert [float(x) for x in m.groups()] == [
        round(min(refit[10_000]["repeat_s"]), 2), round(max(refit[10_000]["repeat_s"]), 2), round(fit_at[10_000]["fit_s"], 1),
        round(min(refit[100_000]["repeat_s"]), 1), round(max(refit[100_000]["repeat_s"]), 1),
        round(fit_at[100_000]["fit_s"], 1), round(refit[1_000_000]["fit_s"]), round(fit_at[1_000_000]["fit_s"])]
    m = _quoted(page, r"validation RMSE\s+([\d.]+) at 10⁵ rows \(([\d.]+)\), ([\d.]+) at 10⁶ \(([\d.]+)\)")
    assert [float(x) for x in m.groups()] == [round(v, 3) for v in (
        refit[100_000]["val_rmse"], fit_at[100_000]["val_rmse"], refit[1_000_000]["val_rmse"], fit_at[1_000_000]["val_rmse"])]
    m = _quoted(page, r"in times within (\d+) % of each other \(([\d.]+)–([\d.]+) s at 10⁴ rows,\s+([\d.]+)–([\d.]+) s at 10⁵\)")
    spread = [ours[n]["repeat_s"] for n in (10_000, 100_000)]
    assert [float(x) for x in m.groups()[1:]] == [round(f(s), 2) for s in spread for f in (min, max)]
    assert max(max(s) / min(s) - 1 for s in spread) <= float(m.group(1)) / 100
    m = _quoted(page, r"the grid would cost ([\d.]+) fits at 10⁴ rows, ([\d.]+) at 10⁵ and ([\d.]+) at 10⁶")
    assert [float(x) for x in m.groups()] == [round(ours[n]["seconds_to_model"] / refit[n]["fit_s"], 2) for n in tuned]
    m = _quoted(page, r"without converging \(at 10⁶ rows ([\d.]+) s and a test RMSE of ([\d.]+) at best\)")
    untuned = [f for f in falkon[1_000_000]["fits"] if f is not fit_at[1_000_000]]
    assert [float(x) for x in m.groups()] == [round(min(f["fit_s"] for f in untuned)),
                                              round(min(f["test_rmse"] for f in untuned), 2)]
    m = _quoted(page, r"\((\d+) s for the eight at 10⁵\s+rows\)")
    assert float(m.group(1)) == round(sum(f["fit_s"] for f in falkon[100_000]["fits"]))
    m = _quoted(page, r"in float64 \(([\d.]+) GB at 10⁵ rows\)")
    assert float(m.group(1)) == round(sk[100_000]["peak_rss_mb"] / 1000, 1)
    m = _quoted(page, r"gives a test RMSE within ([\d.]+) % of ours there")
    assert float(m.group(1)) == round(100 * abs(sk[100_000]["test_rmse"] / ours[100_000]["test_rmse"] - 1), 1)
    rows = {(r["method"], r["M"]): r for r in gpu["rows"]}
    g = {method: rows[method, 20_000] for method in ("jaxmtl", "torch")}
    m = _quoted(page, r"takes ([\d.]+) s to the selected model, ([\d.]+) s of it the training pass")
    assert [float(x) for x in m.groups()] == [round(g["jaxmtl"]["seconds_to_model"]), round(g["jaxmtl"]["train_pass_s"])]
    m = _quoted(page, r"takes ([\d.]+) s but its float32 normal equations lose the small λ, and its selected model's "
                      r"test RMSE is ([\d.]+) against our ([\d.]+)\.")
    assert [float(x) for x in m.groups()] == [round(g["torch"]["seconds_to_model"]), round(g["torch"]["test_rmse"], 3),
                                              round(g["jaxmtl"]["test_rmse"], 3)]
    small, large = rows["jaxmtl", 10_000], rows["jaxmtl", 30_000]
    m = _quoted(page, r"With M = 10 000 the route takes ([\d.]+) s \(test RMSE ([\d.]+)\), with M = 30 000 ([\d.]+) s\s+"
                      r"\(([\d.]+)\): the training pass grows with M² \(([\d.]+) s to ([\d.]+) s for 9 times M²\)")
    assert [float(x) for x in m.groups()] == [round(small["seconds_to_model"]), round(small["test_rmse"], 4),
                                              round(large["seconds_to_model"]), round(large["test_rmse"], 4),
                                              round(small["train_pass_s"]), round(large["train_pass_s"])]
    cg = rows["jaxmtl-cg", 30_000]
    m = _quoted(page, r"The CG route at M = 30 000 \(Falkon's preconditioner, 20 steps, ω = 0\) takes ([\d.]+) s but reaches "
                      r"a test RMSE of ([\d.]+): in float32, 20 steps do not reach the small λ the data want \(it selects "
                      r"λ = ([\d.e+-]+)\)")
    assert [float(x) for x in m.groups()] == [round(cg["seconds_to_model"]), round(cg["test_rmse"], 3),
                                              float(f"{cg['selected']['lambda']:.1e}")]
    assert cg["test_rmse"] > large["test_rmse"] and cg["seconds_to_model"] < large["seconds_to_model"]
    columns, M = len(gpu["grid"]["lambdas"]) * gpu["data"]["outputs"], 30_000  # the first attempt's factors
    m = _quoted(page, r"(\d+) of them here\s+\(about ([\d.]+)·10¹⁵ flops and (\d+) GB in float32\)")
    assert [float(x) for x in m.groups()] == [columns, round(columns * M**3 / 3e15, 1), round(columns * M**2 * 4 / 1e9)]


def test_reproductions_page_states_how_many_two_sided_tests_each_script_makes_and_their_chance_failures():
    """Each script's count of two-sided 2-SE tests on docs/reproductions.md equals an explicit count over its
    recorded claims (one per figure compared with a published mean, one per paired two-sided comparison, one
    per size of a paired comparison made at every size), and
    the expected chance failures are that count times P(|Z| > 2)."""
    from math import erf, sqrt

    text = (ROOT / "docs" / "reproductions.md").read_text()
    p_two_sided = 1 - erf(2 / sqrt(2))
    for name in ("repro_ida", "repro_school", "repro_ida_svm", "repro_toy"):
        claims = json.loads((ROOT / f"benchmarks/results/{name}.json").read_text())["claims"]
        n = 0
        for c in claims:
            if c.get("kind") == "sanity" or c["status"].startswith("skipped"):
                continue
            if "SE_paper" in c["tolerance"]:
                n += len(c["figures"])
            elif c["tolerance"].startswith("paired, |mean difference| ≤ 2·SE"):
                n += 1
            elif c["tolerance"].startswith("paired over the runs, two-sided: |mean difference| ≤ 2·SE at every size"):
                n += len(c["ours"])
        section = text.split(f"`python benchmarks/{name}.py`")[1].split("\n### ")[0]
        assert f" {n} two-sided tests at 2 standard errors" in section, name
        assert f"about {n * p_two_sided:.1f} of them" in section, name


def test_scale_page_small_data_ratios_match_the_recorded_run():
    rows = {(r["n"], r["problem"]): r
            for r in json.loads((ROOT / "benchmarks/results/approximate_defaults_quick.json").read_text())["rows"]}
    page = "docs/scale.md"
    r2 = lambda x: round(x, 2)  # noqa: E731
    m = _quoted(page, r"the ratio to `VectorValuedRegressor\(\)` is ([\d.]+) at n = 100 and ([\d.]+) at n = 240")
    assert [float(g) for g in m.groups()] == [r2(rows[(n, "noisy")]["ratio_vs_exact"]) for n in (100, 240)]
    m = _quoted(page, r"`Nystroem` \+ `RidgeCV` with a γ grid ([\d.]+) and ([\d.]+), without a `GridEdgeWarning`")
    assert [float(g) for g in m.groups()] == [r2(rows[(n, "noisy")]["ratio_vs_sklearn"]) for n in (100, 240)]
    assert all(rows[(n, "noisy")]["approximate_edge_warnings"] == 0 for n in (100, 240))
    m = _quoted(page, r"the ratio to `RidgeCV`, whose α reaches 10⁻⁸, is ([\d.]+) \(n = 100\) and ([\d.]+) \(n = 240\)")
    assert [float(g) for g in m.groups()] == [r2(rows[(n, "noiseless")]["ratio_vs_sklearn"]) for n in (100, 240)]


def test_scale_page_m_10000_paragraph_matches_the_recorded_runs():
    """docs/scale.md's paragraph on M = 10 000 quotes million.json's rows at that M, 10⁵ and 10⁶ rows: at
    10⁵ rows, every row on the processor of Falkon's fits, against Falkon at the λ tuned there; at 10⁶
    rows (that λ not fitted there) against Falkon's fastest fit and against its fit on the processor of
    jaxmtl's rows; and the estimators' row with the route its cost model took."""
    res = json.loads((ROOT / "benchmarks/results/million.json").read_text())
    page = (ROOT / "docs/scale.md").read_text()
    text = page[page.index("**M = 10 000 on the CPU**"):page.index("On the GPU (one H200")]
    quoted = []
    for n, word in ((100_000, "tuned fits"), (1_000_000, "such fits")):
        rows = {r["method"]: r for r in res["rows"] if (r.get("n"), r.get("M")) == (n, 10_000)}
        ours, cg, falkon = rows["jaxmtl"], rows["jaxmtl-cg"], rows["falkon"]
        target = res["targets"][f"n={n},M=10000"]
        if n == 100_000:  # tuned on fits of one machine, the machine of every row
            assert target["falkon_one_fit_is"] == "the fit at its tuned λ" and target["falkon_tuned_interior"]
            est = rows["estimator"]
            assert {f["cpu_model"] for f in falkon["fits"]} == {r["cpu_model"] for r in (ours, cg, est)}
            fit = next(f for f in falkon["fits"] if f["lambda"] == target["falkon_tuned_lambda"])
            times = [f["fit_s"] for f in falkon["fits"]]
            quoted += [f"{est['seconds_to_model']:.0f} s", f"{est['test_rmse']:.3f}",
                       f"{est['peak_rss_mb'] / 1000:.1f} GB", f"{est['seconds_to_model'] / fit['fit_s']:.2f} tuned fits",
                       f"takes the {est['route_taken'].upper()} route", f"{target['falkon_tuned_lambda']:.1e}",
                       f"({est['programs_compiled']} programs; a second fit {est['warm_fit_s']:.0f} s)",
                       f"{min(times):.0f}–{max(times):.0f} s at every λ", f"over {len(times)} λ",
                       f"({sum(times):.0f} s for the"]
        else:  # the tuned λ not fitted at 10⁶ rows: Falkon's fastest fit there, also its best test RMSE
            assert target["falkon_one_fit_is"] == "the fastest fit" and target["falkon_tuned_test_rmse"] is None
            fit = min(falkon["fits"], key=lambda f: f["fit_s"])
            assert fit["test_rmse"] == target["falkon_best_test_rmse"]
            est = rows["estimator"]
            # and against Falkon's fit on the processor of jaxmtl's rows (its slowest, not converged)
            same = [f for f in falkon["fits"] if f["cpu_model"] == ours["cpu_model"]]
            assert len(same) == 1 and {r["cpu_model"] for r in (cg, est)} == {ours["cpu_model"]}
            quoted += [f"{fit['lambda']:.1e}", f"{est['seconds_to_model']:.0f} s", f"{est['test_rmse']:.3f}",
                       f"{est['peak_rss_mb'] / 1000:.1f} GB", f"({est['programs_compiled']} programs)",
                       f"takes the {est['route_taken'].upper()} route", f"{est['seconds_to_model'] / fit['fit_s']:.2f} such fits",
                       f"λ = {same[0]['lambda']:.1e}", f"{same[0]['fit_s']:.0f} s", f"test RMSE {same[0]['test_rmse']:.1f}",
                       f"eigen route takes {ours['seconds_to_model'] / same[0]['fit_s']:.2f}",
                       f"CG route {cg['seconds_to_model'] / same[0]['fit_s']:.2f}",
                       f"estimator {est['seconds_to_model'] / same[0]['fit_s']:.2f} fits"]
        assert target["falkon_one_fit_s"] == fit["fit_s"]
        quoted += [f"{ours['seconds_to_model']:.0f} s", f"{ours['test_rmse']:.3f}", f"{ours['peak_rss_mb'] / 1000:.1f} GB",
                   f"{fit['fit_s']:.0f} s", f"{fit['test_rmse']:.3f}", f"{falkon['peak_rss_mb'] / 1000:.1f} GB",
                   f"{cg['seconds_to_model']:.0f} s", f"{cg['test_rmse']:.3f}", f"{cg['peak_rss_mb'] / 1000:.1f} GB",
                   f"{ours['train_pass_s']:.0f} s", f"{ours['validation_pass_s']:.0f} s", f"{ours['whitening_s']:.0f} s",
                   f"{ours.get('path_coefficients_s', ours['selection_s']):.0f} s",  # the eigendecomposition's stage
                   f"{ours['seconds_to_model'] / fit['fit_s']:.2f} {word}", f"{cg['seconds_to_model'] / fit['fit_s']:.2f} {word}"]
    missing = [q for q in quoted if q not in " ".join(text.split())]
    assert not missing, missing


def test_performance_lapack_threads_table_matches_the_recorded_run():
    rows = json.loads((ROOT / "benchmarks/results/lapack_threads.json").read_text())["rows"]
    ms = {(r["processes"], r["openblas_threads"] == "1"): r["ms"] for r in rows}
    text = (ROOT / "docs/performance.md").read_text()
    table = text[text.index("| n | eigh, alone"):text.index("On this machine one LAPACK thread")]
    lines = [ln for ln in table.splitlines() if re.match(r"\| \d+ \|", ln)]
    assert len(lines) == 4
    for line in lines:
        n, *cells = [c.strip() for c in line.strip("|").split("|")]
        for (op, processes), cell in zip([(op, p) for op in ("eigh", "cholesky") for p in (1, 2)], cells):
            quoted = [float(v) for v in cell.split("/")]  # default / one thread, as rounded on the page
            recorded = [ms[(processes, one)][f"{op}/{n}"] for one in (False, True)]
            assert quoted == pytest.approx(recorded, rel=0.06), (n, op, processes)


def test_performance_feature_costs_match_the_recorded_run():
    """docs/performance.md quotes benchmarks/results/perf_features.json: the blocked ΦᵀΦ against the plain
    product, and a closed-over predictor with every fitted row sorted against 255 of them."""
    res = json.loads((ROOT / "benchmarks/results/perf_features.json").read_text())
    stats = {(r["M"], r["blocked"]): r["median_s"] for r in res["rows"] if r["case"] == "statistics"}
    m = _quoted("docs/performance.md", r"([\d.]+) → ([\d.]+) s with 2000 centres, ([\d.]+) → ([\d.]+) s with 10 000 \(an")
    assert [float(x) for x in m.groups()] == [round(stats[(M, b)], 2 if M == 2000 else 1)
                                              for M in (2000, 10_000) for b in (False, True)]
    closed = {r["shift_rows"] == 255: r for r in res["rows"] if r["case"] == "closed_over"}
    m = _quoted("docs/performance.md", r"the first call took ([\d.]+) s, nearly all of it compiling \(folding\), and XLA "
                                       r"printed its slow-constant-folding warning; with 255 rows, ([\d.]+) s and no warning\. "
                                       r"`predict` on 10 rows took ([\d.]+) ms against ([\d.]+) ms")
    assert [float(x) for x in m.groups()] == [round(closed[False]["first_call_s"], 2), round(closed[True]["first_call_s"], 2),
                                              round(1e3 * closed[False]["median_s"], 1), round(1e3 * closed[True]["median_s"], 1)]
    assert closed[False]["slow_folding_warning"] and not closed[True]["slow_folding_warning"]
    assert closed[False]["compile_s"] > 0.9 * closed[False]["first_call_s"]  # "nearly all of it compiling"
