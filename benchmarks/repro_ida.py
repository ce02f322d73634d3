"""Reproduce [LRODV08] Table 2 (and the SVM column of Table 3): spectral filters on the IDA benchmarks.

Row reproduced: PAPER_FIGURES.md "IDA benchmarks ([LRODV08], §7.1, Tables 2 and 3)".

Protocol ([LRODV08] §7.1, σ first): Gaussian kernel exp(−‖x − x'‖²/(2σ²)); labels ±1 learned as a
scalar regression, sign rule. (1) σ_c from "the average of square distances of training set points of
two different resamplings": the mean squared distance between the training points of realisations 1
and 2; as a width we take its square root (the paper's own σ lie at 0.42–2.36 × this σ_c, image's
Landweber at 0.17 ×, recorded in the JSON). (2) One σ for every filter: "the error on two randomly chosen
partitions … on several values of λ" — 5-fold CV error of Tikhonov (RLS) on the training sets of two
partitions drawn with a fixed seed, averaged over the two, on the grid σ_c × 2^{-2, -1.5, …, 2} × the λ
grid; the σ of the smallest error.
(3) At that σ, t (1/λ, or the step count) of each filter by 5-fold CV on each of the first 5 partitions
and "the median of the 5 estimated parameters … for all the resamplings" (an odd count: the median is a
value some partition chose). ν = 5 for the ν-method (``NuMethod(nu=5)``) and iterated Tikhonov
(``IteratedTikhonov(order=5)``), as the paper chose. CV criterion: misclassification rate of the sign
rule, ties broken by 10⁻³·MSE. Folds vmapped; one eigh of each fold's training Gram per (σ, fold),
shared by all filters; partitions and widths ``lax.map``-ed inside one compiled call.

Where we depart: the paper does not say which "error" picks σ (we use CV on the training sets: the
test sets stay unseen) nor how wide δ is (our grid spans the paper's own choices); we have the first
10 of the 100 realisations (no public copy of all 100 was found), the paper 100 (20 for image).

The ν-method path is the recurrence (``lax.scan``, steps 1..1000). Landweber's path is evaluated in
its exact closed form g_t(σ) = (1 − (1 − τσ)^t)/σ (equal to the recurrence, tested in
tests/test_filters.py) on a geometric grid of t up to 10⁶.

Step counts. Our iterative filters act on K/n with step τ = 1/σ_max(K/n) (≥ 1); the paper's use
τ = 1 with κ = sup K(x, x) = 1, so its t is not our t. For Landweber the filter depends on τ·t, for
the ν-method on τ·t² (λ ≈ 1/(τt²)), so the "Selected parameters" table shows our t beside its
value in the paper's normalisation, t·τ (Landweber) and t·√τ (ν-method), τ measured on the first
partition's training Gram at the selected σ.

Controls computed on the same partitions, each used in the "why" of a failing claim:
- the paper's own (t, σ) of Table 2 (τ = 1, λ = 1/t): the test error they give on our partitions;
- the floor: the smallest test error any rule of the inputs can reach on each test set, fitted to the
  test labels themselves (per distinct test input, the majority label); a published mean below the
  floor's (by more than 2 standard errors of our floor estimate) is labelled "no method can meet it";
- scikit-learn's SVC (RBF), C and γ by 5-fold GridSearchCV on the SVM's own (C, σ) grid, median
  protocol (the benchmark page's joint protocol for the SVM).

Claims: each published mean error (Table 2, and the SVM column of Table 3) against ours two-sided,
within 2 standard errors of the difference, √(SE_ours² + SE_paper²) with SE = std/√partitions (10
here; 100 in the paper, 20 for image); "the ν-method … converges to a solution in fewer iterations",
"we just need the square root of the number of iterations needed by Landweber" (§5, §7.1) in the
paper's normalisation.

Usage: python benchmarks/repro_ida.py [--quick]   (--quick: heart only, 5 widths, 2 t-selection
partitions, 300 ν-method steps; the heart claims are checked)
"""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _repro  # noqa: E402
from _ida_published import PAPER, PAPER_SPLITS, PAPER_T_SIGMA  # noqa: E402

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

PAPER_NU_PARAMS = {n: PAPER_T_SIGMA[n]["nu_method"] for n in PAPER_T_SIGMA}  # ν-method t / σ
N_PARTITIONS = 10  # realisations evaluated (the first ones; the bundled data hold 10 of the original 100)
SIGMA_SEED = 0  # draws the two σ-selection partitions


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
def cv_scores(X, Y, train_idx, held_idx, sigmas, params, filters):
    """(S, W, P) mean 5-fold CV loss of every filter on each of S partitions for every width.

    X (S, n, p), Y (S, n, 1) stacked over partitions (equal sizes in IDA); ``train_idx`` (S, folds,
    n − n/folds) and ``held_idx`` (S, folds, n/folds) the rows of each fold (equal-size folds: every
    IDA training size is a multiple of 5). Partitions and widths lax.map-ed, folds vmapped, one eigh
    of the fold's own training Gram per (partition, width, fold), shared by all filters. Returns a
    tuple with one (S, W, P_f) array per filter.
    """
    a, V = jnp.ones((1,), X.dtype), jnp.eye(1, dtype=X.dtype)

    def per_partition(args):
        Xs, Ys, tr, he = args

        def per_width(s):
            K = Gaussian(s)(Xs, Xs)

            def per_fold(itr, ihe):
                ev, U = jnp.linalg.eigh(K[itr][:, itr])
                eig = SeparableEigh(jnp.maximum(ev, 0.0), U, a, V)
                return tuple(
                    spectral_path(eig, Ys[itr], f, p, K_eval=K[ihe][:, itr], Y_eval=Ys[ihe], output="loss",
                                  loss=sign_loss)
                    for f, p in zip(filters, params))

            return tuple(jnp.mean(x, axis=0) for x in jax.vmap(per_fold)(tr, he))

        return jax.lax.map(per_width, sigmas)

    return jax.lax.map(per_partition, (X, Y, train_idx, held_idx))


def fold_indices(n: int, seed: int, folds: int = 5):
    """(folds, n − n/folds) training and (folds, n/folds) held-out row indices of the shuffled k-fold
    split ``kfold_masks(n, folds, seed)``; ``n`` must be a multiple of ``folds``."""
    if n % folds:
        raise ValueError(f"equal folds need n a multiple of {folds}, got n={n}")
    masks = kfold_masks(n, folds, seed=seed)
    return (np.stack([np.flatnonzero(m) for m in masks]), np.stack([np.flatnonzero(~m) for m in masks]))


@partial(jax.jit, static_argnames=("sigmas", "filters"))
def predict_partitions(Xtr, ytr, Xte, sigmas, params, tau, filters):
    """(S, n_test) test predictions of each filter on each of S partitions, its own σ and parameter.

    Xtr (S, n, p), ytr (S, n), Xte (S, m, p) stacked over partitions; ``sigmas`` and ``params`` one
    scalar per filter; ``tau`` None (ours: 1/σ_max(K/n)) or 1.0 (the paper's normalisation). One eigh
    per (partition, distinct width): filters sharing a width share it (the compiler merges them).
    """
    one = jnp.ones((1,), Xtr.dtype), jnp.eye(1, dtype=Xtr.dtype)

    def per_partition(args):
        X, y, Z = args
        eigs = {}
        out = []
        for f, s, p in zip(filters, sigmas, params):
            key = s
            if key not in eigs:
                kern = Gaussian(s)
                ev, U = jnp.linalg.eigh(kern(X, X))
                eigs[key] = (SeparableEigh(jnp.maximum(ev, 0.0), U, *one), kern(Z, X))
            eig, KZ = eigs[key]
            out.append((KZ @ filtered_coefficients(f, eig, y[:, None], p, tau=tau))[:, 0])
        return tuple(out)

    return jax.lax.map(per_partition, (Xtr, ytr, Xte))


def error_rates(F, y):
    """(S,) misclassification rates of sign(F) (S, m) against y (S, m)."""
    return np.mean(np.where(np.asarray(F) >= 0, 1.0, -1.0) != y, axis=1)


def floor_errors(splits) -> np.ndarray:
    """(S,) the smallest test error any rule of the inputs reaches on each test set.

    Fitted to the test labels themselves: test points with equal inputs get one label, best the
    majority one, so the floor is Σ over distinct test inputs of min(#(+1), #(−1)) / n_test.
    """
    out = []
    for sp in splits:
        _, inv = np.unique(sp.X_test, axis=0, return_inverse=True)
        pos = np.bincount(inv.ravel(), weights=(sp.y_test > 0).astype(float))
        cnt = np.bincount(inv.ravel())
        out.append(float(np.minimum(pos, cnt - pos).sum() / len(sp.y_test)))
    return np.asarray(out)


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
    """The SVM's joint (C, σ) protocol, shared with repro_ida_svm.py: (data sets, kernel-width factors
    of the median distance, partitions used for selection)."""
    datasets = ["heart"] if quick else list(PAPER)
    factors = 2.0 ** np.arange(-1, 2) if quick else 2.0 ** np.arange(-2, 2)
    return datasets, factors, 2 if quick else 5


def sigma_first_protocol(quick: bool) -> dict:
    """The filters' σ-first protocol: width factors of σ_c, partitions for σ and for t, path grids."""
    T = 300 if quick else 1000
    lam = np.geomspace(1e-9, 1.0, 19 if quick else 37)
    return {"factors": 2.0 ** np.arange(-1.0, 1.01, 0.5) if quick else 2.0 ** np.arange(-2.0, 2.01, 0.5),
            "sigma_partitions": 2, "t_partitions": 3 if quick else 5, "T": T, "lam": lam,
            "t_landweber": np.unique(np.round(np.geomspace(1, 1e6, 19 if quick else 49)))}


def sigma_centre(splits) -> float:
    """√(mean squared distance between the training points of realisations 1 and 2) ([LRODV08] §7.1's
    σ_c, "the average of square distances of training set points of two different resamplings", as a
    width)."""
    a, b = splits[0].X_train, splits[1].X_train
    d2 = (a**2).sum(1)[:, None] + (b**2).sum(1)[None, :] - 2.0 * a @ b.T
    return float(np.sqrt(np.maximum(d2, 0.0).mean()))


def stacked(splits):
    """Training and test sets of equal-size partitions stacked on a leading axis."""
    return (np.stack([sp.X_train for sp in splits]), np.stack([sp.y_train for sp in splits]),
            np.stack([sp.X_test for sp in splits]), np.stack([sp.y_test for sp in splits]))


def folds_of(splits, seeds):
    """(S, 5, ·) training and held-out fold indices of the partitions, each seeded by its index."""
    pairs = [fold_indices(len(sp.y_train), int(k)) for sp, k in zip(splits, seeds)]
    return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])


def run_dataset(name, splits, proto, filters=NAMES):
    """σ first, then t per filter by the median protocol; test errors at the choice and at the
    paper's own (t, σ); the floor; per-stage times."""
    times = {}
    t0 = time.perf_counter()
    centre = sigma_centre(splits)
    sigmas = centre * proto["factors"]
    pick = np.sort(np.random.default_rng(SIGMA_SEED).choice(len(splits), proto["sigma_partitions"], replace=False))
    sub = [splits[i] for i in pick]
    Xs, ys, _, _ = stacked(sub)
    tr, he = folds_of(sub, pick)
    (surface,) = cv_scores(jnp.asarray(Xs), jnp.asarray(ys)[..., None], jnp.asarray(tr), jnp.asarray(he),
                           jnp.asarray(sigmas), (jnp.asarray(proto["lam"]),), (FILTERS["tikhonov"],))
    surface = np.asarray(surface).mean(axis=0)  # (W, P): mean over the two partitions
    iw = int(np.unravel_index(int(np.argmin(surface)), surface.shape)[0])
    sigma = float(sigmas[iw])
    times["sigma_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    params = {"landweber": proto["t_landweber"], "nu_method": np.arange(1, proto["T"] + 1), "tikhonov": proto["lam"],
              "tsvd": proto["lam"], "iterated_tikhonov": proto["lam"]}
    sel = splits[:proto["t_partitions"]]
    Xs, ys, _, _ = stacked(sel)
    tr, he = folds_of(sel, range(len(sel)))
    scores = cv_scores(jnp.asarray(Xs), jnp.asarray(ys)[..., None], jnp.asarray(tr), jnp.asarray(he),
                       jnp.asarray([sigma]), tuple(jnp.asarray(params[f]) for f in filters),
                       tuple(FILTERS[f] for f in filters))
    res = {}
    for f, sc in zip(filters, scores):
        sc = np.asarray(sc)[:, 0, :]  # (partitions, P)
        chosen = [float(params[f][int(np.argmin(row))]) for row in sc]
        med = float(np.median(chosen))
        res[f] = {"sigma": sigma, "param": int(med) if f == "nu_method" else med, "per_split_choice": chosen,
                  "cv_loss": [float(row.min()) for row in sc]}
    times["t_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    Xtr, ytr, Xte, yte = stacked(splits)
    F = predict_partitions(jnp.asarray(Xtr), jnp.asarray(ytr), jnp.asarray(Xte), tuple(sigma for _ in filters),
                         tuple(res[f]["param"] for f in filters), None, tuple(FILTERS[f] for f in filters))
    Fp = predict_partitions(jnp.asarray(Xtr), jnp.asarray(ytr), jnp.asarray(Xte),
                          tuple(float(PAPER_T_SIGMA[name][f][1]) for f in filters),
                          tuple(paper_param(f, PAPER_T_SIGMA[name][f][0]) for f in filters), 1.0,
                          tuple(FILTERS[f] for f in filters))
    for f, Ff, Fpf in zip(filters, F, Fp):
        e, ep = error_rates(Ff, yte), error_rates(Fpf, yte)
        res[f].update(errors=e.tolist(), mean=100 * e.mean(), std=100 * e.std(ddof=1),
                      at_paper_params={"t": PAPER_T_SIGMA[name][f][0], "sigma": PAPER_T_SIGMA[name][f][1],
                                       "errors": ep.tolist(), "mean": 100 * ep.mean(), "std": 100 * ep.std(ddof=1),
                                       "se": 100 * _repro.se(ep)})
        if f in ("nu_method", "landweber"):  # τ = 1/σ_max(K/n) on the first partition, t in the paper's τ = 1
            K = np.asarray(Gaussian(sigma)(jnp.asarray(splits[0].X_train), jnp.asarray(splits[0].X_train)))
            tau = len(K) / float(np.linalg.eigvalsh(K)[-1])
            res[f]["tau"] = tau
            res[f]["param_paper_normalisation"] = res[f]["param"] * (np.sqrt(tau) if f == "nu_method" else tau)
    times["test_s"] = time.perf_counter() - t0
    fl = floor_errors(splits)
    extra = {"sigma_centre": centre, "sigma_grid": sigmas.tolist(), "sigma": sigma,
             "sigma_partitions": (pick + 1).tolist(), "sigma_cv_surface": surface.tolist(),
             "paper_sigma_over_centre": {f: PAPER_T_SIGMA[name][f][1] / centre for f in filters},
             "floor": {"errors": fl.tolist(), "mean": 100 * fl.mean(), "std": 100 * fl.std(ddof=1),
                       "se": 100 * _repro.se(fl)}}
    return res, extra, times


def paper_param(f: str, t: float):
    """Table 2's t as our filter parameter in the paper's normalisation (τ = 1): steps for the
    iterative filters (Landweber's closed form takes any real t), λ = 1/t for the others."""
    if f == "nu_method":
        return int(t)
    return float(t) if f == "landweber" else 1.0 / float(t)


def why(n: str, f: str, res: dict, svm_gap: dict) -> str:
    """The computed facts behind a figure outside its tolerance (each from this run's data)."""
    r, paper = res[n], PAPER[n][f]
    parts = []
    floor = r["extra"]["floor"]
    if paper[0] < floor["mean"] - 2 * floor["se"]:
        parts.append(f"NO METHOD CAN MEET IT: the published {paper[0]:.2f} % is below the smallest test error any "
                     f"rule of the inputs reaches on these test sets, {floor['mean']:.2f} ± {floor['std']:.2f} % "
                     f"(standard error {floor['se']:.2f}; fitted to the test labels: the majority label of each "
                     f"distinct test input)")
    if f != "svm":
        ap = r[f]["at_paper_params"]
        cmp = _repro.mean_vs_published(np.asarray(ap["errors"]) * 100, *paper, PAPER_SPLITS[n])
        where = "outside" if not cmp["ok"] else "within"
        parts.append(f"at the paper's own (t, σ) = ({ap['t']:g}, {ap['sigma']:g}) these partitions give "
                     f"{ap['mean']:.2f} ± {ap['std']:.2f} % (standard error {ap['se']:.2f}; {where} the tolerance "
                     f"{cmp['tolerance']:.2f} of the paper's figure, difference {cmp['difference']:+.2f})")
    parts.append(f"SVM control on the same partitions: ours − published {svm_gap[n]:+.2f} points (standard error "
                 f"{r['svm']['se']:.2f})")
    return f"{n}: " + "; ".join(parts)


def main():
    args = _repro.parse(__doc__.splitlines()[0])
    start = time.perf_counter()
    quick = args.quick
    datasets, svm_factors, n_select = selection_protocol(quick)
    proto = sigma_first_protocol(quick)
    ours, rows, per_dataset_time = {}, [], {}
    for name in datasets:
        t0 = time.perf_counter()
        splits = load_ida(name, n_splits=N_PARTITIONS)
        res, extra, stage = run_dataset(name, splits, proto)
        t1 = time.perf_counter()
        base = median_heuristic(np.concatenate([splits[0].X_train, splits[1].X_train]))
        svm = svm_peer(splits, n_select, svm_factors, base)
        res["svm"] = {**svm, "mean": 100 * np.mean(svm["errors"]), "std": 100 * np.std(svm["errors"], ddof=1)}
        res["extra"] = extra
        per_dataset_time[name] = {**stage, "svm_s": time.perf_counter() - t1, "total_s": time.perf_counter() - t0}
        ours[name] = res
        for f in NAMES + ("svm",):
            res[f]["se"] = 100 * _repro.se(res[f]["errors"])
        rows.append([name] + [f"{res[f]['mean']:.2f} ± {res[f]['std']:.2f} [{res[f]['se']:.2f}] "
                              f"({PAPER[name][f][0]:.2f} ± {PAPER[name][f][1]:.2f} "
                              f"[{PAPER[name][f][1] / np.sqrt(PAPER_SPLITS[name]):.2f}])" for f in NAMES + ("svm",)])
        print(f"{name}: {per_dataset_time[name]['total_s']:.1f} s "
              f"({', '.join(f'{k} {v:.1f}' for k, v in stage.items())})", flush=True)

    k = N_PARTITIONS
    t1 = (f"Test error % (mean ± std [standard error, std/√partitions] over {k} partitions; paper: 100, image 20); "
          "models trained on each partition's training set, one σ for every filter, t by the median protocol\n"
          + _repro.table(["dataset"] + [f"{f} ours (paper)" for f in NAMES + ("svm",)], rows))
    srow = []
    for n in datasets:
        e = ours[n]["extra"]
        srow.append([n, f"{e['sigma_centre']:.3g}", f"{e['sigma']:.3g}", f"{PAPER_T_SIGMA[n]['tikhonov'][1]:g}",
                     f"{e['floor']['mean']:.2f} ± {e['floor']['std']:.2f} [{e['floor']['se']:.2f}]"]
                    + [f"{ours[n][f]['at_paper_params']['mean']:.2f} ± {ours[n][f]['at_paper_params']['std']:.2f} "
                       f"[{ours[n][f]['at_paper_params']['se']:.2f}]" for f in NAMES])
    t_sigma = ("σ and controls: σ_c, the selected σ (one for every filter), the paper's σ (image Landweber: 1); "
               "the floor (smallest test error of any rule, fitted to the test labels); test error % at the paper's "
               "own (t, σ); mean ± std [standard error] over the partitions\n"
               + _repro.table(["dataset", "σ_c", "σ (ours)", "σ (paper)", "floor"]
                              + [f"{f} at paper (t, σ)" for f in NAMES], srow))
    prow = []
    for n in datasets:
        nu, lw = ours[n]["nu_method"], ours[n]["landweber"]
        prow.append([n, f"{PAPER_NU_PARAMS[n][0]} / {PAPER_NU_PARAMS[n][1]}", nu["param"], f"{nu['tau']:.2f}",
                     f"{nu['param_paper_normalisation']:.0f}", f"{nu['sigma']:.3g}", f"{lw['param']:.0f}",
                     f"{lw['tau']:.2f}", f"{lw['param_paper_normalisation']:.0f}"])
    t2 = ("Selected parameters. Our t uses τ = 1/σ_max(K/n); the paper's t uses τ = 1 (κ = 1): comparable "
          "figures are t·√τ (ν-method) and t·τ (Landweber)\n" + _repro.table(
              ["dataset", "paper ν t / σ", "ν t (ours)", "ν τ", "ν t·√τ", "σ (ours)", "Landweber t (ours)",
               "Landweber τ", "Landweber t·τ"], prow))

    claims = _repro.Claims(quick)
    for n in datasets:
        for f in NAMES + ("svm",):
            claims.sanity(f"{n}/{f}: finite errors in [0, 1]", all(0 <= e <= 1 for e in ours[n][f]["errors"]))
        floor = np.asarray(ours[n]["extra"]["floor"]["errors"])
        claims.sanity(f"{n}: no error below the floor on any partition (the floor is a lower bound)",
                      all(np.all(np.asarray(ours[n][f]["errors"]) >= floor - 1e-12) for f in NAMES + ("svm",)))
    svm_gap = {n: ours[n]["svm"]["mean"] - PAPER[n]["svm"][0] for n in datasets}
    for n in datasets:
        cmp = _repro.mean_vs_published(100 * np.asarray(ours[n]["nu_method"]["errors"]), *PAPER[n]["nu_method"],
                                       PAPER_SPLITS[n])
        claims.check(f"{n}: ν-method test error (Table 2) reproduced", cmp["ok"],
                     paper=f"{PAPER[n]['nu_method'][0]} ± {PAPER[n]['nu_method'][1]} % ({PAPER_SPLITS[n]} partitions)",
                     ours=f"{cmp['ours']:.2f} ± {ours[n]['nu_method']['std']:.2f} % ({k} partitions)",
                     tolerance=f"two-sided |ours − paper| ≤ 2·√(SE_ours² + SE_paper²) = {cmp['tolerance']:.2f}",
                     detail=f"difference {cmp['difference']:+.2f}", quick=True, direction="lower", figures=cmp,
                     explanation=why(n, "nu_method", ours, svm_gap))
    for f in NAMES + ("svm",):
        if f == "nu_method":
            continue
        outside, figures, reasons = {}, [], []
        for n in datasets:
            cmp = _repro.mean_vs_published(100 * np.asarray(ours[n][f]["errors"]), *PAPER[n][f], PAPER_SPLITS[n])
            figures.append({**cmp, "label": n})
            if not cmp["ok"]:
                outside[n] = f"{cmp['ours']:.2f} vs {cmp['paper']} (tol {cmp['tolerance']:.2f})"
                reasons.append(why(n, f, ours, svm_gap))
        table = "Table 3, SVM column" if f == "svm" else f"Table 2, {f} column"
        claims.check(f"{f}: test errors ({table}) reproduced on every dataset", not outside,
                     paper={n: f"{PAPER[n][f][0]} ± {PAPER[n][f][1]}" for n in datasets},
                     ours={n: f"{ours[n][f]['mean']:.2f} ± {ours[n][f]['std']:.2f}" for n in datasets},
                     tolerance="two-sided, 2·√(SE_ours² + SE_paper²) per dataset",
                     detail=f"outside: {outside}" if outside else "", quick=True, direction="lower", figures=figures,
                     explanation=" | ".join(reasons) + ("" if f != "svm" else
                                                        " (scikit-learn SVC with our (C, γ) grid, not the benchmark "
                                                        "page's SVM)"))
    steps = {n: (ours[n]["nu_method"]["param_paper_normalisation"], ours[n]["landweber"]["param_paper_normalisation"])
             for n in datasets}
    fewer = {n: lw > nu for n, (nu, lw) in steps.items()}
    claims.check("\"The ν-method … converges to a solution in fewer iterations\" than Landweber (§7.1), every dataset",
                 all(fewer.values()), paper="fewer iterations on every dataset",
                 ours={n: f"ν {nu:.0f}, Landweber {lw:.0f}" for n, (nu, lw) in steps.items()},
                 tolerance="strict, paper's normalisation (t·√τ vs t·τ)", quick=True,
                 explanation="not fewer on: " + ", ".join(f"{n} (ν {steps[n][0]:.0f}, Landweber {steps[n][1]:.0f})"
                                                          for n, ok in fewer.items() if not ok))
    square = {n: float(np.log(lw) / np.log(nu)) for n, (nu, lw) in steps.items() if nu >= 4}
    paper_square = {n: float(np.log(PAPER_T_SIGMA[n]["landweber"][0]) / np.log(PAPER_T_SIGMA[n]["nu_method"][0]))
                    for n in datasets if PAPER_T_SIGMA[n]["nu_method"][0] >= 4}
    claims.check("\"we just need the square root of the number of iterations needed by Landweber\" (§5.2; Table 2): "
                 "log t_Landweber / log t_ν ≈ 2", bool(square) and all(1.5 <= r <= 2.5 for r in square.values()),
                 paper="exponent 2", ours={n: round(r, 3) for n, r in square.items()},
                 tolerance="exponent in [1.5, 2.5] on every dataset with t_ν ≥ 4 (paper's normalisation)",
                 explanation="outside [1.5, 2.5]: " + ", ".join(f"{n} {r:.3f}" for n, r in square.items()
                                                                if not 1.5 <= r <= 2.5)
                             + "; the paper's own Table 2 steps give " + ", ".join(
                                 f"{n} {r:.2f}" for n, r in paper_square.items()))
    protocol = {"kernel": "Gaussian exp(−‖x − x'‖²/(2σ²))",
                "sigma_centre": "√(mean squared distance between the training points of realisations 1 and 2)",
                "sigma_grid": "σ_c × " + str(proto["factors"].tolist()),
                "sigma_selection": f"Tikhonov 5-fold CV error on {proto['sigma_partitions']} partitions drawn with "
                                   f"seed {SIGMA_SEED}, averaged; the σ of the smallest error over σ × λ; one σ "
                                   "for every filter",
                "t_selection": f"5-fold CV at that σ on each of the first {proto['t_partitions']} partitions; median",
                "cv_folds": 5, "evaluation_partitions": k, "paper_partitions": PAPER_SPLITS,
                "nu_method": {"nu": 5.0, "max_steps": proto["T"]}, "iterated_tikhonov_order": 5,
                "lambda_grid": [float(proto["lam"][0]), float(proto["lam"][-1]), len(proto["lam"])],
                "landweber_t_grid": [float(proto["t_landweber"][0]), float(proto["t_landweber"][-1]),
                                     len(proto["t_landweber"])],
                "cv_criterion": "sign-rule misclassification + 1e-3·MSE tie-break",
                "at_paper_params": "Table 2's (t, σ), τ = 1, λ = 1/t",
                "floor": "per test set, Σ over distinct test inputs of min(#(+1), #(−1)) / n_test",
                "svm_grid": {"C": np.logspace(-1, 3, 5).tolist(),
                             "gamma": "1/(2σ²), σ = median pairwise distance × " + str(svm_factors.tolist()),
                             "selection_partitions": n_select}}
    _repro.finish("repro_ida", args, start, {"table2": PAPER, "table2_t_sigma": PAPER_T_SIGMA,
                                             "partitions": PAPER_SPLITS}, protocol,
                  {"kfold_masks_seed": "partition index (0-based)", "sigma_partitions_seed": SIGMA_SEED,
                   "partitions": f"IDA realisations 1..{k}"},
                  ours, claims, [t1, t_sigma, t2], {"seconds_per_dataset": per_dataset_time})


if __name__ == "__main__":
    main()
