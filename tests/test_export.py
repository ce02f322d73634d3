"""jaxmtl.export: fitted models as serialized StableHLO artefacts, loaded and run in a Python process
that never imports jaxmtl, on two row counts, against predict / decision_function / the predictor;
and the argument checks that run before anything is traced."""

import jax
import numpy as np
import pytest
from _artefacts import load_in_fresh_process

import jaxmtl
from jaxmtl import Gaussian, MultiClassClassifier, MultiTaskRegressor, VectorValuedRegressor
from jaxmtl.errors import DTypeError, NotFittedError, ParameterError, ShapeError

def data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.c_[np.sin(X[:, 0]), X[:, 1] ** 2 - X[:, 2]]


SMALL = dict(kernel=Gaussian(1.5), filter="tikhonov", lambdas=[1e-3])  # one fit, no search: fast compiles


def models():
    """name -> (fitted model or predictor, what its artefact must equal at X (m, d) in float64).
    Models fitted in the run's precision, plus a float64 and a float32 one whatever the run."""
    X, Y = data()
    coupled = VectorValuedRegressor(**SMALL, omegas=[0.5], family="common_similarity").fit(X, Y)
    independent = VectorValuedRegressor(**SMALL, family="independent").fit(X, Y)
    clf = MultiClassClassifier(**SMALL).fit(X, np.digitize(X[:, 0], [-0.5, 0.5]))  # three classes
    independent64 = VectorValuedRegressor(**SMALL, family="independent", dtype="float64").fit(X, Y)
    return {
        "coupled": (coupled, coupled.predict),
        "independent": (independent, independent.predict),
        "classifier": (clf, clf.decision_function),  # three classes: the scores are decision_function
        "independent_float64": (independent64, independent64.predict),  # exported with x64 off
        "independent_as_float32": (independent64.predictor().astype("float32"), independent64.predict),
    }


def test_artefacts_run_without_jaxmtl_on_any_row_count_and_equal_the_models(tmp_path):
    cases = models()
    inputs = {"few": data(7, seed=1)[0], "many": data(13, seed=2)[0]}
    predictors = {}
    for name, (model, _) in cases.items():
        previous = jax.config.jax_enable_x64
        jax.config.update("jax_enable_x64", previous and name != "independent_float64")
        try:
            exported = jaxmtl.export(model, inputs["few"], path=tmp_path / f"{name}.jaxexport")
        finally:
            jax.config.update("jax_enable_x64", previous)
        predictors[name] = model if isinstance(model, jaxmtl.models.Predictor) else model.predictor()
        dtype = predictors[name].dtype
        assert exported.in_avals[0].dtype == dtype and exported.out_avals[0].dtype == dtype
        assert str(exported.in_avals[0].shape) == "(n, 3)"
    report, outputs = load_in_fresh_process(tmp_path, {name: "x" for name in cases},
                                            {f"x/{key}": X for key, X in inputs.items()})
    assert report["jaxmtl"] is False and report["equinox"] is False
    assert all(p == ["cpu", "cuda"] for p in report["platforms"].values())
    for name, (model, reference) in cases.items():
        predictor = predictors[name]
        float64 = predictor.dtype == "float64"
        for key, X in inputs.items():
            F = outputs[f"{name}/{key}"]
            assert F.shape == (len(X), 3 if name == "classifier" else 2)
            with jax.enable_x64(float64):
                direct = np.asarray(predictor(X), np.float64)
            scale = 1.0 + np.abs(direct).max()
            # the same function compiled twice: equal to a few roundoffs of the working precision
            np.testing.assert_allclose(F, direct, rtol=0, atol=(1e-12 if float64 else 1e-5) * scale, err_msg=name)
            # and the model's own prediction, computed by its estimator's code (float32: to its roundoff
            # on sums of terms up to |K||C||A|)
            size = np.abs(np.asarray(predictor.coef, np.float64)).sum(0).max() + scale
            np.testing.assert_allclose(F, reference(X), rtol=0, atol=(1e-10 if float64 else 1e-5) * size, err_msg=name)
            if name == "classifier":
                np.testing.assert_array_equal(model.classes_[F.argmax(1)], model.predict(X))


def test_bad_arguments_are_refused_before_tracing(tmp_path):
    X, Y = data()
    with pytest.raises(NotFittedError):
        jaxmtl.export(VectorValuedRegressor(), X)
    model = VectorValuedRegressor(**SMALL, omegas=[0.5], family="common_similarity").fit(X, Y)
    with pytest.raises(ShapeError, match=r"example_input must have shape \(m, 3\).*received shape \(3,\)"):
        jaxmtl.export(model, X[0])
    with pytest.raises(ShapeError, match=r"received shape \(5, 2\)"):
        jaxmtl.export(model, X[:5, :2])
    with pytest.raises(DTypeError, match="example_input must hold real numbers"):
        jaxmtl.export(model, np.array([["a", "b", "c"]]))
    with pytest.raises(NotFittedError):
        jaxmtl.export(MultiTaskRegressor(), X)
    with pytest.raises(ParameterError, match="online mixed-effect Server has no fixed prediction function"):
        jaxmtl.export(jaxmtl.mixed_effect.Server(0.5, 0.1, Gaussian(1.0)), X)
    with pytest.raises(ParameterError, match="model_or_predictor must be a fitted jaxmtl estimator"):
        jaxmtl.export(lambda x: x, X)
    with pytest.raises(ParameterError, match="platforms must be distinct names"):
        jaxmtl.export(model, X, platforms=("cpu", "gpu"))
    with pytest.raises(ParameterError, match="path must name a file in an existing folder"):
        jaxmtl.export(model, X, path=tmp_path / "missing" / "model.jaxexport")
    approximate = jaxmtl.ApproximateKernelRegressor(n_components=10, **SMALL).fit(X, Y)
    with pytest.raises(ShapeError, match=r"received shape \(5, 2\)"):  # a feature map's p is checked too
        jaxmtl.export(approximate, X[:5, :2])
    # a ShapeDtypeStruct is an example too; one platform on request
    exported = jaxmtl.export(model.predictor(), jax.ShapeDtypeStruct((4, 3), np.float32), platforms="cpu")
    assert exported.platforms == ("cpu",)
