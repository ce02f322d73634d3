"""Every public function accepts its continuous hyperparameters traced (jit, vmap, grad).

The walk enumerates the public API (the ``__all__`` of the functional modules) and finds every
function or class with a hyperparameter-like argument (ω, σ, widths, λ, γ, α, τ, c, ε, weights,
filter parameters). Each must appear in exactly one table:

* ``TRACED``: how to call it with that argument traced (several arguments of one function may be
  traced together, as functions of one scalar). It is called eagerly at two values, then
  in one compiled program ``jit(vmap(value_and_grad(summary)))`` over those two values and (float64)
  x0 ± h: no JAX-internal error may escape, the compiled values must equal the eager ones, and
  (float64) the gradient at x0 must equal the central finite difference of the compiled values.
  Functions with a tolerance-driven ``while_loop`` (reverse mode cannot go through it) are checked
  under ``jit(vmap(·))`` only.
* ``CONCRETE``: functions that genuinely need the value (host-side solvers, host checks); called
  with the argument traced they raise the listed jaxmtl error whose message names the argument.
* ``NOT_HYPERPARAMETERS``: an argument whose name collides with the pattern but is no
  hyperparameter.

A new public function with such an argument and no entry fails :func:`test_every_hyperparameter_has_an_entry`.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.errors import ConcretizationTypeError, TracerArrayConversionError, TracerBoolConversionError

from jaxmtl import filters, kernels, mixed_effect, mkl, operators, paths, selection
from jaxmtl.errors import TracedArgumentError
from jaxmtl.kernels import outputs
from jaxmtl.mixed_effect import kernel as me_kernel

MODULES = ["jaxmtl.kernels", "jaxmtl.kernels.outputs", "jaxmtl.operators", "jaxmtl.paths", "jaxmtl.selection",
           "jaxmtl.filters", "jaxmtl.mixed_effect", "jaxmtl.mixed_effect.kernel", "jaxmtl.mkl"]
HYPER_NAMES = {"omega", "omegas", "sigma", "sigmas", "width", "widths", "lam", "lams", "lambdas", "gamma", "gammas",
               "alpha", "alphas", "tau", "taus", "c", "eps1", "eps2", "weights", "param", "params", "length_scale",
               "coef0"}
MODULE_HYPER_NAMES = {"jaxmtl.mkl": {"d"}}  # RLS2's kernel weights
JAX_INTERNAL = (TracerArrayConversionError, ConcretizationTypeError, TracerBoolConversionError)

F64 = jax.config.read("jax_enable_x64")
RTOL = 1e-9 if F64 else 2e-4


# ------------------------------------------------------------------------------- tiny data
RNG = np.random.default_rng(0)
X = RNG.normal(size=(6, 2))
Y = RNG.normal(size=(6, 2))
K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1)) + 1e-3 * np.eye(6)
A2 = np.array([[1.0, 0.3], [0.3, 1.0]])
TASKS = np.array([0, 0, 0, 1, 1, 1])
MASKS = selection.kfold_masks(6, 3)
EIG = operators.separable_eigh(jnp.asarray(K), jnp.asarray(A2))
TIK, LAND = filters.Tikhonov(), filters.Landweber()
STEPS = jnp.arange(1, 5)
FIELD = operators.field_operator(X, X, 1.0, 0.5)


def _lams(t):
    return jnp.stack([t, 0.3 * t])


DICT = mkl.standard_dictionary(2, widths=(0.5, 2.0), degrees=(1,))
STACK = DICT.stack(X)
CROSS, DIAG_NEW = STACK.take(np.arange(2), np.arange(6)), STACK.dense[:, np.arange(2), np.arange(2)]  # new x: X[:2]
D0 = jnp.full((STACK.shape[0],), 1.0 / STACK.shape[0])
C_RLS2 = jnp.asarray(Y) * 0.1
SMO_TOL = 1e-14 if F64 else 1e-6  # the d-step to rounding: eager and compiled runs then agree to RTOL


def _d(t):
    """Kernel weights on the simplex with a zero (combine reads only the support of d)."""
    return jnp.zeros(STACK.shape[0]).at[0].set(t).at[4].set(1.0 - t)


A_EIG, V_EIG = np.linalg.eigh(A2)


def _feature_statistics(Phi, T, k):
    """The sums of feature_statistics for features Phi and outputs T, fold g holding the rows i % k == g."""
    folds = [(Phi[g::k], T[g::k]) for g in range(k)]
    return operators.FeatureStatistics(jnp.asarray(np.stack([P.T @ P for P, _ in folds])),
                                       jnp.asarray(np.stack([P.T @ Tg for P, Tg in folds])),
                                       jnp.asarray(np.stack([Tg.T @ Tg for _, Tg in folds])),
                                       jnp.asarray([float(len(P)) for P, _ in folds]))


STATS = _feature_statistics(RNG.normal(size=(6, 3)), Y, 3)
STATS_HELD = _feature_statistics(RNG.normal(size=(6, 3)), Y, 1)


def _selected(sel):
    """The losses and the selected coefficients of a PathSelection (its eigenvectors' signs are arbitrary)."""
    return sel.losses, sel.coefficients()


def _build_common_similarity(kern, omega, data):
    return operators.SeparableOperator(kern(data, data), outputs.common_similarity(2, omega))


class Case(NamedTuple):
    fn: Callable[[Any], Any]  # the call with the hyperparameter x traced
    x0: float
    x1: float
    grad: bool = True  # False: a solver with a tolerance-driven while loop (jit and vmap only)


def _blocks():
    idx = operators.task_block_index(TASKS, TASKS)
    return operators.task_blocks(jnp.asarray(K), *idx)


# (function, argument — or a tuple of the arguments the call traces together) -> the call
TRACED: dict[tuple[Any, str | tuple[str, ...]], Case] = {
    (kernels.Gaussian, "sigma"): Case(lambda s: kernels.Gaussian(s)(X, X), 0.8, 1.3),
    (kernels.Laplacian, "sigma"): Case(lambda s: kernels.Laplacian(s)(X, X), 0.8, 1.3),
    (kernels.Polynomial, ("gamma", "coef0")): Case(lambda g: kernels.Polynomial(2, gamma=g, coef0=2 * g)(X, X),
                                                   0.5, 1.5),
    (kernels.Matern, "length_scale"): Case(lambda s: kernels.Matern(2.5, s)(X, X), 0.8, 1.3),
    (outputs.common_similarity, "omega"): Case(lambda w: outputs.common_similarity(3, w), 0.3, 0.7),
    (outputs.common_similarity_eigh, "omegas"): Case(
        lambda w: outputs.common_similarity_eigh(3, jnp.stack([w, 0.5 * w]))[0], 0.3, 0.7),
    (outputs.graph_regularization, "M"): Case(
        lambda t: outputs.graph_regularization(jnp.array([[1.0, 0.5, 0.0], [0.5, 1.0, 2.0], [0.0, 2.0, 1.0]]) * t),
        0.7, 1.4),
    (outputs.output_clusters, ("eps1", "eps2")): Case(lambda e: outputs.output_clusters([0, 0, 1], e, 0.5 * e),
                                                      0.7, 1.4),
    (outputs.mean_regularized, "c"): Case(lambda c: outputs.mean_regularized(3, c), 0.7, 1.4),
    (outputs.low_rank, "B"): Case(lambda t: outputs.low_rank(jnp.array([[1.0], [t], [2.0]])), 0.7, 1.4),
    (outputs.custom, "A"): Case(lambda t: outputs.custom(t * jnp.ones((2, 2)) + jnp.eye(2)), 0.3, 0.6),
    (outputs.eigh_output, "A"): Case(lambda t: outputs.eigh_output(jnp.array([[2.0, t], [t, 1.0]]))[0], 0.3, 0.6),
    (operators.separable_solve, "lam"): Case(lambda lam: operators.separable_solve(K, A2, Y, lam), 0.1, 0.3),
    (operators.CommonSimilarityTaskOperator, "omega"): Case(
        lambda w: operators.CommonSimilarityTaskOperator(jnp.asarray(K), _blocks(), w).mv(jnp.asarray(Y[:, :1])),
        0.3, 0.7),
    (operators.DivCurlOperator, "gamma"): Case(
        lambda g: operators.DivCurlOperator(FIELD.W, FIELD.Z_rows, FIELD.Z_cols, g).mv(jnp.asarray(Y)),
        0.3, 0.7),
    (operators.field_operator, ("sigma", "gamma")): Case(
        lambda g: operators.field_operator(X, X, 0.5 + g, g).mv(Y), 0.3, 0.7),
    (operators.div_curl, ("sigma", "gamma")): Case(lambda g: operators.div_curl(X, 0.5 + g, g).mv(Y), 0.3, 0.7),
    (operators.div_free, "sigma"): Case(lambda s: operators.div_free(X, s).mv(Y), 0.8, 1.3),
    (operators.curl_free, "sigma"): Case(lambda s: operators.curl_free(X, s).mv(Y), 0.8, 1.3),
    (paths.spectral_path, "params"): Case(lambda t: paths.spectral_path(EIG, Y, TIK, _lams(t), K_eval=K), 0.1, 0.3),
    (paths.spectral_path, "tau"): Case(lambda t: paths.spectral_path(EIG, Y, LAND, STEPS, K_eval=K, tau=t), 0.5, 0.8),
    (paths.filtered_coefficients, "param"): Case(lambda t: paths.filtered_coefficients(TIK, EIG, Y, t), 0.1, 0.3),
    (paths.filtered_coefficients, "tau"): Case(lambda t: paths.filtered_coefficients(LAND, EIG, Y, 3, tau=t), 0.5, 0.8),
    (paths.path_map, ("sigma", "params")): Case(
        lambda t: paths.path_map(TIK, (1.0 + t) * jnp.arange(1.0, 4.0), _lams(t), None, lambda g: g), 0.1, 0.3),
    (paths.path_map, "tau"): Case(lambda t: paths.path_map(LAND, jnp.arange(1.0, 4.0) / 4, STEPS, t, lambda g: g),
                                  0.5, 0.8),
    (paths.path_scan, "tau"): Case(
        lambda t: paths.path_scan(operators.SeparableOperator(K, A2), Y, LAND, 4, tau=t).coef, 0.5, 0.8),
    (paths.iterated_tikhonov_scan, "lam"): Case(
        lambda lam: paths.iterated_tikhonov_scan(jnp.kron(jnp.asarray(K), jnp.asarray(A2)), jnp.asarray(Y), lam,
                                                 2).coef, 0.1, 0.3),
    (paths.omega_path_scan, ("omegas", "tau")): Case(
        lambda w: paths.omega_path_scan(jnp.asarray(K), jnp.asarray(Y), jnp.stack([w, 0.5 * w]), LAND, 4, tau=w).coef,
        0.5, 0.8),
    (paths.tridiagonal_path, "params"): Case(lambda t: paths.tridiagonal_path(K, Y, _lams(t), K_eval=K, A=A2),
                                             0.1, 0.3),
    (paths.falkon_path, "lambdas"): Case(
        lambda t: paths.falkon_path(kernels.Gaussian(1.0), X[:3], X, Y, A2, _lams(t), 3).coef, 0.1, 0.3),
    (paths.falkon_holdout_losses, "lambdas"): Case(
        lambda t: paths.falkon_holdout_losses(kernels.Gaussian(1.0), X[:3], X[:4], Y[:4], jnp.ones((2, 2)) * A2[0],
                                              jnp.eye(2), _lams(t), X[4:], Y[4:], 3), 0.1, 0.3),
    (paths.falkon_coefficients, "lambdas"): Case(
        lambda t: paths.falkon_coefficients(kernels.Gaussian(1.0), X[:3], X, Y, jnp.ones(2), jnp.eye(2), _lams(t)[:2],
                                            3)[1], 0.1, 0.3),
    (selection.loo_path, "params"): Case(lambda t: selection.loo_path(EIG, Y, TIK, _lams(t)), 0.1, 0.3),
    (selection.loo_path, "tau"): Case(lambda t: selection.loo_path(EIG, Y, LAND, STEPS, tau=t), 0.5, 0.8),
    (selection.gcv_path, "params"): Case(lambda t: selection.gcv_path(EIG, Y, TIK, _lams(t)), 0.1, 0.3),
    (selection.gcv_path, "tau"): Case(lambda t: selection.gcv_path(EIG, Y, LAND, STEPS, tau=t), 0.5, 0.8),
    (selection.kfold_path, "params"): Case(
        lambda t: selection.kfold_path(K, Y, EIG.a, EIG.V, TIK, _lams(t), MASKS), 0.1, 0.3),
    (selection.holdout_path, "params"): Case(
        lambda t: selection.holdout_path(K[:4, :4], K[4:, :4], Y[:4], Y[4:], EIG.a, EIG.V, TIK, _lams(t)), 0.1, 0.3),
    (selection.regularization_path, "params"): Case(
        lambda t: _selected(selection.regularization_path(K, Y, A2, TIK, _lams(t), selection.GCV())), 0.1, 0.3),
    (selection.regularization_path, "tau"): Case(
        lambda t: selection.regularization_path(K, Y, A2, LAND, STEPS, selection.GCV(), tau=t).losses, 0.5, 0.8),
    (mixed_effect.ExponentialDot, "gamma"): Case(lambda g: mixed_effect.ExponentialDot(g)(X, X), 0.5, 0.9),
    (mixed_effect.mixed_effect_gram, "alpha"): Case(
        lambda a: mixed_effect.mixed_effect_gram(X, TASKS, X, TASKS, a, kernels.Gaussian(1.0), kernels.Linear()),
        0.3, 0.7),
    (paths.grid_path_losses, "params"): Case(
        lambda w: paths.grid_path_losses(_build_common_similarity, kernels.Gaussian(jnp.array([1.0])),
                                         jnp.stack([w, 0.5 * w]), jnp.asarray(X), jnp.asarray(Y), MASKS, LAND, 3)[0],
        0.3, 0.7),
    (paths.feature_coefficients, "param"): Case(
        lambda t: paths.feature_coefficients(STATS, A_EIG, V_EIG, TIK, t), 0.1, 0.3),
    (paths.feature_kfold_losses, "params"): Case(
        lambda t: paths.feature_kfold_losses(STATS, A_EIG[None], V_EIG, TIK, _lams(t)), 0.1, 0.3),
    (paths.feature_holdout_losses, "params"): Case(
        lambda t: paths.feature_holdout_losses(STATS, STATS_HELD, A_EIG[None], V_EIG, TIK, _lams(t)), 0.1, 0.3),
    (paths.feature_path_coefficients, "params"): Case(
        lambda t: paths.feature_path_coefficients(STATS, A_EIG[None], V_EIG, TIK, _lams(t)), 0.1, 0.3),
    (mkl.rls2_objective, ("lam", "d")): Case(lambda t: mkl.rls2_objective(STACK, Y, t / 3, _d(t), C_RLS2), 0.3, 0.7),
    (mkl.rls2_step, ("lam", "d")): Case(lambda t: mkl.rls2_step(STACK, Y, t / 3, _d(t), smo_tol=SMO_TOL), 0.3, 0.7,
                                        grad=False),
    (mkl.rls2_solve, "lam"): Case(lambda lam: mkl.rls2_solve(STACK, Y, lam, max_iter=3, smo_tol=SMO_TOL).C,
                                  0.1, 0.3, grad=False),
    (mkl.rls2_path, "lambdas"): Case(lambda t: mkl.rls2_path(STACK, Y, _lams(t), max_iter=3, smo_tol=SMO_TOL).C,
                                     0.1, 0.3, grad=False),
    (mkl.predictive, ("lam", "d")): Case(lambda t: mkl.predictive(STACK, CROSS, DIAG_NEW, _d(t), Y, t / 3), 0.3, 0.7),
    (mkl.degrees_of_freedom, ("lam", "d")): Case(lambda t: mkl.degrees_of_freedom(STACK, _d(t), t / 3), 0.3, 0.7),
}

# (function, argument) -> (call with the argument traced, the jaxmtl error it raises)
CONCRETE: dict[tuple[Any, str], tuple[Callable[[Any], Any], type]] = {
    (me_kernel.check_alpha, "alpha"): (lambda a: me_kernel.check_alpha(a), TracedArgumentError),
    (me_kernel.check_lam, "lam"): (lambda lam: me_kernel.check_lam(lam), TracedArgumentError),
    (me_kernel.check_scaled_weight, "lam"): (lambda lam: me_kernel.check_scaled_weight(lam, 1.0), TracedArgumentError),
    (mixed_effect.algorithm4, "alpha"): (
        lambda a: mixed_effect.algorithm4(X, Y[:, 0], TASKS, a, 0.1, kernels.Linear()), TracedArgumentError),
    (mixed_effect.algorithm4, "lam"): (
        lambda lam: mixed_effect.algorithm4(X, Y[:, 0], TASKS, 0.5, lam, kernels.Linear()), TracedArgumentError),
    (mixed_effect.Server, "alpha"): (lambda a: mixed_effect.Server(a, 0.1, kernels.Linear()), TracedArgumentError),
    (mixed_effect.Server, "lam"): (lambda lam: mixed_effect.Server(0.5, lam, kernels.Linear()), TracedArgumentError),
    # checked host entries whose message names their jittable core (path_scan, iterated_tikhonov_scan,
    # omega_path_scan: in TRACED)
    (paths.iterative_path, "tau"): (
        lambda t: paths.iterative_path(operators.SeparableOperator(K, A2), Y, "landweber", 4, tau=t),
        TracedArgumentError),
    (paths.path_predictions, "tau"): (
        lambda t: paths.path_predictions(operators.SeparableOperator(K, A2), Y, "landweber", 4,
                                         eval_op=operators.SeparableOperator(K, A2), tau=t), TracedArgumentError),
    (paths.iterated_tikhonov_path, "lam"): (
        lambda lam: paths.iterated_tikhonov_path(operators.SeparableOperator(K, A2), Y, lam, 2), TracedArgumentError),
    (paths.common_similarity_path, "omegas"): (
        lambda w: paths.common_similarity_path(K, Y, jnp.stack([w, 0.5 * w]), "landweber", 4), TracedArgumentError),
    (paths.common_similarity_path, "tau"): (
        lambda t: paths.common_similarity_path(K, Y, [0.5], "landweber", 4, tau=t), TracedArgumentError),
    (paths.batched_nu_path_over_omegas, "omegas"): (
        lambda w: paths.batched_nu_path_over_omegas(K, Y, jnp.stack([w, 0.5 * w]), 4), TracedArgumentError),
    (mkl.standard_dictionary, "widths"): (lambda w: mkl.standard_dictionary(2, widths=(w,)), TracedArgumentError),
    (mkl.linear_coefficients, "d"): (lambda t: mkl.linear_coefficients(X, np.ones(2), D0 * t, Y), TracedArgumentError),
    (mkl.kkt_conditions, "lam"): (lambda lam: mkl.kkt_conditions(STACK, Y, lam, D0, C_RLS2), TracedArgumentError),
    (mkl.kkt_conditions, "d"): (lambda t: mkl.kkt_conditions(STACK, Y, 0.1, D0 * t, C_RLS2), TracedArgumentError),
}

# public hyperparameters still without a call here (none: every one is in TRACED or CONCRETE)
NOT_YET_COVERED: set[tuple[Any, str]] = set()

# names that match the pattern but are no hyperparameter of that function
NOT_HYPERPARAMETERS: set[tuple[Any, str]] = {
    # a result container: its fields hold the grid and the step the path ran with
    (selection.PathSelection, "params"), (selection.PathSelection, "tau"),
}


@pytest.fixture(autouse=True, scope="module")
def _quick_compile():
    """Every program of this module runs once, on tiny inputs: compile without XLA's backend
    optimisations (half the module's time); the values are the same to rounding."""
    before = jax.config.read("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", True)
    yield
    jax.config.update("jax_disable_most_optimizations", before)


def _public_hyperparameters():
    seen, out = set(), []
    for modname in MODULES:
        mod = importlib.import_module(modname)
        names = HYPER_NAMES | MODULE_HYPER_NAMES.get(modname, set())
        for attr in mod.__all__:
            obj = getattr(mod, attr)
            if id(obj) in seen or not callable(obj):
                continue
            seen.add(id(obj))
            if inspect.isclass(obj) and issubclass(obj, tuple):  # NamedTuple results: containers
                continue
            try:
                params = inspect.signature(obj).parameters
            except (TypeError, ValueError):
                continue
            out += [(obj, p) for p in params if p in names]
    return out


def _names(args: str | tuple[str, ...]) -> tuple[str, ...]:
    return (args,) if isinstance(args, str) else args


def test_every_hyperparameter_has_an_entry():
    traced = {(f, name) for f, args in TRACED for name in _names(args)}
    missing = [f"{getattr(f, '__module__', '?')}.{f.__qualname__}({p})" for f, p in _public_hyperparameters()
               if (f, p) not in traced and (f, p) not in CONCRETE and (f, p) not in NOT_HYPERPARAMETERS
               and (f, p) not in NOT_YET_COVERED]
    assert not missing, f"public functions with a hyperparameter and no entry in TRACED or CONCRETE: {missing}"


def _summary(out) -> jax.Array:
    """A scalar of every floating leaf, weighted so that no entry cancels another."""
    leaves = [jnp.asarray(v) for v in jax.tree_util.tree_leaves(out)]
    leaves = [v for v in leaves if jnp.issubdtype(v.dtype, jnp.floating)]
    return sum(jnp.sum(jnp.where(jnp.isfinite(v), v, 0.0) * jnp.cos(jnp.arange(v.size, dtype=v.dtype)).reshape(v.shape))
               for v in leaves)


def _floats(out):
    return [np.asarray(v) for v in jax.tree_util.tree_leaves(out)
            if jnp.issubdtype(jnp.asarray(v).dtype, jnp.floating)]


def _close(a, b, what):
    for u, v in zip(_floats(a), _floats(b)):
        scale = max(1.0, float(np.max(np.abs(np.where(np.isfinite(u), u, 0.0)))))
        np.testing.assert_allclose(u, v, rtol=RTOL, atol=RTOL * scale, err_msg=what)


def _no_internal(call, what):
    try:
        return call()
    except JAX_INTERNAL as exc:  # the failure this module guards against
        pytest.fail(f"{what}: JAX-internal {type(exc).__name__} escaped: {str(exc)[:300]}")


# the costliest programs to compile (5 to 7 CPU seconds each with their eager reference, against
# under 1 s for most entries): run with -m slow
SLOW = {(paths.grid_path_losses, "params"), (mkl.rls2_solve, "lam"), (mkl.rls2_path, "lambdas")}
PARAMS = [pytest.param(key, id=f"{key[0].__qualname__}-{'-'.join(_names(key[1]))}",
                       marks=[pytest.mark.slow] if key in SLOW else []) for key in TRACED]


def _member(tree, i):
    return jax.tree_util.tree_map(lambda v: v[i], tree)


@pytest.mark.parametrize("key", PARAMS)
def test_traced_hyperparameter(key):
    case = TRACED[key]
    h = 1e-5 * max(1.0, abs(case.x0))
    points = [case.x0, case.x1] + ([case.x0 + h, case.x0 - h] if case.grad and F64 else [])
    xs = jnp.asarray(points, jnp.result_type(float))
    eager = [case.fn(case.x0), case.fn(case.x1)]
    if case.grad:  # jit, vmap and grad in one compiled program
        def value_and_out(x):
            out = case.fn(x)
            return _summary(out), out

        run = jax.jit(jax.vmap(jax.value_and_grad(value_and_out, has_aux=True)))
        (values, outs), grads = _no_internal(lambda: run(xs), "jit(vmap(value_and_grad))")
    else:
        outs = _no_internal(lambda: jax.jit(jax.vmap(case.fn))(xs), "jit(vmap)")
    for i, ref in enumerate(eager):
        _close(_member(outs, i), ref, f"jit(vmap) at x{i} differs from eager")
    if case.grad:
        assert np.isfinite(float(grads[0]))
        if F64:
            fd = (float(values[2]) - float(values[3])) / (2 * h)
            np.testing.assert_allclose(float(grads[0]), fd, rtol=1e-5, atol=1e-6 * max(1.0, abs(fd)))


@pytest.mark.parametrize("key", list(CONCRETE), ids=[f"{f.__qualname__}-{p}" for f, p in CONCRETE])
def test_concrete_hyperparameter_raises_named_error(key):
    call, error = CONCRETE[key]
    with pytest.raises(error, match=key[1]):
        jax.jit(call)(0.5)


def test_kfold_path_traced_masks_names_the_way_out():
    run = jax.jit(lambda m: selection.kfold_path(K, Y, EIG.a, EIG.V, TIK, _lams(0.1), m))
    with pytest.raises(TracedArgumentError, match=r"masks.*sizes=fold_sizes\(masks\)"):
        run(MASKS)
    sizes = selection.fold_sizes(MASKS)
    traced = jax.jit(lambda m: selection.kfold_path(K, Y, EIG.a, EIG.V, TIK, _lams(0.1), m, sizes=sizes))(MASKS)
    _close(traced, selection.kfold_path(K, Y, EIG.a, EIG.V, TIK, _lams(0.1), MASKS), "traced masks with sizes")


def test_common_similarity_traced_out_of_range_raises_at_run_time():
    with pytest.raises(Exception, match=r"omega must lie in \[0, 1\]"):
        jax.block_until_ready(jax.jit(lambda w: outputs.common_similarity(3, w))(1.5))


def test_traced_integer_size_names_the_argument():
    with pytest.raises(TracedArgumentError, match="d must be a concrete value.*mark d static"):
        jax.jit(lambda d: outputs.common_similarity(d, 0.5))(3)
