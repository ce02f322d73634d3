"""libsvm's SMO for the hinge and ε-insensitive losses (jaxmtl.solvers.smo) against scikit-learn's SVC /
SVR, scipy.optimize on the primal, and the fixed-point and coordinate-descent solvers."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from test_solvers import EPS, scipy_optimum, small  # noqa: E402
from jaxmtl.errors import LabelError, ParameterError  # noqa: E402
from jaxmtl.operators import SeparableOperator  # noqa: E402
from jaxmtl.solvers import coordinate_descent, fixed_point, smo, smo_path  # noqa: E402

TIGHT = 1e-10  # maximal KKT violation


def test_hinge_with_intercept_matches_svc():
    from sklearn.svm import SVC

    _, K, labels, _ = small(n=40, seed=3, width=1.0)
    svc = SVC(kernel="precomputed", C=2.0, tol=1e-10).fit(K, labels)
    r = smo(K, labels, 2.0, tol=TIGHT)
    assert bool(r.converged) and r.coef.shape == (40,)
    np.testing.assert_allclose(K @ np.asarray(r.coef) + float(r.intercept), svc.decision_function(K), atol=1e-4)
    dual = np.zeros(40)
    dual[svc.support_] = svc.dual_coef_[0]
    np.testing.assert_allclose(np.asarray(r.coef), dual, atol=1e-4)
    assert abs(float(r.intercept) - svc.intercept_[0]) < 1e-4
    assert abs(float(np.sum(r.coef))) < 1e-12  # Σ c = 0 kept exactly by the pair updates
    assert float(r.gap) <= 1e-6 * float(r.primal)


def test_epsilon_insensitive_with_intercept_matches_svr():
    from sklearn.svm import SVR

    _, K, _, target = small(n=40, seed=4, width=1.0)
    svr = SVR(kernel="precomputed", C=3.0, epsilon=EPS, tol=1e-10).fit(K, target)
    r = smo(K, target, 3.0, loss="epsilon_insensitive", epsilon=EPS, tol=TIGHT)
    np.testing.assert_allclose(K @ np.asarray(r.coef) + float(r.intercept), svr.predict(K), atol=1e-4)
    assert np.all(np.abs(np.asarray(r.coef)) <= 3.0 + 1e-12) and abs(float(np.sum(r.coef))) < 1e-12


SLOW = pytest.mark.slow  # compilations of further shapes / solvers: outside the default run


@pytest.mark.parametrize("loss, intercept", [("hinge", True), pytest.param("hinge", False, marks=SLOW),
                                             pytest.param("epsilon_insensitive", True, marks=SLOW),
                                             pytest.param("epsilon_insensitive", False, marks=SLOW)])
def test_primal_equals_scipy_optimum(loss, intercept):
    _, K, labels, target = small()
    y = labels if loss == "hinge" else target
    r = smo(K, y, 1.5, loss=loss, epsilon=EPS, fit_intercept=intercept, tol=TIGHT)
    ref = scipy_optimum(loss, K, y, 1.5, intercept=intercept)
    assert abs(float(r.primal) - ref) <= 1e-6 * abs(ref)
    assert float(r.residual) < 1e-6  # the fixed point of (2.7) with the intercept inside f


@SLOW
@pytest.mark.parametrize("loss", ["hinge", "epsilon_insensitive"])
def test_agrees_with_fixed_point_and_coordinate_descent(loss):
    _, K, labels, target = small(width=0.5)
    y = labels if loss == "hinge" else target
    fp = fixed_point(K, y, 2.0, loss=loss, epsilon=EPS, fit_intercept=True, tol=1e-12)
    s = smo(K, y, 2.0, loss=loss, epsilon=EPS, tol=TIGHT)
    assert abs(float(s.primal) - float(fp.primal)) <= 1e-8 * float(fp.primal)
    cd = coordinate_descent(K, y, 2.0, loss=loss, epsilon=EPS, tol=1e-12)
    s0 = smo(K, y, 2.0, loss=loss, epsilon=EPS, fit_intercept=False, tol=TIGHT)
    assert abs(float(s0.primal) - float(cd.primal)) <= 1e-8 * float(cd.primal)
    assert float(s0.intercept) == 0.0


def test_float32_gram_with_float64_sums():
    _, K, labels, _ = small(n=40, seed=5, width=1.0)
    ref = smo(K, labels, 1.0, tol=1e-8)
    r = smo(jnp.asarray(K, jnp.float32), labels, 1.0, tol=1e-8, dtype=jnp.float64)
    assert r.coef.dtype == jnp.float64 and bool(r.converged)
    f, f_ref = (K @ np.asarray(x.coef) + float(x.intercept) for x in (r, ref))
    np.testing.assert_allclose(f, f_ref, atol=1e-5)  # the Gram's rounding (≈ 6e-8) times ‖c‖₁


@SLOW
def test_independent_outputs_through_a_diagonal_output_matrix():
    _, K, labels, target = small()
    Y = np.c_[labels, -labels, np.sign(target + 0.1)]
    a = np.array([1.0, 0.5, 2.0])
    r = smo(SeparableOperator(jnp.asarray(K), jnp.diag(a)), Y, 1.0, tol=TIGHT)
    assert r.coef.shape == (14, 3) and r.intercept.shape == (3,)
    for j in range(3):  # output j is the SVM on a_jj·K
        ref = smo(a[j] * K, Y[:, j], 1.0, tol=TIGHT)
        np.testing.assert_allclose(np.asarray(r.coef[:, j]), np.asarray(ref.coef), atol=1e-9)
        assert abs(float(r.intercept[j]) - float(ref.intercept)) < 1e-9


@pytest.mark.parametrize("loss", ["hinge", pytest.param("epsilon_insensitive", marks=SLOW)])
def test_path_equals_independent_solves(loss):
    _, K, labels, target = small(width=0.5)
    y = labels if loss == "hinge" else target
    Cs = np.array([4.0, 0.5, 1.0])  # solved ascending, warm-started, returned in the given order
    masks = np.ones((2, 14), bool)
    masks[0, :5] = False
    masks[1, 5:10] = False
    r = smo_path(K, y, Cs, loss=loss, epsilon=EPS, tol=TIGHT, masks=masks)
    assert r.coef.shape == (2, 3, 14, 1) and r.intercept.shape == (2, 3, 1)
    for k in range(2):
        for i, C in enumerate(Cs):
            ref = smo(K[np.ix_(masks[k], masks[k])], y[masks[k]], C, loss=loss, epsilon=EPS, tol=TIGHT)
            np.testing.assert_allclose(np.asarray(r.coef[k, i, masks[k], 0]), np.asarray(ref.coef), atol=1e-8)
            assert abs(float(r.intercept[k, i, 0]) - float(ref.intercept)) < 1e-7
            assert np.all(np.asarray(r.coef[k, i, ~masks[k]]) == 0.0)  # held-out rows stay out


def test_non_convergence_is_reported():
    _, K, labels, _ = small()
    r = smo(K, labels, 100.0, max_iter=3, tol=1e-12)
    assert not bool(r.converged) and int(r.n_iter) == 3 and float(r.gap) > 0


@pytest.mark.parametrize("op, kwargs, error, match", [
    ("K", dict(Y=np.array([0.0, 1.0] * 7)), LabelError, "-1 / \\+1"),
    ("K", dict(C=0.0), ParameterError, "C must be positive"),
    ("K", dict(epsilon=-0.1, loss="epsilon_insensitive"), ParameterError, "epsilon"),
    ("K", dict(loss="square"), ParameterError, "smo solves the losses"),
    ("K", dict(tol=0.0), ParameterError, "tol"),
    ("K", dict(max_iter=0), ParameterError, "max_iter"),
    ("K", dict(dtype=np.int32), ParameterError, "dtype"),
    ("coupled", {}, ParameterError, "A diagonal"),
])
def test_bad_input_raises_before_tracing(op, kwargs, error, match):
    _, K, labels, _ = small()
    if op == "coupled":
        op, kwargs = SeparableOperator(jnp.asarray(K), jnp.array([[1.0, 0.5], [0.5, 1.0]])), {"Y": np.c_[labels, labels]}
    else:
        op = K
    kwargs = {"Y": labels, "C": 1.0, **kwargs}
    with pytest.raises(error, match=match):
        smo(op, kwargs.pop("Y"), kwargs.pop("C"), **kwargs)


def test_argmax_without_64_bit_integers_is_the_first_maximum():
    from jaxmtl.solvers.smo import _argmax

    rng = np.random.default_rng(0)
    ties = np.round(rng.normal(size=50), 1)  # repeated values: the first index of the maximum
    masked = np.where(rng.random(50) < 0.5, -np.inf, rng.normal(size=50))
    with jax.enable_x64(False):
        assert jnp.zeros(()).dtype == jnp.float32
        for x in (rng.normal(size=37), ties, masked, np.full(5, -np.inf)):
            x = x.astype(np.float32)
            i, v = jax.jit(_argmax)(jnp.asarray(x))
            assert int(i) == int(np.argmax(x)) and float(v) == float(x.max())
