r"""``DistributedKernelRegressor``: k-fold selection and refit on rows spread over processes.

The estimator of the multi-process routes (:mod:`jaxmtl.distributed.paths`), with the mesh as a
parameter. Every process constructs it alike and calls ``fit`` with the same arguments — NumPy
arrays, memory maps, or ``.npy`` paths — and reads only its own rows of them; the selection is
computed by collectives, so every process ends with the same model. One process (``mesh=None``
without :func:`~jaxmtl.distributed.initialize`) is the same code on one device.

Two routes, both iterative filters (ν-method, Landweber) on a grid of Gaussian widths
(median heuristic × 2ᵏ, k = −2 … 2) × steps 1 … ``n_steps``:

* ``approximation=None`` — the exact kernel, never stored: K is evaluated in row blocks on every
  device at every product (k-fold masks vmapped, steps scanned);
* ``approximation='nystrom'`` — ``n_components`` uniform centres; per-fold statistics ΦᵀΦ, ΦᵀY
  summed over the processes, then the D × D path on every process.

Example:
    >>> import numpy as np
    >>> X = np.linspace(0, 1, 40)[:, None]; y = np.sin(4 * X[:, 0])
    >>> model = DistributedKernelRegressor(n_steps=30, n_folds=3).fit(X, y)
    >>> model.predict(X[:3]).shape
    (3,)
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from numpy.typing import ArrayLike, DTypeLike

from .._checks import check_int
from ..errors import DivergenceError, ParameterError, ShapeError
from ..filters.spectral import IterativeFilter, get_filter
from ..kernels.scalar import Gaussian, median_heuristic
from ..models._base import BaseEstimator, RegressorMixin
from ..operators.nystrom import NystromFeatures
from ..paths.preconditioned import feature_coefficients, feature_kfold_losses
from ..paths.scan import raise_divergence
from ..selection.criteria import kfold_masks
from .cluster import collective_errors
from .data import global_rows, open_rows
from .mesh import RowLayout, check_mesh, global_mesh
from .paths import distributed_operator, kfold_path_losses, predict_rows, refit_path
from .rows import statistics_on_mesh

__all__ = ["DistributedKernelRegressor"]

WIDTH_FACTORS = 2.0 ** np.arange(-2, 3)
APPROXIMATIONS = (None, "nystrom")


def _rows(source, name: str):
    src = open_rows(source)
    if len(src.shape) not in (1, 2) or src.shape[0] < 2:
        raise ShapeError(f"{name} must have shape (n, …) with n >= 2 rows; received shape {tuple(src.shape)}.")
    return src


def _select(scores: np.ndarray) -> tuple[int, int]:
    """(width, step) indices of the least mean held-out loss of (W, T) ``scores``."""
    scores = np.where(np.isfinite(scores), scores, np.inf)
    if not np.isfinite(scores).any():
        raise DivergenceError("every path of the grid diverged or produced non-finite losses.")
    iw, it = np.unravel_index(int(np.argmin(scores)), scores.shape)
    return int(iw), int(it)


class DistributedKernelRegressor(RegressorMixin, BaseEstimator):
    """Gaussian-kernel regression by an iterative filter's path, k-fold selected across processes.

    Args:
      kernel_widths: Gaussian widths to search (default median distance × 2ᵏ, k = −2 … 2).
      filter: 'nu_method' or 'landweber'; n_steps: path length T.
      n_folds: k of k-fold selection; approximation: None (exact kernel) or 'nystrom';
      n_components: Nyström centres; mesh: a ``("rows",)`` mesh over every process's devices
      (:func:`~jaxmtl.distributed.global_mesh`, the default); block_size: rows of K evaluated at
      once per device; block_rows: rows read (fit) or predicted (predict) at a time;
      random_state: seed of the folds and centres; dtype: None, 'float32' or 'float64'.

    Attributes:
      kernel_: the selected Gaussian; n_steps_: the selected step; cv_scores_: (W, T) mean
      held-out losses; kernel_widths_: the widths searched.
    """

    def __init__(self, kernel_widths: ArrayLike | None = None, filter: str = "nu_method", n_steps: int = 150,
                 n_folds: int = 5, approximation: str | None = None, n_components: int = 500, mesh: Mesh | None = None,
                 block_size: int = 1024, block_rows: int = 65536, random_state: int = 0, dtype: DTypeLike | None = None,
                 matmul_precision: str | None = None) -> None:
        self.kernel_widths = kernel_widths
        self.filter = filter
        self.n_steps = n_steps
        self.n_folds = n_folds
        self.approximation = approximation
        self.n_components = n_components
        self.mesh = mesh
        self.block_size = block_size
        self.block_rows = block_rows
        self.random_state = random_state
        self.dtype = dtype
        self.matmul_precision = matmul_precision

    def _settings(self, n: int):
        mesh = global_mesh() if self.mesh is None else check_mesh(self.mesh)
        filt = get_filter(self.filter)
        if not isinstance(filt, IterativeFilter):
            raise ParameterError(f"filter must be 'nu_method' or 'landweber'; received {self.filter!r}.")
        if self.approximation not in APPROXIMATIONS:
            raise ParameterError(f"approximation must be one of {APPROXIMATIONS}; received {self.approximation!r}.")
        k = check_int(self.n_folds, "n_folds", minimum=2)
        if k > n:
            raise ParameterError(f"n_folds must be at most the number of rows {n}; received {k}.")
        return (filt, check_int(self.n_steps, "n_steps", 1), k, mesh, check_int(self.block_size, "block_size", 1),
                check_int(self.block_rows, "block_rows", 1))

    def _widths(self, X) -> np.ndarray:
        if self.kernel_widths is not None:
            w = np.atleast_1d(np.asarray(self.kernel_widths, float))
            if w.ndim != 1 or not (np.isfinite(w) & (w > 0)).all():
                raise ParameterError(f"kernel_widths must be positive numbers; received {self.kernel_widths!r}.")
            return w
        idx = np.unique(np.linspace(0, X.shape[0] - 1, min(X.shape[0], 1000)).astype(int))
        return median_heuristic(np.asarray(X[idx], float)) * WIDTH_FACTORS

    def fit(self, X: ArrayLike, y: ArrayLike) -> DistributedKernelRegressor:
        """Select the width and step by k-fold on every process's rows, then refit on all rows.

        Args:
          X: (n, p) inputs; y: (n,) or (n, d) outputs — arrays, memory maps or ``.npy`` paths,
          the same on every process.
        """
        with self._precision():
            Xs, Ys = _rows(X, "X"), _rows(y, "y")
            if Xs.ndim != 2 or Ys.shape[0] != Xs.shape[0]:
                raise ShapeError(f"X must be (n, p) and y have n rows; received {tuple(Xs.shape)}, {tuple(Ys.shape)}.")
            n = int(Xs.shape[0])
            filt, T, k, mesh, block, block_rows = self._settings(n)
            dtype = jnp.zeros((), float).dtype
            widths = self._widths(Xs)
            Xg = global_rows(Xs, mesh, dtype, block_rows)
            Yg = global_rows(Ys if Ys.ndim == 2 else Ys.reshape(-1, 1), mesh, dtype, block_rows)
            layout = RowLayout.of(n, mesh)
            masks = kfold_masks(n, k, check_int(self.random_state, "random_state", 0))
            with collective_errors("DistributedKernelRegressor.fit"):
                if self.approximation is None:
                    scores, (iw, it), coef = self._fit_exact(Xg, Yg, masks, widths, filt, T, mesh, block, block_rows)
                else:
                    scores, (iw, it), coef = self._fit_nystrom(Xs, Xg, Yg, masks, widths, filt, T, mesh, layout,
                                                               block)
            # set only once everything succeeded: a failed fit leaves the earlier one
            self.kernel_ = Gaussian(float(widths[iw]))
            self.n_steps_ = it + 1
            self.n_features_in_ = Xs.shape[1]
            self._single_output = Ys.ndim == 1
            self.kernel_widths_ = widths
            self.cv_scores_ = scores
            self._coef = coef
        return self

    def _fit_exact(self, Xg, Yg, masks, widths, filt, T, mesh, block, block_rows):
        valid = global_rows(np.ones(masks.shape[1], bool), mesh, bool, block_rows)
        mg = global_rows(masks.T, mesh, bool, block_rows).T
        A = jnp.eye(Yg.shape[1], dtype=Yg.dtype)
        op = distributed_operator(Gaussian(float(widths[0])), Xg, A, mesh, block)
        kernels = jax.tree.map(lambda *leaves: jnp.stack(leaves), *[Gaussian(float(w)) for w in widths])
        losses, diverged = kfold_path_losses(op, kernels, Yg, valid, mg, filt, T)
        scores = np.asarray(losses).mean(axis=1)
        iw, it = _select(scores)
        op = distributed_operator(Gaussian(float(widths[iw])), Xg, A, mesh, block)
        coef, bad, tau = refit_path(op, Yg, valid, filt, it + 1)
        if bool(np.asarray(bad)):
            raise_divergence(np.asarray(tau))
        return scores, (iw, it), ("exact", Xg, coef)

    def _fit_nystrom(self, Xs, Xg, Yg, masks, widths, filt, T, mesh, layout, block):
        n = masks.shape[1]
        m = min(check_int(self.n_components, "n_components", 1), n)
        rng = np.random.default_rng(self.random_state)
        Z = jnp.asarray(np.asarray(Xs[np.sort(rng.choice(n, m, replace=False))]), Yg.dtype)
        groups = np.argmin(masks, axis=0)  # the fold that holds each row out
        d = Yg.shape[1]
        a, V = jnp.ones((1, d), Yg.dtype), jnp.eye(d, dtype=Yg.dtype)
        steps = jnp.arange(1, T + 1)
        stats, width_scores = [], []
        for w in widths:  # one D × D problem per width; the data pass is the collective inside
            fmap = NystromFeatures.from_centres(Gaussian(float(w)), Z)
            st = statistics_on_mesh(fmap, Xg, Yg, groups, masks.shape[0], layout, mesh, block)
            stats.append((fmap, st))
            width_scores.append(np.asarray(feature_kfold_losses(st, a, V, filt, steps)).mean(axis=0)[0])
        scores = np.stack(width_scores)
        iw, it = _select(scores)
        fmap, st = stats[iw]
        W = feature_coefficients(st, a[0], V, filt, it + 1)
        return scores, (iw, it), ("nystrom", fmap, W)

    def predict(self, X: ArrayLike | str | os.PathLike[str], out: str | os.PathLike[str] | None = None
                ) -> np.ndarray | None:
        """Predictions for X (array, memory map or ``.npy`` path), ``block_rows`` rows at a time.

        Every process passes the same X and receives every prediction. With ``out`` a path, the
        predictions are written there as ``.npy`` by process 0 block by block (a memory map) and
        that map is returned (None on the other processes), so neither X nor the predictions need
        to fit in memory.
        """
        self._check_fitted("_coef")
        with self._precision():
            Xs = open_rows(X)
            if Xs.ndim != 2 or Xs.shape[1] != self.n_features_in_:
                raise ShapeError(f"X must have shape (m, {self.n_features_in_}); received {tuple(Xs.shape)}.")
            m = int(Xs.shape[0])
            kind, first, second = self._coef
            d = second.shape[1]
            block = min(check_int(self.block_rows, "block_rows", 1), max(m, 1))
            result: np.ndarray | None
            if out is None:
                result = np.empty((m, d))
            elif jax.process_index() == 0:
                result = np.lib.format.open_memmap(out, mode="w+", dtype=np.float64, shape=(m, d))
            else:
                result = None
            mesh = global_mesh() if self.mesh is None else self.mesh
            dtype = jnp.zeros((), float).dtype
            with collective_errors("DistributedKernelRegressor.predict"):
                for lo in range(0, m, block):  # streamed I/O; each block is one compiled call
                    Xb = np.zeros((block, Xs.shape[1]), dtype)
                    Xb[: min(block, m - lo)] = np.asarray(Xs[lo:lo + block], dtype)
                    if kind == "exact":
                        F = predict_rows(self.kernel_, jnp.asarray(Xb), first, second, mesh, self.block_size)
                    else:
                        F = first(jnp.asarray(Xb)) @ second
                    if result is not None:
                        result[lo:lo + block] = np.asarray(F)[: min(block, m - lo)]
            if out is not None:
                if isinstance(result, np.memmap):
                    result.flush()
                return result
            return result[:, 0] if self._single_output and result is not None else result
