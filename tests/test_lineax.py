"""Gram operators as lineax operators (``jaxmtl.operators.as_lineax``): every training operator class
of ``jaxmtl.operators`` solved by lineax's CG and Cholesky against a dense NumPy solve of
``op.as_matrix() + ridge·I``; the tags, structures and the solvers lineax picks from them; SVD on a
singular Gram; evaluation operators and bad arguments refused; a solve under ``jit`` from a traced
kernel width (and ridge) against a NumPy Gram built independently, and ``jax.grad`` through
``linear_solve`` against central finite differences. Runs in float64 and float32 (tolerances from
the dtype)."""

import ast
import inspect
import pathlib
import re
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import pytest

import jaxmtl.operators as ops
from _reference import gaussian_gram, random_psd
from jaxmtl.errors import ParameterError, ShapeError
from jaxmtl.kernels import Gaussian
from jaxmtl.operators import as_lineax

ROOT = pathlib.Path(__file__).resolve().parents[1]
RIDGE = 0.5
rng = np.random.default_rng(0)
X = rng.normal(size=(8, 2))
X_EVAL = rng.normal(size=(5, 2))
A = random_psd(3, rng)
TASKS = np.array([0, 1, 2, 0, 1, 2, 0, 1])
A_TASKS = random_psd(3, rng)
M = rng.normal(size=(24, 10))  # a rank-10 explicit Gram on (8, 3) coefficients
Ks = np.stack([gaussian_gram(X, X, 0.7), gaussian_gram(X, X, 2.0)])
Bs = np.stack([random_psd(3, rng), random_psd(3, rng, rank=1)])
GAUSSIAN = Gaussian(1.0)


def _compiled(build):
    """``build()`` as one compiled call (run eagerly, a constructor compiles each of its steps)."""
    return eqx.filter_jit(build)()


def _common_similarity():
    K = jnp.asarray(gaussian_gram(X, X, 1.0))
    return ops.CommonSimilarityTaskOperator(K, ops.task_blocks(K, *ops.task_block_index(TASKS, TASKS)),
                                            jnp.asarray(0.3, K.dtype))


# every training operator class of jaxmtl.operators, small, built with its public constructor
OPERATORS = {
    "separable": lambda: ops.SeparableOperator(jnp.asarray(gaussian_gram(X, X, 1.0)), jnp.asarray(A)),
    "dense": lambda: ops.DenseOperator(jnp.asarray(M @ M.T / 10), 3),
    "task_indexed": lambda: _compiled(lambda: ops.task_indexed(GAUSSIAN, X, TASKS, A_TASKS)),
    "common_similarity": lambda: _compiled(_common_similarity),
    "sum_of_separable": lambda: ops.sum_of_separable_operator(Ks, Bs),
    "transformable": lambda: ops.transformable_operator(Gaussian(1.0), X, np.array([[0.0, 0.0], [0.5, -0.3]])),
    "div_curl": lambda: _compiled(lambda: ops.div_curl(X, 1.0, gamma=0.3)),
    "blocked": lambda: ops.BlockedKernelOperator(Gaussian(1.0), X, A, block_size=3),
    "nystrom": lambda: _compiled(lambda: ops.FeatureOperator(
        ops.NystromFeatures.fit(GAUSSIAN, X, 6, random_state=0)(jnp.asarray(X)), jnp.asarray(A))),
    "random_features": lambda: ops.FeatureOperator(
        ops.RandomFourierFeatures.fit(Gaussian(1.0), 2, 6, random_state=0)(jnp.asarray(X)), jnp.asarray(A)),
    "sharded_kernel": lambda: ops.ShardedKernelOperator(Gaussian(1.0), X, A, ops.row_mesh()),
    "sharded_gram": lambda: ops.ShardedGramOperator(gaussian_gram(X, X, 1.0), A, ops.row_mesh()),
}

# evaluation operators: (n, d) coefficients to (5, d) values at other inputs
CROSS = {
    "blocked_cross": lambda: ops.BlockedCrossOperator(Gaussian(1.0), X_EVAL, X, A, block_size=3),
    "div_curl_rows": lambda: ops.div_curl(X, 1.0, gamma=0.3, X_rows=X_EVAL),
    "task_indexed_cols": lambda: ops.task_indexed(Gaussian(1.0), X_EVAL, TASKS[:5], A_TASKS, X_cols=X,
                                                  tasks_cols=TASKS),
    "transformable_rows": lambda: ops.transformable_operator(Gaussian(1.0), X, np.array([[0.0, 0.0], [0.5, 0.1]]),
                                                             X_rows=X_EVAL),
    "sum_cross": lambda: ops.SumOfSeparableOperator(jnp.asarray(Ks[:, :5]), jnp.asarray(Bs)),
}


def _dtype():
    return jnp.result_type(float)


def _tol(dtype):
    """(solver rtol = atol, tolerance of a solution relative to its largest entry)."""
    return (1e-11, 1e-10) if dtype == jnp.float64 else (1e-6, 1e-4)


def _close(C, ref, tol):
    C = np.asarray(C, np.float64)
    assert C.shape == ref.shape
    err = np.max(np.abs(C - ref)) / np.max(np.abs(ref))
    assert err <= tol, err


def _matrix_and_solves(op, Y, rtol):
    """op.as_matrix(), and the CG and Cholesky (from the lineax operator's as_matrix()) solutions of Y."""
    lin = as_lineax(op, RIDGE)
    return op.as_matrix(), lx.linear_solve(lin, Y, lx.CG(rtol=rtol, atol=rtol)).value, lx.linear_solve(
        lin, Y, lx.Cholesky()).value


@pytest.fixture(scope="module")
def solved():
    """name -> (operator, Y, results of _matrix_and_solves): every operator in one compiled call."""
    built = {name: build() for name, build in OPERATORS.items()}
    Ys = {name: jnp.asarray(np.random.default_rng(1).normal(size=op.shape), _dtype()) for name, op in built.items()}
    rtol = _tol(_dtype())[0]
    out = eqx.filter_jit(lambda built, Ys: {k: _matrix_and_solves(op, Ys[k], rtol) for k, op in built.items()})(
        built, Ys)
    return {name: (built[name], Ys[name], out[name]) for name in OPERATORS}


@pytest.mark.parametrize("name", OPERATORS)
def test_lineax_solves_equal_the_dense_solve(name, solved):
    op, Y, (G, C_cg, C_cholesky) = solved[name]
    dtype = _dtype()
    n, d = op.shape
    lin = as_lineax(op, RIDGE)
    structure = jax.ShapeDtypeStruct((n, d), dtype)
    assert lin.in_structure() == structure and lin.out_structure() == structure
    assert lx.is_symmetric(lin) and lx.is_positive_semidefinite(lin) and not lx.is_negative_semidefinite(lin)
    assert lin.transpose() is lin
    G = np.asarray(G, np.float64)
    ref = np.linalg.solve(G + RIDGE * np.eye(n * d), np.asarray(Y, np.float64).reshape(-1)).reshape(n, d)
    for C in (C_cg, C_cholesky):
        assert C.dtype == dtype
        _close(C, ref, _tol(dtype)[1])


def test_lineax_s_matrix_and_automatic_solver():
    """as_matrix() is op.as_matrix() + ridge·I (Cholesky above factors it); the tags pick lineax's solvers."""
    op = OPERATORS["sum_of_separable"]()
    lin = as_lineax(op, RIDGE)
    matrices = eqx.filter_jit(lambda lin: (op.as_matrix(), lin.as_matrix()))(lin)
    G, G_lineax = (np.asarray(m, np.float64) for m in matrices)
    np.testing.assert_allclose(G_lineax, G + RIDGE * np.eye(G.shape[0]),
                               rtol=0, atol=10 * jnp.finfo(_dtype()).eps * np.abs(G).max())
    assert isinstance(lx.AutoLinearSolver(well_posed=True).select_solver(lin), lx.Cholesky)
    assert isinstance(lx.AutoLinearSolver(well_posed=False).select_solver(lin), lx.SVD)


def test_every_gram_operator_class_is_covered(solved):
    """Every GramOperator class jaxmtl.operators exports is solved above, or is an evaluation operator."""
    classes = {obj for obj in map(ops.__dict__.get, ops.__all__)
               if inspect.isclass(obj) and issubclass(obj, ops.GramOperator) and obj is not ops.GramOperator}
    covered = {type(op) for op, _, _ in solved.values()} | {ops.BlockedCrossOperator}
    assert classes == covered, classes ^ covered


def test_a_singular_gram_without_ridge_is_solved_by_svd():
    """ridge = 0 on a rank-deficient ΦΦᵀ ⊗ A: lineax's SVD gives the minimum-norm least-squares solution."""
    dtype = _dtype()
    Phi = np.linalg.qr(np.random.default_rng(2).normal(size=(8, 3)))[0] * np.array([2.0, 1.0, 0.5])
    op = ops.FeatureOperator(jnp.asarray(Phi, dtype), jnp.asarray(A, dtype))  # rank 9 of 24
    Y = jnp.asarray(np.random.default_rng(3).normal(size=(8, 3)), dtype)
    rcond = 1e-10 if dtype == jnp.float64 else 1e-4
    C = lx.linear_solve(as_lineax(op), Y, lx.SVD(rcond=rcond)).value
    G = np.kron(Phi @ Phi.T, A)
    ref = (np.linalg.pinv(G, rcond=1e-8) @ np.asarray(Y, np.float64).reshape(-1)).reshape(8, 3)
    _close(C, ref, _tol(dtype)[1])


@pytest.mark.parametrize("name", CROSS)
def test_evaluation_operators_are_refused(name):
    op = CROSS[name]()
    n, d = op.shape
    with pytest.raises(ShapeError, match=rf"{type(op).__name__}\.mv maps them to shape \(5, {d}\)"):
        as_lineax(op)


def test_bad_arguments_are_refused(monkeypatch):
    op = OPERATORS["separable"]()
    with pytest.raises(ParameterError, match="op must be a jaxmtl.operators.GramOperator; received ndarray"):
        as_lineax(np.eye(3))
    for ridge in (-1.0, float("nan"), [1.0, 2.0]):
        with pytest.raises(ParameterError, match="ridge"):
            as_lineax(op, ridge)
    monkeypatch.setitem(sys.modules, "lineax", None)  # as if lineax were not installed
    with pytest.raises(ImportError, match="pip install lineax"):
        as_lineax(op)


def test_lineax_is_imported_only_inside_functions():
    """``import jaxmtl`` never loads lineax: every ``import lineax`` of the package is deferred."""
    for path in (ROOT / "jaxmtl").rglob("*.py"):
        if "lineax" not in (text := path.read_text()):
            continue
        tree = ast.parse(text)
        scopes = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)
                  or isinstance(f, ast.If) and ast.unparse(f.test) == "TYPE_CHECKING"]
        deferred = {id(node) for f in scopes for node in ast.walk(f)}
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(name.split(".")[0] == "lineax" for name in names):
                assert id(node) in deferred, f"{path.name}:{node.lineno} imports lineax at module level"


# ------------------------------------------------------------------ jit and grad through a kernel width
CASES = {  # operator of the training inputs X for a traced Gaussian width s, and the lineax solver
    "separable-cg": (lambda s: ops.SeparableOperator(Gaussian(s)(X, X), jnp.asarray(A, s.dtype)), "cg"),
    "blocked-cholesky": (lambda s: ops.BlockedKernelOperator(Gaussian(s), jnp.asarray(X, s.dtype),
                                                             jnp.asarray(A, s.dtype), block_size=3), "cholesky"),
}
W = np.random.default_rng(4).normal(size=(8, 3))


@pytest.mark.parametrize("case", CASES)
def test_jit_and_grad_through_a_traced_kernel_width(case):
    """Built and solved inside ``jit`` from a traced width and ridge: the solution equals a dense NumPy
    solve, and ``jax.grad`` of a loss through ``linear_solve`` equals central finite differences."""
    build, solver = CASES[case]
    dtype = _dtype()
    rtol, tol = _tol(dtype)
    lin_solver = lx.CG(rtol=rtol, atol=rtol) if solver == "cg" else lx.Cholesky()
    Wd = jnp.asarray(W, dtype)

    def loss(s, ridge):
        C = lx.linear_solve(as_lineax(build(s), ridge), Wd, lin_solver).value
        return jnp.sum(C * Wd) + jnp.sum(C**2), C

    value_and_grad = jax.jit(jax.value_and_grad(loss, has_aux=True))
    s0, ridge = 0.8, jnp.asarray(RIDGE, dtype)
    (_, C), g = value_and_grad(jnp.asarray(s0, dtype), ridge)
    G = np.kron(gaussian_gram(X, X, s0), A)  # independent of jaxmtl
    _close(C, np.linalg.solve(G + RIDGE * np.eye(24), W.reshape(-1)).reshape(8, 3), tol)
    h = 1e-5 if dtype == jnp.float64 else 1e-2
    fd = (float(value_and_grad(jnp.asarray(s0 + h, dtype), ridge)[0][0])
          - float(value_and_grad(jnp.asarray(s0 - h, dtype), ridge)[0][0])) / (2 * h)
    assert abs(float(g) - fd) <= (1e-7 if dtype == jnp.float64 else 2e-3) * max(abs(fd), 1.0), (float(g), fd)


def test_the_docs_example_runs():
    text = (ROOT / "docs" / "scale.md").read_text()
    section = text.split("## Using lineax", 1)[1]
    block = re.findall(r"^```python\n(.*?)^```", section, flags=re.S | re.M)[0]
    exec(compile(block, "docs/scale.md, Using lineax", "exec"), {"__name__": "__docs__"})
