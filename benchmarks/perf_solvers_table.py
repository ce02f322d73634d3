"""KernelMachine's SMO against libsvm over many configurations: data sets, C values, widths, SVM and SVR.

A new user's fit: ``KernelMachine(loss='hinge' | 'epsilon_insensitive', C, kernel=Gaussian(σ),
tol=1e-3)`` in JAX's default configuration (float32, x64 off) against scikit-learn's ``SVC`` /
``SVR`` (libsvm, float64, its default 200 MB kernel cache) with the same C, γ = 1/(2σ²), ε = 0.1
and stopping tolerance (maximal KKT violation 1e-3); libsvm is timed a second time with
``shrinking=False`` — ours has no shrinking, so that ratio measures what shrinking buys it. Both
fit from the raw arrays (ours computes its Gram inside ``fit``, as libsvm its kernel rows). Same
process, one BLAS/XLA thread each (``--threads``), the fits timed in turn after a warm-up fit
(ours compiles there), median
of ``--repeats``; test error (SVM) or RMSE (SVR) side by side, and the largest difference of the
test decision values.

Data (inputs standardised on the training rows; γ = γ₀·k with γ₀ = 1/p, scikit-learn's 'scale'):
IDA banana, image, titanic (train + test rows of the first realisation pooled, then split),
scikit-learn's digits (even vs odd) and make_classification; SVR on the bundled Parkinson's
telemonitoring set (total_UPDRS) and scikit-learn's make_friedman1. The training size is each of
``--n`` or all a set has less a held-out part, whichever is smaller; above 2000 rows only the
generated sets, which reach any size, run (make_classification, make_hastie_10_2 and
make_friedman1: 8 configurations), since the real sets hold fewer rows.

Usage: python benchmarks/perf_solvers_table.py [--quick] [--n 2000 10000] [--repeats 3] [--threads N]
Writes benchmarks/results/perf_solvers_table.json (``_quick`` with --quick); ``--markdown`` prints
the table of docs/solvers.md from it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench  # noqa: E402

PARSER = argparse.ArgumentParser(description=__doc__.splitlines()[0])
PARSER.add_argument("--quick", action="store_true", help="n = 300, 4 configurations, 2 repeats")
PARSER.add_argument("--n", type=int, nargs="+", default=[2000, 10000],
                    help="training sizes (at most; a set may have fewer)")
PARSER.add_argument("--repeats", type=int, default=3)
PARSER.add_argument("--threads", type=int, default=1, help="BLAS / XLA threads (0: library defaults)")
PARSER.add_argument("--markdown", action="store_true", help="print the table of the last results as Markdown, run nothing")

TOL, EPS = 1e-3, 0.1
# (data set, task, C, γ / γ₀)
CONFIGS = tuple((name, "svm", C, k) for name in ("banana", "image", "titanic", "digits", "make_classification")
                for C, k in ((1.0, 1.0), (10.0, 1.0), (1.0, 4.0))) + \
    tuple((name, "svr", C, k) for name in ("parkinsons", "friedman1") for C, k in ((1.0, 1.0), (10.0, 1.0)))
# above SMALL rows: the generated sets only
SMALL = 2000
LARGE = tuple(c for c in CONFIGS if c[0] in ("make_classification", "friedman1")) + \
    tuple(("hastie", "svm", C, k) for C, k in ((1.0, 1.0), (10.0, 1.0), (1.0, 4.0)))
QUICK = (("banana", "svm", 1.0, 1.0), ("digits", "svm", 10.0, 1.0), ("parkinsons", "svr", 1.0, 1.0),
         ("friedman1", "svr", 10.0, 1.0))


def dataset(name: str, n: int, seed: int = 0):
    """(X, y, Xt, yt): at most ``n`` training rows, at most ``n/2`` test rows, inputs standardised."""
    import numpy as np
    from sklearn import datasets as skd

    from jaxmtl.datasets import load_ida, load_parkinsons

    if name in ("banana", "image", "titanic"):
        s = load_ida(name, 0)
        X, y = np.r_[s[0], s[2]], np.r_[s[1], s[3]]
    elif name == "digits":
        X, t = skd.load_digits(return_X_y=True)
        y = np.where(t % 2 == 0, 1.0, -1.0)
    elif name == "make_classification":
        X, t = skd.make_classification(n_samples=3 * n // 2, n_features=20, n_informative=8, flip_y=0.05,
                                       random_state=seed)
        y = 2.0 * t - 1
    elif name == "hastie":
        X, y = skd.make_hastie_10_2(n_samples=3 * n // 2, random_state=seed)
    elif name == "parkinsons":
        d = load_parkinsons()
        X, y = d.X, d.y
    else:  # friedman1
        X, y = skd.make_friedman1(n_samples=3 * n // 2, noise=1.0, random_state=seed)
    idx = np.random.default_rng(seed).permutation(len(y))
    n_tr = min(n, len(y) - min(len(y) // 4, n // 2))
    tr, te = idx[:n_tr], idx[n_tr:n_tr + n // 2]
    mu, sd = X[tr].mean(0), X[tr].std(0) + 1e-12
    return (X[tr] - mu) / sd, y[tr], (X[te] - mu) / sd, y[te]


def run(cfg, n: int, repeats: int) -> dict:
    """One configuration: both fits timed alternately, errors side by side."""
    import numpy as np
    from sklearn.svm import SVC, SVR

    from jaxmtl.kernels import Gaussian
    from jaxmtl.models import KernelMachine

    name, task, C, k = cfg
    X, y, Xt, yt = dataset(name, n)
    gamma = k / X.shape[1]
    sigma = float(np.sqrt(0.5 / gamma))
    if task == "svm":
        ours = lambda: KernelMachine(loss="hinge", C=C, kernel=Gaussian(sigma), tol=TOL).fit(X, y)
        peer = lambda shrinking=True: SVC(C=C, gamma=gamma, tol=TOL, shrinking=shrinking).fit(X, y)
        # KernelMachine is a regressor on the ±1 labels: its predict is the decision value
        decision = lambda m: m.predict(Xt) if isinstance(m, KernelMachine) else m.decision_function(Xt)
        metric = lambda f: float(np.mean(np.where(f >= 0, 1.0, -1.0) != yt))
    else:
        ours = lambda: KernelMachine(loss="epsilon_insensitive", C=C, epsilon=EPS, kernel=Gaussian(sigma),
                                     tol=TOL).fit(X, y)
        peer = lambda shrinking=True: SVR(C=C, epsilon=EPS, gamma=gamma, tol=TOL, shrinking=shrinking).fit(X, y)
        decision = lambda m: m.predict(Xt)
        metric = lambda f: float(np.sqrt(np.mean((f - yt) ** 2)))
    fitted = {}
    fns = {"ours": lambda: fitted.__setitem__("ours", ours()), "libsvm": lambda: fitted.__setitem__("libsvm", peer()),
           "libsvm_no_shrinking": lambda: peer(shrinking=False)}  # what shrinking buys libsvm, same run
    first = _bench.first_call_time(fns["ours"])  # compiles
    fns["libsvm"]()
    med = _bench.alternate(fns, repeats)
    Fo, Fl = np.asarray(decision(fitted["ours"]), np.float64), np.asarray(decision(fitted["libsvm"]), np.float64)
    sv = fitted["libsvm"].support_.size
    return {"data": name, "task": task, "n": X.shape[0], "p": X.shape[1], "C": C, "gamma": gamma,
            "ours_s": med["ours"], "libsvm_s": med["libsvm"], "ratio": med["ours"] / med["libsvm"],
            "libsvm_no_shrinking_s": med["libsvm_no_shrinking"],
            "ratio_no_shrinking": med["ours"] / med["libsvm_no_shrinking"],
            "ours_first_s": first, "ours_metric": metric(Fo), "libsvm_metric": metric(Fl),
            "max_decision_diff": float(np.max(np.abs(Fo - Fl))), "ours_iter": int(np.max(fitted["ours"].n_iter_)),
            "libsvm_iter": int(np.sum(fitted["libsvm"].n_iter_)), "libsvm_support": int(sv),
            "converged": bool(np.all(fitted["ours"].converged_))}


def markdown(payload: dict) -> str:
    """The docs' table of a results file: machine line, one row per configuration, the targets."""
    m, v = payload["machine"], payload["versions"]
    lines = [f"{m.get('cpu_model', m['processor'])}, {m['cpu_count']} cores (shared with other jobs), "
             f"{payload['threads']} thread; JAX {v['jax']}, scikit-learn {v['sklearn']}; {payload['dtype']}; "
             f"{payload['statistic']}, {payload['repeats']} repeats; command `{payload['command']}`:", "",
             "| data | task | n | p | C | γ | ours s | libsvm s | ours / libsvm | ours / libsvm without shrinking "
             "| error (SVM) or RMSE (SVR), ours / libsvm | max. decision diff. | iterations ours / libsvm |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in payload["rows"]:
        lines.append(f"| {r['data']} | {r['task']} | {r['n']} | {r['p']} | {r['C']:g} | {r['gamma']:.3g} | {r['ours_s']:.3g} "
                     f"| {r['libsvm_s']:.3g} | {r['ratio']:.2f} | {r['ratio_no_shrinking']:.2f} "
                     f"| {r['ours_metric']:.4g} / {r['libsvm_metric']:.4g} "
                     f"| {r['max_decision_diff']:.2g} | {r['ours_iter']} / {r['libsvm_iter']} |")
    lines.append("")
    lines += [f"- {'**met**' if t['met'] else 'not met'} — {k}: "
              + ", ".join(f"{a} = {b:.3g}" if isinstance(b, float) else f"{a} = {b}" for a, b in t.items() if a != "met")
              for k, t in payload["targets"].items()]
    return "\n".join(lines)


def main(argv=None):
    args = PARSER.parse_args(argv)
    if args.markdown:
        import json

        print(markdown(json.loads((_bench.RESULTS / "perf_solvers_table.json").read_text())))
        return
    _bench.set_threads(["--threads", str(args.threads)])
    repeats = 2 if args.quick else args.repeats
    plan = [(300, QUICK)] if args.quick else [(n, CONFIGS if n <= SMALL else LARGE) for n in args.n]
    rows = []
    start = time.perf_counter()
    for n, configs in plan:
        for cfg in configs:
            rows.append({"size": n, **run(cfg, n, repeats)})
            print(_bench.table(rows[-1:], list(rows[-1])), flush=True)
    cols = ["data", "task", "n", "C", "gamma", "ours_s", "libsvm_s", "ratio", "ratio_no_shrinking", "ours_metric",
            "libsvm_metric",
            "max_decision_diff", "ours_iter", "libsvm_iter"]
    print(_bench.table(rows, cols))
    ratios = [r["ratio"] for r in rows]
    med = statistics.median(ratios)
    targets = {"median ratio ≤ 1.5 (issue 30)": {"median_ratio": med, "met": bool(med <= 1.5)},
               "no ratio above 3 (issue 30)": {"max_ratio": max(ratios), "above_3": sum(r > 3 for r in ratios),
                                              "met": bool(max(ratios) <= 3)},
               "configurations ≥ 12": {"count": len(rows), "met": len(rows) >= 12}}
    # the limit measured beside: libsvm with its shrinking off (ours has none; see docs/solvers.md)
    above = [r for r in rows if r["ratio"] > 3]
    targets["no ratio above 3 against libsvm without shrinking (the limit, same run)"] = {
        "max_ratio": max(r["ratio_no_shrinking"] for r in rows),
        "above_3_with_shrinking": [f"{r['data']} n={r['n']} C={r['C']:g}: {r['ratio']:.2f}, "
                                   f"{r['ratio_no_shrinking']:.2f} without shrinking" for r in above],
        "met": bool(max(r["ratio_no_shrinking"] for r in rows) <= 3)}
    for n, _ in plan:
        part = [r["ratio"] for r in rows if r["size"] == n]
        targets[f"n = {n}: median ratio ≤ 1.5, none above 3"] = {
            "median_ratio": statistics.median(part), "max_ratio": max(part), "count": len(part),
            "met": bool(statistics.median(part) <= 1.5 and max(part) <= 3)}
    for k, t in targets.items():
        print(f"target {k}: {'MET' if t['met'] else 'NOT MET'} {t}")
    name = "perf_solvers_table" + ("_quick" if args.quick else "")
    command = "python benchmarks/perf_solvers_table.py" + (" --quick" if args.quick else f" --n {' '.join(map(str, args.n))} --repeats {args.repeats}")
    path = _bench.write(name, {"command": command, "dtype": "ours float32 (JAX default), libsvm float64",
                               "tol": TOL, "epsilon": EPS, "repeats": repeats,
                               "threads": _bench.os.environ.get("JAXMTL_BENCH_THREADS"),
                               "versions": _bench.versions(), "elapsed_s": time.perf_counter() - start,
                               "statistic": "median wall time after a warm-up fit, the fits timed in turn",
                               "targets": targets, "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
