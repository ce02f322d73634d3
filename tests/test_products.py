"""jaxmtl's functions compute their float32 matrix products in full float32 whatever JAX's default
precision does on the device (``jaxmtl.products``), unless the caller chose a precision.

A GPU's tensor cores round the operands of a float32 product to TF32 under JAX's default
precision; the CPU does not, so the tests emulate it (:func:`jaxmtl._emulate.emulated_products`,
operands rounded to 10 mantissa bits) and compare with dense float64 NumPy references:

* every public function of the functional namespaces and every public method of the operator and
  predictor classes carries the scope, or is listed here as computing no matrix product;
* operator products, a lineax CG solve, streamed predictions and k-fold losses stay within
  float32's round-off under the emulation (with TF32 products they are off by 10⁻⁴–10⁻³, and the
  CG solve returned NaN on an H200);
* a caller's ``jax.default_matmul_precision`` is kept.
"""

import importlib
import inspect

import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import pytest

import jaxmtl.operators as ops
from _reference import gaussian_gram, random_psd
from jaxmtl._emulate import MANTISSA_BITS, emulated_products
from jaxmtl.filters import Tikhonov
from jaxmtl.kernels import Gaussian
from jaxmtl.products import full_precision_scope
from jaxmtl.selection import kfold_masks, kfold_path

TF32 = MANTISSA_BITS["tf32"]
F32 = np.float32
NAMESPACES = ("jaxmtl", "jaxmtl.paths", "jaxmtl.selection", "jaxmtl.operators", "jaxmtl.solvers", "jaxmtl.learning",
              "jaxmtl.mkl", "jaxmtl.mixed_effect", "jaxmtl.kernels", "jaxmtl.linalg", "jaxmtl.distributed",
              "jaxmtl.models")
# public functions that compute no matrix product of their own: registries, files, masks and
# index helpers, plans and checks, constructors that only store their arguments, elementwise maps
NO_PRODUCTS = {
    "save", "load", "register_kernel", "register_filter", "register_output_family", "register_loss", "get_loss",
    "get_filter", "filter_classes", "kfold_masks", "fold_sizes", "fold_rows", "fold_indices", "task_block_index",
    "check_tasks", "blocks_pay_off", "same_task_mask", "check_field", "pad_rows", "group_blocks", "row_mesh",
    "shard_rows", "default_memory_budget", "plan_chunk", "omega_path_bytes", "check_mesh", "collective_errors",
    "global_mesh", "global_rows", "initialize", "open_rows", "read_local_rows", "resolve_cluster", "to_host",
    "save_server", "load_server", "plot_profiles", "constrain", "unconstrain", "angular_error", "standard_dictionary",
    "linear_dictionary", "dictionary", "host_squared_distances", "eigh", "eigvalsh", "mse_loss",
    "classification_loss", "soft_min", "as_lineax", "task_indexed", "task_indexed_operator",
    "sum_of_separable_operator", "transformable_operator", "field_operator", "split_field", "spectral_scale",
    "column_access", "resolvent", "distributed_operator", "squared_distances", "median_heuristic_rows",
    "enable_compilation_cache", "disable_compilation_cache", "sweep_mesh", "checkpoint", "close",
    "shard_sweep"}  # shard_sweep places the caller's arrays and jits the caller's function: its products are theirs
SCOPED_CLASSES = {"jaxmtl.models": ("Predictor", "SeparablePredictor", "PerOutputPredictor", "PerOutputGaussian"),
                  "jaxmtl.learning": ("RematCrossOperator", "RematKernelOperator"),
                  "jaxmtl.mkl": ("GramStack", "Predictive"), "jaxmtl.mixed_effect": ("Server", "Client", "PassiveClient"),
                  "jaxmtl.paths": ("EvalMap",)}


def _scoped(fn) -> bool:
    while fn is not None:
        if getattr(fn, "__full_precision__", False):
            return True
        fn = getattr(fn, "__wrapped__", None)
    return False


def test_every_public_function_and_method_scopes_its_products():
    missing = []
    for ns in NAMESPACES:
        mod = importlib.import_module(ns)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj) and not inspect.isclass(obj) and inspect.isfunction(inspect.unwrap(obj)) \
                    and name not in NO_PRODUCTS and not _scoped(obj):
                missing.append(f"{ns}.{name}")
    classes = [getattr(ops, n) for n in ops.__all__ if inspect.isclass(getattr(ops, n))]
    classes += [getattr(importlib.import_module(ns), n) for ns, names in SCOPED_CLASSES.items() for n in names]
    for cls in classes:
        for name, attr in vars(cls).items():
            if (not name.startswith("_") or name == "__call__") and inspect.isfunction(attr) and not _scoped(attr) \
                    and name not in NO_PRODUCTS:
                missing.append(f"{cls.__module__}.{cls.__name__}.{name}")
    assert not missing, f"not scoped by jaxmtl.products.full_precision: {missing}"


def _rel(got, ref) -> float:
    got = np.asarray(got, np.float64)
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    A = random_psd(3, rng)
    C = rng.normal(size=(60, 3))
    K = gaussian_gram(X, X, 1.5)
    return X, A, C, K


def test_operator_products_are_full_float32_under_tensor_core_rounding(data):
    X, A, C, K = data
    ref = K @ C @ A
    built = {"separable": lambda: ops.SeparableOperator(jnp.asarray(K, F32), jnp.asarray(A, F32)),
             "blocked": lambda: ops.BlockedKernelOperator(Gaussian(1.5), X.astype(F32), A.astype(F32), block_size=16),
             "dense": lambda: ops.DenseOperator(jnp.asarray(np.kron(K, A), F32), 3)}
    with emulated_products(TF32):
        plain = _rel(jnp.asarray(K, F32) @ jnp.asarray(C, F32) @ jnp.asarray(A, F32), ref)
        errors = {name: _rel(jax.jit(lambda op, c: op.mv(c))(make(), jnp.asarray(C, F32)), ref)
                  for name, make in built.items()}
        with jax.default_matmul_precision("tensorfloat32"):  # the caller's choice is kept
            chosen = _rel(built["separable"]().mv(jnp.asarray(C, F32)), ref)
    assert plain > 1e-4 and chosen > 1e-4  # the emulation rounds unscoped products as TF32 does
    assert max(errors.values()) < 1e-5, errors


def test_lineax_cg_solve_under_tensor_core_rounding(data):
    """The solve of the docs' lineax example (ridge 0.5) returned NaN on an H200 before the scope."""
    X, A, C, K = data
    ridge = 0.5
    ref = np.linalg.solve(np.kron(K, A) + ridge * np.eye(C.size), C.reshape(-1)).reshape(C.shape)
    op = ops.SeparableOperator(jnp.asarray(K, F32), jnp.asarray(A, F32))
    with emulated_products(TF32):
        sol = jax.jit(lambda op, c: lx.linear_solve(ops.as_lineax(op, ridge), c, lx.CG(rtol=1e-6, atol=1e-6),
                                                    throw=False).value)(op, jnp.asarray(C, F32))
    assert np.all(np.isfinite(np.asarray(sol))) and _rel(sol, ref) < 1e-5


def test_streamed_predictions_under_tensor_core_rounding(data):
    X, _, _, _ = data
    fm = ops.NystromFeatures.fit(Gaussian(1.5), jnp.asarray(X, F32), 20, random_state=0)
    W = np.random.default_rng(1).normal(size=(20, 2)).astype(F32)
    ref = np.asarray(fm(jnp.asarray(X, F32)), np.float64) @ W.astype(np.float64)  # outside: full float32 on a CPU
    with emulated_products(TF32):
        got = ops.stream_predict(fm, W, X.astype(F32), chunk_rows=16)
    assert _rel(got, ref) < 1e-5


def test_kfold_losses_under_tensor_core_rounding(data):
    X, A, C, K = data
    Y = C.astype(F32)
    a, V = np.linalg.eigh(A)
    masks = kfold_masks(60, 5, 0)
    lams = np.array([1e-1, 1e-2, 1e-3], F32)
    args = (jnp.asarray(K, F32), jnp.asarray(Y), jnp.asarray(a, F32), jnp.asarray(V, F32), Tikhonov(),
            jnp.asarray(lams), jnp.asarray(masks))
    train = masks[0]
    m = int(train.sum())
    ref = []
    for lam in lams:  # fold 0 by a dense float64 solve of (K ⊗ A + mλI) vec C = vec Y
        coef = np.linalg.solve(np.kron(K[np.ix_(train, train)], A) + m * lam * np.eye(3 * m),
                               Y[train].astype(np.float64).reshape(-1)).reshape(m, 3)
        ref.append(np.mean(np.sum((K[np.ix_(~train, train)] @ coef @ A - Y[~train]) ** 2, axis=1)) / 3)
    with emulated_products(TF32):
        got = np.asarray(kfold_path(*args))[0]
    np.testing.assert_allclose(got, ref, rtol=1e-4)


def test_the_scope_leaves_a_chosen_precision_alone():
    with full_precision_scope():
        assert jax.config.jax_default_matmul_precision == "highest"
    with jax.default_matmul_precision("bfloat16"), full_precision_scope():
        assert jax.config.jax_default_matmul_precision == "bfloat16"


def test_predictor_and_exported_model_under_tensor_core_rounding():
    """A float32 model's predictor under a caller's jit and its exported artefact compute under
    emulated TF32 what they compute in full float32 (the artefact differed from the model by 4 %
    on an H200 before the scope)."""
    import jaxmtl

    rng = np.random.default_rng(2)
    X = rng.normal(size=(80, 3))
    Y = np.c_[np.sin(X[:, 0]), X[:, 1] * X[:, 2]] + 0.01 * rng.normal(size=(80, 2))
    Xt = jnp.asarray(rng.normal(size=(20, 3)), F32)
    model = jaxmtl.VectorValuedRegressor(dtype="float32", width_factors=[1.0], n_steps=200).fit(X, Y)

    def both():
        jitted = jax.jit(lambda p, x: p(x))(model.predictor(), Xt)
        exported = jaxmtl.export(model, Xt, platforms=("cpu",)).call(Xt)
        return np.asarray(jitted, np.float64), np.asarray(exported, np.float64)

    full = both()
    with emulated_products(TF32):
        rounded = both()
    assert _rel(full[0], model.predict(Xt)) < 1e-4  # float32 round-off of the predictor against predict
    assert _rel(rounded[0], full[0]) < 1e-6 and _rel(rounded[1], full[1]) < 1e-6


def test_scoped_functions_under_vmap_and_grad_with_tensor_core_rounding(data):
    """A scoped public function keeps its products full under the caller's vmap and grad: vmapped λ
    equal separate solves, and d/dλ Σ C(λ) matches a central difference of float64 NumPy solves."""
    X, A, C, K = data
    n = len(K)
    Kf, Af, Cf = (jnp.asarray(M, F32) for M in (K, A, C))

    def dense(lam):  # (K ⊗ A + nλI) vec C = vec Y, as ops.separable_solve documents
        return np.linalg.solve(np.kron(K, A) + n * lam * np.eye(C.size), C.reshape(-1)).reshape(C.shape)

    lams = np.array([1e-1, 1e-2], F32)
    with emulated_products(TF32):
        batched = jax.vmap(lambda lam: ops.separable_solve(Kf, Af, Cf, lam))(jnp.asarray(lams))
        grad = float(jax.grad(lambda lam: jnp.sum(ops.separable_solve(Kf, Af, Cf, lam)))(F32(0.05)))
    for i, lam in enumerate(lams):
        assert _rel(batched[i], dense(float(lam))) < 1e-4
    h = 1e-5
    fd = (np.sum(dense(0.05 + h)) - np.sum(dense(0.05 - h))) / (2 * h)
    assert np.isfinite(grad) and abs(grad - fd) <= 1e-3 * abs(fd)
