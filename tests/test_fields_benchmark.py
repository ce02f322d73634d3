"""The fields part of the defaults benchmark (benchmarks/_defaults_fields.py): its new fields have the structure they
claim, and its plain div/curl grid uses the kernels VectorFieldRegressor uses."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxmtl.datasets import grid_2d, vector_field_2
from jaxmtl.operators.fields import field_operator

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def structured():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("defaults_fields_under_test", BENCH / "_defaults_fields.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(BENCH))
    return mod


def _divergence_and_curl(name, structured, x, h=1e-5):
    """Central differences of the field at the points x (m, 2): (div, curl) (m,)."""
    f = lambda z: structured.new_field(name, z)
    dx, dy = np.array([h, 0.0]), np.array([0.0, h])
    Jx, Jy = (f(x + dx) - f(x - dx)) / (2 * h), (f(x + dy) - f(x - dy)) / (2 * h)
    return Jx[:, 0] + Jy[:, 1], Jx[:, 1] - Jy[:, 0]


def test_the_grid_gram_is_the_estimators_operator(structured):
    X = np.random.default_rng(0).normal(size=(6, 2))
    Z = np.random.default_rng(1).normal(size=(4, 2))
    for sigma, gamma in ((0.7, 0.3), (1.5, 0.0), (0.4, 1.0)):
        dense = np.asarray(field_operator(Z, X, sigma, gamma).as_matrix())
        assert np.allclose(structured._div_curl_gram(Z, X, sigma, [gamma])[0], dense, atol=1e-5 * np.abs(dense).max())


def test_new_fields_have_their_stated_parts(structured):
    x = np.random.default_rng(2).uniform(-1.5, 1.5, (50, 2))
    div, curl = _divergence_and_curl("vortex", structured, x)
    assert np.abs(div).max() < 1e-6 and np.abs(curl).max() > 0.1  # a rotation: divergence-free, curl
    div, curl = _divergence_and_curl("div_curl_sum", structured, x)
    assert np.abs(div).max() > 0.1 and np.abs(curl).max() > 0.1  # both parts present
    t = np.pi / 6
    R = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    for i in (0, 7, 31):  # v(x) = R v₂(Rᵀ x), point by point
        assert np.allclose(structured.new_field("field_2_rotated", x[i:i + 1])[0], R @ vector_field_2((R.T @ x[i])[None])[0])
    with pytest.raises(ValueError, match="unknown field"):
        structured.new_field("nope", x)


def test_the_plain_grid_recovers_a_field_of_its_own_kernel(structured):
    # a field drawn from the div/curl kernel at a width and γ of the grid: its selection and refit
    # predict it at new points far better than the field's own size
    X = grid_2d(7, -1.5, 1.5)
    rng = np.random.default_rng(3)
    centres = rng.uniform(-1.5, 1.5, (8, 2))
    sigma = np.median(np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))[np.triu_indices(len(X), 1)])
    coef = rng.normal(size=16)
    field = lambda Z: (structured._div_curl_gram(Z, centres, sigma, [0.3])[0] @ coef).reshape(len(Z), 2)
    Z = rng.uniform(-1.2, 1.2, (30, 2))
    for dtype in (np.float64, np.float32):  # the user's NumPy grid, and the same grid in the default's precision
        predict = structured.div_curl_grid(X, field(X), dtype=dtype)
        assert predict(Z).dtype == dtype
        assert np.sqrt(np.mean((predict(Z) - field(Z)) ** 2)) < 0.05 * np.sqrt(np.mean(field(Z) ** 2))
    assert structured._div_curl_gram(X.astype(np.float32), centres.astype(np.float32), sigma, [0.3]).dtype == np.float32


def test_a_grid_claim_passes_within_one_paired_standard_error(structured):
    row = {"set": "vortex", "points": 40, "ours_angular": 1.3, "grid_angular": 1.0, "ours_minus_grid_se": 0.4}
    claim = structured._grid_claim(row, "grid", "the grid's")
    assert claim["pass"] and claim["value"] == pytest.approx(1.3)
    assert not structured._grid_claim({**row, "ours_minus_grid_se": 0.2}, "grid", "the grid's")["pass"]
    row64 = {**row, "ours64_angular": 0.9, "ours64_minus_grid_se": 0.01}
    claim = structured._grid_claim(row64, "grid", "the grid's", ours="ours64")
    assert claim["pass"] and claim["value"] == pytest.approx(0.9) and "dtype='float64'" in claim["claim"]


def test_mixed_fields_weigh_a_curl_free_and_a_divergence_free_part_as_stated(structured):
    # the two mixed fields are w·c + (1 − w)·g of the same parts c, g: solved back from the pair,
    # c has no curl and g no divergence, each of largest speed 1 on the benchmark's grid
    (a, wa), (b, wb) = structured.MIXED_WEIGHTS.items()
    det = wa * (1 - wb) - wb * (1 - wa)

    def parts(z):
        va, vb = structured.new_field(a, z), structured.new_field(b, z)
        return ((1 - wb) * va - (1 - wa) * vb) / det, (wa * vb - wb * va) / det

    x = np.random.default_rng(4).uniform(-1.5, 1.5, (50, 2))
    h, dx, dy = 1e-5, np.array([1e-5, 0.0]), np.array([0.0, 1e-5])
    for k, (no, some) in enumerate(((1, 0), (0, 1))):  # curl-free part: no curl; divergence-free part: no divergence
        Jx, Jy = (parts(x + dx)[k] - parts(x - dx)[k]) / (2 * h), (parts(x + dy)[k] - parts(x - dy)[k]) / (2 * h)
        div, curl = Jx[:, 0] + Jy[:, 1], Jx[:, 1] - Jy[:, 0]
        assert np.abs((div, curl)[no]).max() < 1e-6 and np.abs((div, curl)[some]).max() > 0.1
    speeds = [np.linalg.norm(p, axis=1).max() for p in parts(grid_2d(70))]
    assert speeds == pytest.approx([1.0, 1.0], abs=1e-3)
    assert np.array_equal(structured.new_field(f"{a} (noisy)", x), structured.new_field(a, x))  # noise: training only


def _explicit_grid_errors(structured, X, V, cv=5, seed=0):
    """(widths, γ, λ) fold errors of the plain grid by one explicit solve per point and fold (float64)."""
    n, p = V.shape
    folds = np.array_split(np.random.default_rng(seed).permutation(n), cv)
    d = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))[np.triu_indices(n, 1)]
    widths = np.median(d) * structured.GRID_WIDTH_FACTORS
    errors = np.zeros((len(widths), len(structured.GRID_GAMMAS), len(structured.GRID_LAMBDAS)))
    for i, s in enumerate(widths):
        for j, g in enumerate(structured.GRID_GAMMAS):
            for held in folds:
                train = np.setdiff1d(np.arange(n), held)
                G = structured._div_curl_gram(X[train], X[train], s, [g])[0]
                H = structured._div_curl_gram(X[held], X[train], s, [g])[0]
                for k, lam in enumerate(structured.GRID_LAMBDAS):
                    c = np.linalg.solve(G + len(train) * lam * np.eye(len(G)), V[train].ravel())
                    errors[i, j, k] += ((H @ c - V[held].ravel()) ** 2).sum()
    return widths, errors


def test_the_plain_grid_records_the_point_of_least_fold_error(structured):
    # the (width, γ, λ) the grid reports is the argmin of its fold errors computed by explicit solves
    rng = np.random.default_rng(5)
    X = rng.uniform(-1.5, 1.5, (12, 2))
    V = structured.new_field("curl_heavy", X) + 0.05 * rng.normal(size=(12, 2))  # noisy: λ well above float32's floor
    widths, errors = _explicit_grid_errors(structured, X, V)
    iw, ig, il = np.unravel_index(np.argmin(errors), errors.shape)
    expected = {"width": widths[iw], "gamma": structured.GRID_GAMMAS[ig], "lambda": structured.GRID_LAMBDAS[il]}
    for dtype in (np.float64, np.float32):
        chosen = structured.div_curl_grid(X, V, dtype=dtype).selected
        if dtype == np.float64:
            assert chosen == pytest.approx(expected, rel=1e-6)
        else:  # float32: the chosen point's explicit (float64) fold error within 1 % of the least
            at = (np.argmin(np.abs(widths - chosen["width"])),
                  np.argmin(np.abs(structured.GRID_GAMMAS - chosen["gamma"])),
                  np.argmin(np.abs(np.log(structured.GRID_LAMBDAS / chosen["lambda"]))))
            assert errors[at] <= 1.01 * errors.min()
