"""Every estimator that predicts, exported: fitted (cheaply here; with its defaults in the ``long``
test), serialized, loaded in ONE fresh interpreter that never imports jaxmtl nor equinox, called
on two row counts — with the rows' task codes for the multi-task models — and compared with
``predict`` (or the decision scores). The new predictor kinds also under ``jit``, ``vmap``,
``grad`` with respect to the inputs (against central differences) and equinox serialisation;
unknown task codes refused eagerly and mapped as documented when traced."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _artefacts import load_in_fresh_process
from conftest import X64

import jaxmtl
from jaxmtl import Gaussian
from jaxmtl.datasets import grid_2d, vector_field_1
from jaxmtl.errors import TaskError
from jaxmtl.models import KernelPredictor, PerOutputPredictor, Predictor
from jaxmtl.models.predictor_kinds import FeaturePredictor, FieldPredictor, TaskPredictor

ROWS = {"few": 7, "many": 13}
RLS2_KERNELS = [Gaussian(1.0), Gaussian(3.0), jaxmtl.kernels.Polynomial(2)]  # a small dictionary: fast compiles
G = Gaussian(1.5)
TIK = dict(filter="tikhonov", lambdas=[1e-3], selection="holdout")  # one fit: no search, one hold-out


def data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.c_[np.sin(X[:, 0]), X[:, 1] ** 2 - X[:, 2]], rng.integers(0, 3, n)


def field_data(side=6):
    X = grid_2d(side)
    return X, vector_field_1(X, 0.3)[0]


def estimators(defaults):
    """name -> (estimator, "fit arguments": 'xy', 'xyt', 'xlabels', 'field'). Cheap settings (one
    hyperparameter, no search), or every estimator with its defaults."""
    J = jaxmtl
    cheap = {
        "vector_valued": J.VectorValuedRegressor(kernel=G, omegas=[0.5], family="common_similarity", **TIK),
        "vector_valued_nystrom": J.VectorValuedRegressor(kernel=G, approximation="nystrom", n_components=12, **TIK),
        "multiclass": J.MultiClassClassifier(kernel=G, **TIK),
        "output_kernel": J.OutputKernelRegressor(kernel=G, lambdas=[1e-2], selection="holdout"),
        "output_kernel_classifier": J.OutputKernelClassifier(kernel=G, lambdas=[1e-2], selection="holdout"),
        "approximate_nystrom": J.ApproximateKernelRegressor(kernel=G, n_components=12, **TIK),
        "approximate_random_features": J.ApproximateKernelRegressor(kernel=G, approximation="random_features",
                                                                    n_components=12, **TIK),
        "multitask": J.MultiTaskRegressor(kernel=G, omegas=[0.5], family="common_similarity", **TIK),
        "multitask_independent": J.MultiTaskRegressor(kernel=G, family="independent", **TIK),
        "mixed_effect": J.MixedEffectRegressor(alpha=0.5, lam=0.01, kernel=G),
        "vector_field": J.VectorFieldRegressor(kernel=Gaussian(0.5), kind="div_curl", gammas=[0.5], **TIK),
        "kernel_machine": J.KernelMachine(C=1.0, kernel=G),
        "kernel_machine_classifier": J.KernelMachineClassifier(C=1.0, kernel=G),
        "rls2": J.RLS2Regressor(kernels=RLS2_KERNELS, lam=0.1),
        "rls2_classifier": J.RLS2Classifier(kernels=RLS2_KERNELS, lam=0.1),
    }
    chosen = {name: type(est)() for name, est in cheap.items()} if defaults else cheap
    if defaults:  # the approximate routes at their defaults: the approximation named
        chosen["vector_valued_nystrom"] = J.VectorValuedRegressor(approximation="nystrom")
        chosen["approximate_random_features"] = J.ApproximateKernelRegressor(approximation="random_features")
        chosen["multitask_independent"] = J.MultiTaskRegressor(family="independent")
    return chosen


def fit(name, estimator):
    """(fitted model, inputs key, reference function of (X, task labels or None))."""
    X, Y, t = data()
    labels = np.digitize(X[:, 0], [-0.5, 0.5])
    if name.startswith(("multitask", "mixed_effect")):
        model = estimator.fit(X, Y[:, 0], t)
        return model, "x", lambda Z, tasks: model.predict(Z, tasks)
    if name == "vector_field":
        model = estimator.fit(*field_data())
        return model, "field", lambda Z, tasks: model.predict(Z)
    if "classifier" in name or name == "multiclass":
        model = estimator.fit(X, labels)
        return model, "x", lambda Z, tasks: model.decision_function(Z)
    model = estimator.fit(X, Y)
    return model, "x", lambda Z, tasks: model.predict(Z)


def inputs():
    out = {}
    for key, m in ROWS.items():
        X, _, codes = data(m, seed=m)
        out[f"x/{key}"], out[f"codes/{key}"] = X, codes
        out[f"field/{key}"] = np.random.default_rng(m).uniform(-1, 1, (m, 2))
    return out


def term_scale(f, X):
    """(m,) Σ over the prediction's terms of their magnitudes, per row, in float64: the scale of
    its roundoff (large coefficients of both signs cancel in the sum)."""
    with jax.enable_x64(True):
        f = f.astype("float64")
        Z = jnp.asarray(X, jnp.float64)
        Z = Z if getattr(f, "input_offset", None) is None else Z - f.input_offset
        if isinstance(f, FeaturePredictor):  # φ = raw(x) T: Nyström's whitening T sums terms of both signs too
            fm, R = f.feature_map, jnp.abs(f.feature_map.raw(Z))
            R = R if fm.transform is None else R @ jnp.abs(fm.transform)
            return np.asarray(R @ jnp.abs(f.coef @ f.output_matrix)).max(1)
        if isinstance(f, FieldPredictor):  # |Γ(x, xᵢ)| ≤ (1 + ‖x − xᵢ‖²/σ²)/σ² entrywise, p × p blocks
            r2 = jnp.sum((Z[:, None] - f.X_fit[None]) ** 2, -1) / f.kernel.sigma ** 2
            bound = (1 + r2) * jnp.exp(-r2 / 2) / f.kernel.sigma ** 2 * Z.shape[1]
            return np.asarray(bound @ jnp.abs(f.coef).max(1))
        if isinstance(f, TaskPredictor):
            K = jnp.abs(f.X_fit[None, :, 0] * 0 + 1)  # Gaussian kernels: every |k| ≤ 1
            return np.asarray(K @ jnp.abs(f.coef)) + np.abs(np.asarray(f.task_offset)).max()
        assert isinstance(f, KernelPredictor)
        K = jnp.abs(f.kernel(Z, f.X_fit))
        K = K.max(0) if isinstance(f, PerOutputPredictor) else K
        return np.asarray((K @ jnp.abs(f.coef) @ jnp.abs(f.output_matrix)).max(1) + jnp.abs(f.offset).max())


@functools.cache
def cheap_fits():
    """name -> fit(name, estimator) of every cheap estimator, fitted once per run."""
    return {name: fit(name, estimator) for name, estimator in estimators(False).items()}


def export_and_compare(tmp_path, defaults):
    arrays = inputs()
    fitted, keys = {}, {}
    fits = {name: fit(name, est) for name, est in estimators(True).items()} if defaults else cheap_fits()
    for name, (model, key, reference) in fits.items():
        exported = jaxmtl.export(model, arrays[f"{key}/few"], path=tmp_path / f"{name}.jaxexport")
        assert len(exported.in_avals) == (2 if name.startswith(("multitask", "mixed")) else 1), name
        fitted[name], keys[name] = (model, model.predictor(), reference), key
    report, outputs = load_in_fresh_process(tmp_path, keys, arrays)
    assert report["jaxmtl"] is False and report["equinox"] is False
    eps = np.finfo(np.float64 if X64 else np.float32).eps
    for name, (model, f, reference) in fitted.items():
        assert f.dtype == ("float64" if X64 else "float32")
        for key in ROWS:
            X, codes = arrays[f"{keys[name]}/{key}"], arrays[f"codes/{key}"]
            F = outputs[f"{name}/{key}"]
            expected = np.asarray(reference(X, model.tasks_[codes] if hasattr(model, "tasks_") else None), np.float64)
            expected = expected.reshape(F.shape)  # (m,) predictions of 1-D models are the (m, 1) column
            scale = term_scale(f, X)[:, None]
            # float64: 1e-9 relative to the sum's terms; float32: the roundoff bound of the sum of
            # n terms (its unit roundoff × the terms' magnitudes, × a small constant)
            bound = (1e-9 if X64 else 20 * eps * np.sqrt(len(np.asarray(model.coef_).reshape(-1)))) * scale
            assert np.all(np.abs(F - expected) <= bound + 1e-300), (name, key, float(np.abs(F - expected).max()),
                                                                     float(bound.min()))
            if hasattr(model, "classes_"):  # the scores' rule gives predict's class
                rule = (F[:, 0] >= 0).astype(int) if F.shape[1] == 1 else F.argmax(1)
                np.testing.assert_array_equal(model.classes_[rule], model.predict(X), err_msg=name)


def test_every_estimator_exports_and_its_artefact_runs_without_jaxmtl(tmp_path):
    export_and_compare(tmp_path, defaults=False)


@pytest.mark.long
def test_every_estimator_fitted_with_its_defaults_exports(tmp_path):
    export_and_compare(tmp_path, defaults=True)


def new_kinds():
    """One fitted model of each new predictor kind, cheap: name -> (model, X, codes or None)."""
    out = {}
    for name in ("approximate_random_features", "multitask", "multitask_independent", "mixed_effect", "vector_field",
                 "kernel_machine", "rls2_classifier"):
        model, key, _ = cheap_fits()[name]
        X = inputs()[f"{key}/few"]
        out[name] = (model, X, inputs()["codes/few"] if name.startswith(("multitask", "mixed")) else None)
    return out


def test_new_predictor_kinds_under_jit_vmap_grad_and_equinox_serialisation(tmp_path):
    for name, (model, X, codes) in new_kinds().items():
        f = model.predictor()
        assert isinstance(f, Predictor), name
        args = (X,) if codes is None else (X, codes)
        call = jax.jit(lambda g, *a: g(*a))
        F = np.asarray(call(f, *args))
        one = jax.vmap(lambda *a: f(*a))(*args)  # one row at a time: (p,) (and a scalar code) → (d,)
        np.testing.assert_allclose(one, F, rtol=1e-6, atol=1e-6 * (1 + np.abs(F).max()), err_msg=name)
        eqx.tree_serialise_leaves(tmp_path / f"{name}.eqx", f)
        loaded = eqx.tree_deserialise_leaves(tmp_path / f"{name}.eqx", f)
        np.testing.assert_array_equal(np.asarray(call(loaded, *args)), F, err_msg=name)
        with jax.enable_x64(True):  # gradient of Σ f with respect to the inputs against central differences
            g64, x, h = f.astype("float64"), np.asarray(X[0], np.float64), 1e-6
            extra = () if codes is None else (jnp.asarray(codes[0]),)
            grad = np.asarray(jax.grad(lambda z: g64(z, *extra).sum())(x))
            fd = [(float(g64(x + h * e, *extra).sum()) - float(g64(x - h * e, *extra).sum())) / (2 * h)
                  for e in np.eye(len(x))]
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-7, err_msg=name)


def test_unknown_task_codes_are_refused_eagerly_and_mapped_as_documented_when_traced():
    X = data()[0]
    mt, me = cheap_fits()["multitask"][0], cheap_fits()["mixed_effect"][0]
    Z, codes = X[:3], np.array([0, 5, -1])
    for model in (mt, me):
        with pytest.raises(TaskError, match=r"codes 0 … 2 of the fitted tasks.*\[5, -1\]"):
            model.predictor()(Z, codes)
    F = np.asarray(jax.jit(lambda f, *a: f(*a))(mt.predictor(), Z, codes))[:, 0]
    assert np.isfinite(F[0]) and np.isnan(F[1:]).all()  # predict refuses an unknown task: NaN marks it
    F = np.asarray(jax.jit(lambda f, *a: f(*a))(me.predictor(), Z, codes))[:, 0]
    # the mixed-effect model gives a task not seen in fit the average task, as its predict does
    np.testing.assert_allclose(F, me.predict(Z, np.array([0, "unseen", "unseen"], object)), rtol=1e-5, atol=1e-6)
