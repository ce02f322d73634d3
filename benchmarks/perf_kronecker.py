"""Kronecker structure K ⊗ A (non-diagonal A): structured solve and path against a dense Cholesky.

n = 500, 1000 and d = 10, 50 (``--quick``: n = 200, 400, d = 5, 10), Gaussian K, A = BBᵀ/d + 0.1·I
(dense, non-diagonal). In a fresh subprocess each (time and peak resident set):

* ``structured_solve`` — ours: ``separable_solve(K, A, Y, λ)`` (eigh of A, one n×n Cholesky per output direction; one λ);
* ``structured_path``  — ours: ``separable_eigh`` + ``spectral_path`` over 30 λ, ``output='coefficients'``;
* ``dense_cholesky``   — the nd×nd system (K ⊗ A + nλI) vec C = vec Y built with ``np.kron`` and
  solved by ``scipy.linalg.cho_factor/cho_solve`` (one λ); the dense path is 30 such solves,
  measured where nd ≤ 5000 and otherwise 30 × one solve. nd = 50000 (20 GB) is skipped; nd = 25000
  (5 GB) is timed once.

Everything starts from (X, Y, A) and includes the Gram matrix. The structured coefficients are
checked against the dense solve. Output: ``results/perf_kronecker.json``.

Run: ``python benchmarks/perf_kronecker.py [--quick]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _bench import parse_args, set_threads  # noqa: E402

THREADS = set_threads()  # before numpy / jax: one BLAS/XLA thread per process by default

SIGMA, LAM, N_LAMBDA, P_DIM = 2.0, 1e-3, 30, 5
DENSE_MAX_ND = 25000


def make_data(n, d, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, P_DIM))
    B = rng.normal(size=(d, d))
    A = B @ B.T / d + 0.1 * np.eye(d)
    Y = np.sin(X @ rng.normal(size=(P_DIM, d))) + 0.3 * rng.normal(size=(n, d))
    return X, Y, A


def worker(task):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np
    import scipy.linalg as sl

    from _bench import compile_seconds, timed, worker_memory
    from jaxmtl.filters import Tikhonov
    from jaxmtl.kernels import Gaussian
    from jaxmtl.operators import separable_eigh, separable_solve
    from jaxmtl.paths import spectral_path

    jnp.zeros(1).block_until_ready()
    method, n, d, repeats = task["method"], task["n"], task["d"], task["repeats"]
    X, Y, A = make_data(n, d)
    lams = np.logspace(-5, 0, N_LAMBDA)
    out = {"method": method, "n": n, "d": d, "nd": n * d}
    n_out = n * d
    if method.startswith("structured"):
        kern = Gaussian(jnp.asarray(SIGMA))
        if method == "structured_solve":
            f = jax.jit(lambda X, Y, A, lam: separable_solve(kern(X, X), A, Y, lam))
            args = (X, Y, A, LAM)
        else:
            n_out = N_LAMBDA * n * d
            f = jax.jit(lambda X, Y, A, lams: spectral_path(separable_eigh(kern(X, X), A), Y, Tikhonov(), lams,
                                                            output="coefficients"))
            args = (X, Y, A, lams)
        args = tuple(jnp.asarray(a) for a in args)
        out["compile_s"], compiled = compile_seconds(f, *args)
        r = timed(lambda: compiled(*args).block_until_ready(), repeats)
        C = np.asarray(r["result"])
        if method == "structured_solve":
            Kn = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / (2 * SIGMA**2))
            resid = Kn @ C @ A + n * LAM * C - Y  # residual of (K ⊗ A + nλI) vec C = vec Y, no nd×nd
            out["rel_residual"] = float(np.linalg.norm(resid) / np.linalg.norm(Y))
    else:
        def solve(lam):
            sq = (X**2).sum(1)[:, None] + (X**2).sum(1)[None] - 2 * X @ X.T
            K = np.exp(-np.maximum(sq, 0) / (2 * SIGMA**2))
            G = np.kron(K, A)
            G[np.diag_indices_from(G)] += n * lam
            c = sl.cho_solve(sl.cho_factor(G, overwrite_a=True, check_finite=False), Y.reshape(-1),
                             check_finite=False)
            return c.reshape(n, d)

        if method == "dense_cholesky":
            r = timed(lambda: solve(LAM), repeats)
            C = r["result"]
            resid = None
        else:  # dense_path: 30 refits
            r = timed(lambda: [solve(l) for l in lams], repeats)
    out.update({k: r[k] for k in ("first_s", "median_s", "repeats", "times")})
    if method in ("dense_cholesky", "structured_solve"):
        out["coef_norm"] = float(np.linalg.norm(C))
        out["coef_head"] = [float(v) for v in np.asarray(C).ravel()[:20]]
    ref = 8 * (n * n + d * d + n * (P_DIM + d) + n_out)
    out["memory"] = worker_memory(r["rss_base_kb"], ref)
    out["memory"]["ref_definition"] = "K (n×n) + A + X, Y + outputs (coefficients; 30×n×d for the path)"
    out["memory"]["nd_squared_mb"] = 8 * (n * d) ** 2 / 2**20
    return out


def main(argv=None):
    args = parse_args(__doc__, worker, argv)
    if args is None:  # worker mode
        return {}
    import jax
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    from _bench import bare_kc_seconds, gemm_gflops, isolated, table, versions, write

    ns, ds = ([200, 400], [5, 10]) if args.quick else ([500, 1000], [10, 50])
    limits = {"gemm": gemm_gflops(1000 if args.quick else 2000, np.float64),
              "bare_KC_s": {f"{n}x{d}": bare_kc_seconds(n, d, np.float64) for n in ns for d in ds}}
    print(f"GEMM {limits['gemm']['gflops']:.1f} GFLOP/s", flush=True)
    script = str(Path(__file__).resolve())
    rows = []
    for n in ns:
        for d in ds:
            nd = n * d
            for method in ("structured_solve", "structured_path", "dense_cholesky", "dense_path"):
                if method.startswith("dense") and nd > DENSE_MAX_ND:
                    rows.append({"method": method, "n": n, "d": d, "nd": nd,
                                 "skipped": f"nd×nd matrix of {8 * nd * nd / 2**30:.0f} GiB does not fit"})
                    continue
                if method == "dense_path" and nd > 5000:
                    rows.append({"method": method, "n": n, "d": d, "nd": nd, "extrapolated": True})
                    continue
                reps = 0 if (method.startswith("dense") and nd > 10000) else 3
                t0 = time.perf_counter()
                res = isolated(script, {"method": method, "n": n, "d": d, "repeats": reps})
                res.setdefault("method", method); res.update(n=n, d=d, nd=nd)
                rows.append(res)
                print(f"  n={n} d={d} {method:16s} {res.get('median_s', float('nan')):9.4f} s "
                      f"(wall {time.perf_counter() - t0:.1f} s) {res.get('error', '')[-300:]}", flush=True)
    by = {(r["method"], r["n"], r["d"]): r for r in rows}
    for r in rows:
        key = (r["n"], r["d"])
        if r.get("extrapolated") and "median_s" in by[("dense_cholesky", *key)]:
            r["median_s"] = N_LAMBDA * by[("dense_cholesky", *key)]["median_s"]
            r["note"] = "30 × one dense Cholesky solve (not run)"
    for r in rows:
        key = (r["n"], r["d"])
        if "median_s" in r:
            other = {"structured_solve": "dense_cholesky", "structured_path": "dense_path"}.get(r["method"])
            if other and "median_s" in by.get((other, *key), {}):
                r["speedup_vs_dense"] = by[(other, *key)]["median_s"] / r["median_s"]
            r["peak_alloc_mb"] = r.get("memory", {}).get("alloc_peak_mb", float("nan"))
            r["alloc_over_ref"] = r.get("memory", {}).get("alloc_over_ref", float("nan"))
            r["nd_squared_mb"] = 8 * r["nd"] ** 2 / 2**20
        s, dc = by[("structured_solve", *key)], by.get(("dense_cholesky", *key), {})
        if "coef_head" in s and "coef_head" in dc and r["method"] == "structured_solve":
            r["max_abs_diff_vs_dense_head"] = float(np.max(np.abs(np.array(s["coef_head"]) - np.array(dc["coef_head"]))))
            r["rel_norm_diff_vs_dense"] = abs(s["coef_norm"] - dc["coef_norm"]) / dc["coef_norm"]
    tn, td = ns[-1], ds[0]
    sp = by[("structured_solve", tn, td)].get("speedup_vs_dense", float("nan"))
    targets = {"structured_40x_dense_cholesky": {"n": tn, "d": td, "speedup": sp, "met": bool(sp >= 40)},
               "structured_memory_le_1.5x_ref": {
                   "worst_alloc_over_ref": max(r.get("alloc_over_ref", 0) for r in rows if r["method"].startswith("structured")),
                   "met": bool(all(r.get("alloc_over_ref", 0) <= 1.5 for r in rows if r["method"].startswith("structured")))}}
    if args.quick:
        targets["structured_40x_dense_cholesky"]["note"] = "quick run: not the target size (n=1000, d=10)"
    cols = ["n", "d", "method", "median_s", "compile_s", "repeats", "speedup_vs_dense", "peak_alloc_mb",
            "alloc_over_ref", "nd_squared_mb", "rel_residual", "max_abs_diff_vs_dense_head"]
    print(table(rows, cols))
    for k, t in targets.items():
        print(f"target {k}: {'MET' if t['met'] else 'NOT MET'}  {t}")
    path = write("perf_kronecker" + ("_quick" if args.quick else ""),
                 {"threads": THREADS, "dtype": "float64", "versions": versions(), "limits": limits, "lambda": LAM, "rows": rows,
                  "targets": targets})
    print("wrote", path)


if __name__ == "__main__":
    main()
