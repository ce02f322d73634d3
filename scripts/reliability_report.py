#!/usr/bin/env python
"""Reliability report: fuzz, degenerate-data and persistence suites with a fixed budget.

Drives every public estimator with random malformed inputs and hyperparameters, runs a list of
degenerate-data cases with their expected behaviour, and round-trips / corrupts model files.
Prints the figures and exits non-zero when a must-be-zero figure is not zero:

* unexpected exceptions (anything that is not a documented ``jaxmtl.errors.JaxmtlError``),
* valid inputs rejected: a ``JaxmtlError`` raised on an input the documentation accepts — every
  case of the ``must_accept`` list, and fuzz trials whose arrays and settings were all drawn from
  the valid choices (a library error is counted "rejected as documented" only for an input that
  is in fact invalid),
* non-finite results returned (NaN / inf in a prediction or score),
* degenerate-data cases whose expectation failed,
* persistence round trips whose predictions are not bit-identical,
* corrupted model files that were not rejected with ``PersistenceError``.

Usage::

    python scripts/reliability_report.py [--budget 300] [--hostile 12] [--seed 0] [--x64] [--verbose]
        [--suites fuzz degenerate persistence hostile]

The hostile-numerics families (``hostile``: well-formed inputs at scales 1e-30…1e30, offsets,
duplicated rows, far outliers, constant columns, NaN/inf positions, float32 and float64) count, per
family, the cases tried, refused with a documented error, warned about, handled (finite
predictions that match the clean fit) and silently wrong (must be 0).

The suites are importable (``fuzz``, ``must_accept``, ``degenerate``, ``persistence``, ``hostile``)
and run with small budgets by ``tests/test_reliability.py`` and ``tests/test_hostile_numerics.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
import traceback
import warnings
from typing import Any, Callable

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


@dataclasses.dataclass
class Tally:
    """Counts of a suite; ``problems`` lists (case, detail) of the must-be-zero figures."""

    tried: int = 0
    succeeded: int = 0
    documented_errors: int = 0  # rejected as documented: a JaxmtlError on an invalid input
    rejected_valid: int = 0  # a JaxmtlError on an input that must be accepted
    unexpected: int = 0
    non_finite: int = 0
    failed_expectations: int = 0
    round_trips: int = 0
    round_trips_identical: int = 0
    corrupted: int = 0
    corrupted_rejected: int = 0
    problems: list = dataclasses.field(default_factory=list)
    errors_by_type: dict = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return (self.unexpected == 0 and self.non_finite == 0 and self.failed_expectations == 0
                and self.rejected_valid == 0
                and self.round_trips_identical == self.round_trips
                and self.corrupted_rejected == self.corrupted)

    def merge(self, other: "Tally") -> "Tally":
        for f in dataclasses.fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if isinstance(a, list):
                a.extend(b)
            elif isinstance(a, dict):
                for k, v in b.items():
                    a[k] = a.get(k, 0) + v
            else:
                setattr(self, f.name, a + b)
        return self


def _finite(value) -> bool:
    if isinstance(value, (float, int, np.number)):
        return bool(np.isfinite(value))
    if isinstance(value, tuple):
        return all(_finite(v) for v in value)
    arr = np.asarray(value)
    if arr.dtype.kind in "fc":
        return bool(np.all(np.isfinite(arr)))
    return True


def _attempt(tally: Tally, case: str, fn: Callable[[], Any], valid: bool = False) -> Any:
    """Run ``fn``; count a finite success, a documented error, an unexpected exception or a
    non-finite result. With ``valid=True`` the input is one the documentation accepts, and a
    library error counts as a valid input rejected. Returns fn's value or None."""
    from jaxmtl.errors import JaxmtlError

    tally.tried += 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn()
    except JaxmtlError as exc:
        if valid:
            tally.rejected_valid += 1
            tally.problems.append((case, f"valid input rejected: {type(exc).__name__}: {exc}"))
            return None
        tally.documented_errors += 1
        name = type(exc).__name__
        tally.errors_by_type[name] = tally.errors_by_type.get(name, 0) + 1
        return None
    except Exception as exc:  # noqa: BLE001 — exactly what the report counts
        tally.unexpected += 1
        tally.problems.append((case, f"unexpected {type(exc).__name__}: {exc}\n"
                                     + "".join(traceback.format_exc(limit=-3))))
        return None
    if not _finite(out):
        tally.non_finite += 1
        tally.problems.append((case, "non-finite result returned"))
        return None
    tally.succeeded += 1
    return out


# =========================================================================== fuzz
N_CHOICES = (1, 2, 3, 6, 12)


def _bad_array(rng, shape, kind):
    """An array-like of the given intended ``shape`` made malformed in the way ``kind`` says."""
    base = rng.normal(size=shape)
    if kind == "ok":
        return base
    if kind == "float32":
        return base.astype(np.float32)
    if kind == "float16":
        return base.astype(np.float16)
    if kind == "int":
        return np.round(base * 3).astype(np.int64)
    if kind == "bool":
        return base > 0
    if kind == "list":
        return base.tolist()
    if kind == "nan":
        out = base.copy()
        out.flat[rng.integers(out.size)] = np.nan
        return out
    if kind == "inf":
        out = base.copy()
        out.flat[rng.integers(out.size)] = -np.inf
        return out
    if kind == "empty":
        return np.zeros((0,) + tuple(shape[1:]))
    if kind == "rank3":
        return base[..., None, None] if base.ndim == 1 else base[..., None]
    if kind == "scalar":
        return 1.5
    if kind == "none":
        return None
    if kind == "string":
        return np.full(shape, "a")
    if kind == "complex":
        return base + 1j
    if kind == "object":
        out = base.astype(object)
        out.flat[0] = None
        return out
    if kind == "ragged":
        return [[1.0, 2.0], [3.0]]
    if kind == "short":
        return base[:-1] if len(base) > 1 else base[:0]
    if kind == "duplicate":
        out = base.copy()
        out[len(out) // 2:] = out[0]
        return out
    if kind == "constant":
        return np.full(shape, 3.25)
    if kind == "huge":
        return base * 1e6
    if kind == "tiny":
        return base * 1e-6
    if kind == "offset":
        return base + 1e6
    if kind == "zeros":
        return np.zeros(shape)
    raise ValueError(kind)


ARRAY_KINDS_COMMON = ("ok", "float32", "float16", "int", "bool", "list", "nan", "inf", "empty",
                                    "rank3", "scalar", "none", "string", "complex", "object", "ragged",
                                    "short", "duplicate", "constant", "huge", "tiny", "offset", "zeros")


def _pick(rng, values):
    return values[int(rng.integers(len(values)))]


def _kind(rng, p_ok: float = 0.6) -> str:
    """'ok' with probability ``p_ok``, else a random malformation."""
    return "ok" if rng.random() < p_ok else _pick(rng, ARRAY_KINDS_COMMON)


def _kernels(p):
    from jaxmtl import Gaussian, Laplacian, Linear, Matern, Polynomial, SobolevSpline

    return [None] * 6 + [Gaussian(1.0), Gaussian(1e-6), Gaussian(1e6), Laplacian(0.5), Linear(),
                         Polynomial(2), Matern(1.5, 2.0), SobolevSpline(), "rbf", 3]


VALID_KINDS = ("ok", "float32", "int", "list")  # array forms the documentation accepts


def _draw(rng, choices):
    """Small, fast settings with each option replaced by a (possibly bad) value with chance 1/4.

    Each option's list starts with its valid default repeated; ``params["_valid"]`` records
    whether every drawn value is such a default (then the settings are valid by construction)."""
    params = {"n_steps": 8, "n_folds": 2}
    valid = True
    for name, values in choices.items():
        if rng.random() < 0.25:
            value = _pick(rng, values)
            valid &= _same(value, values[0])
            params[name] = value
    params["_valid"] = valid
    return params


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return False
    return type(a) is type(b) and a == b


def _spectral_params(rng, d, n):
    """Random (often valid) constructor arguments of VectorValuedRegressor."""
    from jaxmtl import NuMethod, Tikhonov

    choices = {
        "kernel": _kernels(None),
        "output": ["common_similarity"] * 4 + ["independent", np.eye(d), np.ones((d, d)), "x",
                                                -np.eye(d), np.eye(d + 1), np.full((d, d), np.nan),
                                                np.triu(np.ones((d, d)))],
        "filter": ["nu_method"] * 3 + ["tikhonov", "iterated_tikhonov", "tsvd", "landweber",
                                       NuMethod(2.0), Tikhonov(), "bogus", 3],
        "selection": ["kfold"] * 3 + ["loo", "gcv", "holdout", "x", np.ones(n, bool),
                                      np.arange(n) % 2 == 0, np.zeros(n, int), 7],
        "n_folds": [2] * 3 + [3, 5, 0, 1, 2.5, "a", 10 ** 6],
        "n_steps": [8] * 5 + [1, 2, 0, -1, 2.5, "a", True, None],
        "lambdas": [None] * 4 + [[1e-3, 1e-1], [1.0], [], [-1.0], [np.nan], "a", [[1e-2]], 1e-300],
        "omegas": [None] * 4 + [[0.0, 0.5, 1.0], [1.0], [2.0], [], [np.nan]],
        "width_factors": [None] * 4 + [[1.0], [0.0], [-1.0], [], [1e-8, 1e8]],
        "validation_fraction": [0.2] * 4 + [0.5, 0.0, 1.0, -1.0, "a", np.nan],
        "fit_intercept": [True] * 4 + [False, "no", None],
        "random_state": [0] * 4 + [1, None, -1, "a", 1.5],
    }
    return _draw(rng, choices)


def _fuzz_vector_valued(rng, tally):
    from jaxmtl import VectorValuedRegressor

    n, p, d = _pick(rng, N_CHOICES), int(rng.integers(1, 3)), int(rng.integers(1, 3))
    kx, ky, kn = _kind(rng), _kind(rng), _kind(rng)
    X = _bad_array(rng, (n, p), kx)
    Y = _bad_array(rng, (n, d) if rng.random() < 0.7 else (n,), ky)
    params = _spectral_params(rng, d, n)
    valid = params.pop("_valid") and n >= 6 and {kx, ky} <= set(VALID_KINDS)
    model = _attempt(tally, f"VectorValuedRegressor({params}).fit", lambda: VectorValuedRegressor(**params).fit(X, Y),
                     valid)
    Xn = _bad_array(rng, (int(rng.integers(1, 4)), p), kn)
    if model is not None:
        _attempt(tally, "VectorValuedRegressor.predict", lambda: model.predict(Xn), valid and kn in VALID_KINDS)
        _attempt(tally, "VectorValuedRegressor.score", lambda: model.score(X, Y), valid)
    elif rng.random() < 0.2:
        _attempt(tally, "VectorValuedRegressor.predict (unfitted)", lambda: VectorValuedRegressor().predict(Xn))


def _fuzz_approximate(rng, tally):
    from jaxmtl import ApproximateKernelRegressor

    n, p, d = _pick(rng, N_CHOICES), int(rng.integers(1, 3)), int(rng.integers(1, 3))
    kx, ky, kn = _kind(rng), _kind(rng), _kind(rng)
    X = _bad_array(rng, (n, p), kx)
    Y = _bad_array(rng, (n, d) if rng.random() < 0.7 else (n,), ky)
    params = _spectral_params(rng, d, n)
    extra = _draw(rng, {
        "approximation": ["nystrom"] * 3 + ["random_features", "sketch", None, 3, ["nystrom"],
                                            np.array(["nystrom"])],
        "n_components": [2] * 4 + [4, 0, -1, n + 1, 10 ** 6, 2.5, "a", 3, None, True, np.int64(2)],
        "sampling": ["uniform"] * 3 + ["leverage", "greedy", None, 1, np.array(["uniform"])],
        "block_size": [2048] * 3 + [1, 3, 0, -1, 2.5, "a", None, True],
    })
    extra.pop("n_steps"), extra.pop("n_folds")
    valid_extra = extra.pop("_valid")
    valid = params.pop("_valid") and valid_extra and n >= 6 and {kx, ky} <= set(VALID_KINDS)
    params.update(extra)
    params.setdefault("n_components", 2)
    model = _attempt(tally, f"ApproximateKernelRegressor({params}).fit",
                     lambda: ApproximateKernelRegressor(**params).fit(X, Y), valid)
    Xn = _bad_array(rng, (int(rng.integers(1, 4)), p), kn)
    if model is not None:
        _attempt(tally, "ApproximateKernelRegressor.predict", lambda: model.predict(Xn), valid and kn in VALID_KINDS)
        _attempt(tally, "ApproximateKernelRegressor.score", lambda: model.score(X, Y), valid)
    elif rng.random() < 0.2:
        _attempt(tally, "ApproximateKernelRegressor.predict (unfitted)",
                 lambda: ApproximateKernelRegressor().predict(Xn))


def _labels(rng, n):
    kind = _pick(rng, ("int",) * 3 + ("str",) * 3 + ("float", "bool", "mixed", "single", "none", "nan",
                                                    "2d", "short", "empty", "object"))
    c = int(rng.integers(2, 4))
    codes = rng.integers(c, size=n)
    if kind == "int":
        return codes
    if kind == "str":
        return np.array(["cat", "dog", "eel"])[codes]
    if kind == "float":
        return codes * 0.5
    if kind == "bool":
        return codes == 0
    if kind == "mixed":
        return [int(k) if k else "zero" for k in codes]
    if kind == "single":
        return ["only"] * n
    if kind == "none":
        return [None] + list(codes[1:])
    if kind == "nan":
        return np.r_[np.nan, codes[1:].astype(float)]
    if kind == "2d":
        return codes[:, None]
    if kind == "short":
        return codes[:-1]
    if kind == "empty":
        return []
    return [object() for _ in range(n)]


def _fuzz_classifier(rng, tally):
    from jaxmtl import MultiClassClassifier

    n, p = _pick(rng, N_CHOICES), int(rng.integers(1, 3))
    kx = _kind(rng)
    X = _bad_array(rng, (n, p), kx)
    labels = _labels(rng, n)
    params = _spectral_params(rng, 3, n)
    params.pop("output", None)
    valid = params.pop("_valid") and n >= 6 and kx in VALID_KINDS and isinstance(labels, np.ndarray) \
        and labels.ndim == 1 and labels.dtype.kind in "iUb" and len(np.unique(labels)) >= 2
    if rng.random() < 0.3:
        params["coding"] = _pick(rng, ("one_vs_all", "simplex", (1.0, -1.0), (0.0, 1.0), "x", 3, (1.0,)))
        valid &= params["coding"] in ("one_vs_all", "simplex")
    model = _attempt(tally, f"MultiClassClassifier({params}).fit",
                     lambda: MultiClassClassifier(**params).fit(X, labels), valid)
    if model is not None:
        Xn = _bad_array(rng, (int(rng.integers(1, 4)), p), _kind(rng))

        def predict():
            out = model.predict(Xn)
            known = set(model.classes_.tolist())
            if not all(x in known for x in out.tolist()):
                raise AssertionError(f"predicted labels {out!r} outside classes_ {model.classes_!r}")
            return model.decision_function(Xn)

        _attempt(tally, "MultiClassClassifier.predict", predict)
        _attempt(tally, "MultiClassClassifier.score", lambda: model.score(X, labels))


def _tasks(rng, n):
    kind = _pick(rng, ("int",) * 3 + ("str",) * 2 + ("single_task", "one_example", "none", "nan",
                                                     "2d", "short", "float"))
    codes = rng.integers(2, size=n)
    if kind == "int":
        return codes
    if kind == "str":
        return np.array(["a", "b"])[codes]
    if kind == "single_task":
        return np.zeros(n, int)
    if kind == "one_example":
        out = np.zeros(n, int)
        out[0] = 1
        return out
    if kind == "none":
        return [None] + codes[1:].tolist()
    if kind == "nan":
        return np.r_[np.nan, codes[1:].astype(float)]
    if kind == "2d":
        return codes[:, None]
    if kind == "short":
        return codes[:-1]
    return codes * 0.5


def _matrix_free_params(rng, n, extra):
    choices = {
        "kernel": [None] * 6 + [_kernels(None)[6], _kernels(None)[7], _kernels(None)[8], "rbf"],
        "filter": ["nu_method"] * 4 + ["landweber", "tikhonov", "bogus"],
        "n_steps": [8] * 5 + [1, 0, 2.5, "a"],
        "selection": ["holdout", "kfold", "loo", np.arange(n) % 2 == 0, 3],
        "n_folds": [2] * 3 + [0, 1, "a"],
        "validation_fraction": [0.25] * 3 + [0.0, 1.0, "a"],
        "width_factors": [None] * 4 + [[1.0], [0.0], []],
        "random_state": [0] * 4 + [None, -1, "a"],
        **extra,
    }
    return _draw(rng, choices)


def _fuzz_multitask(rng, tally):
    from jaxmtl import MultiTaskRegressor

    n, p = _pick(rng, N_CHOICES[1:]), int(rng.integers(1, 3))
    kx, ky = _kind(rng), _kind(rng)
    X = _bad_array(rng, (n, p), kx)
    one_d = rng.random() < 0.8
    y = _bad_array(rng, (n,) if one_d else (n, 2), ky)
    tasks = _tasks(rng, n)
    params = _matrix_free_params(rng, n, {"omegas": [None] * 4 + [[0.0, 1.0], [2.0], []],
                                          "fit_intercept": [True] * 4 + [False]})
    valid = params.pop("_valid") and n >= 6 and one_d and {kx, ky} <= set(VALID_KINDS) \
        and isinstance(tasks, np.ndarray) and tasks.ndim == 1 and len(tasks) == n and tasks.dtype.kind in "iU" \
        and np.unique(tasks, return_counts=True)[1].min() >= 3
    model = _attempt(tally, f"MultiTaskRegressor({params}).fit",
                     lambda: MultiTaskRegressor(**params).fit(X, y, tasks), valid)
    if model is not None:
        m = int(rng.integers(1, 4))
        Xn = _bad_array(rng, (m, p), _kind(rng))
        known = list(model.tasks_)
        tn = _pick(rng, ([known[0]] * m, [known[-1]] * m, ["never-seen"] * m, [known[0]] * (m + 1), [None] * m))
        _attempt(tally, "MultiTaskRegressor.predict", lambda: model.predict(Xn, tn))


def _fuzz_vector_field(rng, tally):
    from jaxmtl import VectorFieldRegressor

    n, p = _pick(rng, N_CHOICES[1:]), int(rng.integers(1, 4))
    kx, kv = _kind(rng), _kind(rng)
    X = _bad_array(rng, (n, p), kx)
    square = rng.random() < 0.8
    V = _bad_array(rng, (n, p) if square else (n, p + 1), kv)
    params = _matrix_free_params(rng, n, {"kind": ["div_curl"] * 4 + ["curl_free", "div_free", "independent", "x"],
                                          "gammas": [None] * 4 + [[0.5], [2.0], []]})
    params.setdefault("selection", "kfold")
    valid = params.pop("_valid") and n >= 6 and p >= 2 and square and {kx, kv} <= set(VALID_KINDS)
    model = _attempt(tally, f"VectorFieldRegressor({params}).fit", lambda: VectorFieldRegressor(**params).fit(X, V),
                     valid)
    if model is not None:
        Xn = _bad_array(rng, (int(rng.integers(1, 4)), p), _kind(rng))
        _attempt(tally, "VectorFieldRegressor.predict_parts", lambda: model.predict_parts(Xn))


def _fuzz_functions(rng, tally):
    """The functional API: kernels, output matrices, filters, paths, selection, matrix-free."""
    import jax.numpy as jnp

    from jaxmtl import filters, kernels, operators, outputs, paths, selection

    n, d = _pick(rng, N_CHOICES), int(rng.integers(1, 3))
    kind = _pick(rng, ARRAY_KINDS_COMMON)
    bad_scalar = _pick(rng, (1.0, 0.5, 0.0, -1.0, np.nan, np.inf, "a", None, True, 1e-300, 1e300))
    bad_int = _pick(rng, (1, 3, 0, -2, 2.5, "a", True, None))
    which = int(rng.integers(12))
    X = _bad_array(rng, (n, 2), kind)
    if which == 0:
        _attempt(tally, f"Gaussian({bad_scalar!r})", lambda: kernels.Gaussian(bad_scalar)(jnp.ones((2, 1)), jnp.ones((3, 1))))
    elif which == 1:
        _attempt(tally, f"Polynomial({bad_int!r})", lambda: kernels.Polynomial(bad_int, 1.0, bad_scalar)(jnp.ones((2, 1)), jnp.ones((2, 1))))
    elif which == 2:
        _attempt(tally, f"median_heuristic({kind})", lambda: kernels.median_heuristic(X))
    elif which == 3:
        _attempt(tally, f"common_similarity({bad_int!r},{bad_scalar!r})", lambda: outputs.common_similarity(bad_int, bad_scalar))
    elif which == 4:
        A = _bad_array(rng, (d, d), kind)
        _attempt(tally, f"outputs.custom({kind})", lambda: outputs.custom(A))
    elif which == 5:
        M = _bad_array(rng, (d, d), kind)
        _attempt(tally, f"graph_regularization({kind})", lambda: outputs.graph_regularization(np.abs(M) if kind == "ok" else M))
    elif which == 6:
        _attempt(tally, f"mean_regularized({bad_int!r},{bad_scalar!r})", lambda: outputs.mean_regularized(bad_int, bad_scalar))
    elif which == 7:
        _attempt(tally, f"IteratedTikhonov({bad_int!r})", lambda: filters.IteratedTikhonov(bad_int)(jnp.ones(3), 0.1))
    elif which == 8:
        _attempt(tally, f"NuMethod({bad_scalar!r})", lambda: filters.NuMethod(bad_scalar)(jnp.ones(3), 2, 1.0))
    elif which == 9:
        _attempt(tally, f"get_filter({bad_scalar!r})", lambda: filters.get_filter(bad_scalar))
    elif which == 10:
        _attempt(tally, f"Gaussian.gram(block_size={bad_int!r})",
                 lambda: kernels.Gaussian(1.0).gram(jnp.ones((4, 1)), block_size=bad_int))
    else:
        Y = rng.normal(size=(max(n, 2), d))
        K = np.eye(max(n, 2)) + 0.1
        op = operators.SeparableOperator(jnp.asarray(K), jnp.eye(d))
        tau = _pick(rng, (None, None, 10.0, 1e3))
        _attempt(tally, f"iterative_path(n_steps={bad_int!r}, tau={tau})",
                 lambda: paths.iterative_path(op, Y, "nu_method", bad_int, tau=tau).coef)
    _ = (paths, selection)


def _fuzz_output_kernel(rng, tally):
    """OutputKernelRegressor and OutputKernelClassifier (learned output kernel, [DOGP11])."""
    from jaxmtl import Linear, OutputKernelClassifier, OutputKernelRegressor

    n, p, d = _pick(rng, N_CHOICES), int(rng.integers(1, 3)), int(rng.integers(1, 4))
    kx, ky = _kind(rng), _kind(rng)
    X = _bad_array(rng, (n, p), kx)
    choices = {
        "kernel": [Linear()] * 4 + [None, _kernels(None)[6], _kernels(None)[8], "rbf", 3],
        "lambdas": [[1.0, 1e-2]] * 4 + [None, [1.0], [], [-1.0], [np.nan], "a", 1e-300],
        "rank": [None] * 4 + [1, 0, -1, 2.5, "a", 10 ** 6],
        "selection": ["kfold"] * 4 + ["holdout", "loo", "x", np.arange(n) % 2 == 0, 7],
        "max_iter": [20] * 4 + [1, 0, -3, 2.5, "a"],
        "tol": [1e-6] * 4 + [1e-12, 0.0, -1.0, np.nan, "a"],
        "fit_intercept": [True] * 4 + [False, "no", None],
        "random_state": [0] * 4 + [1, None, -1, "a", 1.5],
    }
    params = _draw(rng, choices)
    params.pop("n_steps")
    params.setdefault("kernel", Linear())
    params.setdefault("lambdas", [1.0, 1e-2])
    params.setdefault("max_iter", 20)
    valid = params.pop("_valid") and n >= 6 and kx in VALID_KINDS
    if rng.random() < 0.5:
        name = "OutputKernelRegressor"
        Y = _bad_array(rng, (n, d) if rng.random() < 0.7 else (n,), ky)
        valid &= ky in VALID_KINDS and params.get("rank") is None
        model = _attempt(tally, f"{name}({params}).fit", lambda: OutputKernelRegressor(**params).fit(X, Y), valid)
    else:
        name = "OutputKernelClassifier"
        labels = _labels(rng, n)
        valid &= isinstance(labels, np.ndarray) and labels.ndim == 1 and labels.dtype.kind in "iUb" \
            and len(np.unique(labels)) >= 2 and params.get("rank") is None
        if rng.random() < 0.3:
            params["coding"] = _pick(rng, ("one_vs_all", "simplex", (1.0, -1.0), (0.0, 1.0), "x", 3, (1.0,)))
            valid &= params["coding"] in ("one_vs_all", "simplex")
        model = _attempt(tally, f"{name}({params}).fit", lambda: OutputKernelClassifier(**params).fit(X, labels),
                         valid)
    if model is not None:
        Xn = _bad_array(rng, (int(rng.integers(1, 4)), p), _kind(rng))
        _attempt(tally, f"{name}.predict", lambda: model.predict(Xn))
        _attempt(tally, f"{name}.output_kernel_", lambda: model.output_kernel_)
    elif rng.random() < 0.2:
        _attempt(tally, "OutputKernelRegressor.predict (unfitted)", lambda: OutputKernelRegressor().predict(X))


FUZZERS = (_fuzz_vector_valued, _fuzz_classifier, _fuzz_multitask, _fuzz_vector_field, _fuzz_functions,
           _fuzz_approximate, _fuzz_output_kernel)


def fuzz(budget: int = 200, seed: int = 0) -> Tally:
    """Run ``budget`` random trials (each one fit plus predict/score calls)."""
    rng = np.random.default_rng(seed)
    tally = Tally()
    for i in range(budget):
        FUZZERS[i % len(FUZZERS)](rng, tally)
    return tally


# =========================================================================== valid inputs
def _valid_cases():
    """(case, estimator factory, fit args, predict args): inputs the documentation accepts."""
    from jaxmtl import MultiClassClassifier, MultiTaskRegressor, NuMethod, VectorFieldRegressor, VectorValuedRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    Y = np.c_[np.sin(X[:, 0]), X[:, 1]]
    fast = {"n_steps": 8, "n_folds": 3}
    V = lambda **kw: (lambda: VectorValuedRegressor(**{**fast, **kw}))  # noqa: E731
    cases = [
        ("VectorValuedRegressor: defaults", V(), (X, Y), (X[:3],)),
        ("VectorValuedRegressor: float32 X", V(), (X.astype(np.float32), Y), (X[:3].astype(np.float32),)),
        ("VectorValuedRegressor: integer X", V(), (np.round(3 * X).astype(int), Y), (np.round(3 * X[:3]).astype(int),)),
        ("VectorValuedRegressor: lists", V(), (X.tolist(), Y.tolist()), (X[:3].tolist(),)),
        ("VectorValuedRegressor: 1-D y", V(), (X, Y[:, 0]), (X[:3],)),
        ("VectorValuedRegressor: integer y", V(), (X, np.round(3 * Y).astype(int)), (X[:3],)),
        ("VectorValuedRegressor: rank-one PSD output 11ᵀ", V(output=np.ones((2, 2))), (X, Y), (X[:3],)),
        ("VectorValuedRegressor: output 'independent'", V(output="independent"), (X, Y), (X[:3],)),
        ("VectorValuedRegressor: one ω", V(omegas=[1.0]), (X, Y), (X[:3],)),
        ("VectorValuedRegressor: ν-method ν = 2", V(filter=NuMethod(2.0)), (X, Y), (X[:3],)),
        ("VectorValuedRegressor: fit_intercept=False, random_state=None",
         V(fit_intercept=False, random_state=None), (X, Y), (X[:3],)),
        ("VectorValuedRegressor: boolean hold-out mask", V(selection=np.arange(12) % 3 > 0), (X, Y), (X[:3],)),
        ("VectorValuedRegressor: 2 folds on 6 samples", V(n_folds=2), (X[:6], Y[:6]), (X[:3],)),
    ]
    for filt in ("tikhonov", "iterated_tikhonov", "tsvd", "landweber"):
        cases.append((f"VectorValuedRegressor: filter {filt!r}", V(filter=filt), (X, Y), (X[:3],)))
    for sel in ("loo", "gcv", "holdout"):
        cases.append((f"VectorValuedRegressor: selection {sel!r} (Tikhonov)", V(filter="tikhonov", selection=sel),
                      (X, Y), (X[:3],)))
    labels = np.array(["cat", "dog", "eel"])[np.arange(12) % 3]
    for name, y in (("string", labels), ("integer", np.arange(12) % 3 + 10), ("boolean", np.arange(12) % 2 == 0)):
        for coding in ("one_vs_all", "simplex"):
            cases.append((f"MultiClassClassifier: {name} labels, {coding}",
                          lambda coding=coding: MultiClassClassifier(coding=coding, **fast), (X, y), (X[:3],)))
    tasks = np.array(["north", "south", "east"])[np.arange(12) % 3]
    y1 = Y[:, 0]
    for name, t in (("string tasks", tasks), ("integer tasks 10, 20, 30", (np.arange(12) % 3 + 1) * 10),
                    ("unequal tasks", np.r_[np.zeros(6, int), np.ones(3, int), 2 * np.ones(3, int)])):
        cases.append((f"MultiTaskRegressor: {name}", lambda: MultiTaskRegressor(n_steps=8), (X, y1, t), (X[:3], t[:3])))
    cases.append(("MultiTaskRegressor: k-fold", lambda: MultiTaskRegressor(n_steps=8, selection="kfold", n_folds=3),
                  (X, y1, tasks), (X[:3], tasks[:3])))
    X3 = rng.normal(size=(12, 3))
    for kind in ("div_curl", "curl_free", "div_free", "independent"):
        cases.append((f"VectorFieldRegressor: kind {kind!r}", lambda kind=kind: VectorFieldRegressor(kind=kind, n_steps=8),
                      (X, Y), (X[:3],)))
    cases.append(("VectorFieldRegressor: p = 3, one γ", lambda: VectorFieldRegressor(gammas=[0.5], n_steps=8),
                  (X3, np.sin(X3)), (X3[:3],)))
    return cases


def must_accept(cases=None) -> Tally:
    """Every valid input (default: all of ``_valid_cases()``) must fit and predict finitely: a
    library error there is a valid input rejected (must be 0), not a documented rejection."""
    tally = Tally()
    for case, make, fit_args, predict_args in (_valid_cases() if cases is None else cases):
        model = _attempt(tally, case + " — fit", lambda: make().fit(*fit_args), valid=True)
        if model is not None:
            _attempt(tally, case + " — predict", lambda: model.predict(*predict_args), valid=True)
    return tally


# =========================================================================== degenerate data
def _expect(tally: Tally, case: str, fn: Callable[[], Any], raises: type | None = None) -> None:
    """``fn`` must return a finite value and pass its own assertions, or raise ``raises``."""
    from jaxmtl.errors import JaxmtlError

    tally.tried += 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn()
    except AssertionError as exc:
        tally.failed_expectations += 1
        tally.problems.append((case, f"expectation failed: {exc}"))
        return
    except JaxmtlError as exc:
        tally.documented_errors += 1
        if raises is None or not isinstance(exc, raises):
            tally.failed_expectations += 1
            tally.problems.append((case, f"raised {type(exc).__name__}: {exc}; expected "
                                         f"{'success' if raises is None else raises.__name__}"))
        return
    except Exception as exc:  # noqa: BLE001
        tally.unexpected += 1
        tally.problems.append((case, f"unexpected {type(exc).__name__}: {exc}"))
        return
    if raises is not None:
        tally.failed_expectations += 1
        tally.problems.append((case, f"returned; expected {raises.__name__}"))
        return
    if not _finite(out):
        tally.non_finite += 1
        tally.problems.append((case, "non-finite result"))
        return
    tally.succeeded += 1


def degenerate(fast: bool = False) -> Tally:
    """Degenerate-data cases, each with the behaviour the library documents (docs/errors.md)."""
    import jax
    import jax.numpy as jnp

    import jaxmtl
    from jaxmtl import (Gaussian, MultiClassClassifier, MultiTaskRegressor, Tikhonov,
                        VectorFieldRegressor, VectorValuedRegressor, errors, operators, paths)
    from jaxmtl.kernels import median_heuristic

    x64 = bool(jax.config.jax_enable_x64)
    rtol = 1e-9 if x64 else 1e-4
    rng = np.random.default_rng(0)
    X = rng.normal(size=(24, 2))
    Y = np.c_[np.sin(X[:, 0]), X[:, 1] ** 2]
    fast_kw = dict(n_steps=20, n_folds=3)
    tikh = dict(kernel=Gaussian(1.0), filter=Tikhonov(), lambdas=[1e-2], output="independent")
    t = Tally()

    def dup():
        Xd = np.repeat(X[:6], 4, axis=0)
        P = VectorValuedRegressor(**fast_kw).fit(Xd, Y).predict(Xd)
        assert np.allclose(P[0], P[1], rtol=0, atol=1e-6 * (1 + np.abs(P).max())), "duplicates predicted differently"
        return P

    _expect(t, "duplicated inputs (singular K)", dup)

    def dup_tikhonov():
        Xd = np.repeat(X[:6], 4, axis=0)
        return VectorValuedRegressor(**tikh).fit(Xd, Y).predict(X)

    _expect(t, "duplicated inputs, Tikhonov", dup_tikhonov)

    def const():
        P = VectorValuedRegressor(**fast_kw).fit(X, np.full_like(Y, 2.5)).predict(X[:5])
        assert np.allclose(P, 2.5, rtol=rtol), f"constant outputs predicted as {P.ravel()[:4]}"
        return P

    _expect(t, "constant outputs", const)

    def const_inputs():
        P = VectorValuedRegressor(**fast_kw).fit(np.ones_like(X), Y).predict(X[:5])
        assert np.allclose(P, Y.mean(0), rtol=1e-6, atol=1e-6), "constant inputs should predict the mean"
        return P

    _expect(t, "constant inputs", const_inputs)
    _expect(t, "one sample", lambda: VectorValuedRegressor().fit(X[:1], Y[:1]), errors.ShapeError)
    _expect(t, "two samples, 2 folds", lambda: VectorValuedRegressor(n_steps=5, n_folds=2).fit(X[:2], Y[:2]).predict(X))
    _expect(t, "two samples, 5 folds", lambda: VectorValuedRegressor(n_steps=5).fit(X[:2], Y[:2]), errors.ParameterError)
    _expect(t, "empty X", lambda: VectorValuedRegressor().fit(np.zeros((0, 2)), np.zeros((0, 2))), errors.ShapeError)
    _expect(t, "NaN in Y", lambda: VectorValuedRegressor().fit(X, np.where(X > 1, np.nan, Y)), errors.NonFiniteError)
    _expect(t, "inf in X", lambda: VectorValuedRegressor().fit(np.where(X > 1, np.inf, X), Y), errors.NonFiniteError)
    _expect(t, "string X", lambda: VectorValuedRegressor().fit(X.astype(str), Y), errors.DTypeError)
    _expect(t, "complex Y", lambda: VectorValuedRegressor().fit(X, Y + 1j), errors.DTypeError)
    _expect(t, "integer inputs promoted", lambda: VectorValuedRegressor(**fast_kw).fit(np.round(X * 4).astype(int), Y).predict(X))
    _expect(t, "float16 inputs promoted", lambda: VectorValuedRegressor(**fast_kw).fit(X.astype(np.float16), Y).predict(X))

    def scale(c):
        def run():
            base = VectorValuedRegressor(**tikh).fit(X, Y).predict(X)
            scaled = VectorValuedRegressor(**tikh).fit(X, Y * c).predict(X)
            err = np.max(np.abs(scaled / c - base)) / np.max(np.abs(base))
            assert err < (1e-9 if x64 else 1e-4), f"relative error {err:.2g} at scale {c:g}"
            return scaled
        return run

    _expect(t, "outputs at scale 1e6", scale(1e6))
    _expect(t, "outputs at scale 1e-6", scale(1e-6))

    def scale_selected(c):
        def run():  # with model selection (family, width, path parameter): the same choice, predictions scale
            base = VectorValuedRegressor(**fast_kw).fit(X, Y)
            scaled = VectorValuedRegressor(**fast_kw).fit(X, Y * c)
            assert base.family_ == scaled.family_ and np.array_equal(
                base.best_params_["param"], scaled.best_params_["param"]), "selection changed with scale"
            err = np.max(np.abs(scaled.predict(X) / c - base.predict(X))) / np.max(np.abs(base.predict(X)))
            assert err < (1e-6 if x64 else 1e-3), f"relative error {err:.2g} at scale {c:g}"
            return scaled.predict(X)
        return run

    _expect(t, "selected model, outputs at scale 1e6", scale_selected(1e6))
    _expect(t, "selected model, outputs at scale 1e-6", scale_selected(1e-6))
    med = median_heuristic(X)
    for factor in (1e-6, 1e6):
        for filt in ("nu_method",) if fast else ("nu_method", "tikhonov", "landweber"):
            _expect(t, f"kernel width {factor:g}·median, {filt}",
                    lambda f=factor, fl=filt: VectorValuedRegressor(kernel=Gaussian(f * med), filter=fl, n_steps=20,
                                                                     n_folds=3).fit(X, Y).predict(X))
    _expect(t, "inputs offset by 1e8", lambda: VectorValuedRegressor(**fast_kw).fit(X + 1e8, Y).predict(X + 1e8))
    _expect(t, "n_steps=1", lambda: VectorValuedRegressor(n_steps=1, n_folds=3).fit(X, Y).predict(X))
    _expect(t, "n_steps=0", lambda: VectorValuedRegressor(n_steps=0).fit(X, Y), errors.ParameterError)
    _expect(t, "empty lambdas", lambda: VectorValuedRegressor(filter="tikhonov", lambdas=[]).fit(X, Y), errors.ShapeError)
    _expect(t, "one lambda", lambda: VectorValuedRegressor(filter="tikhonov", lambdas=[0.1], n_folds=3).fit(X, Y).predict(X))
    _expect(t, "empty omegas", lambda: VectorValuedRegressor(omegas=[]).fit(X, Y), errors.ShapeError)
    _expect(t, "singular output matrix (pseudo-inverse)",
            lambda: VectorValuedRegressor(output=np.ones((2, 2)), **fast_kw).fit(X, Y).predict(X))
    _expect(t, "non-symmetric output matrix",
            lambda: VectorValuedRegressor(output=np.array([[1.0, 0.5], [0.0, 1.0]])).fit(X, Y), errors.OutputMatrixError)
    _expect(t, "non-PSD output matrix",
            lambda: VectorValuedRegressor(output=np.array([[1.0, 2.0], [2.0, 1.0]])).fit(X, Y), errors.OutputMatrixError)

    def f32_vs_f64():
        p64 = VectorValuedRegressor(**tikh).fit(X.astype(np.float64), Y).predict(X)
        p32 = VectorValuedRegressor(**tikh).fit(X.astype(np.float32), Y.astype(np.float32)).predict(X.astype(np.float32))
        err = np.max(np.abs(p32 - p64)) / np.max(np.abs(p64))
        assert err < 1e-3, f"float32 and float64 predictions differ by {err:.2g} (relative)"
        return p32

    _expect(t, "float32 vs float64 (Tikhonov, λ=1e-2)", f32_vs_f64)

    def ill_conditioned_f32():
        Xw = X.astype(np.float32)
        P = VectorValuedRegressor(kernel=Gaussian(1e3 * med), filter="tikhonov", n_folds=3).fit(Xw, Y.astype(np.float32))
        return P.predict(Xw)

    _expect(t, "float32, ill-conditioned K (width 1e3·median)", ill_conditioned_f32)
    labels = np.where(X[:, 0] > 0, "pos", "neg")
    _expect(t, "string labels", lambda: MultiClassClassifier(**fast_kw).fit(X, labels).decision_function(X))
    _expect(t, "single class", lambda: MultiClassClassifier().fit(X, ["a"] * len(X)), errors.LabelError)
    _expect(t, "label None", lambda: MultiClassClassifier().fit(X, [None] + labels[1:].tolist()), errors.LabelError)
    tasks = np.r_[np.zeros(len(X) - 1, int), 1]
    _expect(t, "task with one example",
            lambda: MultiTaskRegressor(n_steps=20).fit(X, Y[:, 0], tasks).predict(X, tasks))
    _expect(t, "unknown task id at predict",
            lambda: MultiTaskRegressor(n_steps=20).fit(X, Y[:, 0], tasks).predict(X[:2], [7, 7]), errors.TaskError)
    _expect(t, "missing task id", lambda: MultiTaskRegressor().fit(X, Y[:, 0], [None] * len(X)), errors.TaskError)
    _expect(t, "vector field with mismatched V", lambda: VectorFieldRegressor().fit(X, Y[:, :1]), errors.ShapeError)
    if not fast:
        _expect(t, "vector field, duplicated inputs",
                lambda: VectorFieldRegressor(n_steps=20, n_folds=3).fit(np.repeat(X[:8], 3, 0), Y).predict(X))
    _expect(t, "unfitted predict", lambda: VectorValuedRegressor().predict(X), errors.NotFittedError)
    op = operators.SeparableOperator(jnp.asarray(np.eye(6) + 0.5), jnp.eye(2))
    _expect(t, "diverging iterative path detected",
            lambda: paths.iterative_path(op, np.ones((6, 2)), "landweber", 50, tau=100.0), errors.DivergenceError)
    _expect(t, "iterative path of length 0",
            lambda: paths.iterative_path(op, np.ones((6, 2)), "nu_method", 0), errors.ParameterError)

    def determinism():
        a = VectorValuedRegressor(**fast_kw).fit(X, Y)
        b = VectorValuedRegressor(**fast_kw).fit(X, Y)
        assert np.array_equal(np.asarray(a.coef_), np.asarray(b.coef_)), "coef_ differs between identical fits"
        assert np.array_equal(a.predict(X), b.predict(X)), "predictions differ between identical fits"
        return a.predict(X)

    _expect(t, "determinism (two identical fits)", determinism)
    _ = jaxmtl
    return t


# =========================================================================== every estimator, small
def _targets(X):
    """Real outputs, two-class labels and two tasks derived from X (n, p)."""
    y = np.sin(X[:, 0]) + (X[:, 1] if X.shape[1] > 1 else 0.0)
    labels = np.where(X[:, 0] > np.median(X[:, 0]), "pos", "neg")
    tasks = np.arange(X.shape[0]) % 2
    return y, labels, tasks


def estimator_cases():
    """(name, make, fit_args, predict) for each of the twelve exported estimators, small settings.

    ``make()`` builds the estimator, ``fit_args(X)`` the arguments of ``fit`` for inputs X (n, p)
    with p >= 2 (outputs, labels, tasks and fields derived from X), ``predict(model, X)`` real
    predictions (decision values for classifiers).
    """
    import jaxmtl as jm

    def xy(X):
        return (X, _targets(X)[0])

    def xl(X):
        return (X, _targets(X)[1])

    def xyt(X):
        y, _, t = _targets(X)
        return (X, y, t)

    def field(X):
        return (X, np.c_[np.sin(X[:, 1]), -np.sin(X[:, 0])] if X.shape[1] == 2 else np.sin(X))

    def plain(m, X):
        return m.predict(X)

    def decision(m, X):
        return m.decision_function(X)

    def with_tasks(m, X):
        return m.predict(X, _targets(X)[2])

    return [
        ("VectorValuedRegressor", lambda: jm.VectorValuedRegressor(n_steps=10, n_folds=2), xy, plain),
        ("MultiClassClassifier", lambda: jm.MultiClassClassifier(n_steps=10, n_folds=2), xl, decision),
        ("MultiTaskRegressor", lambda: jm.MultiTaskRegressor(n_steps=10), xyt, with_tasks),
        ("VectorFieldRegressor", lambda: jm.VectorFieldRegressor(n_steps=10, n_folds=2), field, plain),
        ("MixedEffectRegressor", lambda: jm.MixedEffectRegressor(alpha=0.5, lam=0.1), xyt, with_tasks),
        ("KernelMachine", lambda: jm.KernelMachine(C=1.0), xy, plain),
        ("KernelMachineClassifier", lambda: jm.KernelMachineClassifier(C=1.0), xl, decision),
        ("RLS2Regressor", lambda: jm.RLS2Regressor(lam=0.1), xy, plain),
        ("RLS2Classifier", lambda: jm.RLS2Classifier(lam=0.1), xl, decision),
        ("ApproximateKernelRegressor",
         lambda: jm.ApproximateKernelRegressor(n_components=8, n_steps=10, n_folds=2), xy, plain),
        ("OutputKernelRegressor", lambda: jm.OutputKernelRegressor(lambdas=[0.1], n_folds=2, max_iter=20),
         lambda X: (X, np.c_[_targets(X)[0], np.cos(X[:, 0])]), plain),
        ("OutputKernelClassifier", lambda: jm.OutputKernelClassifier(lambdas=[0.1], n_folds=2, max_iter=20),
         xl, decision),
    ]


# =========================================================================== hostile numerics
SUITES = ("fuzz", "degenerate", "persistence", "hostile")  # fuzz includes the must-accept list
HOSTILE_FAMILIES = ("scale", "offset", "duplicates", "outlier", "constant_column", "nonfinite")


def equivariant_cases():
    """Estimator cases with no data-driven selection (fixed λ, C, α, ω, the median-heuristic width;
    RLS2 on standardised features): their predictions are invariant to a common shift, a common
    scale and a constant column of the inputs, so the hostile families can compare with the clean
    fit. Eleven of the twelve estimators: ``VectorFieldRegressor``'s field has one component per
    input feature, so a constant column would change the problem."""
    import jaxmtl as jm

    spectral = {"filter": "tikhonov", "lambdas": [1e-2], "width_factors": [1.0], "n_folds": 2}
    output_kernel = {"lambdas": [0.1], "width_factors": [1.0], "n_folds": 2, "max_iter": 20}
    fixed = {
        "VectorValuedRegressor": lambda: jm.VectorValuedRegressor(**spectral, output="independent"),
        "MultiClassClassifier": lambda: jm.MultiClassClassifier(**spectral),
        "MultiTaskRegressor": lambda: jm.MultiTaskRegressor(
            filter="tikhonov", lambdas=[1e-2], width_factors=[1.0], omegas=[0.5], family="common_similarity"),
        "MixedEffectRegressor": lambda: jm.MixedEffectRegressor(alpha=0.5, lam=0.1),
        "KernelMachine": lambda: jm.KernelMachine(C=1.0),
        "KernelMachineClassifier": lambda: jm.KernelMachineClassifier(C=1.0),
        "RLS2Regressor": lambda: jm.RLS2Regressor(lam=0.1),
        "RLS2Classifier": lambda: jm.RLS2Classifier(lam=0.1),
        "ApproximateKernelRegressor": lambda: jm.ApproximateKernelRegressor(**spectral),
        "OutputKernelRegressor": lambda: jm.OutputKernelRegressor(**output_kernel),
        "OutputKernelClassifier": lambda: jm.OutputKernelClassifier(**output_kernel),
    }
    return [(name, fixed[name], fit_args, predict) for name, _, fit_args, predict in estimator_cases()
            if name in fixed]


def hostile_case(case, family: str, level: float, dtype: str, seed: int) -> tuple[str, str]:
    """Fit ``case`` on well-formed but numerically hostile inputs; classify what happened.

    Families (``level`` is the family's size): 'scale' X·10^level; 'offset' X + 10^level;
    'duplicates' half the rows copies of the first; 'outlier' one row at 10^level; 'constant_column'
    a column 10^level appended; 'nonfinite' a NaN or inf in X or y (level < 0.5: X). Inputs are
    built in float64 and passed as ``dtype``.

    Returns:
      (outcome, detail), outcome one of 'refused' (a documented error), 'warned' (a warning and
      finite predictions), 'handled' (finite predictions that meet the family's expectation:
      equal to the clean fit's within 1e-3·(1 + max|clean|) in float64 and 2e-2·(…) in float32
      for scale / offset / constant column, not flattened to a constant at the clean rows for an
      outlier) or 'wrong' (anything else: a silent wrong answer or an unexpected exception).
    """
    from jaxmtl.errors import JaxmtlError, NonFiniteError

    name, make, fit_args, predict = case
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(24, 2))
    args = list(fit_args(X))
    Xh, keep = X.copy(), np.ones(len(X), bool)
    if family == "scale":
        Xh = X * 10.0**level
    elif family == "offset":
        Xh = X + 10.0**level
    elif family == "duplicates":
        Xh[12:] = X[0]
    elif family == "outlier":
        Xh[0] = 10.0**level
        keep[0] = False
    elif family == "constant_column":
        Xh = np.c_[X, np.full(len(X), 10.0**level)]
    elif family == "nonfinite":
        bad = np.nan if seed % 2 else np.inf
        if level < 0.5:
            Xh[seed % len(X), seed % 2] = bad
        else:
            args[1] = np.array(args[1], dtype=float if np.asarray(args[1]).dtype.kind != "U" else object)
            if args[1].dtype == object:  # labels: a non-finite input instead
                Xh[seed % len(X), 0] = bad
            else:
                args[1][seed % len(X)] = bad
    Xh = Xh.astype(dtype)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = make().fit(Xh, *args[1:])
            got = np.asarray(predict(model, Xh), dtype=np.float64)
    except JaxmtlError as exc:
        if family == "nonfinite" and not isinstance(exc, NonFiniteError):
            return "wrong", f"{name}: non-finite input refused as {type(exc).__name__}"
        return "refused", f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 — counted, not hidden
        return "wrong", f"{name}: unexpected {type(exc).__name__}: {exc}"
    if family == "nonfinite":
        return "wrong", f"{name}: a non-finite input was accepted"
    if not np.all(np.isfinite(got)):
        return "wrong", f"{name}: non-finite predictions"
    warned = any(issubclass(w.category, UserWarning) for w in caught
                 if "jax_enable_x64" not in str(w.message) and "GridEdge" not in w.category.__name__)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clean = np.asarray(predict(make().fit(X.astype(dtype), *args[1:]), X.astype(dtype)), dtype=np.float64)
    tol = (1e-3 if np.dtype(dtype) == np.float64 and Xh.dtype == np.float64 else 2e-2) * (1 + np.abs(clean).max())
    if family in ("scale", "offset", "constant_column"):
        exact_input = family != "offset" or np.array_equal(Xh.astype(np.float64) - 10.0**level, X.astype(dtype))
        ok = np.abs(got - clean).max() <= tol if exact_input else True
    elif family == "outlier":
        ok = np.std(got[keep]) >= 0.2 * np.std(clean[keep])
    else:
        ok = True
    if ok:
        return ("warned" if warned else "handled"), ""
    if warned:
        return "warned", ""
    return "wrong", f"{name}: {family} 10^{level:g} ({dtype}): max |Δ| {np.abs(got - clean).max():.3g}"


def hostile(n_per_family: int = 6, seed: int = 0, cases=None) -> dict:
    """Counts per hostile family: tried, refused, warned, handled, wrong (must be 0), problems.

    Draws ``n_per_family`` (estimator, level, dtype) triples per family from ``cases`` (default:
    :func:`equivariant_cases`) with a seeded generator and runs :func:`hostile_case` on each.
    """
    import jax

    rng = np.random.default_rng(seed)
    cases = equivariant_cases() if cases is None else cases
    dtypes = ("float32", "float64") if jax.config.jax_enable_x64 else ("float32",)
    ranges = {"scale": (-30, 30), "offset": (0, 12), "duplicates": (0, 0), "outlier": (3, 15),
              "constant_column": (-30, 30), "nonfinite": (0, 1)}
    out = {}
    for family in HOSTILE_FAMILIES:
        counts = {"tried": 0, "refused": 0, "warned": 0, "handled": 0, "wrong": 0, "problems": []}
        for _ in range(n_per_family):
            case = cases[rng.integers(len(cases))]
            level = float(rng.uniform(*ranges[family]))
            outcome, detail = hostile_case(case, family, level, str(rng.choice(dtypes)), int(rng.integers(2**16)))
            counts["tried"] += 1
            counts[outcome] += 1
            if outcome == "wrong":
                counts["problems"].append(detail)
        out[family] = counts
    return out


# =========================================================================== persistence
def _fitted_models(fast: bool = False):
    """(name, fitted model, predict function) for every public estimator."""
    from jaxmtl import (Laplacian, Matern, MultiClassClassifier, MultiTaskRegressor, NuMethod, Tikhonov,
                        VectorFieldRegressor, VectorValuedRegressor)

    rng = np.random.default_rng(1)
    X = rng.normal(size=(16, 2))
    Y = np.c_[np.sin(X[:, 0]), X[:, 1]]
    tasks = np.array(["north", "south"])[np.arange(16) % 2]
    out = [
        ("VectorValuedRegressor", VectorValuedRegressor(n_steps=10, n_folds=2).fit(X, Y), lambda m: m.predict(X)),
        ("VectorValuedRegressor(1-D y, Matérn, Tikhonov, LOO)",
         VectorValuedRegressor(kernel=Matern(2.5, 1.0), filter=Tikhonov(), selection="loo").fit(X, Y[:, 0]),
         lambda m: m.predict(X)),
        ("VectorValuedRegressor(output matrix, float32)",
         VectorValuedRegressor(kernel=Laplacian(1.0), output=np.array([[2.0, 1.0], [1.0, 2.0]]), filter=NuMethod(2.0),
                               n_steps=10, selection="holdout").fit(X.astype(np.float32), Y.astype(np.float32)),
         lambda m: m.predict(X.astype(np.float32))),
    ]
    if fast:
        return out
    out += [
        ("MultiClassClassifier(str labels)",
         MultiClassClassifier(n_steps=10, n_folds=2).fit(X, np.where(X[:, 0] > 0, "pos", "neg")),
         lambda m: m.decision_function(X)),
        ("MultiClassClassifier(int labels, simplex)",
         MultiClassClassifier(n_steps=10, n_folds=2, coding="simplex").fit(X, np.arange(16) % 3),
         lambda m: m.predict(X)),
        ("MultiTaskRegressor", MultiTaskRegressor(n_steps=10).fit(X, Y[:, 0], tasks),
         lambda m: m.predict(X, tasks)),
        ("VectorFieldRegressor", VectorFieldRegressor(n_steps=10, n_folds=2).fit(X, Y),
         lambda m: np.stack(m.predict_parts(X))),
        ("VectorFieldRegressor(independent)", VectorFieldRegressor(n_steps=10, n_folds=2, kind="independent").fit(X, Y),
         lambda m: m.predict(X)),
    ]
    return out


def _corruptions(path: str, rng, n_flips: int):
    """(name, bytes) of damaged versions of the model file at ``path``."""
    import json

    from jaxmtl.io import persistence

    data = open(path, "rb").read()
    out = [("empty file", b""), ("garbage", bytes(rng.integers(0, 256, 2000, dtype=np.uint8))),
           ("text file", b"this is not a model\n" * 20)]
    for frac in (0.05, 0.3, 0.5, 0.8, 0.99):
        out.append((f"truncated at {frac:.0%}", data[: int(len(data) * frac)]))
    out.append(("truncated by one byte", data[:-1]))
    out.append(("extra bytes appended", data + b"\0" * 7))
    for i in range(n_flips):
        pos = int(rng.integers(len(data)))
        flipped = bytearray(data)
        flipped[pos] ^= 1 << int(rng.integers(8))
        out.append((f"bit flip at byte {pos}", bytes(flipped)))

    meta, arrays = persistence.read_archive(path)

    def rewrite(name, mutate_meta=None, mutate_arrays=None):
        m, a = json.loads(json.dumps(meta)), {k: v.copy() for k, v in arrays.items()}
        if mutate_meta:
            mutate_meta(m)
        if mutate_arrays:
            mutate_arrays(a)
        tmp = path + ".rewrite"
        persistence.write_archive(m, a, tmp)
        out.append((name, open(tmp, "rb").read()))
        os.unlink(tmp)

    rewrite("wrong format name", lambda m: m.update(format="something-else"))
    rewrite("newer format version", lambda m: m.update(format_version=persistence.FORMAT_VERSION + 1))
    rewrite("format version 0", lambda m: m.update(format_version=0))
    rewrite("unknown estimator class", lambda m: m.update(estimator="os.system"))
    rewrite("missing metadata field", lambda m: m.pop("fitted"))
    def tamper(a):
        k = next(k for k in sorted(a) if a[k].dtype.kind == "f" and a[k].size)
        a[k] = a[k] + 1

    rewrite("tampered array, checksums recomputed over the file only", mutate_arrays=tamper)
    rewrite("array removed", mutate_arrays=lambda a: a.pop(sorted(a)[0]))

    def reshape(a):
        k = sorted(a)[0]
        a[k] = np.concatenate([a[k].ravel(), a[k].ravel()[:1]])

    rewrite("array shape changed", mutate_arrays=reshape)

    def unknown_kernel(m):
        m["fitted"]["kernel_"] = {"__kernel__": {"kernel": "__import__('os')"}}

    rewrite("unknown kernel name", unknown_kernel)

    def bad_kernel_param(m):
        m["fitted"]["kernel_"] = {"__kernel__": {"kernel": "Gaussian", "sigma": -1.0}}

    rewrite("invalid kernel hyperparameter", bad_kernel_param)
    rewrite("attribute name injection", lambda m: m["fitted"].update({"__class__": 1}))

    import io
    import zipfile
    buf = io.BytesIO()
    np.savez(buf, coef_=np.ones(3))
    out.append(("plain npz without metadata", buf.getvalue()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        with zf.open("__meta__.npy", "w") as f:
            np.lib.format.write_array(f, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    out.append(("pickled object array", buf.getvalue()))
    return out


def persistence(n_flips: int = 20, seed: int = 0, fast: bool = False) -> Tally:
    """Round trips of every estimator and rejection of damaged files."""
    import jaxmtl
    from jaxmtl.errors import PersistenceError

    t = Tally()
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, model, predict) in enumerate(_fitted_models(fast)):
            path = os.path.join(tmp, f"model{i}.npz")
            t.round_trips += 1
            try:
                model.save(path)
                loaded = jaxmtl.load(path)
                a, b = np.asarray(predict(model)), np.asarray(predict(loaded))
                same = a.dtype == b.dtype and np.array_equal(a, b)
            except Exception as exc:  # noqa: BLE001
                t.problems.append((f"round trip {name}", f"{type(exc).__name__}: {exc}"))
                continue
            if same:
                t.round_trips_identical += 1
            else:
                t.problems.append((f"round trip {name}", "predictions differ after loading"))
            if i > 1 and fast:
                continue
            for cname, data in _corruptions(path, rng, n_flips if i == 0 else max(2, n_flips // 4)):
                bad = os.path.join(tmp, "bad.npz")
                with open(bad, "wb") as f:
                    f.write(data)
                t.corrupted += 1
                try:
                    jaxmtl.load(bad)
                except PersistenceError:
                    t.corrupted_rejected += 1
                except Exception as exc:  # noqa: BLE001
                    t.unexpected += 1
                    t.problems.append((f"{name}: {cname}", f"unexpected {type(exc).__name__}: {exc}"))
                else:
                    t.problems.append((f"{name}: {cname}", "damaged file was loaded"))
        t.corrupted += 1
        try:
            jaxmtl.load(os.path.join(tmp, "does-not-exist.npz"))
        except PersistenceError:
            t.corrupted_rejected += 1
        # a failed save must leave an existing file intact
        path = os.path.join(tmp, "keep.npz")
        name, model, predict = _fitted_models(True)[0]
        model.save(path)
        before = open(path, "rb").read()
        model.kernel = object()  # an unsaveable parameter
        t.tried += 1
        try:
            model.save(path)
            t.failed_expectations += 1
            t.problems.append(("unsaveable model", "save did not refuse an arbitrary object"))
        except PersistenceError:
            if open(path, "rb").read() != before:
                t.failed_expectations += 1
                t.problems.append(("unsaveable model", "the previous file was modified"))
    return t


# =========================================================================== main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=int, default=300, help="fuzz trials (each: a fit and predictions)")
    parser.add_argument("--flips", type=int, default=40, help="random bit flips of a model file")
    parser.add_argument("--hostile", type=int, default=12, help="hostile-numerics cases per family")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--x64", action="store_true", help="run with jax_enable_x64 (float64)")
    parser.add_argument("--verbose", action="store_true", help="print every problem in full")
    parser.add_argument("--suites", nargs="+", choices=SUITES, default=list(SUITES),
                        help="suites to run (default: all; 'hostile' alone is the quick hostile-numerics table)")
    args = parser.parse_args(argv)
    run = set(args.suites)

    import jax

    jax.config.update("jax_enable_x64", bool(args.x64))
    import jaxmtl

    t0 = time.perf_counter()
    fz = fuzz(args.budget, args.seed) if "fuzz" in run else Tally()
    ma = must_accept() if "fuzz" in run else Tally()
    t1 = time.perf_counter()
    dg = degenerate() if "degenerate" in run else Tally()
    t2 = time.perf_counter()
    ps = persistence(args.flips, args.seed) if "persistence" in run else Tally()
    t3 = time.perf_counter()
    hs = hostile(args.hostile, args.seed) if "hostile" in run else {}
    t4 = time.perf_counter()

    print(f"jaxmtl {jaxmtl.__version__} reliability report — {'float64' if args.x64 else 'float32'} "
          f"(jax {jax.__version__}, {jax.default_backend()}), seed {args.seed}")
    if "fuzz" in run:
        print("\nFuzz (random malformed inputs and hyperparameters, every public estimator and function)")
        print(f"  trials                       {args.budget}")
        print(f"  inputs tried (calls)         {fz.tried}")
        print(f"  succeeded with finite output {fz.succeeded}")
        print(f"  rejected as documented       {fz.documented_errors}   (invalid inputs; "
              + ", ".join(f"{k} {v}" for k, v in sorted(fz.errors_by_type.items())) + ")")
        print(f"  rejected though valid        {fz.rejected_valid}   (must be 0: trials drawn only from valid choices)")
        print(f"  unexpected exceptions        {fz.unexpected}   (must be 0)")
        print(f"  non-finite results returned  {fz.non_finite}   (must be 0)")
        print("\nValid inputs that must be accepted (fit and predict)")
        print(f"  calls                        {ma.tried}")
        print(f"  accepted with finite output  {ma.succeeded}")
        print(f"  rejected though valid        {ma.rejected_valid}   (must be 0)")
        print(f"  unexpected exceptions        {ma.unexpected}   (must be 0)")
        print(f"  time (fuzz + valid inputs)   {t1 - t0:.1f} s")
    if "degenerate" in run:
        print("\nDegenerate data (each case with its documented outcome)")
        print(f"  cases                        {dg.tried}")
        print(f"  as documented                {dg.tried - dg.failed_expectations - dg.unexpected - dg.non_finite}")
        print(f"  expectation failed           {dg.failed_expectations}   (must be 0)")
        print(f"  unexpected exceptions        {dg.unexpected}   (must be 0)")
        print(f"  non-finite results returned  {dg.non_finite}   (must be 0)")
        print(f"  time                         {t2 - t1:.1f} s")
    if "persistence" in run:
        print("\nPersistence")
        print(f"  round trips                  {ps.round_trips}, identical predictions {ps.round_trips_identical}"
              f"   (must be all)")
        print(f"  corrupted files              {ps.corrupted}, rejected with PersistenceError "
              f"{ps.corrupted_rejected}   (must be all)")
        print(f"  unexpected exceptions        {ps.unexpected}   (must be 0)")
        print(f"  time                         {t3 - t2:.1f} s")
    if "hostile" in run:
        print("\nHostile numerics (well-formed inputs: scales 1e-30…1e30, offsets, duplicates, outliers,")
        print("constant columns, NaN/inf; fixed-hyperparameter estimators compared with the clean fit)")
        print(f"  {'family':18s}{'tried':>7s}{'refused':>9s}{'warned':>8s}{'handled':>9s}{'silent wrong':>14s}")
        for family, c in hs.items():
            print(f"  {family:18s}{c['tried']:7d}{c['refused']:9d}{c['warned']:8d}{c['handled']:9d}{c['wrong']:14d}")
        print(f"  time                         {t4 - t3:.1f} s   (silent wrong must be 0)")
    total = Tally().merge(fz).merge(ma).merge(dg).merge(ps)
    for family, c in hs.items():
        total.unexpected += c["wrong"]
        total.problems.extend((f"hostile {family}", detail) for detail in c["problems"])
    if total.problems:
        print("\nProblems:")
        for case, detail in total.problems:
            text = detail if args.verbose else detail.splitlines()[0][:300]
            print(f"  - {case[:200]}: {text}")
    print("\nRESULT:", "PASS" if total.ok else "FAIL")
    return 0 if total.ok else 1


if __name__ == "__main__":
    sys.exit(main())
