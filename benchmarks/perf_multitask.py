"""Multi-task model selection (School protocol): ν-method path over ω against Tikhonov refits.

Task-indexed kernel Q((x,t),(x',t')) = K(x,x')·A_ω[t,t'], A_ω = ω11ᵀ + (1−ω)I ([BRBV11] §6–7.2).
Protocol: per task 20% training / 20% validation / 20% test, Gaussian width from the k = 20%·n_train
nearest neighbours, ω ∈ {0, 0.1, …, 1}, selection on the validation set, explained variance
1 − MSE/Var(y) on the test set (the training mean of y subtracted).

* ``nu_method`` — ours: :class:`jaxmtl.operators.CommonSimilarityTaskOperator` (Q_ω C = ωKC +
  (1−ω)(K∘S)C; K∘S stored once as per-task blocks, :class:`jaxmtl.operators.TaskBlocks`,
  shared by every ω) and :func:`jaxmtl.paths.path_scan`, 150
  ν-method steps with the validation loss at every step, vmapped over the 11 ω: the whole
  selection is one compiled call from the raw arrays.
* ``tikhonov``  — the baseline: for each ω form the N×N task-indexed Gram Q_ω once, and for each
  of 30 λ solve (Q_ω + Nλ I) c = y by Cholesky (scipy) and score on validation: 330 dense solves.

Data: School (:func:`jaxmtl.datasets.load_school`, 19 student features, 139 schools, ≈ 3100
training students) and a synthetic set 4× larger (same 139 task sizes × 4, 19 binary features).
On the synthetic set the Tikhonov sweep (330 solves of N ≈ 12300, ≈ 45 min) is timed on 3 of its
solves and extrapolated to 330 (marked ``extrapolated``); its accuracy is compared on School.
``--quick``: School with 25% of the students per school. Each measurement runs in a fresh
subprocess (peak resident set); compile time is reported apart.
Output: ``results/perf_multitask.json``.

Run: ``python benchmarks/perf_multitask.py [--quick]``.
"""

from __future__ import annotations

import time
from pathlib import Path

from _bench import parse_args, set_threads

set_threads()  # before numpy / jax: one BLAS/XLA thread per process by default

OMEGAS = [i / 10 for i in range(11)]
N_LAMBDA, STEPS = 30, 150


def load(name: str, seed: int = 0):
    """(X, y, tasks) of School (optionally a per-school fraction) or the 4× synthetic set."""
    import numpy as np

    from jaxmtl.datasets import load_school

    school = load_school()
    if name.startswith("school"):
        frac = 0.25 if name == "school_quarter" else 1.0
        rng = np.random.default_rng(1)
        keep = np.concatenate([rng.permutation(np.where(school.tasks == t)[0])[: max(5, int(frac * np.sum(school.tasks == t)))]
                               for t in np.unique(school.tasks)])
        return school.X[keep], school.y[keep], school.tasks[keep]
    rng = np.random.default_rng(7)
    sizes = 4 * np.bincount(school.tasks)
    T, p = len(sizes), school.X.shape[1]
    tasks = np.repeat(np.arange(T), sizes)
    X = (rng.random((tasks.size, p)) < 0.3).astype(np.float64)
    w = rng.normal(size=p)
    V = 0.5 * rng.normal(size=(T, p))
    f = X @ w + np.sum(X * V[tasks], 1) + 0.5 * np.sin(3 * X[:, :5].sum(1)) + rng.normal(size=T)[tasks]
    y = 20 + 3 * f + 6 * rng.normal(size=tasks.size)
    return X, y, tasks


def split(tasks, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    parts = {"train": [], "val": [], "test": []}
    for t in np.unique(tasks):
        idx = rng.permutation(np.where(tasks == t)[0])
        m = int(round(0.2 * len(idx)))
        parts["train"].append(idx[:m]); parts["val"].append(idx[m:2 * m]); parts["test"].append(idx[2 * m:3 * m])
    return tuple(np.concatenate(parts[k]) for k in ("train", "val", "test"))


def worker(task):
    from _bench import compile_seconds, float64_jax, timed, worker_memory

    jax = float64_jax()
    import jax.numpy as jnp
    import numpy as np
    import scipy.linalg as sl

    from jaxmtl.filters import NuMethod
    from jaxmtl.kernels import Gaussian, knn_width
    from jaxmtl.operators import (
        CommonSimilarityTaskOperator,
        task_block_index,
        task_blocks,
    )
    from jaxmtl.paths import path_scan

    method, data = task["method"], task["data"]
    X, y, tasks = load(data)
    tr, va, te = split(tasks)
    width = float(knn_width(X[tr], max(1, int(0.2 * len(tr)))))
    mu = y[tr].mean()
    Xtr, Xva, Xte = X[tr], X[va], X[te]
    ytr, yva, yte = y[tr] - mu, y[va] - mu, y[te] - mu
    ttr, tva, tte = tasks[tr], tasks[va], tasks[te]
    N = len(tr)
    omegas = np.array(OMEGAS)
    out = {"method": method, "data": data, "n_train": N, "n_val": len(va), "n_test": len(te),
           "n_tasks": int(len(np.unique(tasks))), "kernel_width": width}

    def gram(A, B):
        sq = (A**2).sum(1)[:, None] + (B**2).sum(1)[None] - 2 * A @ B.T
        return np.exp(-np.maximum(sq, 0) / (2 * width**2))

    if method == "nu_method":
        filt = NuMethod()

        @jax.jit
        def select(Xtr, ytr, Xva, yva, index, index_v, omegas):
            kern = Gaussian(jnp.asarray(width))
            K, Kv = kern(Xtr, Xtr), kern(Xva, Xtr)
            KS, KvS = task_blocks(K, *index), task_blocks(Kv, *index_v)  # same-task parts as blocks

            def one(w):
                res = path_scan(CommonSimilarityTaskOperator(K, KS, w), ytr[:, None], filt, STEPS,
                                CommonSimilarityTaskOperator(Kv, KvS, w), yva[:, None])
                return res.losses, res.best_coef

            return jax.vmap(one)(omegas)

        args = (*(jnp.asarray(a) for a in (Xtr, ytr, Xva, yva)), task_block_index(ttr, ttr),
                task_block_index(tva, ttr), jnp.asarray(omegas))
        out["compile_s"], compiled = compile_seconds(select, *args)
        r = timed(lambda: jax.block_until_ready(compiled(*args)), task["repeats"])
        losses, coefs = (np.asarray(a) for a in r["result"])
        io, it = np.unravel_index(int(np.argmin(losses)), losses.shape)
        w, C = omegas[io], coefs[io][:, 0]
        out.update(best_omega=float(w), best_steps=int(it) + 1, best_val_mse=float(losses[io, it]))
        del losses, coefs
    else:
        lams = np.logspace(-6, 0, N_LAMBDA)
        grid = [(w, l) for w in omegas for l in lams]
        limit = task.get("limit")

        def sweep():
            K = gram(Xtr, Xtr)
            S = ttr[:, None] == ttr[None]
            KS = np.where(S, K, 0.0); del S
            Kv = gram(Xva, Xtr)
            KvS = np.where(tva[:, None] == ttr[None], Kv, 0.0)
            best, solves = (np.inf, None, None), []
            todo = grid if limit is None else [grid[i] for i in np.linspace(0, len(grid) - 1, limit).astype(int)]
            last_w, Q = None, None
            for w, lam in todo:
                t0 = time.perf_counter()
                if w != last_w:
                    Q = w * K + (1 - w) * KS
                    last_w = w
                G = Q + N * lam * np.eye(N)
                c = sl.cho_solve(sl.cho_factor(G, overwrite_a=True, check_finite=False), ytr, check_finite=False)
                mse = float(np.mean(((w * Kv + (1 - w) * KvS) @ c - yva) ** 2))
                solves.append(time.perf_counter() - t0)
                if mse < best[0]:
                    best = (mse, (w, lam), c)
            return best, solves

        r = timed(sweep, task["repeats"])
        (mse, (w, lam), C), solves = r["result"]
        out.update(best_omega=float(w), best_lambda=float(lam), best_val_mse=mse,
                   per_solve_median_s=float(np.median(solves)), solves_timed=len(solves))
        if limit is not None:
            out["extrapolated"] = True
            out["measured_s"] = r["median_s"]
            r["median_s"] = r["median_s"] * len(grid) / len(solves)
    out.update({k: r[k] for k in ("first_s", "median_s", "repeats", "times")})
    Kte = gram(Xte, Xtr)
    pred = (w * Kte + (1 - w) * np.where(tte[:, None] == ttr[None], Kte, 0.0)) @ C
    out["test_explained_variance"] = float(1 - np.mean((pred - yte) ** 2) / np.var(y[te]))
    nv = len(va)
    ref = 8 * (N * N + nv * N + X.size + y.size + N + len(omegas) * STEPS)
    out["memory"] = worker_memory(r["rss_base_kb"], ref)
    out["memory"]["ref_definition"] = "K (N_train²) + validation cross-Gram (N_val × N_train) + X, y + outputs"
    return out


def main(argv=None):
    args = parse_args(__doc__, worker, argv)
    if args is None:  # worker mode
        return
    import numpy as np
    from _bench import bare_kc_seconds, float64_jax, gemm_gflops, report, run_isolated

    float64_jax()

    sets = ["school_quarter"] if args.quick else ["school", "synthetic_4x"]
    limits = {"gemm": gemm_gflops(1000 if args.quick else 2000, np.float64)}
    big = lambda data: data == "synthetic_4x"
    tasks = [{"method": method, "data": data, "repeats": 0 if (big(data) or method == "tikhonov") else 3,
              "limit": 3 if (big(data) and method == "tikhonov") else None}
             for data in sets for method in ("nu_method", "tikhonov")]
    rows = run_isolated(str(Path(__file__).resolve()), tasks, ("method", "data"), timeout=1800)
    for r in rows:
        if "n_train" in r and r["method"] == "nu_method":
            limits.setdefault("bare_KC_s", {})[r["data"]] = bare_kc_seconds(r["n_train"], 2 * len(OMEGAS), np.float64)
    by = {(r["method"], r["data"]): r for r in rows}
    for r in rows:
        tk = by.get(("tikhonov", r["data"]), {}).get("median_s")
        if "median_s" in r and tk:
            r["speedup_vs_tikhonov"] = tk / r["median_s"]
            r["peak_alloc_mb"] = r["memory"]["alloc_peak_mb"]
            r["alloc_over_ref"] = r["memory"]["alloc_over_ref"]
    ref = sets[0]
    nu, tk = by[("nu_method", ref)], by[("tikhonov", ref)]
    sp = nu.get("speedup_vs_tikhonov", float("nan"))
    ev_gap = nu.get("test_explained_variance", float("nan")) - tk.get("test_explained_variance", float("nan"))
    targets = {"nu_50x_tikhonov_same_ev": {
        "data": ref, "speedup": sp, "ev_nu": nu.get("test_explained_variance"),
        "ev_tikhonov": tk.get("test_explained_variance"),
        "met": bool(sp >= 50 and ev_gap >= -0.01), "note": "same explained variance = within 1 percentage point"}}
    if "synthetic_4x" in sets:
        targets["synthetic_4x_speedup_extrapolated"] = by[("nu_method", "synthetic_4x")].get("speedup_vs_tikhonov")
    cols = ["data", "method", "n_train", "median_s", "compile_s", "repeats", "speedup_vs_tikhonov", "best_omega",
            "best_steps", "best_lambda", "test_explained_variance", "peak_alloc_mb", "alloc_over_ref", "extrapolated"]
    report("perf_multitask", args.quick, rows, cols, targets, limits=limits, omegas=OMEGAS, n_lambda=N_LAMBDA,
           steps=STEPS)


if __name__ == "__main__":
    main()
