"""Batched sweeps: a ν-method path for 1, 11 and 33 values of ω, and of the kernel width.

n = 2000 training points, n/4 validation points, d = 10 outputs (``--quick``: n = 500),
150 ν-method steps with per-step validation loss, τ from a Lanczos estimate of σ_max (per batch member).
Each batch is ONE compiled call (compile time reported apart, median of 3 after a warm-up; the
33-width batch, ~1.5 min, timed once after ahead-of-time compilation),
each in a fresh subprocess (peak resident set):

* ``omega``  — matrix-free over K ⊗ A_ω, A_ω = ω11ᵀ+(1−ω)I, with the stacked ω path
  (:func:`jaxmtl.paths.omega_path_scan`): the Gram K is shared, so the batch is the columns
  of ONE product K @ [C₁ … C_B] per step (B·d columns), and of one validation product;
* ``width``  — the same over B Gaussian widths; each width has its own Gram, so the batch is a
  ``lax.map`` (one Gram in memory at a time) and costs B paths — no product can be shared;
* ``eigen_omega`` — the eigen path (:func:`jaxmtl.paths.spectral_path`) with the ω family as a
  batch of eigenvalue vectors (one eigh of K for every ω).

* ``omega_64cols`` — the stacked ω path with 16 ω and 4 outputs: 64 columns per product, its
  step's FLOP/s (2(n + m)n·64 per step: the training and the validation product) against the
  square GEMM measured in the same run.

Also measured in the same run, the machine's limits: square-GEMM GFLOP/s, and one bare K @ C with
1 (a GEMV), d, 64, 11·d and 33·d columns — its GFLOP/s and the bytes of K it streams per second.
A single path's product (d columns) is bound by memory bandwidth, a batch's by the GEMM peak, so
``omega11_floor_at_gemm_peak`` = (11× the single path's flops at the square-GEMM rate) / (one bare
K @ C with d columns) is the least 11 ω can cost relative to one path on this machine whatever the
implementation. Targets: 11 ω in one call ≤ 3× one path; a 64-column batch step at ≥ 50 % of the
GEMM throughput. Output: ``results/perf_batched.json``.
(:mod:`perf_iterative` covers the per-step cost against a bare product; this script covers
batch sizes and the width sweep.)

Run: ``python benchmarks/perf_batched.py [--quick] [--only kind1,kind2]``; ``--only`` reruns those kinds
and keeps the other rows of the last results file, marked ``earlier_run`` (ratios between rows of
two runs then span two runs; each target uses rows of one kind).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from _bench import RESULTS, parse_args, pop_only, set_threads

set_threads()  # before numpy / jax: one BLAS/XLA thread per process by default

D, STEPS, SIGMA = 10, 150, 2.0
BATCHES = (1, 11, 33)


def worker(task):
    from _bench import compile_seconds, float64_jax, timed, worker_memory

    jax = float64_jax()
    import jax.numpy as jnp
    import numpy as np
    from perf_vector_valued import make_data

    from jaxmtl.filters import NuMethod
    from jaxmtl.kernels import Gaussian
    from jaxmtl.kernels.outputs import common_similarity_eigh
    from jaxmtl.operators import SeparableOperator, separable_eigh
    from jaxmtl.paths import omega_path_scan, path_scan, spectral_path

    kind, n, B = task["kind"], task["n"], task["batch"]
    X, Y, Xv, Yv = (jnp.asarray(a) for a in make_data(n, task.get("d", D)))
    grid = jnp.linspace(0.0, 1.0, B) if B > 1 else jnp.array([0.5])
    filt = NuMethod()
    eye = jnp.eye(D)

    if kind in ("omega", "omega_64cols"):
        @jax.jit
        def f(X, Y, Xv, Yv, omegas):
            kern = Gaussian(jnp.asarray(SIGMA))
            return omega_path_scan(kern(X, X), Y, omegas, filt, STEPS, kern(Xv, X), Yv).losses
    elif kind == "width":
        grid = SIGMA * jnp.exp(jnp.linspace(-1.0, 1.0, B)) if B > 1 else jnp.array([SIGMA])

        @jax.jit
        def f(X, Y, Xv, Yv, widths):
            def one(s):
                kern = Gaussian(s)
                return path_scan(SeparableOperator(kern(X, X), eye), Y, filt, STEPS,
                                 SeparableOperator(kern(Xv, X), eye), Yv).losses

            return jax.lax.map(one, widths)
    else:  # eigen_omega
        a, V = common_similarity_eigh(D, np.asarray(grid))

        @jax.jit
        def f(X, Y, Xv, Yv, a):
            kern = Gaussian(jnp.asarray(SIGMA))
            eig = separable_eigh(kern(X, X), eye)
            eig = eig._replace(a=a, V=jnp.asarray(V))
            return spectral_path(eig, Y, filt, jnp.arange(1, STEPS + 1), K_eval=kern(Xv, X), Y_eval=Yv,
                                 output="loss")

        grid = jnp.asarray(a)
    args = (X, Y, Xv, Yv, grid)
    comp, compiled = compile_seconds(f, *args)
    r = timed(lambda: compiled(*args).block_until_ready(), task.get("repeats", 3))
    losses = np.asarray(r["result"])
    out = {"kind": kind, "n": n, "batch": B, "d": int(Y.shape[1]), "compile_s": comp, "best_val_mse": float(np.nanmin(losses)),
           **{k: r[k] for k in ("first_s", "median_s", "repeats", "times")}}
    d = Y.shape[1]
    ref = 8 * (n * n + (n // 4) * n + (n + n // 4) * (5 + d) + B * STEPS + n * d)  # K, K_val, data, outputs
    out["memory"] = worker_memory(r["rss_base_kb"], ref)
    return out


def _product(n: int, cols: int, seconds: float) -> dict:
    """One bare K @ C (n × n by n × cols): seconds, GFLOP/s and GB/s of K streamed."""
    return {"seconds": seconds, "gflops": 2 * n * n * cols / seconds / 1e9, "k_gb_per_s": 8 * n * n / seconds / 1e9}


def main(argv=None):
    only, argv = pop_only(sys.argv[1:] if argv is None else argv)  # rerun these kinds alone
    args = parse_args(__doc__, worker, argv)
    if args is None:  # worker mode
        return
    import numpy as np
    from _bench import bare_kc_seconds, float64_jax, gemm_gflops, report, run_isolated

    float64_jax()

    sizes = [500] if args.quick else [2000]
    limits = {"gemm": gemm_gflops(1000 if args.quick else 2000, np.float64),
              "bare_KC_s": {str(n): bare_kc_seconds(n, D, np.float64) for n in sizes},
              "bare_KC_11d_s": {str(n): bare_kc_seconds(n, 11 * D, np.float64) for n in sizes},
              "bare_KC_33d_s": {str(n): bare_kc_seconds(n, 33 * D, np.float64) for n in sizes}}
    limits["products"] = {str(n): {str(c): _product(n, c, bare_kc_seconds(n, c, np.float64)) for c in (1, D, 64, 11 * D, 33 * D)}
                          for n in sizes}
    for c in (c for p in limits["products"].values() for c in p.values()):
        c["pct_gemm"] = 100 * c["gflops"] / limits["gemm"]["gflops"]
    print(f"GEMM {limits['gemm']['gflops']:.1f} GFLOP/s; K @ C by columns:", limits["products"], flush=True)
    tasks = [{"kind": kind, "n": n, "batch": B,
              "repeats": 0 if (kind == "width" and B == 33 and not args.quick) else 3}  # ~1.5 min a call
             for n in sizes for kind in ("omega", "width", "eigen_omega") for B in BATCHES]
    tasks += [{"kind": "omega_64cols", "n": n, "batch": 16, "d": 4, "repeats": 3} for n in sizes]
    earlier = []
    result = RESULTS / ("perf_batched" + ("_quick" if args.quick else "") + ".json")
    if only is not None:
        tasks = [t for t in tasks if t["kind"] in only]
        if result.exists():
            earlier = [{**r, "earlier_run": True} for r in json.loads(result.read_text())["rows"] if r["kind"] not in only]
    rows = earlier + run_isolated(str(Path(__file__).resolve()), tasks, ("kind", "n", "batch"))
    by = {(r["kind"], r["n"], r["batch"]): r for r in rows}
    gemm = limits["gemm"]["gflops"]
    for r in rows:  # (the GEMM rate, like the products, is measured in this run)
        one = by.get((r["kind"], r["n"], 1), {}).get("median_s")
        if "median_s" in r:
            r["peak_alloc_mb"] = r["memory"]["alloc_peak_mb"]
            if one:
                r["ratio_to_one_path"] = r["median_s"] / one
        if "median_s" in r and r["kind"].startswith("omega"):  # step FLOP/s: K and K_val products
            n, cols = r["n"], r["batch"] * r.get("d", D)
            r["step_gflops"] = 2 * (n + n // 4) * n * cols / (r["median_s"] / STEPS) / 1e9
            r["step_pct_gemm"] = 100 * r["step_gflops"] / gemm
        kc = limits["bare_KC_s"][str(r["n"])]
        key = f"bare_KC_{r['batch']}d_s"
        r["kc_floor_ratio"] = limits[key][str(r["n"])] / kc if r["batch"] > 1 and key in limits else 1.0
    big = sizes[-1]
    ratio = by[("omega", big, 11)].get("ratio_to_one_path", float("nan"))
    eig = by[("eigen_omega", big, 11)]["ratio_to_one_path"]
    kc_d = limits["bare_KC_s"][str(big)]
    floor = 11 * 2 * big * big * D / (gemm * 1e9) / kc_d
    b64 = by[("omega_64cols", big, 16)]
    targets = {"omega11_le_3x_one_path": {
                   "n": big, "ratio": ratio, "met": bool(ratio <= 3),
                   "bare_product_ratio_11d_over_d": by[("omega", big, 11)]["kc_floor_ratio"],
                   "omega11_floor_at_gemm_peak": floor,
                   "step_pct_gemm_11": by[("omega", big, 11)].get("step_pct_gemm"),
                   "note": "matrix-free ν path, stacked ω (11·d columns per product); floor_at_gemm_peak = 11 paths' "
                           "flops at the square-GEMM rate / one bare K @ C with d columns: the least any 11-ω batch "
                           "costs on this machine, where one path's product is bound by memory bandwidth"},
               "eigen_omega11_le_3x_one_path": {"n": big, "ratio": eig, "met": bool(eig <= 3),
                                                "note": "eigen path: one eigh of K shared by every ω"},
               "batch64_step_ge_50pct_gemm": {
                   "n": big, "step_gflops": b64.get("step_gflops"), "gemm_gflops": gemm,
                   "pct": b64.get("step_pct_gemm"), "bare_KC64_pct": limits["products"][str(big)]["64"]["pct_gemm"],
                   "met": bool(b64.get("step_pct_gemm", 0) >= 50),
                   "note": "16 ω × 4 outputs: one K @ C and one K_val @ C with 64 columns per step"}}
    cols = ["n", "kind", "batch", "median_s", "compile_s", "ratio_to_one_path", "kc_floor_ratio", "step_gflops",
            "step_pct_gemm", "best_val_mse", "peak_alloc_mb"]
    report("perf_batched", args.quick, rows, cols, targets, limits=limits, steps=STEPS, d=D, rerun_kinds=only)


if __name__ == "__main__":
    main()
