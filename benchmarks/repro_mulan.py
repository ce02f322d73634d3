"""Multi-target regression on the bundled Mulan sets: output matrices vs per-target KernelRidge.

No row of PAPER_FIGURES.md: the source papers do not report these sets. This script is the
multi-target counterpart of the School experiment on public data: the separable kernel
K(x, x')·A with A = I (independent targets) and A_ω = ω11ᵀ + (1−ω)I (common similarity, ω
chosen on the path, [BRBV11] eq. 18), ν-method (``VectorValuedRegressor``, Gaussian width,
ω and steps by inner 5-fold CV on the eigen path), against scikit-learn's ``KernelRidge``
(RBF) tuned separately for every target (α, γ by inner 5-fold CV on a grid; one multi-output
solve per (γ, α) with per-target validation errors, which is exactly per-target tuning), and beside
both the library as a user runs it: ``VectorValuedRegressor()`` with its defaults (the coupled
family and the per-target family, one of them chosen by validation; see docs/defaults.md).

The paper-style models fix the family (``family="common_similarity"``: one width and one step
count for all targets, as in [BRBV11] §7) and one inner partition. Every path includes its point
t = 0 (C = 0: predict the training mean), kept where no step beats it by one standard error; on a
set with no signal (sf1, where KernelRidge too sits near aRRMSE 1) selection can choose it.

Protocol: outer 10-fold cross-validation (shuffled, seed 0); inputs standardised and targets
standardised on each training part (predictions mapped back); score: average relative RMSE
aRRMSE = mean over targets of sqrt(Σ(y − ŷ)² / Σ(y − ȳ_train)²) over the test part, averaged
over the 10 folds (lower is better; 1 = predicting the training mean).

Claims. The source papers report no figure on these sets, so the claims are their general
statements, checked per data set with the paired fold differences (same outer folds for every
method; SE = std of the differences/√folds): spectral filters "match (and sometime improve)"
tuned Tikhonov-type learners ([LRODV08] §1, §7; [BRBV11] §7.1 "the performance of the spectral
filters is very similar") — ours (A_ω, ν-method) not worse than scikit-learn's KernelRidge tuned
per target: mean(ours − KernelRidge) ≤ 2·SE; and the coupling chosen by validation does not hurt
([BRBV11] §7.1: no gain, no loss, in the vector-valued setting) — A_ω not worse than A = I:
mean(A_ω − A_I) ≤ 2·SE. Both one-sided, as the statements are. For the defaults, the same
one-sided test against KernelRidge per target; and on sf1, that the paper-style A_ω is not worse
than the training mean (aRRMSE 1): mean(A_ω − 1) ≤ 2·SE. A reason given for a set where a
claim fails is computed from the run: where the defaults (whose per-target family gives every
target its own width and step count) pass the same test, the failure is the fixed family's.

Usage: python benchmarks/repro_mulan.py [--quick]   (--quick: sf1, 3 outer folds, 150
steps; the claims are checked on them, sf1's when it is run)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _repro  # noqa: E402

_repro.setup()

import numpy as np  # noqa: E402

from jaxmtl import VectorValuedRegressor  # noqa: E402
from jaxmtl.datasets import load_mulan, mulan_names  # noqa: E402
from jaxmtl.kernels import median_heuristic
from jaxmtl.selection import kfold_masks

FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)


def rrmse(Y, F, train_mean):
    return np.sqrt(((Y - F) ** 2).sum(0) / ((Y - train_mean) ** 2).sum(0))


def krr_per_target(Xtr, Ytr, Xte, seed):
    """KernelRidge (RBF, precomputed Gram) with (γ, α) tuned per target by 5-fold CV."""
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.metrics.pairwise import rbf_kernel

    base = median_heuristic(Xtr)
    gammas = 1.0 / (2.0 * (base * np.asarray(FACTORS)) ** 2)
    alphas = np.logspace(-4, 1, 6)
    masks = kfold_masks(len(Xtr), 5, seed)
    err = np.zeros((len(gammas), len(alphas), Ytr.shape[1]))
    for ig, g in enumerate(gammas):
        K = rbf_kernel(Xtr, Xtr, gamma=g)
        for m in masks:
            for ia, a in enumerate(alphas):
                kr = KernelRidge(alpha=a, kernel="precomputed").fit(K[np.ix_(m, m)], Ytr[m])
                err[ig, ia] += ((kr.predict(K[np.ix_(~m, m)]) - Ytr[~m]) ** 2).sum(0)
    F = np.zeros((len(Xte), Ytr.shape[1]))
    chosen = []
    for j in range(Ytr.shape[1]):
        ig, ia = np.unravel_index(int(np.argmin(err[:, :, j])), err.shape[:2])
        kr = KernelRidge(alpha=alphas[ia], kernel="rbf", gamma=gammas[ig]).fit(Xtr, Ytr[:, j])
        F[:, j] = kr.predict(Xte)
        chosen.append((float(gammas[ig]), float(alphas[ia])))
    return F, chosen


KINDS = ("defaults", "independent", "common_similarity", "krr_per_target")  # the columns, in order


def _fit_ours(kind, Xtr, Ytr, n_steps, fold):
    """The fitted ``VectorValuedRegressor`` of a column: its defaults, or the paper-style fixed
    family (output matrix ``kind``) on one inner 5-fold partition."""
    if kind == "defaults":
        return VectorValuedRegressor().fit(Xtr, Ytr)
    return VectorValuedRegressor(output=kind, filter="nu_method", n_steps=n_steps, family="common_similarity",
                                 n_repeats=1, width_factors=FACTORS, random_state=fold).fit(Xtr, Ytr)


def _keeps_mean(model) -> bool:
    """Whether selection kept the path's point t = 0 / λ = ∞ (C = 0, the training mean) in the coupled family."""
    return model.family_ != "independent" and model.best_params_["param"] in (0, float("inf"))


def _families(ours, name) -> str:
    """The defaults' families over the outer folds, e.g. 'common_similarity on 1, independent on 9 of 10 folds'."""
    families = ours[name]["defaults_families"]
    return ", ".join(f"{f} on {families.count(f)}" for f in sorted(set(families))) + f" of {len(families)} folds"


def _driver(ours, name, kind) -> str:
    """The target whose RRMSE, averaged over the folds, is largest for ``kind`` (when recorded)."""
    per_target = np.asarray(ours[name][kind].get("per_fold_per_target") or np.empty((0, 0)))
    if not per_target.size:
        return ""
    j = int(np.argmax(per_target.mean(0)))
    return f"; its largest loss is target {j} (RRMSE {per_target.mean(0)[j]:.3f}, at most {per_target[:, j].max():.3f})"


def _one_sided(ours, name, a, b) -> tuple[str, bool]:
    """Figures of mean(a − b) over the outer folds and whether a is worse (> 2·SE, beyond roundoff
    between equal models: the same ω = 0 selected on every fold differs by roundoff, with SE 0)."""
    pr = _repro.paired(ours[name][a]["per_fold"], ours[name][b]["per_fold"])
    text = (f"{ours[name][a]['mean']:.3f} vs {ours[name][b]['mean']:.3f}, "
            f"difference {pr['mean_difference']:+.3f} (SE {pr['se']:.3f})")
    return text, pr["mean_difference"] > 2 * pr["se"] + 1e-6 * ours[name][b]["mean"]


def _reason(ours, worse) -> str:
    """The computed reason for the sets where the paper-style A_ω is worse."""
    parts = []
    for name in worse:
        text, defaults_worse = _one_sided(ours, name, "defaults", "krr_per_target")
        parts.append(f"{name}: the defaults ({_families(ours, name)}) against KernelRidge per target: "
                     f"{text}, " + ("also worse: not the fixed family alone" if defaults_worse else
                                    "not worse: the loss is the fixed family's (one width and one step count "
                                    "for every target)"))
    return "; ".join(parts)


def _defaults_reason(ours, name) -> str:
    """The computed reason for a set where the defaults are worse: the families kept, where the
    training mean was kept, and the inner CV's estimate against the outer test folds."""
    r = ours[name]
    inner = np.asarray(r["defaults_inner_losses"])
    test = np.asarray(r["defaults"]["per_fold"])
    return (f"{name}: {_families(ours, name)}; the training mean kept by the coupled family on "
            f"{r['defaults_mean_kept_folds']} folds and by {sum(r['defaults_outputs_kept'])} output-folds of the "
            f"per-target family; the inner CV put the kept family's loss at {inner[:, 0].mean():.3f} against the "
            f"mean predictor's {inner[:, 1].mean():.3f} (a lead of {100 * (1 - inner[:, 0].mean() / inner[:, 1].mean()):.1f} %, "
            f"normalised outputs), yet the outer test aRRMSE is above 1 (the training mean) on {int((test > 1).sum())} "
            f"of {len(test)} folds" + _driver(ours, name, "defaults"))


def main():
    args = _repro.parse(__doc__.splitlines()[0])
    start = time.perf_counter()
    names = ["sf1"] if args.quick else list(mulan_names())
    n_outer = 3 if args.quick else 10
    n_steps = 150 if args.quick else 300
    ours, rows = {}, []
    for name in names:
        X, Y, _, targets = load_mulan(name)
        outer = kfold_masks(len(X), n_outer, seed=0)
        scores = {k: [] for k in KINDS}
        per_target = {k: [] for k in KINDS}  # (folds, d) RRMSE of each target: which target drives a loss
        omegas, kept_mean, families, defaults_kept, secs = [], [], [], [], {k: 0.0 for k in scores}
        defaults_omegas = []  # the defaults' ω on each fold (None where the per-target family was kept)
        inner = []  # the defaults' inner-CV loss of the family kept and of the mean predictor, per fold
        outputs_kept = []  # outputs of the per-target family keeping their training mean, per fold
        for f, m in enumerate(outer):
            xm, xs = X[m].mean(0), X[m].std(0)
            xs = np.where(xs > 0, xs, 1.0)
            ym, ys = Y[m].mean(0), Y[m].std(0)
            ys = np.where(ys > 0, ys, 1.0)
            Xtr, Xte = (X[m] - xm) / xs, (X[~m] - xm) / xs
            Ytr = (Y[m] - ym) / ys
            for kind in KINDS[:3]:
                t0 = time.perf_counter()
                model = _fit_ours(kind, Xtr, Ytr, n_steps, f)
                F = model.predict(Xte) * ys + ym
                secs[kind] += time.perf_counter() - t0
                per_target[kind].append(rrmse(Y[~m], F, Y[m].mean(0)).tolist())
                scores[kind].append(float(np.mean(per_target[kind][-1])))
                if kind == "common_similarity":
                    omegas.append(model.best_params_["omega"])
                    kept_mean.append(_keeps_mean(model))
                elif kind == "defaults":
                    families.append(model.family_)
                    defaults_kept.append(_keeps_mean(model))
                    defaults_omegas.append(model.best_params_["omega"])  # None for the per-target family
                    inner.append([float(model.family_scores_[model.family_]),
                                  float(getattr(model, "null_score_", np.nan))])  # the eigen route scores C = 0
                    outputs_kept.append(int(np.isin(model.output_params_, (0, np.inf)).sum())
                                        if model.family_ == "independent" else 0)
            t0 = time.perf_counter()
            F, _ = krr_per_target(Xtr, Ytr, Xte, seed=f)
            secs["krr_per_target"] += time.perf_counter() - t0
            per_target["krr_per_target"].append(rrmse(Y[~m], F * ys + ym, Y[m].mean(0)).tolist())
            scores["krr_per_target"].append(float(np.mean(per_target["krr_per_target"][-1])))
        ours[name] = {k: {"per_fold": v, "mean": float(np.mean(v)), "std": float(np.std(v, ddof=1)),
                          "per_fold_per_target": per_target[k]} for k, v in scores.items()}
        ours[name]["selected_omegas"] = omegas
        ours[name]["mean_kept_folds"] = int(sum(kept_mean))
        ours[name]["defaults_families"] = families
        ours[name]["defaults_omegas"] = [None if w is None else float(w) for w in defaults_omegas]
        ours[name]["defaults_mean_kept_folds"] = int(sum(defaults_kept))
        ours[name]["defaults_inner_losses"] = inner
        ours[name]["defaults_outputs_kept"] = outputs_kept
        ours[name]["seconds"] = secs
        ours[name]["n"], ours[name]["p"], ours[name]["d"] = X.shape[0], X.shape[1], Y.shape[1]
        rows.append([f"{name} ({X.shape[0]}×{X.shape[1]}→{Y.shape[1]})"]
                    + [_repro.pm(ours[name][k]["mean"], ours[name][k]["std"], digits=3) for k in scores]
                    + [f"{np.median(omegas):.1f}", f"{sum(kept_mean)}/{n_outer}",
                       f"{families.count('independent')}/{n_outer}"])
        print(f"{name}: {sum(secs.values()):.1f} s", flush=True)
    t1 = (f"aRRMSE ({n_outer}-fold CV, mean ± std over folds; lower is better; 1 = the training mean). Every "
          f"model is trained on the training folds of each split (inner CV on them, then refit on all of them) "
          f"and scored on the held-out fold. Paper-style: the fixed family, {n_steps} ν-method steps\n"
          + _repro.table(["set (n×p→d)", "ours: VectorValuedRegressor()", "paper-style A=I", "paper-style A_ω",
                          "KernelRidge per target", "median ω", "A_ω keeps the mean",
                          "defaults: per-target family"], rows))
    claims = _repro.Claims(args.quick)
    for name in names:
        for k in KINDS:
            claims.sanity(f"{name}/{k}: finite aRRMSE", np.isfinite(ours[name][k]["mean"]))
    for a, other, label, statement in (
            ("common_similarity", "krr_per_target", "A_ω (ν-method) not worse than KernelRidge tuned per target",
             "spectral filters \"match (and sometime improve)\" tuned kernel ridge ([LRODV08] §1, §7; "
             "[BRBV11] §7.1)"),
            ("common_similarity", "independent", "A_ω (ν-method) not worse than independent outputs (A = I)",
             "the output coupling chosen by validation does not hurt ([BRBV11] §7.1)"),
            ("defaults", "krr_per_target", "VectorValuedRegressor() (defaults) not worse than KernelRidge tuned "
                                           "per target", "the library as a user runs it")):
        figs, worse = {}, []
        for name in names:
            figs[name], is_worse = _one_sided(ours, name, a, other)
            if is_worse:
                worse.append(name)
        claims.check(f"{label}: {statement}", not worse, paper="no published figure on these sets", ours=figs,
                     tolerance=f"paired over the outer folds, one-sided: mean({a} − {other}) ≤ 2·SE (+ 1e-6 "
                               "relative: roundoff between equal models), every set",
                     detail=f"worse on: {worse}" if worse else "", quick=True,
                     explanation=_reason(ours, worse) if a == "common_similarity" else
                     "; ".join(_defaults_reason(ours, n) for n in worse))
    if "sf1" in names:
        pr = _repro.paired(ours["sf1"]["common_similarity"]["per_fold"], np.ones(n_outer))
        claims.check("sf1 (no model beats the training mean): the paper-style A_ω not worse than the mean "
                     "predictor, its path's point t = 0", pr["mean_difference"] <= 2 * pr["se"],
                     paper="aRRMSE 1 (the training mean)",
                     ours=f"{ours['sf1']['common_similarity']['mean']:.3f} (SE {pr['se']:.3f}); t = 0 kept on "
                          f"{ours['sf1']['mean_kept_folds']} of {n_outer} folds",
                     tolerance="paired over the outer folds, one-sided: mean(aRRMSE − 1) ≤ 2·SE", quick=True)
    protocol = {"outer_folds": n_outer, "inner_folds": 5, "filter": "nu_method (ν=1)", "n_steps": n_steps,
                "width_factors_of_median": list(FACTORS), "omegas": "0, 0.1, …, 1",
                "defaults": "VectorValuedRegressor() on the same standardised training part",
                "krr_grid": {"gamma": "1/(2 (median·factor)²)", "alpha": np.logspace(-4, 1, 6).tolist()},
                "standardisation": "X and Y standardised on each training part"}
    _repro.finish("repro_mulan", args, start, {"note": "no published figure for these sets in the source papers; "
                                                       "peer column: scikit-learn KernelRidge per target"},
                  protocol, {"outer_folds_seed": 0, "inner_folds_seed": "outer fold index"}, ours, claims, [t1])


if __name__ == "__main__":
    main()
