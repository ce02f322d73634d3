"""Routes of the regularization path: is route="auto" never slower than the obvious baseline?

For each n and grid, the same selection (kernel ridge, A = I, 2 outputs, Gaussian kernel) is
computed by

* ``auto``       — ``regularization_path(..., route="auto")`` (the cost model's choice, recorded),
* ``eigen``      — ``route="eigen"``: one ``eigh`` shared by every point,
* ``direct``     — ``route="direct"``: a Cholesky factor per point and distinct output eigenvalue,
* ``jax_chol``   — the obvious JAX baseline: a jitted Cholesky solve per point in a Python loop,
* ``scipy_chol`` — the same with ``scipy.linalg.cho_factor`` / ``cho_solve``,
* ``matrix_free`` — our matrix-free path (the ν-method's scan of products with K ⊗ A, 2·P steps,
  hold-out cells only): another filter — another estimator, with its own selected loss — so it is
  timed and reported beside the others but is not among the rivals of the claim,

each under ``jit`` where it is ours, warm (compiled ahead of time; the compile time is reported),
the best of ``repeats`` calls timed in interleaved rounds (every method once per round, in a
shuffled order), so that a load that comes and goes on a shared machine weighs on every method
alike. A method whose first timed call took more than ``SLOW`` × the fastest method's is not
repeated: it cannot be the fastest. Cells: hold-out over 1, 3, 7, 20 and 60 λ, and 5-fold × 20 λ × 6 ω of the
common-similarity family (the baselines solve in A's eigenbasis too: one factor per fold, λ and
distinct eigenvalue). Every route must select the same point, or one whose loss is within the
precision's tolerance of the best; the claim is auto ≤ 1.05 × the fastest of {jax_chol, scipy_chol,
eigen} in every cell.

``--baseline-points M`` (k-fold cells at large n, where the Cholesky baselines' 1100 factors take
hours): the two baselines solve only the first M λ of the grid (every fold and ω) and ``direct`` is
not timed. A baseline's cost is the same for every λ (one factor per fold, λ and distinct output
eigenvalue), so the full grid costs at least the part timed: the recorded ``auto_over_fastest`` is
then an upper bound of auto over the fastest full baseline (``baseline_lower_bound``), and the
selections are compared on those M λ (the baselines' losses against eigen's there), auto's and
eigen's on the whole grid.

``--constants`` measures the cost model's prices on this machine instead (what
``jaxmtl.paths.routes.TABLE`` holds for the CPU) and prints them as a table entry.

Usage: python benchmarks/perf_routes.py [--quick] [--shared] [--dtypes float32 float64] [--threads N]
                                        [--sizes N ...] [--kfold-sizes N ...] [--name NAME]
                                        [--baseline-points M] [--constants] [--no-write]
Writes benchmarks/results/perf_routes.json (perf_routes_quick.json with --quick; NAME.json with
--name; route_constants.json with --constants).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench  # noqa: E402

THREADS = _bench.set_threads()
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--quick", action="store_true", help="n = 1000, 2000; the k-fold cell at n = 1000; 2 repeats")
parser.add_argument("--sizes", type=int, nargs="*", default=None, help="training rows (default 1000 2000 4000 8000)")
parser.add_argument("--kfold-sizes", type=int, nargs="*", default=None,
                    help="sizes of the k-fold cell (default every size; quick the first)")
parser.add_argument("--grids", type=int, nargs="*", default=None, help="hold-out grid sizes (default 1 3 7 20 60)")
parser.add_argument("--constant-sizes", type=int, nargs="*", default=[512, 1024, 2048, 4096],
                    help="sizes at which --constants measures the prices")
parser.add_argument("--table", nargs="*", default=None,
                    help="print the Markdown table of these results files (names under benchmarks/results) and exit")
parser.add_argument("--name", default=None, help="results file name (default perf_routes[_quick])")
parser.add_argument("--dtypes", nargs="*", default=["float32", "float64"])
parser.add_argument("--repeats", type=int, default=None, help="best of this many warm calls (default 3; quick 2)")
parser.add_argument("--shared", action="store_true", help="record that other jobs shared the machine")
parser.add_argument("--threads", type=int, default=1, help="BLAS / XLA threads (0: library defaults)")
parser.add_argument("--baseline-points", type=int, default=None,
                    help="k-fold cells: the Cholesky baselines solve the first M λ only (a lower bound of their "
                         "cost); direct not timed")
parser.add_argument("--constants", action="store_true", help="measure the cost model's prices instead")
parser.add_argument("--no-write", action="store_true", help="print only")
ARGS = parser.parse_args()
if ARGS.baseline_points is not None and not 1 <= ARGS.baseline_points <= 20:
    parser.error(f"--baseline-points must be between 1 and the k-fold cell's 20 λ; received {ARGS.baseline_points}")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.linalg as sla  # noqa: E402

from jaxmtl import Holdout, KFold, regularization_path  # noqa: E402
from jaxmtl.filters import NuMethod, Tikhonov  # noqa: E402
from jaxmtl.kernels import Gaussian  # noqa: E402
from jaxmtl.kernels.outputs import common_similarity_eigh  # noqa: E402
from jaxmtl.operators import SeparableOperator  # noqa: E402
from jaxmtl.paths.direct import output_groups  # noqa: E402
from jaxmtl.paths.routes import measure_constants  # noqa: E402
from jaxmtl.selection import fold_indices, kfold_masks  # noqa: E402

SIZES = ARGS.sizes or ([1000, 2000] if ARGS.quick else [1000, 2000, 4000, 8000])
GRIDS = ARGS.grids if ARGS.grids is not None else [1, 3, 7, 20, 60]
KFOLD = {"folds": 5, "points": 20, "omegas": 6}
KFOLD_SIZES = ARGS.kfold_sizes if ARGS.kfold_sizes is not None else SIZES[:1] if ARGS.quick else SIZES
REPEATS = ARGS.repeats or (2 if ARGS.quick else 3)
TARGET = 1.05
SLOW = 3.0  # a method slower than this × the fastest in the first round is not repeated
MAX_ROUNDS, SHORT_ROUND_S = 15, 2.0
LOSS_RTOL = {"float32": 1e-3, "float64": 1e-6}  # a different selected point must be this close in loss
D = 2


def data(n, dtype, seed=0):
    m = n // 4
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + m, 5))
    f = np.c_[np.sin(X[:, 0]) + X[:, 1] * X[:, 2] / 3, np.cos(X[:, 3]) + 0.5 * X[:, 4]]
    Y = f + 0.3 * rng.normal(size=f.shape)
    kern = Gaussian(np.sqrt(5.0))
    K = kern(jnp.asarray(X[:n], dtype), jnp.asarray(X[:n], dtype))
    Ke = kern(jnp.asarray(X[n:], dtype), jnp.asarray(X[:n], dtype))
    return K, Ke, jnp.asarray(Y[:n], dtype), jnp.asarray(Y[n:], dtype)


def interleaved(methods: dict, repeats: int, seed: int = 0) -> tuple[dict, dict, dict]:
    """Time every method in interleaved rounds; (best seconds, median seconds, last result) per method.

    ``methods`` maps a name to a callable (already compiled). Round 1 times them all; later rounds
    only those within ``SLOW`` × the fastest so far. At least ``repeats`` rounds, and more (up to
    ``MAX_ROUNDS``) while a round takes less than ``SHORT_ROUND_S`` seconds: the best of a few
    calls of tens of milliseconds still varies by tens of percent on a loaded machine.
    """
    rng = np.random.default_rng(seed)
    times: dict = {k: [] for k in methods}
    out = {}
    r, spent = 0, 0.0
    while r < repeats or (r < MAX_ROUNDS and spent / r < SHORT_ROUND_S):  # short cells: more rounds
        best = min(min(v) for v in times.values()) if r else None
        names = [k for k in methods if r == 0 or min(times[k]) <= SLOW * best]
        for k in rng.permutation(names):
            start = time.perf_counter()
            out[k] = jax.block_until_ready(methods[k]())
            times[k].append(time.perf_counter() - start)
            spent += times[k][-1]
        r += 1
    return ({k: min(v) for k, v in times.items()}, {k: float(np.median(v)) for k, v in times.items()}, out)


def compiled(fn, *args):
    """(seconds to compile, a no-argument callable of the compiled ``fn(*args)``)."""
    start = time.perf_counter()
    exe = jax.jit(fn).lower(*args).compile()
    return time.perf_counter() - start, lambda: exe(*args)


def ours(route, criterion_of, outputs, lams, filt=None):
    """Our path on one route, jitted over the data; returns (losses, selected loss, chosen route)."""
    filt = filt or Tikhonov()

    def run(K, Ke, Y, Ye):
        sel = regularization_path(K, Y, outputs, filt, lams, criterion_of(Ke, Ye), route=route)
        return sel.losses, sel.losses.reshape(-1)[sel.best], sel.eig is None

    return run


def holdout_baseline(kind, K, Ke, Y, Ye, lams):
    """Validation losses (P,) of a Cholesky solve per λ (A = I: one factor serves both outputs)."""
    n = K.shape[0]
    if kind == "jax_chol":
        @jax.jit
        def one(K, Ke, Y, Ye, lam):
            L = jnp.linalg.cholesky(K + n * lam * jnp.eye(n, dtype=K.dtype))
            C = jax.scipy.linalg.cho_solve((L, True), Y)
            return jnp.mean((Ke @ C - Ye) ** 2)

        start = time.perf_counter()
        jax.block_until_ready(one(K, Ke, Y, Ye, lams[0]))  # compiles (and solves once)
        return time.perf_counter() - start, lambda: jnp.stack([one(K, Ke, Y, Ye, lam) for lam in lams])
    Kh, Keh, Yh, Yeh = (np.asarray(x) for x in (K, Ke, Y, Ye))
    eye = np.eye(n, dtype=Kh.dtype)

    def loop():
        out = []
        for lam in np.asarray(lams):
            C = sla.cho_solve(sla.cho_factor(Kh + n * lam * eye, lower=True, check_finite=False), Yh,
                              check_finite=False)
            out.append(np.mean((Keh @ C - Yeh) ** 2))
        return np.asarray(out)

    return 0.0, loop


def kfold_baseline(kind, K, Y, a, V, lams, rows):
    """(Ω, P) mean k-fold losses of a factor per fold, λ and distinct output eigenvalue, in A's eigenbasis."""
    values, index = (np.asarray(x) for x in output_groups(a))
    tr, held, _, _ = rows  # equal folds here: no padding
    Yt = np.asarray(Y) @ np.asarray(V)
    Kh = np.asarray(K)

    def fold_losses(solve):
        out = np.zeros((a.shape[0], len(lams)))
        for f in range(tr.shape[0]):
            Kf, Kef = Kh[np.ix_(tr[f], tr[f])], Kh[np.ix_(held[f], tr[f])]
            nf = len(tr[f])
            for p, lam in enumerate(np.asarray(lams)):
                Z = np.stack([solve(Kf, u, nf * lam, Yt[tr[f]]) for u in values])  # (U, n_f, d)
                for w in range(a.shape[0]):
                    Ct = Z[index[w], :, np.arange(D)].T * np.asarray(a[w])  # (n_f, d), eigenbasis
                    F = Kef @ Ct @ np.asarray(V).T
                    out[w, p] += np.mean((F - np.asarray(Y)[held[f]]) ** 2) / tr.shape[0]
        return out

    if kind == "jax_chol":
        @jax.jit
        def solve_j(Kf, u, nlam, Yf):
            L = jnp.linalg.cholesky(u * Kf + nlam * jnp.eye(Kf.shape[0], dtype=Kf.dtype))
            return jax.scipy.linalg.cho_solve((L, True), Yf)

        nf = tr.shape[1]
        start = time.perf_counter()
        solve_j(jnp.asarray(Kh[:nf, :nf]), values[0], 1.0, jnp.asarray(Yt[:nf]))  # compile (equal folds)
        seconds = time.perf_counter() - start
        return seconds, lambda: fold_losses(lambda Kf, u, nlam, Yf: np.asarray(solve_j(Kf, u, nlam, Yf)))

    def solve_s(Kf, u, nlam, Yf):
        M = u * Kf + nlam * np.eye(Kf.shape[0], dtype=Kf.dtype)
        return sla.cho_solve(sla.cho_factor(M, lower=True, check_finite=False), Yf, check_finite=False)

    return 0.0, lambda: fold_losses(solve_s)


def same_selection(losses: dict, tol: float) -> tuple[bool, dict]:
    """Every route's selected point, and whether each is the same as eigen's or within tol of its best loss."""
    ref = np.asarray(losses["eigen"]).reshape(-1)
    best = {k: int(np.nanargmin(np.asarray(v).reshape(-1))) for k, v in losses.items()}
    ok = all(b == best["eigen"] or ref[b] <= ref.min() * (1 + tol) for b in best.values())
    return ok, best


def cell(n, dtype, P, kfold):
    K, Ke, Y, Ye = data(n, dtype)
    lams = jnp.asarray(np.logspace(-6, 0, P), dtype)
    methods, first = {}, {}
    partial = ARGS.baseline_points if kfold and ARGS.baseline_points is not None else None
    ours_routes = ("auto", "eigen") if partial else ("auto", "eigen", "direct")
    if kfold:
        masks = kfold_masks(n, KFOLD["folds"])
        rows = fold_indices(masks)
        a, V = common_similarity_eigh(D, np.linspace(0.0, 0.9, KFOLD["omegas"]))
        a, V = a.astype(dtype), V.astype(dtype)
        kf = KFold(masks)
        for route in ours_routes:
            first[route], methods[route] = compiled(ours(route, lambda Ke_, Ye_: kf, (a, V), lams), K, Ke, Y, Ye)
        for kind in ("jax_chol", "scipy_chol"):
            first[kind], methods[kind] = kfold_baseline(kind, K, Y, a, V, lams[:partial], rows)
    else:
        for route in ours_routes:
            first[route], methods[route] = compiled(ours(route, Holdout, jnp.eye(D, dtype=dtype), lams), K, Ke, Y, Ye)
        for kind in ("jax_chol", "scipy_chol"):
            first[kind], methods[kind] = holdout_baseline(kind, K, Ke, Y, Ye, lams)
        A = jnp.eye(D, dtype=dtype)
        steps = jnp.arange(1, 2 * P + 1)
        first["matrix_free"], methods["matrix_free"] = compiled(lambda K, Ke, Y, Ye: regularization_path(
            SeparableOperator(K, A), Y, None, NuMethod(), steps, Holdout(SeparableOperator(Ke, A), Ye)).losses,
            K, Ke, Y, Ye)
    times, medians, out = interleaved(methods, REPEATS, seed=n + P + 7 * kfold)
    losses, selected = {}, {}
    for route in ours_routes:
        losses[route], selected[route] = np.asarray(out[route][0]), float(out[route][1])
    chosen = "direct" if bool(out["auto"][2]) else "eigen"
    if not kfold:
        selected["matrix_free"] = float(np.min(np.asarray(out["matrix_free"])))
    baselines = {kind: out[kind] for kind in ("jax_chol", "scipy_chol")}
    if partial:  # ours on the whole grid; the baselines against eigen on the λ they solved
        ok, best = same_selection(losses, LOSS_RTOL[dtype])
        ok_part, best_part = same_selection({"eigen": losses["eigen"][..., :partial], **baselines}, LOSS_RTOL[dtype])
        ok = ok and ok_part
        best.update({k: v for k, v in best_part.items() if k != "eigen"})
    else:
        ok, best = same_selection({**losses, **baselines}, LOSS_RTOL[dtype])
    rivals = {k: v for k, v in times.items() if k in ("jax_chol", "scipy_chol", "eigen")}
    fastest = min(rivals, key=rivals.get)
    row = {"n": n, "dtype": dtype, "cell": f"5-fold x {KFOLD['points']} lam x {KFOLD['omegas']} omega" if kfold
           else f"hold-out x {P} lam", "points": P, "auto_route": chosen, "seconds": times, "first_call_s": first,
           "median_s": medians, "selected_index": best, "selected_loss": selected, "same_selection": ok, "fastest_rival": fastest,
           "winner": min((k for k in times if k not in ("auto", "matrix_free")), key=times.get), "auto_over_fastest": times["auto"] / rivals[fastest]}
    if partial:
        row.update(baseline_points=partial, baseline_lower_bound=True)
    row["pass"] = bool(ok and row["auto_over_fastest"] <= TARGET)
    print(f"n={n:5d} {dtype} {row['cell']:28s} auto={chosen:6s} "
          + " ".join(f"{k}={v:.3g}" for k, v in times.items())
          + f"  auto/fastest({fastest})={row['auto_over_fastest']:.2f}{' (baselines on ' + str(partial) + ' λ: a bound)' if partial else ''} same={ok}", flush=True)
    return row


def constants_main():
    out = {}
    for dtype in ARGS.dtypes:
        c = measure_constants(dtype, sizes=tuple(ARGS.constant_sizes), repeats=REPEATS)
        out[dtype] = {k: list(getattr(c, k)) for k in ("sizes", "eigh", "cholesky", "tri_inverse", "gemm", "stream")}
        fields = ", ".join(f"{k}=({', '.join(f'{v:.2e}' for v in getattr(c, k))})"
                           for k in ("eigh", "cholesky", "tri_inverse", "gemm", "stream"))
        print(f'"{dtype}": Constants(sizes={c.sizes}, {fields}),', flush=True)
    if not ARGS.no_write:
        print(_bench.write(ARGS.name or "route_constants", {"threads": THREADS, "shared_machine": ARGS.shared,
                                               "load_1min": os.getloadavg()[0], "constants": out}))


def payload_of(rows, load_before, done):
    wins = {}
    for r in rows:
        wins.setdefault(r["winner"], []).append(f"{r['dtype']} n={r['n']} {r['cell']}")
    return {"threads": THREADS, "shared_machine": ARGS.shared, "load_before": load_before,
            "load_after": os.getloadavg(), "versions": _bench.versions(), "repeats": REPEATS, "complete": done,
            "target": f"auto <= {TARGET} x the fastest of jax_chol, scipy_chol, eigen; same selection (matrix_free: "
                      "the ν-method, another estimator, reported only)",
            "passed": sum(r["pass"] for r in rows), "cells": len(rows), "where_each_route_wins": wins, "rows": rows}


def table(names) -> str:
    """Markdown: one line per cell of the results files ``names``, with where each route wins."""
    import json

    lines = ["| dtype | n | cell | auto's route | auto s | eigen s | direct s | JAX Cholesky s | SciPy Cholesky s | "
             "fastest | auto / fastest | auto's route / fastest | same selection |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    heads = []
    for name in names:
        payload = json.loads((_bench.RESULTS / f"{name}.json").read_text())
        m = payload["machine"]
        heads.append(f"`{name}.json`: {m['cpu_count']}-core {m['cpu_model']}, jax {payload['versions']['jax']}, "
                     f"{payload['threads']} thread, best of {payload['repeats']} "
                     f"{'interleaved rounds' if 'median_s' in payload['rows'][0] else 'calls per method in turn'}, "
                     f"{'shared machine, ' if payload['shared_machine'] else ''}load "
                     f"{payload['load_before'][0]:.0f} before / {payload['load_after'][0]:.0f} after"
                     f"{'' if payload.get('complete', True) else ' (run cut short: the cells it finished)'}")
        for r in payload["rows"]:
            t = r["seconds"]
            fastest = t[r["fastest_rival"]]
            part = r.get("baseline_points")
            t_direct = f"{t['direct']:.3g}" if "direct" in t else "—"
            chol = {k: f"{t[k]:.3g}" + (f" (first {part} λ: ≥)" if part else "") for k in ("jax_chol", "scipy_chol")}
            lines.append(f"| {r['dtype']} | {r['n']} | {r['cell']} | {r['auto_route']} | {t['auto']:.3g} | "
                         f"{t['eigen']:.3g} | {t_direct} | {chol['jax_chol']} | {chol['scipy_chol']} | "
                         f"{r['fastest_rival']} | {'≤ ' if part else ''}{r['auto_over_fastest']:.2f} | "
                         f"{'≤ ' if part else ''}{t[r['auto_route']] / fastest:.2f} | "
                         f"{'yes' if r['same_selection'] else 'no'} |")
    return "\n".join(["; ".join(heads) + ".", ""] + lines)


def main():
    if ARGS.table is not None:
        return print(table(ARGS.table or ["perf_routes"]))
    if ARGS.constants:
        return constants_main()
    load_before = os.getloadavg()
    name = ARGS.name or ("perf_routes_quick" if ARGS.quick else "perf_routes")
    rows = []
    for dtype in ARGS.dtypes:
        for n in SIZES:
            for P in GRIDS + ([None] if n in KFOLD_SIZES else []):
                rows.append(cell(n, dtype, KFOLD["points"], True) if P is None else cell(n, dtype, P, False))
                if not ARGS.no_write:  # after every cell: a run cut short keeps what it measured
                    _bench.write(name, payload_of(rows, load_before, False))
    payload = payload_of(rows, load_before, True)
    print(f"{payload['passed']} of {len(rows)} cells pass")
    for k, v in payload["where_each_route_wins"].items():
        print(f"{k} fastest in {len(v)} cells: {'; '.join(v)}")
    if not ARGS.no_write:
        print(_bench.write(name, payload))


if __name__ == "__main__":
    main()
