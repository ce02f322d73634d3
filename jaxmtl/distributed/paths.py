r"""Matrix-free paths, k-fold selection and Nyström statistics on rows spread over processes.

The arrays are global (:func:`~jaxmtl.distributed.data.global_rows`): rows padded to n_pad and
sharded over a ``("rows",)`` mesh, with ``valid`` (n_pad,) False on the padding. Everything runs
in one compiled program per call, the same on every process:

* :func:`kfold_path_losses` — kernels (``lax.map``) × folds (``vmap``) × steps (``lax.scan``) of
  the ν-method / Landweber path (:func:`~jaxmtl.paths.scan.path_scan`) on the exact kernel
  operator :class:`~jaxmtl.operators.sharded.ShardedKernelOperator`: each product all-gathers X
  and C (n·(p + d) numbers per step) and each device evaluates its rows of K in blocks; norms,
  losses and the Lanczos step size are all-reductions inserted by XLA. Losses come back
  replicated, so every process selects the same (width, step).
* :func:`refit_path` — the path on all valid rows to the selected step; coefficients stay sharded.
* :func:`predict_rows` — K(X_eval, X) C A for a block of evaluation rows: each device multiplies
  by its own training rows and a ``psum`` adds them (n_eval·d numbers per block).
* :func:`feature_statistics_global` — the Nyström route: ΦᵀΦ, ΦᵀY, YᵀY per fold, accumulated on
  each device over its rows (:func:`~jaxmtl.operators.nystrom.accumulate_statistics`) and summed
  by one ``psum``; the D × D problems (:func:`~jaxmtl.paths.preconditioned.feature_kfold_losses`)
  are then small and replicated.

Equality with one process: the padding rows carry zero weight in every sum and the Lanczos start
vector is the unpadded run's draw with the padding zeroed (``max_eigenvalue(start=)``), so the
paths equal :func:`~jaxmtl.paths.scan.grid_path_losses` / ``path_scan`` on one process up to the
summation order of the products (float64: ~1e-14 relative).

Example:
    >>> import jax.numpy as jnp, numpy as np
    >>> from jaxmtl.kernels import Gaussian
    >>> from jaxmtl.distributed.data import global_rows
    >>> from jaxmtl.distributed.mesh import global_mesh
    >>> mesh = global_mesh()
    >>> X = global_rows(np.linspace(0, 1, 12)[:, None], mesh); Y = jnp.sin(3 * X)
    >>> op = distributed_operator(Gaussian(0.3), X, jnp.eye(1), mesh)
    >>> valid = jnp.ones(12, bool); masks = jnp.asarray(np.arange(12)[None] % 3 != np.arange(3)[:, None])
    >>> losses, diverged = kfold_path_losses(op, Gaussian(jnp.array([0.3])), Y, valid, masks, "nu_method", 10)
    >>> losses.shape
    (1, 3, 10)
"""

from __future__ import annotations

from functools import partial

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec
from jax.typing import ArrayLike

from .._jit import jit
from ..filters.spectral import IterativeFilter, get_filter
from ..kernels.scalar import Kernel
from ..operators.blocked import blocked_kernel_matmul
from ..operators.nystrom import FeatureMap, FeatureStatistics, accumulate_statistics
from ..operators.sharded import AXIS, ShardedKernelOperator
from ..paths.eigen import mse_loss
from ..paths.scan import path_scan, step_size
from ..products import full_precision

__all__ = ["distributed_operator", "feature_statistics_global", "kfold_path_losses", "predict_rows",
           "refit_path", "step_size"]

Array = jax.Array


def distributed_operator(kernel: Kernel, X: Array, A: ArrayLike, mesh: Mesh, block_size: int = 1024) -> ShardedKernelOperator:
    """Γ = K(X, X) ⊗ A on the global padded rows X (n_pad, p), evaluated in blocks on every device."""
    return ShardedKernelOperator(kernel, X, A, mesh, block_size)


@partial(jit, static_argnames=("filt", "n_steps"))
def _kfold(op, kernels, Y, valid, masks, filt, n_steps, report):
    dtype = Y.dtype

    def per_kernel(kern):
        o = eqx.tree_at(lambda t: t.kernel, op, kern)

        def per_mask(m):
            train = m & valid
            held = (valid & ~m).astype(dtype)
            res = path_scan(o, Y, filt, n_steps, o, Y, held / jnp.sum(held), step_size(o, Y, train, valid),
                            train, mse_loss, report)
            return res.losses, res.diverged

        return jax.vmap(per_mask)(masks)

    return jax.lax.map(per_kernel, kernels)


@full_precision
def kfold_path_losses(op: ShardedKernelOperator, kernels: Kernel, Y: Array, valid: Array, masks: Array,
                      filt: str | IterativeFilter, n_steps: int, report: Array | None = None) -> tuple[Array, Array]:
    """Held-out losses of every kernel × fold × step, replicated on every process.

    Args:
      op: :func:`distributed_operator` (its kernel is replaced by each of ``kernels``);
      kernels: stacked kernel pytree (W leading); Y: (n_pad, d) global outputs; valid: (n_pad,)
      False on padding; masks: (k, n_pad) training masks; filt: 'nu_method', 'landweber' or an
      iterative filter; n_steps: T; report: optional (T,) booleans (steps to evaluate).

    Returns:
      (losses (W, k, T), diverged (W, k)) as NumPy-ready replicated arrays.
    """
    return _replicate(_kfold(op, kernels, Y, valid, masks, get_filter(filt), int(n_steps), report), op.mesh)


@partial(jit, static_argnames=("mesh",))
def _replicate(tree, mesh):
    return jax.lax.with_sharding_constraint(tree, jax.sharding.NamedSharding(mesh, PartitionSpec()))


@partial(jit, static_argnames=("filt", "n_steps"))
@full_precision
def refit_path(op: ShardedKernelOperator, Y: Array, valid: Array, filt: IterativeFilter,
               n_steps: int) -> tuple[Array, Array, Array]:
    """The path on every valid row to step ``n_steps``: (coefficients (n_pad, d) sharded, diverged, τ)."""
    res = path_scan(op, Y, filt, n_steps, tau=step_size(op, Y, valid, valid), mask=valid)
    return res.coef, res.diverged, res.tau


@partial(jit, static_argnames=("mesh", "block_size"))
@full_precision
def predict_rows(kernel: Kernel, X_eval: Array, X: Array, CA: Array, mesh: Mesh, block_size: int = 1024) -> Array:
    """(m, d) predictions K(X_eval, X) @ CA, replicated; X, CA (n_pad, ·) sharded by rows.

    Each device evaluates K(X_eval, X_r) @ CA_r on its rows (``block_size`` evaluation rows at a
    time) and one ``psum`` adds the devices' parts.
    """

    def local(kernel, Xe, X_loc, CA_loc):
        return jax.lax.psum(blocked_kernel_matmul(kernel, Xe, X_loc, CA_loc, block_size), AXIS)

    rows = PartitionSpec(AXIS, None)
    return jax.shard_map(local, mesh=mesh, in_specs=(PartitionSpec(), PartitionSpec(), rows, rows),
                         out_specs=PartitionSpec())(kernel, X_eval, X, CA)


@partial(jit, static_argnames=("mesh", "n_groups"))
@full_precision
def feature_statistics_global(fmap: FeatureMap, X: Array, Y: Array, rows: Array, ids: Array, mesh: Mesh,
                              n_groups: int) -> FeatureStatistics:
    """Per-group ΦᵀΦ, ΦᵀY, YᵀY of rows spread over the mesh, replicated (one ``psum``).

    Args:
      fmap: feature map (replicated); X: (n_pad, p), Y: (n_pad, d) global rows;
      rows: (R·B, block) each device's blocks of its *local* row indices (−1 padding) and ids:
      (R·B,) their groups, from :func:`~jaxmtl.operators.nystrom.group_blocks` on each device's
      rows, sharded by rows; n_groups: k.
    """

    def local(fmap, X_loc, Y_loc, r_loc, g_loc):
        st = accumulate_statistics(fmap, X_loc, Y_loc, r_loc, g_loc, n_groups)
        return jax.lax.psum(st, AXIS)

    rowspec = PartitionSpec(AXIS, None)
    return jax.shard_map(local, mesh=mesh,
                         in_specs=(PartitionSpec(), rowspec, rowspec, rowspec, PartitionSpec(AXIS)),
                         out_specs=PartitionSpec(), check_vma=False)(fmap, X, Y, rows, ids)
