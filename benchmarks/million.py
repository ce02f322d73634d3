"""A million rows: the whole regularization path over a million multi-output examples, beside Falkon.

Data (generated once by this script, fixed seed, written in chunks to memory-mapped ``.npy``
files and read from there): HIGGS-shaped inputs (d = 28, standard normal), 8 outputs that share
a rank-4 structure (four smooth ridge functions of the inputs, mixed by a fixed 8 × 4 matrix)
plus independent noise of a different level per output; 1 000 000 training, 100 000 validation
and 100 000 test rows (``--quick``: 10 000 / 2 000 / 2 000).

Every method uses the Gaussian kernel exp(−‖x − x'‖² / 2σ²) with σ the median pairwise distance
of 1000 training rows, and the same M uniform Nyström centres (drawn from the training rows with
a fixed seed). The grid: 20 λ (log-spaced, 1e-9 … 1e-2, in the units of Falkon's ``penalty``:
the objective Σ‖f(x_i) − y_i‖²/n + λ‖f‖²) × 6 output couplings ω of the common-similarity family
A_ω = (1 − ω)I + ω11ᵀ/… (ω = 0 is independent outputs), plus the per-output family (each output
its own λ); chosen on the validation rows, the selected model scored on the test rows.

Rows of the table (each configuration in a fresh process; peak resident set from VmHWM):

* ``jaxmtl`` — :func:`jaxmtl.operators.stream_statistics` streams the training file once (φ(X)
  in row blocks, ΦᵀΦ, ΦᵀY, YᵀY accumulated), then the validation file once, scoring every (λ, ω)
  and every output's own λ by the cheaper of two passes: where the grid's Ω·P·d coefficient
  columns are fewer than 2M, their predictions (:func:`jaxmtl.paths.feature_path_coefficients`
  from one M × M eigendecomposition, then :func:`jaxmtl.operators.stream_holdout_losses`:
  2·M·Ω·P·d flops per row, through the centres), else the rows' statistics
  (:func:`jaxmtl.paths.feature_holdout_losses`: 4·M² per row). The selected coefficients are
  among the path's (or come from the same statistics, :func:`jaxmtl.paths.feature_coefficients`),
  and the test predictions are streamed (:func:`jaxmtl.operators.stream_predict`, also through
  the centres). Three passes over rows in all. Compilation is measured apart: a warm-up on the
  first chunk compiles every call first. Where the predictions score the validation rows, their
  statistics' pass is timed too, after the timed run (``validation_by_statistics_s``), and the
  largest relative difference of the two passes' losses is recorded.
* ``jaxmtl-cg`` (larger M) — :func:`jaxmtl.paths.falkon_path`: Falkon's preconditioned CG for
  every λ in lock step (ω = 0), the route where the M × M eigendecomposition stops paying.
* ``estimator`` (larger M; ``--add-estimator N:M``) — what a user of the estimators runs:
  ``ApproximateKernelRegressor(output='independent', route='auto')`` on the training and validation
  rows with the validation rows as its held-out split (:func:`worker_estimator`); the cost model of
  :mod:`jaxmtl.paths.routes` picks its route, recorded with the row.
* ``falkon`` — Falkon (A. Rudi, L. Carratino, L. Rosasco, NIPS 2017; the ``falkon`` package, when
  importable) with the same centres (``FixedSelector``) and its default 20 CG iterations, one fit
  per λ: all 20 at 10⁴ rows; at 10⁵ (5 fits) and 10⁶ (2 fits; a fit takes minutes there) the λ
  that jaxmtl's path found best for ω = 0 and its neighbours first (:func:`falkon_lambdas`;
  ``--falkon-lambdas K`` changes the count). ω = 0 only (it has no output coupling); time of each
  fit, validation and test RMSE. Falkon has one penalty for all outputs. Its CG stops early once its
  residuals are below ``cg_tolerance``, sooner at a larger λ, so a fit's time depends on λ: the targets
  compare the whole grid with ONE fit at Falkon's tuned λ (:func:`tuned_falkon`: selected on the
  validation rows among at least five fitted λ; at 10⁶ rows the λ so selected at 10⁵ rows, fitted once
  with ``--add-falkon 1000000:I --M M``). ``--pair N:M[,N:M] [--repeats R]`` measures jaxmtl's rows and
  that fit again in turn in one run (:func:`pair_rows`); the targets take the faster of the tuned
  fit's two measurements.
* ``sklearn`` — scikit-learn's ``Nystroem`` (its own uniform centres, same M and width) +
  ``RidgeCV(alpha_per_target=True)`` on the same λ grid (its efficient leave-one-out), the
  baseline every user has; it holds the n × M features in memory, so it runs to n = 10⁵.

``--device`` (one GPU; float32 products at full precision, ``jax_default_matmul_precision=highest``):
n = 1 000 000 with M = 20 000 on the Nyström route, and a plain PyTorch Nyström ridge (one solve
per λ, what a user writes) when torch has a CUDA device. Writes ``million_gpu.json``.

Usage: python benchmarks/million.py [--quick] [--device] [--sizes 10000,100000,1000000] [--M 2000]
       [--large-M 5000] [--falkon-lambdas K] [--add-falkon N:I,J [--M M]] [--add N:M] [--add-estimator N:M]
       [--rerun METHOD[:N:M]]
       [--pair N:M[,N:M] [--repeats R]] [--data-dir DIR] [--threads N]
Writes benchmarks/results/million[_quick|_gpu].json and million.png (time and memory against n).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

P_INPUTS, D_OUTPUTS, RANK, SEED = 28, 8, 4, 0
LAMBDAS = tuple(float(x) for x in __import__("numpy").logspace(-9, -2, 20))
OMEGAS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
CHUNK = 65536  # rows read from disk per compiled call
FULL = {"n_train": 1_000_000, "n_val": 100_000, "n_test": 100_000}
QUICK = {"n_train": 10_000, "n_val": 2_000, "n_test": 2_000}
SKLEARN_MAX_N = 100_000  # scikit-learn's Nystroem holds n × M float64 features

PARSER = argparse.ArgumentParser(description=__doc__.splitlines()[0])
PARSER.add_argument("--quick", action="store_true", help="10 000 training rows, M = 200 (seconds)")
PARSER.add_argument("--device", action="store_true", help="sizes for one GPU (n = 10⁶, M = 20 000)")
PARSER.add_argument("--sizes", default=None, help="training sizes of the time/memory curve (comma-separated)")
PARSER.add_argument("--M", type=int, default=None, help="Nyström centres of the main table (default 2000)")
PARSER.add_argument("--large-M", type=int, default=None,
                    help="also the eigen and CG routes at this M on the largest size that allows it")
PARSER.add_argument("--falkon-lambdas", type=int, default=None,
                    help="Falkon fits at this many λ of the grid (default: all 20 at 10⁴ rows, 5 at 10⁵, 2 at 10⁶)")
PARSER.add_argument("--add-falkon", default=None, metavar="N:I[,J]",
                    help="fit Falkon at n = N (with --M centres where several rows have n = N) for the λ grid "
                         "indices I, J… and merge the fits into the last results")
PARSER.add_argument("--add", default=None, metavar="N:M",
                    help="rows at n = N with M centres (jaxmtl's eigen and CG routes, Falkon), merged into the last results")
PARSER.add_argument("--add-estimator", default=None, metavar="N:M",
                    help="the estimators' row at n = N with M centres (ApproximateKernelRegressor, route='auto'), "
                         "merged into the last results")
PARSER.add_argument("--rerun", default=None, metavar="METHOD[:N:M]",
                    help="rerun every row of METHOD (e.g. jaxmtl), or its row at n = N with M centres, of the last "
                         "results, each in a fresh process, and replace them")
PARSER.add_argument("--pair", default=None, metavar="N:M[,N:M]",
                    help="jaxmtl's rows at n = N with M centres and Falkon's fit at its tuned λ there, measured again "
                         "one after the other in this run (each in a fresh process), and replaced")
PARSER.add_argument("--lambda-indices", default=None, metavar="I[,J]",
                    help="with --rerun falkon:N:M: fit these λ (indices into the 20-λ grid) instead of the row's own")
PARSER.add_argument("--repeats", type=int, default=1,
                    help="with --pair: each measurement this many times, in turn; the run of median time kept")
PARSER.add_argument("--data-dir", default=None, help="where the memory-mapped rows are written (default benchmarks/.cache)")
PARSER.add_argument("--threads", type=int, default=0, help="BLAS/XLA threads (default 0: all cores)")
PARSER.add_argument("--worker", default=None, help=argparse.SUPPRESS)


# ---------------------------------------------------------------------------------------------- data
def _latent(X, U, V):
    """(n, 4) the shared smooth functions: sin of one projection, tanh and a product of two others."""
    import numpy as np

    Z = X @ U
    return np.c_[np.sin(Z[:, 0]), np.tanh(Z[:, 1]), Z[:, 2] * np.tanh(Z[:, 3]) / 2,
                 np.cos(X @ V)[:, 0]].astype(np.float32)


def make_files(folder: Path, sizes: dict, seed: int = SEED, chunk: int = 100_000) -> dict:
    """Write X_{train,val,test}.npy (n, 28) and Y_*.npy (n, 8), float32, ``chunk`` rows at a time;
    returns {part: (X path, Y path)}. Files already there with the right shapes are kept."""
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    U = rng.normal(size=(P_INPUTS, 4)) / np.sqrt(P_INPUTS) * 1.5
    V = rng.normal(size=(P_INPUTS, 1)) / np.sqrt(P_INPUTS)
    mix = rng.normal(size=(D_OUTPUTS, RANK))
    noise = np.linspace(0.2, 0.6, D_OUTPUTS)  # per-output noise levels
    paths = {}
    for k, (part, n) in enumerate((("train", sizes["n_train"]), ("val", sizes["n_val"]), ("test", sizes["n_test"]))):
        xp, yp = folder / f"X_{part}.npy", folder / f"Y_{part}.npy"
        paths[part] = (str(xp), str(yp))
        if xp.exists() and yp.exists():
            try:
                if np.load(xp, mmap_mode="r").shape == (n, P_INPUTS) and np.load(yp, mmap_mode="r").shape == (n, D_OUTPUTS):
                    continue
            except ValueError:
                pass
        X = np.lib.format.open_memmap(xp, mode="w+", dtype=np.float32, shape=(n, P_INPUTS))
        Y = np.lib.format.open_memmap(yp, mode="w+", dtype=np.float32, shape=(n, D_OUTPUTS))
        for i, start in enumerate(range(0, n, chunk)):
            r = np.random.default_rng([seed, k, i])
            stop = min(start + chunk, n)
            Xc = r.normal(size=(stop - start, P_INPUTS)).astype(np.float32)
            X[start:stop] = Xc
            Y[start:stop] = _latent(Xc, U, V) @ mix.T.astype(np.float32) + noise * r.normal(size=(stop - start, D_OUTPUTS))
        X.flush(), Y.flush()
        del X, Y
    return paths


def width_and_centres(paths: dict, n: int, M: int, seed: int = SEED):
    """(σ, (M, 28) centres): the median heuristic on 1000 evenly spaced rows of the first n training
    rows, and M of those rows drawn uniformly without replacement."""
    import numpy as np

    from jaxmtl.kernels import median_heuristic

    X = np.load(paths["train"][0], mmap_mode="r")
    sigma = median_heuristic(np.asarray(X[np.linspace(0, n - 1, 1000).astype(int)]))
    idx = np.sort(np.random.default_rng(seed + 1).choice(n, size=min(M, n), replace=False))
    return sigma, np.asarray(X[idx])


def _rows(paths: dict, part: str, n: int | None = None):
    import numpy as np

    X, Y = (np.load(p, mmap_mode="r") for p in paths[part])
    return (X, Y) if n is None else (X[:n], Y[:n])


def _rmse(P, Y) -> list[float]:
    import numpy as np

    return [float(v) for v in np.sqrt(np.mean((np.asarray(P, np.float64) - np.asarray(Y, np.float64)) ** 2, axis=0))]


# ------------------------------------------------------------------------------------------- workers
def worker_jaxmtl(task: dict) -> dict:
    """The eigen route: stream train, stream validation, select from one eigendecomposition, stream test."""
    import jax

    if task.get("device"):  # full float32 products; the whitening's eigendecomposition in float64 on the device
        jax.config.update("jax_default_matmul_precision", "highest")
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    import _bench
    from jaxmtl.filters import Tikhonov
    from jaxmtl.kernels import Gaussian
    from jaxmtl.kernels.outputs import common_similarity_eigh
    from jaxmtl.operators import NystromFeatures, stream_holdout_losses, stream_predict, stream_statistics
    from jaxmtl.paths import feature_coefficients, feature_holdout_losses, feature_path_coefficients

    paths, n, M = task["paths"], task["n"], task["M"]
    sigma, Z = width_and_centres(paths, n, M)
    Xtr, Ytr = _rows(paths, "train", n)
    Xva, Yva = _rows(paths, "val")
    Xte, Yte = _rows(paths, "test")
    f32 = jnp.float32
    a, V = (jnp.asarray(v, f32) for v in common_similarity_eigh(D_OUTPUTS, OMEGAS))
    eye = jnp.eye(D_OUTPUTS, dtype=f32)
    lams = jnp.asarray(LAMBDAS, f32)
    filt = Tikhonov()
    t = time.perf_counter()
    fmap = jax.block_until_ready(NystromFeatures.from_centres(Gaussian(sigma), jnp.asarray(Z, f32)))
    whitening_s = time.perf_counter() - t
    by_predictions = len(OMEGAS) * len(LAMBDAS) * D_OUTPUTS < 2 * M  # the cheaper validation pass (see the module)

    def run(Xtr, Ytr, Xva, Yva, progress):
        times = {}
        t = time.perf_counter()
        st_tr = stream_statistics(fmap, Xtr, Ytr, CHUNK, progress=progress, desc="train rows")
        jax.block_until_ready(st_tr)
        times["train_pass_s"] = time.perf_counter() - t
        t = time.perf_counter()
        if by_predictions:  # every (ω, λ)'s coefficients from one eigh, then the rows' predictions
            C = jax.block_until_ready(feature_path_coefficients(st_tr, a, V, filt, lams))  # (Ω, P, M, d)
            times["path_coefficients_s"] = time.perf_counter() - t
            t = time.perf_counter()
            L = np.asarray(stream_holdout_losses(fmap, C, Xva, Yva, CHUNK, progress=progress, desc="validation rows"))
        else:  # the rows' statistics, then every (ω, λ) from one eigh
            st_va = stream_statistics(fmap, Xva, Yva, CHUNK, progress=progress, desc="validation rows")
            L = np.asarray(feature_holdout_losses(st_tr, st_va, a, V, filt, lams))  # (Ω, P, d)
        times["validation_pass_s"] = time.perf_counter() - t
        t = time.perf_counter()
        family = L.mean(-1)
        w, k = np.unravel_index(np.argmin(family), family.shape)
        per_k = np.argmin(L[0], axis=0)  # ω = 0 is A = I: each output's own λ
        per_loss = float(np.mean(L[0][per_k, np.arange(D_OUTPUTS)]))
        if per_loss < family[w, k]:
            choice = {"family": "per_output", "lambdas": [LAMBDAS[i] for i in per_k], "val_mse": per_loss}
            W = (C[0, per_k, :, np.arange(D_OUTPUTS)].T if by_predictions
                 else feature_coefficients(st_tr, jnp.ones(D_OUTPUTS, f32), eye, filt, lams[per_k]))
        else:
            choice = {"family": "common_similarity", "omega": OMEGAS[w], "lambda": LAMBDAS[k],
                      "val_mse": float(family[w, k])}
            W = C[w, k] if by_predictions else feature_coefficients(st_tr, a[w], V, filt, lams[k]) @ (V * a[w]) @ V.T
        W = jax.block_until_ready(W)
        times["selection_s"] = time.perf_counter() - t
        return W, choice, times, L, st_tr

    warm_n = min(CHUNK, n)  # compiles every call on chunk-shaped inputs (and the M × M programs)
    t = time.perf_counter()
    W, *_ = run(Xtr[:warm_n], Ytr[:warm_n], Xva[:warm_n], Yva[:warm_n], False)
    stream_predict(fmap, W, Xte[:warm_n], CHUNK)
    compile_s = time.perf_counter() - t
    base_kb = _bench.proc_status_kb("VmRSS")
    t0 = time.perf_counter()
    W, choice, times, L, st_tr = run(Xtr, Ytr, Xva, Yva, task.get("progress", False))
    to_model = time.perf_counter() - t0 + whitening_s
    times["whitening_s"] = whitening_s
    t = time.perf_counter()
    P = stream_predict(fmap, W, Xte, CHUNK)
    times["test_pass_s"] = time.perf_counter() - t
    rmse = _rmse(P, Yte)
    peak_mb = _bench.proc_status_kb("VmHWM") / 1024
    both = {}
    if by_predictions:  # the statistics' pass too, after the timed run: its time, and the same losses from it
        t = time.perf_counter()
        st_va = jax.block_until_ready(stream_statistics(fmap, Xva, Yva, CHUNK))
        both["validation_by_statistics_s"] = time.perf_counter() - t
        L_stats = np.asarray(feature_holdout_losses(st_tr, st_va, a, V, filt, lams))
        both["validation_losses_max_rel_diff"] = float(np.max(np.abs(L - L_stats) / np.abs(L_stats)))
    route = "eigen (M × M), streamed; validation by " + ("predictions" if by_predictions else "statistics")
    return {"method": "jaxmtl", "route": route, "n": n, "M": M, "sigma": sigma,
            "seconds_to_model": to_model, "compile_s": compile_s, **times, **both, "passes_over_rows": 3,
            "grid_points": len(LAMBDAS) * len(OMEGAS) + len(LAMBDAS) * D_OUTPUTS, "selected": choice,
            "val_rmse": float(np.sqrt(choice["val_mse"])),  # from the validation pass: no extra pass
            "test_rmse_per_output": rmse,
            "test_rmse": float(np.sqrt(np.mean(np.square(rmse)))),
            "val_mse_grid": {"omega0_mean": L[0].mean(-1).tolist(), "best_per_omega": L.mean(-1).min(1).tolist()},
            "peak_rss_mb": peak_mb, "rss_before_mb": base_kb / 1024,
            "dtype": "float32", "backend": jax.default_backend()}


def worker_cg(task: dict) -> dict:
    """jaxmtl's Falkon-preconditioned CG for every λ in lock step (ω = 0), selection on the validation rows."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import _bench
    from jaxmtl.kernels import Gaussian
    from jaxmtl.operators.blocked import blocked_kernel_matmul
    from jaxmtl.paths import falkon_path

    paths, n, M, steps = task["paths"], task["n"], task["M"], task.get("steps", 20)
    sigma, Z = width_and_centres(paths, n, M)
    Xtr, Ytr = (jnp.asarray(np.asarray(a)) for a in _rows(paths, "train", n))
    Xva, Yva = (jnp.asarray(np.asarray(a)) for a in _rows(paths, "val"))
    Xte, Yte = _rows(paths, "test")
    lams = jnp.asarray(LAMBDAS, jnp.float32)
    kern = Gaussian(sigma)
    Zj = jnp.asarray(Z)  # arguments, not constants: XLA would fold the centres' and rows' arithmetic at compile time
    run = jax.jit(lambda Xtr, Ytr, Zj, Xva, Yva: falkon_path(kern, Zj, Xtr, Ytr, jnp.eye(D_OUTPUTS), lams, steps, Xva, Yva))
    compile_s, compiled = _bench.compile_seconds(run, Xtr, Ytr, Zj, Xva, Yva)
    t0 = time.perf_counter()
    res = jax.block_until_ready(compiled(Xtr, Ytr, Zj, Xva, Yva))
    to_model = time.perf_counter() - t0
    k = int(np.nanargmin(np.asarray(res.losses)))  # (P,) validation losses after the last step
    pred = np.asarray(blocked_kernel_matmul(kern, jnp.asarray(np.asarray(Xte)), Zj, res.coef[k], 2048))  # O(2048·M)
    rmse = _rmse(pred, Yte)
    return {"method": "jaxmtl-cg", "route": f"Falkon-preconditioned CG, {steps} steps, every λ in lock step (ω = 0)",
            "n": n, "M": M, "sigma": sigma, "seconds_to_model": to_model, "compile_s": compile_s,
            "passes_over_rows": steps + 1, "selected": {"lambda": LAMBDAS[k]},
            "test_rmse_per_output": rmse, "test_rmse": float(np.sqrt(np.mean(np.square(rmse)))),
            "peak_rss_mb": _bench.proc_status_kb("VmHWM") / 1024, "dtype": "float32"}


def worker_falkon(task: dict) -> dict:
    """Falkon refitted per λ with the same centres; the fit times and errors of each λ."""
    import numpy as np

    import _bench

    try:
        import falkon
        import torch
        from falkon.center_selection import FixedSelector
    except Exception as exc:  # noqa: BLE001 - absent peer
        return {"method": "falkon", "n": task["n"], "M": task["M"], "not_available": f"{exc!r}"[:300]}
    paths, n, M = task["paths"], task["n"], task["M"]
    sigma, Z = width_and_centres(paths, n, M)
    Xtr, Ytr = (torch.from_numpy(np.ascontiguousarray(a)) for a in _rows(paths, "train", n))
    Xva, Yva = _rows(paths, "val")
    Xte, Yte = _rows(paths, "test")
    idx = np.asarray(task["lambda_indices"], int)
    # max_cpu_mem: Falkon's default (inf) sizes its kernel blocks to the whole n × M matrix (40 GB at
    # n = 10⁶, M = 10⁴), which fails where it does not fit; half the machine's memory blocks only there
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    opts = falkon.FalkonOptions(use_cpu=not task.get("device"), keops_active="no", max_cpu_mem=ram / 2)
    rows = []
    for i in idx:
        model = falkon.Falkon(kernel=falkon.kernels.GaussianKernel(sigma=float(sigma), opt=opts),
                              penalty=LAMBDAS[i], M=M, center_selection=FixedSelector(torch.from_numpy(Z)),
                              maxiter=task.get("maxiter", 20), options=opts, seed=0)
        t = time.perf_counter()
        model.fit(Xtr, Ytr)
        fit_s = time.perf_counter() - t
        pv = model.predict(torch.from_numpy(np.ascontiguousarray(Xva))).numpy()
        pt = model.predict(torch.from_numpy(np.ascontiguousarray(Xte))).numpy()
        rows.append({"lambda": LAMBDAS[i], "fit_s": fit_s, "val_rmse": float(np.sqrt(np.mean(np.square(_rmse(pv, Yva))))),
                     "test_rmse": float(np.sqrt(np.mean(np.square(_rmse(pt, Yte))))), "cpu_model": _cpu_model()})
        print(f"    falkon λ = {LAMBDAS[i]:.1e}: {fit_s:.1f} s, test RMSE {rows[-1]['test_rmse']:.4f}", flush=True)
    return _summarise_falkon({"method": "falkon", "version": falkon.__version__, "torch": torch.__version__,
                              "n": n, "M": M, "sigma": sigma,
                              "maxiter": task.get("maxiter", 20), "fits": rows,
                              "peak_rss_mb": _bench.proc_status_kb("VmHWM") / 1024, "dtype": "float32",
                              "torch_threads": torch.get_num_threads()})


def worker_sklearn(task: dict) -> dict:
    """scikit-learn's Nystroem + RidgeCV (per-target α by efficient leave-one-out) on the same λ grid."""
    import numpy as np
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import RidgeCV

    import _bench

    paths, n, M = task["paths"], task["n"], task["M"]
    sigma, _ = width_and_centres(paths, n, M)
    Xtr, Ytr = (np.asarray(a) for a in _rows(paths, "train", n))
    Xte, Yte = _rows(paths, "test")
    t = time.perf_counter()
    feat = Nystroem(gamma=0.5 / sigma**2, n_components=M, random_state=SEED).fit(Xtr)
    F = feat.transform(Xtr)
    model = RidgeCV(alphas=n * np.asarray(LAMBDAS), alpha_per_target=True).fit(F, Ytr)
    fit_s = time.perf_counter() - t
    rmse = _rmse(model.predict(feat.transform(np.asarray(Xte))), Yte)
    return {"method": "sklearn", "route": "Nystroem + RidgeCV(alpha_per_target=True), leave-one-out", "n": n, "M": M,
            "seconds_to_model": fit_s, "selected_alpha_over_n": (np.asarray(model.alpha_) / n).tolist(),
            "test_rmse_per_output": rmse, "test_rmse": float(np.sqrt(np.mean(np.square(rmse)))),
            "peak_rss_mb": _bench.proc_status_kb("VmHWM") / 1024, "dtype": str(F.dtype)}


def worker_torch(task: dict) -> dict:
    """Plain PyTorch on the GPU, what a user writes: K_nm in row blocks, K_nmᵀK_nm and K_nmᵀY accumulated
    once, then (K_nmᵀK_nm + nλK_mm) α = K_nmᵀY solved per λ; selection on the validation rows."""
    import numpy as np

    try:
        import torch
        assert torch.cuda.is_available(), "torch has no CUDA device"
    except Exception as exc:  # noqa: BLE001 - absent peer
        return {"method": "torch", "not_available": f"{exc!r}"[:300]}
    paths, n, M = task["paths"], task["n"], task["M"]
    sigma, Z = width_and_centres(paths, n, M)
    dev, dt = "cuda", torch.float32
    z = torch.as_tensor(Z, device=dev, dtype=dt)
    kern = lambda x: torch.exp(-torch.cdist(x, z) ** 2 / (2 * sigma**2))
    Xtr, Ytr = _rows(paths, "train", n)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    G = torch.zeros(M, M, device=dev, dtype=dt)
    B = torch.zeros(M, D_OUTPUTS, device=dev, dtype=dt)
    for s in range(0, n, CHUNK):
        k = kern(torch.as_tensor(np.asarray(Xtr[s:s + CHUNK]), device=dev))
        G += k.T @ k
        B += k.T @ torch.as_tensor(np.asarray(Ytr[s:s + CHUNK]), device=dev)
    Kmm = kern(z)
    Xva, Yva = _rows(paths, "val")
    Kva = kern(torch.as_tensor(np.asarray(Xva), device=dev))
    best, failed = None, 0
    for lam in LAMBDAS:
        try:
            alpha = torch.linalg.solve(G + n * lam * Kmm, B)
        except RuntimeError:
            failed += 1
            continue
        val = float(torch.mean((Kva @ alpha - torch.as_tensor(np.asarray(Yva), device=dev)) ** 2))
        if np.isfinite(val) and (best is None or val < best[0]):
            best = (val, lam, alpha)
    torch.cuda.synchronize()
    to_model = time.perf_counter() - t0
    Xte, Yte = _rows(paths, "test")
    pred = (kern(torch.as_tensor(np.asarray(Xte), device=dev)) @ best[2]).cpu().numpy()
    rmse = _rmse(pred, Yte)
    return {"method": "torch", "route": "PyTorch float32: K_nmᵀK_nm accumulated, torch.linalg.solve per λ (ω = 0)",
            "n": n, "M": M, "seconds_to_model": to_model, "solves_failed": failed, "selected": {"lambda": best[1]},
            "test_rmse_per_output": rmse, "test_rmse": float(np.sqrt(np.mean(np.square(rmse)))),
            "gpu_peak_mb": torch.cuda.max_memory_allocated() / 2**20, "torch": torch.__version__}


def worker_estimator(task: dict) -> dict:
    """What a user of the estimators runs: ``ApproximateKernelRegressor`` on the training and validation
    rows, the validation rows as its held-out split, with the same width, λ grid and M (its own uniform
    centres), independent outputs with one λ (A = I, Falkon's model) and ``route='auto'``: the cost model
    picks the route (``route_``). The time includes compilation and everything ``fit`` does; the programs it
    compiled are counted with ``jax.monitoring``; up to 2·10⁵ training rows a second fit of the same
    estimator in the same process (compiling nothing) gives the warm time beside it."""
    import jax
    import numpy as np

    import _bench
    from jaxmtl.kernels import Gaussian
    from jaxmtl.models.approximate import ApproximateKernelRegressor

    paths, n, M = task["paths"], task["n"], task["M"]
    sigma, _ = width_and_centres(paths, n, M)
    (Xtr, Ytr), (Xva, Yva) = _rows(paths, "train", n), _rows(paths, "val")
    X, Y = np.concatenate([Xtr, Xva]), np.concatenate([Ytr, Yva])
    train = np.arange(len(X)) < len(Xtr)
    model = ApproximateKernelRegressor(Gaussian(sigma), n_components=M, output="independent", filter="tikhonov",
                                       selection=[train], lambdas=LAMBDAS, dtype="float32", route=task.get("route", "auto"))
    counter: dict = {"jax": jax}
    exec(_bench.COMPILE_COUNTER, counter)  # counter["counts"]: the programs compiled from here on, their seconds
    compiled = counter["counts"]
    t0 = time.perf_counter()
    model.fit(X, Y)
    to_model = time.perf_counter() - t0
    first = dict(compiled)
    warm = warm_programs = None
    if n <= 200_000:
        t0 = time.perf_counter()
        model.fit(X, Y)
        warm = time.perf_counter() - t0
        warm_programs = compiled["programs"] - first["programs"]
    Xte, Yte = _rows(paths, "test")
    rmse = _rmse(model.predict(Xte), Yte)
    return {"method": "estimator", "route": f"ApproximateKernelRegressor(output='independent', route='auto'): "
                                            f"route_ = {model.route_!r}", "route_taken": model.route_,
            "n": n, "M": M, "sigma": sigma, "seconds_to_model": to_model, "includes_compilation": True,
            "programs_compiled": first["programs"], "compile_s": first["compile_s"], "warm_fit_s": warm,
            "warm_programs_compiled": warm_programs,
            "selected": {"lambda": model.best_params_["param"]},
            "test_rmse_per_output": rmse, "test_rmse": float(np.sqrt(np.mean(np.square(rmse)))),
            "peak_rss_mb": _bench.proc_status_kb("VmHWM") / 1024, "dtype": "float32"}


WORKERS = {"jaxmtl": worker_jaxmtl, "jaxmtl-cg": worker_cg, "falkon": worker_falkon, "sklearn": worker_sklearn,
           "torch": worker_torch, "estimator": worker_estimator}


# ---------------------------------------------------------------------------------------------- main
def plan(args) -> tuple[dict, list[dict]]:
    """(file sizes, tasks) of this run."""
    if args.quick:
        sizes, ns, M = QUICK, [QUICK["n_train"]], args.M or 200
    else:
        sizes, M = FULL, args.M or (20_000 if args.device else 2000)
        ns = [int(s) for s in args.sizes.split(",")] if args.sizes else (
            [FULL["n_train"]] if args.device else [10_000, 100_000, 1_000_000])
    tasks = []
    for n in ns:
        tasks.append({"method": "jaxmtl", "n": n, "M": M, "progress": n == max(ns)})
        if args.device:
            tasks.append({"method": "torch", "n": n, "M": M})
            continue
        k = args.falkon_lambdas or (len(LAMBDAS) if n <= 10_000 else 5 if n <= 100_000 else 2)
        tasks.append({"method": "falkon", "n": n, "M": M, "lambdas": k})  # which λ: see falkon_lambdas
        if n <= SKLEARN_MAX_N:
            tasks.append({"method": "sklearn", "n": n, "M": M})
    if args.large_M:
        n = max(n for n in ns if n * args.large_M**2 <= 1e14) if any(n * args.large_M**2 <= 1e14 for n in ns) else min(ns)
        tasks += [{"method": "jaxmtl", "n": n, "M": args.large_M}, {"method": "jaxmtl-cg", "n": n, "M": args.large_M},
                  {"method": "estimator", "n": n, "M": args.large_M}]
    for t in tasks:
        t["device"] = bool(args.device)
    return sizes, tasks


def falkon_lambdas(count: int, ours: dict | None) -> list[int]:
    """Indices of the λ grid that Falkon refits (each fit costs the same): all of them when ``count``
    is the grid's size; else the λ that jaxmtl's path found best for ω = 0 on the validation rows
    (one penalty for every output, as Falkon has), its neighbours by validation loss, then evenly
    spaced ones, ``count`` in all. The path solves the same Nyström ridge problem, so Falkon's best λ
    is among the first."""
    import numpy as np

    P = len(LAMBDAS)
    if count >= P or ours is None or "val_mse_grid" not in ours:
        return [int(i) for i in np.unique(np.linspace(0, P - 1, min(count, P)).round().astype(int))]
    curve = np.asarray(ours["val_mse_grid"]["omega0_mean"])
    k = int(np.argmin(curve))
    near = sorted((i for i in (k - 1, k + 1) if 0 <= i < P), key=lambda i: curve[i])
    chosen = [k, *near]
    for i in np.linspace(0, P - 1, P).round().astype(int)[::max(1, P // max(count, 1))]:
        chosen.append(int(i))
    return list(dict.fromkeys(chosen))[:count]


def plot(rows: list[dict], path: Path) -> None:
    """Time to the selected model and peak memory against n, jaxmtl's whole grid beside one Falkon fit."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    series = (("jaxmtl", lambda r: r["seconds_to_model"], "jaxmtl: whole grid (20 λ × 6 ω + per-output)"),
              ("falkon", lambda r: r["selected_on_validation"]["fit_s"], "Falkon: one fit at its selected λ"),
              ("sklearn", lambda r: r["seconds_to_model"], "scikit-learn Nystroem + RidgeCV"))
    for method, seconds, label in series:
        pts = sorted((r["n"], seconds(r), r["peak_rss_mb"]) for r in rows
                     if r.get("method") == method and "peak_rss_mb" in r and r.get("M") == rows[0].get("M"))
        if pts:
            ax1.loglog([p[0] for p in pts], [p[1] for p in pts], "o-", label=label)
            ax2.loglog([p[0] for p in pts], [p[2] for p in pts], "o-", label=label)
    ax1.set(xlabel="training rows n", ylabel="seconds", title="time (compilation apart)")
    ax2.set(xlabel="training rows n", ylabel="peak resident MB", title="memory")
    ax1.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    args = PARSER.parse_args(argv)
    import _bench

    _bench.set_threads(["--threads", str(args.threads)])
    if args.worker:
        task = json.loads(args.worker)
        _bench.emit(WORKERS[task["method"]](task))
        return
    if args.add and not re.fullmatch(r"\d+:\d+", args.add):
        PARSER.error(f"--add takes N:M (training rows and centres, e.g. 100000:10000); received {args.add!r}")
    if args.pair and not re.fullmatch(r"\d+:\d+(,\d+:\d+)*", args.pair):
        PARSER.error(f"--pair takes N:M[,N:M] (training rows and centres, e.g. 100000:2000); received {args.pair!r}")
    if args.add_estimator and not re.fullmatch(r"\d+:\d+", args.add_estimator):
        PARSER.error(f"--add-estimator takes N:M (e.g. 100000:10000); received {args.add_estimator!r}")
    if args.lambda_indices and not (args.rerun or "").startswith("falkon:"):
        PARSER.error("--lambda-indices goes with --rerun falkon:N:M")
    if args.lambda_indices and not (re.fullmatch(r"\d+(,\d+)*", args.lambda_indices)
                                    and all(int(i) < len(LAMBDAS) for i in args.lambda_indices.split(","))):
        PARSER.error(f"--lambda-indices takes I[,J], indices into the {len(LAMBDAS)}-λ grid (0 to {len(LAMBDAS) - 1}); "
                     f"received {args.lambda_indices!r}")
    if args.add_falkon or args.rerun or args.add or args.pair or args.add_estimator:
        return merge_into_last(args)
    sizes, tasks = plan(args)
    folder = Path(args.data_dir or Path(__file__).resolve().parent / ".cache" / ("million_quick" if args.quick else "million"))
    t = time.perf_counter()
    paths = make_files(folder, sizes)
    print(f"rows in {folder} ({time.perf_counter() - t:.0f} s)", flush=True)
    start = time.perf_counter()
    rows = []
    for task in tasks:
        task["paths"] = paths
        if task["method"] == "falkon":
            ours = next((r for r in rows if r.get("method") == "jaxmtl" and r["n"] == task["n"] and r["M"] == task["M"]), None)
            task["lambda_indices"] = falkon_lambdas(task["lambdas"], ours)
        rows.append(_measure(task))
        path = save(args, argv, sizes, rows, start, complete=task is tasks[-1])  # a run cut short keeps its rows
    print(json.dumps(compare(rows), indent=1, default=float))
    print("wrote", path)
    if not args.quick and not args.device:
        plot(rows, path.with_suffix(".png"))


def _cpu_model() -> str | None:
    """The processor's model name (a row's fits are compared only with rows of the same machine)."""
    try:
        with open("/proc/cpuinfo") as fh:
            return next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), None)
    except OSError:
        return None


def _summarise_falkon(row: dict) -> dict:
    """The aggregates of a Falkon row from its fits (sorted by λ)."""
    import numpy as np

    fits = row["fits"] = sorted(row["fits"], key=lambda f: f["lambda"])
    best_val, best_test = min(fits, key=lambda f: f["val_rmse"]), min(fits, key=lambda f: f["test_rmse"])
    med = float(np.median([f["fit_s"] for f in fits]))
    # no estimate of a 20-λ grid from the median: a fit's time depends on λ (CG stops early)
    row.update(lambdas_fitted=len(fits), median_fit_s=med, grid_s=sum(f["fit_s"] for f in fits),
               selected_on_validation=best_val, best_on_test=best_test,
               test_rmse=best_val["test_rmse"], best_test_rmse=best_test["test_rmse"])
    return row


def _measure(task: dict) -> dict:
    """One task in a fresh process, with its method, n, M and wall time recorded; printed."""
    import _bench

    t = time.perf_counter()
    res = _bench.isolated(__file__, task, timeout=7200)
    for key in ("method", "n", "M"):
        res.setdefault(key, task[key])
    res.setdefault("cpu_model", _cpu_model())
    res["wall_s"] = time.perf_counter() - t
    show = {k: res[k] for k in ("seconds_to_model", "median_fit_s", "test_rmse", "best_test_rmse", "peak_rss_mb",
                                "not_available", "error") if k in res}
    print(f"{task['method']:10s} n={task['n']:>8d} M={task['M']:>6d}: {json.dumps(show, default=float)[:600]}", flush=True)
    return res


def merge_into_last(args) -> None:
    """``--add-falkon N:I,J`` (more Falkon fits at n = N, merged into its row), ``--rerun METHOD[:N:M]``
    (every row of METHOD, or its row at (N, M), measured again and replaced), ``--add N:M`` (jaxmtl's eigen and CG
    routes and Falkon at n = N with M centres, replacing earlier rows of that size) or ``--pair N:M,…`` (see
    :func:`pair_rows`), each in a fresh process, in the last results."""
    import _bench

    path = _bench.RESULTS / ("million" + ("_quick" if args.quick else "") + ".json")
    res = json.loads(path.read_text())
    folder = Path(args.data_dir or Path(__file__).resolve().parent / ".cache" / ("million_quick" if args.quick else "million"))
    paths = make_files(folder, QUICK if args.quick else FULL)
    command = "python benchmarks/million.py " + (f"--add-falkon {args.add_falkon}" + (f" --M {args.M}" if args.M else "")
                                                 if args.add_falkon else
                                                 f"--add {args.add}" if args.add else
                                                 f"--pair {args.pair}" + (f" --repeats {args.repeats}" if args.repeats > 1 else "")
                                                 if args.pair else f"--add-estimator {args.add_estimator}"
                                                 if args.add_estimator else f"--rerun {args.rerun}"
                                                 + (f" --lambda-indices {args.lambda_indices}" if args.lambda_indices else ""))
    command += f" --falkon-lambdas {args.falkon_lambdas}" if args.add and args.falkon_lambdas else ""
    if args.pair:
        for spec in args.pair.split(","):
            pair_rows(res["rows"], *(int(x) for x in spec.split(":")), paths=paths, command=command,
                      repeats=args.repeats)
    elif args.add_estimator:
        n, M = (int(x) for x in args.add_estimator.split(":"))
        new_row = {**_measure({"method": "estimator", "n": n, "M": M, "paths": paths}), "command": command}
        res["rows"] = [r for r in res["rows"] if (r["method"], r["n"], r["M"]) != ("estimator", n, M)] + [new_row]
    elif args.add:
        n, M = (int(x) for x in args.add.split(":"))
        new: list[dict] = []
        for method in ("jaxmtl", "jaxmtl-cg", "falkon"):
            task = {"method": method, "n": n, "M": M, "paths": paths, "device": False, "progress": False}
            if method == "falkon":
                task["lambda_indices"] = falkon_lambdas(args.falkon_lambdas or 2, new[0])
            new.append({**_measure(task), "command": command})  # rows that the main run did not measure
        res["rows"] = [r for r in res["rows"] if (r.get("n"), r.get("M")) != (n, M)] + new
    elif args.add_falkon:
        n_text, idx_text = args.add_falkon.split(":")
        row = next((r for r in res["rows"] if r["method"] == "falkon" and r["n"] == int(n_text)
                    and args.M in (None, r["M"])), None)
        if row is None:
            raise SystemExit(f"--add-falkon: no Falkon row at n = {n_text}" + (f", M = {args.M}" if args.M else ""))
        task = {"method": "falkon", "n": row["n"], "M": row["M"], "paths": paths,
                "lambda_indices": [int(i) for i in idx_text.split(",")]}
        new = _bench.isolated(__file__, task, timeout=7200)
        if "fits" not in new:
            raise SystemExit(f"Falkon failed: {new}")
        machines = {f.get("cpu_model") for f in row["fits"] + new["fits"]}
        if len(machines) > 1:  # a λ is tuned on fits of one machine: --rerun falkon:N:M fits them all again here
            raise SystemExit(f"--add-falkon: the row's fits ran on {sorted(map(str, machines))}; a tuning merges fits "
                             f"of one machine (--rerun falkon:{row['n']}:{row['M']} fits its λ again on this one)")
        row["fits"] += new["fits"]
        row["peak_rss_mb"] = max(row["peak_rss_mb"], new["peak_rss_mb"])
        _summarise_falkon(row)
    else:
        method, _, at = args.rerun.partition(":")
        chosen = [i for i, row in enumerate(res["rows"])
                  if row["method"] == method and at in ("", f"{row['n']}:{row['M']}")]
        if not chosen:
            have = sorted({f"{r['method']}:{r['n']}:{r['M']}" for r in res["rows"]})
            raise SystemExit(f"--rerun: no row {args.rerun!r} in {path.name}; it has {', '.join(have)}")
        for i in chosen:
            row = res["rows"][i]
            task = {"method": row["method"], "n": row["n"], "M": row["M"], "paths": paths, "device": False,
                    "progress": False}
            if row["method"] == "falkon":  # the same λ as before (those fitted, or those of the failed task), or those given
                task["lambda_indices"] = ([int(i) for i in args.lambda_indices.split(",")] if args.lambda_indices else
                                          [LAMBDAS.index(f["lambda"]) for f in row.get("fits", [])]
                                          or row["task"]["lambda_indices"])
            res["rows"][i] = {**_measure(task), "command": command}
    res["targets"] = compare(res["rows"])
    res["merged_runs"] = res.get("merged_runs", []) + [{"command": command, "machine": _bench.machine()}]
    path.write_text(json.dumps(res, indent=2, default=float))
    print(json.dumps(res["targets"], indent=1, default=float))
    if not args.quick:
        plot(res["rows"], path.with_suffix(".png"))


def pair_rows(rows: list[dict], n: int, M: int, paths: dict, command: str, repeats: int = 1) -> None:
    """jaxmtl's rows at (n, M) (the eigen route, and the CG route where it has one) and Falkon's fit at its
    tuned λ there, measured again in turn, ``repeats`` times each (jaxmtl, Falkon, jaxmtl, …), in place:
    times of separate runs of the same code on one kind of machine have differed by over 1.5×, so a
    comparison wants both from the same run. Each keeps its run of median time (the lower middle for
    an even count), every time recorded (``repeat_s``). The Falkon fit goes to the row's
    ``paired_fits`` with ``command``, apart from the ``fits`` its λ was tuned on: a refit has not
    given the same model from run to run, and must not move the tuning. :func:`compare` then judges
    the grid against the faster of the two measurements of the tuned fit."""
    import _bench

    falkon = next((r for r in rows if r.get("method") == "falkon" and (r["n"], r["M"]) == (n, M) and "fits" in r), None)
    tuned = tuned_falkon(rows, falkon) if falkon else {}
    if "falkon_tuned_lambda" not in tuned:
        raise SystemExit(f"--pair: no Falkon row with a tuned λ at n = {n}, M = {M}")
    lam = tuned["falkon_tuned_lambda"]
    ours = [i for i, row in enumerate(rows) if row.get("method") in ("jaxmtl", "jaxmtl-cg") and (row["n"], row["M"]) == (n, M)]
    runs: dict = {i: [] for i in ours}
    fits: list[dict] = []
    for _ in range(repeats):
        for i in ours:
            runs[i].append(_measure({"method": rows[i]["method"], "n": n, "M": M, "paths": paths, "device": False,
                                     "progress": False}))
        new = _bench.isolated(__file__, {"method": "falkon", "n": n, "M": M, "paths": paths,
                                         "lambda_indices": [LAMBDAS.index(lam)]}, timeout=7200)
        if "fits" not in new:
            raise SystemExit(f"Falkon failed: {new}")
        print(f"falkon     n={n:>8d} M={M:>6d}: fit at λ = {lam:.2e}: {new['fits'][0]['fit_s']:.1f} s", flush=True)
        fits.append({**new["fits"][0], "peak_rss_mb": new["peak_rss_mb"]})

    def median(items: list[dict], key: str) -> dict:
        return {**sorted(items, key=lambda r: r[key])[(len(items) - 1) // 2], "repeat_s": [r[key] for r in items]}

    for i in ours:
        rows[i] = {**median(runs[i], "seconds_to_model"), "command": command}
    paired = [f for f in falkon.get("paired_fits", []) if f["lambda"] != lam]
    falkon["paired_fits"] = paired + [{**median(fits, "fit_s"), "command": command}]


def save(args, argv, sizes: dict, rows: list[dict], start: float, complete: bool) -> Path:
    """Write the rows measured so far and the comparison; returns the JSON's path."""
    import jax

    import _bench

    targets = compare(rows)
    name = "million" + ("_quick" if args.quick else "")  # an accelerator's run is written as million_gpu
    payload = {"complete": complete, "benchmark": name, "command": "python benchmarks/million.py " + " ".join(argv or sys.argv[1:]),
               "machine": _bench.machine(), "versions": _bench.versions(), "device": str(jax.devices()[0].device_kind),
               "threads": args.threads, "data": {**sizes, "inputs": P_INPUTS, "outputs": D_OUTPUTS, "rank": RANK,
                                                  "seed": SEED, "folder_note": "generated by this script"},
               "grid": {"lambdas": LAMBDAS, "omegas": OMEGAS, "per_output": True}, "elapsed_s": time.perf_counter() - start,
               "rows": rows, "targets": targets}
    return _bench.write(name, payload)


TUNED_MIN_FITS = 5  # Falkon's own grid: at least this many λ, its choice not on the grid's edge


def tuned_falkon(rows: list[dict], f: dict) -> dict:
    """Falkon at its own tuned λ for the Falkon row ``f``: where it was fitted at ≥ TUNED_MIN_FITS λ, the
    one its validation RMSE selects (``interior``: not the smallest or largest λ fitted); elsewhere (10⁶
    rows, where a grid of fits would take hours) the λ so selected at the largest smaller n with the
    same M, if ``f`` has a fit there. {} when neither applies."""
    def selected(row):
        fits = sorted(row["fits"], key=lambda x: x["lambda"])
        best = min(fits, key=lambda x: x["val_rmse"])
        return best, fits[0] is not best and fits[-1] is not best

    if len(f["fits"]) >= TUNED_MIN_FITS:
        best, interior = selected(f)
        return {"falkon_tuned_lambda": best["lambda"], "falkon_tuned_test_rmse": best["test_rmse"],
                "falkon_tuned_on": f"validation, {len(f['fits'])} λ at n = {f['n']}", "falkon_tuned_interior": interior}
    smaller = [x for x in rows if x.get("method") == "falkon" and x["M"] == f["M"] and x["n"] < f["n"]
               and len(x.get("fits", ())) >= TUNED_MIN_FITS]
    if not smaller:
        return {}
    src = max(smaller, key=lambda x: x["n"])
    best, interior = selected(src)
    fit = next((x for x in f["fits"] if x["lambda"] == best["lambda"]), None)
    if fit is None:
        return {"falkon_tuned_lambda": best["lambda"], "falkon_tuned_test_rmse": None,
                "falkon_tuned_on": f"validation at n = {src['n']}; not fitted at n = {f['n']}"}
    return {"falkon_tuned_lambda": best["lambda"], "falkon_tuned_test_rmse": fit["test_rmse"],
            "falkon_tuned_on": f"validation, {len(src['fits'])} λ at n = {src['n']}", "falkon_tuned_interior": interior}


def compare(rows: list[dict]) -> dict:
    """At each (n, M) with both: jaxmtl's whole grid against ONE Falkon fit (time, memory, test RMSE),
    and the CG route's 20 λ (ω = 0) against the same fit where it ran at that (n, M)."""
    out = {}
    for r in rows:
        if r.get("method") != "jaxmtl" or "seconds_to_model" not in r:
            continue
        f = next((x for x in rows if x.get("method") == "falkon" and x["n"] == r["n"] and x["M"] == r["M"]
                  and "fits" in x), None)
        key = f"n={r['n']},M={r['M']}"
        if f is None:
            why = next((x.get("not_available") for x in rows if x.get("method") == "falkon" and x["n"] == r["n"]), None)
            out[key] = {"falkon": why or "no Falkon row", "jaxmtl_s": r["seconds_to_model"], "jaxmtl_test_rmse": r["test_rmse"]}
            continue
        tuned = tuned_falkon(rows, f)
        # Falkon's CG stops early once its residual is below cg_tolerance, sooner at a larger λ: a fit's
        # time depends on λ, and the fit compared is the one at its tuned λ (else the fastest)
        at_tuned = next((x for x in f["fits"] if x["lambda"] == tuned.get("falkon_tuned_lambda")), None)
        compared = min(f["fits"], key=lambda x: x["fit_s"]) if at_tuned is None else at_tuned
        one_fit = compared["fit_s"]
        is_ = "the fastest fit" if at_tuned is None else "the fit at its tuned λ"
        paired = next((x for x in f.get("paired_fits", ()) if x["lambda"] == tuned.get("falkon_tuned_lambda")
                       and x["command"] == r.get("command")), None)
        if paired is not None:  # measured again beside jaxmtl's row (--pair): the faster of the two measurements
            tuned.update(falkon_fit_s_in_tuning_run=one_fit, falkon_paired_val_rmse=paired["val_rmse"],
                         falkon_paired_test_rmse=paired["test_rmse"], falkon_paired_repeat_s=paired["repeat_s"])
            if paired["fit_s"] < one_fit:
                compared, one_fit = paired, paired["fit_s"]
                is_ = "the fit at its tuned λ, measured again in jaxmtl's run (the faster)"
            else:
                is_ = "the fit at its tuned λ, in the tuning run (faster than its refit in jaxmtl's run)"
        out[key] = {"jaxmtl_whole_grid_s": r["seconds_to_model"], "falkon_one_fit_s": one_fit,
                    "falkon_one_fit_is": is_, "jaxmtl_machine": r.get("cpu_model"),
                    "falkon_machine": compared.get("cpu_model", f.get("cpu_model")),
                    "falkon_fits_s": sum(x["fit_s"] for x in f["fits"]),
                    "time_met": bool(r["seconds_to_model"] < one_fit), "jaxmtl_test_rmse": r["test_rmse"],
                    "falkon_best_test_rmse": f["best_test_rmse"], "rmse_met": bool(r["test_rmse"] <= f["best_test_rmse"]),
                    "jaxmtl_peak_mb": r["peak_rss_mb"], "falkon_peak_mb": f["peak_rss_mb"],
                    "memory_met": bool(r["peak_rss_mb"] <= f["peak_rss_mb"]), **tuned}
        if tuned.get("falkon_tuned_test_rmse") is not None:
            out[key]["rmse_vs_tuned_met"] = bool(r["test_rmse"] <= tuned["falkon_tuned_test_rmse"])
    for r in rows:  # the CG route and the estimators' route beside them, judged where Falkon ran
        key = f"n={r['n']},M={r['M']}"
        tag = {"jaxmtl-cg": "cg", "estimator": "estimator"}.get(r.get("method"))
        if tag is None or "seconds_to_model" not in r or key not in out:
            continue
        t = out[key]
        t.update({f"{tag}_s": r["seconds_to_model"], f"{tag}_test_rmse": r["test_rmse"], f"{tag}_peak_mb": r["peak_rss_mb"],
                  f"{tag}_machine": r.get("cpu_model")})
        if "falkon_one_fit_s" in t:
            t.update({f"{tag}_time_met": bool(r["seconds_to_model"] < t["falkon_one_fit_s"]),
                      f"{tag}_rmse_met": bool(r["test_rmse"] <= t["falkon_best_test_rmse"]),
                      f"{tag}_memory_met": bool(r["peak_rss_mb"] <= t["falkon_peak_mb"])})
            if tag == "estimator":
                t["estimator_route"] = r["route_taken"]
    return out


if __name__ == "__main__":
    main()
