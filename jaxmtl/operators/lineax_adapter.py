r"""Gram operators as `lineax <https://github.com/patrick-kidger/lineax>`_ linear operators.

lineax (an optional dependency: ``pip install lineax``) solves linear systems with iterative
(``CG``) and dense (``Cholesky``, ``LU``, ``SVD``) solvers, differentiably. :func:`as_lineax`
wraps any training :class:`~jaxmtl.operators.GramOperator` Γ, shifted by ``ridge``·I, as a
``lineax.FunctionLinearOperator`` whose vectors are the (n, d) coefficient matrices themselves
(``jax.ShapeDtypeStruct((n, d), dtype)``), so ``lineax.linear_solve(as_lineax(op, ridge), Y)``
returns the (n, d) solution C of (Γ + ridge·I) C = Y. It is tagged symmetric and positive
semidefinite (lineax has no positive-definite tag: with ridge > 0 the shifted operator is positive
definite, which is what ``CG`` and ``Cholesky`` need at run time), so ``transpose()`` returns the
operator itself and ``AutoLinearSolver(well_posed=True)`` picks ``Cholesky``; a singular Gram
(ridge = 0) is solved in the least-squares sense by ``SVD`` (``AutoLinearSolver(well_posed=False)``).

jaxmtl's Tikhonov filter solves (Γ + nλI) C = Y (``docs/design.md``, Normalisation): that is
``ridge = n·λ``. Everything traced stays traced — the operator can be built inside ``jit`` from a
traced kernel width, and ``jax.grad`` reaches the width through ``linear_solve``. lineax is imported
when :func:`as_lineax` is called, never by ``import jaxmtl``.

Example:
    >>> import jax.numpy as jnp
    >>> import lineax as lx
    >>> from jaxmtl.operators import SeparableOperator
    >>> op = SeparableOperator(jnp.eye(3), 2.0 * jnp.eye(2))  # Γ = I ⊗ 2I
    >>> C = lx.linear_solve(as_lineax(op, ridge=1.0), jnp.ones((3, 2)), lx.CG(rtol=1e-6, atol=1e-6)).value
    >>> C.shape, round(float(C[0, 0]), 4)
    ((3, 2), 0.3333)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from .._checks import check_positive
from ..errors import DTypeError, ParameterError, ShapeError
from .base import GramOperator

if TYPE_CHECKING:
    import lineax

__all__ = ["as_lineax"]

Array = jax.Array


class _Shifted(eqx.Module):
    """C ↦ Γ C + ridge·C, in the dtype of C (the function the lineax operator wraps)."""

    op: GramOperator
    ridge: Array

    def __call__(self, C: Array) -> Array:
        return (self.op.mv(C) + self.ridge * C).astype(C.dtype)


def _import_lineax() -> Any:
    try:
        import lineax
    except ImportError:
        raise ImportError("as_lineax needs the optional dependency lineax: pip install lineax "
                          "(or pip install 'jaxmtl[lineax]').") from None
    return lineax


def as_lineax(op: GramOperator, ridge: ArrayLike = 0.0) -> lineax.AbstractLinearOperator:
    """Γ + ridge·I as a lineax operator on (n, d) coefficient matrices, tagged symmetric PSD.

    Args:
      op: a training :class:`~jaxmtl.operators.GramOperator` of ``shape`` (n, d) whose ``mv`` maps
        (n, d) to (n, d). Evaluation (cross) operators, whose rows are other inputs, are refused
        when their row count differs; one with as many rows as columns cannot be told apart from
        a training operator by its shapes, and would be taken as symmetric: pass training
        operators only.
      ridge: Tikhonov shift ≥ 0 (a number, or a traced scalar inside ``jit`` / ``grad``); jaxmtl's
        Tikhonov coefficients (Γ + nλI)⁻¹Y are ``ridge = n·λ``. Gram matrices are often singular:
        ``CG`` and ``Cholesky`` need ridge > 0 there.

    Returns:
      ``lineax.FunctionLinearOperator`` with input and output structure
      ``jax.ShapeDtypeStruct((n, d), dtype)`` (dtype: that of ``op.mv``), tags
      ``symmetric_tag`` and ``positive_semidefinite_tag``; its ``as_matrix()`` is the
      (nd, nd) matrix ``op.as_matrix() + ridge·I`` (row-major vec) and ``transpose()`` itself.
      Build it inside the jitted function, or pass it through ``equinox.filter_jit`` (its wrapped
      function is a closure-converted jaxpr, which ``jax.jit`` refuses as an argument).

    Raises:
      ImportError: lineax is not installed.
      ParameterError: ``op`` is not a GramOperator, or ``ridge`` is negative or not finite.
      ShapeError: ``op.mv`` does not map (n, d) coefficients to (n, d).
      DTypeError: ``op.mv`` does not return floating values.

    Example:
        >>> import jax.numpy as jnp
        >>> import lineax as lx
        >>> from jaxmtl.operators import DenseOperator
        >>> A = as_lineax(DenseOperator(jnp.array([[2.0, 1.0], [1.0, 2.0]]), 1), ridge=1.0)
        >>> A.in_structure().shape, A.as_matrix().tolist()
        ((2, 1), [[3.0, 1.0], [1.0, 3.0]])
        >>> C = lx.linear_solve(A, jnp.array([[4.0], [4.0]])).value  # Cholesky (symmetric PSD tags)
        >>> [round(float(c), 4) for c in C.ravel()]
        [1.0, 1.0]
    """
    lx = _import_lineax()
    if not isinstance(op, GramOperator):
        raise ParameterError(f"op must be a jaxmtl.operators.GramOperator; received {type(op).__name__}.")
    if not isinstance(ridge, jax.core.Tracer):
        check_positive(ridge, "ridge", allow_zero=True)
    n, d = op.shape
    out = jax.eval_shape(op.mv, jax.ShapeDtypeStruct((n, d), op.dtype))
    if tuple(out.shape) != (n, d):
        raise ShapeError(
            f"as_lineax needs a square Gram operator mapping ({n}, {d}) coefficients to ({n}, {d}); "
            f"{type(op).__name__}.mv maps them to shape {tuple(out.shape)} (an evaluation operator on other "
            "inputs): pass the training operator, whose rows are the training inputs.")
    if not jnp.issubdtype(out.dtype, jnp.floating):
        raise DTypeError(f"as_lineax needs an operator with floating values; {type(op).__name__}.mv returns "
                         f"{out.dtype}.")
    structure = jax.ShapeDtypeStruct((n, d), out.dtype)
    return lx.FunctionLinearOperator(_Shifted(op, jnp.asarray(ridge, out.dtype)), structure,
                                     tags=(lx.symmetric_tag, lx.positive_semidefinite_tag))
