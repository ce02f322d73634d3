"""Reproduce [BRBV11] §7.1 Figures 6–10: 2-D vector fields with divergence-free / curl-free kernels.

Row reproduced: PAPER_FIGURES.md "2-D vector fields ([BRBV11], §7.1, Figures 5–12)".

Field 1: γ·(curl-free) + (1−γ)·(div-free) from five Gaussian potentials (``vector_field_1``;
γ = weight of the curl-free part). 70×70 grid on [−2, 2]²; train on n random grid points, test
on all the others; ν-method; Gaussian width 0.8; t and the kernel weight γ̃ ∈ {0, 0.1, …, 1}
of γ̃·Γ_cf + (1−γ̃)·Γ_df chosen by 5-fold CV (``VectorFieldRegressor(kind='div_curl')``);
independent components = Gaussian ⊗ I with the same filter and width; mean angular error (33).
Noise: Gaussian, std 0.3. Field 2 (``vector_field_2``): noise std 0 and 20% of the local field
magnitude; t and γ̃ on a validation set of the training size; at most 700 steps.

Trained on what. Field 1 selects by 5-fold CV on the n training points and refits on them (the
paper's protocol). Field 2 selects on a validation set of n points: the claims use the model the
selection scored — the ν-method path on the n training points at the selected (γ̃, t), the
paper's protocol — and the table also shows ``VectorFieldRegressor``'s refit on training +
validation (2n points).

Reduced from the paper (2-core machine, about 4 minutes): sizes {10, 20, 50, 100, 200} (paper
10…200), γ ∈ {0, 0.5, 1} (paper 0…1 by 0.1), at most 300 ν-method steps for field 1; 10
repetitions, as the paper.

Claims (§7.1, Figures 6–10): "the vector-valued kernel beats independent components at every
training size" — field 1 at γ ∈ {0, 1} and, apart, at γ = ½, noiseless and noisy, and field 2 at
both noise levels: mean angular error over the repetitions lower, the standard error of the
paired difference reported; where it is not lower the reason is the paired test's reading,
computed (within 2 SE: indistinguishable; beyond: significantly worse); "γ̃ converges to γ": at
the largest size |mean γ̃ − γ| ≤ 0.1 for every γ and no larger than at the smallest size.
Failing claims stay in the table with the reason.

Usage: python benchmarks/repro_fields.py [--quick]   (--quick: 50 points, one repetition, field 1
at γ = 0 noiseless and field 2 noiseless; checks that div/curl-free beats independent there)

Usage: python benchmarks/repro_fields.py [--quick]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _repro  # noqa: E402

_repro.setup()

import numpy as np  # noqa: E402

import jax.numpy as jnp  # noqa: E402

from jaxmtl import Gaussian, VectorFieldRegressor  # noqa: E402
from jaxmtl.datasets import grid_2d, vector_field_1, vector_field_2  # noqa: E402
from jaxmtl.filters import NuMethod  # noqa: E402
from jaxmtl.models import angular_error  # noqa: E402
from jaxmtl.operators import SeparableOperator, div_curl  # noqa: E402
from jaxmtl.paths import path_scan  # noqa: E402

WIDTH = 0.8
FOLDS = 5  # the paper's 5-fold CV (VectorFieldRegressor defaults to 10)


def train_only_field(model, kind, X_tr, V_tr, X_te):
    """The model the hold-out selection scored: the ν-method path on the training points only, at the
    selected (σ, γ̃, t)."""
    sigma, t = float(model.kernel_.sigma), int(model.best_params_["param"])
    if kind == "div_curl":
        op, ev = div_curl(X_tr, sigma, model.gamma_), div_curl(X_tr, sigma, model.gamma_, X_rows=X_te)
    else:
        kern, eye = Gaussian(sigma), jnp.eye(X_tr.shape[1])
        op, ev = SeparableOperator(kern(X_tr, X_tr), eye), SeparableOperator(kern(X_te, X_tr), eye)
    return np.asarray(ev.mv(path_scan(op, jnp.asarray(V_tr), NuMethod(), t).coef))


def run_field(V_true, V_obs, X, n, rng, steps, selection):
    idx = rng.permutation(len(X))
    if selection == "kfold":
        tr, te = idx[:n], idx[n:]
        sel = "kfold"
        fit_idx = tr
    else:  # validation set of the training size, then tested on the rest
        tr, va, te = idx[:n], idx[n:2 * n], idx[2 * n:]
        fit_idx = np.r_[tr, va]
        sel = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    out = {}
    for kind in ("div_curl", "independent"):
        m = VectorFieldRegressor(kernel=Gaussian(WIDTH), kind=kind, n_steps=steps, selection=sel,
                                n_folds=FOLDS)
        m.fit(X[fit_idx], V_obs[fit_idx])
        if selection == "kfold":  # CV on the n training points, refit on them
            out[kind] = angular_error(V_true[te], m.predict(X[te]))
        else:
            out[kind] = angular_error(V_true[te], train_only_field(m, kind, X[tr], V_obs[tr], X[te]))
            out[kind + "_refit"] = angular_error(V_true[te], m.predict(X[te]))
        if kind == "div_curl":
            out["gamma"] = m.gamma_
            out["model"] = m
    return out


def main():
    args = _repro.parse(__doc__.splitlines()[0])
    start = time.perf_counter()
    quick = args.quick
    sizes = [50] if quick else [10, 20, 50, 100, 200]
    reps = 1 if quick else 10
    gammas = [0.0] if quick else [0.0, 0.5, 1.0]
    steps1, steps2 = (100, 150) if quick else (300, 700)
    X = grid_2d(70)
    rng = np.random.default_rng(0)
    ours = {"field1": {}, "field1_noise": {}, "field2": {}} if quick else \
        {"field1": {}, "field1_noise": {}, "field2": {}, "field2_noise": {}}
    keep = None
    for g in gammas:
        V, curl, div = vector_field_1(X, g)
        for noisy in ((False,) if quick else (False, True)):
            key = "field1_noise" if noisy else "field1"
            res = {}
            for n in sizes:
                errs = {"div_curl": [], "independent": [], "gamma": []}
                for _ in range(reps):
                    Vo = V + 0.3 * rng.standard_normal(V.shape) if noisy else V
                    r = run_field(V, Vo, X, n, rng, steps1, "kfold")
                    for k in errs:
                        errs[k].append(float(r[k]))
                    if not noisy and g == 0.5 and n == sizes[-1]:
                        keep = r["model"]
                res[n] = {k: {"mean": float(np.mean(v)), "std": float(np.std(v)), "all": v} for k, v in errs.items()}
            ours[key][g] = res
        print(f"field 1 γ={g} done ({time.perf_counter() - start:.1f} s)", flush=True)
    V2 = vector_field_2(X)
    for key, level in (("field2", 0.0),) + ((("field2_noise", 0.2),) if not quick else ()):
        res = {}
        for n in sizes:
            errs = {"div_curl": [], "independent": [], "gamma": [], "div_curl_refit": [], "independent_refit": []}
            for _ in range(reps):
                mag = np.linalg.norm(V2, axis=1, keepdims=True)
                Vo = V2 + level * mag * rng.standard_normal(V2.shape)
                r = run_field(V2, Vo, X, n, rng, steps2, "holdout")
                for k in errs:
                    errs[k].append(float(r[k]))
            res[n] = {k: {"mean": float(np.mean(v)), "std": float(np.std(v)), "all": v} for k, v in errs.items()}
        ours[key][level] = res
    print(f"field 2 done ({time.perf_counter() - start:.1f} s)", flush=True)

    rows = []
    for key, sub in ours.items():
        for g, res in sub.items():
            for n, r in res.items():
                refit = [_repro.pm(r[k]["mean"], r[k]["std"], 1, 3) if k in r else "—"
                         for k in ("div_curl_refit", "independent_refit")]
                rows.append([key, g, n, _repro.pm(r["div_curl"]["mean"], r["div_curl"]["std"], 1, 3),
                             _repro.pm(r["independent"]["mean"], r["independent"]["std"], 1, 3), *refit,
                             f"{r['gamma']['mean']:.2f}"])
    t1 = ("Mean angular error (33), radians (mean ± std over repetitions); \"n train\" = training points. Field 1: "
          "5-fold CV on the n points, refit on them. Field 2: parameters on a validation set of n more points; "
          "\"trained on n\" = the path on the training points at the selected parameters (the paper's protocol), "
          "\"refit on 2n\" = VectorFieldRegressor's refit on training + validation. Paper: div/curl-free beats "
          "independent at every size; γ̃ → γ\n"
          + _repro.table(["field", "γ or noise", "n train", "div/curl-free, trained on n", "independent, trained on n",
                          "div/curl-free, refit on 2n", "independent, refit on 2n", "mean γ̃"], rows))

    claims = _repro.Claims(quick)
    for key, sub in ours.items():
        for g, res in sub.items():
            for n, r in res.items():
                claims.sanity(f"{key}[{g}] n={n}: finite errors", np.isfinite(r["div_curl"]["mean"])
                              and np.isfinite(r["independent"]["mean"]))

    def beats(keys, only=None):
        """{cell: (div/curl-free's mean lower, text, paired comparison)} of the fields ``keys`` (γ in ``only``)."""
        cells = {}
        for key in keys:
            for g, res in ours[key].items():
                for n, r in res.items():
                    if only is None or g in only:
                        pr = _repro.paired(r["div_curl"]["all"], r["independent"]["all"])
                        cells[f"{key}[{g}] n={n}"] = (pr["mean_difference"] < 0,
                                                      f"{r['div_curl']['mean']:.3f} vs {r['independent']['mean']:.3f} "
                                                      f"(SE of difference {pr['se']:.3f})", pr)
        return cells

    def why(cells):
        """The paired test's reading of the cells where div/curl-free is not lower, from the data."""
        worse = [c for c, (ok, _, _) in cells.items() if not ok]
        tied = [c for c in worse if cells[c][2]["indistinguishable"]]
        above = [c for c in worse if c not in tied]
        below = sum(cells[c][2]["below"] for c in cells)
        return (f"not lower at {len(worse)} of {len(cells)} cells; at {len(tied)} of them the paired difference "
                f"over {reps} repetitions is within 2 SE (indistinguishable: {tied}); significantly worse "
                f"(beyond 2 SE) at {above or 'none'}; significantly better at {below} of {len(cells)} cells")

    def check_beats(claim, cells, reason="", **kwargs):
        worse = [c for c, (ok, _, _) in cells.items() if not ok]
        claims.check(claim, not worse, paper="beats at every size", ours={c: v for c, (_, v, _) in cells.items()},
                     detail=f"not lower at: {worse}" if worse else "",
                     explanation=reason + why(cells) if worse else "", **kwargs)

    f1 = ("field1", "field1_noise")
    check_beats("field 1: \"the vector-valued kernel beats independent components at every training size\" "
                "(Figures 6, 8), curl-free (γ = 0) and divergence-free (γ = 1) fields, noiseless and noise std 0.3",
                beats(f1, (0.0, 1.0)), tolerance="mean angular error lower (paired SE reported)", quick=True)
    # At γ = 1/2 the kernel ½Γ_cf + ½Γ_df = ½(2 − ‖u‖²)·w·I is a scalar ("Mexican hat") kernel times I,
    # i.e. independent components with a rougher kernel than the Gaussian (identity checked below).
    half = ours["field1"].get(0.5, {})
    check_beats("field 1: the same at γ = ½ (half curl-free, half divergence-free)", beats(f1, (0.5,)),
                reason="at γ̃ ≈ ½ (mean γ̃ selected: " + ", ".join(f"{r['gamma']['mean']:.2f}" for r in half.values())
                + " by size) ½Γ_cf + ½Γ_df = ½(2 − ‖u‖²)w ⊗ I is a scalar kernel times I — independent components "
                "with a rougher kernel than the Gaussian (identity checked below) — so coupling has nothing to add "
                "there; ", tolerance="mean angular error lower (paired SE reported)", quick=False)
    op = div_curl(X[:40], WIDTH, gamma=0.5)
    Cr = np.random.default_rng(1).standard_normal((40, 2))
    u2 = np.sum((X[:40, None, :] - X[None, :40, :]) ** 2, axis=-1) / WIDTH**2
    hat = 0.5 * (2.0 - u2) * np.exp(-0.5 * u2) / WIDTH**2
    gap = float(np.max(np.abs(np.asarray(op.mv(Cr)) - hat @ Cr)))
    claims.sanity("γ̃ = ½: ½Γ_cf + ½Γ_df equals the scalar kernel ½(2 − ‖u‖²)w ⊗ I (why γ = ½ shows no gain)",
                  gap < 1e-10, f"max |difference| = {gap:.1e}")
    check_beats("field 2: \"vector-valued beats independent\" (Figure 10), every size, noise 0 and 20 %",
                beats(tuple(k for k in ("field2", "field2_noise") if k in ours)),
                tolerance="mean angular error of the models trained on n lower (paired SE reported)", quick=True)
    gerr = {g: abs(ours["field1"][g][sizes[-1]]["gamma"]["mean"] - g) for g in gammas}
    gerr0 = {g: abs(ours["field1"][g][sizes[0]]["gamma"]["mean"] - g) for g in gammas}
    claims.check("field 1: \"γ̃ converges to γ\" (Figure 7), noiseless",
                 all(gerr[g] <= 0.1 and gerr[g] <= gerr0[g] for g in gammas), paper="mean γ̃ → γ",
                 ours={g: f"|mean γ̃ − γ| {gerr0[g]:.2f} at n={sizes[0]}, {gerr[g]:.2f} at n={sizes[-1]}" for g in gammas},
                 tolerance=f"|mean γ̃ − γ| ≤ 0.1 at n={sizes[-1]} and no larger than at n={sizes[0]}, every γ")

    png = []
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
        for ax, (key, sub) in zip(axes, (("field1", ours["field1"]), ("field1_noise", ours.get("field1_noise", {})),
                                         ("field2", {**ours["field2"], **ours.get("field2_noise", {})}))):
            for g, res in sub.items():
                for kind, st in (("div_curl", "-o"), ("independent", "--s")):
                    ax.errorbar(sizes, [res[n][kind]["mean"] for n in sizes], [res[n][kind]["std"] for n in sizes],
                                fmt=st, capsize=2, label=f"{kind} ({g}), trained on n")
            ax.set_title(key); ax.set_xlabel("training points"); ax.set_ylabel("angular error (rad)")
            ax.legend(fontsize=7)
        png.append(_repro.savefig(fig, f"repro_fields_error{'_quick' if quick else ''}.png"))
        if keep is not None or quick:
            V, curl, div = vector_field_1(X, 0.5)
            model = keep
            if model is None:
                idx = rng.permutation(len(X))[:sizes[-1]]
                model = VectorFieldRegressor(kernel=Gaussian(WIDTH), kind="div_curl", n_steps=steps1,
                                            n_folds=FOLDS).fit(X[idx], V[idx])
            sub = grid_2d(18)
            pc, pd = model.predict_parts(sub)
            Vs, cs, ds = vector_field_1(sub, 0.5)
            fig, axes = plt.subplots(2, 3, figsize=(12, 8))
            for j, (a, b, title) in enumerate(((Vs, pc + pd, "field"), (cs, pc, "curl-free part"),
                                               (ds, pd, "div-free part"))):
                axes[0, j].quiver(sub[:, 0], sub[:, 1], a[:, 0], a[:, 1]); axes[0, j].set_title(f"true {title}")
                axes[1, j].quiver(sub[:, 0], sub[:, 1], b[:, 0], b[:, 1])
                axes[1, j].set_title(f"reconstructed {title} (γ̃={model.gamma_:.1f})")
            png.append(_repro.savefig(fig, f"repro_fields_quiver{'_quick' if quick else ''}.png"))
    except ImportError:
        pass
    _repro.finish("repro_fields", args, start,
                  {"figures_6_8": "div/curl-free combination beats independent components at every training size "
                                  "(noiseless and noise std 0.3)", "figure_7": "mean γ̃ converges to γ",
                   "figure_10": "field 2: vector-valued beats independent, gain shrinks with 20% noise"},
                  {"grid": "70×70 on [-2,2]^2", "sizes": sizes, "repetitions": reps, "gammas": gammas,
                   "width": WIDTH, "field1": {"selection": "5-fold", "max_steps": steps1, "noise_std": 0.3},
                   "field2": {"selection": "validation set of the training size", "max_steps": steps2,
                              "noise": "0 and 20% of |v|"}, "gamma_grid": "0, 0.1, …, 1"},
                  {"rng": 0}, ours, claims, [t1], {"figures": png})


if __name__ == "__main__":
    main()
