r"""Differentiable validation criteria and their minimisation by optax.

Continuous hyperparameters — kernel widths (one per feature for ARD), the ω of the
common-similarity family A_ω = ω11ᵀ + (1 − ω)I ([BRBV11] eq. 18), a low-rank output factor B
(A = BBᵀ, [MP04] §3), the Tikhonov λ — are learned by gradient descent on a validation loss.

Criteria (all differentiable with ``jax.grad``):

* :func:`kfold_tikhonov_loss` — k-fold squared loss of the Tikhonov solution
  (K ⊗ A + nλI) vec C = vec Y. Its gradient is by implicit differentiation
  (:func:`tikhonov_solve`): with S(C) = KCA + nλC self-adjoint and W = S⁻¹(C̄),
  K̄ = −W A Cᵀ, Ā = −Cᵀ K W, λ̄ = −n⟨W, C⟩, Ȳ = W — one more solve with the same factors, no
  derivative of an eigendecomposition (whose derivative is unstable where eigenvalues cluster,
  as those of a Gaussian Gram do near 0, or repeat, as those of A_ω do).
* :func:`eigen_criterion` — closed-form leave-one-out or GCV on the eigen path
  (:mod:`jaxmtl.selection`), differentiated through ``eigh(K)``; for an iterative filter the
  step count is replaced by a smooth surrogate, the soft minimum over the path
  (:func:`soft_min`). Use it on small, well-conditioned problems.
* :func:`checkpointed_path_losses` — the matrix-free Landweber / ν-method path
  (:mod:`jaxmtl.paths.scan`) with reverse mode in bounded memory: the steps run as a scan over
  chunks, each chunk under ``jax.checkpoint``, so the backward pass stores one state per chunk
  and recomputes the steps inside it; with :class:`RematKernelOperator` (training) and
  :class:`RematCrossOperator` (validation) every kernel block is recomputed too, so no n × n
  matrix is ever held: memory O(n·d·(T/chunk + chunk) + block·n).

Parameters are constrained by reparametrisation, never clipping (:func:`constrain`):
'positive' → softplus, 'unit' → sigmoid, 'real' → identity (a factor B gives A = BBᵀ ⪰ 0).
:func:`minimize` runs Adam or L-BFGS as one ``lax.scan`` over optimiser steps.

Example:
    >>> import jax, jax.numpy as jnp
    >>> K = jnp.eye(3) + 0.1; Y = jnp.ones((3, 1))
    >>> g = jax.grad(lambda lam: jnp.sum(tikhonov_solve(K, jnp.eye(1), Y, lam)))(0.5)
    >>> bool(g < 0)
    True
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from .._jit import jit
from ..errors import ParameterError, ShapeError
from ..filters.spectral import IterativeFilter, SpectralFilter, Tikhonov
from ..kernels.scalar import Kernel
from ..linalg import clip_psd, eigh
from ..operators.base import (
    GramOperator,
    SeparableEigh,
    max_eigenvalue,
    separable_solve,
)
from ..operators.blocked import (
    BlockedCrossOperator,
    BlockedKernelOperator,
    pad_rows,
)
from ..paths.eigen import mse_loss
from ..selection.criteria import gcv_path, loo_path
from ..products import full_precision

__all__ = [
    "TRANSFORMS",
    "RematCrossOperator",
    "RematKernelOperator",
    "checkpointed_path_losses",
    "constrain",
    "eigen_criterion",
    "kfold_tikhonov_loss",
    "minimize",
    "partition_kernel",
    "soft_min",
    "tikhonov_solve",
    "unconstrain",
]

Array = jax.Array

# name -> (to constrained, to unconstrained)
TRANSFORMS = {
    "positive": (jax.nn.softplus, lambda y: y + jnp.log(-jnp.expm1(-y))),
    "unit": (jax.nn.sigmoid, lambda y: jnp.log(y) - jnp.log1p(-y)),
    "real": (lambda x: x, lambda y: y),
}


def _transform(tree: dict, spec: dict, which: int) -> dict:
    unknown = set(spec.values()) - set(TRANSFORMS)
    if unknown:
        raise ParameterError(f"constraints must be one of {sorted(TRANSFORMS)}; received {sorted(unknown)}.")
    return {k: jax.tree_util.tree_map(TRANSFORMS[spec[k]][which], v) for k, v in tree.items()}


def constrain(raw: dict, spec: dict) -> dict:
    """Map unconstrained parameters to their domains: softplus (>0), sigmoid ((0, 1)), identity.

    Args:
      raw: dict name → array (or pytree of arrays); spec: dict name → 'positive' | 'unit' | 'real'.

    Example:
        >>> constrain({"w": jnp.array(0.0)}, {"w": "unit"})["w"]
        Array(0.5, dtype=float32, weak_type=True)
    """
    return _transform(raw, spec, 0)


def unconstrain(params: dict, spec: dict) -> dict:
    """Inverse of :func:`constrain` (softplus⁻¹(y) = y + log(1 − e^{−y}), logit).

    Example:
        >>> float(unconstrain({"s": jnp.array(2.0)}, {"s": "positive"})["s"]) > 1.8
        True
    """
    return _transform(params, spec, 1)


@jax.custom_vjp
@full_precision
def tikhonov_solve(K: Array, A: Array, Y: Array, lam: ArrayLike) -> Array:
    """C with K C A + nλ C = Y (:func:`~jaxmtl.operators.separable_solve`), implicit gradients.

    Args:
      K: (n, n) PSD; A: (d, d) PSD; Y: (n, d); lam: λ > 0 (library normalisation, alpha = nλ).

    Returns:
      (n, d) C; ``jax.grad`` flows to K, A, Y and λ through one adjoint solve.
    """
    return separable_solve(K, A, Y, lam)


@full_precision
def _solve_fwd(K, A, Y, lam):
    C = separable_solve(K, A, Y, lam)
    return C, (K, A, C, lam)


@full_precision
def _solve_bwd(res, Cbar):
    K, A, C, lam = res
    W = separable_solve(K, A, Cbar, lam)  # S is self-adjoint: S*(W) = K W A + nλ W
    n = C.shape[0]
    return -W @ (A @ C.T), -C.T @ (K @ W), W, -n * jnp.sum(W * C)


tikhonov_solve.defvjp(_solve_fwd, _solve_bwd)


@full_precision
def kfold_tikhonov_loss(K: Array, A: Array, Y: Array, lam: ArrayLike, masks: Array, loss: Callable = mse_loss,
                        offset: Array | None = None, held: Array | None = None) -> Array:
    """Mean over folds of the held-out loss of the Tikhonov solution (differentiable).

    Fold f trains on ``masks[f]``: K's held-out rows and columns and Y's held-out rows are set to
    zero, so the held-out coefficients are exactly 0 and the others solve the reduced problem
    (as :func:`~jaxmtl.selection.kfold_path`), with n the fold's training size.

    Args:
      K: (n, n) Gram of all inputs; A: (d, d); Y: (n, d); lam: λ (library normalisation);
      masks: (k, n) boolean training masks; loss: ``loss(F, Y, w)``; offset: (d,) added to F and
      Y before the loss (the intercept of centred outputs); held: (k, n) boolean held-out masks
      (default ``~masks``): a row in neither mask of a fold (a size bucket's padding) has weight
      0 in its solve and its loss.

    Returns:
      scalar.

    Example:
        >>> K, Y = jnp.eye(4), jnp.arange(4.0)[:, None]
        >>> masks = jnp.array([[True, True, False, False], [False, False, True, True]])
        >>> float(kfold_tikhonov_loss(K, jnp.eye(1), Y, 0.1, masks))  # identity Gram: held-out predictions 0
        3.5
    """
    if held is not None and jnp.shape(held) != jnp.shape(masks):
        raise ShapeError(f"held must have the shape of masks {jnp.shape(masks)}; received {jnp.shape(held)}.")
    n = Y.shape[0]
    off = jnp.zeros((Y.shape[1],), Y.dtype) if offset is None else offset

    def one(m, h):
        mf, hf = m.astype(K.dtype), h.astype(K.dtype)
        n_train = jnp.sum(mf)
        C = tikhonov_solve(K * mf[:, None] * mf[None, :], A, Y * mf[:, None], lam * n_train / n)
        F = (K @ (C * mf[:, None])) @ A
        return loss(F + off, Y + off, hf / jnp.sum(hf))

    return jnp.mean(jax.vmap(one)(masks, ~masks if held is None else held))


def soft_min(losses: Array, temperature: ArrayLike = 0.05) -> Array:
    """Smooth minimum −τ log((1/T) Σ_t exp(−ℓ_t/τ)), τ = temperature·min ℓ (a surrogate of the best step).

    Tends to min ℓ as ``temperature`` → 0; non-finite losses are ignored. τ moves with min ℓ, and
    ``jax.grad`` differentiates it too: the gradient is that of the value returned (away from a
    change of the minimising step).

    Example:
        >>> float(soft_min(jnp.array([1.0, 1.0]), 1e-9)) == 1.0
        True
    """
    finite = jnp.isfinite(losses)
    low = jnp.min(jnp.where(finite, losses, jnp.inf))
    # τ follows min ℓ (so the gradient is that of the value returned); the shift by min ℓ only
    # keeps the exponentials in range and cancels exactly, so it carries no gradient.
    tau = temperature * jnp.maximum(low, jnp.finfo(losses.dtype).tiny)
    shift = jax.lax.stop_gradient(low)
    z = jnp.where(finite, -(jnp.where(finite, losses, shift) - shift) / tau, -jnp.inf)
    return shift - tau * (jax.nn.logsumexp(z) - jnp.log(jnp.sum(finite)))


@full_precision
def eigen_criterion(K: Array, a: Array, V: Array, Y: Array, param: float | Array, filt: SpectralFilter | None = None,
                    criterion: str = "loo", temperature: ArrayLike = 0.05, n: ArrayLike | None = None) -> Array:
    """Closed-form LOO or GCV on the eigen path of K ⊗ A, A = V diag(a) Vᵀ (differentiable).

    Pass the eigenvectors V of the output family as a constant (A_ω shares V for every ω, so its
    eigenvalues a(ω) carry the gradient). With Tikhonov (default) ``param`` is a continuous λ;
    with an iterative filter ``param`` is the path length T and the criterion is the
    :func:`soft_min` of the path (a smooth surrogate of the best step).

    Args:
      K: (n, n); a: (d,); V: (d, d); Y: (n, d); param: λ or T; filt: filter (default Tikhonov);
      criterion: 'loo' or 'gcv'; n: the real rows, the first n of K and Y (default all; may be
        traced): the others a size bucket's padding, zero in Y and in K's rows and columns.

    Returns:
      scalar.
    """
    filt = Tikhonov() if filt is None else filt
    s, U = eigh(K)
    eig = SeparableEigh(clip_psd(s), U, a, V)
    criteria: dict[str, Callable[..., Array]] = {"loo": loo_path, "gcv": gcv_path}
    fn = criteria.get(criterion)
    if fn is None:
        raise ParameterError(f"criterion must be 'loo' or 'gcv'; received {criterion!r}.")
    if isinstance(filt, IterativeFilter):
        return soft_min(fn(eig, Y, filt, jnp.arange(1, int(param) + 1), n=n), temperature)
    return fn(eig, Y, filt, jnp.reshape(param, (1,)), n=n)[0]


@partial(jax.custom_vjp, nondiff_argnums=(5,))
def _remat_matmul(kernel, X1: Array, X2: Array, C: Array, A: Array, block_size: int) -> Array:
    """K(X1, X2) @ (C A) in row blocks of X1; reverse mode recomputes each block (custom VJP).

    The VJP keeps only the operands (kernel, X1, X2, C, A) — C, not the product C A, so that
    inside a path the residual of a step is the coefficient state the step carries anyway — and
    runs one scan over the blocks, each pulling its cotangent rows back through the recomputed
    K(X_b, X2) @ M: memory O(block·n2 + n2·d), the same bound as the forward, however many
    products a path differentiates through.
    """
    return _blocked_products(kernel, X1, X2, C @ A, block_size)


def _blocked_products(kernel, X1, X2, M, block_size):
    """K(X1, X2) @ M block by block; each block is tied to M by an optimisation barrier, so that inside
    a loop over path steps the compiler cannot hoist the (step-invariant) kernel blocks out of the loop
    and hold all of them — the whole n1 × n2 matrix — at once."""
    n1 = X1.shape[0]
    if block_size >= n1:
        return kernel(X1, X2) @ M
    Xp, n_blocks = pad_rows(X1, block_size)

    def one(B):
        B, X2b, kern, Mb = jax.lax.optimization_barrier((B, X2, kernel, M))
        return kern(B, X2b) @ Mb

    out = jax.lax.map(one, Xp.reshape(n_blocks, block_size, -1))
    return out.reshape(n_blocks * block_size, -1)[:n1]


@full_precision
def _remat_fwd(kernel, X1, X2, C, A, block_size):
    return _blocked_products(kernel, X1, X2, C @ A, block_size), (kernel, X1, X2, C, A)


@full_precision
def _remat_bwd(block_size, res, G):
    kernel, X1, X2, C, A = res
    M = C @ A
    n1 = X1.shape[0]
    block_size = min(block_size, n1)
    Xp, n_blocks = pad_rows(X1, block_size)
    Gp = jnp.concatenate([G, jnp.zeros((n_blocks * block_size - n1,) + G.shape[1:], G.dtype)])

    def body(acc, xs):
        B, Gb = xs
        B, X2b, kern, Mb, Gb = jax.lax.optimization_barrier((B, X2, kernel, M, Gb))  # as in the forward
        _, vjp = jax.vjp(lambda k, B, X2, M: k(B, X2) @ M, kern, B, X2b, Mb)
        kbar, Bbar, X2bar, Mbar = vjp(Gb)
        acc = jax.tree_util.tree_map(jnp.add, acc, (kbar, X2bar, Mbar))
        return acc, Bbar

    zeros = jax.tree_util.tree_map(jnp.zeros_like, (kernel, X2, M))
    (kbar, X2bar, Mbar), Bbars = jax.lax.scan(
        body, zeros, (Xp.reshape(n_blocks, block_size, -1), Gp.reshape(n_blocks, block_size, -1)))
    X1bar = Bbars.reshape(n_blocks * block_size, -1)[:n1]
    return kbar, X1bar, X2bar, Mbar @ A.T, C.T @ Mbar


_remat_matmul.defvjp(_remat_fwd, _remat_bwd)


class RematKernelOperator(BlockedKernelOperator):
    """:class:`~jaxmtl.operators.BlockedKernelOperator` whose kernel blocks are rematerialised.

    Each block K(X_b, X) C A is rematerialised: reverse mode (a custom VJP) keeps only the product's
    operands — C, not C A — and recomputes K(X_b, X) when it needs it, so a gradient through many
    products never stores an n × n matrix (memory O(block·n + n·d)).
    """

    @full_precision
    def mv(self, C: Array) -> Array:
        return _remat_matmul(self.kernel, self.X, self.X, C, self.A, self.block_size)


class RematCrossOperator(BlockedCrossOperator):
    """:class:`~jaxmtl.operators.BlockedCrossOperator` (predictions K(X_eval, X) C A) whose kernel
    blocks are rematerialised: the ``eval_op`` of :func:`checkpointed_path_losses`.

    Without it, reverse mode through a path keeps the validation blocks of every step of a chunk
    (chunk·m·n numbers); with it, only the blocks' inputs.
    """

    @full_precision
    def mv(self, C: Array) -> Array:
        return _remat_matmul(self.kernel, self.X_eval, self.X, C, self.A, self.block_size)


@partial(jit, static_argnames=("filt", "n_steps", "chunk", "loss"))
@full_precision
def checkpointed_path_losses(op: GramOperator, Y: Array, filt: IterativeFilter, n_steps: int,
                             eval_op: GramOperator, Y_eval: Array, w_eval: Array | None = None,
                             tau: ArrayLike | None = None, mask: Array | None = None,
                             chunk: int = 0, loss: Callable = mse_loss) -> Array:
    """(T,) validation losses of a matrix-free iterative path, reverse-differentiable in bounded memory.

    The same recurrence and normalisation as :func:`~jaxmtl.paths.path_scan` (C_t = g_t(Γ/n)Y/n,
    masked rows absent), without its divergence bookkeeping: pass a safe ``tau`` or let it be
    estimated (Lanczos, not differentiated). The T steps run as T/chunk chunks; each chunk is a
    ``jax.checkpoint``-ed ``lax.scan``, so reverse mode stores T/chunk states and recomputes one
    chunk at a time. ``chunk=0`` picks ⌈√T⌉ (memory O(√T·n·d)); ``chunk=T`` is the plain scan.

    Args:
      op: training operator; Y: (n, d); filt: iterative filter (static); n_steps: T (static,
      a multiple of ``chunk``); eval_op: maps coefficients to (m, d) predictions (a
      :class:`RematCrossOperator` keeps the reverse pass free of m × n blocks); Y_eval: (m, d);
      w_eval: (m,) weights (default uniform); tau: step size; mask: (n,) training mask;
      chunk: steps per checkpointed chunk (static); loss: ``loss(F, Y, w)``.
    """
    dtype = Y.dtype
    chunk = chunk or max(1, round(n_steps**0.5))
    if n_steps % chunk:
        raise ParameterError(f"n_steps={n_steps} must be a multiple of chunk={chunk}.")
    m = jnp.ones((Y.shape[0], 1), dtype) if mask is None else mask.astype(dtype)[:, None]
    n = jnp.sum(m)
    rhs = Y * m / n

    def matvec(C):
        # the iterates vanish off the mask (C⁰ = 0, rhs and every product masked), so C needs no
        # masking before the product: the residual a step keeps is then its state C itself
        return m * op.mv(C) / n

    if tau is None:
        tau = 1.0 / jax.lax.stop_gradient(max_eigenvalue(lambda C: matvec(m * C), Y.shape, dtype))
    if w_eval is None:
        w_eval = jnp.full((Y_eval.shape[0],), 1.0 / Y_eval.shape[0], dtype)

    def held_out(state):
        return loss(eval_op.mv(filt.current(state)), Y_eval, w_eval)

    def step(state, i):
        # step i scores C_{i-1}, the state it receives, then moves to C_i: both products read the
        # same C, the one residual reverse mode keeps per step (scoring C_i after the update
        # would keep C_i a second time)
        return filt.update(state, i, rhs, matvec, tau)[0], held_out(state)

    @jax.checkpoint
    def run_chunk(state, idx):
        return jax.lax.scan(step, state, idx)

    steps = jnp.arange(1, n_steps + 1).reshape(n_steps // chunk, chunk)
    last, losses = jax.lax.scan(run_chunk, filt.init(rhs), steps)
    return jnp.concatenate([losses.reshape(-1)[1:], held_out(last)[None]])  # C_1, …, C_T


@full_precision
def minimize(fun: Callable, raw0: Any, optimizer: str = "adam", n_steps: int = 200,
             learning_rate: float = 0.05, args: tuple = ()) -> tuple[Any, Array]:
    """Minimise ``fun(raw, *args)`` over an unconstrained pytree with optax, as one ``lax.scan``.

    Adam (``optax.adam(learning_rate)``) or L-BFGS (``optax.lbfgs`` with its zoom line search).
    A step whose loss or gradient is not finite is skipped (the parameters stay where they were);
    the best iterate seen is returned, not the last.

    The program is compiled once per ``fun`` (by hash and equality), optimiser, step count, rate and
    argument shapes: pass the data as ``args``, not closed over, and a module-level ``fun`` (or a
    hashable, equality-comparable callable object) serves every call with data of the same shapes
    without compiling again; a new closure compiles anew.

    Args:
      fun: scalar function of the pytree (and ``args``); raw0: starting pytree; optimizer: 'adam'
        or 'lbfgs'; n_steps: optimiser steps; learning_rate: Adam's step size; args: pytrees
        passed to ``fun`` after the parameters (not differentiated).

    Returns:
      (best pytree, (n_steps,) loss trace).

    Example:
        >>> best, trace = minimize(lambda p: (p["x"] - 3.0) ** 2, {"x": jnp.array(0.0)}, "lbfgs", 20)
        >>> round(float(best["x"]), 4)
        3.0
    """
    if optimizer not in ("adam", "lbfgs"):
        raise ParameterError(f"optimizer must be 'adam' or 'lbfgs'; received {optimizer!r}.")
    try:
        hash(fun)
    except TypeError:  # an unhashable callable (a module holding arrays): a closure, compiled per call
        fun = partial(_call, fun)
    return _minimize(fun, optimizer, int(n_steps), float(learning_rate), raw0, tuple(args))


def _call(fun, raw, *args):
    return fun(raw, *args)


@partial(jit, static_argnames=("fun", "optimizer", "n_steps", "learning_rate"))
def _minimize(fun, optimizer, n_steps, learning_rate, raw0, args):
    import optax  # imported here: a gradient search is the only user, and optax takes ~0.3 s to import

    def f(raw):
        return fun(raw, *args)

    opt = optax.adam(learning_rate) if optimizer == "adam" else optax.lbfgs()
    value_and_grad = optax.value_and_grad_from_state(f) if optimizer == "lbfgs" else jax.value_and_grad(f)

    def body(carry, _):
        raw, state, best, best_val = carry
        if optimizer == "lbfgs":
            val, grad = value_and_grad(raw, state=state)
            updates, new_state = opt.update(grad, state, raw, value=val, grad=grad, value_fn=f)
        else:
            val, grad = value_and_grad(raw)
            updates, new_state = opt.update(grad, state, raw)
        finite = jnp.isfinite(val) & jnp.all(jnp.array(
            [jnp.all(jnp.isfinite(g)) for g in jax.tree_util.tree_leaves(grad)]))
        better = finite & (val < best_val)
        best = jax.tree_util.tree_map(lambda r, b: jnp.where(better, r, b), raw, best)
        best_val = jnp.where(better, val, best_val)
        new_raw = optax.apply_updates(raw, updates)
        keep = lambda new, old: jnp.where(finite, new, old)
        raw = jax.tree_util.tree_map(keep, new_raw, raw)
        state = jax.tree_util.tree_map(keep, new_state, state)
        return (raw, state, best, best_val), val

    state0 = opt.init(raw0)
    carry0 = (raw0, state0, raw0, jnp.asarray(jnp.inf, jax.tree_util.tree_leaves(raw0)[0].dtype))
    (raw, _, best, best_val), trace = jax.lax.scan(body, carry0, None, length=n_steps)
    last = f(raw)
    best = jax.tree_util.tree_map(lambda r, b: jnp.where(last < best_val, r, b), raw, best)
    return best, trace


@full_precision
def partition_kernel(kernel: Kernel) -> tuple[Kernel, Kernel]:
    """(array leaves, rest) of a kernel pytree: its continuous hyperparameters and the static rest."""
    return eqx.partition(kernel, eqx.is_inexact_array)
