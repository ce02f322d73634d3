"""Reproduce [BRBV11] §7.1 Figures 6–10: 2-D vector fields with divergence-free / curl-free kernels.

Row reproduced: PAPER_FIGURES.md "2-D vector fields ([BRBV11], §7.1, Figures 5–12)".

Field 1: γ·(curl-free) + (1−γ)·(div-free) from five Gaussian potentials (``vector_field_1``;
γ = weight of the curl-free part). 70×70 grid on [−2, 2]²; train on n random grid points, test
on all the others; ν-method; Gaussian width 0.8; t and the kernel weight γ̃ ∈ {0, 0.1, …, 1}
of γ̃·Γ_cf + (1−γ̃)·Γ_df chosen by 5-fold CV (``VectorFieldRegressor(kind='div_curl')``);
independent components = Gaussian ⊗ I with the same filter and width; mean angular error (33).
Noise: Gaussian, std 0.3. Field 2 (``vector_field_2``): noise std 0 and 20% of the local field
magnitude; t and γ̃ on a validation set of the training size; at most 700 steps.

Reduced from the paper (2-core shared machine, one 10-minute budget): sizes {20, 50, 100, 200}
(paper 10…200), 5 repetitions (paper 10), γ ∈ {0, 0.5, 1} for the γ̃ curve (paper 0…1 by 0.1),
at most 300 ν-method steps for field 1. --quick: one size, one repetition.

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

from jaxmtl import Gaussian, VectorFieldRegressor  # noqa: E402
from jaxmtl.datasets import grid_2d, vector_field_1, vector_field_2  # noqa: E402
from jaxmtl.models import angular_error
from jaxmtl.operators import div_curl

WIDTH = 0.8


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
        m = VectorFieldRegressor(kernel=Gaussian(WIDTH), kind=kind, n_steps=steps, selection=sel)
        m.fit(X[fit_idx], V_obs[fit_idx])
        out[kind] = angular_error(V_true[te], m.predict(X[te]))
        if kind == "div_curl":
            out["gamma"] = m.gamma_
            out["model"] = m
    return out


def main():
    args = _repro.parse(__doc__.splitlines()[0])
    start = time.perf_counter()
    quick = args.quick
    sizes = [50] if quick else [20, 50, 100, 200]
    reps = 1 if quick else 5
    gammas = [0.0] if quick else [0.0, 0.5, 1.0]
    steps1, steps2 = (100, 150) if quick else (300, 700)
    X = grid_2d(70)
    rng = np.random.default_rng(0)
    ours = {"field1": {}, "field1_noise": {}, "field2": {}, "field2_noise": {}}
    keep = None
    for g in gammas:
        V, curl, div = vector_field_1(X, g)
        for noisy in (False, True):
            if noisy and g == 1.0:
                continue
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
    for key, level in (("field2", 0.0), ("field2_noise", 0.2)):
        res = {}
        for n in sizes:
            errs = {"div_curl": [], "independent": [], "gamma": []}
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
                rows.append([key, g, n, _repro.pm(r["div_curl"]["mean"], r["div_curl"]["std"], 1, 3),
                             _repro.pm(r["independent"]["mean"], r["independent"]["std"], 1, 3),
                             f"{r['gamma']['mean']:.2f}" if key.startswith("field1") else "—"])
    t1 = ("Mean angular error (33), radians (mean ± std over repetitions). Paper: div/curl-free beats independent "
          "at every size; γ̃ → γ\n"
          + _repro.table(["field", "γ or noise", "n train", "div/curl-free", "independent", "mean γ̃"], rows))

    claims = _repro.Claims(quick)
    for key, sub in ours.items():
        for g, res in sub.items():
            for n, r in res.items():
                claims.check(f"{key}[{g}] n={n}: finite errors", np.isfinite(r["div_curl"]["mean"])
                             and np.isfinite(r["independent"]["mean"]), full_only=False)
    # Claim on the pure fields (γ = 0 solenoidal, γ = 1 irrotational). At γ = 1/2 the kernel
    # ½Γ_cf + ½Γ_df = ½(2 − ‖u‖²)·w·I is a scalar ("Mexican hat") kernel times I, i.e. independent
    # components with a rougher kernel than the Gaussian: no gain is possible there at a shared width
    # (see docs/design.md, "Vector fields"); the identity is checked below and γ = ½ is reported only.
    f1 = [(key, g, n, r) for key in ("field1", "field1_noise") for g, res in ours[key].items()
          for n, r in res.items() if g in (0.0, 1.0)]
    worse = [(key, g, n) for key, g, n, r in f1 if r["div_curl"]["mean"] >= r["independent"]["mean"]]
    claims.check("field 1, pure fields (γ ∈ {0, 1}; noiseless and noisy): div/curl-free beats independent at "
                 "every size", not worse, f"not better at {worse}")
    op = div_curl(X[:40], WIDTH, gamma=0.5)
    Cr = np.random.default_rng(1).standard_normal((40, 2))
    u2 = np.sum((X[:40, None, :] - X[None, :40, :]) ** 2, axis=-1) / WIDTH**2
    hat = 0.5 * (2.0 - u2) * np.exp(-0.5 * u2) / WIDTH**2
    gap = float(np.max(np.abs(np.asarray(op.mv(Cr)) - hat @ Cr)))
    claims.check("γ̃ = ½: ½Γ_cf + ½Γ_df equals the scalar kernel ½(2 − ‖u‖²)w ⊗ I (why γ = ½ shows no gain)",
                 gap < 1e-10, f"max |difference| = {gap:.1e}", full_only=False)
    f2 = [(lvl, n) for key in ("field2", "field2_noise") for lvl, res in ours[key].items() for n, r in res.items()
          if r["div_curl"]["mean"] >= r["independent"]["mean"]]
    claims.check("field 2: div/curl-free beats independent at every size", not f2, f"not better at {f2}")
    if not quick:
        gerr = {g: abs(ours["field1"][g][sizes[-1]]["gamma"]["mean"] - g) for g in gammas}
        gerr0 = {g: abs(ours["field1"][g][sizes[0]]["gamma"]["mean"] - g) for g in gammas}
        claims.check(f"γ̃ approaches γ: |mean γ̃ − γ| ≤ 0.1 at n={sizes[-1]} for every γ", max(gerr.values()) <= 0.1,
                     f"at n={sizes[0]}: {gerr0}; at n={sizes[-1]}: {gerr}")

    png = []
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
        for ax, (key, sub) in zip(axes, (("field1", ours["field1"]), ("field1_noise", ours["field1_noise"]),
                                         ("field2", {**ours["field2"], **ours["field2_noise"]}))):
            for g, res in sub.items():
                for kind, st in (("div_curl", "-o"), ("independent", "--s")):
                    ax.errorbar(sizes, [res[n][kind]["mean"] for n in sizes], [res[n][kind]["std"] for n in sizes],
                                fmt=st, capsize=2, label=f"{kind} ({g})")
            ax.set_title(key); ax.set_xlabel("training points"); ax.set_ylabel("angular error (rad)")
            ax.legend(fontsize=7)
        png.append(_repro.savefig(fig, f"repro_fields_error{'_quick' if quick else ''}.png"))
        if keep is not None or quick:
            V, curl, div = vector_field_1(X, 0.5)
            model = keep
            if model is None:
                idx = rng.permutation(len(X))[:sizes[-1]]
                model = VectorFieldRegressor(kernel=Gaussian(WIDTH), n_steps=steps1).fit(X[idx], V[idx])
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
