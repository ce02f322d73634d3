"""Tests of jaxmtl.datasets: bundled real data and the synthetic problems."""

import numpy as np
import pytest

from jaxmtl.datasets import (
    SCHOOL_STUDENT_COLUMNS,
    TOY_TASK_WEIGHTS,
    grid_2d,
    ida_names,
    load_ida,
    load_mulan,
    load_school,
    make_multitask_toy,
    mulan_names,
    multitask_toy_function,
    parse_arff,
    vector_field_1,
    vector_field_2,
)
from jaxmtl.errors import DTypeError, ParameterError, ShapeError

# ----------------------------------------------------------------------------- School


def test_school_student_features():
    d = load_school()
    assert d.X.shape == (15362, 19)
    assert d.y.shape == (15362,) and d.tasks.shape == (15362,)
    assert d.X.dtype == np.float64 and d.y.dtype == np.float64
    assert np.issubdtype(d.tasks.dtype, np.integer)
    assert np.array_equal(np.unique(d.tasks), np.arange(139))
    assert set(np.unique(d.X).tolist()) == {0.0, 1.0}
    assert len(d.feature_names) == 19
    assert d.y.min() >= 1 and d.y.max() <= 70
    assert abs(d.y.mean() - 20.60) < 0.01
    assert "School" in d.description
    # one-hot groups: year (3) and gender (2) sum to one for every student
    assert np.all(d.X[:, 0:3].sum(1) == 1)
    assert np.all(d.X[:, 3:5].sum(1) == 1)


def test_school_all_columns():
    d = load_school(student_features_only=False)
    assert d.X.shape == (15362, 28)
    assert len(d.feature_names) == 28
    assert np.all(d.X[:, 27] == 1.0)  # bias
    assert np.array_equal(d.X[:, list(SCHOOL_STUDENT_COLUMNS)], load_school().X)
    assert np.all(np.isfinite(d.X)) and np.all(np.isfinite(d.y))


# ----------------------------------------------------------------------------- IDA

IDA_SIZES = {
    "banana": (2, 400, 4900),
    "breast_cancer": (9, 200, 77),
    "german": (20, 700, 300),
    "heart": (13, 170, 100),
    "image": (18, 1300, 1010),
    "titanic": (3, 150, 2051),
}


def test_ida_names():
    assert set(ida_names()) == set(IDA_SIZES)


@pytest.mark.parametrize("name", sorted(IDA_SIZES))
def test_ida_splits(name):
    d, n_train, n_test = IDA_SIZES[name]
    splits = load_ida(name)
    assert len(splits) == 10
    for Xtr, ytr, Xte, yte in splits:
        assert Xtr.shape == (n_train, d) and Xte.shape == (n_test, d)
        assert ytr.shape == (n_train,) and yte.shape == (n_test,)
        assert set(np.unique(ytr)) == {-1.0, 1.0}
        assert set(np.unique(yte)) <= {-1.0, 1.0}
        assert np.all(np.isfinite(Xtr)) and np.all(np.isfinite(Xte))
    one = load_ida(name, split=3)
    for a, b in zip(one, splits[3]):
        assert np.array_equal(a, b)
    # splits differ from each other
    assert not np.array_equal(splits[0].X_train, splits[1].X_train)


def test_ida_bad_arguments():
    with pytest.raises(ParameterError, match="banana"):
        load_ida("nope")
    with pytest.raises(ParameterError):
        load_ida("heart", split=10)
    with pytest.raises(ParameterError):
        load_ida("heart", split=1.5)
    with pytest.raises(ParameterError, match="n_splits"):
        load_ida("heart", n_splits=11)
    with pytest.raises(ParameterError, match="not both"):
        load_ida("heart", split=0, n_splits=3)
    assert load_ida("Breast-Cancer", split=0).X_train.shape == (200, 9)


def test_ida_first_realisations():
    """n_splits returns the first realisations, equal to those of the full list."""
    first, every = load_ida("titanic", n_splits=3), load_ida("titanic")
    assert len(first) == 3
    for a, b in zip(first, every[:3]):
        assert all(np.array_equal(u, v) for u, v in zip(a, b))


# ----------------------------------------------------------------------------- Mulan

MULAN_SHAPES = {
    "enb": (768, 8, 2),
    "jura": (359, 15, 3),
    "slump": (103, 7, 3),
    "edm": (154, 16, 2),
    "wq": (1060, 16, 14),
    "atp1d": (337, 411, 6),
    "osales": (639, 401, 12),   # shapes from the provenance note
    "scpf": (1137, 23, 3),
    "sf1": (323, 10, 3),
}


def test_mulan_names():
    assert set(mulan_names()) == set(MULAN_SHAPES)


@pytest.mark.parametrize("name", sorted(MULAN_SHAPES))
def test_mulan_shapes(name):
    n, p, k = MULAN_SHAPES[name]
    X, Y, features, targets = load_mulan(name)
    assert X.shape == (n, p) and Y.shape == (n, k)
    assert X.dtype == np.float64 and Y.dtype == np.float64
    assert len(features) == p and len(targets) == k
    assert np.all(np.isfinite(X)) and np.all(np.isfinite(Y))


def test_mulan_jura_targets():
    assert load_mulan("jura").target_names == ["Cd", "Co", "Cu"]


def test_mulan_bad_name():
    with pytest.raises(ParameterError, match="enb"):
        load_mulan("rf1")


# ----------------------------------------------------------------------------- ARFF parser

ARFF_TEXT = """% a comment line
%
@RELATION 'toy relation'

@attribute 'first value' NUMERIC
@Attribute colour {red, 'light green', blue}
@ATTRIBUTE "y" real
% another comment
@data
1.5, red, 3
-2e-1,'light green',4.25
% comment inside data
?, blue, 0
"""


def test_parse_arff():
    d = parse_arff(ARFF_TEXT)
    assert d.relation == "toy relation"
    assert d.names == ["first value", "colour", "y"]
    assert d.nominal == {"colour": ("red", "light green", "blue")}
    assert d.data.shape == (3, 3)
    np.testing.assert_array_equal(d.data[:2], [[1.5, 0.0, 3.0], [-0.2, 1.0, 4.25]])
    assert np.isnan(d.data[2, 0]) and d.data[2, 1] == 2.0 and d.data[2, 2] == 0.0


def test_parse_arff_errors():
    header = "@relation r\n@attribute a numeric\n@attribute b numeric\n@data\n"
    with pytest.raises(ShapeError):
        parse_arff(header + "1,2,3\n")
    with pytest.raises(ParameterError):
        parse_arff(header + "{0 1, 1 2}\n")
    with pytest.raises(DTypeError):
        parse_arff(header + "1,abc\n")
    with pytest.raises(DTypeError):
        parse_arff("@relation r\n@attribute s string\n@data\n'x'\n")
    with pytest.raises(ParameterError):
        parse_arff("@relation r\n@attribute c {a,b}\n@data\nz\n")
    with pytest.raises(ParameterError):
        parse_arff("@relation r\n@attribute a numeric\n")


# ----------------------------------------------------------------------------- toy problem


def test_toy_multitask_shapes_and_noise():
    d = make_multitask_toy(2000, rng=np.random.default_rng(0))
    assert d.x.shape == (8000, 1) and d.tasks.shape == (8000,) and d.y.shape == (8000,)
    assert d.f.shape == (8000,)
    assert np.array_equal(np.bincount(d.tasks), [2000] * 4)
    assert np.all((d.x >= 0) & (d.x <= 1))
    # different inputs per task
    assert not np.array_equal(d.x[d.tasks == 0], d.x[d.tasks == 1])
    np.testing.assert_allclose(d.f, multitask_toy_function(d.x, d.tasks))
    resid = d.y - d.f
    assert abs(resid.var() - 0.01) < 0.001
    assert abs(resid.mean()) < 0.005


def test_toy_vector_setting_and_counts():
    d = make_multitask_toy(50, rng=1, setting="vector", noise_var=0.0)
    xs = [d.x[d.tasks == t] for t in range(4)]
    for x in xs[1:]:
        assert np.array_equal(x, xs[0])
    np.testing.assert_array_equal(d.y, d.f)
    m = make_multitask_toy([3, 5, 7, 9], rng=2)
    assert np.array_equal(np.bincount(m.tasks), [3, 5, 7, 9])
    # reproducible from an int seed
    a, b = make_multitask_toy(10, rng=5), make_multitask_toy(10, rng=5)
    assert np.array_equal(a.y, b.y)


def test_toy_function_formula():
    x = np.linspace(0, 1, 11)
    for t in range(4):
        bumps = sum(
            TOY_TASK_WEIGHTS[t, k] * np.exp(-((x - c) ** 2) / (2 * 0.1**2))
            for k, c in enumerate([0.05, 0.4, 0.7])
        )
        np.testing.assert_allclose(
            multitask_toy_function(x, t), np.sin(2 * np.pi * x) + 0.6 * bumps
        )
    assert TOY_TASK_WEIGHTS.shape == (4, 3)
    W = np.ones((2, 3))
    d = make_multitask_toy(4, rng=0, task_weights=W)
    assert set(d.tasks.tolist()) == {0, 1}


def test_toy_bad_arguments():
    with pytest.raises(ParameterError):
        make_multitask_toy(10, rng=0, setting="matrix")
    with pytest.raises(ParameterError):
        make_multitask_toy(10, rng=0, noise_var=-1)
    with pytest.raises(ParameterError):
        make_multitask_toy([1, 2, 3, 4], rng=0, setting="vector")
    with pytest.raises(ShapeError):
        make_multitask_toy(10, rng=0, task_weights=np.ones((4, 2)))
    with pytest.raises(ParameterError):
        multitask_toy_function(np.zeros(3), 4)


# ----------------------------------------------------------------------------- vector fields


def _fd_derivatives(field_fn, size=401, low=-2.0, high=2.0):
    """Central finite differences of a 2-D field on a fine grid: returns d v^i / d x^j."""
    pts = grid_2d(size, low, high)
    v = field_fn(pts).reshape(size, size, 2)  # axis 0 = x¹, axis 1 = x²
    h = (high - low) / (size - 1)
    d1 = np.gradient(v, h, axis=0)  # ∂/∂x¹
    d2 = np.gradient(v, h, axis=1)  # ∂/∂x²
    sl = (slice(1, -1), slice(1, -1))  # interior, central differences only
    return d1[sl], d2[sl], np.abs(v).max()


def test_field1_curl_and_divergence():
    d1, d2, _ = _fd_derivatives(lambda p: vector_field_1(p)[1])
    curl = d1[..., 1] - d2[..., 0]
    div_cf = d1[..., 0] + d2[..., 1]
    d1, d2, _ = _fd_derivatives(lambda p: vector_field_1(p)[2])
    div = d1[..., 0] + d2[..., 1]
    curl_df = d1[..., 1] - d2[..., 0]
    assert np.abs(curl).max() < 1e-3
    assert np.abs(div).max() < 1e-3
    # and the parts are not trivially zero in the other operator
    assert np.abs(div_cf).max() > 1.0 and np.abs(curl_df).max() > 1.0


def test_field1_combination():
    pts = grid_2d(70)
    assert pts.shape == (4900, 2)
    for gamma in (0.0, 0.3, 1.0):
        v, cf, df = vector_field_1(pts, gamma=gamma)
        assert v.shape == cf.shape == df.shape == (4900, 2)
        np.testing.assert_allclose(v, gamma * cf + (1 - gamma) * df)
    v, cf, df = vector_field_1(pts, gamma=1.0)
    np.testing.assert_allclose(v, cf)
    np.testing.assert_allclose(df, np.stack([-cf[:, 1], cf[:, 0]], axis=1))
    # curl-free part is the gradient of the 5-Gaussian potential
    centres = np.array([[0, 0], [1, 0], [0, 1], [-1, 0], [0, -1]], float)

    def phi(p):
        return np.exp(-((p[:, None, :] - centres) ** 2).sum(-1) / 0.9).sum(1)

    h = 1e-6
    grad = np.stack(
        [(phi(pts + h * e) - phi(pts - h * e)) / (2 * h) for e in np.eye(2)], axis=1
    )
    np.testing.assert_allclose(cf, grad, atol=1e-6)
    with pytest.raises(ParameterError):
        vector_field_1(pts, gamma=1.5)
    with pytest.raises(ShapeError):
        vector_field_1(np.zeros((3, 3)))


def test_field2_formula():
    pts = grid_2d(70)
    v = vector_field_2(pts)
    assert v.shape == (4900, 2)
    x1, x2 = pts[:, 0], pts[:, 1]
    env = np.exp(-(x1**2 + x2**2) / (2 * 1.2**2))
    np.testing.assert_allclose(v[:, 0], 2 * np.sin(3 * x1) * np.sin(1.5 * x2) * env)
    np.testing.assert_allclose(v[:, 1], 2 * np.cos(1.5 * x1) * np.cos(3 * x2) * env)


def test_grid_2d():
    g = grid_2d(5, -1, 1)
    assert g.shape == (25, 2)
    assert g.min() == -1 and g.max() == 1
    assert len(np.unique(g, axis=0)) == 25
    with pytest.raises(ParameterError):
        grid_2d(0)
