"""docs/extending.md runs as written — its Python blocks in order, in one namespace — and the
extension points it describes hold against independent references: a kernel of one's own fitted,
chosen from a list, saved and loaded, refused on load when its class is not registered; a filter
registered by name equal to a dense eigendecomposition of K ⊗ A filtered by g; ``family_``
truthful for a user's output matrix and a registered family; registrations that would replace
jaxmtl's own pieces refused."""

import pathlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmtl

# one fit against another of the same model (batched vs alone): roundoff of the working precision
TIGHT = 1e-6 if jax.config.read("jax_enable_x64") else 1e-4
from jaxmtl.errors import OutputMatrixError, ParameterError, PersistenceError
from jaxmtl.io import registry
from jaxmtl.kernels import Kernel
from jaxmtl.kernels.scalar import squared_distances

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "extending.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", PAGE.read_text(), flags=re.S | re.M)


def _gaussian(X1, X2, sigma):
    return np.exp(-((X1[:, None] - X2[None]) ** 2).sum(-1) / (2 * sigma**2))


@jaxmtl.register_kernel
class InverseQuadric(Kernel):
    """K = 1 / (1 + ‖x − x'‖² / c²): a kernel jaxmtl does not define."""

    c: jax.Array

    def __init__(self, c=1.0):
        self.c = jnp.asarray(jaxmtl.checks.check_positive(c, "c"))

    def __call__(self, X1, X2):
        return 1.0 / (1.0 + squared_distances(X1, X2) / self.c**2)


@jaxmtl.register_filter("exponential_cutoff")
class ExponentialCutoff(jaxmtl.filters.SpectralFilter):
    """g_λ(σ) = (1 − e^{−σ/λ}) / σ."""

    def __call__(self, sigma, param, tau=None):
        x = sigma / param
        return jnp.where(x > 0, -jnp.expm1(-x) / jnp.where(x > 0, sigma, 1.0), 1.0 / param)


def _data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 2))
    return X, np.c_[np.sin(2 * X[:, 0]), np.cos(X[:, 1])]


@pytest.mark.filterwarnings("ignore::jaxmtl.errors.GridEdgeWarning")
def test_every_python_block_of_the_page_runs_in_order(tmp_path, monkeypatch):
    assert len(BLOCKS) >= 8, "the page has a block per recipe and per check"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__extending__"}
    for i, block in enumerate(BLOCKS):
        try:
            exec(compile(block, f"extending.md python block {i + 1}", "exec"), namespace)
        except Exception as exc:  # name the block that failed, with its source
            pytest.fail(f"extending.md python block {i + 1} failed with {type(exc).__name__}: {exc}\n{block}")


def test_the_page_names_only_public_jaxmtl_names():
    text = PAGE.read_text()
    assert not re.findall(r"jaxmtl\.[\w.]*\._\w+", text), "a private module or name"
    assert "_FILTERS" not in text and "kernels/outputs.py" not in text


@pytest.mark.filterwarnings("ignore::jaxmtl.errors.GridEdgeWarning")
def test_a_user_kernel_in_a_list_is_chosen_by_the_same_folds_saved_and_loaded(tmp_path):
    X, Y = _data()
    kernels = [InverseQuadric(0.3), InverseQuadric(1.5), jaxmtl.Gaussian(1.0)]
    model = jaxmtl.VectorValuedRegressor(kernel=kernels, n_steps=30, omegas=[0.0, 0.5], normalize_y=False).fit(X, Y)
    # each row of cv_scores_ is the fit with that kernel alone, on the same folds
    for i, kern in enumerate(kernels):
        alone = jaxmtl.VectorValuedRegressor(kernel=kern, n_steps=30, omegas=[0.0, 0.5], normalize_y=False).fit(X, Y)
        np.testing.assert_allclose(model.cv_scores_[i], alone.cv_scores_[0], rtol=TIGHT)
    best = int(np.argmin(model.cv_scores_.min(axis=(1, 2))))
    assert model.kernel_ is model.best_params_["kernel"] and type(model.kernel_) is type(kernels[best])
    # predictions of the chosen kernel against a dense evaluation of the refitted model
    Kc = np.asarray(model.kernel_(X[:5], X))
    np.testing.assert_allclose(model.predict(X[:5]), Kc @ np.asarray(model.coef_) @ np.asarray(model.output_matrix_)
                               + model.y_mean_, rtol=TIGHT, atol=TIGHT * 1e-3)
    path = tmp_path / "list.npz"
    jaxmtl.save(model, path)
    loaded = jaxmtl.load(path)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert [type(k) for k in loaded.kernel] == [type(k) for k in kernels]


@pytest.mark.filterwarnings("ignore::jaxmtl.errors.GridEdgeWarning")
def test_multitask_regressor_searches_a_kernel_list():
    X, Y = _data(36, 1)
    tasks = np.arange(36) % 3
    kernels = [InverseQuadric(1.0), jaxmtl.Laplacian(2.0)]
    model = jaxmtl.MultiTaskRegressor(kernel=kernels, n_steps=20, omegas=[0.0, 0.5]).fit(X, Y[:, 0], tasks)
    alone = [jaxmtl.MultiTaskRegressor(kernel=k, n_steps=20, omegas=[0.0, 0.5]).fit(X, Y[:, 0], tasks)
             for k in kernels]
    for i in range(2):
        np.testing.assert_allclose(model.cv_scores_[i], alone[i].cv_scores_[0], rtol=TIGHT)
    best = int(np.argmin(model.cv_scores_.min(axis=(1, 2))))
    np.testing.assert_allclose(model.predict(X, tasks), alone[best].predict(X, tasks), rtol=TIGHT, atol=TIGHT * 1e-3)


def test_a_file_naming_an_unregistered_kernel_is_refused(tmp_path, monkeypatch):
    X, Y = _data()
    model = jaxmtl.VectorValuedRegressor(kernel=InverseQuadric(1.0), n_steps=10, omegas=[0.0]).fit(X, Y)
    path = tmp_path / "model.npz"
    jaxmtl.save(model, path)
    monkeypatch.delitem(registry._KERNELS, "InverseQuadric")  # a process that never registered it
    with pytest.raises(PersistenceError, match=r"unknown kernel 'InverseQuadric'.*jaxmtl\.register_kernel"):
        jaxmtl.load(path)


def test_kernel_lists_are_refused_where_they_are_not_searched():
    X, Y = _data()
    kernels = [InverseQuadric(1.0), jaxmtl.Gaussian(1.0)]
    with pytest.raises(ParameterError, match="approximation=None"):
        jaxmtl.VectorValuedRegressor(kernel=kernels, approximation="nystrom").fit(X, Y)
    with pytest.raises(ParameterError, match="takes one kernel"):
        jaxmtl.OutputKernelRegressor(kernel=kernels).fit(X, Y)
    with pytest.raises(ParameterError, match="non-empty list of kernels"):
        jaxmtl.VectorValuedRegressor(kernel=[]).fit(X, Y)


def test_a_registered_filter_by_name_equals_the_dense_filter_of_k_kron_a(tmp_path):
    X, Y = _data()
    A = np.array([[1.0, -0.3], [-0.3, 0.5]])
    lam, sigma = 0.02, 0.8
    model = jaxmtl.VectorValuedRegressor(kernel=jaxmtl.Gaussian(sigma), output=A, filter="exponential_cutoff",
                                         lambdas=[lam], normalize_y=False, fit_intercept=False).fit(X, Y)
    assert isinstance(jaxmtl.filters.get_filter("Exponential_Cutoff"), ExponentialCutoff)
    n, d = Y.shape
    w, W = np.linalg.eigh(np.kron(_gaussian(X, X, sigma), A) / n)
    w = np.maximum(w, 0.0)
    g = np.where(w > 0, -np.expm1(-w / lam) / np.where(w > 0, w, 1.0), 1.0 / lam)
    reference = (W @ (g * (W.T @ Y.reshape(-1)))).reshape(n, d) / n
    tol = 1e-8 if jax.config.read("jax_enable_x64") else 1e-3
    np.testing.assert_allclose(model.coef_, reference, atol=tol * np.abs(reference).max())
    jaxmtl.save(model, tmp_path / "f.npz")
    loaded = jaxmtl.load(tmp_path / "f.npz")
    assert isinstance(loaded.filter_, ExponentialCutoff)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_family_is_truthful_for_a_user_matrix_and_a_registered_family():
    X, Y = _data()
    A = np.array([[2.0, 1.0], [1.0, 2.0]])
    for family in ("auto", "common_similarity"):
        model = jaxmtl.VectorValuedRegressor(output=A, n_steps=20, family=family, normalize_y=False).fit(X, Y)
        assert model.family_ == "custom" and set(model.family_scores_) == {"custom"}
        np.testing.assert_allclose(model.output_matrix_, A, rtol=1e-6)

    def scaled_identity(d, thetas):
        return np.outer(thetas, np.ones(d)), np.eye(d)

    jaxmtl.register_output_family("scaled_identity_test", scaled_identity, grid=[0.5, 2.0])
    model = jaxmtl.VectorValuedRegressor(output="scaled_identity_test", kernel=jaxmtl.Gaussian(1.0), n_steps=20,
                                         normalize_y=False).fit(X, Y)
    assert model.family_ == "scaled_identity_test" and model.best_params_["omega"] in (0.5, 2.0)
    np.testing.assert_allclose(model.output_matrix_, model.best_params_["omega"] * np.eye(2), rtol=1e-6)
    # A = θI with the step count is plain kernel regression: each θ's scores equal a fit at output=θI
    for i, theta in enumerate((0.5, 2.0)):
        fixed = jaxmtl.VectorValuedRegressor(output=theta * np.eye(2), kernel=jaxmtl.Gaussian(1.0), n_steps=20,
                                             normalize_y=False).fit(X, Y)
        np.testing.assert_allclose(model.cv_scores_[0, i], fixed.cv_scores_[0, 0], rtol=TIGHT)


def test_bad_output_families_are_refused_with_the_family_named():
    X, Y = _data()
    jaxmtl.register_output_family("rotated_test", lambda d, t: (np.ones((len(t), d)), 2.0 * np.eye(d)))
    with pytest.raises(OutputMatrixError, match="rotated_test.*orthonormal"):
        jaxmtl.VectorValuedRegressor(output="rotated_test", n_steps=5).fit(X, Y)
    jaxmtl.register_output_family("negative_test", lambda d, t: (-np.ones((len(t), d)), np.eye(d)))
    with pytest.raises(OutputMatrixError, match="negative_test.*semidefinite"):
        jaxmtl.VectorValuedRegressor(output="negative_test", n_steps=5).fit(X, Y)
    with pytest.raises(ParameterError, match="register_output_family"):
        jaxmtl.VectorValuedRegressor(output="no_such_family", n_steps=5).fit(X, Y)
    with pytest.raises(ParameterError, match="identifier other than"):
        jaxmtl.register_output_family("custom", lambda d, t: None)


def test_registrations_cannot_replace_jaxmtl_s_own_pieces():
    class Gaussian(Kernel):  # noqa: D401 - the built-in's class name
        def __call__(self, X1, X2):
            return X1 @ X2.T

    with pytest.raises(TypeError, match="one of jaxmtl's own kernels"):
        jaxmtl.register_kernel(Gaussian)
    with pytest.raises(TypeError, match="concrete subclass"):
        jaxmtl.register_kernel(int)
    with pytest.raises(ParameterError, match="replace one of jaxmtl's filters"):
        jaxmtl.register_filter("tikhonov", ExponentialCutoff)
    with pytest.raises(ParameterError, match="concrete"):
        jaxmtl.register_filter("abstract", jaxmtl.filters.SpectralFilter)
    with pytest.raises(ParameterError, match="one of jaxmtl's losses"):
        jaxmtl.register_loss(jaxmtl.solvers.Loss("hinge", abs, abs, abs))
    with pytest.raises(ParameterError, match="register_filter"):
        jaxmtl.filters.get_filter("no_such_filter")
