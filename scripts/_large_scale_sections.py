"""Generated sections for the large-scale and accelerator results: ``million.json`` (docs/scale.md),
``million_processes.json`` (docs/distributed.md) and ``gpu_suite.json`` (docs/performance.md). Used by
``scripts/readme_results.py``."""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def _load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _f(v, digits: int = 3) -> str:
    if v is None or v == "":
        return ""
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def _machine(res: dict) -> str:
    m = res["machine"]
    return (f"{m.get('cpu_model', m['processor'])}, {m['cpu_count']} cores, {m.get('memory_total_kb', 0) / 2**20:.0f} GiB; "
            f"JAX {m['jax']}; device {res.get('device', m.get('jax_backend', '?'))}")


def _selected(r: dict) -> str:
    s = r.get("selected") or {}
    if s.get("family") == "per_output":
        return "per-output λ"
    if "omega" in s:
        return f"ω = {s['omega']}, λ = {s['lambda']:.1e}"
    if "lambda" in s:
        return f"λ = {s['lambda']:.1e}" + (f" ({r['route_taken']} route)" if "route_taken" in r else "")
    if r.get("method") == "falkon" and "selected_on_validation" in r:
        return f"λ = {r['selected_on_validation']['lambda']:.1e} (validation)"
    return ""


def _million_table(res: dict) -> list[str]:
    lines = ["| method | n | M | seconds to the selected model | warm-up s | test RMSE | best-on-test RMSE | peak MB | selected |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        if "not_available" in r or "error" in r:
            why = r.get("not_available") or "failed: " + r["error"].strip().splitlines()[-1][:120]
            lines.append(f"| {r['method']} | {r['n']} | {r['M']} | {why} | | | | | |")
            continue
        if r["method"] == "falkon":
            times = [f["fit_s"] for f in r["fits"]]
            secs = (f"{_f(r['selected_on_validation']['fit_s'])} at its selected λ ({r['lambdas_fitted']} λ fitted, "
                    f"{_f(min(times))}–{_f(max(times))} per fit, {_f(sum(times))} in all)")
            cpus = sorted({str(f["cpu_model"]) for f in r["fits"] if f.get("cpu_model")})
            secs += f"; fitted on {', '.join(cpus)}" if cpus else ""
            lines.append(f"| Falkon {r.get('version', '')} ({r['maxiter']} CG steps) | {r['n']} | {r['M']} | {secs} | | "
                         f"{_f(r['test_rmse'], 4)} | {_f(r['best_test_rmse'], 4)} | {r['peak_rss_mb']:.0f} | {_selected(r)} |")
            continue
        name = {"jaxmtl": "jaxmtl, eigen route (20 λ × 6 ω + per-output)", "jaxmtl-cg": "jaxmtl, CG route (20 λ, ω = 0)",
                "sklearn": "scikit-learn Nystroem + RidgeCV", "torch": "PyTorch, solve per λ (ω = 0)",
                "estimator": "ApproximateKernelRegressor (A = I, 20 λ, route='auto'), compilation included"}[r["method"]]
        secs = _f(r["seconds_to_model"])
        if r["method"] == "estimator" and "programs_compiled" in r:  # the first fit, and a second one where measured
            secs += f" ({r['programs_compiled']} programs compiled" + (
                f"; a second fit {_f(r['warm_fit_s'])})" if r.get("warm_fit_s") is not None else ")")
        lines.append(f"| {name} | {r['n']} | {r['M']} | {secs} | {_f(r.get('compile_s'))} | "
                     f"{_f(r['test_rmse'], 4)} | | {r.get('peak_rss_mb', r.get('gpu_peak_mb', 0)):.0f} | {_selected(r)} |")
    return lines


def _merged(res: dict) -> list[str]:
    """The sentence naming the runs merged into ``res`` after its first run (none: no sentence)."""
    merged = [f"`{m['command']}`" + (f" ({m['note']})" if m.get("note") else "") for m in res.get("merged_runs", [])]
    if not merged:
        return []
    return ["Measured again or added afterwards, on the same rows (each on the processor that the Falkon fits and the "
            "comparisons below name, where it differs from the first run's): "
            + "; ".join(merged) + ".\n"]


def _one_fit(t: dict) -> str:
    """Which Falkon fit a target compares with (its CG stops early, sooner at a larger λ)."""
    if t.get("falkon_one_fit_is", "").startswith("the fit at its tuned λ"):
        again = (f"; {t['falkon_fit_s_in_tuning_run']:.1f} s in the tuning run, "
                 f"{'/'.join(f'{s:.1f}' for s in t['falkon_paired_repeat_s'])} s fitted again in jaxmtl's run: "
                 "the faster taken") if "falkon_paired_repeat_s" in t else ""
        return f"at its tuned λ = {t['falkon_tuned_lambda']:.1e} ({t['falkon_tuned_on']}{again})"
    return "the fastest of its fits"


def _falkon_rmse(t: dict) -> str:
    if t.get("falkon_tuned_test_rmse") is not None:
        return f"tuned Falkon's {t['falkon_tuned_test_rmse']:.4f}"
    return f"Falkon's best {t['falkon_best_test_rmse']:.4f} (its tuned λ not fitted at this n)"


def _runs_apart(res: dict, n: int, M: int) -> str:
    """A note where jaxmtl's row and the Falkon fit it is compared with at (n, M) were measured by
    different commands: times of separate runs of the same code on this kind of machine have differed
    by over 1.5×. A fit measured again with ``--pair`` sits in ``paired_fits`` with its command."""
    rows = {r["method"]: r for r in res["rows"] if (r["n"], r["M"]) == (n, M)}
    if "jaxmtl" not in rows or "falkon" not in rows:
        return ""
    if "measured again in jaxmtl's run" in res["targets"].get(f"n={n},M={M}", {}).get("falkon_one_fit_is", ""):
        return ""
    ours = rows["jaxmtl"].get("command", res["command"])
    return "" if ours == rows["falkon"].get("command", res["command"]) else ", measured in another run than jaxmtl's"


def _machines(ours: str | None, falkon: str | None) -> str:
    """A note where a row and the Falkon fit it is compared with ran on different processors (both recorded)."""
    return f" (on {ours}; the Falkon fit on {falkon})" if ours and falkon and ours != falkon else ""


def million() -> str:
    """The Markdown of the million-row section of docs/scale.md."""
    parts = []
    res = _load("million")
    if res is None:
        parts.append("No full run recorded yet: `python benchmarks/million.py`.\n")
    else:
        d = res["data"]
        parts.append(f"CPU figures (`{res['command'].strip()}`; {_machine(res)}; float32; all cores; the run took "
                     f"{res['elapsed_s'] / 60:.0f} min). Data: {d['n_train']} training, {d['n_val']} validation, "
                     f"{d['n_test']} test rows, {d['inputs']} inputs, {d['outputs']} outputs of rank {d['rank']} plus noise, "
                     "memory-mapped. Every method: Gaussian kernel, median-heuristic width, the same uniform centres "
                     "(scikit-learn draws its own); 20 λ from 1e-9 to 1e-2. Warm-up: compilation and the M × M "
                     "work run once on the first chunk before the timed run. Peak MB: the process's peak resident set.\n")
        parts += _merged(res) + _million_table(res) + [""]
        for key, t in res.get("targets", {}).items():
            if "falkon_one_fit_s" not in t:
                parts.append(f"- {key}: Falkon: {t.get('falkon')}")
                continue
            n, M = (int(part.split("=")[1]) for part in key.split(","))
            parts.append(f"- {key}: jaxmtl's whole grid {t['jaxmtl_whole_grid_s']:.0f} s against one Falkon fit, "
                         f"{_one_fit(t)}, {t['falkon_one_fit_s']:.0f} s{_runs_apart(res, n, M)}"
                         f"{_machines(t.get('jaxmtl_machine'), t.get('falkon_machine'))} "
                         f"(**{'met' if t['time_met'] else 'not met'}**); "
                         f"test RMSE {t['jaxmtl_test_rmse']:.4f} against {_falkon_rmse(t)} "
                         f"(**{'met' if t.get('rmse_vs_tuned_met', t['rmse_met']) else 'not met'}**); peak memory "
                         f"{t['jaxmtl_peak_mb']:.0f} MB against {t['falkon_peak_mb']:.0f} MB "
                         f"(**{'met' if t['memory_met'] else 'not met'}**)")
            for tag, what in (("cg", "the CG route, 20 λ with ω = 0 (not the whole grid)"),
                              ("estimator", "the estimator (A = I, 20 λ), on the route its cost model picked "
                                            f"({t.get('estimator_route')}), compilation included")):
                if f"{tag}_time_met" in t:
                    parts.append(f"  - {what}, {t[f'{tag}_s']:.0f} s"
                                 f"{_machines(t.get(f'{tag}_machine'), t.get('falkon_machine'))} "
                                 f"(**{'faster' if t[f'{tag}_time_met'] else 'slower'}** than one Falkon fit); test RMSE "
                                 f"{t[f'{tag}_test_rmse']:.4f} (**{'met' if t[f'{tag}_rmse_met'] else 'not met'}**); peak "
                                 f"memory {t[f'{tag}_peak_mb']:.0f} MB (**{'met' if t[f'{tag}_memory_met'] else 'not met'}**)")
        if (RESULTS / "million.png").exists():
            parts.append("\n![time and memory against n, jaxmtl's grid beside one Falkon fit]"
                         "(../benchmarks/results/million.png)\n")
    gpu = _load("million_gpu")
    if gpu is not None:
        parts.append(f"\nGPU figures (`python benchmarks/million.py --device`; {_machine(gpu)}; float32 products at full "
                     "precision; peak MB: the host process's resident set, the GPU's allocations for PyTorch):\n")
        parts += _merged(gpu) + _million_table(gpu) + [""]
    return "\n".join(parts).strip() + "\n"


def processes() -> str:
    """docs/distributed.md: ApproximateKernelRegressor(mesh=...) on 1 and 2 processes, the model beside."""
    res = _load("million_processes")
    if res is None:
        return "No run recorded yet: `python benchmarks/million_processes.py`.\n"
    lines = [f"`{res['command']}` — {res['n']:,} rows × {res['p']} features → {res['d']} outputs, "
             f"{res['n_components']} Nyström centres, float64, one thread per process; {_machine(res)}.", "",
             "| processes | fit s | reading the rows s | statistics pass s | peak MB per process | test RMSE (mean) "
             "| predictions vs 1 process | model fit s |", "|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        rmse = sum(r["test_rmse"]) / len(r["test_rmse"])
        diff = r.get("relative_difference_to_one_process")
        model = "" if r.get("model") is None else f"{r['model']['fit_s']:.1f}"
        lines.append(f"| {r['processes']} | {r['fit_s']:.1f} | {r['read_s']:.1f} | {r['stats_s']:.1f} | "
                     f"{r['peak_rss_mb']:.0f} | {rmse:.4f} | {'' if diff is None else f'{diff:.1e}'} | "
                     f"{model} |")
    for r in res["rows"]:
        if r.get("model"):
            m = r["model"]
            lines += ["", f"Model for {r['processes']} processes: contention {m['contention']:.2f} (each of "
                          f"{r['processes']} independent copies of the one-process fit took "
                          f"{r['concurrent_one_process_fit_s']:.1f} s at once) × (replicated {m['replicated_s']:.1f} s "
                          f"+ row work {m['row_work_s']:.1f} s) + all-reduce {m['allreduce_s']:.2f} s."]
    lines += ["", "Checks: " + "; ".join(f"{k}: **{'met' if v else 'not met'}**" for k, v in res["checks"].items()) + ".",
              ""]
    return "\n".join(lines)


def gpu_suite() -> str:
    """The Markdown of the accelerator suite's figures (docs/performance.md)."""
    res = _load("gpu_suite")
    if res is None:
        return "No accelerator run recorded yet: `python benchmarks/gpu_suite.py` on a machine with a GPU.\n"
    t = res["targets"]
    v = res["versions"]
    parts = [f"Figures from `{res['command']}` on one **{res['device']['kind']}** ({res['machine']['cpu_count']} host cores; "
             f"JAX {v['jax']}, PyTorch {v.get('torch')}, GPyTorch {v.get('gpytorch')}, himalaya {v.get('himalaya')}; "
             "float32; JAX's default matmul precision, which lets float32 products use TF32 on the tensor cores):\n"]
    a = t.get("a_bandwidth", {})
    if "GBs" in a:
        parts.append(f"- (a) bandwidth: one ν-method step at n = {a['n']} reads the {a['bytes_per_step'] / 2**30:.0f} GiB Gram "
                     f"at {a['GBs'] / 1000:.2f} TB/s, **{a['percent_of_peak']:.0f} %** of the {a['peak_GBs'] / 1000:.1f} TB/s "
                     f"HBM peak (target {a['target_percent']:.0f} %: {'met' if a['met'] else 'not met'}).")
    b = t.get("b_batched_flops", {})
    if "rows" in b:
        cells = ", ".join(f"{r['columns']} columns {r['percent_of_gemm']:.0f} %" for r in b["rows"])
        parts.append(f"- (b) batched ω sweep, n = {b['rows'][0]['n']}, as % of the same run's square GEMM "
                     f"({b['gemm']['gflops'] / 1000:.0f} TFLOP/s): {cells} (target {b['target_percent']:.0f} %: met from "
                     f"{next((r['columns'] for r in b['rows'] if r['percent_of_gemm'] >= b['target_percent']), 'no')} columns; "
                     "a thin product cannot fill the tensor cores).")
    c = t.get("c_peers", {})
    if "rows" in c:
        parts.append("\n| task | peer | n | ours s | peer s | peer / ours | ours best test (full float32 products) | "
                     "peer best test |\n|---|---|---|---|---|---|---|---|")
        for r in c["rows"]:
            m = "test_mse" if "ours_best_test_mse" in r else "test_error"
            full = r.get(f"ours_best_{m}_highest_precision")
            parts.append(f"| {r['task']} | {r['peer']} | {r['n']} | {_f(r['ours_s'])} | {_f(r['peer_s'])} | "
                         f"{_f(r['peer_over_ours'])} | {_f(r[f'ours_best_{m}'], 4)}"
                         + (f" ({_f(full, 4)})" if full is not None else "") + f" | {_f(r[f'peer_best_{m}'], 4)} |")
        missing = "; ".join(f"{k}: {v}" for k, v in c.get("not_available", {}).items())
        parts.append(f"\nNot measured: {missing}.\n" if missing else "")
    dsv = t.get("d_svm", {})
    for r in dsv.get("rows", []):
        parts.append(f"- (d) `KernelMachineClassifier` (SMO on the GPU) at n = {r['n']}: {r['ours_s']:.2f} s against "
                     f"{r['peer']} {r['peer_s']:.2f} s, test error {r['ours_test_error']:.4f} and {r['peer_test_error']:.4f}.")
    e = t.get("e_precision", {})
    if "float32" in e:
        parts.append(f"- (e) precision: the batched sweep's losses are {e['float32']['max_rel_loss_error_vs_float64']:.1e} "
                     f"(relative) from float64 with full float32 products and {e['tf32']['max_rel_loss_error_vs_float64']:.1e} "
                     "with TF32 products.")
    return "\n".join(parts).strip() + "\n"


def summary_rows(scale_page: str, perf_page: str) -> list[str]:
    """The README summary's rows for a million rows (CPU, and GPU when recorded) and the accelerator suite."""
    rows = []
    res = _load("million")
    if res is not None:
        compared = {tuple(int(part.split("=")[1]) for part in key.split(",")): t
                    for key, t in res.get("targets", {}).items() if "falkon_one_fit_s" in t}
        for (n, M), t in sorted(compared.items(), key=lambda item: item[0][::-1]):
            if n < max(size for size, m in compared if m == M):
                continue  # each M at its largest n compared; docs/scale.md has every size
            ours = next(r for r in res["rows"] if r.get("method") == "jaxmtl" and (r["n"], r["M"]) == (n, M))
            cg = f"; the CG route's 20 λ (ω = 0) {t['cg_s']:.0f} s, RMSE {t['cg_test_rmse']:.4f}" if "cg_s" in t else ""
            rows.append(f"| {n:,} rows, 8 outputs: 20 λ × 6 ω + per-output λ (Nyström M = {M}, streamed) vs ONE Falkon "
                        f"fit ({_one_fit(t).split(' (')[0]}) | {t['jaxmtl_whole_grid_s']:.0f} s vs "
                        f"{t['falkon_one_fit_s']:.0f} s{_runs_apart(res, n, M).replace(', measured', ' (Falkon measured')}"
                        f"{')' if _runs_apart(res, n, M) else ''}; test RMSE {t['jaxmtl_test_rmse']:.4f} vs {_falkon_rmse(t)}; peak "
                        f"{t['jaxmtl_peak_mb'] / 1024:.1f} vs {t['falkon_peak_mb'] / 1024:.1f} GiB{cg} | "
                        f"`{ours.get('command', 'python benchmarks/million.py')}` | "
                        f"{res['machine']['cpu_count']} CPU cores, float32 | [{scale_page}]({scale_page}) |")
    gpu = _load("million_gpu")
    if gpu is not None:
        ours = next((r for r in gpu["rows"] if r.get("method") == "jaxmtl" and "seconds_to_model" in r), None)
        if ours:
            rows.append(f"| {ours['n']:,} rows, 8 outputs, the same grid on one GPU (M = {ours['M']}) | "
                        f"{ours['seconds_to_model']:.0f} s, test RMSE {ours['test_rmse']:.4f} | "
                        f"`python benchmarks/million.py --device` | {gpu.get('device')} (host: {gpu['machine']['cpu_count']} cores), float32 | "
                        f"[{scale_page}]({scale_page}) |")
    suite = _load("gpu_suite")
    if suite is not None:
        a = suite["targets"].get("a_bandwidth", {})
        c = {r["peer"]: r for r in suite["targets"].get("c_peers", {}).get("rows", []) if r["task"].startswith("kernel")}
        if "percent_of_peak" in a and c:
            peers = "; ".join(f"{p.split('[')[0]} {r['peer_over_ours']:.2g}×" for p, r in c.items())
            rows.append(f"| GPU: path step bandwidth; kernel ridge over 7 λ at n = {next(iter(c.values()))['n']:,} vs peers "
                        f"(peer time / ours) | {a['percent_of_peak']:.0f} % of HBM peak; {peers} | "
                        f"`python benchmarks/gpu_suite.py` | {suite['device']['kind']} (host: {suite['machine']['cpu_count']} cores), "
                        f"float32 | [{perf_page}]({perf_page}) |")
    return rows
