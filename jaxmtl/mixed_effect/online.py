r"""The incremental updates of the client-server algorithm ([Din11] §5.3, Algorithms 5–9).

The state is kept on the host in float64 whatever JAX's ``jax_enable_x64`` (kernels are evaluated
in float64 inside ``jax.enable_x64(True)``), in the form of the sums of Algorithm 4 lines 5–6
*before* the change of basis by the Cholesky factor of Ǩ:

* :class:`Database`, over the n distinct inputs: x̌ (n, p), G (n, n) = Σⱼ I(:, hʲ) Rʲ I(hʲ, :),
  B (n, 2) = Σⱼ I(:, hʲ) Rʲ [yʲ, 1] and a (2,) = Σⱼ 1ᵀ Rʲ [yʲ, 1] (host arrays padded to a capacity
  that doubles when full; padding zero);
* :class:`TaskRecord`, per task: hʲ (indices into x̌), [yʲ, 1], wʲ, Rʲ = [(1 − α) K̃ʲ + λ Wʲ]⁻¹.

The thesis keeps y̌ = Lᵀ b and H = (D⁻¹ + α Lᵀ G L)⁻¹ with Ǩ = L D Lᵀ (5.7): the same information
(given x̌) in a basis that divides by the pivots D of K̄ on the distinct inputs. Those pivots decay
geometrically for a Gaussian K̄ on ordinary points; measured with the thesis's form, 60 distinct
standard-normal 2-D points with ``Gaussian(1.0)``, α = 0.5, λ = 0.1: the 36th send was refused in
float32 (β = 0) and the 92nd in float64 (β = 8.3e−13). G and B divide only by the per-task systems
(1 − α) K̃ʲ + λ Wʲ, whose eigenvalues are at least λ·min wʲ, so the state needs neither K̄ strictly
positive definite nor any care about how close the inputs are (a linear K̄ works too).

:func:`receive` is Algorithm 5 for one triple (xᵢ, yᵢ, wᵢ) of task j, a *transaction*: it computes
the task's new Rʲ and the changes of G, B, a, checks that all of them are finite and below
:data:`STATE_LIMIT` in magnitude, and only then writes them; a refused send leaves the state
exactly as it was. Its cases:

* Case 3 (Algorithm 8) — xᵢ is a new distinct input: x̌ ← (x̌, xᵢ) and G, B grow by zeros (no
  Cholesky extension of Ǩ is needed in this form), then Case 2;
* Case 2 (Algorithm 7) — xᵢ is new to task j: Rʲ grows by a Schur complement (Lemma 10),
  γ = [λwᵢ + (1 − α) K̃ʲ(xᵢ, xᵢ) − kᵀRʲk]⁻¹ (refused unless γ⁻¹ ≥ λwᵢ/2: the exact value is at
  least λwᵢ, a smaller computed one is round-off);
* Case 1 (Algorithm 6) — xᵢ repeats an input of task j: the two examples are merged into one
  with w = (1/w_p + 1/wᵢ)⁻¹, y = w(y_p/w_p + yᵢ/wᵢ), and Rʲ gets the rank-one update of Lemma 9,
  γ = −[(λΔw)⁻¹ + r_pp]⁻¹ (line 28 as printed reads −[λΔw + r_pp]⁻¹; Lemma 9 applied as the
  proof after Algorithm 6 does gives this one, checked against the centralized solve);

then G(hʲ, hʲ), B(hʲ) and a change by the differences of Rʲ, Rʲ[yʲ, 1] and 1ᵀRʲ[yʲ, 1] (O(ℓⱼ²)
per send; the thesis's H update is O(n²)).

:func:`estimate` is Algorithm 9 in this basis: č solves (I + α G Ǩ) č = b (Algorithm 4 lines
7–8, with Ǩ č = L z), computed as č = L_G (I + α L_Gᵀ Ǩ L_G)⁻¹ L_G⁻¹ b with G = L_G L_Gᵀ — the
middle matrix is symmetric with eigenvalues ≥ 1, so its Cholesky factor exists whatever Ǩ's
conditioning; then cʲ = Rʲ([yʲ, 1] − α (Ǩč)(hʲ)) (line 10). O(n³), as Algorithm 9's refactoring of Ǩ.
A second column of ones (y̌₁ = Σⱼ I(:, hʲ)Rʲ1, a = Σⱼ 1ᵀRʲ[yʲ, 1]) lets clients add the
unpenalized bias b = 1ᵀSy / 1ᵀS1 (S = (K + λW)⁻¹) of the thesis's "parametric bias term".

[Din11] F. Dinuzzo, *Learning functions with kernel methods*, PhD thesis, Università di Pavia, 2011.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import numpy as np

from .._jit import jit
from ..errors import NonFiniteError, ParameterError

__all__ = ["Database", "TaskRecord", "Solution", "Plan", "receive", "plan", "commit", "solve_shared", "estimate", "gram", "key_of",
           "STATE_LIMIT", "INPUT_LIMIT"]

STATE_LIMIT = 1e300
"""Largest magnitude a send may give any entry of the state (float64's maximum is 1.8e308): the
headroom is for the sums and solves of a prediction (one that still overflows raises NonFiniteError)."""


INPUT_LIMIT = 1e150
"""Largest magnitude of an input entry: squared distances of larger ones overflow float64."""


def key_of(x: np.ndarray) -> bytes:
    """Exact-equality key of an input (the ``find`` of §5.3.1); −0 and 0 are the same input."""
    return np.ascontiguousarray(x + 0.0, dtype=np.float64).tobytes()


def _padded(length: int) -> int:
    return max(4, 1 << (max(length, 1) - 1).bit_length())


def _pad(a: np.ndarray, shape: tuple) -> np.ndarray:
    out = np.zeros(shape)
    out[tuple(slice(0, k) for k in a.shape)] = a
    return out


@jit
def _gram_padded(kernel, A, B):
    return kernel(A, B)


def gram(kernel, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """K(A, B) (rows of A, rows of B) as a float64 NumPy array whatever JAX's ``jax_enable_x64``.

    Shapes are padded to powers of two so that growing arrays compile few shapes.

    Example:
        >>> from jaxmtl.kernels import Gaussian
        >>> gram(Gaussian(1.0), np.zeros((1, 2)), np.zeros((3, 2))).dtype
        dtype('float64')
    """
    A, B = np.asarray(A, np.float64), np.asarray(B, np.float64)
    ra, rb = A.shape[0], B.shape[0]
    if ra == 0 or rb == 0:
        return np.zeros((ra, rb))
    with jax.enable_x64(True):
        out = _gram_padded(kernel, _pad_rows(A), _pad_rows(B))
        return np.asarray(out, np.float64)[:ra, :rb]


def _pad_rows(A: np.ndarray) -> np.ndarray:
    """A with rows equal to its mean appended up to a power of two rows (at least 4): the mean,
    on which the kernels centre their distances, is that of the real rows."""
    extra = _padded(A.shape[0]) - A.shape[0]
    return np.concatenate([A, np.broadcast_to(A.mean(axis=0), (extra, A.shape[1]))]) if extra else A


def _refuse(what: str, fix: str):
    raise NonFiniteError(f"send refused, nothing changed: {what}; {fix}.")


def _check_part(name: str, values: np.ndarray, fix: str) -> None:
    """The transaction's check of one new part of the state: finite and ≤ STATE_LIMIT."""
    if not np.all(np.isfinite(values)):
        _refuse(f"it would make {name} non-finite (float64)", fix)
    big = float(np.max(np.abs(values), initial=0.0))
    if big > STATE_LIMIT:
        _refuse(f"it would take {name} to magnitude {big:.3g}, beyond the {STATE_LIMIT:.0e} that keeps "
                "predictions finite in float64", fix)


@dataclass
class Database:
    """The distinct-input part of the state (host float64, capacity-padded): x̌, G, B, a, their
    count n and the ``find`` index; ``capacity`` is the arrays' initial capacity."""

    kernel: object
    alpha: float
    lam: float
    X: np.ndarray | None = None
    G: np.ndarray | None = None
    B: np.ndarray | None = None
    a: np.ndarray = field(default_factory=lambda: np.zeros(2))
    n: int = 0
    index: dict = field(default_factory=dict)
    capacity: int = 16

    @property
    def cap(self) -> int | None:
        """Current capacity of the arrays (None before the first input)."""
        return None if self.X is None else self.X.shape[0]

    def find(self, x: np.ndarray) -> int:
        """Algorithm 5 line 1: the position of x in x̌, or n when x is new."""
        return self.index.get(key_of(x), self.n)

    def _blocks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The arrays X, G, B (allocated together by the first input)."""
        if self.X is None or self.G is None or self.B is None:
            raise RuntimeError("the database holds no input yet")
        return self.X, self.G, self.B

    def _reserve(self, p: int) -> None:
        """Room for one more input (first allocation, or capacity doubled; padding zero)."""
        if self.X is None:
            cap = self.capacity
            self.X, self.G, self.B = np.zeros((cap, p)), np.zeros((cap, cap)), np.zeros((cap, 2))
        elif self.n == self.cap:
            cap, (X, G, B) = 2 * self.n, self._blocks()
            self.X, self.G, self.B = _pad(X, (cap, p)), _pad(G, (cap, cap)), _pad(B, (cap, 2))

    def task_inputs(self, h, x: np.ndarray) -> np.ndarray:
        """The inputs x̌(h) followed by x: (len(h) + 1, p)."""
        return np.vstack([self._blocks()[0][np.asarray(h, np.int64)], x[None]]) if len(h) else x[None]

    def copy(self) -> "Database":
        """An independent copy (a client's download, a passive client's local state)."""
        c = Database(self.kernel, self.alpha, self.lam, capacity=self.capacity)
        if self.X is not None:
            c.X, c.G, c.B = (b.copy() for b in self._blocks())
        c.a, c.n, c.index = self.a.copy(), self.n, dict(self.index)
        return c

    @classmethod
    def restore(cls, kernel, alpha: float, lam: float, arrays: dict, cap: int) -> "Database":
        """A database from the first-n blocks of its arrays X, G, B, a (a saved state, a download)."""
        X = np.asarray(arrays["X"], dtype=np.float64)
        n, p = X.shape
        db = cls(kernel, alpha, lam, capacity=max(int(cap), n, 1))
        db._reserve(p)
        dX, dG, dB = db._blocks()
        dX[:n], dG[:n, :n], dB[:n] = X, arrays["G"], arrays["B"]
        db.a = np.array(arrays["a"], dtype=np.float64)
        db.n, db.index = n, {key_of(x): i for i, x in enumerate(X)}
        return db

    def arrays(self) -> dict:
        """The first-n blocks as NumPy copies: X (n, p), G (n, n), B (n, 2), a (2,); {} when empty."""
        n = self.n
        if self.X is None:
            return {}
        X, G, B = self._blocks()
        return {"X": X[:n].copy(), "G": G[:n, :n].copy(), "B": B[:n].copy(), "a": self.a.copy()}


@dataclass
class TaskRecord:
    """Undisclosed data of one task: hʲ (indices into x̌), yʲ (with a column of ones), wʲ, Rʲ."""

    kernel: object
    h: list = field(default_factory=list)
    Y: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    w: np.ndarray = field(default_factory=lambda: np.zeros(0))
    R: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    pos: dict = field(default_factory=dict)


def _new_to_task(db: Database, rec: TaskRecord, x: np.ndarray, y: float, w: float):
    """Cases 2–3 (Lemma 10): the task's new (R, Y, w) with x appended, nothing written."""
    alpha, lam = db.alpha, db.lam
    kt = (1 - alpha) * gram(rec.kernel, x[None], db.task_inputs(rec.h, x))[0]
    u = np.append(rec.R @ kt[:-1], -1.0)
    schur = lam * w - u @ kt                 # λw + (1 − α)K̃(x, x) − kᵀRk ≥ λw in exact arithmetic
    if not np.isfinite(schur):
        _refuse(f"the task kernel at x is non-finite (largest |x| = {float(np.max(np.abs(x))):.3g})",
                "rescale the inputs")
    if not schur >= 0.5 * lam * w:
        raise ParameterError(
            f"send refused, nothing changed: the task's system (1 − α)K̃ʲ + λWʲ is too ill-conditioned in "
            f"float64 to add this input (Schur complement {schur:.3g} < λw/2 = {0.5 * lam * w:.3g}); "
            "increase lam or the weight w.")
    R = _pad(rec.R, (len(u), len(u))) + np.outer(u, u) / schur
    return R, np.vstack([rec.Y, [y, 1.0]]), np.append(rec.w, w)


def _repeat_in_task(db: Database, rec: TaskRecord, p: int, y: float, w: float):
    """Case 1 (Algorithm 6, Lemma 9): the task's new (R, Y, w) with example p merged, nothing written."""
    Y, ws = rec.Y.copy(), rec.w.copy()
    wp = ws[p] * w / (ws[p] + w)
    Y[p] = Y[p] + wp * (np.array([y, 1.0]) - Y[p]) / w
    dw = wp**2 / (wp - w)
    gamma = -1.0 / (1.0 / (db.lam * dw) + rec.R[p, p])
    ws[p] = wp
    return rec.R + gamma * np.outer(rec.R[:, p], rec.R[:, p]), Y, ws


class Plan(NamedTuple):
    """One checked send, not yet written: its slot s in x̌, its position p in the task (None: new
    to the task), the task's new hʲ, Rʲ, [yʲ, 1], wʲ, and the changes of G, B and a's new value."""

    x: np.ndarray
    s: int
    p: int | None
    h: np.ndarray
    R: np.ndarray
    Y: np.ndarray
    w: np.ndarray
    dR: np.ndarray
    dB: np.ndarray
    a: np.ndarray


def receive(db: Database, rec: TaskRecord, x: np.ndarray, y: float, w: float) -> None:
    """Algorithm 5: update ``db`` and ``rec`` with the triple (x, y, w) of the record's task.

    A transaction: inputs validated by the caller; every new part of the state is computed and
    checked first (NonFiniteError / ParameterError), and nothing is written unless all pass
    (:func:`plan` then :func:`commit`).
    """
    commit(db, rec, plan(db, rec, x, y, w))


def plan(db: Database, rec: TaskRecord, x: np.ndarray, y: float, w: float) -> Plan:
    """Algorithm 5's new parts of the state for (x, y, w), checked (finite, ≤ STATE_LIMIT) and not
    written; raises NonFiniteError / ParameterError when the send must be refused."""
    with np.errstate(over="ignore", invalid="ignore"):           # overflow is refused below, by name
        return _plan(db, rec, x, y, w)


def _plan(db: Database, rec: TaskRecord, x: np.ndarray, y: float, w: float) -> Plan:
    big = float(np.max(np.abs(x)))
    if big > INPUT_LIMIT:
        raise ParameterError(f"send refused, nothing changed: x has an entry of magnitude {big:.3g}, whose square "
                             f"overflows float64 in the kernel's distances (limit {INPUT_LIMIT:.0e}); rescale "
                             "the inputs.")
    s = db.find(x)
    p = rec.pos.get(s)
    if p is None:
        R, Y, ws = _new_to_task(db, rec, x, y, w)
        h = rec.h + [s]
    else:
        R, Y, ws = _repeat_in_task(db, rec, p, y, w)
        h = rec.h
    hh = np.asarray(h, np.int64)
    old = hh < db.n                                  # Case 3: the new input's row of G and B starts at 0
    G_old, B_old = np.zeros(R.shape), np.zeros(Y.shape)
    if old.any():
        _, G, B = db._blocks()
        G_old[np.ix_(old, old)], B_old[old] = G[np.ix_(hh[old], hh[old])], B[hh[old]]
    dR = R - _pad(rec.R, R.shape)
    dB = R @ Y - _pad(rec.R @ rec.Y, Y.shape)
    new_a = db.a + dB.sum(axis=0)
    fix = "rescale the outputs (or inputs), or increase lam or the weight w"
    for name, part in (("the task's inverse Rʲ", R), ("Rʲ[yʲ, 1]", R @ Y), ("G = Σⱼ Rʲ", G_old + dR),
                       ("b = Σⱼ Rʲ[yʲ, 1]", B_old + dB), ("a = Σⱼ 1ᵀRʲ[yʲ, 1]", new_a)):
        _check_part(name, part, fix)
    return Plan(x, s, p, hh, R, Y, ws, dR, dB, new_a)


def commit(db: Database, rec: TaskRecord, plan: Plan) -> None:
    """Write a :func:`plan` made on this very state of ``db`` and ``rec`` (nothing here can fail)."""
    x, s, hh = plan.x, plan.s, plan.h
    if s == db.n:                                    # Case 3 (Algorithm 8): x̌ ← (x̌, x)
        db._reserve(x.shape[0])
        db._blocks()[0][s] = x
        db.index[key_of(x)] = s
        db.n += 1
    _, G, B = db._blocks()
    G[np.ix_(hh, hh)] += plan.dR
    B[hh] += plan.dB
    db.a = plan.a
    if plan.p is None:
        rec.h.append(s)
        rec.pos[s] = len(rec.h) - 1
    rec.R, rec.Y, rec.w = plan.R, plan.Y, plan.w


class Solution(NamedTuple):
    """The shared part of Algorithm 9 for one state: x̌ (n, p), č (n, 2), Ǩč (n, 2) and
    s = 1ᵀS[y, 1] = a − α y̌₁ᵀ Ǩč (2,), whose ratio s₀/s₁ is the unpenalized bias."""

    X: np.ndarray
    coef: np.ndarray
    Kcoef: np.ndarray
    s: np.ndarray


def solve_shared(db: Database) -> Solution:
    """č solving (I + α G Ǩ) č = B (n, 2) with Ǩ = K̄(x̌, x̌), Ǩč and s, for ``db``'s state; float64, O(n³).

    Computed as č = L_G M⁻¹ L_G⁻¹ B, M = I + α L_Gᵀ Ǩ L_G (eigenvalues ≥ 1), G = L_G L_Gᵀ.
    """
    n, alpha = db.n, db.alpha
    arr = db.arrays() or {"X": np.zeros((0, 0)), "a": db.a}
    X, a = arr["X"], arr["a"]
    if n == 0:
        return Solution(X, np.zeros((0, 2)), np.zeros((0, 2)), np.array(a, np.float64))
    B = arr["B"]
    K = gram(db.kernel, X, X)
    K = 0.5 * (K + K.T)
    try:
        LG = np.linalg.cholesky(arr["G"])
    except np.linalg.LinAlgError:
        raise NonFiniteError("G = Σⱼ Rʲ is not positive definite in float64 (weights λw spread over too many "
                             "orders of magnitude); rescale the weights.") from None
    # SciPy's linalg (0.1 s to import) loads with the first solve, not with the estimators
    from scipy.linalg import cho_factor, cho_solve, solve_triangular

    M = np.eye(n) + alpha * (LG.T @ K @ LG)
    t = cho_solve(cho_factor(0.5 * (M + M.T), lower=True), solve_triangular(LG, B, lower=True))
    coef = LG @ t
    Kcoef = K @ coef
    sol = Solution(X, coef, Kcoef, a - alpha * (B[:, 1] @ Kcoef))
    if not all(np.all(np.isfinite(v)) for v in sol[1:]):
        raise NonFiniteError("the server's solution č is non-finite in float64 (the state's magnitudes "
                             f"reach {float(np.max(np.abs(B))):.3g}); rescale the outputs.")
    return sol


def estimate(kernel, task_kernel, alpha: float, sol: Solution, rec: "TaskRecord | None", fit_intercept: bool,
             Xq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ḡ(Xq) with the bias, g̃ⱼ(Xq)), each (q,), (5.3) from the shared solution and the client's
    own record (None or empty: g̃ = 0): Algorithm 9 line 15, cʲ = Rʲ([yʲ, 1] − α(Ǩč)(hʲ))."""
    b = sol.s[0] / sol.s[1] if fit_intercept else 0.0
    g_bar = alpha * gram(kernel, Xq, sol.X) @ (sol.coef[:, 0] - b * sol.coef[:, 1]) + b
    g_tilde = np.zeros(Xq.shape[0])
    if rec is not None and len(rec.h):
        h = np.asarray(rec.h, np.int64)
        cj = rec.R @ (rec.Y - alpha * sol.Kcoef[h])
        g_tilde = (1 - alpha) * gram(task_kernel, Xq, sol.X[h]) @ (cj[:, 0] - b * cj[:, 1])
    if not (np.all(np.isfinite(g_bar)) and np.all(np.isfinite(g_tilde))):
        raise NonFiniteError("the prediction is non-finite in float64; rescale the outputs or the query inputs.")
    return g_bar, g_tilde
