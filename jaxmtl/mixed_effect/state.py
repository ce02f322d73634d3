r"""Saving and restoring a :class:`~jaxmtl.mixed_effect.Server`: one portable ``.npz``, no pickle.

The file is written by the model-file writer of :mod:`jaxmtl.io.persistence` (ZIP of ``.npy``
entries read with ``allow_pickle=False``, JSON metadata, SHA-256 of every byte, atomic rename),
with ``format = 'jaxmtl-mixed-effect-server'``. It holds

* metadata: α, λ, ``fit_intercept``, ``disclosure``, the kernels as ``spec()`` dicts (a
  ``task_kernel`` mapping as a list of [task, spec] pairs), the arrays' capacity, the counters,
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

import numpy as np

from ..errors import PersistenceError
from ..io.persistence import _arrays_digest, _kernel_registry, _read, _rebuild, _write_archive
from .kernel import ExponentialDot
from .online import Database, TaskRecord

__all__ = ["SERVER_FORMAT", "SERVER_FORMAT_VERSION", "save_server", "load_server"]

SERVER_FORMAT = "jaxmtl-mixed-effect-server"
SERVER_FORMAT_VERSION = 2


def _registry() -> dict:
    return {**_kernel_registry(), "ExponentialDot": ExponentialDot}


def _spec(kernel) -> dict:
    if _registry().get(type(kernel).__name__) is not type(kernel):
        raise PersistenceError(f"cannot save the kernel {kernel!r}: not one of jaxmtl's kernels {sorted(_registry())}.")
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in kernel.spec().items()}


def save_server(server, path) -> None:
    """Write ``server``'s whole state to ``path`` (atomically)."""
    from .. import __version__

    tk = server.task_kernel
    task_kernel = (None if tk is None else [[t, _spec(k)] for t, k in tk.items()] if isinstance(tk, dict)
                   else _spec(tk))
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
        "format": SERVER_FORMAT, "format_version": SERVER_FORMAT_VERSION, "library_version": __version__,
        "alpha": server.alpha, "lam": server.lam, "fit_intercept": server.fit_intercept,
        "disclosure": server.disclosure,
        "kernel": _spec(server.kernel), "task_kernel": task_kernel, "tasks": tasks,
        "n": db.n, "capacity": db.cap,
        "n_features": server._n_features, "n_received": server.n_received,
        "arrays": {k: {"dtype": v.dtype.str, "shape": list(v.shape)} for k, v in arrays.items()},
        "arrays_sha256": _arrays_digest(arrays),
    }
    _write_archive(meta, arrays, path)


def load_server(path):
    """Restore a server saved by :func:`save_server`; PersistenceError on any problem."""
    from .server import Server

    meta, arrays = _read(path)
    if meta.get("format") != SERVER_FORMAT:
        raise PersistenceError(f"{path!r} holds format {meta.get('format')!r}, not {SERVER_FORMAT!r}.")
    if meta.get("format_version") != SERVER_FORMAT_VERSION:
        raise PersistenceError(f"unsupported server file version {meta.get('format_version')!r}: this library reads "
                               f"version {SERVER_FORMAT_VERSION} (version 1 held the (L, D, H) form of the state, "
                               "which is not converted).")
    if _arrays_digest(arrays) != meta.get("arrays_sha256"):
        raise PersistenceError("the arrays' SHA-256 does not match the one recorded in the metadata.")
    try:
        reg = _registry()
        kernel = _rebuild(meta["kernel"], "kernel", reg, "kernel")
        tk = meta["task_kernel"]
        task_kernel = (None if tk is None else {t: _rebuild(s, "kernel", reg, "task_kernel") for t, s in tk}
                       if isinstance(tk, list) else _rebuild(tk, "kernel", reg, "task_kernel"))
        server = Server(meta["alpha"], meta["lam"], kernel, task_kernel, meta["fit_intercept"],
                        disclosure=meta["disclosure"])
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
        raise PersistenceError(f"{path!r} is not a complete server state: {type(exc).__name__}: {exc}") from None
    return server
