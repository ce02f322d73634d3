r"""A cost model per route: which of the eigen, direct and matrix-free routes serves a grid fastest.

A regularization path can be computed by three routes (:func:`~jaxmtl.selection.regularization_path`):

=================  ====================================================  ================================
route              cost of the whole grid                                serves
=================  ====================================================  ================================
``eigen``          one ``eigh`` of K (k of the folds' Grams) + the       every filter and criterion
                   filter applied per point: one shared ≈ 9n³ factor
``direct``         a Cholesky factor (n³/3) per grid point and           Tikhonov, iterated Tikhonov;
                   distinct output eigenvalue (+ a triangular inverse    every criterion
                   for LOO / GCV), :mod:`jaxmtl.paths.direct`
``matrix_free``    T passes × one product K C (n² d), the iterative      Landweber, ν-method; hold-out
                   filter's ``lax.scan`` (:mod:`jaxmtl.paths.scan`)      or no criterion, one A
=================  ====================================================  ================================

The model counts each route's kernels over the *whole* grid — points × ω × folds × outputs, and
the criterion's extra work — and prices them with per-device constants (:class:`Constants`):
seconds per n³ of ``eigh``, of a Cholesky factor and of a triangular inverse, seconds per flop of a
matrix product, and seconds per matrix entry streamed (a product with few columns reads K once
and is bound by memory, not flops). The Cholesky price is that of a factor as the direct route
makes it (:func:`jaxmtl.paths.direct._factor`: built in LAPACK's column-major layout, so that no
transposing copy of the n × n matrix comes between XLA and LAPACK), in turn inside one program.
Each constant is measured at a few sizes (they grow less than n³ below the cache sizes) and read
log-log between them; the kernels of one size are timed in interleaved rounds (the best of each),
so that a load that comes and goes on a shared machine shifts every price alike. Constants come from the committed table
:data:`TABLE` for a known device kind (measured on the reference 2-core CPU by
``benchmarks/perf_routes.py --constants``), else are measured once on first use and cached per
device kind and dtype (:func:`measure_constants`, a few seconds).

On m Nyström centres (the approximate estimators, :mod:`jaxmtl.models.approximate`) two routes serve a
Tikhonov grid (:class:`FeatureProblem`, :func:`choose_feature_route`):

=================  ====================================================  ================================
route              cost of the whole grid                                serves
=================  ====================================================  ================================
``eigen``          one pass forming every row's m features and their     every filter and criterion
                   statistics (≈ 3.25·n·m² flops), an m × m ``eigh`` per
                   fold and for the fit, and the map's whitening
``cg``             one m × m ``eigh`` and CG_STEPS + 1 passes, each      Tikhonov, hold-out; rows in
                   multiplying the rows' kernel by every grid column     memory (:mod:`.falkon_grid`)
                   (ω × λ × outputs), and the held-out predictions
=================  ====================================================  ================================

The CG route wins where m is large against the grid's columns (about m/40 columns or fewer).

Compilation is not priced: a route's first call compiles its program once, and the comparison is
of warm calls (a grid is usually searched many times).

Example:
    >>> p = Problem(n=2000, d=2, points=7, criterion="holdout", m=500, distinct=1)
    >>> route_costs(p, "direct", TABLE["cpu"]["float32"]) > 0
    True
    >>> choose_route(p, "float32") in ("eigen", "direct")
    True
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .._jit import jit
from ..errors import ParameterError
from .direct import _factor

__all__ = ["ROUTES", "FEATURE_ROUTES", "CG_STEPS", "Problem", "FeatureProblem", "Constants", "TABLE", "device_kind",
           "measure_constants", "constants", "route_costs", "servable_routes", "choose_route", "feature_route_costs",
           "choose_feature_route"]

ROUTES = ("eigen", "direct", "matrix_free")
FEATURE_ROUTES = ("eigen", "cg")
CG_STEPS = 20  # Falkon's default number of iterations (its ``maxiter``)
CRITERIA = ("holdout", "kfold", "loo", "gcv", "none")
PAIR_OVERHEAD_S = 2e-5  # one (λ, output eigenvalue) step of the direct route's lax.map
LANCZOS_STEPS = 20  # products that estimate σ_max for the iterative filters' default step


@dataclass(frozen=True)
class Problem:
    """The shape of one grid search (all static).

    Attributes:
      n: training rows; d: outputs; points: P grid points (λ values or steps 1..T).
      criterion: 'holdout', 'kfold', 'loo', 'gcv' or 'none'.
      m: held-out rows (hold-out; the largest fold's held-out rows for k-fold).
      omegas: Ω output matrices of a family sharing their eigenvectors.
      folds: k (k-fold); n_train: the largest fold's training rows (k-fold).
      distinct: distinct output eigenvalues over the family (≤ Ω·d; default Ω·d).
      order: solves per factor (iterated Tikhonov's order; 1 for Tikhonov).
      iterative: the filter is iterative (its points are steps).
    """

    n: int
    d: int
    points: int
    criterion: str = "holdout"
    m: int = 0
    omegas: int = 1
    folds: int = 1
    n_train: int = 0
    distinct: int = 0
    order: int = 1
    iterative: bool = False

    def __post_init__(self):
        if self.criterion not in CRITERIA:
            raise ParameterError(f"criterion must be one of {CRITERIA}; received {self.criterion!r}.")


@dataclass(frozen=True)
class Constants:
    """Per-device prices, each as (sizes, values) read log-log between the measured sizes.

    Attributes:
      sizes: the n at which they were measured (increasing).
      eigh, cholesky, tri_inverse: seconds / n³ at each size.
      gemm: seconds per flop of a square product; stream: seconds per entry of K read by a
        product with few columns.
    """

    sizes: tuple[int, ...]
    eigh: tuple[float, ...]
    cholesky: tuple[float, ...]
    tri_inverse: tuple[float, ...]
    gemm: tuple[float, ...]
    stream: tuple[float, ...]

    def at(self, name: str, n: int) -> float:
        """The constant ``name`` at size n (log-log interpolation, clamped to the measured sizes)."""
        vals = np.log(np.asarray(getattr(self, name)))
        return float(np.exp(np.interp(np.log(max(n, 1)), np.log(self.sizes), vals)))

    def seconds(self, name: str, n: int) -> float:
        """Seconds of one n × n ``eigh``, ``cholesky`` or ``tri_inverse``."""
        return self.at(name, n) * float(n) ** 3

    def product(self, rows: int, inner: int, cols: int) -> float:
        """Seconds of a (rows × inner) @ (inner × cols) product: flops or streaming, the slower."""
        size = max(rows, inner)
        return max(2.0 * rows * inner * cols * self.at("gemm", size), rows * inner * self.at("stream", size))


# Measured by `python benchmarks/perf_routes.py --constants --shared --constant-sizes 512 1024 2048` and, for
# n = 4096, `... --constant-sizes 4096 --repeats 2 --name route_constants_4096` on the reference machine (a
# 2-core x86 CPU shared with other jobs, one thread, the best of interleaved rounds: the ratios between the
# kernels of one size are what matter; benchmarks/results/route_constants.json, route_constants_4096.json).
# eigh's time per n³ grows relative to a Cholesky factor's with n (≈ 18 at 2048, 20-24 at 4096): a table
# that stops short of a problem's n holds its last ratio and favours eigen there.
TABLE: dict[str, dict[str, Constants]] = {
    "cpu": {
        "float32": Constants(sizes=(512, 1024, 2048, 4096), eigh=(9.36e-11, 2.22e-10, 1.90e-10, 4.75e-10),
                             cholesky=(1.56e-11, 1.37e-11, 1.07e-11, 2.01e-11),
                             tri_inverse=(8.94e-11, 4.85e-11, 3.40e-11, 5.64e-11),
                             gemm=(7.63e-12, 1.45e-11, 1.71e-11, 4.09e-11), stream=(5.99e-10, 3.71e-10, 2.42e-10, 1.27e-09)),
        "float64": Constants(sizes=(512, 1024, 2048, 4096), eigh=(4.82e-10, 4.20e-10, 3.67e-10, 2.89e-10),
                             cholesky=(3.45e-11, 2.77e-11, 2.19e-11, 1.47e-11),
                             tri_inverse=(1.36e-10, 9.72e-11, 6.43e-11, 4.20e-11),
                             gemm=(2.98e-11, 3.54e-11, 3.60e-11, 3.68e-11), stream=(1.04e-09, 6.44e-10, 4.44e-10, 1.42e-09)),
    },
}


def device_kind(device: jax.Device | None = None) -> str:
    """'cpu' for the CPU backend, else 'platform:device kind' (e.g. 'gpu:NVIDIA H200').

    Example:
        >>> device_kind(jax.devices("cpu")[0])
        'cpu'
    """
    device = jax.devices()[0] if device is None else device
    return "cpu" if device.platform == "cpu" else f"{device.platform}:{device.device_kind}"


def _interleaved_best(fns: dict, repeats: int) -> dict:
    """The best of ``repeats`` warm calls of each function, timed in interleaved rounds."""
    for fn in fns.values():
        jax.block_until_ready(fn())  # compile
    best = dict.fromkeys(fns, np.inf)
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            jax.block_until_ready(fn())
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def measure_constants(dtype: str = "float32", sizes: tuple[int, ...] = (512, 1024), repeats: int = 3) -> Constants:
    """Measure the prices on JAX's default device (best of ``repeats`` warm calls per size, interleaved).

    Example:
        >>> c = measure_constants("float32", sizes=(64,), repeats=1)
        >>> c.sizes, c.eigh[0] > 0
        ((64,), True)
    """
    out: dict[str, list[float]] = {k: [] for k in ("eigh", "cholesky", "tri_inverse", "gemm", "stream")}
    for n in sizes:
        rng = np.random.default_rng(0)  # a Gaussian Gram (eigh's divide and conquer deflates its decaying
        X = rng.normal(size=(n, 5))     # spectrum: 10-20 % faster than on a random Wishart matrix)
        M = jnp.asarray(np.exp(-0.1 * ((X[:, None] - X[None]) ** 2).sum(-1)) + 1e-3 * np.eye(n), dtype)
        L = _factor(M, 1.0, 0.0)[0]
        C = jnp.asarray(rng.normal(size=(n, 8)), dtype)
        eye = jnp.eye(n, dtype=dtype)
        shifts = jnp.arange(1.0, 5.0, dtype=dtype)  # as the direct route runs them: in turn inside one program
        factors = jit(lambda M: jax.lax.map(lambda t: _factor(M, 1.0, t)[0][-1, -1], shifts))
        tri = jit(lambda L: jax.lax.linalg.triangular_solve(L, eye, left_side=True, lower=True))
        eig, mm = jit(jnp.linalg.eigh), jit(jnp.matmul)
        t = _interleaved_best({"eigh": lambda: eig(M), "cholesky": lambda: factors(M), "tri_inverse": lambda: tri(L),
                               "gemm": lambda: mm(M, M), "stream": lambda: mm(M, C)}, repeats)
        n3 = float(n) ** 3
        out["eigh"].append(t["eigh"] / n3)
        out["cholesky"].append(t["cholesky"] / (4 * n3))
        out["tri_inverse"].append(t["tri_inverse"] / n3)
        out["gemm"].append(t["gemm"] / (2 * n3))
        out["stream"].append(t["stream"] / (n * n))
    return Constants(sizes=tuple(int(s) for s in sizes), **{k: tuple(v) for k, v in out.items()})


@functools.lru_cache(maxsize=None)
def _measured(kind: str, dtype: str) -> Constants:
    del kind  # the cache key: measured once per device kind and dtype
    return measure_constants(dtype)


def constants(dtype: str = "float32", device: jax.Device | None = None) -> Constants:
    """The prices for ``device`` (default JAX's first): the committed table, else measured once and cached.

    Example:
        >>> constants("float64", jax.devices("cpu")[0]) is TABLE["cpu"]["float64"]
        True
    """
    kind = device_kind(device)
    name = str(np.dtype(dtype))
    if kind in TABLE and name in TABLE[kind]:
        return TABLE[kind][name]
    return _measured(kind, name)


def _eigen(p: Problem, c: Constants) -> float:
    if p.criterion == "kfold":
        nt = p.n_train
        per_fold = (c.seconds("eigh", nt) + c.product(p.m, nt, nt) + c.product(nt, nt, p.d)
                    + p.points * p.omegas * c.product(p.m, nt, p.d))
        return p.folds * per_fold
    t = c.seconds("eigh", p.n) + c.product(p.n, p.n, p.d)
    if p.criterion == "holdout":
        t += c.product(p.m, p.n, p.n) + p.points * p.omegas * c.product(p.m, p.n, p.d)
    elif p.criterion in ("loo", "gcv"):  # U (h ∘ Ỹ) and (U∘U) h per point, the points batched in one product
        t += 2 * c.product(p.n, p.n, p.points * p.omegas * p.d)
    return t


def _direct(p: Problem, c: Constants) -> float:
    n = p.n_train if p.criterion == "kfold" else p.n
    pairs = p.points * (p.distinct or p.omegas * p.d)
    per_pair = c.seconds("cholesky", n) + 2 * p.order * c.product(n, n, p.d) + PAIR_OVERHEAD_S
    if p.criterion in ("holdout", "kfold"):
        per_pair += c.product(p.m, n, p.d)
    elif p.criterion in ("loo", "gcv"):
        per_pair += c.seconds("tri_inverse", n)
        if p.order > 1:  # WᵀW, its powers, and W Q for an odd order
            per_pair += c.product(n, n, n) * (p.order // 2 + p.order % 2)
    if p.criterion not in ("kfold", "none"):  # the selected point's coefficients are kept from its pair
        return pairs * per_pair
    refit = min(p.d, p.distinct or p.d) * (c.seconds("cholesky", p.n) + 2 * p.order * c.product(p.n, p.n, p.d))
    return p.folds * pairs * per_pair + refit


def _matrix_free(p: Problem, c: Constants) -> float:
    per_step = c.product(p.n, p.n, p.d) + c.product(p.n, p.d, p.d)
    if p.criterion == "holdout":
        per_step += c.product(p.m, p.n, p.d)
    return (p.points + LANCZOS_STEPS) * per_step


_COSTS = {"eigen": _eigen, "direct": _direct, "matrix_free": _matrix_free}


def route_costs(p: Problem, route: str, c: Constants) -> float:
    """Predicted warm seconds of the whole grid ``p`` on ``route`` with prices ``c``.

    Example:
        >>> c = TABLE["cpu"]["float64"]
        >>> p = Problem(n=4000, d=2, points=1, criterion="holdout", m=1000, distinct=1)
        >>> route_costs(p, "direct", c) < route_costs(p, "eigen", c)
        True
    """
    if route not in _COSTS:
        raise ParameterError(f"route must be one of {ROUTES}; received {route!r}.")
    return _COSTS[route](p, c)


def servable_routes(p: Problem, *, direct_form: bool, dense: bool, one_output_matrix: bool) -> tuple[str, ...]:
    """The routes that can serve ``p``: direct needs a filter with a direct form and a dense Gram;
    matrix-free an iterative filter, one output matrix and hold-out or no criterion; eigen a dense Gram."""
    routes = []
    if dense:
        routes.append("eigen")
        if direct_form:
            routes.append("direct")
    if p.iterative and one_output_matrix and p.criterion in ("holdout", "none"):
        routes.append("matrix_free")
    return tuple(routes)


def choose_route(p: Problem, dtype: str = "float32", routes: tuple[str, ...] = ("eigen", "direct"),
                 device: jax.Device | None = None) -> str:
    """The cheapest of ``routes`` for ``p`` on ``device`` (ties go to the earlier route).

    Example:
        >>> choose_route(Problem(n=4000, d=2, points=60, criterion="holdout", m=1000), "float64")
        'eigen'
    """
    if not routes:
        raise ParameterError("no route can serve this problem.")
    c = constants(dtype, device)
    costs = [route_costs(p, r, c) for r in routes]
    return routes[int(np.argmin(costs))]


@dataclass(frozen=True)
class FeatureProblem:
    """The shape of one grid search on m Nyström centres (all static).

    Attributes:
      n: rows (all of them; a fold trains on n − held); p: inputs; m: centres; d: outputs;
      points: P λ; omegas: Ω output matrices scored (the per-output family counts as one);
      folds: k held-out groups (1: hold-out); held: the held-out rows of a fold; steps: CG steps.
    """

    n: int
    p: int
    m: int
    d: int
    points: int
    omegas: int = 1
    folds: int = 1
    held: int = 0
    steps: int = CG_STEPS


def _kernel_rows(c: Constants, rows: int, p: int, m: int) -> float:
    """K(X, Z) for ``rows`` rows: the inner products, and each of the rows·m entries written once."""
    return c.product(rows, p, m) + rows * m * c.at("stream", max(rows, m))


def _feature_eigen(fp: FeatureProblem, c: Constants) -> float:
    # every row's features φ = K(x, Z) W and ΦᵀΦ by its lower blocks (5/8 of a product), in one pass
    t = _kernel_rows(c, fp.n, fp.p, fp.m) + 1.625 * c.product(fp.n, fp.m, fp.m)
    # an eigh per fold and one for the fit, then every grid point's O(m² d); the map's whitening in float64 on the host
    t += (fp.folds + 1) * c.seconds("eigh", fp.m) + fp.folds * fp.points * fp.omegas * c.product(fp.m, fp.m, fp.d)
    return t + TABLE["cpu"]["float64"].seconds("eigh", fp.m)


def _feature_cg(fp: FeatureProblem, c: Constants) -> float:
    cols, nt = fp.points * fp.omegas * fp.d, fp.n - fp.held

    def passes(rows: int, columns: int) -> float:  # CG_STEPS + 1 passes: K_nm v and K_mn u; B, Bᵀ and K_mm
        per_pass = _kernel_rows(c, rows, fp.p, fp.m) + 2 * c.product(rows, fp.m, columns)
        return (fp.steps + 1) * (per_pass + 3 * c.product(fp.m, fp.m, columns))

    held = _kernel_rows(c, fp.held, fp.p, fp.m) + c.product(fp.held, fp.m, cols)  # the held-out predictions
    return c.seconds("eigh", fp.m) + fp.folds * (passes(nt, cols) + held)


def feature_route_costs(fp: FeatureProblem, route: str, c: Constants) -> float:
    """Predicted warm seconds of the grid ``fp`` on the feature route ``route`` with prices ``c``.

    Example:
        >>> fp = FeatureProblem(n=100_000, p=28, m=10_000, d=8, points=20, held=20_000)
        >>> c = TABLE["cpu"]["float32"]
        >>> feature_route_costs(fp, "cg", c) < feature_route_costs(fp, "eigen", c)
        True
    """
    costs = {"eigen": _feature_eigen, "cg": _feature_cg}
    if route not in costs:
        raise ParameterError(f"route must be one of {FEATURE_ROUTES}; received {route!r}.")
    return costs[route](fp, c)


def choose_feature_route(fp: FeatureProblem, dtype: str = "float32", device: jax.Device | None = None) -> str:
    """The cheaper of the eigen and CG routes for ``fp`` on ``device`` (ties go to eigen).

    Example:
        >>> choose_feature_route(FeatureProblem(n=100_000, p=28, m=1000, d=8, points=20, held=20_000))
        'eigen'
    """
    c = constants(dtype, device)
    return min(FEATURE_ROUTES, key=lambda r: feature_route_costs(fp, r, c))
