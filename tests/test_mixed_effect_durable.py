"""A durable mixed-effect server (Server.open): every accepted send logged with a checksum and
fsync'd before it returns; a restart replays the log after the snapshot bit-identically; a torn
tail is cut off with a warning, a corrupted record in the middle refused; a process killed with
SIGKILL restarts in the state of exactly the sends its log holds (all the acknowledged ones, and
at most the one in flight)."""

import os
import signal
import subprocess
import sys
import textwrap
import warnings

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
import pytest

from jaxmtl.errors import NonFiniteError, ParameterError, PersistenceError
from jaxmtl.kernels import Gaussian
from jaxmtl.mixed_effect import Server
from jaxmtl.mixed_effect.journal import LOG, SNAPSHOT, LogTruncatedWarning, encode, read_log
from jaxmtl.mixed_effect.state import server_state


def template():
    return Server(0.4, 0.1, Gaussian(1.2), Gaussian(0.7), fit_intercept=True, capacity=4)


def sends(n, seed=0):
    """A stream over 12 items and 5 tasks (int and str ids), repeats included: (task, x, y, w)."""
    rng = np.random.default_rng(seed)
    items = rng.normal(size=(12, 2))
    out = []
    for _ in range(n):                                   # sends(n) is a prefix of sends(m > n)
        j = int(rng.integers(0, 5))
        out.append((j if j % 2 else f"t{j}", items[rng.integers(12)], float(rng.normal()), float(rng.uniform(0.5, 2))))
    return out


def feed(server, stream):
    for task, x, y, w in stream:
        server.client(task).send(x, y, w)


def assert_same_state(a, b):
    """Bit-identical whole states (metadata and every array)."""
    (ma, aa), (mb, ab) = server_state(a), server_state(b)
    assert ma == mb, {k: (ma[k], mb[k]) for k in ma if ma[k] != mb[k]}
    assert aa.keys() == ab.keys()
    for k in aa:
        assert aa[k].dtype == ab[k].dtype and np.array_equal(aa[k], ab[k]), k


def test_restart_replays_the_log_bit_identically_and_refused_sends_are_not_logged(tmp_path):
    stream = sends(60)
    with Server.open(tmp_path, template()) as durable:
        feed(durable, stream[:30])
        with pytest.raises(NonFiniteError):
            durable.client(1).send([np.nan, 0.0], 1.0)
        with pytest.raises(ParameterError):
            durable.client(1).send([0.0, 0.0], 1.0, w=-1.0)
        feed(durable, stream[30:])
    base, records, good, problem = read_log(tmp_path / LOG)
    assert (base, len(records), problem) == (0, 60, None)
    assert [r.seq for r in records] == list(range(60))
    assert [r.task for r in records] == [s[0] for s in stream]
    reference = template()
    feed(reference, stream)
    restarted = Server.open(tmp_path)
    assert_same_state(restarted, reference)
    feed(restarted, sends(10, seed=1))                   # and it goes on as the uninterrupted one
    feed(reference, sends(10, seed=1))
    assert_same_state(restarted, reference)
    Xq = np.random.default_rng(3).normal(size=(5, 2))
    assert np.array_equal(restarted.client("t0").predict(Xq), reference.client("t0").predict(Xq))


def test_checkpoint_compacts_and_an_interrupted_checkpoint_replays_nothing_twice(tmp_path):
    stream = sends(40)
    reference = template()
    feed(reference, stream)
    durable = Server.open(tmp_path, template(), sync_every=4)
    feed(durable, stream[:25])
    durable.checkpoint()
    assert read_log(tmp_path / LOG)[:2] == (25, [])
    feed(durable, stream[25:])
    durable.close()
    assert read_log(tmp_path / LOG)[0] == 25 and len(read_log(tmp_path / LOG)[1]) == 15
    assert_same_state(Server.open(tmp_path), reference)
    # a checkpoint cut after its snapshot, before its new log: the old log's records are in the snapshot
    partial = Server.open(tmp_path)
    partial.save(tmp_path / SNAPSHOT)
    partial.close()
    assert_same_state(Server.open(tmp_path), reference)


def _write_stream(tmp_path, n):
    with Server.open(tmp_path, template()) as durable:
        feed(durable, sends(n))
    return os.path.getsize(tmp_path / LOG)


def test_a_torn_tail_is_cut_off_with_a_warning_never_replayed(tmp_path):
    _write_stream(tmp_path, 20)
    _, records, _, _ = read_log(tmp_path / LOG)
    whole = (tmp_path / LOG).read_bytes()
    last = len(whole) - len(encode(records[-1]))
    for torn in (whole[:last + 3], whole[:-5]):          # the last record's frame cut, then its payload
        (tmp_path / LOG).write_bytes(torn)
        with pytest.warns(LogTruncatedWarning, match="cut off"):
            restarted = Server.open(tmp_path)
        restarted.close()
        assert restarted.n_received == 19 and os.path.getsize(tmp_path / LOG) == last
        reference = template()
        feed(reference, sends(19))
        assert_same_state(restarted, reference)
        (tmp_path / LOG).write_bytes(whole)
    # a flipped bit in the last record: its checksum fails, it is the tail: cut off
    (tmp_path / LOG).write_bytes(whole[:-3] + bytes([whole[-3] ^ 1]) + whole[-2:])
    with pytest.warns(LogTruncatedWarning, match="CRC-32"):
        assert Server.open(tmp_path).n_received == 19


def test_a_corrupted_record_in_the_middle_is_refused_or_truncated_on_request(tmp_path):
    _write_stream(tmp_path, 20)
    data = bytearray((tmp_path / LOG).read_bytes())
    data[200] ^= 0x10
    (tmp_path / LOG).write_bytes(bytes(data))
    with pytest.raises(PersistenceError, match="corrupted.*CRC-32.*Nothing was replayed"):
        Server.open(tmp_path)
    assert (tmp_path / LOG).read_bytes() == bytes(data)  # refused: the log left as it was
    with pytest.warns(LogTruncatedWarning):
        kept = Server.open(tmp_path, on_corrupt="truncate")
    reference = template()
    feed(reference, sends(kept.n_received))
    assert 0 < kept.n_received < 20
    assert_same_state(kept, reference)


def test_bad_use_is_refused_by_name(tmp_path):
    with pytest.raises(ParameterError, match="holds no server state"):
        Server.open(tmp_path)
    with pytest.raises(ParameterError, match="sync_every"):
        Server.open(tmp_path / "a", template(), sync_every=0)
    with pytest.raises(ParameterError, match="on_corrupt"):
        Server.open(tmp_path / "b", template(), on_corrupt="ignore")
    with Server.open(tmp_path / "c", template()) as s:
        feed(s, sends(3))
    with pytest.raises(ParameterError, match="settings"):
        Server.open(tmp_path / "c", Server(0.5, 0.1, Gaussian(1.2)))
    with pytest.raises(PersistenceError, match="closed"):
        s.client(1).send([0.0, 0.0], 1.0)
    assert s.n_received == 3
    with pytest.raises(ParameterError, match="durable"):
        template().checkpoint()
    (tmp_path / "c" / SNAPSHOT).unlink()
    with pytest.raises(PersistenceError, match="no snapshot"):
        Server.open(tmp_path / "c", template())
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / LOG).write_bytes(b"not a log")
    template().save(tmp_path / "d" / SNAPSHOT)
    with pytest.raises(PersistenceError, match="not a jaxmtl send log"):
        Server.open(tmp_path / "d")


CHILD = textwrap.dedent("""
    import sys
    import jax
    jax.config.update("jax_enable_x64", True)
    sys.path.insert(0, sys.argv[2])
    from test_mixed_effect_durable import sends, template
    from jaxmtl.mixed_effect import Server
    server = Server.open(sys.argv[1], template())
    for i, (task, x, y, w) in enumerate(sends(100000)):
        server.client(task).send(x, y, w)
        print(i, flush=True)                 # acknowledged
""")


@pytest.mark.parametrize("kill_after", [37, 211])
def test_sigkill_at_a_random_moment_restarts_to_exactly_the_logged_sends(tmp_path, kill_after):
    """The child acknowledges (prints) each send after it returns; killed after ``kill_after`` acks,
    the restarted state holds every acknowledged send and at most the one in flight, bit-identically."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "state"), os.path.dirname(__file__)],
                             stdout=subprocess.PIPE, text=True)
    acked = -1
    try:
        for line in child.stdout:
            acked = int(line)
            if acked + 1 >= kill_after:
                break
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=60)
    acked += 1 + sum(1 for _ in child.stdout)        # acks printed before the kill landed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LogTruncatedWarning)  # a send torn mid-write is never replayed
        restarted = Server.open(tmp_path / "state")
    assert acked >= kill_after
    assert restarted.n_received in (acked, acked + 1)  # the durable log decides the one in flight
    reference = template()
    feed(reference, sends(restarted.n_received))
    assert_same_state(restarted, reference)


def test_the_library_imports_no_network_package():
    """The HTTP face is an optional extra: importing jaxmtl and the durable server loads none of it."""
    code = ("import sys, jaxmtl, jaxmtl.mixed_effect, jaxmtl.mixed_effect.journal; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn', 'httpx') "
            "or m.endswith(('mixed_effect.serve', 'mixed_effect.remote'))))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "[]"
