"""Cost of one compiled ν-method path against a Python loop of jitted steps and plain NumPy.

For n = 2000, 4000, 8000 and d = 10 outputs (``--quick``: 500, 1000) this measures, in one run:
the machine's square-GEMM throughput, one bare ``K @ C`` (n×n by n×d), a 200-step ν-method path
as one ``lax.scan`` (:func:`jaxmtl.paths.path_scan`), the same recurrence as a Python loop
of jitted steps and as NumPy, and a batch of 11 ω values of the common-similarity family in one
call — both as ``jax.vmap`` of the generic path and as the stacked path of
:func:`jaxmtl.paths.omega_path_scan` (one ``K @ C`` with 11·d columns per step) — beside the
ratio of one product with 11·d columns to one with d (the floor of any batched sweep on this
machine). It also times one product of the Gaussian div/curl-free operator
(:class:`jaxmtl.operators.DivCurlOperator`, p = 2: one GEMM with p² + 3p + 1 = 11 columns) against
the bare ``K @ C``. Targets: per-step time ≤ 1.5× one ``K @ C``; 11 ω ≤ 3× one path.

Run: ``python benchmarks/perf_iterative.py [--quick] [--float32]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the jaxmtl checkout

import numpy as np


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--float32", action="store_true")
    args = parser.parse_args(argv)

    import jax

    jax.config.update("jax_enable_x64", not args.float32)
    import jax.numpy as jnp

    from _bench import first_call_time, median_time, table, write
    from jaxmtl.filters import NuMethod
    from jaxmtl.paths import omega_path_scan
    from jaxmtl.paths import path_scan
    from jaxmtl.operators import SeparableOperator, max_eigenvalue
    from jaxmtl.operators import div_curl
    from jaxmtl.kernels.outputs import common_similarity

    dtype = np.float32 if args.float32 else np.float64
    sizes = [500, 1000] if args.quick else [2000, 4000, 8000]
    d, steps, repeats = 10, 200, 3
    filt = NuMethod()
    rows = []

    g = 2000 if not args.quick else 1000
    Mg = jnp.asarray(np.random.default_rng(0).normal(size=(g, g)), dtype)
    gemm = jax.jit(lambda a: a @ a)
    gemm(Mg).block_until_ready()
    t_gemm = median_time(lambda: gemm(Mg).block_until_ready(), repeats)
    gflops = 2 * g**3 / t_gemm / 1e9

    for n in sizes:
        rng = np.random.default_rng(n)
        X = rng.normal(size=(n, 5)).astype(dtype)
        d2 = (X**2).sum(1)[:, None] + (X**2).sum(1)[None] - 2 * X @ X.T
        Knp = np.exp(-np.maximum(d2, 0) / 10.0).astype(dtype)
        Ynp = rng.normal(size=(n, d)).astype(dtype)
        K, Y = jnp.asarray(Knp), jnp.asarray(Ynp)
        A = common_similarity(d, 0.5).astype(dtype)
        op = SeparableOperator(K, A)
        # fixed step, safe for every ω (σ_max(K ⊗ A_1 / n) = λ_max(K)·d/n): no σ_max estimate
        # inside the timed calls
        lam_k = float(max_eigenvalue(lambda v: K @ v, (n, 1), K.dtype))
        tau = jnp.asarray(n / (lam_k * d), dtype)

        bare = jax.jit(lambda K, C: K @ C)
        bare(K, Y).block_until_ready()
        t_kc = median_time(lambda: bare(K, Y).block_until_ready(), repeats)

        Y11 = jnp.tile(Y, (1, 11))
        bare(K, Y11).block_until_ready()
        t_kc11 = median_time(lambda: bare(K, Y11).block_until_ready(), repeats)

        scan = lambda: path_scan(op, Y, filt, steps, tau=tau).coef.block_until_ready()
        t_compile = first_call_time(scan)
        t_scan = median_time(scan, repeats)

        @jax.jit
        def step(state, i):
            return filt.update(state, i, Y / n, lambda C: op.mv(C) / n, tau)[0]

        def loop():
            state = filt.init(Y / n)
            for i in range(1, steps + 1):
                state = step(state, i)
            state[0].block_until_ready()

        loop()
        t_loop = median_time(loop, repeats)

        Anp = np.asarray(A)

        def numpy_loop():
            c, cp = np.zeros_like(Ynp), np.zeros_like(Ynp)
            for i in range(1, steps + 1):
                u, w = (float(v) for v in filt.coefficients(i))
                c, cp = c + u * (c - cp) + 0.5 * w * (Ynp / n - Knp @ c @ Anp / n), c
            return c

        t_numpy = median_time(numpy_loop, 1 if n >= 8000 else repeats)

        omegas = jnp.linspace(0.0, 1.0, 11, dtype=dtype)
        batched = jax.jit(jax.vmap(
            lambda om: path_scan(SeparableOperator(K, om * jnp.ones((d, d), dtype) + (1 - om) * jnp.eye(d, dtype=dtype)),
                                 Y, filt, steps, tau=tau).coef))
        batched(omegas).block_until_ready()
        t_batch = median_time(lambda: batched(omegas).block_until_ready(), repeats)

        stacked = lambda: omega_path_scan(K, Y, omegas, filt, steps, tau=tau).coef.block_until_ready()
        t_stacked_compile = first_call_time(stacked)
        t_stacked = median_time(stacked, repeats)

        # one product of the div/curl-free operator (p = 2) on the same n points
        Xf = rng.normal(size=(n, 2)).astype(dtype)
        Cf = jnp.asarray(rng.normal(size=(n, 2)).astype(dtype))
        field = div_curl(Xf, 1.0, 0.5)
        mv = jax.jit(lambda o, c: o.mv(c))
        mv(field, Cf).block_until_ready()
        t_field = median_time(lambda: mv(field, Cf).block_until_ready(), repeats)

        row = {
            "n": n, "d": d, "steps": steps,
            "K@C_ms": 1e3 * t_kc,
            "scan_step_ms": 1e3 * t_scan / steps,
            "step_over_K@C": t_scan / steps / t_kc,
            "python_loop_step_ms": 1e3 * t_loop / steps,
            "numpy_step_ms": 1e3 * t_numpy / steps,
            "scan_compile_s": t_compile - t_scan,
            "omega11_over_one_path": t_batch / t_scan,
            "omega11_stacked_over_one_path": t_stacked / t_scan,
            "omega11_stacked_compile_s": t_stacked_compile - t_stacked,
            "field_mv_ms": 1e3 * t_field,
            "field_mv_over_K@C": t_field / t_kc,
            "K@C_GFLOPs": 2 * n * n * d / t_kc / 1e9,
            # the floor of any 11-ω batch: one product with 11·d columns against one with d
            "K@C11_over_K@C": t_kc11 / t_kc,
        }
        rows.append(row)
        print(table([row], list(row)), flush=True)

    targets = {
        "step_within_1.5x_K@C": all(r["step_over_K@C"] <= 1.5 for r in rows),
        "omega11_within_3x_one_path": all(r["omega11_over_one_path"] <= 3.0 for r in rows),
        "omega11_stacked_within_3x_one_path": all(r["omega11_stacked_over_one_path"] <= 3.0 for r in rows),
    }
    cols = ["n", "K@C_ms", "scan_step_ms", "step_over_K@C", "python_loop_step_ms", "numpy_step_ms",
            "omega11_over_one_path", "omega11_stacked_over_one_path", "K@C11_over_K@C", "scan_compile_s",
            "field_mv_ms", "field_mv_over_K@C"]
    print(f"\nsquare GEMM {g}x{g}: {gflops:.1f} GFLOP/s ({np.dtype(dtype).name})")
    print(table(rows, cols))
    print("targets:", targets)
    name = "perf_iterative" + ("_quick" if args.quick else "") + ("_f32" if args.float32 else "")
    write(name, {"dtype": np.dtype(dtype).name, "gemm_gflops": gflops, "rows": rows, "targets": targets,
                 "quick": args.quick})
    return {"rows": rows, "targets": targets}


if __name__ == "__main__":
    main()
