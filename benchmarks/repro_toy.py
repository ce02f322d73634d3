"""Reproduce [BRBV11] §7.1 Figures 3–4: the multi-task vs vector-valued toy problem.

Row reproduced: PAPER_FIGURES.md "Multi-task vs vector-valued toy ([BRBV11], §7.1, Figures 2–4)".

Protocol: four tasks f_t = sin(2πx) + 0.6·p_t(x) on [0, 1] (task weights: the library's
``TOY_TASK_WEIGHTS``, recorded in the JSON — the paper does not publish its own), noise
variance 0.01; kernel (18) K(x,x')·(ω11ᵀ + (1−ω)I) on long-form data (``MultiTaskRegressor``,
the task-indexed operator, so the multi-task setting — different inputs per task — and the
vector-valued setting — shared inputs — run through the same code); Gaussian scalar kernel
(width from median × {0.25, 0.5, 1} on the validation set); ν-method, at most 200 steps;
ω ∈ {0, 0.1, …, 1} and t on a validation set as large as the training set; independent
learning = ω fixed to 0 (same kernel, same filter); MSE on 1000 test points (250 per task);
10 runs per training size.

Trained on what. The paper's figure is against the number of *training* points per task, ω and
t chosen on the validation set. ``MultiTaskRegressor`` with that validation split refits the
selected (σ, ω, t) on training + validation (2n per task); the tables show both: the model the
selection scored — the ν-method path on the n training points per task at the selected (σ, ω, t)
(the paper's protocol; the claims use it) — and the estimator's refit on 2n.

Model-selection time (Figure 4, left): ν-method (200 steps) and Landweber (1000 steps) as
matrix-free ``lax.scan`` paths over the ω grid (``jaxmtl.paths.grid_path_losses``), and
Tikhonov by refit (25 λ × 11 ω dense Cholesky solves of the joint Gram, vmapped), each timed
after compilation, on the validation set, multi-task setting.

Claims (§7.1, Figures 3–4): "exploiting the coupling among the tasks is significantly
advantageous" at every size (paired over the runs: mean(coupled − independent) < −2·SE); "the
median of the selected values for the kernel parameter ω is 0.6" (|median − 0.6| ≤ 0.2, two grid
steps); vector-valued "no gain" (paired over the runs, two-sided: |mean(coupled − independent)| ≤ 2·SE,
every size);
selection time ν-method < Landweber < Tikhonov at every size.

Usage: python benchmarks/repro_toy.py [--quick]   (--quick: 20 points per task, 3 runs; checks
that the coupled model beats the independent one on average and that the ν-method path is faster
than Landweber's)
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

from jaxmtl import Gaussian, MultiTaskRegressor  # noqa: E402
from jaxmtl.datasets import TOY_TASK_WEIGHTS, make_multitask_toy  # noqa: E402
from jaxmtl.filters import Landweber, NuMethod  # noqa: E402
from jaxmtl.models._grid_search import _stack  # noqa: E402
from jaxmtl.models.multitask import _build, _padded_task_data, _predict  # noqa: E402
from jaxmtl.paths import grid_path_losses, path_scan  # noqa: E402

OMEGAS = np.round(np.linspace(0, 1, 11), 2)
FACTORS = (0.25, 0.5, 1.0)


def sample(n, rng, setting):
    tr = make_multitask_toy(n, rng, setting=setting)
    va = make_multitask_toy(n, rng, setting=setting)
    return tr, va


def fit_one(tr, va, omegas):
    X = np.r_[tr.x, va.x]
    y = np.r_[tr.y, va.y]
    t = np.r_[tr.tasks, va.tasks]
    is_train = np.r_[np.ones(len(tr.y), bool), np.zeros(len(va.y), bool)]
    return MultiTaskRegressor(omegas=omegas, n_steps=200, selection=is_train, width_factors=FACTORS,
                              family="common_similarity").fit(X, y, t)


def train_only_predict(model, tr, te):
    """Predictions of the model the selection scored: the ν-method path on the training rows only,
    at the selected (σ, ω, t), outputs centred on the training mean."""
    kern, om, t = model.kernel_, model.best_params_["omega"], model.best_params_["param"]
    ym = float(tr.y.mean())
    Xtr = jnp.asarray(tr.x, float)
    res = path_scan(_build(kern, jnp.asarray(om), _padded_task_data(np.asarray(Xtr), tr.tasks)(None, len(tr.tasks))),
                    jnp.asarray(tr.y - ym)[:, None], NuMethod(), int(t))
    return np.asarray(_predict(kern, jnp.asarray(om), jnp.asarray(te.x, float), Xtr, te.tasks, tr.tasks,
                               res.coef)) + ym


@jax.jit
def tikhonov_grid(K, KS, Kv, KSv, y, yv, omegas, lams):
    n = y.shape[0]

    def one(om, lam):
        Q = om * K + (1 - om) * KS
        C = jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(Q + n * lam * jnp.eye(n)), y)
        return jnp.mean(((om * Kv + (1 - om) * KSv) @ C - yv) ** 2)

    return jax.vmap(lambda om: jax.vmap(lambda lam: one(om, lam))(lams))(omegas)


def selection_times(n, rng, width, repeats):
    """Seconds (after compilation) to evaluate each filter's whole path over the ω grid."""
    tr, va = sample(n, rng, "multitask")
    X = jnp.asarray(np.r_[tr.x, va.x]); y = jnp.asarray(np.r_[tr.y, va.y])[:, None]
    t = np.r_[tr.tasks, va.tasks]
    S = jnp.asarray((t[:, None] == t[None, :]).astype(float))
    mask = jnp.asarray(np.r_[np.ones(len(tr.y), bool), np.zeros(len(va.y), bool)])[None, :]
    kern = _stack([Gaussian(width)])
    om = jnp.asarray(OMEGAS)
    out = {}
    for name, filt, T in (("nu_method", NuMethod(), 200), ("landweber", Landweber(), 1000)):
        data = _padded_task_data(np.asarray(X), t)(None, len(t))  # the estimator's operator: task blocks
        run = lambda: jax.block_until_ready(grid_path_losses(_build, kern, om, data, y, mask, filt, T))
        run()
        out[name] = float(np.median([_t(run) for _ in range(repeats)]))
    m = len(tr.y)
    K = Gaussian(width)(X, X)
    args = (K[:m, :m], (K * S)[:m, :m], K[m:, :m], (K * S)[m:, :m], y[:m], y[m:], om, jnp.geomspace(1e-6, 1.0, 25))
    run = lambda: jax.block_until_ready(tikhonov_grid(*args))
    run()
    out["tikhonov_refit"] = float(np.median([_t(run) for _ in range(repeats)]))
    return out


def _t(fn):
    s = time.perf_counter(); fn(); return time.perf_counter() - s


def main():
    args = _repro.parse(__doc__.splitlines()[0])
    start = time.perf_counter()
    quick = args.quick
    sizes = [20] if quick else [5, 10, 20, 40]
    runs = 3 if quick else 10
    rng = np.random.default_rng(0)
    test = {s: make_multitask_toy(250, 12345, setting=s) for s in ("multitask", "vector")}
    kinds = ("coupled", "independent", "coupled_refit", "independent_refit")
    ours = {}
    for setting in ("multitask", "vector"):
        res = {k: {} for k in kinds + ("omega",)}
        for n in sizes:
            mse = {k: [] for k in kinds}
            oms = []
            for _ in range(runs):
                tr, va = sample(n, rng, setting)
                te = test[setting]
                for k, grid in (("coupled", OMEGAS), ("independent", [0.0])):
                    model = fit_one(tr, va, grid)
                    mse[k].append(float(np.mean((train_only_predict(model, tr, te) - te.f) ** 2)))
                    mse[k + "_refit"].append(float(np.mean((model.predict(te.x, te.tasks) - te.f) ** 2)))
                    if k == "coupled":
                        oms.append(model.best_params_["omega"])
            for k in mse:
                res[k][n] = {"mean": float(np.mean(mse[k])), "std": float(np.std(mse[k], ddof=1)), "runs": mse[k]}
            res["omega"][n] = {"median": float(np.median(oms)), "all": oms}
        ours[setting] = res
        print(f"{setting} done ({time.perf_counter() - start:.1f} s)", flush=True)
    time_sizes = sizes
    times = {n: selection_times(n, np.random.default_rng(1), 0.1, 1 if quick else 3) for n in time_sizes}
    ours["selection_seconds"] = times

    rows = []
    for setting in ("multitask", "vector"):
        for n in sizes:
            r = ours[setting]
            rows.append([setting, n] + [_repro.pm(r[k][n]["mean"], r[k][n]["std"], 1e3) for k in kinds]
                        + [f"{r['omega'][n]['median']:.1f}"])
    t1 = ("Test MSE ×10³ (vs noiseless f; mean ± std over runs). \"n per task\" = training points; ω and t "
          "selected on a validation set of the same size. Trained on n: the path on the training set at the "
          "selected parameters (the paper's protocol; the claims use these). Refit on 2n: MultiTaskRegressor "
          "refits them on training + validation. Paper: multi-task — coupled clearly below independent, "
          "median ω ≈ 0.6; vector-valued — no gain\n"
          + _repro.table(["setting", "n per task", "coupled, trained on n", "independent (ω=0), trained on n",
                          "coupled, refit on 2n", "independent, refit on 2n", "median ω"], rows))
    t2 = ("Model-selection time on the validation set, multi-task setting (s, after compilation; measured at "
          "every size). Paper: ν-method < Landweber (1000 its) < Tikhonov (25 λ)\n"
          + _repro.table(["n per task", "ν-method (200)", "Landweber (1000)", "Tikhonov refit (25 λ × 11 ω)"],
                         [[n, f"{v['nu_method']:.4f}", f"{v['landweber']:.4f}", f"{v['tikhonov_refit']:.4f}"]
                          for n, v in times.items()]))

    claims = _repro.Claims(quick)
    for setting in ("multitask", "vector"):
        for k in kinds:
            claims.sanity(f"{setting}/{k}: finite MSE", all(np.isfinite(v["mean"]) for v in ours[setting][k].values()))
    mt = ours["multitask"]
    pr = {n: _repro.paired(mt["coupled"][n]["runs"], mt["independent"][n]["runs"]) for n in sizes}
    figs = {n: f"{1e3 * mt['coupled'][n]['mean']:.2f} vs {1e3 * mt['independent'][n]['mean']:.2f} ×10⁻³, "
               f"difference {1e3 * p['mean_difference']:+.2f} (SE {1e3 * p['se']:.2f})" for n, p in pr.items()}
    claims.check("multi-task: \"exploiting the coupling among the tasks is significantly advantageous\" (Figure 3 "
                 "left), every size", all(p["below"] for p in pr.values()), paper="coupled clearly below independent",
                 ours=figs, tolerance="paired over the runs: mean(coupled − independent) < −2·SE at every size",
                 explanation="the paper does not publish its task weights (ours: TOY_TASK_WEIGHTS); with a "
                             "validation set of n points per task the selected ω spans 0–1 (see the JSON), so at "
                             "the sizes where the gain is not significant the selection noise is of the size "
                             "of the gain")
    claims.check("multi-task: coupled below independent on average (quick: 20 per task, 3 runs)",
                 all(p["mean_difference"] < 0 for p in pr.values()), paper="coupled below independent",
                 ours=figs, tolerance="mean over runs, one-sided as in Figure 3", quick=True)
    med = float(np.median([w for n in sizes for w in mt["omega"][n]["all"]]))
    claims.check("multi-task: \"the median of the selected values for the kernel parameter ω is 0.6\"",
                 abs(med - 0.6) <= 0.2, paper="0.6", ours=f"{med:.2f} over {runs * len(sizes)} fits",
                 tolerance="two-sided, |median − 0.6| ≤ 0.2 (two grid steps)",
                 figures={"ours": med, "paper": 0.6, "tolerance": 0.2})  # a parameter: no side is better
    vv = ours["vector"]
    pv = {n: _repro.paired(vv["coupled"][n]["runs"], vv["independent"][n]["runs"]) for n in sizes}
    vfigs = {n: f"{1e3 * vv['coupled'][n]['mean']:.2f} vs {1e3 * vv['independent'][n]['mean']:.2f} ×10⁻³, "
                f"difference {1e3 * p['mean_difference']:+.2f} (SE {1e3 * p['se']:.2f})" for n, p in pv.items()}
    gain = [n for n, p in pv.items() if not p["indistinguishable"] and p["mean_difference"] < 0]
    loss = [n for n, p in pv.items() if not p["indistinguishable"] and p["mean_difference"] > 0]
    claims.check("vector-valued: \"there is no gain in using a non-diagonal kernel\" (Figure 3 right), every size",
                 all(p["indistinguishable"] for p in pv.values()), paper="independent ≈ coupled",
                 ours=vfigs, tolerance="paired over the runs, two-sided: |mean difference| ≤ 2·SE at every size "
                                       "(difference = coupled − independent)",
                 explanation=(f"the coupled kernel is significantly better than the diagonal one at n = {gain} "
                              "(a gain the paper's figure does not show)" if gain else "")
                 + ("; " if gain and loss else "")
                 + (f"significantly worse at n = {loss}" if loss else ""))
    t_fmt = {n: f"ν {v['nu_method']:.4f}, Landweber {v['landweber']:.4f}, Tikhonov {v['tikhonov_refit']:.4f} s"
             for n, v in times.items()}
    claims.check("Figure 4 (left): ν-method faster than Landweber (≤ 1000 its), every size",
                 all(v["nu_method"] < v["landweber"] for v in times.values()), paper="ν-method < Landweber",
                 ours=t_fmt, tolerance="strict, medians after compilation, same process", quick=True)
    claims.check("Figure 4 (left): Landweber and the ν-method faster than Tikhonov (25 λ), every size",
                 all(max(v["nu_method"], v["landweber"]) < v["tikhonov_refit"] for v in times.values()),
                 paper="ν-method < Landweber < Tikhonov", ours=t_fmt, tolerance="strict, every size",
                 explanation="our Tikhonov sweep is 275 Cholesky solves vmapped into one XLA call (no per-λ "
                             "interpreter overhead, as the paper's MATLAB loop had); below a few hundred points a "
                             "batched factorisation of the small joint Gram costs less than 1000 (or 200) "
                             "sequential scan steps")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
        for ax, setting in zip(axes, ("multitask", "vector")):
            for k, style in (("coupled", "-o"), ("independent", "--s")):
                m = np.array([ours[setting][k][n]["mean"] for n in sizes])
                s = np.array([ours[setting][k][n]["std"] for n in sizes])
                ax.plot(sizes, m, style, label=f"{k}, trained on n")
                ax.fill_between(sizes, m - s, m + s, alpha=0.2)
            ax.set_title(f"{setting} setting"); ax.set_xlabel("training points per task"); ax.set_yscale("log")
        axes[0].set_ylabel("test MSE"); axes[0].legend()
        png = [_repro.savefig(fig, f"repro_toy{'_quick' if quick else ''}.png")]
    except ImportError:
        png = []
    _repro.finish("repro_toy", args, start,
                  {"figure3": "multi-task: coupled kernel clearly better than independent; median ω = 0.6; "
                              "vector-valued: no gain", "figure4": "ν-method < Landweber < Tikhonov selection time"},
                  {"sizes_per_task": sizes, "runs": runs, "omegas": OMEGAS.tolist(), "n_steps": 200,
                   "width_factors_of_median": list(FACTORS), "noise_variance": 0.01, "test_points": 1000,
                   "task_weights": np.asarray(TOY_TASK_WEIGHTS).tolist(), "timing_width": 0.1},
                  {"train_val_rng": 0, "test_rng": 12345, "timing_rng": 1}, ours, claims, [t1, t2],
                  {"figures": png})


if __name__ == "__main__":
    main()
