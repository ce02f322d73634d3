r"""Approximate kernel factorisations K ≈ Φ Φᵀ: the feature-map protocol, low-rank Gram operators,
and the Nyström method with uniform or ridge-leverage-score sampling of the centres.

[Din11] F. Dinuzzo, *Learning functions with kernel methods*, PhD thesis, 2011, §1.6.3: a kernel
matrix that does not fit into memory is replaced by an approximate factorisation K ≈ X̃ X̃ᵀ
(X̃ of n × D), obtained among others "by approximate eigendecomposition based on the Nyström
method [Williams and Seeger, 2000; Drineas and Mahoney, 2005]"; the products then cost O(nD).

Nyström ([WS00] C. Williams, M. Seeger, *Using the Nyström method to speed up kernel machines*,
NIPS 2000): with m centres Z ⊂ X, K ≈ K_nm K_mm⁺ K_mn. We write it as Φ Φᵀ with the feature map
φ(x) = K(x, Z) W, W = Q diag(e)^{-1/2} from K_mm = Q diag(e) Qᵀ (eigenvalues below
``rcond``·e_max dropped: the pseudo-inverse, no jitter), so that m = n with Z = X gives K exactly.
Centres are drawn uniformly without replacement, or with probabilities proportional to
approximate ridge leverage scores ℓ_i(λ) = (K (K + nλI)⁻¹)_ii ([AM15] A. Alaoui, M. Mahoney,
*Fast randomized kernel methods with statistical guarantees*, NIPS 2015; estimated from a uniform
subset J as in [RCCR18] A. Rudi, D. Calandriello, L. Carratino, L. Rosasco, *On fast leverage
score sampling and optimal learning*, NeurIPS 2018, eq. (5)).

Every consumer sees a :class:`FeatureMap` (``raw(X)`` (n, D) and a (D, D) ``transform``, φ(X) =
raw(X) @ transform): :class:`FeatureOperator` is Γ = ΦΦᵀ ⊗ A as a
:class:`~jaxmtl.operators.GramOperator` (the ν-method / Landweber path runs on it unchanged), its
``eigh()`` gives the eigen path through the D × D problem, and :func:`feature_statistics`
accumulates ΦᵀΦ, ΦᵀY and YᵀY per group of rows (folds) in row blocks, so n × D is never stored.
The statistics are of the transformed features φ, never of raw(X) whitened afterwards: whitening
K_mnK_nm by K_mm^{-1/2} after the sum would amplify its round-off by 1/e_min (fatal in float32).

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.kernels import Gaussian
    >>> X = jnp.linspace(0.0, 1.0, 20)[:, None]
    >>> fmap = NystromFeatures.fit(Gaussian(0.5), X, 5, random_state=0)
    >>> fmap(X).shape
    (20, 5)
"""

from __future__ import annotations

import abc
from functools import partial
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
from jax.typing import ArrayLike

from .._checks import check_inputs, check_int, check_positive, check_random_state, is_traced
from .._jit import filter_jit, jit
from ..errors import ParameterError, ShapeError
from ..kernels.scalar import GRAM_PRECISION, Kernel
from ..linalg import clip_psd, eigh
from .base import GramOperator, SeparableEigh
from .blocked import pad_rows
from ..products import full_precision

__all__ = [
    "FeatureMap",
    "FeatureOperator",
    "FeatureStatistics",
    "NystromFeatures",
    "accumulate_statistics",
    "feature_statistics",
    "group_blocks",
    "nystrom_centres",
    "ridge_leverage_scores",
]

Array = jax.Array
SAMPLINGS = ("uniform", "leverage")


@filter_jit
def _symmetric_gram(kernel: Kernel, Z: Array, m: ArrayLike) -> Array:
    """K(Z, Z) symmetrised, (K + Kᵀ)/2, its rows and columns from ``m`` on (padding) zero, in one
    compiled call (eagerly, one program per operation)."""
    K = kernel(Z, Z)
    real = jnp.arange(Z.shape[0]) < m
    return jnp.where(real[:, None] & real[None, :], 0.5 * (K + K.T), 0.0)


@partial(jit, static_argnames="in_float64")
def _whitening(Kmm: Array, ratio: ArrayLike, m: ArrayLike, in_float64: bool = False) -> Array:
    """Q diag(e^−½) over the eigenvalues e > ratio·e_max of K(Z, Z) = Q diag(e) Qᵀ (the other
    directions 0), its rows from ``m`` on (padded centres) zero, in Kmm's dtype, decomposed in
    float64 when ``in_float64``: one compiled call."""
    e, Q = jnp.linalg.eigh(Kmm.astype(jnp.float64)) if in_float64 else eigh(Kmm)
    cut = ratio * e[-1]
    scale = jnp.where(e > cut, 1.0 / jnp.sqrt(jnp.where(e > cut, e, 1.0)), 0.0)
    return jnp.where((jnp.arange(Q.shape[0]) < m)[:, None], Q * scale[None, :], 0.0).astype(Kmm.dtype)


class FeatureMap(eqx.Module):
    """An explicit (approximate) feature map: K(x, x') ≈ φ(x)·φ(x'), φ(X) = raw(X) @ transform."""

    @abc.abstractmethod
    @full_precision
    def raw(self, X: Array) -> Array:
        """(n, D) untransformed features of X (n, p)."""

    @property
    @abc.abstractmethod
    def transform(self) -> Array | None:
        """(D, D) matrix applied to ``raw`` features, or None for the identity."""

    @property
    @abc.abstractmethod
    def n_components(self) -> int:
        """D, the number of features."""

    @full_precision
    def __call__(self, X: Array) -> Array:
        """(n, D) features φ(X), evaluated with full-precision products (as a Gram is)."""
        R = self.raw(X)
        return R if self.transform is None else jnp.matmul(R, self.transform, precision=GRAM_PRECISION)

    @full_precision
    def apply(self, X: Array, W: Array) -> Array:
        """(n, c) φ(X) W for coefficients W (D, c) on the features.

        With a transform T and fewer columns than features (c < D, as for predictions), this is
        raw(X) (T W): 2·D·c flops per row instead of the 2·D² of forming φ(X) first (the
        Nyström features of M centres cost M² per row, the centres' coefficients T W only M·c).
        Code that applies the same W to many row blocks calls :meth:`prepare` once and
        :meth:`apply_prepared` per block.

        Example:
            >>> from jaxmtl.kernels import Gaussian
            >>> X = jnp.linspace(0.0, 1.0, 12)[:, None]
            >>> fm = NystromFeatures.from_centres(Gaussian(0.5), X[::3])
            >>> W = jnp.ones((4, 2))
            >>> bool(jnp.allclose(fm.apply(X, W), fm(X) @ W, atol=1e-4))
            True
        """
        return self.apply_prepared(X, *self.prepare(W))

    @full_precision
    def prepare(self, W: Array) -> tuple[Array, bool]:
        """(V, on_raw) with φ(X) W = raw(X) V when ``on_raw``, else φ(X) V: V = T W (D, c) where a
        transform T and c < D make that the cheaper product, else W itself.

        Example:
            >>> from jaxmtl.kernels import Gaussian
            >>> fm = NystromFeatures.from_centres(Gaussian(0.5), jnp.linspace(0.0, 1.0, 4)[:, None])
            >>> V, on_raw = fm.prepare(jnp.ones((4, 2)))
            >>> V.shape, on_raw
            ((4, 2), True)
        """
        if jnp.ndim(W) != 2 or W.shape[0] != self.n_components:
            raise ShapeError(f"W must have shape ({self.n_components}, c): one row per feature; received "
                             f"{jnp.shape(W)}.")
        T = self.transform
        if T is None or W.shape[1] >= T.shape[1]:
            return W, False
        return jnp.matmul(T, W, precision=GRAM_PRECISION), True

    @full_precision
    def apply_prepared(self, X: Array, V: Array, on_raw: bool) -> Array:
        """(n, c) φ(X) W from :meth:`prepare`'s (V, on_raw) for W."""
        return jnp.matmul(self.raw(X) if on_raw else self(X), V, precision=GRAM_PRECISION)

    @full_precision
    def gram(self, X1: Array, X2: Array | None = None) -> Array:
        """(n1, n2) approximate Gram φ(X1) φ(X2)ᵀ (tests and small problems)."""
        P1 = self(X1)
        return jnp.matmul(P1, (P1 if X2 is None else self(X2)).T, precision=GRAM_PRECISION)


class NystromFeatures(FeatureMap):
    """Nyström feature map φ(x) = K(x, Z) Q diag(e)^{-1/2} from m centres Z ([WS00]; [Din11] §1.6.3).

    Attributes:
      kernel: the scalar kernel; centres: (m, p) Z; whitening: (m, m) Q diag(e)^{-1/2} with the
      columns of eigenvalues below ``rcond``·e_max set to 0 (K_mm⁺ = W Wᵀ).
    """

    kernel: Kernel
    centres: Array
    whitening: Array

    @classmethod
    @full_precision
    def from_centres(cls, kernel: Kernel, centres: ArrayLike, rcond: float | None = None,
                     n_real: ArrayLike | None = None) -> NystromFeatures:
        """Whiten K(Z, Z) by its pseudo-inverse square root.

        In float32 with concrete centres, K(Z, Z) (as the features will see it, in float32) is
        decomposed in float64 (on the device when ``jax_enable_x64`` is on, else by NumPy on the
        host) and only eigenvalues below eps₃₂·e_max are dropped: a float32 eigendecomposition is
        accurate only to about m·eps₃₂·e_max, and a Gaussian K(Z, Z) often has tens of eigenvalues
        below that cut, each dropped direction a centre lost (tests/test_streaming.py shows it on
        300 centres). Traced centres (inside ``jit``, ``vmap`` or ``grad``) use the working dtype.

        Args:
          kernel: scalar kernel; centres: (m, p) Z; rcond: relative eigenvalue cut-off (default
            m·eps of the decomposition's dtype, or eps of the working dtype when the decomposition
            is in float64 for a float32 map).
          n_real: the centres are the first ``n_real`` rows, the others padding (a size bucket's;
            may be traced; default all): their rows and columns of K(Z, Z) are zero — eigenvalues
            0, below the cut — and so are their rows of the whitening, so they weigh nothing in
            φ(x) = K(x, Z) W, whatever their values. The cut counts m = ``n_real``.
        """
        Z = jax.device_put(centres) if isinstance(centres, np.ndarray) else jnp.asarray(centres)  # NumPy: no program
        m: Any = Z.shape[0] if n_real is None else n_real
        if not is_traced(m):  # an array argument: one program for every m
            m = np.int32(check_int(m, "n_real", minimum=1, maximum=Z.shape[0]))
        Kmm = _symmetric_gram(kernel, Z, m)
        if is_traced(Kmm) or jnp.finfo(Kmm.dtype).bits >= 64:
            ratio = m * float(jnp.finfo(Kmm.dtype).eps) if rcond is None else rcond
            return cls(kernel, Z, _whitening(Kmm, ratio, m))
        ratio = float(jnp.finfo(Kmm.dtype).eps) if rcond is None else rcond
        if jax.config.read("jax_enable_x64"):
            return cls(kernel, Z, _whitening(Kmm, ratio, m, in_float64=True))
        e, Q = np.linalg.eigh(np.asarray(Kmm, np.float64))
        cut = ratio * e[-1]
        keep = e > cut
        scale = np.where(keep, 1.0 / np.sqrt(np.where(keep, e, 1.0)), 0.0)
        W = np.where((np.arange(Q.shape[0]) < m)[:, None], Q * scale[None, :], 0.0)
        return cls(kernel, Z, jax.device_put(np.asarray(W, Kmm.dtype)))

    @classmethod
    @full_precision
    def fit(cls, kernel: Kernel, X: ArrayLike, n_components: int, sampling: str = "uniform", ridge: float = 1e-3,
            random_state: int | None = 0, block_size: int = 4096) -> NystromFeatures:
        """Draw ``n_components`` centres from the rows of X (see :func:`nystrom_centres`) and whiten.

        Example:
            >>> from jaxmtl.kernels import Gaussian
            >>> X = jnp.linspace(0.0, 1.0, 12)[:, None]
            >>> NystromFeatures.fit(Gaussian(1.0), X, 12).gram(X).shape
            (12, 12)
        """
        idx = nystrom_centres(kernel, X, n_components, sampling, ridge, random_state, block_size)
        return cls.from_centres(kernel, jnp.asarray(X)[idx])

    @full_precision
    def raw(self, X: Array) -> Array:
        return self.kernel(X, self.centres)

    @property
    def n_components(self):
        return self.centres.shape[0]

    @property
    def transform(self):
        return self.whitening


class FeatureOperator(GramOperator):
    """Γ = ΦΦᵀ ⊗ A for features Φ (n, D): the product Φ(ΦᵀC)A costs O(nDd), memory O(nD).

    Args:
      Phi: (n, D) features of the training inputs; A: (d, d) symmetric PSD output matrix.

    Example:
        >>> op = FeatureOperator(jnp.ones((4, 2)), jnp.eye(3))
        >>> op.mv(jnp.ones((4, 3))).shape
        (4, 3)
    """

    Phi: Array
    A: Array

    @property
    def shape(self):
        return (self.Phi.shape[0], self.A.shape[0])

    @full_precision
    def mv(self, C: Array) -> Array:
        return self.Phi @ (self.Phi.T @ C) @ self.A

    @full_precision
    def eigh(self) -> SeparableEigh:
        """Thin eigensystem of ΦΦᵀ ⊗ A through the D × D matrix ΦᵀΦ = Q diag(s) Qᵀ.

        U = Φ Q diag(s)^{-1/2} (n × D, orthonormal columns where s > 0) and s are the non-zero
        eigenpairs of ΦΦᵀ; the rest of its spectrum is 0. :func:`~jaxmtl.paths.spectral_path`
        accepts this thin U: predictions K_eval C with K_eval = Φ_eval Φᵀ never see the null
        space, so every filter of the eigen path runs at cost O(nD² + D³).
        """
        s, Q = eigh(self.Phi.T @ self.Phi)
        ok = s > s[-1] * self.Phi.shape[1] * jnp.finfo(s.dtype).eps
        U = (self.Phi @ Q) * jnp.where(ok, 1.0 / jnp.sqrt(jnp.where(ok, s, 1.0)), 0.0)[None, :]
        a, V = eigh(self.A)
        return SeparableEigh(jnp.where(ok, s, 0.0), U, clip_psd(a), V)


class FeatureStatistics(eqx.Module):
    """Per-group sufficient statistics of the square loss in feature space.

    Attributes:
      G: (k, D, D) Σ_{i∈g} φ(x_i) φ(x_i)ᵀ; B: (k, D, d) Σ φ(x_i) y_iᵀ; S: (k, d, d) Σ y_i y_iᵀ;
      counts: (k,) rows per group.
    """

    G: Array
    B: Array
    S: Array
    counts: Array


@full_precision
def feature_statistics(fmap: FeatureMap, X: ArrayLike, Y: Array, groups: npt.ArrayLike | None = None, n_groups: int = 1,
                       block_size: int = 2048) -> FeatureStatistics:
    """ΦᵀΦ, ΦᵀY and YᵀY of each group of rows (k-fold folds), in row blocks, Φ = φ(X).

    The rows of each group are gathered ``block_size`` at a time (each block inside one group,
    the last one of a group padded with weight 0) in one ``lax.scan``, and each block adds
    ΦᵀΦ, ΦᵀY, YᵀY to its group's slot: about 2n·D² flops for Nyström (raw features, then
    the transform per block), n·D² for random features, memory O(block·D + k·D²), never
    the n × D feature matrix. Rows with a group id outside [0, n_groups) are ignored.

    Args:
      fmap: the feature map; X: (n, p); Y: (n, d); groups: (n,) int group of each row (default
      all in group 0); n_groups: k; block_size: rows per block.

    Returns:
      :class:`FeatureStatistics` of the features φ.

    Example:
        >>> from jaxmtl.kernels import Gaussian
        >>> X = jnp.linspace(0.0, 1.0, 10)[:, None]
        >>> fm = NystromFeatures.fit(Gaussian(1.0), X, 4)
        >>> st = feature_statistics(fm, X, jnp.ones((10, 2)), np.arange(10) % 3, 3, 4)
        >>> st.G.shape, st.B.shape, st.S.shape, st.counts.tolist()
        ((3, 4, 4), (3, 4, 2), (3, 2, 2), [4.0, 3.0, 3.0])
    """
    rows, ids = group_blocks(groups, n_groups, Y.shape[0], block_size)
    return accumulate_statistics(fmap, jnp.asarray(X), jnp.asarray(Y), jnp.asarray(rows), jnp.asarray(ids),
                                 n_groups)


def group_blocks(groups: npt.ArrayLike | None, n_groups: int, n: int, block_size: int,
                 n_blocks: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Row-index blocks, each inside one group: (rows (B, block) with −1 padding, ids (B,)).

    Host-side bookkeeping for :func:`accumulate_statistics` (the index arrays are data, not
    shapes, so one compilation serves every kernel of a grid). ``n_blocks``: B fixed, the blocks
    past the groups' own all −1 (group 0; :func:`accumulate_statistics` skips them), so that
    splits of other sizes and group counts share a shape (:func:`padded_block_count`).

    Example:
        >>> r, g = group_blocks(np.array([0, 1, 0, 1, 1]), 2, 5, 2)
        >>> r.tolist(), g.tolist()
        ([[0, 2], [1, 3], [4, -1]], [0, 1, 1])
        >>> r, g = group_blocks(np.array([0, 1, 0, 1, 1]), 2, 5, 2, n_blocks=4)
        >>> r.tolist(), g.tolist()
        ([[0, 2], [1, 3], [4, -1], [-1, -1]], [0, 1, 1, 0])
    """
    groups = np.zeros(n, int) if groups is None else np.asarray(groups)
    n_groups = check_int(n_groups, "n_groups", minimum=1)
    if groups.shape != (n,):
        raise ShapeError(f"groups must have shape ({n},); received {groups.shape}.")
    block = min(check_int(block_size, "block_size", minimum=1), n)
    rows, ids = [], []
    for g in range(n_groups):  # index bookkeeping per group, not the computation
        idx = np.flatnonzero(groups == g)
        nb = -(-idx.size // block)
        rows.append(np.concatenate([idx, np.full(nb * block - idx.size, -1)]).reshape(nb, block))
        ids.append(np.full(nb, g))
    if n_blocks is not None:
        count = sum(len(r) for r in rows)
        if count > n_blocks:
            raise ShapeError(f"n_blocks={n_blocks} cannot hold the {count} blocks of {n} rows in {n_groups} "
                             f"group(s) of at most {block} rows; ⌈n/block⌉ + n_groups blocks hold any grouping.")
        rows.append(np.full((n_blocks - count, block), -1))
        ids.append(np.zeros(n_blocks - count, int))
    return np.concatenate(rows).astype(np.int32), np.concatenate(ids).astype(np.int32)


def padded_block_count(n: int, n_groups: int, block: int) -> int:
    """Blocks enough for any grouping of up to ``n`` rows into ``n_groups`` groups, ``block`` rows
    a block (⌈n/block⌉ + n_groups: each group wastes less than one block), for
    :func:`group_blocks`' ``n_blocks``.

    Example:
        >>> padded_block_count(5, 2, 2)
        5
    """
    return -(-int(n) // int(block)) + int(n_groups)


@filter_jit
@full_precision
def accumulate_statistics(fmap: FeatureMap, X: Array, Y: Array, rows: Array, ids: Array,
                          n_groups: int) -> FeatureStatistics:
    """The compiled accumulation of :func:`feature_statistics` over the blocks of :func:`group_blocks`.

    Traceable (a kernel grid can ``lax.map`` over it); ``n_groups`` is static.
    """
    d, dtype = Y.shape[1], Y.dtype
    D = fmap.n_components

    width = _gram_block_width(D)

    def add(acc, blk):
        idx, g = blk
        w = (idx >= 0).astype(dtype)[:, None]
        safe = jnp.maximum(idx, 0)
        R, Yb = fmap(X[safe]) * w, Y[safe] * w
        G, B, S, c = acc
        return (G.at[g].add(_lower_block_gram(R, width)), B.at[g].add(R.T @ Yb), S.at[g].add(Yb.T @ Yb),
                c.at[g].add(jnp.sum(w)))

    def body(acc, blk):  # a block of padding only (group_blocks' n_blocks) adds nothing: skipped
        return jax.lax.cond(jnp.any(blk[0] >= 0), add, lambda acc, _: acc, acc, blk), None

    acc0 = (jnp.zeros((n_groups, D, D), dtype), jnp.zeros((n_groups, D, d), dtype),
            jnp.zeros((n_groups, d, d), dtype), jnp.zeros((n_groups,), dtype))
    (G, B, S, c), _ = jax.lax.scan(body, acc0, (rows, ids))
    block = jnp.arange(D) // width
    G = jnp.where(block[:, None] == block[None, :], G, G + jnp.swapaxes(G, 1, 2))  # the upper blocks: Gᵀ's
    return FeatureStatistics(G, B, S, c)


GRAM_BLOCKS_FROM = 1024  # features from which RᵀR is formed by its lower blocks (below: one product)


def _gram_block_width(D: int) -> int:
    """Width of the column blocks of :func:`_lower_block_gram`: a quarter of D from
    ``GRAM_BLOCKS_FROM`` features on, else D (one block, the plain product)."""
    return -(-D // 4) if D >= GRAM_BLOCKS_FROM else D


def _lower_block_gram(R: Array, width: int) -> Array:
    """(D, D) the blocks of RᵀR on and below the diagonal (column blocks of ``width``), zero above.

    Block row i is R_iᵀ [R_0 … R_i], one product: with 4 blocks 5/8 of RᵀR's flops; RᵀR is L + Lᵀ
    off the diagonal blocks (docs/performance.md, "Feature statistics", has the measurement).
    """
    D = R.shape[1]
    if width >= D:
        return R.T @ R
    rows = []
    for start in range(0, D, width):  # static: 4 block rows
        stop = min(start + width, D)
        rows.append(jnp.pad(R[:, start:stop].T @ R[:, :stop], ((0, 0), (0, D - stop))))
    return jnp.concatenate(rows, axis=0)


@full_precision
def ridge_leverage_scores(kernel: Kernel, X: npt.ArrayLike, ridge: float, subset: npt.ArrayLike | None = None,
                          block_size: int = 4096) -> np.ndarray:
    """Approximate ridge leverage scores ℓ_i(λ) = (K(K + nλI)⁻¹)_ii from a subset J of rows.

    ℓ̃_i = (K_ii − K_iJ (K_JJ + |J|λ I)⁻¹ K_Ji) / (nλ)  ([RCCR18] eq. (5) with uniform J, whose
    ridge λnA becomes |J|λ). With J = all rows this is exactly (K(K + nλI)⁻¹)_ii, since
    K − K(K + nλI)⁻¹K = nλ K(K + nλI)⁻¹. Cost O(n|J|·p + |J|³), K_nJ in row blocks.

    Args:
      kernel: scalar kernel; X: (n, p); ridge: λ > 0; subset: indices J (default all rows);
      block_size: rows of K_nJ evaluated at once.

    Returns:
      (n,) NumPy array of scores in [0, 1].

    Example:
        >>> from jaxmtl.kernels import Gaussian
        >>> s = ridge_leverage_scores(Gaussian(1.0), np.linspace(0, 1, 8)[:, None], 1e-2)
        >>> s.shape, bool((s > 0).all() and (s < 1).all())
        ((8,), True)
    """
    X = jnp.asarray(check_inputs(X))
    ridge = check_positive(ridge, "ridge")
    n = X.shape[0]
    J = np.arange(n) if subset is None else np.asarray(subset)
    scores = _leverage(kernel, X, X[J], jnp.asarray(ridge, X.dtype), min(block_size, n))
    return np.clip(np.asarray(scores), 0.0, 1.0)


@filter_jit
def _leverage(kernel, X, XJ, ridge, block_size):
    n, m = X.shape[0], XJ.shape[0]
    KJJ = kernel(XJ, XJ)
    L = jax.scipy.linalg.cho_factor(KJJ + m * ridge * jnp.eye(m, dtype=X.dtype), lower=True)
    Xp, n_blocks = pad_rows(X, block_size)

    def one(Xb):
        KbJ = kernel(Xb, XJ)
        quad = jnp.sum(KbJ * jax.scipy.linalg.cho_solve(L, KbJ.T).T, axis=1)
        return (kernel.diag(Xb) - quad) / (n * ridge)

    return jax.lax.map(one, Xp.reshape(n_blocks, block_size, -1)).reshape(-1)[:n]


@full_precision
def nystrom_centres(kernel: Kernel, X: npt.ArrayLike, n_components: int, sampling: str = "uniform", ridge: float = 1e-3,
                    random_state: int | None = 0, block_size: int = 4096) -> np.ndarray:
    """Indices of ``n_components`` distinct rows of X to use as Nyström centres (sorted).

    'uniform': uniformly without replacement. 'leverage': with probabilities ∝ approximate ridge
    leverage scores at λ = ``ridge`` (:func:`ridge_leverage_scores` on a uniform subset of
    min(n, 2·n_components) rows, [RCCR18] Alg. 1 in one stage), mixed with 10 % uniform mass so
    no row has probability 0, without replacement.

    Args:
      kernel: scalar kernel; X: (n, p); n_components: m, 1 ≤ m ≤ n; sampling: 'uniform' or
      'leverage'; ridge: λ of the scores; random_state: seed; block_size: rows per block.

    Example:
        >>> from jaxmtl.kernels import Gaussian
        >>> nystrom_centres(Gaussian(1.0), np.zeros((5, 1)), 5).tolist()
        [0, 1, 2, 3, 4]
    """
    X = check_inputs(X)
    n = X.shape[0]
    m = check_int(n_components, "n_components", minimum=1)
    if m > n:
        raise ShapeError(f"n_components={m} exceeds the number of training rows n={n}.")
    if sampling not in SAMPLINGS:
        raise ParameterError(f"sampling must be one of {SAMPLINGS}; received {sampling!r}.")
    rng = np.random.default_rng(check_random_state(random_state))
    if sampling == "uniform" or m == n:
        return np.sort(rng.choice(n, m, replace=False))
    J = np.sort(rng.choice(n, min(n, 2 * m), replace=False))
    scores = ridge_leverage_scores(kernel, X, ridge, J, block_size)
    p = 0.9 * scores / max(scores.sum(), np.finfo(float).tiny) + 0.1 / n
    return np.sort(rng.choice(n, m, replace=False, p=p / p.sum()))
