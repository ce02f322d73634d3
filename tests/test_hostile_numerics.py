"""Well-formed but numerically hostile inputs: refused by name, warned about, or handled — never silently wrong.

The families live in ``scripts/reliability_report.py`` (``hostile_case``), which also reports their
counts with a larger budget.
"""

import jax

jax.config.update("jax_enable_x64", True)

import warnings

import numpy as np
import pytest
from _report import load_report
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaxmtl
from jaxmtl.errors import NonFiniteError, ParameterError, RangeError, ShapeError
from jaxmtl.kernels import squared_distances

report = load_report()
CASES = report.estimator_cases()
EQUIVARIANT = report.equivariant_cases()
FAST = ("VectorValuedRegressor", "MixedEffectRegressor")
SETTINGS = settings(max_examples=5, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
LEVELS = {"scale": (-30.0, 30.0), "offset": (0.0, 12.0), "duplicates": (0.0, 0.0), "outlier": (3.0, 15.0),
          "constant_column": (-30.0, 30.0), "nonfinite": (0.0, 1.0)}


@st.composite
def hostile_draws(draw):
    family = draw(st.sampled_from(report.HOSTILE_FAMILIES))
    lo, hi = LEVELS[family]
    return (draw(st.sampled_from(range(len(EQUIVARIANT)))), family, draw(st.floats(lo, hi)),
            draw(st.sampled_from(["float32", "float64"])), draw(st.integers(0, 2**16)))


def _check(draw):
    case, family, level, dtype, seed = draw
    outcome, detail = report.hostile_case(EQUIVARIANT[case], family, level, dtype, seed)
    assert outcome in ("refused", "warned", "handled"), detail
    if outcome == "refused":  # a documented error that names what it refused
        assert detail and ("must" in detail or "holds" in detail or "need" in detail), detail


@SETTINGS
@given(draw=hostile_draws())
def test_hostile_inputs_are_refused_warned_or_handled(draw):
    _check(draw)


@pytest.mark.slow
@settings(SETTINGS, max_examples=80)
@given(draw=hostile_draws())
def test_hostile_inputs_are_refused_warned_or_handled_long(draw):
    _check(draw)


def test_hostile_report_counts_add_up_and_no_silent_wrong_answer():
    counts = report.hostile(n_per_family=1, seed=3)
    assert set(counts) == set(report.HOSTILE_FAMILIES)
    for family, c in counts.items():
        assert c["tried"] == c["refused"] + c["warned"] + c["handled"] + c["wrong"] == 1, family
        assert c["wrong"] == 0, c["problems"]


# --------------------------------------------------------------------------- float32: outlier and offset
def _outlier_and_offset(names):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    Xo = X.copy()
    Xo[0] = 1e6
    with jax.enable_x64(False), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, make, fit_args, predict in CASES:
            if name not in names:
                continue
            args = fit_args(X)[1:]
            clean = np.asarray(predict(make().fit(X, *args), X), np.float64)
            far = np.asarray(predict(make().fit(Xo, *args), X), np.float64)
            shifted = np.asarray(predict(make().fit(X + 1e8, *args), X + 1e8), np.float64)
            assert np.all(np.isfinite(far)), name
            # the outlier affects its own row, not everyone's: the others are not flattened
            assert np.std(far[1:]) > 0.5 * np.std(clean[1:]), (name, np.std(far[1:]), np.std(clean[1:]))
            # X + 1e8 (float64) is centred on the host before it is narrowed: the same fit as X
            np.testing.assert_allclose(shifted, clean, atol=1e-4 * (1 + np.abs(clean).max()), err_msg=name)


def test_float32_outlier_and_offset_leave_the_other_rows_fitted():
    _outlier_and_offset(FAST)


@pytest.mark.slow
def test_float32_outlier_and_offset_every_estimator():
    _outlier_and_offset([c[0] for c in CASES if not c[0].startswith("RLS2")])  # RLS2: see docs/errors.md


def test_rls2_warns_when_an_outlier_sets_the_standardisation():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    X[0] = 1e6
    with pytest.warns(UserWarning, match="standardize=False"):
        jaxmtl.RLS2Regressor(lam=0.1).fit(X, np.sin(X[:, 1]))


def test_squared_distances_are_accurate_next_to_an_outlier_in_float32():
    rng = np.random.default_rng(1)
    for p in (2, 8):  # the difference form and the median-shifted expansion
        X = rng.normal(size=(20, p))
        X[0] = 1e6
        with jax.enable_x64(False):
            d2 = np.asarray(squared_distances(X.astype(np.float32), X.astype(np.float32)), np.float64)
        ref = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
        np.testing.assert_allclose(d2[1:, 1:], ref[1:, 1:], rtol=1e-4, atol=1e-4 * p)
        np.testing.assert_allclose(d2[0, 1:], ref[0, 1:], rtol=1e-5)
        assert np.all(np.diag(d2) == 0)


def _sorted_shapes(jaxpr) -> list[tuple]:
    """Shapes of the operands of every sort in ``jaxpr`` and the programs nested in it."""
    shapes = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "sort":
            shapes.append(eqn.invars[0].aval.shape)
        for value in eqn.params.values():
            inner = getattr(value, "jaxpr", value)
            if hasattr(inner, "eqns"):
                shapes += _sorted_shapes(inner)
    return shapes


def test_squared_distances_shift_by_a_median_of_a_few_rows_and_stay_accurate_next_to_outliers():
    """With many rows (p > 4) the shift's median reads at most SHIFT_ROWS evenly spaced rows of X2
    (the only sort of the program: no sort of all of X2 in every prediction), and the distances
    stay as accurate as the naive ones where a tenth of the rows are far outliers."""
    from jaxmtl.kernels.scalar import SHIFT_ROWS

    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, 6))
    X[::10] += 1e4  # outliers in a tenth of the rows, evenly spread: some in the shift's sample
    Q = rng.normal(size=(7, 6))
    sorts = _sorted_shapes(jax.make_jaxpr(squared_distances)(Q, X).jaxpr)
    assert len(sorts) == 1 and sorts[0][0] <= SHIFT_ROWS, sorts
    with jax.enable_x64(False):
        d2 = np.asarray(squared_distances(Q.astype(np.float32), X.astype(np.float32)), np.float64)
    ref = ((Q[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    inliers = np.arange(3000) % 10 != 0
    np.testing.assert_allclose(d2[:, inliers], ref[:, inliers], rtol=1e-4, atol=1e-4 * 6)
    np.testing.assert_allclose(d2[:, ~inliers], ref[:, ~inliers], rtol=1e-5)


def test_narrowing_that_merges_rows_warns_and_names_dtype_float64():
    X = np.r_[[[0.0], [1.0]], np.full((9, 1), 1e9)]  # 0 and 1, 1e9 from the median: merged in float32
    with jax.enable_x64(False), pytest.warns(UserWarning, match="dtype='float64'"):
        jaxmtl.VectorValuedRegressor(filter="tikhonov", lambdas=[1e-2], n_folds=2).fit(X, np.arange(11.0))


# --------------------------------------------------------------------------- float32 arrays under x64
def _float32_arrays_in_a_float64_session(case):
    """float32 arrays are kept float32 under x64: the fit computes in float32 and predicts as the
    float64 fit does (to 1e-4 relative); scaled to a spread of 1e-20, whose squared differences
    underflow float32, they are refused by name — except by RLS2, which standardises its inputs."""
    name, make, fit_args, predict = case
    X = np.random.default_rng(0).normal(size=(24, 2))
    args = fit_args(X)[1:]
    X32 = X.astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p64 = np.asarray(predict(make().fit(X, *args), X), np.float64)
        p32 = np.asarray(predict(make().fit(X32, *args), X32), np.float64)
        np.testing.assert_allclose(p32, p64, rtol=0, atol=1e-4 * (1 + np.abs(p64).max()), err_msg=name)
        tiny = (X * 1e-20).astype(np.float32)
        if name.startswith("RLS2"):
            got = np.asarray(predict(make().fit(tiny, *args), tiny), np.float64)
            np.testing.assert_allclose(got, p32, rtol=0, atol=1e-3 * (1 + np.abs(p32).max()), err_msg=name)
        else:
            with pytest.raises(RangeError, match=r"X holds values within .* float32 squared differences .*"
                                                 r"dtype='float64'"):
                make().fit(tiny, *args)


@pytest.mark.parametrize("name", ["RLS2Classifier", "KernelMachineClassifier"])
def test_float32_arrays_in_a_float64_session(name):
    _float32_arrays_in_a_float64_session(next(c for c in CASES if c[0] == name))


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_float32_arrays_in_a_float64_session_every_estimator(case):
    _float32_arrays_in_a_float64_session(case)


@pytest.mark.parametrize("x64", [False, True])
def test_inputs_whose_squared_differences_underflow_are_refused_by_every_estimator(x64):
    """A spread of 1e-20 in float32 (1e-160 in float64): refused before anything is computed."""
    X = np.random.default_rng(1).normal(size=(12, 2))
    scale, dtype = (1e-160, np.float64) if x64 else (1e-20, np.float32)
    with jax.enable_x64(x64):
        for name, make, fit_args, _ in CASES:
            if name.startswith("RLS2"):
                continue
            with pytest.raises(RangeError, match=f"X holds values within .* in {np.dtype(dtype).name}"):
                make().fit((X * scale).astype(dtype), *fit_args(X)[1:])


# --------------------------------------------------------------------------- range checks by name
@pytest.mark.parametrize("call, error, match", [
    (lambda X, y: jaxmtl.VectorValuedRegressor().fit(X * 1e200, y), RangeError, r"X holds finite values up to .*float64"),
    (lambda X, y: jaxmtl.VectorValuedRegressor().fit(X, y * 1e300), RangeError, "y holds finite values"),
    (lambda X, y: jaxmtl.VectorValuedRegressor(filter="tikhonov", lambdas=[1e300]).fit(X, y), ParameterError,
     "lambdas must lie in"),
    (lambda X, y: jaxmtl.VectorValuedRegressor(kernel=jaxmtl.Gaussian(1e-200)), ParameterError, "sigma must lie in"),
    (lambda X, y: jaxmtl.KernelMachine(C=1e300).fit(X, y), ValueError, "C (must lie in|holds finite)"),
    (lambda X, y: jaxmtl.MixedEffectRegressor(lam=1e-320, alpha=0.5).fit(X, y, np.arange(20) % 2), ParameterError,
     "lam must lie in"),
    (lambda X, y: jaxmtl.MixedEffectRegressor(lams=[0.1, "a"]).fit(X, y, np.arange(20) % 2), ValueError, "lams"),
    (lambda X, y: jaxmtl.VectorValuedRegressor(n_steps=10**12).fit(X, y), ParameterError, "n_steps must be"),
    (lambda X, y: jaxmtl.VectorFieldRegressor().fit(X[:1], X[:1]), ShapeError, "at least 2 samples"),
])
def test_out_of_range_values_are_refused_by_name(call, error, match):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))
    with pytest.raises(error, match=match):
        call(X, np.sin(X[:, 0]))


def test_a_finite_1e200_in_float32_is_not_called_nan():
    with jax.enable_x64(False), pytest.raises(NonFiniteError) as info:
        jaxmtl.VectorValuedRegressor().fit(np.array([[1e200], [0.0], [1.0]]), np.ones(3))
    assert "NaN" not in str(info.value) and "dtype='float64'" in str(info.value) and "1e+200" in str(info.value)


def test_approximate_regressor_default_adapts_n_components_to_small_n():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    model = jaxmtl.ApproximateKernelRegressor(n_steps=10, n_folds=2).fit(X, np.sin(X[:, 0]))
    assert model.n_components_ == 30
    with pytest.raises(ParameterError, match="n_components"):
        jaxmtl.ApproximateKernelRegressor(n_components=31).fit(X, np.sin(X[:, 0]))


def test_report_hostile_suite_alone_prints_the_counts_and_fails_on_a_silent_wrong_answer(capsys, monkeypatch):
    """``--suites hostile`` runs only the hostile families; a silent wrong answer makes it fail."""
    called = []
    for suite in ("fuzz", "must_accept", "degenerate", "persistence"):
        monkeypatch.setattr(report, suite, lambda *a, s=suite: called.append(s))
    counts = {"tried": 3, "refused": 1, "warned": 0, "handled": 1, "wrong": 1, "problems": ["X: wrong"]}
    monkeypatch.setattr(report, "hostile", lambda n, seed: {"outlier": counts})
    x64 = bool(jax.config.jax_enable_x64)
    try:
        assert report.main(["--suites", "hostile"]) == 1
    finally:
        jax.config.update("jax_enable_x64", x64)
    out = capsys.readouterr().out
    assert not called and "Fuzz" not in out and "Persistence" not in out
    assert "family              tried  refused  warned  handled  silent wrong" in out
    assert "  outlier                 3        1       0        1             1" in out and "RESULT: FAIL" in out


# --------------------------------------------------------------------------- an explicit dtype wins
@pytest.mark.parametrize("case", [c for c in CASES if "dtype" in c[1]().get_params()], ids=lambda c: c[0])
def test_explicit_float64_computes_float32_arrays_in_float64(case):
    """dtype='float64' on float32 arrays: the fit is the float64 fit of the same values (without the
    request, float32 arrays stay float32 and the two differ in float32's digits)."""
    name, make, fit_args, predict = case
    X = np.random.default_rng(0).normal(size=(24, 2)).astype(np.float32)
    args = fit_args(X.astype(np.float64))[1:]
    with warnings.catch_warnings(), jax.enable_x64(False):
        warnings.simplefilter("ignore")
        wide = np.asarray(predict(make().set_params(dtype="float64").fit(X.astype(np.float64), *args), X), np.float64)
        got = np.asarray(predict(make().set_params(dtype="float64").fit(X, *args), X), np.float64)
    np.testing.assert_allclose(got, wide, rtol=1e-12, atol=1e-12 * (1 + np.abs(wide).max()), err_msg=name)
