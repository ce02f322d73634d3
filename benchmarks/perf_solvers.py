"""Kernel-machine solvers ([Din11] ch. 2) against libsvm (scikit-learn SVC / SVR).

For each n: an RBF SVM (hinge, C = 1) and an SVR (ε = 0.1, C = 1) on synthetic data, the same
kernel and C for both libraries; fit time after compilation (median of ``repeats``) and test
accuracy / RMSE side by side. Ours: the fixed-point solver with intercept (the problem SVC
solves) and coordinate descent without intercept; the Gram matrix is computed inside the timed
region for both. Then the batched case libsvm cannot do in one call: 5 C values × 5 folds,
one ``fixed_point_path`` call (folds vmapped, C path warm-started) against 25 SVC fits.

Usage: python benchmarks/perf_solvers.py [--quick] [--float32]
Writes benchmarks/results/perf_solvers.json (perf_solvers_quick.json with --quick; a _gpu suffix
on an accelerator).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _bench  # noqa: E402

args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
args.add_argument("--quick", action="store_true", help="n = 300 only, one repeat (seconds)")
args.add_argument("--float32", action="store_true", help="float32 instead of float64")
ARGS = args.parse_args()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", not ARGS.float32)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxmtl.kernels import Gaussian  # noqa: E402
from jaxmtl.selection import kfold_masks  # noqa: E402
from jaxmtl.solvers import coordinate_descent, fixed_point, fixed_point_path  # noqa: E402

TOL = 1e-3  # relative duality gap (libsvm: KKT violation 1e-3)


def problem(n, seed=0):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=2 * n, n_features=10, n_informative=6, flip_y=0.05, random_state=seed)
    X = (X - X.mean(0)) / X.std(0)
    t = np.sin(X[:, 0]) + X[:, 1] * X[:, 2] / 3 + 0.1 * np.random.default_rng(seed).normal(size=2 * n)
    return X[:n], 2.0 * y[:n] - 1, t[:n], X[n:], 2.0 * y[n:] - 1, t[n:]


def main():
    from sklearn.svm import SVC, SVR

    sizes = [300] if ARGS.quick else [2000, 10000]
    repeats = 1 if ARGS.quick else 3
    dtype = np.float32 if ARGS.float32 else np.float64
    rows = []
    for n in sizes:
        X, y, t, Xt, yt, tt = problem(n)
        X, Xt = X.astype(dtype), Xt.astype(dtype)
        sigma = np.sqrt(X.shape[1] / 2.0)  # γ = 1/p, scikit-learn's gamma='scale' on standardised data
        gamma = 1.0 / (2 * sigma**2)
        kern = Gaussian(sigma)
        Xj, Xtj = jnp.asarray(X), jnp.asarray(Xt)

        def ours(loss, target, intercept, solver):
            def fit():
                K = kern(Xj, Xj)
                r = solver(K, target, 1.0, loss=loss, epsilon=0.1, tol=TOL, **({"fit_intercept": True} if intercept else {}))
                return (kern(Xtj, Xj) @ r.coef + r.intercept).block_until_ready(), r

            fit()  # compile
            return _bench.median_time(fit, repeats), fit()

        for task, loss, target, test, peer in (
                ("svm", "hinge", y, yt, lambda: SVC(C=1.0, gamma=gamma, tol=1e-3)),
                ("svr", "epsilon_insensitive", t, tt, lambda: SVR(C=1.0, epsilon=0.1, gamma=gamma, tol=1e-3))):
            sk_time = _bench.median_time(lambda: peer().fit(X, target), repeats)
            sk_pred = peer().fit(X, target).predict(Xt)
            metric = (lambda p: float(np.mean(np.sign(p) != test))) if task == "svm" else \
                (lambda p: float(np.sqrt(np.mean((p - test) ** 2))))
            fp_time, (fp_pred, fp_res) = ours(loss, target, True, fixed_point)
            cd_time, (cd_pred, cd_res) = ours(loss, target, False, coordinate_descent)
            rows.append({"n": n, "task": task, "sklearn_s": sk_time, "fixed_point_s": fp_time,
                         "coord_descent_s": cd_time, "fp_over_sklearn": fp_time / sk_time,
                         "cd_over_sklearn": cd_time / sk_time, "sklearn_metric": metric(sk_pred),
                         "fixed_point_metric": metric(np.asarray(fp_pred)),
                         "coord_descent_metric": metric(np.asarray(cd_pred)),
                         "fp_iters": int(fp_res.n_iter), "cd_sweeps": int(cd_res.n_iter)})
            print(_bench.table(rows[-1:], list(rows[-1])), flush=True)

        # batched: 5 C × 5 folds in one call vs 25 SVC fits
        Cs = np.logspace(-1, 1, 5)
        masks = kfold_masks(n, 5, 0)

        def batched():
            K = kern(Xj, Xj)
            return fixed_point_path(K, y, Cs, masks=masks, tol=TOL, fit_intercept=True).coef.block_until_ready()

        batched()
        ours_b = _bench.median_time(batched, 1)
        sk_b = _bench.median_time(lambda: [SVC(C=C, gamma=gamma).fit(X[m], y[m]) for C in Cs for m in masks], 1)
        rows.append({"n": n, "task": "svm 5 C x 5 folds", "sklearn_s": sk_b, "fixed_point_s": ours_b,
                     "fp_over_sklearn": ours_b / sk_b})
        print(_bench.table(rows[-1:], list(rows[-1])), flush=True)

    cols = ["n", "task", "sklearn_s", "fixed_point_s", "coord_descent_s", "fp_over_sklearn", "cd_over_sklearn",
            "sklearn_metric", "fixed_point_metric", "coord_descent_metric", "fp_iters", "cd_sweeps"]
    print(_bench.table(rows, cols))
    name = "perf_solvers_quick" if ARGS.quick else "perf_solvers"
    path = _bench.write(name, {"dtype": np.dtype(dtype).name, "tol": TOL, "repeats": repeats,
                               "statistic": "median wall time after compilation", "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
