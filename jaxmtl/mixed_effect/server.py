r"""Client-server online mixed-effect multi-task learning with private data ([Din11] §5.3).

One :class:`Server` collects examples (xᵢ, yᵢ, wᵢ) one at a time from clients — one client per
task — and keeps, after every example, the sums of Algorithm 4 lines 1–6 (Algorithm 5 and its three
cases, :mod:`.online`; float64 on the host whatever JAX's ``jax_enable_x64``). Its state is split as
the thesis prescribes:

=====================  ======================================================================
undisclosed            for each task j: hʲ (which distinct inputs it used), yʲ, wʲ (its
                       outputs and weights, repeated inputs merged) and Rʲ (its (ℓⱼ, ℓⱼ) inverse)
database               x̌ (n, p) the distinct inputs of all tasks, b (n,) = Σⱼ I(:, hʲ)Rʲyʲ,
                       G (n, n) = Σⱼ I(:, hʲ)RʲI(hʲ, :); with ``fit_intercept`` also
                       b₁ (n,) = Σⱼ I(:, hʲ)Rʲ1 and a (2,) = Σⱼ 1ᵀRʲ[yʲ, 1]
=====================  ======================================================================

(the thesis discloses y̌ = Lᵀb and H = (D⁻¹ + αLᵀGL)⁻¹, Ǩ = LDLᵀ: the same information given x̌).

Who sees what is set by ``disclosure`` (threat model: ``docs/privacy.md``):

* ``'database'`` (the thesis's design): :meth:`Server.disclosed` hands any client the database. It
  does not say how many tasks there are nor which task used which input, but G's support and
  blocks do: a client that removes its own Rʲ from G and b solves, exactly, for the inputs,
  weights and outputs of every other task whose inputs no third task shares (tested); among tasks
  with the same inputs and weights only the sum of their outputs is determined.
* ``'predictions'`` (the default): :meth:`Server.disclosed` refuses; a :class:`Client` receives only its own
  task's (ḡ, g̃ⱼ) at the points it asks for, computed on the server (Algorithm 9 run there), and a
  :class:`PassiveClient`'s data are used on the server for its prediction without being stored.
  Everything a client receives is then a function of x̌, č (the common function ḡ) and its own data:
  other clients' task partition, weights, individual-kernel coupling and outputs are hidden up to
  that (two such worlds give the same view to round-off, tested) — but ḡ itself is revealed, and
  with it the outputs of a lone other client whose inputs and weights the attacker knows (tested).

Every estimate equals the centralized solution of (5.4) (:mod:`.centralized`) on the examples
received so far, in any order of arrival. A send is a transaction: it is validated and checked
against the state it would produce (finite, entries below 1e300), and a refused send leaves the
state exactly as it was. :meth:`Server.save` / :meth:`Server.load` store the whole state in a
portable ``.npz`` (no pickle; :mod:`.state`), and a stream resumed from a saved state ends
bit-identical to an uninterrupted one.

Concurrent callers (threads, or asyncio through ``asyncio.to_thread``) are serialised: each send
is one transaction under the server's lock, and a prediction reads the state between two sends,
never during one (its O(n³) shared solve is made under the lock, once per state; the evaluation
at the query points runs outside it). :meth:`Server.open` makes a server durable: every accepted
send is appended to a checksummed log and fsync'd before it is acknowledged, and a restarted
server replays the log after its last snapshot, bit-identical (:mod:`.journal`).

A client here is an object of this process; :mod:`jaxmtl.mixed_effect.serve` puts the server on
the network (an optional extra): each client authenticated by a token the operator issued for its
task.

[Din11] F. Dinuzzo, *Learning functions with kernel methods*, PhD thesis, Università di Pavia, 2011.

Example:
    >>> import numpy as np
    >>> from jaxmtl.kernels import Gaussian
    >>> server = Server(alpha=0.5, lam=0.1, kernel=Gaussian(1.0), disclosure="database")
    >>> alice, bob = server.client("alice"), server.client("bob")
    >>> alice.send([0.0], 1.0); bob.send([1.0], 2.0); alice.send([1.0], 1.5)
    >>> alice.predict(np.array([[0.5]])).shape
    (1,)
    >>> sorted(server.disclosed()._fields)
    ['G', 'X', 'a', 'alpha', 'b', 'b_ones', 'fit_intercept', 'kernel', 'lam']
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import os
import threading

import jax
import numpy as np
import numpy.typing as npt

from .._checks import as_float_array, check_bool, check_inputs
from .. import errors
from ..errors import ParameterError, ShapeError, TaskError
from ..kernels.scalar import Kernel
from .centralized import check_weights
from .kernel import check_alpha, check_kernel, check_lam, check_scaled_weight, resolve_task_kernel
from .online import Database, Solution, TaskRecord, commit, estimate, plan, receive, solve_shared
from ..products import full_precision

__all__ = ["Server", "Client", "PassiveClient", "DisclosedDatabase"]


class DisclosedDatabase(NamedTuple):
    """What any client may download from a server with ``disclosure='database'`` (copies): x̌
    (n, p), b (n,) = Σⱼ I(:, hʲ)Rʲyʲ, G (n, n) = Σⱼ I(:, hʲ)RʲI(hʲ, :); b₁ (n,) = Σⱼ I(:, hʲ)Rʲ1 and
    a (2,) when the server fits a bias (else None); and the public settings α, λ, K̄, fit_intercept.
    Given x̌ this is the thesis's (y̌, H) = (Lᵀb, (D⁻¹ + αLᵀGL)⁻¹) in another basis."""

    X: np.ndarray
    b: np.ndarray
    G: np.ndarray
    b_ones: np.ndarray | None
    a: np.ndarray | None
    alpha: float
    lam: float
    kernel: Kernel
    fit_intercept: bool


DISCLOSURES = ("database", "predictions")


def check_task_label(task: Any):
    """A task id usable as a key and storable portably: int or str (NumPy scalars converted)."""
    if isinstance(task, np.generic):
        task = task.item()
    if isinstance(task, bool) or not isinstance(task, (int, str)):
        raise TaskError(f"a task id must be an int or a str; received {task!r} of type {type(task).__name__}.")
    return task


class Server:
    """The server of [Din11] §5.3: receives examples, keeps Algorithm 4's state online.

    Args:
      alpha: α in [0, 1] of the kernel (5.2) (0: separate tasks, 1: one pooled task).
      lam: λ of (5.4), unnormalised, in [1e-100, 1e100].
      kernel: K̄, the common kernel (positive semidefinite; the state never divides by its
        pivots, so close inputs or a linear K̄ with more inputs than features are fine).
      task_kernel: K̃ʲ: None (= ``kernel``), one kernel for every task, or a mapping task → kernel.
      fit_intercept: add an unpenalized bias b common to all tasks (default False: (5.4) exactly).
      capacity: distinct inputs the state's arrays hold before they double.
      disclosure: what a client receives (see the threat model in ``docs/privacy.md``):
        ``'predictions'`` (default) — nothing but predictions leaves the server: :meth:`disclosed`
        refuses, a client receives only its own task's (ḡ, g̃ⱼ) at the points it asks for, and a
        passive client's data are used on the server without being stored; ``'database'`` (the
        thesis's design) — :meth:`disclosed` hands anyone x̌, b, G (and b₁, a), from which the
        inputs, weights and outputs of a task whose inputs no third task shares can be solved for
        exactly, and a passive client's data never leave it.

    Attributes:
      n_inputs: n, the number of distinct inputs received; n_tasks: tasks that sent data;
      n_received: accepted examples.
    """

    def __init__(self, alpha: float, lam: float, kernel: Kernel, task_kernel: Any = None,
                 fit_intercept: bool = False, capacity: int = 16, disclosure: str = "predictions") -> None:
        with jax.enable_x64(True):                                  # λ is used in float64 (the state's precision)
            self._alpha, self._lam = check_alpha(alpha), check_lam(lam)
        check_kernel(kernel, "kernel")
        self._lookup, self._mapping = resolve_task_kernel(task_kernel, kernel)
        self._kernel, self._task_kernel = kernel, task_kernel
        self._fit_intercept = check_bool(fit_intercept, "fit_intercept")
        if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 1:
            raise ParameterError(f"capacity must be a positive int; received {capacity!r}.")
        if disclosure not in DISCLOSURES:
            raise ParameterError(f"disclosure must be one of {DISCLOSURES}; received {disclosure!r}.")
        self._disclosure = disclosure
        self._db = Database(kernel, self._alpha, self._lam, capacity=int(capacity))
        self._solution: tuple[int, Solution | None] = (-1, None)  # (version, Solution) cache of the shared solve
        self._records: dict = {}
        self._n_features: int | None = None
        self.n_received = 0
        self._version = 0
        self._lock = threading.RLock()
        self._journal: Any = None
        self._directory: str | None = None

    alpha = property(lambda self: self._alpha)
    lam = property(lambda self: self._lam)
    kernel = property(lambda self: self._kernel)
    task_kernel = property(lambda self: self._task_kernel)
    fit_intercept = property(lambda self: self._fit_intercept)
    disclosure = property(lambda self: self._disclosure)
    n_inputs = property(lambda self: self._db.n)
    n_tasks = property(lambda self: len(self._records))

    @full_precision
    def client(self, task: int | str) -> "Client":
        """The (active) client of ``task``: it sends its examples and predicts."""
        task = check_task_label(task)
        self._lookup(task)
        return Client(self, task)

    @full_precision
    def passive_client(self, X: npt.ArrayLike, y: npt.ArrayLike, w: npt.ArrayLike | None = None,
                       task: int | str | None = None) -> "PassiveClient":
        """A client that keeps its data (X (ℓ, p), y (ℓ,), w (ℓ,)) and only downloads.

        ``task`` names its individual kernel when ``task_kernel`` is a mapping; it must not be a
        task that already sent data to this server (its examples would count twice).
        """
        if task is not None:
            task = check_task_label(task)
            if task in self._records:
                raise TaskError(f"task {task!r} has sent data to this server; a passive client of it would "
                                "count its examples twice. Use server.client(task) instead.")
        elif self._mapping is not None:
            raise TaskError("task_kernel is a mapping task -> kernel: pass task= to passive_client to "
                            "choose the individual kernel.")
        with jax.enable_x64(True):                                  # float64 inputs are kept as they are
            X = check_inputs(X, "X", allow_1d=False)
            y = as_float_array(y, "y", ndim=1)
            if y.shape[0] != X.shape[0]:
                raise ShapeError(f"y must have one entry per row of X: expected {X.shape[0]}, received {y.shape}.")
            w = np.ones(len(y)) if w is None else check_weights(w, len(y), "w")
        for v in w:
            check_scaled_weight(self._lam, float(v))
        with self._lock:
            self._check_features(X.shape[1], "X")
        return PassiveClient(self, task, X.astype(np.float64), y.astype(np.float64), w, self._lookup(task))

    @full_precision
    def disclosed(self) -> DisclosedDatabase:
        """The disclosed database (copies of x̌, b, G, and b₁, a with a bias).

        Raises ParameterError when the server was created with ``disclosure='predictions'``.
        """
        if self._disclosure != "database":
            raise ParameterError("this server was created with disclosure='predictions': it discloses no "
                                 "database, only each client's own predictions (client.predict).")
        with self._lock:
            return self._database()

    # ------------------------------------------------------------------ internals
    def _database(self) -> DisclosedDatabase:
        arr = self._db.arrays()
        if not arr:
            p = self._n_features or 0
            arr = {"X": np.zeros((0, p)), "G": np.zeros((0, 0)), "B": np.zeros((0, 2)), "a": np.zeros(2)}
        fi = self._fit_intercept
        return DisclosedDatabase(arr["X"], arr["B"][:, 0].copy(), arr["G"], arr["B"][:, 1].copy() if fi else None,
                                 arr["a"] if fi else None, self._alpha, self._lam, self._kernel, fi)

    def _shared_solution(self) -> Solution:
        """The shared solve of Algorithm 9 for the current state (cached until the next send)."""
        version, solution = self._solution
        if solution is None or version != self._version:
            solution = solve_shared(self._db)
            self._solution = (self._version, solution)
        return solution

    def _check_features(self, p: int, name: str) -> None:
        if self._n_features is not None and p != self._n_features:
            raise ShapeError(f"{name} has {p} feature(s); this server's inputs have {self._n_features}.")

    def _receive(self, task, x, y, w) -> int:
        """Validate one triple, then run Algorithm 5 (a transaction: on any error nothing has changed);
        returns the send's number (``n_received`` before it)."""
        with jax.enable_x64(True):                                  # float64 inputs are kept as they are
            x, y, w = self._validate(x, y, w)
        with self._lock:
            return self._transact(task, x, y, w, log=True)

    def _validate(self, x, y, w) -> tuple[np.ndarray, float, float]:
        x = as_float_array(x, "x", ndim=(1, 2))
        if x.ndim == 2 and x.shape[0] != 1:
            raise ShapeError(f"x must be one input of shape (p,) or (1, p); received shape {x.shape}.")
        x = x.reshape(-1).astype(np.float64)
        y = as_float_array(y, "y", ndim=(0, 1))
        if y.size != 1:
            raise ShapeError(f"y must be one number; received shape {y.shape}.")
        w = check_weights(w, 1, "w")[0]
        check_scaled_weight(self._lam, w)
        return x, float(y.reshape(())), float(w)

    def _transact(self, task, x: np.ndarray, y: float, w: float, log: bool) -> int:
        """Algorithm 5 on validated values, under the lock: plan, log (when durable), commit."""
        self._check_features(x.shape[0], "x")
        rec = self._records.get(task)
        new = rec is None
        if rec is None:
            rec = TaskRecord(self._lookup(task))
        change = plan(self._db, rec, x, y, w)
        seq = self.n_received
        if log and self._journal is not None:
            from .journal import LogRecord

            self._journal.append(LogRecord(seq, task, x, y, w))
        commit(self._db, rec, change)
        if new:
            self._records[task] = rec
        self._n_features = x.shape[0]
        self.n_received += 1
        self._version += 1
        return seq

    def _apply_logged(self, rec) -> None:
        """Replay one record of the send log (:mod:`.journal`), exactly as the send was made."""
        with jax.enable_x64(True), self._lock:
            self._transact(check_task_label(rec.task), rec.x, rec.y, rec.w, log=False)

    def _attach_journal(self, journal) -> None:
        self._journal = journal

    @full_precision
    def save(self, path: str | os.PathLike[str]) -> None:
        """Save the whole state (disclosed and undisclosed) to a portable ``.npz``; see :mod:`.state`."""
        from .state import save_server

        with self._lock:
            save_server(self, path)

    @classmethod
    @full_precision
    def open(cls, directory: str | os.PathLike[str], template: "Server | None" = None, *, sync_every: int = 1,
             on_corrupt: str = "refuse") -> "Server":
        """A durable server kept in ``directory`` (a snapshot ``server.npz`` and a log ``sends.log``).

        The stored state with every logged send replayed, or — when ``directory`` holds none —
        ``template``'s (snapshotted first). From then on every accepted send is logged before
        ``send`` returns, fsync'd every ``sync_every`` sends (1: a power loss drops nothing
        acknowledged; k: at most k − 1); a killed process restarts, through ``open``, in exactly
        the state of its logged sends. A torn log tail is cut off with a LogTruncatedWarning; a
        corrupted record followed by more data is refused (PersistenceError) unless
        ``on_corrupt='truncate'``. See :mod:`.journal`.
        """
        from .journal import open_durable

        server = open_durable(directory, template, sync_every, on_corrupt)
        server._directory = os.fspath(directory)
        return server

    def checkpoint(self) -> None:
        """Compact a durable server's log: a new snapshot, then an empty log (each replaced atomically)."""
        from .journal import checkpoint

        with self._lock:
            if self._directory is None:
                raise ParameterError("checkpoint needs a durable server (Server.open(directory, ...)).")
            checkpoint(self, self._directory)

    def close(self) -> None:
        """fsync and close a durable server's log (nothing for an in-memory server); sends then raise."""
        with self._lock:
            if self._journal is not None:
                self._journal.close()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    @full_precision
    def load(cls, path: str | os.PathLike[str]) -> "Server":
        """A server restored from :meth:`save`, bit-identical to the saved one."""
        from .state import load_server

        return load_server(path)


class _Predicting:
    """Input checks and ``predict`` shared by active and passive clients."""

    _server: Server
    predict_parts: Callable[[Any], tuple[np.ndarray, np.ndarray]]  # each client's own

    def _query(self, X) -> np.ndarray:
        with jax.enable_x64(True):
            X = check_inputs(X, "X", allow_1d=False)
        self._server._check_features(X.shape[1], "X")
        return X.astype(np.float64)

    def predict(self, X: npt.ArrayLike) -> np.ndarray:
        """(q,) estimates ĝ_j(x) = ḡ(x) + g̃_j(x) (5.3) at X (q, p)."""
        g_bar, g_tilde = self.predict_parts(X)
        return g_bar + g_tilde


class Client(_Predicting):
    """An active client (task j): ``send`` examples, ``predict`` with Algorithm 9."""

    def __init__(self, server: Server, task: int | str) -> None:
        self._server, self._task = server, task

    task = property(lambda self: self._task)

    @full_precision
    def send(self, x: npt.ArrayLike, y: float, w: float = 1.0) -> None:
        """Send one example (x (p,), y, w > 0) to the server (Algorithm 5); on a durable server it is
        in the log when this returns."""
        self._server._receive(self._task, x, y, w)

    @full_precision
    def predict_parts(self, X: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(ḡ(X) (with the bias), g̃_j(X)), each (q,): the average task and this task's shift (5.3)."""
        s = self._server
        with s._lock:                               # a consistent state: between two sends
            Xq = self._query(X)
            if s.n_inputs == 0:
                raise errors.NotFittedError("the server has received no examples yet: nothing to predict from.")
            own = s._records.get(self._task)
            if own is not None:                     # R, Y, w are replaced by a send, h is appended to
                own = TaskRecord(own.kernel, list(own.h), own.Y, own.w, own.R)
            solution = s._shared_solution()
        return estimate(s.kernel, s._lookup(self._task), s.alpha, solution, own, s.fit_intercept, Xq)


class PassiveClient(_Predicting):
    """A client that never sends: Algorithm 9 with the 'Passive' branch (lines 8–11)."""

    def __init__(self, server: Server, task: int | str | None, X: np.ndarray, y: np.ndarray, w: np.ndarray,
                 task_kernel: Kernel) -> None:
        self._server, self._task = server, task
        self._X, self._y, self._w, self._task_kernel = X, y, w, task_kernel

    task = property(lambda self: self._task)

    @full_precision
    def predict_parts(self, X: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(ḡ, g̃_j) at X, each (q,), as if this client's data had been sent, without sending it."""
        s = self._server
        with s._lock:
            Xq = self._query(X)
            local = s._db.copy()                                    # lines 1–7: the downloaded database
        rec = TaskRecord(self._task_kernel)
        for x, y, w in zip(self._X, self._y, self._w):              # lines 8–11: Algorithm 5, locally
            receive(local, rec, x, float(y), float(w))
        return estimate(s.kernel, self._task_kernel, s.alpha, solve_shared(local), rec, s.fit_intercept, Xq)
