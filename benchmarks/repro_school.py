"""Reproduce [BRBV11] Table 1: School data, multi-task kernel (18), ν-method vs Tikhonov-by-refit.

Row reproduced: PAPER_FIGURES.md "School data ([BRBV11], §7.2, Table 1)".

Protocol: from each school 60% of the students at random, split equally into training,
validation and test (≈3124 each); the 19 binary student features; Gaussian width = mean
distance of each training point to its k nearest neighbours, k = 20% of the training size
(``knn_width``); Q_ω((x,t),(x',t')) = K(x,x')·(ω + (1−ω)[t = t']), ω ∈ {0, 0.1, …, 1};
ω and the regularization parameter on the validation set; explained variance
1 − MSE/Var(y_test) on the test set; outputs centred on the training mean.

Every model is trained on the training set only (≈ 3124 students, 20 %), its parameters chosen
on the validation set (another 20 %), as the paper ("trained only on 20% of the available data,
plus an additional 20% for parameter selection"); nothing is refitted on training + validation.

ν-method (≤ 150 steps): the matrix-free path over the task-indexed operator
(``jaxmtl.demo.school_paths``: ``CommonSimilarityTaskOperator`` with the same-task part as
per-task blocks, ``jaxmtl.paths.path_scan``), all 11 ω vmapped in one compiled call, per-step
validation loss, best coefficients kept in the carry. Its
model-selection time excludes the kernel matrices (as the paper) and compilation (first rep
reported separately). ω = 0 (independent) and ω = 1 (pooled) are reported from the same path.

Landweber (≤ 3000 steps): the same compiled path with the Landweber filter.

Tikhonov: 30 λ geometric in [1e-5, 1e-2] × 11 ω. Its explained variance, on all 10
repetitions, from the eigendecomposition of each Q_ω ("via SVD", as the paper): the whole λ path
of an ω from one decomposition, λ and ω on the validation set. Its model-selection time by refit,
on the first 3 repetitions: 330 dense Cholesky solves of the N×N joint Gram (a jitted solve called
in a loop, as a user without a path would); there the refit's selection and explained variance
are checked against the eigen path's (the same estimator computed two ways). Landweber runs on
all 10 repetitions. Model-selection times are measured, not extrapolated, in the same process as
the ν-method's.

Claims (§7.2): each explained variance of Table 1 against ours two-sided within 2 standard errors
of the difference (SE = std/√repetitions: 10 in the paper and ours); "the three algorithms
perform consistently" (an equivalence: the paired difference on the same repetitions, with its
2-SE interval, within the 1 point the paper calls consistent: 31 vs 32 %); "improve on …
26.4%" (one-sided, as stated); "almost two orders of magnitude faster than Tikhonov" (≥ 10^1.5 =
32×) and "more than one order of magnitude faster than Landweber" (≥ 10×), measured in one
process. Where ours is better than published, the reason states what the run shows: the same
students and split fractions as the paper, and the difference in units of the paper's per-split
standard deviation (the script cannot know the paper's splits).

Usage: python benchmarks/repro_school.py [--quick]   (--quick: 40 schools, one repetition,
Landweber ≤ 300 steps, 30 λ × 3 ω for Tikhonov; checks that the ν-method and Tikhonov agree on
the split — the timing claims need the full problem: 90 refits of ≈ 900 points are cheap)
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

from jaxmtl import Gaussian  # noqa: E402
from jaxmtl.datasets import load_school  # noqa: E402
from jaxmtl.demo import school_paths, school_split  # noqa: E402 - the demo runs one split of this protocol
from jaxmtl.filters import Landweber, NuMethod  # noqa: E402
from jaxmtl.kernels import knn_width  # noqa: E402
from jaxmtl.operators import task_block_index  # noqa: E402

OMEGAS = np.round(np.linspace(0, 1, 11), 2)
PAPER = {"nu_method": {"ev": (31, 3), "seconds": (106, 4), "max_steps": 150},
         "landweber": {"ev": (32, 4), "seconds": (2015, 45), "max_steps": 3000},
         "tikhonov": {"ev": (32, 3), "seconds": (5900, 70), "lambdas": "30 geometric in [1e-5, 1e-2], via SVD"},
         "argyriou_2008": {"ev": (26.4, 1.9)},
         "hardware": "2 GHz Core 2 Duo, MATLAB, 2011"}


@jax.jit
def tikhonov_solve(K, KS, Kv, KSv, y, yv, om, lam):
    """One refit: (validation MSE, coefficients) of Tikhonov with Q_ω + nλI."""
    n = y.shape[0]
    Q = om * K + (1 - om) * KS
    C = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(Q + n * lam * jnp.eye(n)), y)
    return jnp.mean(((om * Kv + (1 - om) * KSv) @ C - yv) ** 2), C


@jax.jit
def tikhonov_eigen_path(K, KS, Kv, KSv, y, yv, omegas, lambdas):
    """The Tikhonov path of every ω from one eigendecomposition of each Q_ω = ωK + (1−ω)K_S:
    validation MSE (Ω, L) and, per ω, the coefficients (n, L) of every λ are
    C_λ = U diag(1/(e + nλ)) Uᵀy; one ω at a time (``lax.map``), so one N×N decomposition is held."""
    n = y.shape[0]

    def one(om):
        e, U = jnp.linalg.eigh(om * K + (1 - om) * KS)
        C = U @ ((U.T @ y) / (e[:, None] + n * lambdas[None, :]))  # (n, L)
        return jnp.mean(((om * Kv + (1 - om) * KSv) @ C - yv) ** 2, axis=0)

    return jax.lax.map(one, omegas)


def explained_variance(Kt, KSt, om, C, ym, y_test):
    F = om * (Kt @ C) + (1 - om) * (KSt @ C)
    return float(1 - np.mean((np.asarray(F)[:, 0] + ym - y_test) ** 2) / np.var(y_test))


def main():
    args = _repro.parse(__doc__.splitlines()[0])
    start = time.perf_counter()
    quick = args.quick
    data = load_school()
    X, y, tasks = data.X, data.y, data.tasks
    if quick:
        keep = np.isin(tasks, np.arange(40))
        X, y, tasks = X[keep], y[keep], tasks[keep]
    reps = 1 if quick else 10
    slow_reps = 1 if quick else 3  # repetitions that also time Tikhonov by refit
    T_nu, T_lw = (150, 300) if quick else (150, 3000)
    lambdas = np.geomspace(1e-5, 1e-2, 30)
    tik_omegas = OMEGAS[::5] if quick else OMEGAS
    keys = ("nu_method", "landweber", "tikhonov", "independent", "pooled")
    ev = {k: [] for k in keys}
    sel = {k: [] for k in ("nu_method", "landweber", "tikhonov")}  # (ω, t or λ) selected
    secs = {k: [] for k in ("nu_method", "landweber", "tikhonov")}
    compile_s = {}
    meta = {"width": [], "n_train": []}
    paths = {}
    refit_check = []  # per timed repetition: the refit's selection against the eigen path's
    jo = jnp.asarray(OMEGAS)
    for r in range(reps):
        tr, va, te = school_split(tasks, np.random.default_rng(r))
        width = knn_width(X[tr], max(1, int(0.2 * len(tr))))
        kern = Gaussian(width)
        Xtr = jnp.asarray(X[tr])
        ym = y[tr].mean()
        same = lambda a, b: jnp.asarray((tasks[a][:, None] == tasks[b][None, :]).astype(float))
        K = kern(Xtr, Xtr); Kv = kern(jnp.asarray(X[va]), Xtr); Kt = kern(jnp.asarray(X[te]), Xtr)
        KS, KSv, KSt = K * same(tr, tr), Kv * same(va, tr), Kt * same(te, tr)
        ytr = jnp.asarray(y[tr] - ym)[:, None]; yva = jnp.asarray(y[va] - ym)[:, None]
        mats = (K, KS, Kv, KSv, ytr, yva)  # dense same-task parts: for the Tikhonov refits
        path_args = (K, Kv, task_block_index(tasks[tr], tasks[tr]), task_block_index(tasks[va], tasks[tr]), ytr, yva)
        jax.block_until_ready(KSt)
        meta["width"].append(width); meta["n_train"].append(len(tr))
        for name, filt, T in (("nu_method", NuMethod(), T_nu), ("landweber", Landweber(), T_lw)):
            if name not in compile_s:
                t0 = time.perf_counter()
                jax.block_until_ready(school_paths(*path_args, jo, filt, T))
                compile_s[name] = time.perf_counter() - t0  # compilation + one run
            t0 = time.perf_counter()
            res = jax.block_until_ready(school_paths(*path_args, jo, filt, T))
            secs[name].append(time.perf_counter() - t0)
            io = int(np.argmin(np.asarray(res.losses).min(axis=1)))
            ev[name].append(explained_variance(Kt, KSt, OMEGAS[io], res.best_coef[io], ym, y[te]))
            sel[name].append((float(OMEGAS[io]), int(res.best_step[io])))
            if r == 0:  # validation MSE along the path, every ω (the regularization path figure)
                paths[name] = np.asarray(res.losses)
            if name == "nu_method":
                ev["independent"].append(explained_variance(Kt, KSt, 0.0, res.best_coef[0], ym, y[te]))
                ev["pooled"].append(explained_variance(Kt, KSt, 1.0, res.best_coef[-1], ym, y[te]))
        # Tikhonov's explained variance on every repetition: the eigen path of each ω
        losses = np.asarray(tikhonov_eigen_path(*mats, jnp.asarray(tik_omegas), jnp.asarray(lambdas)))
        io, il = np.unravel_index(int(np.argmin(losses)), losses.shape)
        om, lam = float(tik_omegas[io]), float(lambdas[il])
        C = tikhonov_solve(*mats, om, lam)[1]
        ev["tikhonov"].append(explained_variance(Kt, KSt, om, C, ym, y[te]))
        sel["tikhonov"].append((om, lam))
        if r < slow_reps:  # Tikhonov-by-refit, timed: one jitted Cholesky solve per (ω, λ)
            jax.block_until_ready(tikhonov_solve(*mats, 0.5, 1e-3))  # compile outside the timing
            t0 = time.perf_counter()
            best = (np.inf, None, None, None)
            for om in tik_omegas:
                for lam in lambdas:
                    loss, C = tikhonov_solve(*mats, float(om), float(lam))
                    loss = float(loss)
                    if loss < best[0]:
                        best = (loss, float(om), float(lam), C)
            secs["tikhonov"].append(time.perf_counter() - t0)
            refit_check.append({"eigen": sel["tikhonov"][-1], "refit": (best[1], best[2]),
                                "eigen_loss": float(losses.min()), "refit_loss": best[0],
                                "ev_difference": explained_variance(Kt, KSt, best[1], best[3], ym, y[te])
                                - ev["tikhonov"][-1]})
        print(f"rep {r}: EV ν {100 * ev['nu_method'][-1]:.1f}% (ω, t) = {sel['nu_method'][-1]} "
              f"{secs['nu_method'][-1]:.2f} s; Landweber {100 * ev['landweber'][-1]:.1f}% "
              f"{secs['landweber'][-1]:.1f} s; Tikhonov {100 * ev['tikhonov'][-1]:.1f}%"
              + (f" {secs['tikhonov'][-1]:.1f} s by refit" if r < slow_reps else ""), flush=True)
    med = {k: float(np.median(v)) for k, v in secs.items()}
    n_tik = len(tik_omegas) * len(lambdas)
    ours = {"explained_variance": ev, "selected": sel, "selection_seconds": secs,
            "selection_seconds_median": med, "first_call_seconds_incl_compile": compile_s,
            "speedup_tikhonov_refit_over_nu": med["tikhonov"] / med["nu_method"],
            "speedup_landweber_over_nu": med["landweber"] / med["nu_method"],
            "tikhonov_refits_per_repetition": n_tik, "tikhonov_refit_vs_eigen_path": refit_check, **meta}

    def s(k):
        v = 100 * np.asarray(ev[k])
        return _repro.pm(v.mean(), v.std(ddof=1) if len(v) > 1 else 0.0, digits=1) + f" % ({len(v)} reps)"

    rows = [["ν-method (≤150 steps), ω selected", s("nu_method"), "31 ± 3 %", f"{med['nu_method']:.2f}", "106 ± 4"],
            [f"Landweber (≤{T_lw} steps), ω selected", s("landweber"), "32 ± 4 %", f"{med['landweber']:.1f}",
             "2015 ± 45"],
            [f"Tikhonov ({len(lambdas)} λ × {len(tik_omegas)} ω; time by refit, {slow_reps} reps)", s("tikhonov"),
             "32 ± 3 %", f"{med['tikhonov']:.1f}", "5900 ± 70"],
            ["independent (ω = 0), ν-method", s("independent"), "—", "same call as ν", "—"],
            ["pooled (ω = 1), ν-method", s("pooled"), "—", "same call as ν", "—"],
            ["Argyriou et al. 2008 (75% training)", "—", "26.4 ± 1.9 %", "—", "—"]]
    t1 = ("School: explained variance on the test set (mean ± std over repetitions) of models trained on the "
          "training set (20 %), parameters on the validation set (20 %); model-selection time (median s; "
          "paper: 2 GHz Core 2 Duo, MATLAB, 2011)\n"
          + _repro.table(["method", "ours EV", "paper EV", "ours time (s)", "paper time (s)"], rows))
    claims = _repro.Claims(quick)
    allev = [v for k in keys for v in ev[k]]
    claims.sanity("explained variances finite and in (-1, 1)", all(-1 < v < 1 for v in allev))
    claims.sanity("selected ω in the grid", all(w in OMEGAS for w, _ in sel["nu_method"]))
    claims.sanity("Tikhonov by refit and by the eigen path: the same best validation loss (1e-6 relative) and, "
                  "where they select the same (ω, λ), the same explained variance (1e-6)",
                  all(abs(c["eigen_loss"] - c["refit_loss"]) <= 1e-6 * c["refit_loss"]
                      and (c["eigen"] != c["refit"] or abs(c["ev_difference"]) < 1e-6) for c in refit_check),
                  detail=str(refit_check))
    for k, label in (("nu_method", "ν-method"), ("landweber", "Landweber"), ("tikhonov", "Tikhonov")):
        pm_, ps_ = PAPER[k]["ev"]
        cmp = _repro.mean_vs_published(100 * np.asarray(ev[k]), pm_, ps_, 10)
        claims.check(f"{label}: explained variance (Table 1) reproduced", cmp["ok"],
                     paper=f"{pm_} ± {ps_} % (10 repetitions)", ours=f"{cmp['ours']:.1f} ± "
                     f"{100 * np.std(ev[k], ddof=1) if len(ev[k]) > 1 else 0:.1f} % ({cmp['ours_k']} repetitions)",
                     tolerance=f"two-sided |ours − paper| ≤ 2·√(SE_ours² + SE_paper²) = {cmp['tolerance']:.1f} points",
                     detail=f"difference {cmp['difference']:+.1f} points", direction="higher", figures=cmp,
                     explanation=f"the same {len(y)} students of {len(np.unique(tasks))} schools and the paper's "
                                 f"split fractions ({int(np.median(meta['n_train']))} training students per "
                                 f"split); ours − paper = {cmp['difference']:+.1f} points, "
                                 f"{cmp['difference'] / ps_:+.1f} of the paper's per-split standard deviation "
                                 f"({ps_} points; ours {100 * np.std(ev[k], ddof=1) if len(ev[k]) > 1 else 0:.1f}): "
                                 f"the paper's splits are not published; on ours independent tasks (ω = 0) give "
                                 f"{100 * np.mean(ev['independent']):.1f} % and pooled (ω = 1) "
                                 f"{100 * np.mean(ev['pooled']):.1f} %")
        claims.check(f"{label}: \"improve on the results reported in (Argyriou et al, 2008a) … 26.4% ± 1.9%\"",
                     np.mean(ev[k]) - 2 * _repro.se(ev[k]) > 0.264, paper="> 26.4 %",
                     ours=f"{100 * np.mean(ev[k]):.1f} % (SE {100 * _repro.se(ev[k]):.1f})",
                     tolerance="one-sided, as stated: mean − 2·SE > 26.4 %", direction="higher")
    for k, label in (("landweber", "Landweber"), ("tikhonov", "Tikhonov")):
        pr = _repro.paired(ev["nu_method"], ev[k], z=2.0)
        # an equivalence claim: the paper calls 31 vs 32 % consistent, so the margin is its 1 point, and
        # the paired difference must lie within it with its 2-SE interval (a plain |mean| ≤ 2·SE test
        # would fail any difference, however small, that enough splits resolve)
        ok = abs(pr["mean_difference"]) + 2 * pr["se"] <= 0.01 if reps > 1 else abs(pr["mean_difference"]) <= 0.03
        claims.check(f"\"The three algorithms perform consistently\": ν-method vs {label} on the same splits",
                     ok, paper="31 vs 32 ± 3–4 %", ours=f"ν − {label} = {100 * pr['mean_difference']:+.2f} points "
                     f"(SE {100 * pr['se']:.2f}, {pr['runs']} splits)",
                     tolerance="paired equivalence: |mean difference| + 2·SE ≤ 1 point (the paper's 31 vs 32 %, "
                               "which it calls consistent)" if reps > 1 else
                     "one split: |difference| ≤ 3 points (the paper's per-split std)",
                     quick=(k == "tikhonov"),
                     explanation="quick: Landweber stops at 300 steps (the paper's 3000 in the full run)" if quick else "")
    tik_x, lw_x = ours["speedup_tikhonov_refit_over_nu"], ours["speedup_landweber_over_nu"]
    claims.check("\"the ν-method is almost two orders of magnitude faster than Tikhonov\" (model selection)",
                 tik_x >= 10 ** 1.5, paper="5900 / 106 s = 56×",
                 ours=f"{med['tikhonov']:.1f} / {med['nu_method']:.2f} s = {tik_x:.0f}× ({n_tik} refits)",
                 tolerance="≥ 10^1.5 = 32×")
    claims.check("\"… and more than one order of magnitude faster than Landweber\"", lw_x >= 10,
                 paper="2015 / 106 s = 19×", ours=f"{med['landweber']:.1f} / {med['nu_method']:.2f} s = {lw_x:.0f}×",
                 tolerance="≥ 10×")
    _repro.finish("repro_school", args, start, PAPER,
                  {"fraction_per_school": 0.6, "split": "train/val/test 20/20/20 % per school", "features": 19,
                   "width": "knn_width(k = 20% of n_train)", "omegas": OMEGAS.tolist(), "nu_max_steps": T_nu,
                   "landweber_max_steps": T_lw, "repetitions": reps, "tikhonov_refit_repetitions": slow_reps,
                   "tikhonov_lambdas": "30 geometric in [1e-5, 1e-2]", "tikhonov_omegas": tik_omegas.tolist(),
                   "schools": "first 40 (quick)" if quick else "all 139"},
                  {"split_rng": "repetition index"}, ours, claims, [t1], {"figures": plot_paths(paths, quick)})


def plot_paths(paths: dict, quick: bool) -> list[str]:
    """Validation MSE against the step for every ω (first repetition), ν-method beside Landweber."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    fig, axes = plt.subplots(1, len(paths), figsize=(5.5 * len(paths), 4), sharey=True)
    for ax, (name, losses) in zip(np.atleast_1d(axes), paths.items()):
        for w, curve in zip(OMEGAS, losses):
            ax.semilogx(np.arange(1, len(curve) + 1), curve, color=plt.cm.viridis(w), label=f"ω = {w:.1f}")
        ax.set_title(f"{name}: validation MSE along the path"); ax.set_xlabel("step t")
    np.atleast_1d(axes)[0].set_ylabel("validation MSE (centred y)")
    np.atleast_1d(axes)[-1].legend(fontsize=6, ncol=2)
    return [_repro.savefig(fig, f"repro_school_path{'_quick' if quick else ''}.png")]


if __name__ == "__main__":
    main()
