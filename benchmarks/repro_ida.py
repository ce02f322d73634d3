"""Reproduce [LRODV08] Table 2 (and the SVM column of Table 3): spectral filters on the IDA benchmarks.

Row reproduced: PAPER_FIGURES.md "IDA benchmarks ([LRODV08], §7.1, Tables 2 and 3)".

Protocol ([LRODV08] §7.1): Gaussian kernel; labels ±1 learned as a scalar regression, sign rule.
σ and the path parameter (t for Landweber / ν-method, λ for Tikhonov / iterated Tikhonov /
TSVD) are chosen by 5-fold cross-validation on each of the first 5 partitions; the median of
the 5 chosen values of each is then used on every partition (here the 10 available, not 100).
ν = 5 for the ν-method (``NuMethod(nu=5)``) and iterated Tikhonov (``IteratedTikhonov(order=5)``),
as the paper chose. CV criterion: misclassification rate of the sign rule, ties broken by
10⁻³·MSE. The σ grid is the median pairwise distance × 2^{-2..1}, ``lax.map``-ed inside one
compiled call; folds vmapped; one eigh per (σ, fold) shared by all five filters.

The ν-method path is the recurrence (``lax.scan``, steps 1..1000). Landweber's path is
evaluated in its exact closed form g_t(σ) = (1 − (1 − τσ)^t)/σ (equal to the recurrence,
tested in tests/test_filters.py) on a geometric grid of t up to 10⁶, so the step counts
Landweber needs can be reported without running 10⁶ scan steps.

Peer: scikit-learn SVC (RBF), C and γ by 5-fold GridSearchCV under the same median protocol.

Step counts. Our iterative filters act on K/n with step τ = 1/σ_max(K/n) (≥ 1); the paper's use
τ = 1 with κ = sup K(x, x) = 1, so its t is not our t. For Landweber the filter depends on τ·t, for
the ν-method on τ·t² (λ ≈ 1/(τt²)), so the "Selected parameters" table shows our t beside its
value in the paper's normalisation, t·τ (Landweber) and t·√τ (ν-method), τ measured on the first
partition's training Gram at the selected σ.

Claims: each published mean error (Table 2, and the SVM column of Table 3) against ours two-sided,
within 2 standard errors of the difference, √(SE_ours² + SE_paper²) with SE = std/√splits (10
splits here, 100 in the paper); "the ν-method … converges to a solution in fewer iterations", "we
just need the square root of the number of iterations needed by Landweber" (§5, §7.1) in the
paper's normalisation. Failing claims stay in the table, with the SVM on the same partitions as a
control (how far our 10 partitions lie from the paper's 100 for a method we do not implement).

Usage: python benchmarks/repro_ida.py [--quick]   (--quick: heart only, 3 widths, 2 selection
partitions, 300 ν-method steps; the heart claims are checked)
"""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _repro  # noqa: E402
from _ida_published import PAPER  # noqa: E402

_repro.setup()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxmtl.datasets import load_ida  # noqa: E402
from jaxmtl.filters import IteratedTikhonov, Landweber, NuMethod, SpectralFilter, Tikhonov, TruncatedSVD
from jaxmtl.kernels import Gaussian, median_heuristic
from jaxmtl.operators import SeparableEigh
from jaxmtl.paths import filtered_coefficients, spectral_path
from jaxmtl.selection import kfold_masks

PAPER_NU_PARAMS = {"banana": (70, 1), "breast_cancer": (5, 2), "german": (16, 3), "heart": (16, 12),
                   "image": (447, 2.6), "titanic": (1, 1)}  # ν-method t / σ


class LandweberClosed(SpectralFilter):
    """Landweber evaluated in closed form at any t (non-consecutive grids allowed)."""

    name = "landweber"

    def __call__(self, sigma, param, tau=None):
        return Landweber().closed_form(sigma, param, 1.0 if tau is None else tau)


FILTERS = {
    "landweber": LandweberClosed(),
    "nu_method": NuMethod(nu=5.0),
    "tikhonov": Tikhonov(),
    "tsvd": TruncatedSVD(),
    "iterated_tikhonov": IteratedTikhonov(order=5),
}
NAMES = tuple(FILTERS)


def sign_loss(F, Y, w):
    """Misclassification rate of sign(F) (0 counts as +1), ties broken by 1e-3·MSE."""
    wrong = jnp.where(F[:, 0] >= 0, 1.0, -1.0) != Y[:, 0]
    return jnp.sum(w * wrong) + 1e-3 * jnp.sum(w * (F[:, 0] - Y[:, 0]) ** 2)


def error_rate(F, y):
    return float(np.mean(np.where(F >= 0, 1.0, -1.0) != y))


@partial(jax.jit, static_argnames=("filters",))
def cv_scores(X, Y, masks, sigmas, params, filters):
    """(W, P) mean 5-fold CV loss of every filter for every width: widths lax.map-ed,
    folds vmapped, one eigh per (width, fold) shared by all filters."""
    a, V = jnp.ones((1,), X.dtype), jnp.eye(1, dtype=X.dtype)

    def per_width(s):
        K = Gaussian(s)(X, X)

        def per_fold(m):
            mf = m.astype(X.dtype)
            ev, U = jnp.linalg.eigh(K * mf[:, None] * mf[None, :])
            eig = SeparableEigh(jnp.maximum(ev, 0.0), U, a, V)
            held = 1.0 - mf
            return tuple(
                spectral_path(eig, Y * mf[:, None], f, p, K_eval=K, Y_eval=Y, w_eval=held / jnp.sum(held),
                              n=jnp.sum(mf), output="loss", loss=sign_loss)
                for f, p in zip(filters, params))

        return tuple(jnp.mean(x, axis=0) for x in jax.vmap(per_fold)(masks))

    return jax.lax.map(per_width, sigmas)


@partial(jax.jit, static_argnames=("filt",))
def fit_predict(filt, Xtr, ytr, Xte, sigma, param):
    kern = Gaussian(sigma)
    K = kern(jnp.asarray(Xtr), jnp.asarray(Xtr))
    s, U = jnp.linalg.eigh(K)
    eig = SeparableEigh(jnp.maximum(s, 0.0), U, jnp.ones((1,)), jnp.eye(1))
    C = filtered_coefficients(filt, eig, jnp.asarray(ytr)[:, None], param)
    return (kern(jnp.asarray(Xte), jnp.asarray(Xtr)) @ C)[:, 0]


def svm_peer(splits, n_select, factors, base):
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    gammas = 1.0 / (2.0 * (base * factors) ** 2)
    grid = {"C": np.logspace(-1, 3, 5), "gamma": gammas}
    chosen = []
    for sp in splits[:n_select]:
        gs = GridSearchCV(SVC(kernel="rbf"), grid, cv=5, n_jobs=1).fit(sp.X_train, sp.y_train)
        chosen.append((gs.best_params_["C"], gs.best_params_["gamma"]))
    C, g = np.median([c[0] for c in chosen]), np.median([c[1] for c in chosen])
    errs = [float(np.mean(SVC(kernel="rbf", C=C, gamma=g).fit(sp.X_train, sp.y_train).predict(sp.X_test)
                          != sp.y_test)) for sp in splits]
    return {"C": float(C), "gamma": float(g), "errors": errs}


def selection_protocol(quick: bool):
    """(data sets, kernel-width factors of the median distance, partitions used for selection)."""
    datasets = ["heart"] if quick else list(PAPER)
    factors = 2.0 ** np.arange(-1, 2) if quick else 2.0 ** np.arange(-2, 2)
    return datasets, factors, 2 if quick else 5


def main():
    args = _repro.parse(__doc__.splitlines()[0])
    start = time.perf_counter()
    quick = args.quick
    datasets, factors, n_select = selection_protocol(quick)
    T = 300 if quick else 1000
    lam = np.geomspace(1e-9, 1.0, 19 if quick else 37)
    t_lw = np.unique(np.round(np.geomspace(1, 1e6, 19 if quick else 49)))
    params = {"landweber": t_lw, "nu_method": np.arange(1, T + 1), "tikhonov": lam, "tsvd": lam,
              "iterated_tikhonov": lam}
    ours, rows, per_dataset_time = {}, [], {}
    for name in datasets:
        t0 = time.perf_counter()
        splits = load_ida(name)
        base = median_heuristic(np.concatenate([splits[0].X_train, splits[1].X_train]))
        sigmas = base * factors
        chosen = {f: [] for f in NAMES}
        for i, sp in enumerate(splits[:n_select]):
            masks = kfold_masks(len(sp.y_train), 5, seed=i)
            scores = cv_scores(jnp.asarray(sp.X_train), jnp.asarray(sp.y_train)[:, None], jnp.asarray(masks),
                               jnp.asarray(sigmas), tuple(jnp.asarray(params[f]) for f in NAMES),
                               tuple(FILTERS[f] for f in NAMES))
            for f, sc in zip(NAMES, scores):
                sc = np.asarray(sc)
                iw, ip = np.unravel_index(int(np.argmin(sc)), sc.shape)
                chosen[f].append((float(sigmas[iw]), float(params[f][ip]), float(sc[iw, ip])))
        res = {}
        for f in NAMES:
            s_med = float(np.median([c[0] for c in chosen[f]]))
            p_med = float(np.median([c[1] for c in chosen[f]]))
            if f == "nu_method":
                p_med = int(round(p_med))
            errs = [error_rate(np.asarray(fit_predict(FILTERS[f], sp.X_train, sp.y_train, sp.X_test, s_med, p_med)), sp.y_test)
                    for sp in splits]
            res[f] = {"sigma": s_med, "param": p_med, "per_split_choice": chosen[f],
                      "errors": errs, "mean": 100 * np.mean(errs), "std": 100 * np.std(errs, ddof=1)}
            if f in ("nu_method", "landweber"):  # τ = 1/σ_max(K/n) on the first partition, t in the paper's τ = 1
                K = np.asarray(Gaussian(s_med)(jnp.asarray(splits[0].X_train), jnp.asarray(splits[0].X_train)))
                tau = len(K) / float(np.linalg.eigvalsh(K)[-1])
                res[f]["tau"] = tau
                res[f]["param_paper_normalisation"] = p_med * (np.sqrt(tau) if f == "nu_method" else tau)
        svm = svm_peer(splits, n_select, factors, base)
        res["svm"] = {**svm, "mean": 100 * np.mean(svm["errors"]), "std": 100 * np.std(svm["errors"], ddof=1)}
        per_dataset_time[name] = time.perf_counter() - t0
        ours[name] = res
        rows.append([name] + [f"{res[f]['mean']:.2f} ± {res[f]['std']:.2f} ({PAPER[name][f][0]:.2f} ± "
                              f"{PAPER[name][f][1]:.2f})" for f in NAMES + ("svm",)])
        print(f"{name}: {per_dataset_time[name]:.1f} s", flush=True)

    header = ["dataset"] + [f"{f} ours (paper)" for f in NAMES + ("svm",)]
    t1 = ("Test error % (mean ± std over 10 splits; paper: 100 splits); models trained on each partition's "
          "training set, parameters by the median protocol\n" + _repro.table(header, rows))
    prow = []
    for n in datasets:
        nu, lw = ours[n]["nu_method"], ours[n]["landweber"]
        prow.append([n, f"{PAPER_NU_PARAMS[n][0]} / {PAPER_NU_PARAMS[n][1]}", nu["param"], f"{nu['tau']:.2f}",
                     f"{nu['param_paper_normalisation']:.0f}", f"{nu['sigma']:.3g}", f"{lw['param']:.0f}",
                     f"{lw['tau']:.2f}", f"{lw['param_paper_normalisation']:.0f}"])
    t2 = ("Selected parameters. Our t uses τ = 1/σ_max(K/n); the paper's t uses τ = 1 (κ = 1): comparable "
          "figures are t·√τ (ν-method) and t·τ (Landweber)\n" + _repro.table(
              ["dataset", "paper ν t / σ", "ν t (ours)", "ν τ", "ν t·√τ", "ν σ (ours)", "Landweber t (ours)",
               "Landweber τ", "Landweber t·τ"], prow))

    claims = _repro.Claims(quick)
    for n in datasets:
        for f in NAMES + ("svm",):
            claims.sanity(f"{n}/{f}: finite errors in [0, 1]", all(0 <= e <= 1 for e in ours[n][f]["errors"]))
    svm_gap = {n: ours[n]["svm"]["mean"] - PAPER[n]["svm"][0] for n in datasets}
    for n in datasets:
        cmp = _repro.mean_vs_published(100 * np.asarray(ours[n]["nu_method"]["errors"]), *PAPER[n]["nu_method"], 100)
        claims.check(f"{n}: ν-method test error (Table 2) reproduced", cmp["ok"],
                     paper=f"{PAPER[n]['nu_method'][0]} ± {PAPER[n]['nu_method'][1]} % (100 splits)",
                     ours=f"{cmp['ours']:.2f} ± {ours[n]['nu_method']['std']:.2f} % (10 splits)",
                     tolerance=f"two-sided |ours − paper| ≤ 2·√(SE_ours² + SE_paper²) = {cmp['tolerance']:.2f}",
                     detail=f"difference {cmp['difference']:+.2f}", quick=True, direction="lower", figures=cmp,
                     explanation=f"our 10 partitions are not the paper's 100: the SVM control on the same "
                                 f"partitions differs from its published mean by {svm_gap[n]:+.2f} points")
    for f in NAMES + ("svm",):
        if f == "nu_method":
            continue
        outside, figures = {}, []
        for n in datasets:
            cmp = _repro.mean_vs_published(100 * np.asarray(ours[n][f]["errors"]), *PAPER[n][f], 100)
            figures.append({**cmp, "label": n})
            if not cmp["ok"]:
                outside[n] = f"{cmp['ours']:.2f} vs {cmp['paper']} (tol {cmp['tolerance']:.2f})"
        table = "Table 3, SVM column" if f == "svm" else f"Table 2, {f} column"
        claims.check(f"{f}: test errors ({table}) reproduced on every dataset", not outside,
                     paper={n: f"{PAPER[n][f][0]} ± {PAPER[n][f][1]}" for n in datasets},
                     ours={n: f"{ours[n][f]['mean']:.2f} ± {ours[n][f]['std']:.2f}" for n in datasets},
                     tolerance="two-sided, 2·√(SE_ours² + SE_paper²) per dataset",
                     detail=f"outside: {outside}" if outside else "", quick=True, direction="lower", figures=figures,
                     explanation="see the SVM control in the per-dataset ν-method claims" if f != "svm" else
                     "scikit-learn SVC with our (C, γ) grid, not the benchmark page's SVM; partitions 1–10 only")
    steps = {n: (ours[n]["nu_method"]["param_paper_normalisation"], ours[n]["landweber"]["param_paper_normalisation"])
             for n in datasets}
    fewer = {n: lw > nu for n, (nu, lw) in steps.items()}
    claims.check("\"The ν-method … converges to a solution in fewer iterations\" than Landweber (§7.1), every dataset",
                 all(fewer.values()), paper="fewer iterations on every dataset",
                 ours={n: f"ν {nu:.0f}, Landweber {lw:.0f}" for n, (nu, lw) in steps.items()},
                 tolerance="strict, paper's normalisation (t·√τ vs t·τ)", quick=True)
    square = {n: float(np.log(lw) / np.log(nu)) for n, (nu, lw) in steps.items() if nu >= 4}
    claims.check("\"we just need the square root of the number of iterations needed by Landweber\" (§5.2; Table 2): "
                 "log t_Landweber / log t_ν ≈ 2", bool(square) and all(1.5 <= r <= 2.5 for r in square.values()),
                 paper="exponent 2", ours={n: round(r, 2) for n, r in square.items()},
                 tolerance="exponent in [1.5, 2.5] on every dataset with t_ν ≥ 4 (paper's normalisation)",
                 explanation="the selection criterion is the misclassification rate, flat over long stretches of "
                             "the path: each filter stops at the first step of a wide plateau, not at matched "
                             "regularisation; the √ relation holds for the filters' λ ≈ 1/(τt) and 1/(τt²) "
                             "(tests/test_filters.py), not for these selected steps")
    protocol = {"cv_folds": 5, "selection_partitions": n_select, "evaluation_partitions": 10,
                "sigma_grid": "median pairwise distance × " + str(factors.tolist()),
                "nu_method": {"nu": 5.0, "max_steps": T}, "iterated_tikhonov_order": 5,
                "lambda_grid": [float(lam[0]), float(lam[-1]), len(lam)],
                "landweber_t_grid": [float(t_lw[0]), float(t_lw[-1]), len(t_lw)],
                "cv_criterion": "sign-rule misclassification + 1e-3·MSE tie-break",
                "svm_grid": {"C": np.logspace(-1, 3, 5).tolist(), "gamma": "1/(2σ²) on the σ grid"}}
    _repro.finish("repro_ida", args, start, {"table2": PAPER, "nu_method_t_sigma": PAPER_NU_PARAMS}, protocol,
                  {"kfold_masks_seed": "partition index", "partitions": "IDA realisations 1..10"},
                  ours, claims, [t1, t2], {"seconds_per_dataset": per_dataset_time})


if __name__ == "__main__":
    main()
