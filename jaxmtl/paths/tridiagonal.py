r"""The Tikhonov path of a separable kernel K ⊗ A through one tridiagonal reduction of K.

The eigen path (:mod:`.eigen`) needs the eigenvectors U of K: with LAPACK's divide-and-conquer
``syevd`` that is K, U and a workspace of 2n² numbers — about 4 n × n matrices. A resolvent
filter does not need U: with the Householder reduction K = Q T Qᵀ (``sytrd``, in place in K's
buffer, T tridiagonal) and A = V diag(a) Vᵀ,

    (K a_j / n + λ I)⁻¹ = Q (T a_j / n + λ I)⁻¹ Qᵀ,

so the outputs are projected once (Ỹ = Qᵀ Y V, n × d, the reflectors applied without forming
Q), every λ and output direction j is a tridiagonal solve of O(n) on a column of Ỹ, and the
evaluation Gram is rotated once (K_eval Q). Memory: K, K_eval, K_eval Q and O(n·d·P) — never U
nor Q, and no workspace of size n². XLA's layouts still add transient copies of K: LAPACK reduces
a column-major copy of the (row-major) K, and the loop applying Q reads a row-major copy of the
reflectors, each freed once made, so two n × n buffers are live at those two moments. The numbers equal the eigen path's
for :class:`~jaxmtl.filters.Tikhonov` and :class:`~jaxmtl.filters.IteratedTikhonov` (order ν:
ν resolvent solves per λ, c_k = (Γ/n + λ)⁻¹(y/n + λ c_{k−1})); other filters need the
spectrum itself and take the eigen path.

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.filters import Tikhonov
    >>> K = jnp.eye(4); Y = jnp.ones((4, 2))
    >>> tridiagonal_path(K, Y, jnp.array([1.0, 0.1]), K_eval=K).shape
    (2, 4, 2)
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from .._checks import check_positive_array
from .._jit import jit
from ..errors import ParameterError, ShapeError
from ..filters.spectral import IteratedTikhonov, SpectralFilter, Tikhonov
from ..linalg import clip_psd, eigh
from .eigen import mse_loss
from ..products import full_precision

__all__ = ["tridiagonal_path"]

Array = jax.Array


def _orders(filt: SpectralFilter) -> int:
    """Number of resolvent solves per λ of a resolvent filter; ParameterError for others."""
    if type(filt) is Tikhonov:
        return 1
    if type(filt) is IteratedTikhonov:
        return filt.order
    raise ParameterError(
        f"tridiagonal_path takes a resolvent filter (Tikhonov or IteratedTikhonov); received "
        f"{type(filt).__name__}. Use spectral_path (the eigen path) for filters of the spectrum.")


BLOCK = 64  # reflectors applied together: one compact-WY block, three thin GEMMs


def _block(refl: Array, taus: Array, b: Array, nb: int) -> tuple[Array, Array]:
    """(V, T) of reflectors b·nb … b·nb+nb−1: their product is I − V T Vᵀ (V: n × nb, T: nb × nb).

    Reflector r of ``lax.linalg.tridiagonal`` (lower) has v_r = 1 at row r+1 and ``refl[r+2:, r]``
    below. The slice of columns is clamped to the matrix, so columns before b·nb (already
    applied), past the last reflector or with τ = 0 (H = I) are zero columns. T is the inverse of
    diag(1/τ) + the strict upper triangle of VᵀV (the "UT transform" of the compact WY form).
    """
    n = refl.shape[0]
    start = jnp.minimum(b * nb, n - nb)
    r = start + jnp.arange(nb)  # (nb,) reflector indices
    tau = jax.lax.dynamic_slice(jnp.append(taus, 0.0), (start,), (nb,))
    valid = (r >= b * nb) & (r < n - 1) & (tau != 0)
    rows = jnp.arange(n)[:, None]
    cols = jax.lax.dynamic_slice(refl, (0, start), (n, nb))
    V = jnp.where(rows > r[None, :] + 1, cols, (rows == r[None, :] + 1).astype(refl.dtype))
    V = jnp.where(valid[None, :], V, 0.0)
    inv_t = jnp.triu(V.T @ V, 1) + jnp.diag(jnp.where(valid, 1.0 / jnp.where(valid, tau, 1.0), 1.0))
    eye = jnp.eye(nb, dtype=refl.dtype)
    T = jax.lax.linalg.triangular_solve(inv_t, eye, left_side=True, lower=False)
    return V, T


def _apply_q(refl: Array, taus: Array, M: Array, side: str) -> Array:
    """Qᵀ M (side 'qt'), Q M ('q') or M Q ('mq') for the Q = H_0 ⋯ H_{n−2} of a tridiagonal reduction.

    Q is never formed, and ``refl`` (n × n, the reduced K) is only read in n × ``BLOCK`` panels: the
    memory is M and its update. (LAPACK's ``ormqr`` would need the reflectors copied to a
    (n−1) × (n−1) slice, a second n × n matrix.)
    """
    n = refl.shape[0]
    nb = min(BLOCK, n)
    n_blocks = -(-(n - 1) // nb) if n > 1 else 0

    def body(i, M):
        b = n_blocks - 1 - i if side == "q" else i  # Q M applies the last block first
        V, T = _block(refl, taus, b, nb)
        if side == "mq":
            return M - ((M @ V) @ T) @ V.T
        return M - V @ ((T.T if side == "qt" else T) @ (V.T @ M))

    return jax.lax.fori_loop(0, n_blocks, body, M)


def _tridiagonal_path(K, Y, params, K_eval, Y_eval, w_eval, A, filt, n, output, loss):
    n_rows, d = Y.shape
    n = n_rows if n is None else n
    if A is None:
        a, V = jnp.ones((d,), Y.dtype), None
    else:
        a, V = eigh(A)
        a = clip_psd(a)
    refl, diag, off, taus = jax.lax.linalg.tridiagonal(K, lower=True)
    Yt = _apply_q(refl, taus, Y if V is None else Y @ V, "qt")  # (n, d) Qᵀ Y V
    order = _orders(filt)
    scale = a / n  # (d,): the eigenvalues of Γ/n are those of T scaled per output direction
    lo = jnp.pad(off[None, :] * scale[:, None], ((0, 0), (1, 0)))  # (d, n) sub-diagonals, lo[:, 0] = 0
    up = jnp.pad(off[None, :] * scale[:, None], ((0, 0), (0, 1)))  # (d, n) super-diagonals, up[:, -1] = 0
    rhs = (Yt.T / n)[:, :, None]  # (d, n, 1)

    def rotated(lam):
        """(n, d) c̃ of one λ (C = Q c̃ Vᵀ): ``order`` tridiagonal solves per output direction."""
        dd = diag[None, :] * scale[:, None] + lam

        def step(c, _):
            return jax.lax.linalg.tridiagonal_solve(lo, dd, up, rhs + lam * c), None

        c, _ = jax.lax.scan(step, jnp.zeros_like(rhs), None, length=order)
        return c[:, :, 0].T

    Ct = jax.vmap(rotated)(params)  # (P, n, d)
    P, n_rows = Ct.shape[:2]
    back = (lambda F: F) if V is None else (lambda F: F @ V.T)
    if output == "coefficients":
        wide = Ct.transpose(1, 0, 2).reshape(n_rows, P * d)
        C = _apply_q(refl, taus, wide, "q")  # Q c̃ for every λ at once
        return back(C.reshape(n_rows, P, d).transpose(1, 0, 2))
    KQ = _apply_q(refl, taus, K_eval, "mq")  # (m, n) K_eval Q
    wide = (Ct * a).transpose(1, 0, 2).reshape(n_rows, P * d)
    F = back((KQ @ wide).reshape(KQ.shape[0], P, d).transpose(1, 0, 2))  # one GEMM for every λ
    if output == "predictions":
        return F
    return jax.vmap(lambda f: loss(f, Y_eval, w_eval))(F)


_tridiagonal_path_jit = jit(_tridiagonal_path, static_argnames=("filt", "output", "loss"))


@full_precision
def tridiagonal_path(
    K: Array,
    Y: Array,
    params: Array,
    K_eval: Array | None = None,
    Y_eval: Array | None = None,
    w_eval: Array | None = None,
    A: Array | None = None,
    filt: SpectralFilter = Tikhonov(),
    n: ArrayLike | None = None,
    output: str = "predictions",
    loss: Callable = mse_loss,
) -> Array:
    """The Tikhonov (or iterated Tikhonov) path of K ⊗ A with one n × n matrix in memory.

    Same numbers as ``spectral_path(separable_eigh(K, A), Y, filt, params, ...)`` (see the module
    docstring); the reduction K = Q T Qᵀ replaces the eigendecomposition, so the call holds K's
    buffer (the reflectors), K_eval and K_eval Q but never U nor ``syevd``'s 2n² workspace.
    Compiled; inside a caller's ``jit`` a K built there (and not used after) is reduced in its
    own buffer, otherwise the reduction works on one copy of K.

    Args:
      K: (n, n) symmetric PSD Gram (its lower triangle is read).
      Y: (n, d) training outputs.
      params: (P,) λ values (> 0).
      K_eval: (m, n) cross-Gram, for ``output`` 'predictions' or 'loss'.
      Y_eval: (m, d) evaluation targets, for 'loss'; w_eval: (m,) row weights (default uniform).
      A: (d, d) symmetric PSD output matrix (default I).
      filt: :class:`~jaxmtl.filters.Tikhonov` or :class:`~jaxmtl.filters.IteratedTikhonov`.
      n: normaliser (default ``Y.shape[0]``).
      output: 'coefficients' → (P, n, d); 'predictions' → (P, m, d); 'loss' → (P,).
      loss: ``loss(F, Y, w)`` for 'loss'.

    Raises:
      ParameterError: another filter or output, or λ not finite and positive;
      ShapeError: inconsistent shapes.

    Example:
        >>> K = jnp.array([[2.0, 1.0], [1.0, 2.0]]); Y = jnp.ones((2, 1))
        >>> [round(float(v), 4) for v in tridiagonal_path(K, Y, jnp.array([0.5]), output="coefficients")[0, :, 0]]
        [0.25, 0.25]
    """
    _orders(filt)
    K, Y = jnp.asarray(K), jnp.asarray(Y)
    if not isinstance(params, jax.core.Tracer):  # concrete λ are checked; traced ones are the caller's
        params = check_positive_array(params, "params")
    if output not in ("coefficients", "predictions", "loss"):
        raise ParameterError(f"output must be 'coefficients', 'predictions' or 'loss'; received {output!r}.")
    n_rows, d = Y.shape
    if K.shape != (n_rows, n_rows) or (A is not None and A.shape != (d, d)):
        raise ShapeError(f"tridiagonal_path needs K ({n_rows}, {n_rows}) and A ({d}, {d}) for Y of shape "
                         f"{Y.shape}; received K {K.shape} and A {None if A is None else A.shape}.")
    if output != "coefficients" and (K_eval is None or K_eval.shape[1:] != (n_rows,)):
        raise ShapeError(f"output={output!r} needs K_eval of shape (m, {n_rows}); received "
                         f"{None if K_eval is None else K_eval.shape}.")
    if output == "loss":
        m = K_eval.shape[0]  # type: ignore[union-attr]  # checked above
        if Y_eval is None or Y_eval.shape != (m, d):
            raise ShapeError(f"output='loss' needs Y_eval of shape ({m}, {d}); received "
                             f"{None if Y_eval is None else Y_eval.shape}.")
        if w_eval is None:
            w_eval = jnp.full((Y_eval.shape[0],), 1.0 / Y_eval.shape[0], Y.dtype)
    return _tridiagonal_path_jit(K, Y, jnp.asarray(params, Y.dtype), K_eval, Y_eval, w_eval, A, filt, n,
                                 output, loss)
