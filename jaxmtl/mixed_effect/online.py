r"""The incremental updates of the client-server algorithm ([Din11] §5.3, Algorithms 5–9).

:class:`Database` holds what the server keeps about the *distinct inputs*: x̌, the factors
Ǩ = L D Lᵀ (5.7), H and y̌ of Algorithm 4 (lines 4–6), in capacity-padded device buffers so that
each update is one compiled call (the capacity doubles when full; padding is the identity in L,
ones in D, zeros in H and y̌, so padded entries never mix with real ones). :class:`TaskRecord`
holds one task's undisclosed hʲ, yʲ, wʲ, Rʲ (small NumPy arrays). :func:`receive` is
Algorithm 5 for one triple (xᵢ, yᵢ, wᵢ) of task j with its three cases:

* Case 3 (Algorithm 8) — xᵢ is a new distinct input: L, D grow by one Cholesky row
  (lines 3–11, :func:`_schur` then :func:`_extend`), H ← diag{H, β}, y̌ ← (y̌; 0);
* Case 2 (Algorithm 7) — xᵢ is new to task j: Rʲ grows by a Schur complement (Lemma 10);
* Case 1 (Algorithm 6) — xᵢ repeats an input of task j: the two examples are merged into one
  with w = (1/w_p + 1/wᵢ)⁻¹, y = w(y_p/w_p + yᵢ/wᵢ) and Rʲ gets a rank-one update (Lemma 9);

then lines 31–35: Rʲ ← Rʲ + γuuᵀ, v = Lᵀ(:, hʲ)u, y̌ ← y̌ + μv, H ← (H⁻¹ + αγvvᵀ)⁻¹.

Departures from the printed algorithm, and why:

* line 28 (Case 1) reads γ = −[λΔw + r_pp]⁻¹; Lemma 9 applied to (Rʲ)⁻¹ + λΔw e_p e_pᵀ, as the
  proof after Algorithm 6 does, gives γ = −[(λΔw)⁻¹ + r_pp]⁻¹, which is what we use (and what
  the tests check against the centralized solve);
* line 35 is written H ← H − αγ qqᵀ / (1 + αγ vᵀq), the same Sherman–Morrison update without
  (αγ)⁻¹, so that α = 0 (separate tasks, H = D fixed) needs no special case;
* every output vector carries a second column of ones (y̌₁ = Σⱼ Lᵀ(:, hʲ) Rʲ 1 and
  a = Σⱼ 1ᵀRʲ[yʲ, 1]), updated by the same formulas, so that clients can add the unpenalized
  bias b = 1ᵀSy / 1ᵀS1 (S = (K + λW)⁻¹) of the thesis's "parametric bias term".

[Din11] F. Dinuzzo, *Learning functions with kernel methods*, PhD thesis, Università di Pavia, 2011.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from ..errors import ParameterError

__all__ = ["Buffers", "Database", "TaskRecord", "receive", "estimate", "key_of", "ldl_factors"]


class Buffers(NamedTuple):
    """Capacity-padded device arrays of the distinct-input database (cap = capacity)."""

    X: jax.Array   # (cap, p) distinct inputs x̌
    L: jax.Array   # (cap, cap) unit lower-triangular factor of Ǩ (5.7)
    D: jax.Array   # (cap,) its diagonal factor
    H: jax.Array   # (cap, cap) H of Algorithm 4, line 6
    Y: jax.Array   # (cap, 2) [y̌, y̌₁] of Algorithm 4, line 5 (outputs, ones)
    a: jax.Array   # (2,) Σⱼ 1ᵀ Rʲ [yʲ, 1]


def empty_buffers(cap: int, p: int) -> Buffers:
    f = np.float64 if jax.config.jax_enable_x64 else np.float32
    return Buffers(jnp.zeros((cap, p), f), jnp.eye(cap, dtype=f), jnp.ones(cap, f), jnp.zeros((cap, cap), f),
                   jnp.zeros((cap, 2), f), jnp.zeros(2, f))


def grow(buf: Buffers, n: int, cap: int) -> Buffers:
    """The same database in buffers of a larger capacity (canonical padding)."""
    new = empty_buffers(cap, buf.X.shape[1])
    return Buffers(new.X.at[:n].set(buf.X[:n]), new.L.at[:n, :n].set(buf.L[:n, :n]), new.D.at[:n].set(buf.D[:n]),
                   new.H.at[:n, :n].set(buf.H[:n, :n]), new.Y.at[:n].set(buf.Y[:n]), buf.a)


@jax.jit
def _schur(kernel, X, L, D, n, x):
    """Algorithm 5 lines 6–8: k̄ = K̄(x, x̌), r solving L D r = k̄([n]), β = k̄ₙ − rᵀDr (and k̄ₙ)."""
    kbar = jnp.where(jnp.arange(X.shape[0]) < n, kernel(x[None], X)[0], 0.0)
    r = solve_triangular(L, kbar, lower=True, unit_diagonal=True) / D
    kxx = kernel(x[None], x[None])[0, 0]
    return r, kxx - r @ (D * r), kxx


def _extend_body(buf: Buffers, n, x, r, beta) -> Buffers:
    """Algorithm 5 lines 3–5 and 9–11: x̌ ← (x̌, x), y̌ ← (y̌; 0), H, D ← diag{·, β}, L ← [L 0; rᵀ 1]."""
    return buf._replace(X=buf.X.at[n].set(x), L=buf.L.at[n].set(r.at[n].set(1.0)), D=buf.D.at[n].set(beta),
                        H=buf.H.at[n, n].set(beta))


def _rank_one_body(buf: Buffers, h, u, mu, alpha_gamma) -> Buffers:
    """Algorithm 5 lines 32–35 (u zero-padded, h padded with 0)."""
    v = buf.L[h].T @ u
    q = buf.H @ v
    H = buf.H - (alpha_gamma / (1.0 + alpha_gamma * (v @ q))) * jnp.outer(q, q)
    return buf._replace(H=H, Y=buf.Y + v[:, None] * mu[None, :], a=buf.a + mu * jnp.sum(u))


def _new_to_task_body(buf: Buffers, task_kernel, alpha, lam, h, ell, R, Yj, w):
    """Algorithm 7 (Lemma 10) then lines 31–35, on the device.

    h (width,) the task's inputs with the new one at ell − 1 (padding 0), R (width, width) the old
    Rʲ zero-padded, Yj (width, 2) its outputs with the new row. Returns (buffers, u, γ, μ).
    """
    dt = buf.X.dtype
    on = jnp.arange(h.shape[0]) < ell
    kt = jnp.where(on, (1 - alpha) * task_kernel(buf.X[h[ell - 1]][None], buf.X[h])[0], 0.0)
    u = jnp.where(jnp.arange(h.shape[0]) == ell - 1, -1.0, R.astype(dt) @ kt)
    gamma = 1.0 / (lam * w - u @ kt)
    mu = gamma * (u @ Yj.astype(dt))
    return _rank_one_body(buf, h, u, mu, alpha * gamma), (u, gamma, mu)


_rank_one = jax.jit(_rank_one_body, donate_argnums=(0,))
_new_to_task = jax.jit(_new_to_task_body, donate_argnums=(0,))


@partial(jax.jit, donate_argnums=(0,))
def _new_input(buf: Buffers, n, x, r, beta, task_kernel, alpha, lam, h, ell, R, Yj, w):
    """Case 3 (Algorithm 8, :func:`_extend_body`) and Algorithm 7 in one compiled call."""
    return _new_to_task_body(_extend_body(buf, n, x, r, beta), task_kernel, alpha, lam, h, ell, R, Yj, w)


def key_of(x: np.ndarray) -> bytes:
    """Exact-equality key of an input (the ``find`` of §5.3.1); −0 and 0 are the same input."""
    return np.ascontiguousarray(x + 0.0, dtype=np.float64).tobytes()


def _padded(length: int) -> int:
    return max(4, 1 << (max(length, 1) - 1).bit_length())


@dataclass
class Database:
    """The distinct-input part of the state: buffers, their count n, and the ``find`` index;
    ``capacity`` is the buffers' initial capacity (each doubling recompiles the updates once)."""

    kernel: object
    alpha: float
    lam: float
    buf: Buffers | None = None
    n: int = 0
    index: dict = field(default_factory=dict)
    capacity: int = 16

    def find(self, x: np.ndarray) -> int:
        """Algorithm 5 line 1: the position of x in x̌, or n when x is new."""
        return self.index.get(key_of(x), self.n)

    def new_input(self, x: np.ndarray):
        """Case 3 checks (no change yet): returns the pending (r, β) for :meth:`add_input`."""
        b = self.buf if self.buf is not None else empty_buffers(self.capacity, x.shape[0])
        r, beta, kxx = _schur(self.kernel, b.X, b.L, b.D, self.n, x)
        beta_h, kxx = (float(v) for v in jax.device_get((beta, kxx)))
        kxx = abs(kxx)
        if not beta_h > 1e-12 * max(kxx, 1e-300):
            raise ParameterError(
                f"kernel {self.kernel!r} is not strictly positive definite on the inputs: a new input "
                f"leaves a Schur complement β = {beta_h:.3g} (K̄(x, x) = {kxx:.3g}); the online "
                "algorithm (Algorithm 5, case 3) needs K̄ strictly positive definite on distinct inputs."
            )
        return r, beta

    def add_input(self, x: np.ndarray, pending, step: tuple):
        """Case 3 lines 1–11 (append x to x̌, growing the buffers when full) fused with the
        Algorithm 7 update ``step`` = (K̃ʲ, α, λ, h, ℓ, R, Yj, w) of :func:`_new_to_task_body`;
        returns its (u, γ, μ), still on the device."""
        r, beta = pending
        if self.buf is None:
            self.buf = empty_buffers(self.capacity, x.shape[0])
        cap = self.buf.X.shape[0]
        if self.n == cap:
            self.buf = grow(self.buf, self.n, 2 * cap)
            r = jnp.concatenate([r, jnp.zeros(cap, r.dtype)])
        self.buf, out = _new_input(self.buf, self.n, x, r, beta, *step)
        self.index[key_of(x)] = self.n
        self.n += 1
        return out

    @classmethod
    def restore(cls, kernel, alpha: float, lam: float, X, L, D, H, Y, a, cap: int) -> "Database":
        """A database from the first-n blocks of its arrays (saved state, or a client's download)."""
        X = np.asarray(X, dtype=np.float64)
        n, p = X.shape
        b = empty_buffers(cap, p)
        buf = Buffers(b.X.at[:n].set(X), b.L.at[:n, :n].set(L), b.D.at[:n].set(D), b.H.at[:n, :n].set(H),
                      b.Y.at[:n].set(Y), jnp.asarray(a, b.a.dtype))
        return cls(kernel, alpha, lam, buf, n, {key_of(x): i for i, x in enumerate(X)})

    def arrays(self) -> dict:
        """The first-n blocks of the buffers as NumPy arrays (X, L, D, H, Y, a)."""
        n = self.n
        if self.buf is None:
            return {}
        b = self.buf
        return {"X": np.asarray(b.X[:n]), "L": np.asarray(b.L[:n, :n]), "D": np.asarray(b.D[:n]),
                "H": np.asarray(b.H[:n, :n]), "Y": np.asarray(b.Y[:n]), "a": np.asarray(b.a)}


@jax.jit
def ldl_factors(Kc):
    """Algorithm 9 lines 1–7 at once: Ǩ = L D Lᵀ with L unit lower triangular (from Cholesky)."""
    C = jnp.linalg.cholesky(Kc)
    d = jnp.diag(C)
    return C / d[None, :], d**2


@dataclass
class TaskRecord:
    """Undisclosed data of one task: hʲ (indices into x̌), yʲ (with a column of ones), wʲ, Rʲ."""

    kernel: object
    h: list = field(default_factory=list)
    Y: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    w: np.ndarray = field(default_factory=lambda: np.zeros(0))
    R: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    pos: dict = field(default_factory=dict)

    def copy(self) -> "TaskRecord":
        return TaskRecord(self.kernel, list(self.h), self.Y.copy(), self.w.copy(), self.R.copy(), dict(self.pos))


def receive(db: Database, rec: TaskRecord, x: np.ndarray, y: float, w: float) -> None:
    """Algorithm 5: update ``db`` and ``rec`` with the triple (x, y, w) of the record's task.

    Inputs must be validated by the caller; the only check here (case 3, K̄ strictly positive)
    raises before anything changes.
    """
    alpha, lam = db.alpha, db.lam
    s = db.find(x)
    pending = db.new_input(x) if s == db.n else None
    Yi = np.array([y, 1.0])
    p = rec.pos.get(s)
    if p is None:                                         # Cases 2–3 (Algorithms 7–8), one compiled call
        ell = len(rec.h) + 1
        width = _padded(ell)
        h = np.zeros(width, np.int64)
        h[: ell - 1], h[ell - 1] = rec.h, s
        R = _pad(rec.R, (width, width))
        Yj = _pad(np.vstack([rec.Y, Yi]), (width, 2))
        step = (rec.kernel, alpha, lam, h, ell, R, Yj, w)
        if pending is None:
            db.buf, out = _new_to_task(db.buf, *step)
        else:
            out = db.add_input(x, pending, step)
        u, gamma, mu = jax.device_get(out)
        u = u[:ell].astype(np.float64)
        rec.h.append(s)
        rec.pos[s] = ell - 1
        rec.Y, rec.w = Yj[:ell], np.append(rec.w, w)
        rec.R = R[:ell, :ell] + float(gamma) * np.outer(u, u)
        return
    u = rec.R[:, p].copy()                                # Case 1 (Algorithm 6)
    wp = rec.w[p] * w / (rec.w[p] + w)
    rec.Y[p] = rec.Y[p] + wp * (Yi - rec.Y[p]) / w
    dw = wp**2 / (wp - w)
    gamma = -1.0 / (1.0 / (lam * dw) + rec.R[p, p])
    mu = wp * (Yi - rec.Y[p]) / (w - wp) + gamma * (u @ rec.Y)
    rec.w[p] = wp
    rec.R = rec.R + gamma * np.outer(u, u)
    width = _padded(len(rec.h))
    h = np.zeros(width, np.int64)
    h[: len(rec.h)] = rec.h
    db.buf = _rank_one(db.buf, h, _pad(u, (width,)), mu, alpha * gamma)


def _pad(a: np.ndarray, shape: tuple) -> np.ndarray:
    out = np.zeros(shape)
    out[tuple(slice(0, k) for k in a.shape)] = a
    return out


@partial(jax.jit, static_argnames=("fit_intercept",))
def _estimate(kernel, task_kernel, alpha, X, n, H, Y, a, h, R, Yj, Xq, fit_intercept: bool):
    """Algorithm 9 on zero-padded arrays (padding of Ǩ by the identity), then (5.3) at Xq.

    Lines 1–7: L, D from Ǩ (Cholesky); 13: Z = H[y̌, y̌₁]; 14: č from D Lᵀ č = Z; 15:
    cʲ = Rʲ(yʲ − α L(hʲ, :)Z); the bias b = s₀/s₁ with s = 1ᵀS[y, 1] = a − α y̌₁ᵀZ.
    Returns (ḡ(Xq) + b, g̃ⱼ(Xq)).
    """
    valid = jnp.arange(X.shape[0]) < n
    Kc = jnp.where(valid[:, None] & valid[None, :], kernel(X, X), jnp.eye(X.shape[0], dtype=X.dtype))
    L, D = ldl_factors(Kc)
    Z = H @ Y
    cu = solve_triangular(L.T, Z / D[:, None], lower=False, unit_diagonal=True)
    cj = R @ (Yj - alpha * (L @ Z)[h])
    if fit_intercept:
        s = a - alpha * (Y[:, 1] @ Z)
        b = s[0] / s[1]
    else:
        b = jnp.zeros((), X.dtype)
    g_bar = alpha * kernel(Xq, X) @ (cu[:, 0] - b * cu[:, 1]) + b
    g_tilde = (1 - alpha) * task_kernel(Xq, X[h]) @ (cj[:, 0] - b * cj[:, 1])
    return g_bar, g_tilde


def estimate(kernel, task_kernel, alpha: float, X, H, Y, a, rec: "TaskRecord | None", fit_intercept: bool, Xq):
    """(ḡ(Xq) with the bias, g̃ⱼ(Xq)) from the disclosed x̌ (n, p), H (n, n), [y̌, y̌₁] (n, 2), a (2,)
    and the client's own record (None or empty: g̃ = 0), by Algorithm 9 (shapes padded to powers
    of two so that a growing database recompiles rarely)."""
    n, ell = X.shape[0], 0 if rec is None else len(rec.h)
    cap, lcap = _padded(n), _padded(ell)
    h = np.zeros(lcap, np.int64)
    R, Yj = np.zeros((lcap, lcap)), np.zeros((lcap, 2))
    if ell:
        h[:ell], R[:ell, :ell], Yj[:ell] = rec.h, rec.R, rec.Y
    out = _estimate(kernel, task_kernel, alpha, jnp.asarray(_pad(X, (cap, X.shape[1]))), n,
                    jnp.asarray(_pad(H, (cap, cap))), jnp.asarray(_pad(Y, (cap, 2))), jnp.asarray(a),
                    jnp.asarray(h), jnp.asarray(R), jnp.asarray(Yj), jnp.asarray(Xq), fit_intercept)
    return tuple(np.asarray(v) for v in out)
