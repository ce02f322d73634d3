r"""Durability of a :class:`~jaxmtl.mixed_effect.Server`: a snapshot plus an append-only log of sends.

A durable server lives in a directory holding

* ``server.npz`` — a snapshot of the whole state (:mod:`.state`, written atomically: temporary
  file, fsync, ``os.replace``, fsync of the directory);
* ``sends.log`` — every send accepted since that snapshot, in the order the server applied them.

The log is a 24-byte header (magic ``JXMTLOG1``, the snapshot's send count ``base`` as an
unsigned 64-bit integer, the CRC-32 of those 16 bytes, 4 padding bytes) followed by records, each

    length (u32) · CRC-32 of the length (u32) · CRC-32 of (length, payload) (u32) · payload

with payload = seq (u64), y (f64), w (f64), task kind (u8: 0 int, 1 str), task length (u32),
p (u32), the task as UTF-8 (an int in decimal), x (p little-endian f64). ``seq`` is the send's
number (``n_received`` before it), so record k of a log holds seq = base + k. The values logged
are the validated float64 ones, so replaying a record performs the same floating-point
operations as the original send and a restarted server is bit-identical to the one that
acknowledged it.

A send is acknowledged (:meth:`Client.send <jaxmtl.mixed_effect.Client.send>` returns) only
after its record was written to the operating system and — with ``sync_every=1`` — fsync'd. With
``sync_every=k`` the log is fsync'd at every k-th record (group commit): a process crash (SIGKILL)
still loses nothing acknowledged (the operating system holds the writes), a power loss may drop
up to k − 1 acknowledged sends (the last records since the previous fsync).

Opening (:func:`open_durable`) loads the snapshot and replays the log's records with
seq ≥ the snapshot's count (records below it are those of a checkpoint interrupted between
the new snapshot and the new log: already in the snapshot). A bad record is detected and never
replayed. A torn one — the file ends inside it, as a write cut by a crash leaves it — and a last
record whose payload fails its checksum are cut off with a :class:`LogTruncatedWarning` (a send
is acknowledged only after its whole record was written, so none of them was); a length that
fails its own checksum, or a bad record followed by more data, is corruption: the log is refused
with a PersistenceError naming the byte offset, unless ``on_corrupt='truncate'`` (then
everything from it on is cut off, with the warning). :func:`checkpoint` compacts: new snapshot,
then a new empty log with base = the snapshot's count, each replaced atomically.

Example:
    >>> import tempfile
    >>> from jaxmtl.kernels import Gaussian
    >>> from jaxmtl.mixed_effect import Server
    >>> path = tempfile.mkdtemp()
    >>> with Server.open(path, Server(0.5, 0.1, Gaussian(1.0))) as s:
    ...     s.client("a").send([0.0], 1.0)
    >>> Server.open(path).n_received          # restarted: the log replayed
    1
"""

from __future__ import annotations

import os
import struct
import warnings
import zlib
from typing import Any, Iterator, NamedTuple

import numpy as np

from ..errors import ParameterError, PersistenceError
from .state import load_server, save_server, server_state

__all__ = ["SendLog", "LogRecord", "LogTruncatedWarning", "encode", "read_log", "open_durable", "checkpoint",
           "SNAPSHOT", "LOG", "ON_CORRUPT"]

SNAPSHOT, LOG = "server.npz", "sends.log"
MAGIC = b"JXMTLOG1"
_HEADER = struct.Struct("<8sQ")
_FRAME = struct.Struct("<III")
_FIXED = struct.Struct("<QddBII")
HEADER_SIZE = _HEADER.size + 8
MAX_RECORD = 1 << 26
ON_CORRUPT = ("refuse", "truncate")
SETTINGS = ("alpha", "lam", "fit_intercept", "disclosure", "kernel", "task_kernel")


class LogTruncatedWarning(UserWarning):
    """A torn or corrupted tail of a send log was cut off (its records were never acknowledged
    when torn by a crash; the message says how many bytes went)."""


class LogRecord(NamedTuple):
    """One logged send: its number ``seq``, task, x (p,) float64, y, w."""

    seq: int
    task: int | str
    x: np.ndarray
    y: float
    w: float


def encode(rec: LogRecord) -> bytes:
    """The framed bytes of one record (length, CRC-32, payload)."""
    kind = 1 if isinstance(rec.task, str) else 0
    tb = str(rec.task).encode("utf-8")
    x = np.ascontiguousarray(rec.x, dtype="<f8")
    payload = _FIXED.pack(rec.seq, rec.y, rec.w, kind, len(tb), x.shape[0]) + tb + x.tobytes()
    length = struct.pack("<I", len(payload))
    return length + struct.pack("<II", zlib.crc32(length), zlib.crc32(length + payload)) + payload


def _decode(payload: bytes) -> LogRecord:
    seq, y, w, kind, nt, p = _FIXED.unpack_from(payload)
    o = _FIXED.size
    text = payload[o:o + nt].decode("utf-8")
    x = np.frombuffer(payload, dtype="<f8", count=p, offset=o + nt).astype(np.float64)
    return LogRecord(seq, text if kind else int(text), x, y, w)


def _header(base: int) -> bytes:
    head = _HEADER.pack(MAGIC, base)
    return head + struct.pack("<I", zlib.crc32(head)) + b"\0" * 4


def read_log(path: str | os.PathLike[str]) -> tuple[int, list[LogRecord], int, str | None]:
    """(base, records, good_bytes, problem) of a log: the records before the first bad one, the
    offset where they end, and None or a description of what follows there (torn / corrupted).
    PersistenceError when the header itself is not a send log's."""
    with open(path, "rb") as f:
        data = f.read()
    head = data[:HEADER_SIZE]
    if len(head) < HEADER_SIZE or head[:8] != MAGIC or struct.unpack_from("<I", head, 16)[0] != zlib.crc32(head[:16]):
        raise PersistenceError(f"{os.fspath(path)!r} is not a jaxmtl send log (bad or missing header).")
    base = _HEADER.unpack_from(head)[1]
    records: list[LogRecord] = []
    off = HEADER_SIZE
    for problem, rec, end in _frames(data, off):
        if problem is not None:
            return base, records, off, problem
        records.append(rec)
        off = end
    return base, records, off, None


def _frames(data: bytes, off: int) -> Iterator[tuple[str | None, Any, int]]:
    while off < len(data):
        if len(data) - off < _FRAME.size:
            yield f"a torn record of {len(data) - off} byte(s) at the end", None, off
            return
        length, crc_length, crc = _FRAME.unpack_from(data, off)
        if zlib.crc32(data[off:off + 4]) != crc_length or length > MAX_RECORD:
            yield f"a record at byte {off} has a corrupted length (its CRC-32 fails)", None, off
            return
        end = off + _FRAME.size + length
        if end > len(data):
            yield f"a torn record at byte {off}: it declares {length} bytes, the file ends before", None, off
            return
        if zlib.crc32(data[off:off + 4] + data[off + _FRAME.size:end]) != crc:
            yield f"a record at byte {off} fails its CRC-32 checksum", None, end
            return
        try:
            rec = _decode(data[off + _FRAME.size:end])
        except (struct.error, ValueError, UnicodeDecodeError) as exc:
            yield f"a record at byte {off} has a checksum but no valid payload ({exc})", None, end
            return
        yield None, rec, end
        off = end


class SendLog:
    """The append-only log of a durable server (open for appending at its end).

    Args:
      path: the log file (created with ``base`` if absent).
      base: the send count of the snapshot it follows (used when it is created).
      sync_every: fsync at every k-th record (1: every send is on disk when acknowledged).
    """

    def __init__(self, path: str | os.PathLike[str], base: int, sync_every: int = 1) -> None:
        if isinstance(sync_every, bool) or not isinstance(sync_every, (int, np.integer)) or sync_every < 1:
            raise ParameterError(f"sync_every must be a positive int; received {sync_every!r}.")
        self.path, self.sync_every, self._unsynced = os.fspath(path), int(sync_every), 0
        if not os.path.exists(self.path):
            _replace_atomically(self.path, _header(base))
        self._f = open(self.path, "r+b")
        self._f.seek(0, os.SEEK_END)

    def append(self, rec: LogRecord) -> None:
        """Write one record and flush it to the operating system (fsync'd per ``sync_every``); on
        any error the file is cut back to where it was and the error raised (nothing logged)."""
        if self._f.closed:
            raise PersistenceError(f"the send log {self.path!r} is closed (server.close()): send refused, "
                                   "nothing changed; reopen the server with Server.open.")
        start = self._f.tell()
        try:
            self._f.write(encode(rec))
            self._f.flush()
            self._unsynced += 1
            if self._unsynced >= self.sync_every:
                os.fsync(self._f.fileno())
                self._unsynced = 0
        except BaseException:
            self._f.truncate(start)
            self._f.seek(start)
            raise

    def sync(self) -> None:
        """fsync whatever was written."""
        self._f.flush()
        os.fsync(self._f.fileno())
        self._unsynced = 0

    def close(self) -> None:
        """fsync and close (idempotent)."""
        if not self._f.closed:
            self.sync()
            self._f.close()


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _replace_atomically(path: str, content: bytes) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(content)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(os.path.abspath(path)))


def _settings(server: Any) -> dict:
    meta = server_state(server)[0]
    return {k: meta[k] for k in SETTINGS}


def open_durable(directory: str | os.PathLike[str], template: Any = None, sync_every: int = 1,
                 on_corrupt: str = "refuse") -> Any:
    """The durable server of ``directory``: its snapshot with the log replayed (or ``template``'s
    state, snapshotted, when the directory holds none); see the module docstring. ``template``,
    when the directory has a state, must have the same settings (α, λ, kernels, bias, disclosure)."""
    if on_corrupt not in ON_CORRUPT:
        raise ParameterError(f"on_corrupt must be one of {ON_CORRUPT}; received {on_corrupt!r}.")
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    snap, log = os.path.join(directory, SNAPSHOT), os.path.join(directory, LOG)
    if not os.path.exists(snap):
        if template is None:
            raise ParameterError(f"{directory!r} holds no server state: pass a Server as template to create it.")
        if os.path.exists(log):
            raise PersistenceError(f"{directory!r} holds a send log but no snapshot {SNAPSHOT!r}: its sends "
                                   "cannot be replayed onto an unknown state.")
        save_server(template, snap)
        _fsync_dir(directory)
        server = template
    else:
        server = load_server(snap)
        if template is not None and _settings(template) != _settings(server):
            raise ParameterError(f"{directory!r} holds a server with settings {_settings(server)}; the template "
                                 f"has {_settings(template)}. Pass no template to open the stored one.")
    if os.path.exists(log):
        _replay(server, log, on_corrupt)
    server._attach_journal(SendLog(log, server.n_received, sync_every))
    return server


def _replay(server: Any, log: str, on_corrupt: str) -> None:
    base, records, good, problem = read_log(log)
    size = os.path.getsize(log)
    if problem is not None:
        at_tail = "torn" in problem or ("CRC-32 checksum" in problem and _last_frame_ends_file(log, good))
        if not at_tail and on_corrupt == "refuse":
            raise PersistenceError(f"send log {log!r} is corrupted: {problem}, followed by more data "
                                   f"({size - good} bytes from byte {good}); {len(records)} record(s) before it "
                                   "are intact. Nothing was replayed. Open with on_corrupt='truncate' to keep "
                                   "only those records.")
        warnings.warn(f"send log {log!r}: {problem}; cut off {size - good} byte(s) from byte {good} (never "
                      f"replayed); {len(records)} intact record(s) kept.", LogTruncatedWarning, stacklevel=3)
        with open(log, "r+b") as f:
            f.truncate(good)
            os.fsync(f.fileno())
    if base > server.n_received:
        raise PersistenceError(f"send log {log!r} follows a snapshot of {base} sends, but the snapshot holds "
                               f"{server.n_received}: sends are missing.")
    for rec in records:
        if rec.seq < server.n_received:
            continue                                # already in the snapshot (an interrupted checkpoint)
        if rec.seq != server.n_received:
            raise PersistenceError(f"send log {log!r}: record of send {rec.seq} where send {server.n_received} "
                                   "was expected.")
        server._apply_logged(rec)


def _last_frame_ends_file(log: str, good: int) -> bool:
    """Whether the bad record at ``good`` is the file's last (a torn write) rather than one in the middle."""
    with open(log, "rb") as f:
        f.seek(good)
        data = f.read()
    return len(data) >= _FRAME.size and _FRAME.size + _FRAME.unpack_from(data)[0] == len(data)


def checkpoint(server: Any, directory: str) -> None:
    """Compact: write the snapshot of ``server``'s state (atomically), then start an empty log after it.
    Call with the server's lock held (no send in between)."""
    journal = server._journal
    save_server(server, os.path.join(directory, SNAPSHOT))
    _fsync_dir(directory)
    journal.close()
    _replace_atomically(os.path.join(directory, LOG), _header(server.n_received))
    server._attach_journal(SendLog(os.path.join(directory, LOG), server.n_received, journal.sync_every))
