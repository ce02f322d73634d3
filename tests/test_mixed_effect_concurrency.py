"""Concurrent callers of one mixed-effect Server: threads (and asyncio through asyncio.to_thread)
sending slices of one stream with hostile sends mixed in — every good send counted, every
hostile one refused by name, no other exception, final predictions equal to the serial run's
to 1e-9 (the order of arrival changes only round-off); predictions made during the stream read
a state between two sends."""

import asyncio
import threading

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
import pytest

from jaxmtl.kernels import Gaussian
from jaxmtl.mixed_effect import Server

HOSTILE = [([np.nan, 0.0], 1.0, 1.0), ([0.0, 0.0], np.inf, 1.0), ([0.0, 0.0, 0.0], 1.0, 1.0), ([1e200, 0.0], 1.0, 1.0),
           (["a", "b"], 1.0, 1.0), ([], 1.0, 1.0), ([0.0, 0.0], 1.0, -2.0), ([0.0, 0.0], "y", 1.0)]


def make_stream(n, n_clients=200, n_items=50, seed=0):
    """(task, x, y, w, hostile) with 1 % hostile sends, on n_items items of R²."""
    rng = np.random.default_rng(seed)
    items = rng.normal(size=(n_items, 2))
    out = []
    for i in range(n):
        task = int(rng.integers(n_clients))
        if rng.uniform() < 0.01:
            x, y, w = HOSTILE[int(rng.integers(len(HOSTILE)))]
            out.append((task, x, y, w, True))
        else:
            out.append((task, items[rng.integers(n_items)], float(rng.normal()), 1.0, False))
    return out, items


def new_server():
    return Server(0.5, 0.1, Gaussian(1.0), capacity=64)


def send_all(server, part, errors):
    for task, x, y, w, hostile in part:
        try:
            server.client(task).send(x, y, w)
        except ValueError as exc:               # every refusal is a ValueError subclass of jaxmtl's
            if not hostile:
                errors.append(exc)
        except Exception as exc:                # noqa: BLE001 - anything else is a failure
            errors.append(exc)
        else:
            if hostile:
                errors.append(AssertionError(f"hostile send accepted: {x!r}, {y!r}"))


def check_threads(n_threads, n_per_thread, seed=0):
    stream, items = make_stream(n_threads * n_per_thread, seed=seed)
    serial = new_server()
    send_all(serial, stream, [])
    server, errors = new_server(), []
    parts = [stream[k::n_threads] for k in range(n_threads)]
    threads = [threading.Thread(target=send_all, args=(server, part, errors)) for part in parts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    good = sum(1 for s in stream if not s[4])
    assert server.n_received == serial.n_received == good
    for task in (0, 7, 199):
        a, b = server.client(task).predict(items), serial.client(task).predict(items)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9 * max(1.0, np.max(np.abs(b))))


def test_four_threads_equal_the_serial_run():
    check_threads(4, 300)


@pytest.mark.long
def test_eight_threads_of_ten_thousand_sends_equal_the_serial_run():
    check_threads(8, 10_000, seed=1)


def test_asyncio_callers_through_to_thread_equal_the_serial_run():
    stream, items = make_stream(400, n_clients=20, seed=2)
    serial = new_server()
    send_all(serial, stream, [])
    server, errors = new_server(), []

    async def client(part):
        for s in part:
            await asyncio.to_thread(send_all, server, [s], errors)

    async def main():
        await asyncio.gather(*(client(stream[k::8]) for k in range(8)))

    asyncio.run(main())
    assert not errors and server.n_received == serial.n_received
    np.testing.assert_allclose(server.client(3).predict(items), serial.client(3).predict(items), rtol=0, atol=1e-9)


def test_predictions_during_the_stream_read_a_state_between_two_sends():
    """One task's sends, in a known order, by one thread; another thread predicts meanwhile. The
    server's state after k sends is the serial prefix of length k, so every prediction read must
    equal (to round-off) the prediction after some prefix — never a mixture."""
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(40, 2)), rng.normal(size=40)
    Xq = rng.normal(size=(3, 2))
    prefixes, s = [], new_server()
    for i in range(40):
        s.client("a").send(X[i], y[i])
        prefixes.append(s.client("a").predict(Xq))
    prefixes = np.array(prefixes)
    server, seen, done = new_server(), [], threading.Event()
    server.client("a").send(X[0], y[0])

    def reader():
        while not done.is_set():
            seen.append(server.client("a").predict(Xq))

    t = threading.Thread(target=reader)
    t.start()
    for i in range(1, 40):
        server.client("a").send(X[i], y[i])
    done.set()
    t.join()
    assert len(seen) > 0
    for p in seen:
        assert np.min(np.max(np.abs(prefixes - p), axis=1)) < 1e-9


def test_a_save_during_sends_holds_the_state_between_two_sends(tmp_path):
    """One thread sends in a known order while jaxmtl.save snapshots the server: every snapshot is,
    bit for bit, the serial state after its own number of sends."""
    from jaxmtl import load, save
    from jaxmtl.mixed_effect.state import server_state

    stream, _ = make_stream(300, n_clients=5, seed=5)
    stream = [s for s in stream if not s[4]]
    server = new_server()
    t = threading.Thread(target=send_all, args=(server, stream, []))
    t.start()
    snapshots = []
    while t.is_alive() and len(snapshots) < 20:
        save(server, tmp_path / f"{len(snapshots)}.npz")
        snapshots.append(load(tmp_path / f"{len(snapshots)}.npz"))
    t.join()
    assert snapshots
    for snap in snapshots:
        serial = new_server()
        send_all(serial, stream[:snap.n_received], [])
        (ma, aa), (mb, ab) = server_state(snap), server_state(serial)
        assert ma == mb and all(np.array_equal(aa[k], ab[k]) for k in aa)
