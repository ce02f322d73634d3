"""Write the generated sections of the README and of the documentation pages from benchmarks/results/.

Each ``benchmarks/repro_<name>.py`` run writes ``benchmarks/results/repro_<name>.json`` with its
side-by-side tables (ours beside the paper's) and the claims it checked, each read as reproduced,
better than published or not reproduced from its recorded figures (``_repro.verdict``); each
``benchmarks/perf_<name>.py`` run writes ``perf_<name>.json`` with its rows and targets. This
script puts the tables, the claims, the targets, the machine and the commands that regenerate
them between markers ``<!-- <section>:start -->`` / ``<!-- <section>:end -->`` of the pages named
in ``SECTIONS``: the README's one summary table, and the full tables on docs/reproductions.md,
docs/performance.md, docs/scale.md, docs/defaults.md and docs/solvers.md — so no page quotes a
figure that no run produced.

Usage: python scripts/readme_results.py [--check]   (--check: exit 1 if a section is stale)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(ROOT))
from benchmarks._repro import BETTER, NOT_REPRODUCED, REPRODUCED, SKIPPED, verdict  # noqa: E402
from scripts._large_scale_sections import gpu_suite, million, processes, summary_rows  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
DOCS_TO_ROOT = "../"  # the generated pages live in docs/; figures are under benchmarks/results/
PERF = ["perf_vector_valued", "perf_iterative", "perf_batched", "perf_kronecker", "perf_multitask", "perf_gradient",
        "perf_solvers"]
ORDER = [("repro_school", "School data ([BRBV11] Table 1)"),
         ("repro_ida", "IDA benchmarks ([LRODV08] Table 2)"),
         ("repro_ida_svm", "IDA benchmarks, SVM column by our SMO solver ([LRODV08] Table 3)"),
         ("repro_toy", "Multi-task vs vector-valued toy ([BRBV11] §7.1, Figures 2–4)"),
         ("repro_fields", "2-D vector fields ([BRBV11] §7.1, Figures 6–10)"),
         ("repro_mulan", "Mulan multi-target regression (aRRMSE, 10-fold CV)"),
         ("repro_okl", "Output kernel learning ([DOGP11] §5: sim0–sim3, digits, raw-pixel MNIST, the Sylvester step)"),
         ("repro_rls2", "Sparse multiple kernel learning: RLS2 ([Din11] Tables 4.3–4.4)"),
         ("repro_music", "Mixed-effect multi-task learning: music recommendation ([Din11] §5.4)")]


def _result(name: str, parts: list[str]) -> dict | None:
    """``results/<name>.json``, or None after noting in ``parts`` that no full run is recorded."""
    path = RESULTS / f"{name}.json"
    if not path.exists():
        parts.append(f"No full run recorded yet: `python benchmarks/{name}.py`.\n")
        return None
    return json.loads(path.read_text())


def _figures(v) -> str:
    """A claim's figures as one line (dicts as "key: value; …")."""
    if isinstance(v, dict):
        return "; ".join(f"{k}: {_figures(x)}" for k, x in v.items())
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _claim_line(c: dict) -> str:
    """One claim: its verdict, the paper's statement, then the paper's figure, ours and the tolerance."""
    line = f"- **{verdict(c)}** — {c['claim']}"
    figures = [f"{k}: {_figures(c[k])}" for k in ("paper", "ours", "tolerance") if c.get(k) not in (None, "", {})]
    if figures:
        line += ". " + " · ".join(figures)
    if c.get("detail"):
        line += f" ({c['detail']})"
    if verdict(c) != REPRODUCED and c.get("explanation"):
        line += f". *Why:* {c['explanation']}"
    return line


def _is_paper_claim(c: dict) -> bool:
    return c.get("kind", "paper") != "sanity" and "finite" not in c["claim"]


TWO_SIDED_2SE = ("2·√(SE_ours² + SE_paper²)", "|mean difference| ≤ 2·SE")  # tolerances of two-sided 2-SE tests
FALSE_FAILURE_2SE = 0.0455  # P(|Z| > 2): a two-sided test at 2 standard errors fails this often when its claim holds


def _two_sided_tests(claims: list[dict]) -> int:
    """How many two-sided tests at 2 standard errors the checked ``claims`` make: one per figure
    compared with a published mean (a claim "on every dataset" makes one per dataset), one per
    paired comparison of two methods (one per entry when ``ours`` holds one per size or set)."""
    count = 0
    for c in claims:
        if c.get("status") == SKIPPED or not any(t in c.get("tolerance", "") for t in TWO_SIDED_2SE):
            continue
        ours = c.get("ours")
        count += len(c.get("figures") or []) or (len(ours) if isinstance(ours, dict) else 1)
    return count


def _chance_line(claims: list[dict]) -> str:
    """The number of two-sided 2-SE tests and how many of them fail by chance when every claim holds."""
    n = _two_sided_tests(claims)
    if not n:
        return ""
    return (f" {n} two-sided test{'s' if n > 1 else ''} at 2 standard errors: were every claim exactly true, "
            f"about {n * FALSE_FAILURE_2SE:.1f} of them (P(|Z| > 2) = {100 * FALSE_FAILURE_2SE:.2f} % each) would "
            "fall outside by chance alone.")


def reproductions() -> str:
    """The Markdown of the reproductions section (without the markers): the claims not reproduced
    and those better than published first, then per script its tables and every claim with its
    verdict, the paper's statement, tolerance and figures."""
    parts, listed, checked = [], {NOT_REPRODUCED: [], BETTER: []}, []
    for name, title in ORDER:
        parts.append(f"### {title}\n")
        res = _result(name, parts)
        if res is None:
            continue
        cpu = res.get("machine", {}).get("cpu_model", "CPU")
        parts.append(f"`{res['command']}` — {res['elapsed_s'] / 60:.1f} min on {res['machine']['cpu_count']} cores "
                     f"({cpu}), float64. Results: `benchmarks/results/{name}.json`.\n")
        for table in res.get("tables", []):
            caption, _, body = table.partition("\n")
            parts.append(f"{table}\n" if table.startswith("|") else f"{caption}\n\n{body}\n")  # uncaptioned
        claims = [c for c in res.get("claims", []) if _is_paper_claim(c)]
        if claims:
            parts.append(f"Claims checked by the script ({_counts(claims)}; it exits non-zero when one is not "
                         f"reproduced, and such a claim stays listed with its reason).{_chance_line(claims)}\n")
            parts.extend(_claim_line(c) for c in claims)
            parts.append("")
        else:
            parts.append("**No claim checked** by this run.\n")
        checked.extend(claims)
        for c in claims:
            if verdict(c) in listed:
                listed[verdict(c)].append(f"{title}: {c['claim']}")
        for fig in res.get("figures", []):
            parts.append(f"![{name}]({DOCS_TO_ROOT}{fig})\n")
    heads = {NOT_REPRODUCED: "**Claims not reproduced** (each is listed below with the figures and the reason):",
             BETTER: "**Claims better than published**: our figure differs from the paper's by more than the "
                     "tolerance, in the direction that favours us (each is listed below with the figures):"}
    head = "\n".join(f"{heads[v]}\n\n" + "\n".join(f"- {f}" for f in listed[v]) + "\n"
                     for v in heads if listed[v])
    head = (f"Over the recorded runs: {_counts(checked)}.{_chance_line(checked)}\n\n"
            + ("" if listed[NOT_REPRODUCED] else "Every checked claim is reproduced or better than published.\n\n")
            + head)
    return (head + "\n" + "\n".join(parts)).strip() + "\n"


OWN_TIME = ("median_s", "kc_equivalents")  # marked on the extrapolated row itself
RATIOS = ("speedup_vs_sklearn", "speedup_vs_tikhonov", "speedup_vs_dense")  # marked on every row of its size


def _group(r: dict):
    return (r.get("n"), r.get("d"), r.get("data"))


def _extrapolated(rows: list[dict]) -> tuple[set, list[str]]:
    """Groups (size / data set) whose timings rest on an extrapolated row, and a footnote per such row."""
    groups, notes = set(), []
    for r in rows:
        if not r.get("extrapolated"):
            continue
        groups.add(_group(r))
        where = ", ".join(f"{k} = {v}" for k, v in zip(("n", "d", "data"), _group(r)) if v is not None)
        timed = r.get("fits_timed") or r.get("solves_timed")
        how = (f"{timed} of its {'fits' if 'fits_timed' in r else 'solves'} "
               f"timed (measured {r['measured_s']:.3g} s), the time scaled to the whole sweep" if timed and "measured_s" in r
               else f"not run; its time is {r.get('note', 'a multiple of a measured time')}")
        notes.append(f"† {r.get('method')} at {where}: {how}; speedups marked † at that size may divide by "
                     "this estimate.")
    return groups, notes


def _cell(r: dict, col: str, marked: set) -> str:
    v = r.get(col)
    if v is None or v == "":
        return ""
    text = _fmt(v)
    mark = (col in OWN_TIME and r.get("extrapolated")) or (col in RATIOS and _group(r) in marked)
    return text + " †" if mark else text


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def performance() -> str:
    """The Markdown of the performance section: machine, every target, the main table."""
    parts = []
    first = True
    rows = []
    for name in PERF:
        path = RESULTS / f"{name}.json"
        if not path.exists():
            rows.append(f"| `{name}` | no full run recorded | | |")
            continue
        res = json.loads(path.read_text())
        if first:
            m = res["machine"]
            v = res.get("versions", {})
            parts.append(f"Machine of these figures: {m.get('cpu_model', m['processor'])}, {m['cpu_count']} cores, "
                         f"{m.get('memory_total_kb', 0) / 2**20:.1f} GiB, {m['platform']}; JAX {m['jax']}, "
                         f"NumPy {m['numpy']}" + (f", scikit-learn {v['sklearn']}" if v.get("sklearn") else "")
                         + f"; {res.get('dtype', 'float64')}; {res.get('threads', 1)} BLAS/XLA thread per process. "
                         "Ratios come from one run; absolute times are this machine's.\n")
            first = False
        marked, _ = _extrapolated(res.get("rows", []))
        for key, t in res["targets"].items():
            if isinstance(t, dict):
                met = t.get("met")
                shown = {k: v for k, v in t.items() if k not in ("met", "note")}
                note = t.get("note", "")
                timed = "speedup" in t or "speedup_vs_sklearn" in t
                if timed and (t.get("n"), None, None) in marked or "extrapolated" in key:
                    note += " † relative to an extrapolated time (see the tables below)"
                rows.append(f"| `{name}`: {key} | " + ", ".join(f"{k} = {_fmt(v)}" for k, v in shown.items())
                            + f" | {'**met**' if met else 'not met'} | {note.strip()} |")
            else:
                note = "† extrapolated" if "extrapolated" in key else ""
                rows.append(f"| `{name}`: {key} | {_fmt(t)} | {'**met**' if t is True else ('not met' if t is False else '—')} | {note} |")
    parts.append("| benchmark: target | measured | status | note |\n|---|---|---|---|\n" + "\n".join(rows) + "\n")
    path = RESULTS / "perf_vector_valued.json"
    if path.exists():
        res = json.loads(path.read_text())
        cols = ["n", "method", "median_s", "compile_s", "best_val_mse", "speedup_vs_sklearn", "kc_equivalents",
                "peak_alloc_mb", "alloc_over_ref"]
        marked, notes = _extrapolated(res["rows"])
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for r in res["rows"]:
            if "median_s" in r:
                lines.append("| " + " | ".join(_cell(r, c, marked) for c in cols) + " |")
        lines.extend([""] + notes if notes else [])
        parts.append("Vector-valued regression, Gaussian kernel, d = 10, A = I, 30 λ / 150 ν-method / 1000 "
                     "Landweber steps, validation n/4 (`python benchmarks/perf_vector_valued.py`; "
                     "`kc_equivalents` = time / one bare K @ C; `alloc_over_ref` = peak allocation of the "
                     "measured calls / bytes of K, K_val, data and outputs):\n\n" + "\n".join(lines) + "\n")
        slopes = ", ".join(f"{m} {v:.2f}" for m, v in res.get("slopes", {}).items() if v == v)
        parts.append(f"Fitted log–log slopes of time against n: {slopes}.\n")
        if res.get("plot"):
            parts.append(f"![time against n]({DOCS_TO_ROOT}benchmarks/results/{res['plot']})\n")
    parts.append("Commands: " + ", ".join(f"`python benchmarks/{n}.py`" for n in PERF)
                 + " (each takes `--quick`). Analysis: \"What limits each target\" below.")
    return "\n".join(parts).strip() + "\n"


TABLE_COLUMNS = {
    "perf_iterative": ["n", "K@C_ms", "scan_step_ms", "step_over_K@C", "python_loop_step_ms", "numpy_step_ms",
                       "omega11_over_one_path", "omega11_stacked_over_one_path", "K@C11_over_K@C", "field_mv_ms",
                       "field_mv_over_K@C"],
    "perf_batched": ["n", "kind", "batch", "median_s", "compile_s", "ratio_to_one_path", "kc_floor_ratio",
                     "best_val_mse", "peak_alloc_mb", "alloc_over_ref"],
    "perf_kronecker": ["n", "d", "method", "median_s", "compile_s", "speedup_vs_dense", "rel_residual",
                       "peak_alloc_mb", "alloc_over_ref", "nd_squared_mb", "skipped"],
    "perf_scale": ["method", "n", "m", "seconds", "first_s", "test_rmse", "alloc_peak_mb", "ref_mb", "alloc_over_ref"],
    "perf_multitask": ["data", "method", "n_train", "median_s", "compile_s", "speedup_vs_tikhonov", "best_omega",
                       "best_steps", "best_lambda", "test_explained_variance", "peak_alloc_mb", "alloc_over_ref",
                       "extrapolated"],
    "perf_gradient": ["n", "kind", "median_s", "compile_s", "peak_mb", "memory_over_forward", "time_over_forward",
                      "dense_gram_mb", "rss_peak_mb"],
    "perf_solvers": ["n", "task", "method", "sklearn_s", "ours_s", "ours_over_sklearn", "sklearn_metric", "ours_metric",
                     "max_decision_diff", "iterations", "sklearn_iterations"],
}


def benchmark_tables() -> str:
    """Every perf benchmark's rows (docs/performance.md), with the limits measured in the same run."""
    parts = []
    for name, cols in TABLE_COLUMNS.items():
        parts.append(f"#### `{name}`\n")
        res = _result(name, parts)
        if res is None:
            continue
        limits = res.get("limits") or {"gemm_gflops": res.get("gemm_gflops")}
        parts.append(f"`python benchmarks/{name}.py`; limits measured in the same run: "
                     + json.dumps(limits, default=_fmt)[:400] + "\n")
        marked, notes = _extrapolated(res["rows"])
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for r in res["rows"]:
            lines.append("| " + " | ".join(_cell(r, c, marked) for c in cols) + " |")
        parts.append("\n".join(lines + ([""] + notes if notes else [])) + "\n")
    return "\n".join(parts).strip() + "\n"


def _machine_line(res: dict) -> str:
    m = res["machine"]
    return (f"{m.get('cpu_model', m['processor'])}, {m['cpu_count']} cores, {m.get('memory_total_kb', 0) / 2**20:.0f} GiB, "
            f"{m['platform']}; JAX {m['jax']}, NumPy {m['numpy']}; {', '.join(m.get('devices', []))}; "
            f"{res.get('dtype', 'float64')}")


def _scale_table(rows: list[dict]) -> str:
    cols = ["method", "n", "m", "seconds", "test_rmse", "alloc_peak_mb"]
    lines = ["| method | n | m / D | fit s | test RMSE | peak alloc. MB |", "|---|---|---|---|---|---|"]
    order = {"exact": 0, "blocked": 1, "nystrom": 2, "rff": 3}
    for r in sorted((r for r in rows if "seconds" in r), key=lambda r: (order.get(r["method"], 9), r["m"], r["n"])):
        lines.append("| " + " | ".join("" if c == "m" and not r[c] else _fmt(r[c]) for c in cols) + " |")
    return "\n".join(lines)


def scale() -> str:
    """The Markdown of the scale section: the CPU claim, the CPU and GPU tables, slopes, plots, commands."""
    parts = []
    res = _result("perf_scale", parts)
    if res is not None:
        parts.append(f"CPU figures: {_machine_line(res)}. {res.get('note', '')}\n")
        for c in res.get("claims", []):
            status = "**met**" if c["pass"] else "**not met**"
            parts.append(f"- {status} — {c['claim']}: measured {_figures(c['measured'])}"
                         + (f" (tolerance {_figures(c['tolerance'])})" if "tolerance" in c else ""))
        dm = res.get("demo")
        if dm:
            runs = res.get("claim_runs", [dm])
            parts.append(f"\nClaim: Nyström (m = {dm['n_components']}) on {dm['n_nystrom']} rows, default selection, "
                         f"{dm['nystrom_seconds']:.0f} s, test RMSE {dm['nystrom_test_rmse']:.3f}; exact on "
                         f"{dm['n_exact']} rows (own width search, hold-out) {dm['exact_seconds']:.0f} s, test RMSE "
                         f"{dm['exact_test_rmse']:.3f} ({dm['n_test']} held-out rows, noiseless targets). "
                         + ("Every measurement of the claim: " + "; ".join(
                             f"{r.get('measured_at', '?')}: {r['nystrom_seconds']:.0f} s / RMSE {r['nystrom_test_rmse']:.3f}"
                             f" vs {r['exact_seconds']:.0f} s / {r['exact_test_rmse']:.3f}" for r in runs) + ".\n"
                            if len(runs) > 1 else "\n"))
        if not any("seconds" in r for r in res.get("rows", [])):  # a --claim run alone
            parts.append("The scaling table against n is not recorded yet: `python benchmarks/perf_scale.py`.\n")
        else:
            parts.append(f"Fixed regularisation (exact and blocked: {res.get('steps', 100)} ν-method steps; Nyström "
                         "and random features: Tikhonov λ = 1e-5), Gaussian width = median distance, p = 21, d = 3, "
                         "2 000 test rows:\n\n" + _scale_table(res["rows"]) + "\n")
            slopes = ", ".join(f"{k} {v['time']:.2f}" for k, v in res.get("slopes", {}).items()
                               if v["time"] == v["time"])
            parts.append(f"Fitted log–log slopes of fit time against n: {slopes}.\n")
            parts.append(f"![time, test error and peak memory against n]({DOCS_TO_ROOT}benchmarks/results/perf_scale.png)\n")
    gpu = RESULTS / "perf_scale_gpu.json"
    if gpu.exists():
        g = json.loads(gpu.read_text())
        parts.append(f"GPU figures (`benchmarks/results/perf_scale_gpu.json`): {_machine_line(g)}; p = 10, d = 10; "
                     "host peak memory is not the GPU's:\n\n" + _scale_table(g["rows"]) + "\n")
        extra = g.get("gpu", {})
        bp, ss = extra.get("blocked_path"), extra.get("stored_step")
        if bp:
            parts.append(f"Blocked exact Gram (never stored), n = {bp['n']}, p = {bp['p']}, d = {bp['d']}: a "
                         f"{bp['steps']}-step ν-method path in {bp['seconds']:.1f} s (first call {bp['first_call_s']:.1f} s)."
                         + (f" One stored-Gram step at n = {ss['n']} reads K at {ss['bandwidth_Bps'] / 1e12:.2f} TB/s, "
                            f"{100 * ss['utilisation']:.0f} % of the {ss['device_kind']}'s peak bandwidth." if ss and ss.get("utilisation") else "")
                         + "\n")
    parts.append("Commands: `python benchmarks/perf_scale.py` (CPU, ~25 min; `--claim` re-measures the claim alone, "
                 "`--quick` in seconds), `python benchmarks/perf_scale.py --gpu` on a machine with a CUDA GPU "
                 "(`pip install -U \"jax[cuda12]\"`), then `python scripts/readme_results.py`.")
    return "\n".join(parts).strip() + "\n"


DEFAULT_PARTS = ("mulan", "outputs", "robot_arm", "ida", "imbalanced", "digits", "fields", "unrelated", "school", "school_speed",
                 "multitask_real", "multitask_sizes")


def _result_block(title: str, command: str, res: dict, body: dict) -> list[str]:
    """A results table with its command, machine line and claims (per-repeat lists stay in the JSON)."""
    rows = body["rows"]
    cols = list(dict.fromkeys(c for r in rows for c in r if not isinstance(r[c], (list, dict))))  # every row's columns
    lines = [f"**{title}** (`{command}`; "
             f"{_machine_line(res) if 'machine' in res else ''}; run took {res.get('seconds', 0) / 60:.0f} min)\n",
             "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols)]
    lines.extend("| " + " | ".join(_fmt(r.get(c, "")) for c in cols) + " |" for r in rows)
    lines.append("")
    for c in body.get("claims", []):
        lines.append(f"- **{'met' if c['pass'] else 'not met'}** — {c['claim']}: {_figures(c['value'])}")
    if body.get("note"):
        lines.append(f"\n{body['note']}")
    lines.append("")
    return lines


def defaults() -> str:
    """The Markdown of the defaults section: one table per ``defaults_vs_tuned_<part>.json`` with its
    claims, then the check of repeated k-fold on sets outside IDA (classifier, and the regressor's when run)."""
    parts = []
    names = sorted(RESULTS.glob("defaults_vs_tuned_*.json"),
                   key=lambda f: (DEFAULT_PARTS + (f.stem,)).index(f.stem.split("defaults_vs_tuned_")[1])
                   if f.stem.split("defaults_vs_tuned_")[1] in DEFAULT_PARTS else len(DEFAULT_PARTS))
    for path in names:
        res = json.loads(path.read_text())
        if res.get("quick"):
            continue
        for part, body in res["results"].items():
            if not body.get("rows"):
                continue
            command = (f"python benchmarks/defaults_vs_tuned.py --parts {part}"
                       + (f" --sets {res['sets']}" if res.get("sets") else "")
                       + (f" --fields {res['fields']}" if part == "fields" and res.get("fields") else "")
                       + (f" --folds {res['mulan_folds']}" if part == "mulan" else "")
                       + (f" --splits {res['ida_splits']}" if part == "ida" else "") + f" --out {path.stem}")
            title = part if res.get("complete", True) else \
                f"{part}, partial run (the rows written before it was stopped; no claims)"
            parts.extend(_result_block(title, command, res, body))
    repeats = _result("selection_repeats", parts)
    if repeats is not None:
        parts.extend(_result_block("classifier selection on one partition vs repeated k-fold, sets outside IDA",
                                   f"python benchmarks/selection_repeats.py --splits {repeats['splits']}", repeats,
                                   {"rows": repeats["results"]["rows"], "claims": repeats["claims"]}))
    regression = RESULTS / "selection_repeats_regression.json"
    if regression.exists():
        res = json.loads(regression.read_text())
        parts.extend(_result_block("VectorValuedRegressor selection on one partition vs repeated k-fold (aRRMSE; fit "
                                   "CPU seconds)", f"python benchmarks/selection_repeats.py --parts regression "
                                   f"--splits {res['splits']}", res, {"rows": res["results"]["rows"],
                                                                      "claims": res["claims"]}))
    if not parts:
        return "No full run recorded yet: `python benchmarks/defaults_vs_tuned.py`.\n"
    return "\n".join(parts).strip() + "\n"


def solvers() -> str:
    """The Markdown of the kernel-machine timings: SMO against SVC / SVR on CPU (perf_solvers.json), and
    the fixed-point solver on a GPU (perf_solvers_gpu.json)."""
    parts = []
    res = _result("perf_solvers", parts)
    if res is not None:
        parts.append(f"CPU: {_machine_line(res)}; {res.get('threads', 1)} thread for both libraries; median of "
                     f"{res['repeats']} runs after compilation, ours and scikit-learn timed alternately; the Gram "
                     "matrix is computed inside the timed fit (float64, or float32 with float64 sums):\n")
        lines = ["| n | task | ours | scikit-learn s | ours s | ours / scikit-learn | test error (SVM) or RMSE "
                 "(SVR), scikit-learn / ours | max. difference of test decision values | steps ours / libsvm |",
                 "|---|---|---|---|---|---|---|---|---|"]
        for r in res["rows"]:
            metric = f"{_fmt(r['sklearn_metric'])} / {_fmt(r['ours_metric'])}" if "ours_metric" in r else ""
            steps = f"{r['iterations']} / {r['sklearn_iterations']}" if "iterations" in r else ""
            lines.append(f"| {r['n']} | {r['task']} | {r['method']} | {_fmt(r['sklearn_s'])} | {_fmt(r['ours_s'])} | "
                         f"{_fmt(r['ours_over_sklearn'])} | {metric} | {_fmt(r.get('max_decision_diff', ''))} | "
                         f"{steps} |")
        parts.append("\n".join(lines) + "\n")
        parts.extend(f"- {'**met**' if t['met'] else '**not met**'} — {key}: float32 Gram {_fmt(t['ratio'])}, "
                     f"float64 Gram {_fmt(t['ratio_float64_gram'])}" for key, t in res.get("targets", {}).items())
        parts.append("")
    gpu = RESULTS / "perf_solvers_gpu.json"
    if gpu.exists():
        g = json.loads(gpu.read_text())
        lines = ["| n | task | scikit-learn s (host CPU) | fixed point s (GPU) | ratio |", "|---|---|---|---|---|"]
        lines += [f"| {r['n']} | {r['task']} | {_fmt(r['sklearn_s'])} | {_fmt(r['fixed_point_s'])} | "
                  f"{_fmt(r['fp_over_sklearn'])} |" for r in g["rows"]]
        parts.append(f"GPU (`benchmarks/results/perf_solvers_gpu.json`, an earlier version of the script timing the "
                     f"fixed-point solver with intercept): {_machine_line(g)}:\n\n" + "\n".join(lines) + "\n")
    parts.append("Command: `python benchmarks/perf_solvers.py` (`--quick` in a minute), then "
                 "`python scripts/readme_results.py`.")
    return "\n".join(parts).strip() + "\n"


DOC_PAGES = {"repro": "reproductions.md", "perf": "performance.md", "scale": "scale.md", "defaults": "defaults.md",
         "solvers": "solvers.md"}  # relative to docs/
# The speed rows of the summary: (result file, target, what it measures, how to print the figure).
SPEED = [("perf_vector_valued", "nu_25x_sklearn_at_n_max", "ν-method path (150 steps) vs `KernelRidge` refitted over 30 λ",
          lambda t: f"{t['speedup']:.1f}× faster at n = {t['n']}, same validation error"),
         ("perf_multitask", "nu_50x_tikhonov_same_ev", "School: ν path over ω vs Tikhonov refits over the grid",
          lambda t: f"{t['speedup']:.0f}× faster, explained variance {100 * t['ev_nu']:.1f} % vs {100 * t['ev_tikhonov']:.1f} %"),
         ("perf_kronecker", "structured_40x_dense_cholesky", "K ⊗ A solve vs the dense nd × nd Cholesky",
          lambda t: f"{t['speedup']:.0f}× faster at n = {t['n']}, d = {t['d']}"),
         ("perf_solvers", "svm n = 2000: fit time / SVC ≤ 3", "SMO (SVM, n = 2000) vs scikit-learn's SVC (libsvm)",
          lambda t: f"{t['ratio']:.2f}× its time, same test error")]


def _short_machine(res: dict) -> str:
    m = res.get("machine", {})
    return f"{m.get('cpu_model', m.get('processor', '?'))}, {m.get('cpu_count', '?')} cores"


def _counts(claims: list[dict]) -> str:
    """"r of n claims reproduced", then how many are better than published and not reproduced."""
    verdicts = [verdict(c) for c in claims]
    text = f"{verdicts.count(REPRODUCED)} of {len(claims)} claims reproduced"
    for v in (BETTER, NOT_REPRODUCED):
        if verdicts.count(v):
            text += f", {verdicts.count(v)} {v}"
    return text


def summary(docs: str = "docs/") -> str:
    """The README's one table (also the site's front page, ``docs=""``): per reproduction the paper
    claims reproduced, then the headline speed and scale figures, each with its command, machine and
    the page with the full tables."""
    pages = {k: docs + v for k, v in DOC_PAGES.items()}
    rows = ["| what | result | command | machine | full tables |", "|---|---|---|---|---|"]
    for name, title in ORDER:
        path = RESULTS / f"{name}.json"
        if not path.exists():
            rows.append(f"| {title} | no full run recorded | `python benchmarks/{name}.py` | | [{pages['repro']}]({pages['repro']}) |")
            continue
        res = json.loads(path.read_text())
        rows.append(f"| {title} | {_counts([c for c in res.get('claims', []) if _is_paper_claim(c)])} | "
                    f"`{res['command']}` | "
                    f"{_short_machine(res)}, float64 | [{pages['repro']}]({pages['repro']}) |")
    defaults_claims = [c for f in sorted(RESULTS.glob("defaults_vs_tuned_*.json"))
                       for c in json.loads(f.read_text()).get("claims", [])]
    if defaults_claims:
        met = sum(bool(c.get("pass")) for c in defaults_claims)
        res = json.loads(sorted(RESULTS.glob("defaults_vs_tuned_*.json"))[0].read_text())
        rows.append(f"| Estimators with no arguments vs a tuned scikit-learn grid search (Mulan, IDA, digits, "
                    f"fields, School, Parkinson's, computer survey, SARCOS; few rows per task, many outputs) | "
                    f"{met} of {len(defaults_claims)} targets met | "
                    f"`python benchmarks/defaults_vs_tuned.py` | {_short_machine(res)}, float32 | "
                    f"[{pages['defaults']}]({pages['defaults']}) |")
    for name, key, what, fmt in SPEED:
        path = RESULTS / f"{name}.json"
        if not path.exists():
            continue
        res = json.loads(path.read_text())
        page = pages["solvers" if name == "perf_solvers" else "perf"]
        rows.append(f"| {what} | {fmt(res['targets'][key])} | `python benchmarks/{name}.py` | "
                    f"{_short_machine(res)}, {res.get('dtype', 'float64').split(' ')[0]} | [{page}]({page}) |")
    path = RESULTS / "perf_scale.json"
    if path.exists():
        res = json.loads(path.read_text())
        dm = res.get("demo")
        if dm:
            rows.append(f"| Nyström (m = {dm['n_components']}) on {dm['n_nystrom']} rows, selection included, vs "
                        f"exact on {dm['n_exact']} rows | {dm['nystrom_seconds']:.0f} s, test RMSE "
                        f"{dm['nystrom_test_rmse']:.3f} vs {dm['exact_seconds']:.0f} s, {dm['exact_test_rmse']:.3f} | "
                        f"`python benchmarks/perf_scale.py --claim` | {_short_machine(res)}, float64 | "
                        f"[{pages['scale']}]({pages['scale']}) |")
    path = RESULTS / "perf_scale_gpu.json"
    if path.exists():
        g = json.loads(path.read_text())
        bp = g.get("gpu", {}).get("blocked_path")
        if bp:
            rows.append(f"| Exact Gram recomputed in blocks (never stored), {bp['steps']}-step ν-method path | "
                        f"{bp['seconds']:.1f} s at n = {bp['n']}, d = {bp['d']} | `python benchmarks/perf_scale.py --gpu` | "
                        f"{', '.join(g['machine'].get('devices', []))} ({_short_machine(g)} host), float64 | "
                        f"[{pages['scale']}]({pages['scale']}) |")
    rows += first_answer_rows(pages["perf"])
    rows += summary_rows(pages["scale"], pages["perf"])
    return "\n".join(rows) + "\n\nRegenerate with `python scripts/readme_results.py` after any of these commands.\n"


def first_answer_rows(page: str) -> list[str]:
    """The README summary's row for the first answer: the default estimators' fresh-process first fit
    (import and compilation included) over scikit-learn's grid search in its own, by row count
    (``compile_times.json``)."""
    path = RESULTS / "compile_times.json"
    if not path.exists():
        return []
    res = json.loads(path.read_text())
    ratios: dict[int, list[float]] = {}
    for r in res["rows"]:
        if "first_answer_vs_grid_search" in r:
            ratios.setdefault(r["n"], []).append(r["first_answer_vs_grid_search"])
    names = sorted({r["estimator"] for r in res["rows"] if "first_answer_vs_grid_search" in r})
    cells = "; ".join(f"{min(v):.2f}–{max(v):.2f}× at n = {n}" for n, v in sorted(ratios.items()))
    return [f"| First answer in a fresh process (import, compilation and fit of {', '.join(names)} with their "
            f"defaults) vs `GridSearchCV(KernelRidge)` over 180 points in its own | {cells} | "
            f"`python benchmarks/compile_times.py` | {_short_machine(res)}, float32 | [{page}]({page}) |"]


def fit_cost() -> str:
    """The Markdown of the fit-cost table: ``VectorValuedRegressor()``'s first and warm fit against
    outputs and rows beside the per-output ``GridSearchCV(KernelRidge)`` (``default_fit_times_outputs.json``)."""
    parts: list[str] = []
    res = _result("default_fit_times_outputs", parts)
    if res is None:
        return "No run recorded yet: `python benchmarks/default_fit_times.py --outputs-table`.\n"
    shared = " (other jobs running: CPU seconds, single-threaded, are the measure)" if res.get("machine_shared") else ""
    lines = [f"{res['what']}; {res['dtype']}; {res['threads']} thread(s). "
             f"`python benchmarks/default_fit_times.py --outputs-table` ({_machine_line(res)}{shared}).\n",
             "| rows n | outputs d | default first / warm (CPU s) | per-output GridSearchCV first / warm (CPU s) "
             "| ratio first | ratio warm |", "|---|---|---|---|---|---|"]
    for r in res["rows"]:
        ours, base = r["default"], r["baseline"]
        lines.append(f"| {r['n']} | {r['d']} | {ours['first']['cpu_s']:.1f} / {ours['warm']['cpu_s']:.2f} | "
                     f"{base['first']['cpu_s']:.1f} / {base['warm']['cpu_s']:.1f} | {r['first_ratio']:.2f} | "
                     f"{r['warm_ratio']:.2f} |")
    lines.append(f"\nTarget: {res['target']} — **{'met' if res['met'] else 'not met'}** at the sizes measured.\n")
    return "\n".join(lines)


SECTIONS = {"README.md": {"summary": summary},
            "docs/index.md": {"summary": lambda: summary(docs="")},
            "docs/reproductions.md": {"reproductions": reproductions},
            "docs/performance.md": {"performance": performance, "perf-tables": benchmark_tables, "gpu-suite": gpu_suite},
            "docs/scale.md": {"scale": scale, "million": million},
            "docs/defaults.md": {"defaults": defaults, "fit-cost": fit_cost},
            "docs/solvers.md": {"solvers": solvers},
            "docs/distributed.md": {"processes": processes}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated section is not up to date")
    args = parser.parse_args(argv)
    stale = False
    for doc, sections in SECTIONS.items():
        text = old = (ROOT / doc).read_text()
        for name, render in sections.items():
            start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
            if start not in text or end not in text:
                print(f"{doc} lacks the markers {start} / {end}", file=sys.stderr)
                return 1
            head, rest = text.split(start, 1)
            _, tail = rest.split(end, 1)
            text = head + start + "\n" + render() + end + tail
        stale |= text != old
        if not args.check:
            (ROOT / doc).write_text(text)
            print(f"{doc}: generated sections written")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
