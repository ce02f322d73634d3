"""Reproduce the SVM column of [LRODV08] Table 3 on the IDA benchmarks with our SMO solver, SVC beside it.

Row reproduced: PAPER_FIGURES.md "IDA benchmarks ([LRODV08], §7.1, Tables 2 and 3)", SVM column.

Protocol (that of ``benchmarks/repro_ida.py`` for its SVM peer): Gaussian kernel of width σ on
the grid median pairwise distance × 2^{-2..1} (γ = 1/(2σ²)), C ∈ {0.1, 1, 10, 100, 1000}; (C, γ)
chosen by 5-fold cross-validation (scikit-learn's stratified folds, the folds GridSearchCV uses)
on each of the first 5 partitions, the median of the 5 chosen values of each then used on every
partition (the 10 available, not the paper's 100). The SVM is the hinge loss with an intercept,
C as scikit-learn's, stopped at KKT violation 1e-3 (libsvm's tol).

Ours: ``jaxmtl.solvers.smo_path`` — for each width, all 5 C values (warm-started, ascending) × 5
folds in one compiled call — then ``jaxmtl.solvers.smo`` on each partition. Peer: scikit-learn's
SVC in ``GridSearchCV`` on the same grid and folds (``repro_ida.svm_peer``), ties broken alike (the
first best in GridSearchCV's order: C outer, γ inner).

Claims: each published SVM mean error against ours two-sided, within 2 standard errors of the
difference (as repro_ida.py); and, as checks of the solver rather than of the paper, ours picks
the (C, γ) SVC picks on every selection partition and its test errors equal SVC's split by split
(within 0.1 % of the test points, at least one: both solvers stop at a KKT violation of 1e-3, at
slightly different points, and a test point on the boundary can fall either side).

Usage: python benchmarks/repro_ida_svm.py [--quick]   (--quick: heart only, 3 widths, 2 selection
partitions)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _repro  # noqa: E402

_repro.setup()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxmtl.datasets import load_ida  # noqa: E402
from jaxmtl.kernels import Gaussian, median_heuristic  # noqa: E402
from jaxmtl.solvers import smo, smo_path  # noqa: E402
from repro_ida import PAPER, error_rate, selection_protocol  # noqa: E402

CS = np.logspace(-1, 3, 5)
TOL = 1e-3


@jax.jit
def gram(X1, X2, sigma):
    return Gaussian(sigma)(X1, X2)


def stratified_masks(y) -> np.ndarray:
    """(5, n) training masks of the folds GridSearchCV(cv=5) uses for a classifier."""
    from sklearn.model_selection import StratifiedKFold

    masks = np.zeros((5, len(y)), bool)
    for k, (train, _) in enumerate(StratifiedKFold(n_splits=5).split(np.zeros(len(y)), y)):
        masks[k, train] = True
    return masks


def select(X, y, sigmas) -> tuple[float, float, np.ndarray]:
    """(C, σ, (n_C, n_σ) mean CV error) by 5-fold CV; one smo_path call per width."""
    masks = stratified_masks(y)
    Xj = jnp.asarray(X)
    scores = np.empty((len(CS), len(sigmas)))
    for j, s in enumerate(sigmas):
        K = gram(Xj, Xj, s)
        r = smo_path(K, y, CS, masks=masks, tol=TOL)
        F = np.einsum("ij,kcj->kci", np.asarray(K), np.asarray(r.coef[..., 0])) + np.asarray(r.intercept)
        wrong = np.where(F >= 0, 1.0, -1.0) != y
        held = ~masks[:, None, :]
        scores[:, j] = np.mean(np.sum(wrong & held, axis=2) / np.sum(held, axis=2), axis=0)
    i = int(np.argmin(np.round(scores, 12)))  # first best in GridSearchCV's order (C outer, γ inner)
    ic, js = np.unravel_index(i, scores.shape)
    return float(CS[ic]), float(sigmas[js]), scores


def evaluate(splits, C, sigma) -> tuple[list[float], list[bool]]:
    errors, converged = [], []
    for sp in splits:
        Xtr = jnp.asarray(sp.X_train)
        r = smo(gram(Xtr, Xtr, sigma), sp.y_train, C, tol=TOL)
        F = np.asarray(gram(jnp.asarray(sp.X_test), Xtr, sigma)) @ np.asarray(r.coef) + float(r.intercept)
        errors.append(error_rate(F, sp.y_test))
        converged.append(bool(r.converged))
    return errors, converged


def svm_peer(splits, n_select, sigmas):
    """scikit-learn's SVC under the same protocol (GridSearchCV on the same grid and folds)."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    grid = {"C": CS, "gamma": 1.0 / (2.0 * np.asarray(sigmas) ** 2)}
    chosen = []
    for sp in splits[:n_select]:
        gs = GridSearchCV(SVC(kernel="rbf", tol=TOL), grid, cv=5, n_jobs=1).fit(sp.X_train, sp.y_train)
        chosen.append((float(gs.best_params_["C"]), float(np.sqrt(0.5 / gs.best_params_["gamma"]))))
    C, s = float(np.median([c[0] for c in chosen])), float(np.median([c[1] for c in chosen]))
    errs = [float(np.mean(SVC(kernel="rbf", C=C, gamma=0.5 / s**2, tol=TOL).fit(sp.X_train, sp.y_train)
                          .predict(sp.X_test) != sp.y_test)) for sp in splits]
    return {"C": C, "sigma": s, "per_split_choice": chosen, "errors": errs}


def main():
    args = _repro.parse(__doc__.splitlines()[0])
    start = time.perf_counter()
    quick = args.quick
    datasets, factors, n_select = selection_protocol(quick)
    ours, peer, rows, seconds = {}, {}, [], {}
    for name in datasets:
        splits = load_ida(name)
        base = median_heuristic(np.concatenate([splits[0].X_train, splits[1].X_train]))
        sigmas = base * factors
        t0 = time.perf_counter()
        chosen = [select(sp.X_train, sp.y_train, sigmas)[:2] for sp in splits[:n_select]]
        C, s = float(np.median([c[0] for c in chosen])), float(np.median([c[1] for c in chosen]))
        errs, conv = evaluate(splits, C, s)
        t1 = time.perf_counter()
        peer[name] = svm_peer(splits, n_select, sigmas)
        seconds[name] = {"ours_s": t1 - t0, "sklearn_s": time.perf_counter() - t1}
        ours[name] = {"C": C, "sigma": s, "per_split_choice": chosen, "errors": errs, "converged": conv,
                      "mean": 100 * np.mean(errs), "std": 100 * np.std(errs, ddof=1)}
        pe = peer[name]["errors"]
        rows.append([name, _repro.pm(np.mean(errs), np.std(errs, ddof=1), 100),
                     _repro.pm(np.mean(pe), np.std(pe, ddof=1), 100), f"{PAPER[name]['svm'][0]:.2f} ± "
                     f"{PAPER[name]['svm'][1]:.2f}", f"{C:g} / {s:.3g}", f"{peer[name]['C']:g} / {peer[name]['sigma']:.3g}",
                     f"{seconds[name]['ours_s']:.1f} / {seconds[name]['sklearn_s']:.1f}"])
        print(f"{name}: ours {seconds[name]['ours_s']:.1f} s, SVC {seconds[name]['sklearn_s']:.1f} s", flush=True)

    t = ("SVM test error % (mean ± std over 10 partitions; paper: 100), (C, σ) by the median protocol; time of "
         "the whole selection + evaluation, ours (compilation included) / scikit-learn\n" + _repro.table(
             ["dataset", "ours (SMO)", "scikit-learn SVC", "paper (Table 3)", "ours C / σ", "SVC C / σ",
              "seconds ours / SVC"], rows))
    claims = _repro.Claims(quick)
    for n in datasets:
        claims.sanity(f"{n}: every SMO fit converged, errors in [0, 1]",
                      all(ours[n]["converged"]) and all(0 <= e <= 1 for e in ours[n]["errors"]))
        same = [tuple(a) == tuple(b) for a, b in zip(ours[n]["per_split_choice"], peer[n]["per_split_choice"])]
        claims.sanity(f"{n}: the same (C, σ) as SVC on every selection partition", all(same),
                      detail=f"ours {ours[n]['per_split_choice']}, SVC {peer[n]['per_split_choice']}")
        n_test = len(load_ida(n)[0].y_test)
        diff = np.rint(np.abs(np.asarray(ours[n]["errors"]) - np.asarray(peer[n]["errors"])) * n_test)
        allowed = max(1.0, np.floor(1e-3 * n_test))
        claims.sanity(f"{n}: test errors equal SVC's on every partition (within 0.1 % of the test points, at least "
                      "one: both stop at KKT violation 1e-3, not at the same point)", diff.max() <= allowed,
                      detail=f"largest difference {diff.max():.0f} of {n_test} test points (allowed {allowed:.0f})")
    for n in datasets:
        cmp = _repro.mean_vs_published(100 * np.asarray(ours[n]["errors"]), *PAPER[n]["svm"], 100)
        svc = 100 * np.mean(peer[n]["errors"])
        claims.check(f"{n}: SVM test error (Table 3, SVM column) reproduced by our SMO solver", cmp["ok"],
                     paper=f"{PAPER[n]['svm'][0]} ± {PAPER[n]['svm'][1]} % (100 partitions)",
                     ours=f"{cmp['ours']:.2f} ± {ours[n]['std']:.2f} % (10 partitions)",
                     tolerance=f"two-sided |ours − paper| ≤ 2·√(SE_ours² + SE_paper²) = {cmp['tolerance']:.2f}",
                     detail=f"difference {cmp['difference']:+.2f}; scikit-learn SVC on the same partitions "
                            f"{svc:.2f}", quick=True, direction="lower", figures=cmp,
                     explanation=f"our 10 partitions are not the paper's 100, and the paper's SVM is the "
                                 f"benchmark page's, not this grid: scikit-learn's SVC under the same protocol "
                                 f"gives {svc:.2f} % on these partitions")
    protocol = {"cv": "StratifiedKFold(5), the folds of GridSearchCV(cv=5)", "selection_partitions": n_select,
                "evaluation_partitions": 10, "sigma_grid": "median pairwise distance × " + str(factors.tolist()),
                "C_grid": CS.tolist(), "tol": TOL, "tie_break": "first best, C outer, γ inner"}
    _repro.finish("repro_ida_svm", args, start, {"table3_svm": {n: PAPER[n]["svm"] for n in PAPER}}, protocol,
                  {"folds": "StratifiedKFold without shuffling", "partitions": "IDA realisations 1..10"},
                  {"smo": ours, "sklearn_svc": peer}, claims, [t], {"seconds": seconds})


if __name__ == "__main__":
    main()
