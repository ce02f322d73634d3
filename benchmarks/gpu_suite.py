"""Accelerator suite: path bandwidth, batched-sweep FLOP/s, GPU peers, SVM solver, float32 vs TF32.

One command, a few minutes on one GPU, installing nothing: peers are used when importable and
recorded as "not installed" otherwise. Targets, each measured in this run:

(a) ``bandwidth`` — one matrix-free ν-method step (:func:`jaxmtl.paths.path_scan`, one output)
    reads the n × n Gram once: n²·itemsize bytes / step time, as % of the device's HBM peak
    (``HBM_PEAK_TBS``, by device name); on the CPU, of the machine's own STREAM-like triad
    bandwidth measured in the same run (also measured on a GPU, reported beside the peak).
(b) ``batched_flops`` — the stacked ω sweep (:func:`jaxmtl.paths.omega_path_scan`): every step is
    ONE n × n by n × (Ω·d) product; 2·n²·Ω·d FLOP / step time, as % of the dense GEMM throughput
    of ``jnp.dot`` on n × n matrices in the same dtype, measured in the same run.
(c) ``peers`` — the same data and λ grid (kernel ridge) or C grid (SVC): ours (the eigen path:
    one eigh for every λ; ``smo_path``: every C in one call) against cuML KernelRidge / SVC,
    Falkon, himalaya's ``torch_cuda`` backend, GPyTorch's exact solve (CG and Cholesky), a plain PyTorch
    Cholesky per λ, KeOps when importable, and scikit-learn
    KernelRidge / SVC (CPU peers, always); time and test error per row, each row naming its ``peer``.
(d) ``svm`` — :class:`jaxmtl.models.KernelMachineClassifier` (SMO, fixed C and width) against
    cuML SVC if importable, and libsvm (scikit-learn SVC); fit times timed alternately.
(e) ``precision`` — the batched sweep's validation losses with float32 products at full
    precision and at TF32 (``jax.default_matmul_precision``), against float64; the CPU backend
    ignores the setting, so there the two are equal (checked, and said).
(f) ``routes`` — ``regularization_path(route="auto")`` against its eigen and direct routes and
    ``torch.linalg.cholesky`` per point on the same Grams: hold-out over 7 λ, and 5-fold × 20 λ × 6 ω.

Usage: python benchmarks/gpu_suite.py [--cpu] [--quick] [--threads N] [--only c_peers,...]
Writes benchmarks/results/gpu_suite.json on an accelerator, gpu_suite_cpu[_quick].json with
``--cpu`` (never under the accelerator's name).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

PARSER = argparse.ArgumentParser(description=__doc__.splitlines()[0])
PARSER.add_argument("--cpu", action="store_true", help="run on the CPU backend (JAX_PLATFORMS=cpu)")
PARSER.add_argument("--quick", action="store_true", help="small sizes (seconds to a minute on a CPU)")
PARSER.add_argument("--only", default=None,
                    help="comma-separated targets to rerun (e.g. c_peers); the others are kept from the last results file")
PARSER.add_argument("--threads", type=int, default=None,
                    help="BLAS / XLA threads on the CPU (0: library defaults; default 1 with --cpu, else 0)")

# HBM peak bandwidth (TB/s) by a substring of ``device.device_kind``, first match wins (vendor data sheets).
HBM_PEAK_TBS = (("GH200", 4.0), ("H200", 4.8), ("H100 PCIe", 2.0), ("H100 NVL", 3.9), ("H100", 3.35),
                ("A100-SXM4-80GB", 2.039), ("A100 80GB PCIe", 1.935), ("A100", 1.555), ("L40S", 0.864),
                ("L4", 0.3), ("V100", 0.9), ("A10", 0.6), ("T4", 0.32))
TARGET_BANDWIDTH, TARGET_GEMM = 70.0, 50.0  # % (issue targets)
STEPS = 20
CEILING_REPEATS = 5  # the bandwidth and GEMM ceilings: best of 5 calls (the targets divide by them)
D = 8  # outputs per ω of the batched sweep


def sizes(quick: bool, accel: bool) -> dict:
    """Problem sizes: on an accelerator (≤ 8 min on one H100), the CPU, the CPU quick run."""
    if accel:
        return {"bw_n": 16384, "batch_n": 16384, "columns": (64, 256, 1024), "gemm_n": 8192,
                "stream": 2**26, "peer_n": 10000, "svm_n": 10000, "prec_n": 8192, "repeats": 3}
    if quick:
        return {"bw_n": 3000, "batch_n": 1000, "columns": (64,), "gemm_n": 1000,
                "stream": 2**24, "peer_n": 400, "svm_n": 400, "prec_n": 400, "repeats": 2}
    return {"bw_n": 6000, "batch_n": 2000, "columns": (64, 256), "gemm_n": 2000,
            "stream": 2**24, "peer_n": 2000, "svm_n": 2000, "prec_n": 1000, "repeats": 3}


def data(n: int, d: int, seed: int = 0):
    """Regression data (n train, n/2 test, 10 features, d outputs) and ±1 labels, standardised."""
    import numpy as np

    rng = np.random.default_rng(seed)
    m = n + n // 2
    X = rng.normal(size=(m, 10))
    W = rng.normal(size=(10, d)) / 3
    Y = np.sin(X @ W) + X[:, :1] * X[:, 1:2] / 3 + 0.1 * rng.normal(size=(m, d))
    y = np.where(X[:, 0] + np.sin(2 * X[:, 1]) + 0.3 * rng.normal(size=m) > 0, 1.0, -1.0)
    return X[:n], Y[:n], y[:n], X[n:], Y[n:], y[n:]


def gram(X, Z, sigma):
    """Gaussian Gram exp(−‖x − z‖² / 2σ²) by :class:`jaxmtl.kernels.Gaussian`."""
    from jaxmtl.kernels import Gaussian

    return Gaussian(sigma)(X, Z)


def stream_triad(size: int, dtype, repeats: int) -> dict:
    """Main-memory bandwidth (GB/s): the better of a = b + s·c in JAX (3·size·itemsize bytes / time)
    and, on the CPU, NumPy's copy into a preallocated array (2·size·itemsize bytes, no page faults);
    best of ``CEILING_REPEATS`` calls (a ceiling)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    item = np.dtype(dtype).itemsize
    b = jnp.arange(size, dtype=dtype)
    c = jnp.ones(size, dtype)
    f = jax.jit(lambda b, c: b + dtype(1.5) * c)
    f(b, c).block_until_ready()
    t = best_time(lambda: f(b, c).block_until_ready(), CEILING_REPEATS)
    out = {"elements": size, "jax_triad_s": t, "jax_triad_GBs": 3 * size * item / t / 1e9}
    if jax.devices()[0].platform == "cpu":
        src, dst = np.ones(size, dtype), np.zeros(size, dtype)
        tc = best_time(lambda: np.copyto(dst, src), CEILING_REPEATS)
        out.update(numpy_copy_s=tc, numpy_copy_GBs=2 * size * item / tc / 1e9)
    out["GBs"] = max(out["jax_triad_GBs"], out.get("numpy_copy_GBs", 0.0))
    return out


def best_time(fn, repeats: int) -> float:
    """Shortest wall time of ``repeats`` calls of blocking ``fn``: the machine's ceiling, not its typical speed."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def gemm_ceiling(size: int, dtype) -> dict:
    """Square ``jnp.dot`` throughput (GFLOP/s) in ``dtype`` and the current matmul precision, best of
    ``CEILING_REPEATS`` calls after compilation."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    M = jnp.asarray(np.random.default_rng(0).normal(size=(size, size)), dtype)
    f = jax.jit(jnp.dot)
    f(M, M).block_until_ready()
    t = best_time(lambda: f(M, M).block_until_ready(), CEILING_REPEATS)
    return {"size": size, "seconds": t, "gflops": 2 * size**3 / t / 1e9, "statistic": f"best of {CEILING_REPEATS}"}


def hbm_peak(kind: str):
    """(TB/s, table key) of the first ``HBM_PEAK_TBS`` entry in ``kind``, else (None, None)."""
    for key, tbs in HBM_PEAK_TBS:
        if key.lower() in kind.lower():
            return tbs, key
    return None, None


def steps_time(fn, args, repeats: int) -> tuple[float, float]:
    """(first-call seconds, compilation included; median seconds after it) of ``fn(*args)``."""
    import jax
    from _bench import first_call_time, median_time

    first = first_call_time(lambda: jax.block_until_ready(fn(*args)))
    return first, median_time(lambda: jax.block_until_ready(fn(*args)), repeats)


def target_bandwidth(sz, dtype, accel, kind, stream) -> dict:
    """(a): bytes of K per step over the time of one path step."""
    import jax
    import jax.numpy as jnp

    from jaxmtl.filters import NuMethod
    from jaxmtl.operators import SeparableOperator
    from jaxmtl.operators.base import max_eigenvalue
    from jaxmtl.paths import path_scan

    n = sz["bw_n"]
    X, Y, *_ = data(n, 1)
    K = gram(jnp.asarray(X, dtype), jnp.asarray(X, dtype), 3.0)
    tau = n / max_eigenvalue(lambda v: K @ v, (n, 1), dtype)  # the ν-method's 1/σ_max(K/n), outside the timing
    f = jax.jit(lambda K, Y, tau: path_scan(SeparableOperator(K, jnp.eye(1, dtype=dtype)), Y, NuMethod(), STEPS,
                                            tau=tau).coef)
    comp, t = steps_time(f, (K, jnp.asarray(Y, dtype), tau), sz["repeats"])
    step = t / STEPS
    gbs = n * n * jnp.dtype(dtype).itemsize / step / 1e9
    peak_tbs, key = hbm_peak(kind) if accel else (None, None)
    if peak_tbs is not None:
        peak, source = 1000 * peak_tbs, f"HBM peak of '{key}' (data sheet)"
    else:
        peak, source = stream["GBs"], "STREAM-like bandwidth measured in this run"
    pct = 100 * gbs / peak
    return {"n": n, "steps": STEPS, "step_s": step, "first_call_s": comp, "bytes_per_step": n * n * jnp.dtype(dtype).itemsize,
            "GBs": gbs, "peak_GBs": peak, "peak_source": source, "stream_triad_GBs": stream["GBs"],
            "percent_of_peak": pct, "target_percent": TARGET_BANDWIDTH, "met": bool(pct >= TARGET_BANDWIDTH),
            "note": "the Gram is read once per step" + ("" if accel else
                    "; on the CPU a read-only matrix-vector stream can beat the copy (which also pays the "
                    "write-allocate of its destination), and a shared machine's figures move with its load")}


def target_batched(sz, dtype, gemm) -> dict:
    """(b): the stacked ω sweep's FLOP/s against the same run's GEMM throughput."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxmtl.filters import NuMethod
    from jaxmtl.paths import omega_path_scan

    n = sz["batch_n"]
    X, Y, *_ = data(n, D)
    K = gram(jnp.asarray(X, dtype), jnp.asarray(X, dtype), 3.0)
    Yj = jnp.asarray(Y, dtype)
    f = jax.jit(lambda K, Y, om: omega_path_scan(K, Y, om, NuMethod(), STEPS).coef)
    rows = []
    for cols in sz["columns"]:
        om = jnp.asarray(np.linspace(0.0, 1.0, cols // D), dtype)
        comp, t = steps_time(f, (K, Yj, om), sz["repeats"])
        step = t / STEPS  # the Lanczos estimate of σ_max (a few matrix-vector products) is inside t
        gflops = 2.0 * n * n * cols / step / 1e9
        rows.append({"n": n, "omegas": cols // D, "d": D, "columns": cols, "step_s": step, "first_call_s": comp,
                     "gflops": gflops, "gemm_gflops": gemm["gflops"],
                     "percent_of_gemm": 100 * gflops / gemm["gflops"]})
    at64 = next((r for r in rows if r["columns"] == 64), rows[0])
    return {"rows": rows, "gemm": gemm, "target_percent": TARGET_GEMM,
            "percent_at_64_columns": at64["percent_of_gemm"], "met_at_64_columns": bool(at64["percent_of_gemm"] >= TARGET_GEMM),
            "percent_at_largest": rows[-1]["percent_of_gemm"], "met": bool(rows[-1]["percent_of_gemm"] >= TARGET_GEMM)}


# ------------------------------------------------------------------------------------------------ peers
def _importable(mod: str):
    """The module, or the reason it cannot be used."""
    try:
        return __import__(mod), None
    except Exception as exc:  # noqa: BLE001 - absent or broken peer
        return None, "not installed" if isinstance(exc, ModuleNotFoundError) else f"import failed: {exc!r}"[:300]


def _torch_cuda():
    """torch with a CUDA device, or the reason there is none."""
    torch, why = _importable("torch")
    if torch is None:
        return None, f"torch {why}"
    if not torch.cuda.is_available():
        return None, "torch has no CUDA device"
    return torch, None


def krr_peers(gamma: float):
    """{peer: (fit_predict(X, Y, Xt, alpha) → (m, d) array) or reason}, the GPU peers then scikit-learn."""
    import numpy as np

    out = {}
    cuml, why = _importable("cuml")
    out["cuml.KernelRidge"] = why or (lambda X, Y, Xt, a: np.asarray(
        cuml.KernelRidge(alpha=a, kernel="rbf", gamma=gamma).fit(X, Y).predict(Xt)))
    torch, why = _torch_cuda()
    him, hwhy = _importable("himalaya")
    if torch is None or him is None:
        out["himalaya.KernelRidge[torch_cuda]"] = why or f"himalaya {hwhy}"
    else:
        from himalaya.backend import set_backend
        from himalaya.kernel_ridge import KernelRidge as HKR

        def himalaya_fit(X, Y, Xt, a):
            backend = set_backend("torch_cuda", on_error="raise")
            model = HKR(alpha=a, kernel="rbf", kernel_params={"gamma": gamma}).fit(X, Y)
            return backend.to_numpy(model.predict(Xt))

        out["himalaya.KernelRidge[torch_cuda]"] = himalaya_fit
    falkon, fwhy = _importable("falkon")
    if torch is None or falkon is None:
        out["falkon.Falkon (M = n)"] = why or f"falkon {fwhy}"
    else:
        def falkon_fit(X, Y, Xt, a):
            kern = falkon.kernels.GaussianKernel(sigma=float(np.sqrt(0.5 / gamma)))
            model = falkon.Falkon(kernel=kern, penalty=a / X.shape[0], M=X.shape[0], seed=0)
            model.fit(torch.as_tensor(X), torch.as_tensor(Y))
            return model.predict(torch.as_tensor(Xt)).cpu().numpy()

        out["falkon.Falkon (M = n)"] = falkon_fit
    keops, kwhy = _importable("pykeops")
    if torch is None or keops is None:
        out["pykeops LazyTensor.solve"] = why or f"pykeops {kwhy}"
    else:
        from pykeops.torch import LazyTensor

        def keops_fit(X, Y, Xt, a):
            x, y, xt = (torch.as_tensor(v, device="cuda") for v in (X, Y, Xt))
            k = lambda A, B: (-gamma * ((LazyTensor(A[:, None, :]) - LazyTensor(B[None, :, :])) ** 2).sum(-1)).exp()
            c = k(x, x).solve(y, alpha=a)
            return (k(xt, x) @ c).cpu().numpy()

        out["pykeops LazyTensor.solve"] = keops_fit
    if torch is None:
        out["torch.linalg.cholesky per λ (CUDA)"] = why
    else:
        def torch_cholesky(X, Y, Xt, a):  # what a PyTorch user writes: the Gram on the GPU, one Cholesky per λ
            x, y, xt = (torch.as_tensor(v, device="cuda", dtype=torch.float32) for v in (X, Y, Xt))
            K = torch.exp(-gamma * torch.cdist(x, x) ** 2)
            L = torch.linalg.cholesky(K + a * torch.eye(len(x), device="cuda"))
            c = torch.cholesky_solve(y, L)
            return (torch.exp(-gamma * torch.cdist(xt, x) ** 2) @ c).cpu().numpy()

        out["torch.linalg.cholesky per λ (CUDA)"] = torch_cholesky
    gp, gwhy = _importable("gpytorch")
    if torch is None or gp is None:
        out["gpytorch solve (CG)"] = out["gpytorch solve (Cholesky)"] = why or f"gpytorch {gwhy}"
    else:
        def gpytorch_fit(cholesky: bool):
            """GPyTorch's exact solve (K + a·I)⁻¹Y through linear_operator: its default CG (with its pivoted-
            Cholesky preconditioner) above ``max_cholesky_size``, or a Cholesky when the size allows it."""
            def fit(X, Y, Xt, a):
                x, y, xt = (torch.as_tensor(v, device="cuda", dtype=torch.float32) for v in (X, Y, Xt))
                kern = gp.kernels.RBFKernel().cuda()
                kern.lengthscale = float(np.sqrt(0.5 / gamma))
                with torch.no_grad(), gp.settings.max_cholesky_size(10**7 if cholesky else 0):
                    c = kern(x).add_diagonal(torch.tensor(float(a), device="cuda", dtype=torch.float32)).solve(y)
                    return (kern(xt, x) @ c).cpu().numpy()
            return fit

        out["gpytorch solve (CG)"] = gpytorch_fit(False)
        out["gpytorch solve (Cholesky)"] = gpytorch_fit(True)
    from sklearn.kernel_ridge import KernelRidge

    out["sklearn.KernelRidge (CPU)"] = lambda X, Y, Xt, a: KernelRidge(alpha=a, kernel="rbf", gamma=gamma).fit(
        X, Y).predict(Xt)
    return out


def svc_peers(gamma: float):
    """{peer: (fit(X, y, C) → decision values on Xt via .decision) or reason} for the SVC grid and (d)."""
    import numpy as np

    out = {}
    cuml, why = _importable("cuml")
    out["cuml.SVC"] = why or (lambda X, y, Xt, C: np.asarray(
        cuml.svm.SVC(C=C, kernel="rbf", gamma=gamma, tol=1e-3).fit(X, y).decision_function(Xt)))
    from sklearn.svm import SVC

    out["sklearn.SVC (libsvm, CPU)"] = lambda X, y, Xt, C: SVC(C=C, gamma=gamma, tol=1e-3).fit(X, y).decision_function(Xt)
    return out


def target_peers(sz, dtype, accel: bool) -> dict:
    """(c): kernel ridge over a λ grid and SVC over a C grid, ours and every importable peer."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxmtl.filters import Tikhonov
    from jaxmtl.operators import separable_eigh
    from jaxmtl.paths import spectral_path
    from jaxmtl.solvers import smo_path

    n, reps = sz["peer_n"], sz["repeats"]
    X, Y, y, Xt, Yt, yt = data(n, 4)
    sigma = np.sqrt(X.shape[1] / 2.0)
    gamma = 1.0 / (2 * sigma**2)
    lams = np.logspace(-6, 0, 7)
    Cs = np.array([0.3, 1.0, 3.0])
    Xj, Xtj = jnp.asarray(X, dtype), jnp.asarray(Xt, dtype)

    @jax.jit
    def krr(X, Xt, Y, lams):
        eig = separable_eigh(gram(X, X, sigma), jnp.eye(Y.shape[1], dtype=Y.dtype))
        return spectral_path(eig, Y, Tikhonov(), lams, K_eval=gram(Xt, X, sigma), output="predictions")

    gram_j = jax.jit(lambda A, B: gram(A, B, sigma))

    def svc(X, Xt, y, Cs):  # the checked entry (not traceable): the Grams compiled, the C grid one call
        r = smo_path(gram_j(X, X), y, Cs, tol=1e-3)
        return (gram_j(Xt, X) @ r.coef[0, :, :, 0].T + r.intercept[0, :, 0]).T  # (C, m)

    mse = lambda P: [float(np.mean((np.asarray(p, np.float64) - Yt) ** 2)) for p in P]
    err = lambda F: [float(np.mean(np.where(np.asarray(f) >= 0, 1.0, -1.0) != yt)) for f in F]
    rows, missing = [], {}
    tasks = (("kernel ridge, λ grid (7)", krr, (Xj, Xtj, jnp.asarray(Y, dtype), jnp.asarray(lams, dtype)), mse,
              krr_peers(gamma), lambda fn: [fn(X, Y, Xt, n * lam) for lam in lams], "test_mse"),
             ("SVC, C grid (3)", svc, (Xj, Xtj, jnp.asarray(y, dtype), Cs),
              err, svc_peers(gamma), lambda fn: [fn(X, y, Xt, C) for C in Cs],
              "test_error"))
    for task, ours, args, metric, peers, run_grid, name in tasks:
        comp, t = steps_time(ours, args, reps)
        mine = metric(ours(*args))
        with jax.default_matmul_precision("highest"):  # the same grid with full float32 products (no TF32)
            full = min(metric(ours(*args)))  # the precision is part of jit's cache key: a new trace
        for peer, fn in peers.items():
            if not callable(fn):
                missing[peer] = fn
                continue
            gpu_peer = not peer.startswith("sklearn")
            peer_reps = reps if gpu_peer or not accel else 1  # CPU refits at accelerator sizes: once
            try:
                if gpu_peer:
                    run_grid(fn)  # warm-up (CUDA context, kernels)
                start = time.perf_counter()
                for _ in range(peer_reps):
                    out = run_grid(fn)
                tp = (time.perf_counter() - start) / peer_reps
                theirs = metric(out)
            except Exception as exc:  # noqa: BLE001 - a peer that fails is recorded, not fatal
                missing[peer] = f"failed: {exc!r}"[:300]
                continue
            rows.append({"task": task, "peer": peer, "n": n, "ours_s": t, "ours_first_call_s": comp, "peer_s": tp,
                         "peer_over_ours": tp / t, "peer_repeats": peer_reps, f"ours_best_{name}": min(mine),
                         f"ours_best_{name}_highest_precision": full, f"peer_best_{name}": min(theirs),
                         f"max_{name}_diff_over_grid": float(np.max(np.abs(np.subtract(mine, theirs))))})
    return {"rows": rows, "not_available": missing,
            "ours": "kernel ridge: jaxmtl.paths.spectral_path (Tikhonov, one eigh for the grid, alpha = n·λ); "
                    "SVC: jaxmtl.solvers.smo_path (the C grid warm-started, one call)"}


def target_svm(sz, dtype) -> dict:
    """(d): KernelMachineClassifier against cuML SVC (if importable) and libsvm, fixed C and width."""
    import numpy as np
    from _bench import alternate

    from jaxmtl.kernels import Gaussian
    from jaxmtl.models import KernelMachineClassifier

    n = sz["svm_n"]
    X, _, y, Xt, _, yt = data(n, 1, seed=1)
    sigma = np.sqrt(X.shape[1] / 2.0)
    gamma = 1.0 / (2 * sigma**2)
    dname = np.dtype(dtype).name
    est = {}

    def ours():
        est["ours"] = KernelMachineClassifier(C=1.0, kernel=Gaussian(sigma), tol=1e-3, dtype=dname).fit(X, y)

    fns, missing = {"ours": ours}, {}
    for peer, fn in svc_peers(gamma).items():
        if callable(fn):
            fns[peer] = (lambda fn=fn, peer=peer: est.__setitem__(peer, fn(X, y, Xt, 1.0)))
        else:
            missing[peer] = fn
    for f in fns.values():
        f()  # compile / warm up
    med = alternate(fns, sz["repeats"])
    errs = {k: float(np.mean(np.where(np.asarray(v) >= 0, 1.0, -1.0) != yt)) for k, v in est.items() if k != "ours"}
    ours_err = float(np.mean(est["ours"].predict(Xt) != yt))
    rows = [{"peer": p, "n": n, "C": 1.0, "ours_s": med["ours"], "peer_s": med[p], "ours_over_peer": med["ours"] / med[p],
             "ours_test_error": ours_err, "peer_test_error": e} for p, e in errs.items()]
    return {"rows": rows, "not_available": missing, "ours": "KernelMachineClassifier(loss='hinge', C=1, SMO, tol=1e-3)",
            "statistic": "median wall time, methods timed alternately"}


def target_precision(sz, accel: bool) -> dict:
    """(e): validation losses of the batched sweep, float32 (full precision / TF32) against float64."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxmtl.filters import NuMethod
    from jaxmtl.paths import omega_path_scan

    n = sz["prec_n"]
    X, Y, _, Xt, Yt, _ = data(n, D, seed=2)
    om = np.linspace(0.0, 1.0, 8)

    def losses(dtype, precision):
        with jax.default_matmul_precision(precision):
            f = jax.jit(lambda X, Xt, Y, Yt, om: omega_path_scan(gram(X, X, 3.0), Y, om, NuMethod(), 3 * STEPS,
                                                                  gram(Xt, X, 3.0), Yt).losses)
            return np.asarray(f(*(jnp.asarray(a, dtype) for a in (X, Xt, Y, Yt, om))), np.float64)

    ref = losses(jnp.float64, "float32")  # float64 operands: the setting does not apply
    out = {"n": n, "omegas": len(om), "steps": 3 * STEPS, "float64_best_val_mse": float(ref.min())}
    for name, precision in (("float32", "float32"), ("tf32", "tensorfloat32")):
        L = losses(jnp.float32, precision)
        out[name] = {"matmul_precision": precision, "best_val_mse": float(L.min()),
                     "max_rel_loss_error_vs_float64": float(np.max(np.abs(L - ref) / ref))}
    same = out["float32"]["best_val_mse"] == out["tf32"]["best_val_mse"]
    out["tf32_equals_float32"] = bool(same)
    out["note"] = ("the CPU backend ignores jax.default_matmul_precision: float32 and TF32 rows are the same "
                   "computation" if not accel else "TF32 products on the tensor cores against full float32")
    return out


def _torch_route_baselines(torch, K, Ke, Y, Ye, lams, a, V, rows):
    """What a PyTorch user writes, on the same Grams: one ``torch.linalg.cholesky`` per λ (hold-out, A = I),
    and per fold, λ and distinct eigenvalue of A_ω in A's eigenbasis (k-fold × ω), in float32."""
    import numpy as np

    t = lambda v: torch.as_tensor(np.asarray(v), device="cuda", dtype=torch.float32)  # noqa: E731
    Kt, Ket, Yt_, Yet = t(K), t(Ke), t(Y), t(Ye)
    eye = lambda k: torch.eye(k, device="cuda")  # noqa: E731

    def holdout():
        out = []
        for lam in lams:
            L = torch.linalg.cholesky(Kt + Kt.shape[0] * float(lam) * eye(Kt.shape[0]))
            out.append(torch.mean((Ket @ torch.cholesky_solve(Yt_, L) - Yet) ** 2))
        return torch.stack(out).cpu().numpy()

    values = np.unique(np.round(np.asarray(a, np.float64), 6))
    tr, held = (torch.as_tensor(np.asarray(r), device="cuda") for r in rows[:2])
    Vt, at = t(V), t(a)
    Yrot = Yt_ @ Vt

    def kfold():
        out = torch.zeros(a.shape[0], len(lams), device="cuda")
        for f in range(tr.shape[0]):
            Kf, Kef, nf = Kt[tr[f]][:, tr[f]], Kt[held[f]][:, tr[f]], tr.shape[1]
            for p, lam in enumerate(lams):
                Z = {}
                for u in values:
                    Z[u] = torch.cholesky_solve(Yrot[tr[f]], torch.linalg.cholesky(u * Kf + nf * float(lam) * eye(nf)))
                for w in range(a.shape[0]):
                    key = np.round(np.asarray(a[w], np.float64), 6)
                    Ct = torch.stack([Z[k][:, j] for j, k in enumerate(key)], 1) * at[w]
                    out[w, p] += torch.mean((Kef @ Ct @ Vt.T - Yt_[held[f]]) ** 2) / tr.shape[0]
        return out.cpu().numpy()

    return holdout, kfold


def target_routes(sz, dtype, accel: bool) -> dict:
    """(f): regularization_path(route="auto") against the eigen and direct routes and, on a GPU, against
    ``torch.linalg.cholesky`` per point: hold-out over 7 λ (A = I) and 5-fold × 20 λ × 6 ω (issue 54's cells)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxmtl import Holdout, KFold, regularization_path
    from jaxmtl.filters import Tikhonov
    from jaxmtl.kernels.outputs import common_similarity_eigh
    from jaxmtl.selection import fold_indices, kfold_masks

    n, reps = sz["peer_n"], sz["repeats"]
    X, Y, _, Xt, Yt, _ = data(n, 2)
    sigma = np.sqrt(X.shape[1] / 2.0)
    K, Ke = gram(jnp.asarray(X, dtype), jnp.asarray(X, dtype), sigma), gram(jnp.asarray(Xt, dtype), jnp.asarray(X, dtype), sigma)
    Yj, Ytj = jnp.asarray(Y, dtype), jnp.asarray(Yt, dtype)
    masks = kfold_masks(n, 5)
    a, V = common_similarity_eigh(2, np.linspace(0.0, 0.9, 6))
    cells = {"hold-out x 7 lam": (jnp.asarray(np.logspace(-6, 0, 7), dtype), jnp.eye(2, dtype=dtype),
                                  Holdout(Ke, Ytj)),
             "5-fold x 20 lam x 6 omega": (jnp.asarray(np.logspace(-6, 0, 20), dtype), (a.astype(dtype), V.astype(dtype)),
                                           KFold(masks))}
    torch, why = _torch_cuda()
    rows = []
    for (cell, (lams, outputs, crit)), baseline in zip(cells.items(), ("holdout", "kfold")):
        row = {"cell": cell, "n": n}
        for route in ("auto", "eigen", "direct"):
            fn = jax.jit(lambda K, Y, r=route, lams=lams, outputs=outputs, crit=crit: (lambda s: (
                s.losses, s.eig is None))(regularization_path(K, Y, outputs, Tikhonov(), lams, crit, route=r)))
            row[f"{route}_first_call_s"], row[f"{route}_s"] = steps_time(fn, (K, Yj), reps)
            if route == "auto":
                row["auto_route"] = "direct" if bool(fn(K, Yj)[1]) else "eigen"
        if torch is not None:
            fns = dict(zip(("holdout", "kfold"), _torch_route_baselines(
                torch, K, Ke, Yj, Ytj, np.asarray(lams), np.asarray(a), np.asarray(V), fold_indices(masks))))
            fns[baseline]()  # warm-up
            start = time.perf_counter()
            fns[baseline]()
            row["torch_cholesky_per_point_s"] = time.perf_counter() - start
            row["torch_over_auto"] = row["torch_cholesky_per_point_s"] / row["auto_s"]
        rows.append(row)
    return {"rows": rows, "not_available": {} if torch is not None else {"torch.linalg.cholesky per point": why},
            "targets": "auto <= torch.linalg.cholesky per λ on the 7-λ hold-out at n = 10 000; auto >= 5x ahead of "
                       "it on 5-fold x 20 λ x 6 ω (a GPU run; on the CPU the routes are timed without the peer)"}


def main(argv=None):
    args = PARSER.parse_args(argv)
    if args.cpu:
        os.environ["JAX_PLATFORMS"] = "cpu"
    import _bench

    threads = args.threads if args.threads is not None else (1 if args.cpu else 0)  # host peers: all cores
    _bench.set_threads(["--threads", str(threads)])
    import jax

    jax.config.update("jax_enable_x64", True)  # float64 reference of (e); every other array is float32
    import jax.numpy as jnp
    import numpy as np

    dev = jax.devices()[0]
    accel = dev.platform != "cpu"
    sz = sizes(args.quick, accel)
    dtype = np.float32
    start = time.perf_counter()
    stream = stream_triad(sz["stream"], dtype, sz["repeats"])
    gemm = gemm_ceiling(sz["gemm_n"], jnp.float32)  # same dtype and matmul precision as the sweep
    print(f"device {dev.device_kind}: triad {stream['GBs']:.1f} GB/s, GEMM {gemm['gflops']:.1f} GFLOP/s", flush=True)
    only = args.only.split(",") if args.only else None
    targets = {}
    if only:  # the other targets of the last run on this kind of device, kept as they were
        name = "gpu_suite" if accel else "gpu_suite_cpu" + ("_quick" if args.quick else "")
        last = Path(__file__).resolve().parent / "results" / f"{name}.json"
        targets = json.loads(last.read_text())["targets"] if last.exists() else {}
    write = lambda targets, complete: write_payload(args, dev, accel, sz, stream, start, targets, complete)
    for key, fn in (("a_bandwidth", lambda: target_bandwidth(sz, dtype, accel, dev.device_kind, stream)),
                    ("b_batched_flops", lambda: target_batched(sz, dtype, gemm)),
                    ("c_peers", lambda: target_peers(sz, dtype, accel)),
                    ("d_svm", lambda: target_svm(sz, dtype)),
                    ("e_precision", lambda: target_precision(sz, accel)),
                    ("f_routes", lambda: target_routes(sz, dtype, accel))):
        if only and not any(key.endswith(o) or key == o for o in only):
            continue
        t0 = time.perf_counter()
        try:
            targets[key] = fn()
        except Exception as exc:  # noqa: BLE001 - one target's failure is recorded; the others still run
            targets[key] = {"failed": f"{exc!r}"[:500]}
        print(f"{key} ({time.perf_counter() - t0:.1f} s): {json.dumps(targets[key], default=float)[:600]}", flush=True)
        write(targets, complete=False)  # a run cut short keeps the targets it finished
    for key in ("c_peers", "d_svm"):
        for row in targets[key].get("rows", []):
            print(_bench.table([row], list(row)))
    path = write(targets, complete=True)
    print(f"wrote {path} ({time.perf_counter() - start:.0f} s)")


def write_payload(args, dev, accel, sz, stream, start, targets, complete):
    """Write the JSON of the targets measured so far (``complete`` False while the run goes on)."""
    import jax

    import _bench

    name = "gpu_suite" if accel else "gpu_suite_cpu" + ("_quick" if args.quick else "")
    payload = {"complete": complete, "benchmark": name, "command": "python benchmarks/gpu_suite.py" + " --cpu" * args.cpu + " --quick" * args.quick,
               "machine": _bench.machine(), "device": {"platform": dev.platform, "kind": dev.device_kind,
                                                       "accelerator": accel},
               "versions": {**_bench.versions(), **{m: getattr(_importable(m)[0], "__version__", None)
                                                    for m in ("cuml", "torch", "falkon", "gpytorch", "pykeops")}},
               "dtype": "float32 (float64 only as the reference of e_precision)",
               "matmul_precision": str(jax.config.jax_default_matmul_precision or "default: JAX's DEFAULT precision "
                                       "(full float32 on the CPU; TF32 allowed on NVIDIA tensor cores) around the "
                                       "calls; jaxmtl's own functions trace theirs at HIGHEST (jaxmtl.products)"),
               "threads": int(os.environ.get("JAXMTL_BENCH_THREADS", "1")), "sizes": sz, "stream_triad": stream,
               "elapsed_s": time.perf_counter() - start, "targets": targets}
    _bench.RESULTS.mkdir(parents=True, exist_ok=True)
    path = _bench.RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=float))
    return path


if __name__ == "__main__":
    main()
