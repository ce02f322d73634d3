"""KernelMachine / KernelMachineClassifier against scikit-learn's SVC / SVR and explicit references."""

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.svm import SVC, SVR  # noqa: E402

from _reference import gaussian_gram  # noqa: E402
from jaxmtl.errors import LabelError, NotFittedError, ParameterError  # noqa: E402
from jaxmtl.kernels import Gaussian  # noqa: E402
from jaxmtl.models.kernel_machine import KernelMachine, KernelMachineClassifier  # noqa: E402

SIGMA = 1.0
GAMMA = 1.0 / (2 * SIGMA**2)  # scikit-learn's RBF exp(−γ‖x − x'‖²)


def data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.where(X[:, 0] + 0.4 * rng.normal(size=n) > 0, "yes", "no")
    t = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=n)
    return X, y, t


def test_binary_classifier_matches_svc():
    X, y, _ = data()
    ours = KernelMachineClassifier(C=2.0, kernel=Gaussian(SIGMA), tol=1e-10).fit(X, y)
    svc = SVC(C=2.0, gamma=GAMMA, tol=1e-10).fit(X, y)
    Xt = data(15, seed=1)[0]
    np.testing.assert_allclose(ours.decision_function(Xt), svc.decision_function(Xt), atol=1e-4)
    assert ours.predict(Xt).tolist() == svc.predict(Xt).tolist()
    assert ours.classes_.tolist() == ["no", "yes"] and ours.predict(Xt).dtype == y.dtype
    assert ours.score(X, y) == pytest.approx(svc.score(X, y))
    assert ours.converged_ and ours.coef_.shape == (40, 1) and ours.intercept_.shape == (1,)


def test_regressor_epsilon_insensitive_matches_svr():
    X, _, t = data()
    ours = KernelMachine(loss="epsilon_insensitive", C=3.0, epsilon=0.1, kernel=Gaussian(SIGMA), tol=1e-10).fit(X, t)
    svr = SVR(C=3.0, epsilon=0.1, gamma=GAMMA, tol=1e-10).fit(X, t)
    np.testing.assert_allclose(ours.predict(X), svr.predict(X), atol=1e-4)
    assert ours.predict(X).shape == (40,)
    assert ours.score(X, t) == pytest.approx(svr.score(X, t), abs=1e-6)


def test_coef_defines_the_prediction_with_the_output_matrix():
    X, _, t = data()
    Y = np.c_[t, np.cos(X[:, 1])]
    A = np.array([[1.0, 0.5], [0.5, 1.0]])
    m = KernelMachine(loss="huber", C=1.0, epsilon=0.5, kernel=Gaussian(SIGMA), output=A, tol=1e-10).fit(X, Y)
    Xt = data(7, seed=2)[0]
    ref = gaussian_gram(Xt, X, SIGMA) @ m.coef_ @ A + m.intercept_  # f(x) = Σ K(x, xᵢ) A cᵢ + b
    np.testing.assert_allclose(m.predict(Xt), ref, atol=1e-10)
    np.testing.assert_allclose(m.coef_.sum(axis=0), 0.0, atol=1e-8)  # optimality of the intercept


def test_multiclass_is_one_vs_all_svms_with_identity_output():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(45, 2))
    y = np.argmax(X @ np.array([[1.0, -1.0, 0.0], [0.0, 1.0, -1.0]]) + 0.3 * rng.normal(size=(45, 3)), axis=1)
    ours = KernelMachineClassifier(C=1.0, kernel=Gaussian(SIGMA), tol=1e-10).fit(X, y)
    F = ours.decision_function(X)
    assert F.shape == (45, 3)
    for k in range(3):  # each output is the binary SVM of class k against the rest
        svc = SVC(C=1.0, gamma=GAMMA, tol=1e-10).fit(X, np.where(y == k, 1, -1))
        np.testing.assert_allclose(F[:, k], svc.decision_function(X), atol=1e-4)
    assert ours.predict(X).tolist() == np.argmax(F, axis=1).tolist()


def test_C_selection_by_kfold_matches_an_explicit_loop():
    X, y, _ = data(30)
    Cs = [0.1, 10.0]
    m = KernelMachineClassifier(kernel=Gaussian(SIGMA), Cs=Cs, n_folds=3, tol=1e-8, fit_intercept=False).fit(X, y)
    from jaxmtl.selection import kfold_masks

    masks = kfold_masks(30, 3, 0)
    errs = []
    for C in Cs:
        e = []
        for mk in masks:
            ref = KernelMachineClassifier(C=C, kernel=Gaussian(SIGMA), tol=1e-8, fit_intercept=False).fit(X[mk], y[mk])
            e.append(np.mean(ref.predict(X[~mk]) != y[~mk]))
        errs.append(np.mean(e))
    np.testing.assert_allclose(m.cv_scores_, errs, atol=1e-12)
    assert m.C_ == Cs[int(np.argmin(errs))]


def test_solvers_agree_inside_the_estimator():
    X, y, _ = data()
    fp = KernelMachineClassifier(C=1.0, kernel=Gaussian(0.5), fit_intercept=False, solver="fixed_point",
                                 tol=1e-10).fit(X, y)
    cd = KernelMachineClassifier(C=1.0, kernel=Gaussian(0.5), fit_intercept=False, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(fp.decision_function(X), cd.decision_function(X), atol=1e-4)


def test_non_convergence_warns():
    X, y, _ = data()
    from sklearn.exceptions import ConvergenceWarning

    with pytest.warns(ConvergenceWarning, match="did not converge"):
        m = KernelMachineClassifier(C=100.0, max_iter=2, tol=1e-12).fit(X, y)
    assert not m.converged_ and m.n_iter_ == 2


def test_bad_input():
    X, y, t = data()
    with pytest.raises(LabelError, match="-1 / \\+1"):
        KernelMachine(loss="hinge", C=1.0).fit(X, np.where(y == "yes", 1.0, 0.0))
    with pytest.raises(ParameterError, match="C must be positive"):
        KernelMachine(C=0.0).fit(X, t)
    with pytest.raises(ParameterError, match="C must be positive"):
        KernelMachine(C=-2.0).fit(X, t)
    with pytest.raises(ParameterError, match="epsilon"):
        KernelMachine(loss="epsilon_insensitive", C=1.0, epsilon=-0.1).fit(X, t)
    with pytest.raises(ParameterError, match="loss must be one of"):
        KernelMachine(loss="svm", C=1.0).fit(X, t)
    with pytest.raises(ParameterError, match="solver"):
        KernelMachine(solver="newton", C=1.0).fit(X, t)
    with pytest.raises(ParameterError, match="intercept"):
        KernelMachine(solver="coordinate_descent", C=1.0).fit(X, t)
    with pytest.raises(LabelError, match=r"single class \(0\.0\).*one class"):  # scikit-learn looks for "one class"
        KernelMachineClassifier(C=1.0).fit(X, np.zeros(40))
    with pytest.raises(NotFittedError):
        KernelMachine().predict(X)
    # scikit-learn's wording for too few samples ("n_samples=1"), before any fold is drawn
    with pytest.raises(ParameterError, match="n_folds=3 folds need at least 3 samples; received n_samples=2"):
        KernelMachine(n_folds=3).fit(X[:2], t[:2])


def test_sklearn_conventions():
    X, y, _ = data()
    m = KernelMachineClassifier(C=1.0, kernel=Gaussian(SIGMA))
    assert m.get_params()["C"] == 1.0 and not hasattr(m, "coef_")  # __init__ only stores
    assert clone(m).get_params() == m.get_params()
    assert m.fit(X, y) is m and m.n_features_in_ == 2
    # a regressor has predict only: no decision_function / predict_proba (scikit-learn's convention)
    reg = KernelMachine(C=1.0).fit(X, np.where(y == "yes", 1.0, -1.0))
    assert not any(hasattr(reg, f) for f in ("decision_function", "predict_proba", "predict_log_proba"))


@pytest.mark.slow
@pytest.mark.parametrize("script", ["repro_svm_multioutput.py", "perf_solvers.py"])
def test_benchmark_quick_mode_runs(script, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "JAXMTL_RESULTS_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, str(root / "benchmarks" / script), "--quick"], env=env, cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
