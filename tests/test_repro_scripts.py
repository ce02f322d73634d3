"""The reproduction scripts check real paper claims, even in --quick mode, and can fail.

Each script runs with --quick (a reduced but meaningful problem) and must pass at least one paper
claim (not only the finiteness checks); every claim records the paper's statement, the figures
and the tolerance. The claim helpers are tested on figures where the answer is known, a failing
claim not reproduced makes a script exit non-zero (one better than published does not), and the
README generator counts reproduced, better than published and not reproduced apart, listing the
last two openly.

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
    assert all(c["verdict"] == _repro.verdict(c) for c in claims), claims
    assert {c["verdict"] for c in claims} <= {_repro.REPRODUCED, _repro.BETTER, _repro.SKIPPED}, claims
    paper = [c for c in claims if c["kind"] == "paper"]
    assert paper and all(c["paper"] not in (None, "") and c["ours"] not in (None, "") and c["tolerance"]
                         for c in paper), paper
    assert any(c["verdict"] in (_repro.REPRODUCED, _repro.BETTER) for c in paper), "the quick run checks no paper claim"


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
    assert [c["verdict"] for c in claims.items] == [_repro.NOT_REPRODUCED, _repro.SKIPPED]
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
    assert "**not reproduced** — School: ν-method reproduced. paper: 31 ± 3 % · ours: 20 % · tolerance: 2 SE" in text
    assert "*Why:* a reason" in text and "finite" not in text
    assert "No full run recorded yet: `python benchmarks/repro_ida.py`" in text


def _figure(ours, paper, tolerance, label=""):
    return {"ours": ours, "paper": paper, "tolerance": tolerance, "label": label}


@pytest.mark.parametrize("direction, figures, expected", [
    ("lower", [_figure(10.5, 11.7, 0.4)], "better than published"),  # error below the paper's beyond the tolerance
    ("lower", [_figure(12.9, 11.7, 0.4)], "not reproduced"),  # error above it
    ("higher", [_figure(34.7, 31.0, 2.1)], "better than published"),  # explained variance above it
    ("higher", [_figure(27.3, 31.0, 2.1)], "not reproduced"),
    ("higher", [_figure(32.0, 31.0, 2.1)], "reproduced"),  # inside the tolerance, either side
    ("lower", [_figure(10.5, 11.7, 0.4, "a"), _figure(25.0, 25.1, 2.0, "b")], "better than published"),
    ("lower", [_figure(10.5, 11.7, 0.4, "a"), _figure(27.8, 25.4, 2.2, "b")], "not reproduced"),  # one worse
    (None, [_figure(0.9, 0.6, 0.2)], "not reproduced"),  # outside with no side that favours us
])
def test_verdict_reads_the_side_of_each_figure_outside_its_tolerance(direction, figures, expected):
    claims = _repro.Claims(quick=False)
    ok = all(abs(f["ours"] - f["paper"]) <= f["tolerance"] for f in figures)  # the check as the scripts state it
    claims.check("a comparison with the paper", ok, paper="p", ours="o", tolerance="t", direction=direction,
                 figures=figures)
    (item,) = claims.items
    assert item["verdict"] == expected == _repro.verdict(item)
    assert item["status"] == ("pass" if ok else "FAIL")
    assert (item in claims.failed) == (expected == "not reproduced")


def test_claims_without_figures_are_reproduced_or_not_and_figures_must_agree_with_the_check():
    claims = _repro.Claims(quick=False)
    claims.check("one-sided: mean − 2·SE > 26.4 %", True, paper="> 26.4 %", ours="34.7 %", tolerance="one-sided",
                 direction="higher")
    claims.check("ν-method < Landweber < Tikhonov", False, paper="ordering", ours="Tikhonov fastest",
                 tolerance="strict")
    assert [c["verdict"] for c in claims.items] == [_repro.REPRODUCED, _repro.NOT_REPRODUCED]
    with pytest.raises(ValueError, match="within their tolerance"):
        claims.check("inconsistent", True, direction="lower", figures=_figure(10.5, 11.7, 0.4))
    with pytest.raises(ValueError, match="direction"):
        claims.check("bad direction", True, direction="smaller")
    # a mean_vs_published result is a figure as it is
    cmp = _repro.mean_vs_published(np.array([10.0, 10.2, 10.4, 10.6]), 11.7, 0.68, 100)
    claims.check("banana", cmp["ok"], direction="lower", figures=cmp)
    assert claims.items[-1]["figures"] == [{"ours": cmp["ours"], "paper": 11.7, "tolerance": cmp["tolerance"]}]
    assert claims.items[-1]["verdict"] == _repro.BETTER


def test_a_claim_better_than_published_does_not_fail_the_script(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_repro, "RESULTS", tmp_path)
    claims = _repro.Claims(quick=False)
    claims.check("error (Table 2)", False, paper="11.7", ours="10.5", tolerance="0.4", direction="lower",
                 figures=_figure(10.5, 11.7, 0.4), explanation="our partitions")
    _repro.finish("repro_fake", SimpleNamespace(quick=False), 0.0, {"p": 1}, {}, {}, {"o": 1}, claims, ["t\n| a |"])
    out = capsys.readouterr().out
    assert "[better than published] error (Table 2)" in out and "why: our partitions" in out
    saved = json.loads((tmp_path / "repro_fake.json").read_text())["claims"][0]
    assert saved["verdict"] == _repro.BETTER and saved["direction"] == "lower"


def test_readme_counts_and_lists_the_three_verdicts_apart(tmp_path, monkeypatch):
    better = {"claim": "EV reproduced", "kind": "paper", "status": "FAIL", "paper": "31", "ours": "34.7",
              "tolerance": "2.1", "direction": "higher", "figures": [_figure(34.7, 31.0, 2.1)]}
    worse = {**better, "claim": "error reproduced", "direction": "lower"}
    ordering = {"claim": "A faster than B", "kind": "paper", "status": "FAIL", "paper": "A < B", "ours": "A > B",
                "tolerance": "strict", "direction": None}
    held = {**ordering, "claim": "A faster than C", "status": "pass"}
    res = {"command": "python benchmarks/repro_school.py", "elapsed_s": 60, "machine": {"cpu_count": 2},
           "tables": [], "claims": [better, worse, ordering, held]}
    (tmp_path / "repro_school.json").write_text(json.dumps(res))
    monkeypatch.setattr(readme, "RESULTS", tmp_path)
    text = readme.reproductions()
    head = text.split("###")[0]
    not_reproduced, better_part = head.split("**Claims better than published**")
    assert "error reproduced" in not_reproduced and "A faster than B" in not_reproduced
    assert "EV reproduced" in better_part and "EV reproduced" not in not_reproduced
    assert "A faster than C" not in head
    assert "1 of 4 claims reproduced, 1 better than published, 2 not reproduced" in head
    assert "- **better than published** — EV reproduced" in text and "- **reproduced** — A faster than C" in text
    assert "| 1 of 4 claims reproduced, 1 better than published, 2 not reproduced |" in readme.summary()


def test_ida_floor_is_the_best_rule_fitted_to_the_test_labels():
    """repro_ida's floor (the smallest test error any rule of the inputs reaches) equals a hand count on a
    small set, and on titanic's 14 distinct inputs the best of all 2^14 labellings, searched exhaustively."""
    from jaxmtl.datasets import load_ida

    ida = _load("repro_ida_under_test", ROOT / "benchmarks" / "repro_ida.py")
    toy = SimpleNamespace(X_test=np.array([[0.0], [0.0], [0.0], [1.0], [1.0], [2.0]]),
                          y_test=np.array([1.0, 1.0, -1.0, -1.0, 1.0, 1.0]))
    assert ida.floor_errors([toy]) == pytest.approx([2 / 6])  # one wrong at 0, one at 1, none at 2
    splits = load_ida("titanic", n_splits=2)
    inputs = np.unique(np.concatenate([sp.X_test for sp in splits]), axis=0)
    assert len(inputs) == 14
    rules = np.where((np.arange(2**14)[:, None] >> np.arange(14)) & 1, 1.0, -1.0)  # every labelling
    for sp, floor in zip(splits, ida.floor_errors(splits)):
        idx = np.argmax((sp.X_test[:, None, :] == inputs[None]).all(-1), axis=1)  # each test point's input
        best = (rules[:, idx] != sp.y_test).mean(axis=1).min()
        assert floor == pytest.approx(best)


def test_the_recorded_runs_read_as_three_verdicts():
    """The committed results: the School and IDA figures above the paper's tolerance on our side are better
    than published; a column with data sets worse (TSVD: breast cancer, titanic) and an ordering between
    methods (the toy Figure 4) are not reproduced; the titanic iterated-Tikhonov figure, below the floor
    no rule reaches on those test sets, is labelled so with the computed floor."""
    def verdicts(name):
        res = json.loads((ROOT / "benchmarks" / "results" / f"{name}.json").read_text())
        return {c["claim"]: _repro.verdict(c) for c in res["claims"]}
    school, ida, toy = verdicts("repro_school"), verdicts("repro_ida"), verdicts("repro_toy")
    assert school["ν-method: explained variance (Table 1) reproduced"] == _repro.BETTER
    assert school["Landweber: explained variance (Table 1) reproduced"] == _repro.BETTER  # 10 repetitions
    # "the three algorithms perform consistently": an equivalence within the paper's 1 point, met
    assert all(v == _repro.REPRODUCED for c, v in school.items() if "perform consistently" in c)
    assert ida["titanic: ν-method test error (Table 2) reproduced"] == _repro.BETTER
    assert ida["breast_cancer: ν-method test error (Table 2) reproduced"] == _repro.NOT_REPRODUCED
    assert ida["landweber: test errors (Table 2, landweber column) reproduced on every dataset"] == _repro.BETTER
    assert ida["tikhonov: test errors (Table 2, tikhonov column) reproduced on every dataset"] == _repro.BETTER
    assert ida["tsvd: test errors (Table 2, tsvd column) reproduced on every dataset"] == _repro.NOT_REPRODUCED
    res = json.loads((ROOT / "benchmarks" / "results" / "repro_ida.json").read_text())
    floor = res["ours"]["titanic"]["extra"]["floor"]
    assert floor["mean"] > 20.2 + 2 * floor["se"]  # the published iterated-Tikhonov 20.20 % lies below it
    why = {c["claim"]: c.get("explanation", "") for c in res["claims"]}
    assert "NO METHOD CAN MEET IT: the published 20.20 % is below" in why[
        "iterated_tikhonov: test errors (Table 2, iterated_tikhonov column) reproduced on every dataset"]
    assert res["protocol"]["paper_partitions"]["image"] == 20 and res["protocol"]["evaluation_partitions"] == 10
    assert toy["Figure 4 (left): Landweber and the ν-method faster than Tikhonov (25 λ), every size"] == \
        _repro.NOT_REPRODUCED


def test_readme_and_performance_tables_match_the_recorded_results():
    """README.md and docs/performance.md quote exactly what benchmarks/results/*.json hold."""
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "readme_results.py"), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, "stale: run python scripts/readme_results.py\n" + proc.stderr


def test_the_toy_no_gain_reason_names_the_sizes_the_recorded_runs_show():
    """The vector-valued "no gain" claim of repro_toy is a paired two-sided test per size; its reason
    names exactly the sizes where the recorded runs (recomputed here) put the coupled kernel more than
    two standard errors below the diagonal one."""
    res = json.loads((ROOT / "benchmarks" / "results" / "repro_toy.json").read_text())
    vector = res["ours"]["vector"]
    better = []
    for size in vector["coupled"]:
        d = np.asarray(vector["coupled"][size]["runs"]) - np.asarray(vector["independent"][size]["runs"])
        if d.mean() < -2 * d.std(ddof=1) / np.sqrt(len(d)):
            better.append(int(size))
    claim = next(c for c in res["claims"] if "no gain in using a non-diagonal kernel" in c["claim"])
    assert (claim["status"] == "pass") == (not better and "worse" not in claim.get("explanation", ""))
    if better:
        assert f"significantly better than the diagonal one at n = {better}" in claim["explanation"]
