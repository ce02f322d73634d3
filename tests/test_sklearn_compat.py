"""The estimators inside scikit-learn's own tools: check_estimator on every exported estimator (in the
run's precision: float64, or float32 in the default configuration), clone, Pipeline, GridSearchCV,
cross_val_score (stratified folds for classifiers), DataFrames with feature names."""

import inspect
import re

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")

from _estimators import NAMES, as_xy
from conftest import PRECISION
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.model_selection import GridSearchCV, StratifiedKFold, check_cv, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from jaxmtl import MultiClassClassifier, VectorValuedRegressor
from jaxmtl.errors import NotFittedError

# Short paths keep the ~50 fits of each check suite quick; the defaults are exercised elsewhere.
FAST = {"n_steps": 30, "width_factors": (0.5, 1.0, 2.0)}

# Checks an estimator cannot pass, with the reason (scikit-learn's convention for third-party
# estimators); docs/precision.md tabulates them per estimator and precision. None today: the
# batch-invariance checks pass in float32 too, predictions running in fixed-size row blocks
# (jaxmtl.models._row_blocks: a row's prediction is bit for bit the same whatever its batch).
EXPECTED_FAILED_CHECKS: dict[str, dict[str, str]] = {"float64": {}, "float32": {}}


# scikit-learn's checks set n_components=1, which random features (cosine-sine pairs, an even number)
# refuse: check_estimator sees Nyström, the default approximation, on every row (its sets are small).
CHECK_PARAMS = {"ApproximateKernelRegressor": {"approximation": "nystrom", "n_components": None}}


def _checked(name):
    return as_xy(name, **CHECK_PARAMS.get(name, {}))


def _expected_failed(estimator):
    return EXPECTED_FAILED_CHECKS[PRECISION]


# The two estimators of the README's first examples run their checks in every run; the others' ~50
# fits each (about 1 to 3 minutes per estimator on two cores) run with `-m slow`, in either precision.
CORE = ("VectorValuedRegressor", "MultiClassClassifier")


@parametrize_with_checks([_checked(name) for name in CORE], expected_failed_checks=_expected_failed)
def test_check_estimator(estimator, check):
    check(estimator)


@pytest.mark.slow
@parametrize_with_checks([_checked(name) for name in NAMES if name not in CORE],
                         expected_failed_checks=_expected_failed)
def test_check_estimator_all(estimator, check):
    check(estimator)


def regression(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * np.array([1.0, 10.0, 100.0])
    Y = np.c_[np.sin(X[:, 0]) + X[:, 1] / 10, X[:, 2] / 100] + 0.05 * rng.normal(size=(n, 2))
    return X, Y


def blobs(n_per=20, seed=0, labels=("cat", "dog", "eel")):
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0], [3, 0], [0, 3]])[: len(labels)]
    X = np.concatenate([c + rng.normal(size=(n_per, 2)) for c in centres])
    return X, np.repeat(np.array(labels), n_per)


def test_estimator_types_are_recognised():
    assert is_regressor(VectorValuedRegressor())
    assert is_classifier(MultiClassClassifier())
    X, y = blobs()
    assert isinstance(check_cv(5, y, classifier=is_classifier(MultiClassClassifier())), StratifiedKFold)


def test_clone_keeps_parameters_and_drops_fit():
    model = VectorValuedRegressor(n_steps=20, omegas=[0.0, 0.5])
    X, Y = regression()
    model.fit(X, Y)
    copy = clone(model)
    assert copy.get_params()["n_steps"] == 20 and copy.get_params()["omegas"] == [0.0, 0.5]
    with pytest.raises(NotFittedError):
        copy.predict(X)


def test_pipeline_with_scaler_matches_manual_scaling():
    X, Y = regression()
    pipe = make_pipeline(StandardScaler(), VectorValuedRegressor(**FAST)).fit(X, Y)
    Xs = StandardScaler().fit(X).transform(X)
    manual = VectorValuedRegressor(**FAST).fit(Xs, Y)
    np.testing.assert_allclose(pipe.predict(X[:5]), manual.predict(Xs[:5]), rtol=1e-10, atol=1e-12)


def test_cross_val_score_is_finite_for_regressor_and_stratified_for_classifier():
    X, Y = regression()
    scores = cross_val_score(make_pipeline(StandardScaler(), VectorValuedRegressor(**FAST)), X, Y, cv=3)
    assert np.all(np.isfinite(scores)) and scores.mean() > 0.5
    X, y = blobs()
    clf_scores = cross_val_score(MultiClassClassifier(**FAST), X, y, cv=3)
    # the same folds scikit-learn would use: stratified, so each fold holds every class
    manual = []
    for train, test in StratifiedKFold(3).split(X, y):
        manual.append(MultiClassClassifier(**FAST).fit(X[train], y[train]).score(X[test], y[test]))
    np.testing.assert_allclose(clf_scores, manual)


def test_grid_search_over_an_estimator_parameter():
    X, Y = regression()
    grid = GridSearchCV(make_pipeline(StandardScaler(), VectorValuedRegressor(**FAST)),
                        {"vectorvaluedregressor__output": ["independent", "common_similarity"]}, cv=3)
    grid.fit(X, Y)
    assert np.all(np.isfinite(grid.cv_results_["mean_test_score"]))
    best = int(np.argmax(grid.cv_results_["mean_test_score"]))
    assert grid.best_params_ == grid.cv_results_["params"][best]


def test_dataframe_inputs_record_feature_names():
    pd = pytest.importorskip("pandas")
    X, Y = regression()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    model = VectorValuedRegressor(**FAST).fit(frame, Y)
    assert list(model.feature_names_in_) == ["a", "b", "c"] and model.n_features_in_ == 3
    np.testing.assert_allclose(model.predict(frame), VectorValuedRegressor(**FAST).fit(X, Y).predict(X))
    with pytest.raises(ValueError, match="feature names"):
        model.predict(frame.rename(columns={"a": "z"}))
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        model.predict(X)


@pytest.mark.parametrize("labels", [("cat", "dog", "eel"), (3, 7, 11), (True, False)])
def test_classifier_labels_keep_y_dtype_and_probabilities_agree(labels):
    X, y = blobs(labels=labels)
    clf = MultiClassClassifier(**FAST).fit(X, y)
    pred = clf.predict(X)
    assert pred.dtype == y.dtype and clf.classes_.dtype == y.dtype
    np.testing.assert_array_equal(clf.classes_, np.unique(y))
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.classes_[np.argmax(proba, axis=1)], pred)
    dec = clf.decision_function(X)
    if len(labels) == 2:
        assert dec.shape == (len(y),)
        np.testing.assert_array_equal(np.where(dec > 0, clf.classes_[1], clf.classes_[0]), pred)
    else:
        assert dec.shape == (len(y), len(labels))
    assert clf.score(X, y) > 0.8


def test_multitask_regressor_with_metadata_routing_equals_manual_folds():
    from sklearn.model_selection import KFold

    from jaxmtl import MultiTaskRegressor
    from jaxmtl.datasets import make_multitask_toy

    toy = make_multitask_toy(20, rng=0)
    X = toy.x.reshape(len(toy.x), -1)
    cv = KFold(3, shuffle=True, random_state=0)
    with sklearn.config_context(enable_metadata_routing=True):
        est = MultiTaskRegressor(n_steps=30).set_fit_request(tasks=True).set_score_request(tasks=True)
        scores = cross_val_score(est, X, toy.y, params={"tasks": toy.tasks}, cv=cv)
    manual = [MultiTaskRegressor(n_steps=30).fit(X[tr], toy.y[tr], toy.tasks[tr]).score(X[te], toy.y[te], toy.tasks[te])
              for tr, te in cv.split(X)]
    np.testing.assert_allclose(scores, manual)


def _sklearn_twin(cls):
    """A class deriving from scikit-learn's own base classes with ``cls``'s routed methods and tag
    changes: what ``cls`` was before the estimators implemented scikit-learn's protocol themselves."""
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

    from jaxmtl.models._base import ROUTED_METHODS
    from jaxmtl.models._base import ClassifierMixin as OwnClassifier

    classifier = issubclass(cls, OwnClassifier)

    def tags(self):
        t = super(twin, self).__sklearn_tags__()
        t.input_tags.allow_nan, t.target_tags.required = False, True
        if not classifier:
            t.target_tags.single_output = t.target_tags.multi_output = True
        return t

    methods = {m: getattr(cls, m) for m in ROUTED_METHODS if hasattr(cls, m)}
    twin = type(cls.__name__, (ClassifierMixin if classifier else RegressorMixin, BaseEstimator),
                {**methods, "__sklearn_tags__": tags, "__init__": lambda self: None})
    return twin


@pytest.mark.parametrize("name", NAMES)
def test_tags_and_metadata_requests_equal_scikit_learns_own_classes(name):
    import jaxmtl.models as M
    from sklearn.utils import get_tags
    from sklearn.utils.metadata_routing import get_routing_for_object

    cls = getattr(M, name)
    ours, twin = cls(), _sklearn_twin(cls)()
    assert get_tags(ours) == get_tags(twin)
    assert is_classifier(ours) == is_classifier(twin) and is_regressor(ours) == is_regressor(twin)
    setters = sorted(n for n in dir(twin) if n.startswith("set_") and n.endswith("_request"))
    assert sorted(n for n in dir(ours) if n.startswith("set_") and n.endswith("_request")) == setters
    with sklearn.config_context(enable_metadata_routing=True):
        assert repr(get_routing_for_object(ours)) == repr(get_routing_for_object(twin))
        for setter in setters:  # request every metadata argument of the method, then alias the first
            arguments = [p.name for p in inspect.signature(getattr(twin, setter)).parameters.values()
                         if p.kind == p.KEYWORD_ONLY]
            for est in (ours, twin):
                getattr(est, setter)(**{a: True for a in arguments})
                getattr(est, setter)(**{arguments[0]: "alias"})
        assert repr(get_routing_for_object(ours)) == repr(get_routing_for_object(twin))
        assert repr(get_routing_for_object(clone(ours))) == repr(get_routing_for_object(ours))
        for setter in setters:  # an argument the method does not take is refused by name, as scikit-learn does
            for est in (ours, twin):
                with pytest.raises(TypeError, match=re.escape("Unexpected args: {'not_an_argument'}")):
                    getattr(est, setter)(not_an_argument=True)
        assert repr(get_routing_for_object(ours)) == repr(get_routing_for_object(twin))  # nothing changed by it
    for setter in setters:  # outside routing, as scikit-learn's own
        with pytest.raises(RuntimeError, match="metadata routing is enabled"):
            getattr(ours, setter)()
