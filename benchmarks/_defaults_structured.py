"""Parts of ``defaults_vs_tuned.py`` for the structured estimators (multi-task data, vector fields).

* ``fields``: ``VectorFieldRegressor()`` at 40 noiseless points of the bundled fields (field 1 at
  γ = 0, 0.25, 0.5, 0.75, 1 — the paper's range; the claim is on the mean over γ —, field 2) on the 70 × 70 grid of [−2, 2]², tested on every other grid point, against
  per-component ``GridSearchCV(KernelRidge(rbf))`` over α ∈ 10^{−10…0} × γ ∈ 10^{−2…2} (half
  decades), 5-fold; mean angular error ([BRBV11] eq. 33) over ``FIELD_DRAWS`` draws.
* ``unrelated``: a multi-task problem of our own whose tasks are nearly unrelated
  (:func:`unrelated_tasks`: per task its own frequency, phase and scale), ``MultiTaskRegressor()``
  against a pooled ``GridSearchCV(KernelRidge)`` (tasks ignored) and one per task; test MSE.
* ``multitask_real``: Parkinson's telemonitoring (patients as tasks) and the computer survey
  (respondents as tasks), the same comparison with test MSE ± standard error.
* ``school``: School with all 27 attributes standardised, 75/25 split within each school;
  ``MultiTaskRegressor()`` explained variance and fit time against the same two baselines
  (α ∈ 10^{−2…2} × γ ∈ (1/p)·10^{−1…1}, 3-fold: the pooled search refits ≈ 7 700 rows 45 times).
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from _bench import table

KR_ALPHAS = 10.0 ** np.arange(-10, 1)
FIELD_POINTS = 40
FIELD_DRAWS = 20  # random draws of the 40 points per field (five left the ratio within noise of 0.9)


def _kr_search(alphas, gammas, cv=5):
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV

    return GridSearchCV(KernelRidge(kernel="rbf"), {"alpha": alphas, "gamma": gammas}, cv=cv)


def _timed(fit):
    start = time.perf_counter()
    model = fit()
    return model, time.perf_counter() - start


FIELD_1_GAMMAS = (0.0, 0.25, 0.5, 0.75, 1.0)
KR_FIELD_GAMMAS = 10.0 ** np.arange(-2, 2.1, 0.5)       # the baseline's rbf γ grid: widths × 1.78 apart
KR_FIELD_GAMMAS_FINE = 10.0 ** np.arange(-2, 2.01, 0.1)  # a reference grid as fine as ours (× 1.12 apart)


def fields(draws: int, names=("field_1", "field_2")) -> dict:
    """Field 1 at the curl-free weights γ of ``FIELD_1_GAMMAS`` (the paper spans γ ∈ [0, 1]) and
    field 2. At γ = 0.5 the div/curl kernel is a scalar kernel times I (its two parts sum to one),
    so no gain over per-component learning is possible there; the claim is on the mean over γ.

    The baseline is KernelRidge on both components with one α and one rbf γ, tuned by 5-fold grid
    search (the claims' reference); ``tuned_fine_angular`` is the same search on a γ grid as fine
    as our width refinement, reported to separate the model from the luck of a coarse grid."""
    from jaxmtl import VectorFieldRegressor
    from jaxmtl.datasets import grid_2d, vector_field_1, vector_field_2
    from jaxmtl.models import angular_error

    X = grid_2d(70)
    sets = [(f"field_1 (γ = {g:g})", vector_field_1(X, g)[0]) for g in FIELD_1_GAMMAS] if "field_1" in names else []
    sets += [("field_2", vector_field_2(X))] if "field_2" in names else []
    rows = []
    for name, V in sets:
        ours, theirs, fine, t_ours, t_theirs = [], [], [], [], []
        for seed in range(draws):
            idx = np.random.default_rng(seed).choice(len(X), FIELD_POINTS, replace=False)
            rest = np.setdiff1d(np.arange(len(X)), idx)
            m, t = _timed(lambda: VectorFieldRegressor().fit(X[idx], V[idx]))
            ours.append(angular_error(V[rest], m.predict(X[rest])))
            t_ours.append(t)
            kr, t = _timed(lambda: _kr_search(KR_ALPHAS, KR_FIELD_GAMMAS).fit(X[idx], V[idx]))
            theirs.append(angular_error(V[rest], kr.predict(X[rest])))
            t_theirs.append(t)
            fine.append(angular_error(V[rest], _kr_search(KR_ALPHAS, KR_FIELD_GAMMAS_FINE).fit(X[idx], V[idx])
                                      .predict(X[rest])))
        rows.append({"set": name, "points": FIELD_POINTS, "draws": draws, "ours_angular": float(np.mean(ours)),
                     "tuned_angular": float(np.mean(theirs)), "ratio": float(np.mean(ours) / np.mean(theirs)),
                     "tuned_fine_angular": float(np.mean(fine)), "ratio_fine": float(np.mean(ours) / np.mean(fine)),
                     "ours_fit_s": statistics.median(t_ours), "tuned_fit_s": statistics.median(t_theirs)})
        print(table(rows[-1:], list(rows[-1])), flush=True)
    claims = [{"claim": f"{r['set']}: VectorFieldRegressor() ≤ 0.9 × the angular error of tuned per-component "
                        "KernelRidge (40 noiseless points)", "value": r["ratio"], "pass": bool(r["ratio"] <= 0.9)}
              for r in rows if not r["set"].startswith("field_1")]
    field_1 = [r["ratio"] for r in rows if r["set"].startswith("field_1")]
    if field_1:
        claims.append({"claim": f"field_1, mean over γ ∈ {{{', '.join(f'{g:g}' for g in FIELD_1_GAMMAS)}}}: "
                                "VectorFieldRegressor() ≤ 0.9 × the angular error of tuned per-component KernelRidge",
                       "value": float(np.mean(field_1)), "pass": bool(np.mean(field_1) <= 0.9)})
    return {"rows": rows, "claims": claims}


def unrelated_tasks(n_tasks: int, n_per_task: int, seed: int = 0):
    """Nearly unrelated tasks: y = a_t sin(b_t x₁ + c_t) + 0.3 a_t x₂ + noise on x ∈ [−2, 2]²,
    frequency b_t ∈ [0.5, 4], phase c_t ∈ [0, 2π), scale a_t ∈ [0.3, 3] (log-uniform), noise std
    0.1 a_t. Returns (X, y, tasks)."""
    rng = np.random.default_rng(seed)
    b = rng.uniform(0.5, 4.0, n_tasks)
    c = rng.uniform(0.0, 2 * np.pi, n_tasks)
    a = np.exp(rng.uniform(np.log(0.3), np.log(3.0), n_tasks))
    tasks = np.repeat(np.arange(n_tasks), n_per_task)
    X = rng.uniform(-2.0, 2.0, (len(tasks), 2))
    f = a[tasks] * (np.sin(b[tasks] * X[:, 0] + c[tasks]) + 0.3 * X[:, 1])
    return X, f + 0.1 * a[tasks] * rng.normal(size=len(tasks)), tasks


def _standard_error(values) -> float:
    return float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


def _multitask_row(name, Xtr, ytr, ttr, Xte, yte, tte, gammas, alphas=10.0 ** np.arange(-4, 2), cv=5,
                   common_beside=False) -> dict:
    """MultiTaskRegressor() against pooled and per-task tuned KernelRidge (α × γ grids, ``cv``
    inner folds): test MSE ± standard error over test rows, the paired standard error of the
    difference to the better baseline, and fit times. ``common_beside``: also time
    ``MultiTaskRegressor(family='common_similarity')`` (the family search before the independent
    family was added) in the same run."""
    from jaxmtl import MultiTaskRegressor

    m, t_ours = _timed(lambda: MultiTaskRegressor().fit(Xtr, ytr, ttr))
    err_ours = (m.predict(Xte, tte) - yte) ** 2
    pooled, t_pooled = _timed(lambda: _kr_search(alphas, gammas, cv).fit(Xtr, ytr - ytr.mean()))
    err_pooled = (pooled.predict(Xte) + ytr.mean() - yte) ** 2
    pred, start = np.empty_like(yte), time.perf_counter()
    for task in np.unique(ttr):
        tr, te = ttr == task, tte == task
        mu = ytr[tr].mean()
        kr = _kr_search(alphas, gammas, cv=min(cv, int(tr.sum()))).fit(Xtr[tr], ytr[tr] - mu)
        if te.any():
            pred[te] = kr.predict(Xte[te]) + mu
    t_sep = time.perf_counter() - start
    err_sep = (pred - yte) ** 2
    ours, mse_pooled, mse_sep = float(err_ours.mean()), float(err_pooled.mean()), float(err_sep.mean())
    err_best = err_pooled if mse_pooled <= mse_sep else err_sep
    row = {"set": name, "n_train": len(ytr), "tasks": len(np.unique(ttr)), "ours_mse": ours,
           "ours_se": _standard_error(err_ours), "pooled_mse": mse_pooled, "pooled_se": _standard_error(err_pooled),
           "per_task_mse": mse_sep, "per_task_se": _standard_error(err_sep),
           "ratio_to_better": ours / min(mse_pooled, mse_sep),
           "difference_se": _standard_error(err_ours - err_best),
           "ours_explained_variance": 1.0 - ours / float(np.var(yte)), "family": m.family_,
           "omega": m.best_params_["omega"], "ours_fit_s": t_ours, "pooled_fit_s": t_pooled,
           "per_task_fit_s": t_sep}
    if common_beside:
        c, row["common_family_fit_s"] = _timed(lambda: MultiTaskRegressor(family="common_similarity").fit(Xtr, ytr, ttr))
        row["common_family_mse"] = float(np.mean((c.predict(Xte, tte) - yte) ** 2))
    return row


def _within_se(row) -> dict:
    return {"claim": f"{row['set']}: MultiTaskRegressor() test MSE ≤ 1.0 × the better of pooled and per-task "
                     "tuned KernelRidge within one standard error", "value": row["ratio_to_better"],
            "pass": bool(row["ours_mse"] - min(row["pooled_mse"], row["per_task_mse"]) <= row["difference_se"])}


def _split_within_tasks(tasks, fraction=0.75, seed=0):
    rng = np.random.default_rng(seed)
    train = np.zeros(len(tasks), bool)
    for task in np.unique(tasks):
        rows = np.flatnonzero(tasks == task)
        train[rng.permutation(rows)[: int(round(fraction * len(rows)))]] = True
    return train


def _standardised(X, train):
    mu, sd = X[train].mean(0), X[train].std(0)
    return (X - mu) / np.where(sd > 0, sd, 1.0)


def school_speed() -> dict:
    """School's default fit against ``MultiTaskRegressor(family='common_similarity')`` (the default
    before the independent family was added) in the same run, fresh compilation for each: the
    ratio of fit times, and both test MSEs; without the baselines' four minutes."""
    import jax

    from jaxmtl import MultiTaskRegressor
    from jaxmtl.datasets import load_school

    d = load_school(student_features_only=False)
    train = _split_within_tasks(d.tasks)
    X = _standardised(d.X, train)
    row = {"set": "School"}
    for name, family in (("common_family", "common_similarity"), ("default", "auto")):
        jax.clear_caches()
        cpu = time.process_time()
        m, row[f"{name}_fit_s"] = _timed(lambda: MultiTaskRegressor(family=family).fit(X[train], d.y[train],
                                                                                        d.tasks[train]))
        row[f"{name}_fit_cpu_s"] = time.process_time() - cpu
        row[f"{name}_mse"] = float(np.mean((m.predict(X[~train], d.tasks[~train]) - d.y[~train]) ** 2))
    row["family"] = m.family_
    row.update({f"validation_{k}": v for k, v in m.family_scores_.items()})
    row["ratio_fit_s"] = row["default_fit_s"] / row["common_family_fit_s"]
    row["ratio_fit_cpu_s"] = row["default_fit_cpu_s"] / row["common_family_fit_cpu_s"]
    print(table([row], list(row)), flush=True)
    # the claim is on process CPU time: on a shared machine the wall time of either fit varies several-fold
    return {"rows": [row], "claims": [{"claim": "School: default fit ≤ 1.25 × the common-similarity family alone "
                                                "(process CPU time), same run", "value": row["ratio_fit_cpu_s"],
                                       "pass": bool(row["ratio_fit_cpu_s"] <= 1.25)},
                                      {"claim": "School: the default's test MSE ≤ the common-similarity family's "
                                                "× 1.02, same split", "value": row["default_mse"] / row["common_family_mse"],
                                       "pass": bool(row["default_mse"] <= 1.02 * row["common_family_mse"])}]}


def multitask_real() -> dict:
    """Parkinson's telemonitoring (42 patients, total_UPDRS; 19 inputs standardised; 75/25 within
    each patient) and the computer survey (180 respondents; the literature's 16 / 4 split)."""
    from jaxmtl.datasets import load_computer_survey, load_parkinsons

    rows = []
    d = load_parkinsons()
    train = _split_within_tasks(d.tasks)
    X = _standardised(d.X, train)
    p = X.shape[1]
    rows.append(_multitask_row("Parkinson's telemonitoring", X[train], d.y[train], d.tasks[train], X[~train],
                               d.y[~train], d.tasks[~train], (1.0 / p) * 10.0 ** np.arange(-2, 1.1), cv=3))
    print(table(rows[-1:], list(rows[-1])), flush=True)
    tr, te = load_computer_survey("train"), load_computer_survey("test")
    rows.append(_multitask_row("computer survey", tr.X, tr.y, tr.tasks, te.X, te.y, te.tasks,
                               (1.0 / tr.X.shape[1]) * 10.0 ** np.arange(-2, 1.1), cv=3))
    print(table(rows[-1:], list(rows[-1])), flush=True)
    return {"rows": rows, "claims": [_within_se(r) for r in rows]}


def _within(row) -> dict:
    return {"claim": f"{row['set']}: MultiTaskRegressor() within 5 % of the better of pooled and per-task "
                     "tuned KernelRidge (test MSE)", "value": row["ratio_to_better"],
            "pass": bool(row["ratio_to_better"] <= 1.05)}


def unrelated(n_tasks: int, n_per_task: int) -> dict:
    X, y, t = unrelated_tasks(n_tasks, 2 * n_per_task)
    train = np.tile(np.arange(2 * n_per_task) < n_per_task, n_tasks)
    row = _multitask_row("unrelated tasks", X[train], y[train], t[train], X[~train], y[~train], t[~train],
                         10.0 ** np.arange(-2, 1.1, 0.5))
    print(table([row], list(row)), flush=True)
    return {"rows": [row], "claims": [_within(row), _within_se(row)]}


def school(n_schools: int | None = None) -> dict:
    from jaxmtl.datasets import load_school

    d = load_school(student_features_only=False)
    keep = np.isin(d.tasks, np.unique(d.tasks)[:n_schools]) if n_schools else np.ones(len(d.y), bool)
    X, y, t = d.X[keep], d.y[keep], d.tasks[keep]
    train = _split_within_tasks(t)
    X = _standardised(X, train)
    p = X.shape[1]
    row = _multitask_row("School" if n_schools is None else f"School ({n_schools} schools)", X[train], y[train],
                         t[train], X[~train], y[~train], t[~train], (1.0 / p) * 10.0 ** np.arange(-1, 1.1, 1.0),
                         alphas=10.0 ** np.arange(-2, 2.1), cv=3,  # pooled: 45 fits of ≈ 7 700 rows
                         common_beside=True)
    print(table([row], list(row)), flush=True)
    claims = [_within(row), _within_se(row)]
    if n_schools is None:
        claims.append({"claim": "School: MultiTaskRegressor() default fit ≤ 30 s", "value": row["ours_fit_s"],
                       "pass": bool(row["ours_fit_s"] <= 30.0)})
        # the ratio to the common-similarity family is school_speed's claim: there each fit compiles
        # afresh and is timed in CPU seconds, where here the second fit reuses the first's programs
    return {"rows": [row], "claims": claims}
