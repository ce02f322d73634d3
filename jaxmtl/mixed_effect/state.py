r"""Saving and restoring a :class:`~jaxmtl.mixed_effect.Server`: one portable ``.npz``, no pickle.

The server is registered with :mod:`jaxmtl.io.registry` as a class with its own format,
``format = 'jaxmtl-mixed-effect-server'`` (by :mod:`jaxmtl.mixed_effect`): :func:`server_state`
gives its state and :func:`restore_server` rebuilds it, and :mod:`jaxmtl.io.persistence` does the
file handling (ZIP of ``.npy`` entries read with ``allow_pickle=False``, JSON metadata, SHA-256 of
every byte, atomic rename). It holds

* metadata: α, λ, ``fit_intercept``, ``disclosure``, the kernels as ``spec()`` dicts (a
  ``task_kernel`` mapping as a list of [task, spec] pairs), the arrays' capacity (the initial one while empty), the counters,
  the task ids (int/str);
* arrays: the first-n blocks of x̌, G, [b, b₁], a (:mod:`.online`); the records of all tasks concatenated
  (``rec_len`` (m,), ``rec_h``, ``rec_Y`` (Σℓⱼ, 2), ``rec_w``, ``rec_R`` (Σℓⱼ²,)).

The restored arrays have the saved capacity and the canonical padding, so a stream continued
after :func:`load_server` performs exactly the same floating-point operations as an uninterrupted
one and ends in a bit-identical state.

Example:
    >>> import os, tempfile
    >>> from jaxmtl.kernels import Gaussian
    >>> from jaxmtl.mixed_effect import Server
    >>> s = Server(0.5, 0.1, Gaussian(1.0)); s.client(1).send([0.0], 1.0)
    >>> path = os.path.join(tempfile.mkdtemp(), "server.npz"); s.save(path)
    >>> Server.load(path).n_inputs
    1
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..errors import PersistenceError
from ..io import registry
from ..io.persistence import kernel_from_spec, kernel_spec, load, save
from .online import Database, TaskRecord

__all__ = ["SERVER_FORMAT", "SERVER_FORMAT_VERSION", "server_state", "restore_server", "save_server",
           "load_server"]

SERVER_FORMAT = "jaxmtl-mixed-effect-server"
SERVER_FORMAT_VERSION = 2


def server_state(server) -> tuple[dict, dict[str, np.ndarray]]:
    """(metadata, arrays) of ``server``'s whole state, for :func:`jaxmtl.save`: read under the server's
    lock, so a save made while other threads send holds the state between two sends."""
    with server._lock:
        return _state(server)


def _state(server) -> tuple[dict, dict[str, np.ndarray]]:
    tk = server.task_kernel
    task_kernel = (None if tk is None else [[t, kernel_spec(k)] for t, k in tk.items()] if isinstance(tk, dict)
                   else kernel_spec(tk))
    db = server._db
    arrays = {k: v for k, v in db.arrays().items()}
    tasks = list(server._records)
    recs = [server._records[t] for t in tasks]
    arrays.update({
        "rec_len": np.array([len(r.h) for r in recs], dtype=np.int64),
        "rec_h": np.array([s for r in recs for s in r.h], dtype=np.int64),
        "rec_Y": np.concatenate([r.Y for r in recs]) if recs else np.zeros((0, 2)),
        "rec_w": np.concatenate([r.w for r in recs]) if recs else np.zeros(0),
        "rec_R": np.concatenate([r.R.ravel() for r in recs]) if recs else np.zeros(0),
    })
    meta = {
        "alpha": server.alpha, "lam": server.lam, "fit_intercept": server.fit_intercept,
        "disclosure": server.disclosure,
        "kernel": kernel_spec(server.kernel), "task_kernel": task_kernel, "tasks": tasks,
        "n": db.n, "capacity": db.capacity if db.cap is None else db.cap,
        "n_features": server._n_features, "n_received": server.n_received,
    }
    return meta, arrays


def restore_server(server_cls: type, meta: dict, arrays: dict[str, np.ndarray]):
    """A ``server_cls`` instance in the state :func:`server_state` recorded; PersistenceError on any problem
    (a version-1 file, which held the (L, D, H) form of the state, is refused: it is not converted)."""
    if meta.get("format_version") == 1:
        raise PersistenceError("unsupported server file version 1: this library reads version "
                               f"{SERVER_FORMAT_VERSION} (version 1 held the (L, D, H) form of the state, "
                               "which is not converted).")
    try:
        kernel = kernel_from_spec(meta["kernel"], "kernel")
        tk = meta["task_kernel"]
        task_kernel = (None if tk is None else {t: kernel_from_spec(s, "task_kernel") for t, s in tk}
                       if isinstance(tk, list) else kernel_from_spec(tk, "task_kernel"))
        server = server_cls(meta["alpha"], meta["lam"], kernel, task_kernel, meta["fit_intercept"],
                            capacity=meta["capacity"] or 16, disclosure=meta["disclosure"])
        if meta["n"]:
            server._db = Database.restore(kernel, server.alpha, server.lam, arrays, meta["capacity"])
        ends = np.cumsum(arrays["rec_len"])
        r_ends = np.cumsum(arrays["rec_len"] ** 2)
        for i, task in enumerate(meta["tasks"]):
            lo, hi = ends[i] - arrays["rec_len"][i], ends[i]
            ell = int(hi - lo)
            h = arrays["rec_h"][lo:hi].tolist()
            R = arrays["rec_R"][r_ends[i] - ell * ell: r_ends[i]].reshape(ell, ell).copy()
            server._records[task] = TaskRecord(server._lookup(task), h, arrays["rec_Y"][lo:hi].copy(),
                                               arrays["rec_w"][lo:hi].copy(), R, {s: p for p, s in enumerate(h)})
        server._n_features = meta["n_features"]
        server.n_received = meta["n_received"]
    except PersistenceError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise PersistenceError(f"not a complete server state: {type(exc).__name__}: {exc}") from None
    return server


def save_server(server: Any, path: str | os.PathLike[str]) -> None:
    """Write ``server``'s whole state (a :class:`~jaxmtl.mixed_effect.Server`; typed ``Any`` because the server
    module imports this one) to ``path`` (atomically); the same as ``jaxmtl.save(server, path)``."""
    save(server, path)


def load_server(path: str | os.PathLike[str]) -> Any:
    """Restore a server saved by :func:`save_server`; PersistenceError on any problem, or if
    ``path`` holds something else than a server."""
    obj = load(path)
    fmt = registry.format_for(obj)
    if fmt is None or fmt.name != SERVER_FORMAT:
        raise PersistenceError(f"{path!r} holds a {type(obj).__name__}, not a {SERVER_FORMAT!r} file.")
    return obj
