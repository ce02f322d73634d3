r"""Dictionaries of basis kernels for multiple kernel learning, and their scaled Gram stacks.

A basis kernel is a scalar kernel of :mod:`jaxmtl.kernels` applied to a subset of the input
features (:class:`BasisKernel`). A :class:`KernelDictionary` is an ordered list of them; on data it
gives a :class:`GramStack` — the m scaled matrices 𝐊ᵏ = s_k K̃_k(X₁, X₂) of Dinuzzo, *Learning
functions with kernel methods* (PhD thesis, 2011, [Din11]) eq. (3.6) — through two products only:

* ``products(C)`` → (m, n₁, T) the matrices 𝐊ᵏ C (the columns vₖ of 𝐕 in Algorithm 3);
* ``combine(d)`` → (n₁, n₂) the combined Gram 𝐊(d) = Σₖ d_k 𝐊ᵏ.

Storage is chosen by the caller: ``store="dense"`` materialises the (m, n₁, n₂) array once
(memory O(n²·m), what [Din11] §4.5.2 does: "basis kernel matrices are pre-computed");
``store="lazy"`` keeps the inputs only and evaluates each basis Gram when a product needs it
(memory O(n²), m kernel evaluations per product). Kernels that differ only in their array
hyperparameters (the ten Gaussian widths on one feature, say) are stacked into one batched
kernel and evaluated with one ``lax.map``. A dense stack ``combine``-s only the matrices of the
support of d (a loop over its non-zeros), so a sparse d costs O(n²·|supp d|).

Low-rank products: :meth:`GramStack.factorize` adds pivoted Cholesky factors 𝐊ᵏ ≈ LₖLₖᵀ (stopped
when the trace of the PSD remainder is below ``tol``·tr 𝐊ᵏ, which bounds its spectral norm), and
``products`` then costs O(n·Σₖ rₖ) instead of O(m·n²). Kernels on one feature are numerically of
low rank (a polynomial of degree q on one feature has rank q + 1; a Gaussian on one standardised
feature a few tens), so on the benchmark dictionary Σₖ rₖ is a small fraction of m·n. Factors are
grouped in buckets of ranks within a factor 2 (zero-padded), one batched product per bucket;
kernels whose rank would pass n/2 keep their dense matrix for the products.
``take`` keeps the factors, so one factorisation on all inputs serves every split.

Dictionaries:

* :func:`standard_dictionary` — the benchmark set of [Din11] §4.5.2 (after Rakotomamonjy et al.,
  *SimpleMKL*, JMLR 2008): Gaussian widths σ ∈ {0.5, 1, 2, 5, 7, 10, 12, 15, 17, 20} and
  polynomials (1 + ⟨x, x'⟩)^q, q ∈ {1, 2, 3}, each on all features and on every single feature:
  13·(p + 1) kernels (182 for p = 13, 117 for p = 8; [Din11] Table 4.2).
* :func:`linear_dictionary` — linear kernels on each feature, eq. (4.5) (linear RLS2 = scaled Lasso).
* :func:`dictionary` — any user list of kernels (optionally with feature subsets).

Scalings s_k ([Din11] §4.4): ``"trace"`` (4.14) = (Σᵢ K̃_k(xᵢ, xᵢ))⁻¹, equal to (4.12)
‖xᵏ‖⁻² for linear kernels; ``"centered_trace"`` (4.14 after normalisation in feature space);
``"fisher"`` (the kernel generalisation of 4.13, labels ±1); ``"none"``; or an explicit array.

Example:
    >>> import numpy as np
    >>> D = standard_dictionary(13)
    >>> len(D)
    182
    >>> X = np.random.default_rng(0).normal(size=(6, 13))
    >>> D.stack(X, scale=D.scaling(X)).products(np.ones((6, 1))).shape
    (182, 6, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt

from .._checks import as_float_array, check_inputs, check_int, check_positive_array, is_traced
from .._jit import filter_jit, jit
from ..errors import ParameterError, ShapeError
from ..kernels import Gaussian, Kernel, Linear, Polynomial
from ..products import full_precision

__all__ = [
    "STANDARD_WIDTHS",
    "STANDARD_DEGREES",
    "BasisKernel",
    "KernelDictionary",
    "GramStack",
    "standard_dictionary",
    "linear_dictionary",
    "dictionary",
]

Array = jax.Array

#: Gaussian widths σ of the benchmark dictionary (K = exp(−‖x − x'‖²/(2σ²))).
STANDARD_WIDTHS: tuple[float, ...] = (0.5, 1.0, 2.0, 5.0, 7.0, 10.0, 12.0, 15.0, 17.0, 20.0)
#: Polynomial degrees q of the benchmark dictionary (K = (1 + ⟨x, x'⟩)^q).
STANDARD_DEGREES: tuple[int, ...] = (1, 2, 3)
_SCALINGS = ("trace", "centered_trace", "fisher", "none")


class BasisKernel(NamedTuple):
    """One basis kernel K̃: ``kernel`` applied to the input columns ``columns`` (None: all)."""

    kernel: Kernel
    columns: tuple[int, ...] | None = None

    def describe(self) -> str:
        """Short label, e.g. ``Gaussian(sigma=2)[x3]`` or ``Polynomial(degree=2)[all]``."""
        spec = self.kernel.spec()
        name = spec.pop("kernel")
        args = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in spec.items())
        where = "all" if self.columns is None else ",".join(f"x{c}" for c in self.columns)
        return f"{name}({args})[{where}]"


class _Group(eqx.Module):
    """Basis kernels of one type, static settings and columns, with stacked array leaves."""

    kernel: Kernel  # leaves batched along axis 0
    ids: Array | np.ndarray  # (m_g,) positions in the dictionary, so that kernels without array leaves can be mapped
    columns: tuple[int, ...] | None = eqx.field(static=True)
    index: tuple[int, ...] = eqx.field(static=True)  # positions in the dictionary


def _select(X: Array, columns) -> Array:
    return X if columns is None else X[:, np.asarray(columns)]


class GramStack(eqx.Module):
    """The m scaled basis Grams 𝐊ᵏ = s_k K̃_k(X₁, X₂) as products (a pytree: pass it to ``jit``).

    Attributes:
      groups: the stacked kernel groups; X1: (n₁, p); X2: (n₂, p); scale: (m,) the s_k;
      dense: (m, n₁, n₂) materialised matrices (already scaled) or None (lazy evaluation);
      factors: None (products from ``dense`` or lazily), or (:meth:`factorize`) a tuple of buckets,
        each (L₁ (m_b, n₁, r_b), L₂ (m_b, n₂, r_b)) with 𝐊ᵏ ≈ L₁ₖL₂ₖᵀ, then for the kernels of high
        rank (Kₕ (m_h, n₁, n₂), None); bucket_order: the static permutation that puts the buckets'
        concatenated products back in dictionary order.
    """

    groups: tuple[_Group, ...]
    X1: Array
    X2: Array
    scale: Array
    dense: Array | None
    order: tuple[int, ...] = eqx.field(static=True)  # dictionary position -> position in group order
    factors: tuple[tuple[Array, Array | None], ...] | None = None
    bucket_order: tuple[int, ...] | None = eqx.field(static=True, default=None)

    @property
    def shape(self) -> tuple[int, int, int]:
        """(m, n₁, n₂)."""
        return (self.scale.shape[0], self.X1.shape[0], self.X2.shape[0])

    @full_precision
    def take(self, rows: npt.ArrayLike, cols: npt.ArrayLike) -> "GramStack":
        """The sub-stack on rows ``rows`` of X₁ and columns ``cols`` of X₂ (index arrays): slices the
        materialised matrices when dense, so one pre-computed stack serves every data split."""
        rows, cols = np.asarray(rows), np.asarray(cols)
        dense = None if self.dense is None else self.dense[:, rows][:, :, cols]
        factors = None if self.factors is None else tuple(
            (F[:, rows], G[:, cols]) if G is not None else (F[:, rows][:, :, cols], None) for F, G in self.factors)
        return GramStack(self.groups, self.X1[rows], self.X2[cols], self.scale, dense, self.order, factors,
                         self.bucket_order)

    @full_precision
    def factorize(self, tol: float = 1e-12) -> "GramStack":
        """This stack with pivoted Cholesky factors 𝐊ᵏ ≈ LₖLₖᵀ, used by :meth:`products`.

        Each factor stops at the smallest rank rₖ whose PSD remainder has trace ≤ ``tol``·tr 𝐊ᵏ (so
        ‖𝐊ᵏ − LₖLₖᵀ‖₂ ≤ ``tol``·tr 𝐊ᵏ; ``tol`` is raised to n·ε of the dtype, the rounding level);
        a kernel that needs more than n/2 columns keeps its matrix.
        Needs a square stack on one input set (X₂ = X₁). Cost O(Σₖ n·rₖ²) once; each product then
        O(n·Σₖ rₖ + m_h·n²). ``combine`` keeps the exact matrices. :meth:`take` slices the factors,
        so one factorisation on all inputs serves every data split.

        Args:
          tol: relative trace of the remainder, in (0, 1).

        Returns:
          :class:`GramStack` with ``factors`` and ``bucket_order`` set.

        Example:
            >>> import numpy as np
            >>> X = np.random.default_rng(0).normal(size=(30, 2))
            >>> st = linear_dictionary(2).stack(X).factorize()
            >>> st.factors[0][0].shape  # two linear kernels on one feature: rank 1 each
            (2, 30, 1)
        """
        if not 0.0 < float(tol) < 1.0:
            raise ParameterError(f"tol must lie in (0, 1); received {tol!r}.")
        if self.X1.shape != self.X2.shape or not bool(jnp.array_equal(self.X1, self.X2)):
            raise ShapeError(f"factorize needs a square stack on one input set (X2 = X1); received X1 of shape "
                             f"{self.X1.shape} and X2 of shape {self.X2.shape}.")
        K = self.matrices()
        n = K.shape[1]
        tol = max(float(tol), n * float(jnp.finfo(K.dtype).eps))
        L, ranks = _pivoted_cholesky(K, tol, max(1, n // 2))
        L, ranks = np.asarray(L), np.asarray(ranks)
        high = ranks > n // 2  # the loop stopped at n/2 columns without meeting tol
        level = np.where(high, -1, np.ceil(np.log2(np.maximum(ranks, 1))).astype(int))
        factors: list[tuple[Array, Array | None]] = []
        members: list[int] = []
        for b in np.unique(level[~high]):
            ks = np.flatnonzero(level == b)
            F = jnp.asarray(L[ks, :, :int(ranks[ks].max())])
            factors.append((F, F))
            members += ks.tolist()
        if high.any():
            ks = np.flatnonzero(high)
            factors.append((K[jnp.asarray(ks)], None))
            members += ks.tolist()
        return GramStack(self.groups, self.X1, self.X2, self.scale, self.dense, self.order, tuple(factors),
                         tuple(int(i) for i in np.argsort(members)))

    def _per_kernel(self, fn) -> Array:
        """Stack ``fn(K̃_k(X₁, X₂))`` over the dictionary (lax.map within each group), unscaled."""
        outs = []
        for g in self.groups:
            A, B = _select(self.X1, g.columns), _select(self.X2, g.columns)
            outs.append(jax.lax.map(lambda item, A=A, B=B: fn(item[1](A, B)), (g.ids, g.kernel)))
        return jnp.concatenate(outs)[jnp.asarray(self.order)]

    @full_precision
    def matrices(self) -> Array:
        """(m, n₁, n₂) the scaled basis Grams (materialises them)."""
        if self.dense is not None:
            return self.dense
        return self._per_kernel(lambda K: K) * self.scale[:, None, None]

    @full_precision
    def products(self, C: Array) -> Array:
        """(m, n₁, T) the products 𝐊ᵏ C for C of shape (n₂, T)."""
        if self.factors is not None:  # L₁ₖ(L₂ₖᵀC) per bucket of ranks, Kₖ C for the kernels of high rank
            parts = [jnp.einsum("kir,krt->kit", F, jnp.einsum("kjr,jt->krt", G, C)) if G is not None
                     else jnp.einsum("kij,jt->kit", F, C) for F, G in self.factors]
            return jnp.concatenate(parts)[jnp.asarray(self.bucket_order)]
        if self.dense is not None:
            m, n1, n2 = self.shape
            return (self.dense.reshape(m * n1, n2) @ C).reshape(m, n1, -1)
        return self._per_kernel(lambda K: K @ C) * self.scale[:, None, None]

    @full_precision
    def combine(self, d: Array) -> Array:
        """(n₁, n₂) the combined Gram 𝐊(d) = Σₖ d_k 𝐊ᵏ."""
        if self.dense is not None:
            return _combine_dense(d, self.dense)
        w = (d * self.scale)
        total = jnp.zeros(self.shape[1:], self.X1.dtype)
        for g in self.groups:
            A, B = _select(self.X1, g.columns), _select(self.X2, g.columns)
            wg = w[jnp.asarray(g.index)]
            total = total + jax.lax.fori_loop(
                0, len(g.index), lambda i, acc, g=g, A=A, B=B, wg=wg: acc + wg[i] * jax.tree.map(
                    lambda x: jnp.asarray(x)[i], g.kernel)(A, B), jnp.zeros_like(total))
        return total


@jax.custom_jvp
def _combine_support(d: Array, dense: Array) -> Array:
    """Σₖ d_k dense[k] reading only the matrices of the support of d (a loop over its non-zeros).

    The loop's trip count depends on d, which reverse-mode differentiation cannot go through; the
    rule below gives the derivative of the (bilinear) sum directly, so ``grad`` in d and in the
    matrices works."""
    idx = jnp.nonzero(d, size=dense.shape[0], fill_value=0)[0]
    return jax.lax.fori_loop(0, jnp.count_nonzero(d), lambda i, acc: acc + d[idx[i]] * dense[idx[i]],
                             jnp.zeros(dense.shape[1:], dense.dtype))


@partial(_combine_support.defjvp, symbolic_zeros=True)
@full_precision
def _combine_support_jvp(primals, tangents):
    d, dense = primals
    d_dot, dense_dot = tangents
    out = _combine_support(d, dense)
    out_dot = jnp.zeros_like(out)
    if not isinstance(d_dot, jax.custom_derivatives.SymbolicZero):
        out_dot = out_dot + jnp.tensordot(d_dot, dense, 1)
    if not isinstance(dense_dot, jax.custom_derivatives.SymbolicZero):
        out_dot = out_dot + jnp.tensordot(d, dense_dot, 1)
    return out, out_dot


_combine_dense = jit(_combine_support)  # compiled once per shape: eager calls do not re-trace the loop


class KernelDictionary:
    """An ordered list of basis kernels (:class:`BasisKernel`).

    Args:
      entries: the basis kernels.

    Example:
        >>> from jaxmtl.kernels import Gaussian, Linear
        >>> D = dictionary([Gaussian(1.0), Linear()])
        >>> [b.describe() for b in D]
        ['Gaussian(sigma=1)[all]', 'Linear()[all]']
    """

    def __init__(self, entries: Sequence[BasisKernel]) -> None:
        self.entries = tuple(entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)

    def __getitem__(self, k: int) -> BasisKernel:
        return self.entries[k]

    def names(self) -> list[str]:
        """One label per basis kernel (see :meth:`BasisKernel.describe`)."""
        return [b.describe() for b in self.entries]

    def check_features(self, p: int, name: str = "X") -> None:
        """Raise ShapeError when a basis kernel uses a column that inputs with ``p`` features lack."""
        cols = [c for b in self.entries if b.columns is not None for c in b.columns]
        if cols and max(cols) >= p:
            raise ShapeError(f"{name} has {p} feature(s) but the kernel dictionary uses column {max(cols)}; "
                             f"build the dictionary for {p} features.")

    def _groups(self, dtype) -> tuple[tuple[_Group, ...], tuple[int, ...]]:
        keyed: dict[Any, list[int]] = {}
        for k, b in enumerate(self.entries):
            _, treedef = jax.tree.flatten(b.kernel)
            keyed.setdefault((treedef, b.columns), []).append(k)
        groups = []
        for (_, columns), idx in keyed.items():
            kernels = [jax.tree.map(lambda x: jnp.asarray(x, dtype) if is_traced(x) else np.asarray(x, dtype),
                                    self.entries[k].kernel) for k in idx]  # NumPy leaves: no compiled call
            stacked = jax.tree.map(lambda *xs: jnp.stack(xs) if any(map(is_traced, xs)) else np.stack(xs), *kernels)
            groups.append(_Group(stacked, np.asarray(idx, np.int32), columns, tuple(idx)))
        flat = [k for g in groups for k in g.index]
        order = tuple(int(i) for i in np.argsort(flat))
        return tuple(groups), order

    def stack(self, X1: npt.ArrayLike, X2: npt.ArrayLike | None = None, scale: npt.ArrayLike | None = None,
              store: str = "dense") -> GramStack:
        """The scaled basis Grams 𝐊ᵏ = s_k K̃_k(X₁, X₂) ([Din11] eq. 3.6).

        Args:
          X1: (n₁, p) row inputs; X2: (n₂, p) column inputs (default X1).
          scale: (m,) scalings s_k (default ones; see :meth:`scaling`).
          store: ``"dense"`` (materialise the (m, n₁, n₂) array) or ``"lazy"`` (evaluate on demand).

        Returns:
          :class:`GramStack`.
        """
        X1 = check_inputs(X1, "X1")
        X2 = X1 if X2 is None else check_inputs(X2, "X2")
        if X1.shape[1] != X2.shape[1]:
            raise ShapeError(f"X1 and X2 must have the same number of features; received {X1.shape[1]} and "
                             f"{X2.shape[1]}.")
        self.check_features(X1.shape[1], "X1")
        if store not in ("dense", "lazy"):
            raise ParameterError(f"store must be 'dense' or 'lazy'; received {store!r}.")
        m = len(self)
        scale = np.ones(m) if scale is None else as_float_array(scale, "scale", ndim=1)
        if scale.shape != (m,) or np.any(scale <= 0):
            raise ParameterError(f"scale must hold {m} positive numbers (one per basis kernel); received "
                                 f"shape {scale.shape}.")
        groups, order = self._groups(X1.dtype)
        # on the device without a compiled conversion (jnp.asarray of a NumPy array compiles one per shape)
        parts = (groups, jax.device_put(X1), jax.device_put(X2), jax.device_put(np.asarray(scale, X1.dtype)))
        st = GramStack(*parts, None, order)
        return GramStack(*parts, _materialise(st), order) if store == "dense" else st

    def diagonal(self, X: npt.ArrayLike, scale: npt.ArrayLike | None = None) -> Array:
        """(m, n) the values s_k K̃_k(xᵢ, xᵢ), without forming any Gram (default s_k = 1)."""
        return _diagonal(self.stack(X, scale=scale, store="lazy"))

    def scaling(self, X: npt.ArrayLike, rule: str | Any = "trace", y: npt.ArrayLike | None = None,
                weights: npt.ArrayLike | None = None) -> np.ndarray:
        """The scalings s_k of [Din11] §4.4, computed on the inputs X (n, p).

        Args:
          X: inputs the rule is evaluated on (training inputs; training + test inputs for the
            "transductive scaling" of [Din11] §4.4).
          rule: ``"trace"`` (4.14; (4.12) for linear kernels), ``"centered_trace"`` (4.14 after
            normalisation in feature space: trace minus the mean of all entries),
            ``"fisher"`` (the kernel form of 4.13: 1/(σ₊² + σ₋²), needs labels ``y`` of ±1 on X),
            ``"none"`` (ones) or an array of m positive numbers.
          weights: optional (n,) weights in {0, 1}: the rule reads the rows of weight 1 only (default all).

        Returns:
          (m,) float64 array of positive scalings.
        """
        X = check_inputs(X, "X")
        self.check_features(X.shape[1])
        w = np.ones(X.shape[0]) if weights is None else as_float_array(weights, "weights", ndim=1)
        if w.shape != (X.shape[0],) or not set(np.unique(w)) <= {0.0, 1.0} or not w.any():
            raise ParameterError(f"weights must hold {X.shape[0]} values in {{0, 1}}, not all 0; received {w.shape}.")
        m = len(self)
        if not isinstance(rule, str):
            s = as_float_array(rule, "scaling", ndim=1).astype(np.float64)
            if s.shape != (m,) or np.any(s <= 0):
                raise ParameterError(f"scaling must hold {m} positive numbers; received shape {s.shape}.")
            return s
        if rule not in _SCALINGS:
            raise ParameterError(f"scaling must be one of {_SCALINGS} or an array; received {rule!r}.")
        if rule == "none":
            return np.ones(m)
        st = self.stack(X, store="lazy")
        wj = jax.device_put(w.astype(X.dtype))  # no compiled conversion
        if rule == "trace":
            value = np.sum(np.asarray(self.diagonal(X)), axis=1, where=w > 0)
        elif rule == "centered_trace":  # Σᵢ K_ii − Σᵢⱼ K_ij / n over the rows of weight 1
            value = st._per_kernel(lambda K: jnp.sum(wj * jnp.diag(K)) - wj @ K @ wj / jnp.sum(wj))
        else:
            if y is None:
                raise ParameterError("scaling='fisher' needs the labels y (±1) of X.")
            yv = np.asarray(y, dtype=float).ravel()
            if yv.shape != (X.shape[0],) or not set(np.unique(yv)) <= {-1.0, 1.0} or len(np.unique(yv)) < 2:
                raise ParameterError(f"scaling='fisher' needs y of {X.shape[0]} labels holding both -1 and +1.")
            pos = wj * jax.device_put((yv > 0).astype(X.dtype))  # the negatives: wj − pos

            def within(K, w):  # (1/ℓ±) Σ_{i∈±} (K_ii − (1/ℓ±) Σ_{j∈±} K_ij)
                nw = jnp.sum(w)
                return jnp.sum(w * (jnp.diag(K) - K @ w / nw)) / nw

            value = st._per_kernel(lambda K: within(K, pos) + within(K, wj - pos))
        stat = np.asarray(value, np.float64)
        tiny = np.finfo(np.float64).eps * max(1.0, float(np.max(np.abs(stat))))
        if np.any(stat <= tiny):
            bad = [self.entries[k].describe() for k in np.flatnonzero(stat <= tiny)[:3]]
            raise ParameterError(f"scaling {rule!r} is undefined for basis kernels whose statistic is zero on X "
                                 f"(a constant feature?): {bad}; drop those kernels or columns.")
        return 1.0 / stat


@filter_jit
def _materialise(st: GramStack) -> Array:
    return st.matrices()


@partial(jit, static_argnames=("tol", "max_rank"))
def _pivoted_cholesky(K: Array, tol: float, max_rank: int) -> tuple[Array, Array]:
    """(m, n, max_rank) factors (columns beyond the rank are zero) and (m,) ranks of the PSD matrices
    of K; a rank of max_rank + 1 marks a matrix whose remainder still had trace > tol·tr K there."""

    def one(Kk):
        stop = tol * jnp.trace(Kk)

        def cond(s):
            _, diag, j = s
            return (j < max_rank) & (jnp.sum(diag) > stop)

        def body(s):
            L, diag, j = s
            piv = jnp.argmax(diag)
            col = (Kk[:, piv] - L @ L[piv]) / jnp.sqrt(diag[piv])
            return L.at[:, j].set(col), jnp.maximum(diag - col**2, 0.0).at[piv].set(0.0), j + 1

        start = (jnp.zeros((Kk.shape[0], max_rank), Kk.dtype), jnp.maximum(jnp.diag(Kk), 0.0), 0)
        L, diag, r = jax.lax.while_loop(cond, body, start)
        return L, jnp.where(jnp.sum(diag) > stop, max_rank + 1, r)

    return jax.lax.map(one, K)


@filter_jit
def _diagonal(st: GramStack) -> Array:
    vals = jnp.concatenate([jax.lax.map(lambda item, A=_select(st.X1, g.columns): item[1].diag(A), (g.ids, g.kernel))
                            for g in st.groups])[jnp.asarray(st.order)]
    return vals * st.scale[:, None]


def standard_dictionary(n_features: int, widths: Sequence[float] = STANDARD_WIDTHS,
                        degrees: Sequence[int] = STANDARD_DEGREES) -> KernelDictionary:
    """The benchmark dictionary of [Din11] §4.5.2: every kernel on all features and on each feature.

    For each column set (all p features, then feature 0, …, p − 1): Gaussians of the given widths
    σ, then polynomials (1 + ⟨x, x'⟩)^q. With the defaults that is 13·(p + 1) kernels.

    Departure: [Din11] §4.5.2 writes "10 different values of γ on a logarithmic scale between 10⁻³
    and 10³" for exp(−γ‖x − x'‖²); the widths here are those of the SimpleMKL benchmarks it
    compares with (Rakotomamonjy et al., 2008). Pass ``widths=1/np.sqrt(2*np.logspace(-3, 3, 10))``
    for the γ grid of the text.

    Args:
      n_features: p ≥ 1; widths: Gaussian widths σ > 0; degrees: polynomial degrees ≥ 1.

    Example:
        >>> len(standard_dictionary(8))
        117
    """
    p = check_int(n_features, "n_features")
    sigmas = check_positive_array(widths, "widths")
    qs = [check_int(int(q) if float(q) == int(q) else q, "degrees") for q in degrees]
    entries = []
    for cols in [None] + [(j,) for j in range(p)]:
        entries += [BasisKernel(Gaussian(float(s)), cols) for s in sigmas]
        entries += [BasisKernel(Polynomial(q, gamma=1.0, coef0=1.0), cols) for q in qs]
    return KernelDictionary(entries)


def linear_dictionary(n_features: int) -> KernelDictionary:
    """Linear kernels on each feature, K̃_k(x, x') = xᵏx'ᵏ ([Din11] eq. 4.5).

    Example:
        >>> linear_dictionary(3).names()
        ['Linear()[x0]', 'Linear()[x1]', 'Linear()[x2]']
    """
    p = check_int(n_features, "n_features")
    return KernelDictionary([BasisKernel(Linear(), (j,)) for j in range(p)])


def dictionary(kernels: Sequence[Kernel | BasisKernel | tuple]) -> KernelDictionary:
    """A dictionary from a user list: kernels (on all features), ``BasisKernel`` or ``(kernel, columns)``.

    Example:
        >>> from jaxmtl.kernels import Gaussian
        >>> len(dictionary([Gaussian(1.0), (Gaussian(2.0), (0,))]))
        2
    """
    if isinstance(kernels, (str, Kernel)) or not isinstance(kernels, Sequence) or len(kernels) == 0:
        raise ParameterError(f"kernels must be a non-empty list of kernels; received {kernels!r}.")
    entries = []
    for i, item in enumerate(kernels):
        if isinstance(item, Kernel):
            item = BasisKernel(item, None)
        elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Kernel):
            cols = None if item[1] is None else tuple(int(c) for c in np.atleast_1d(item[1]))
            if cols is not None and (len(cols) == 0 or min(cols) < 0):
                raise ParameterError(f"kernels[{i}]: columns must be non-negative indices; received {item[1]!r}.")
            item = BasisKernel(item[0], cols)
        else:
            raise ParameterError(f"kernels[{i}] must be a jaxmtl kernel or (kernel, columns); received {item!r}.")
        entries.append(item)
    return KernelDictionary(entries)
