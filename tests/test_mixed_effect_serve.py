"""The mixed-effect server over HTTP (python -m jaxmtl.mixed_effect.serve, a real uvicorn process on
127.0.0.1 with a free port): 8 concurrent clients send a stream with hostile requests mixed in
(malformed JSON, unknown token, a body naming another task, NaN, a string, an oversized body) —
none accepted; every logged send is its token's task; the server is killed with SIGKILL mid-stream
and restarted: its log holds every acknowledged send, bit for bit, plus at most the requests in
flight; the final predictions equal an in-process replay of the log bit for bit and the
centralized MixedEffectRegressor on the same sends."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np

from jaxmtl import MixedEffectRegressor
from jaxmtl.errors import NonFiniteError, ParameterError, ShapeError
from jaxmtl.kernels import Gaussian
from jaxmtl.mixed_effect import Server
from jaxmtl.mixed_effect.journal import LOG, read_log
from jaxmtl.mixed_effect.remote import RemoteClient, RemoteError
from jaxmtl.mixed_effect.serve import issue_tokens

ALPHA, LAM, KERNEL = 0.5, 0.1, Gaussian(1.0)
N_CLIENTS, MAX_BODY = 8, 4096


def start(state, tokens, port_file):
    if os.path.exists(port_file):
        os.unlink(port_file)
    proc = subprocess.Popen([sys.executable, "-m", "jaxmtl.mixed_effect.serve", "--state", state, "--tokens", tokens,
                             "--port", "0", "--port-file", port_file, "--max-body", str(MAX_BODY)])
    deadline = time.monotonic() + 120
    while not os.path.exists(port_file):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the server did not start")
        time.sleep(0.1)
    url = f"http://127.0.0.1:{open(port_file).read()}"
    while True:
        try:
            if httpx.get(url + "/health", timeout=5).json() == {"status": "ok"}:
                return proc, url
        except httpx.TransportError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.1)


def hostile(url, token, other, rng):
    """One hostile request; returns its HTTP status (never 200 when the server is right)."""
    h = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    kind = int(rng.integers(7))
    if kind == 0:
        r = httpx.post(url + "/send", content=b'{"x": [0.1, 0.2], "y": ', headers=h)
    elif kind == 1:
        r = httpx.post(url + "/send", json={"x": [0.1, 0.2], "y": 1.0}, headers={"Authorization": "Bearer nope"})
    elif kind == 2:
        r = httpx.post(url + "/send", json={"x": [0.1, 0.2], "y": 1.0, "task": other}, headers=h)
    elif kind == 3:
        r = httpx.post(url + "/send", content=b'{"x": [0.1, 0.2], "y": NaN}', headers=h)
    elif kind == 4:
        r = httpx.post(url + "/send", json={"x": ["a", 0.2], "y": 1.0}, headers=h)
    elif kind == 5:
        r = httpx.post(url + "/send", content=b'{"x": [' + b"0.5, " * 2000 + b'0.5], "y": 1.0}', headers=h)
    else:
        r = httpx.post(url + "/send", json={"x": [0.1, 0.2], "y": 1e300}, headers=h)
    return r.status_code


def run_clients(url, tokens, streams, hostile_rate, stop_after, acked, inflight, bad_status, seed):
    """Each client thread sends its stream; acked[(seq)] = (task, x, y); stops when the server dies."""
    def client(task, stream):
        rng = np.random.default_rng(seed + task)
        remote = RemoteClient(url, tokens[task], timeout=30)
        for x, y in stream:
            if rng.uniform() < hostile_rate:
                try:
                    bad_status.append(hostile(url, tokens[task], (task + 1) % N_CLIENTS, rng))
                except httpx.TransportError:
                    return
            inflight[task] = (x, y)
            try:
                seq = remote.send(x, y)
            except httpx.TransportError:
                return                                   # the server was killed: this one may be in the log
            acked[seq] = (task, x, y)
            inflight[task] = None
            if len(acked) >= stop_after:
                return

    threads = [threading.Thread(target=client, args=(t, streams[t])) for t in range(N_CLIENTS)]
    for t in threads:
        t.start()
    return threads


def check_http(tmp_path, per_client, kill_at, hostile_rate):
    state, tokfile, port_file = str(tmp_path / "state"), str(tmp_path / "tokens.json"), str(tmp_path / "port")
    Server.open(state, Server(ALPHA, LAM, KERNEL, disclosure="database")).close()
    tokens = issue_tokens(tokfile, range(N_CLIENTS))
    assert all(tok not in open(tokfile).read() for tok in tokens.values())   # only digests are stored
    rng = np.random.default_rng(0)
    items = rng.normal(size=(30, 2))
    streams = [[(items[rng.integers(30)].tolist(), float(rng.normal())) for _ in range(per_client)]
               for _ in range(N_CLIENTS)]
    acked, inflight, bad = {}, [None] * N_CLIENTS, []
    proc, url = start(state, tokfile, port_file)
    try:
        threads = run_clients(url, tokens, streams, hostile_rate, kill_at, acked, inflight, bad, 1)
        while len(acked) < kill_at and any(t.is_alive() for t in threads):
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)                # mid-stream
        for t in threads:
            t.join(timeout=120)
        proc.wait(timeout=60)
        assert bad and all(s in (400, 401, 413, 422) for s in bad), bad
        proc, url = start(state, tokfile, port_file)     # restart: the log replayed
        _, records, _, problem = read_log(os.path.join(state, LOG))
        assert problem is None
        logged = {r.seq: (r.task, r.x.tolist(), r.y) for r in records}
        assert all(logged[s] == v for s, v in acked.items())   # every acknowledged send, bit for bit
        extra = [v for s, v in logged.items() if s not in acked]
        assert len(extra) <= N_CLIENTS
        assert all(inflight[t] is not None and inflight[t] == (x, y) for t, x, y in extra)
        clients = [RemoteClient(url, tokens[t]) for t in range(N_CLIENTS)]
        for t in range(N_CLIENTS):                        # the stream goes on after the restart
            for x, y in streams[t][-3:]:
                clients[t].send(x, y)
        _, records, _, _ = read_log(os.path.join(state, LOG))
        replay = Server(ALPHA, LAM, KERNEL, disclosure="database")
        for r in records:
            replay.client(r.task).send(r.x, r.y, r.w)
        for t in range(N_CLIENTS):
            assert np.array_equal(clients[t].predict(items), replay.client(t).predict(items))
        assert np.array_equal(clients[0].disclosed().G, replay.disclosed().G)
        X = np.array([r.x for r in records])
        y = np.array([r.y for r in records])
        tasks = np.array([r.task for r in records])
        central = MixedEffectRegressor(alpha=ALPHA, lam=LAM, kernel=KERNEL, fit_intercept=False).fit(X, y, tasks)
        for t in range(N_CLIENTS):
            ref = central.predict(items, np.full(len(items), t))
            np.testing.assert_allclose(clients[t].predict(items), ref, rtol=0, atol=1e-8 * np.max(np.abs(ref)))
        # the same errors as the Python API, and the HTTP layer's own refusals
        with pytest.raises(NonFiniteError):
            clients[0].send([np.nan, 0.0], 1.0)
        with pytest.raises(ShapeError):
            clients[0].send([0.0, 0.0, 0.0], 1.0)
        with pytest.raises(RemoteError) as err:
            RemoteClient(url, "forged").predict(items)
        assert err.value.status == 401
        auth = {"Authorization": f"Bearer {tokens[0]}"}
        assert httpx.post(url + "/send", content=b"{" * 100000, headers=auth).status_code == 413
        chunked = httpx.post(url + "/send", content=iter([b"[" * 3000] * 3), headers=auth)   # no declared length
        assert chunked.status_code == 413
        with pytest.raises(RemoteError) as err:             # a body naming the task is refused: the token decides
            clients[0]._call("POST", "/send", {"x": [0.0, 0.0], "y": 1.0, "task": 1})
        assert err.value.status == 400
        assert read_log(os.path.join(state, LOG))[1][-1].seq == len(records) - 1   # nothing hostile logged
        for c in clients:
            c.close()
    finally:
        proc.kill()
        proc.wait(timeout=60)


def test_http_clients_hostile_requests_and_sigkill_restart(tmp_path):
    check_http(tmp_path, per_client=12, kill_at=40, hostile_rate=0.1)


@pytest.mark.long
def test_http_eight_clients_long_stream_with_one_percent_hostile(tmp_path):
    check_http(tmp_path, per_client=400, kill_at=1600, hostile_rate=0.01)


def test_predictions_only_server_refuses_the_database(tmp_path):
    state, tokfile, port_file = str(tmp_path / "s"), str(tmp_path / "t.json"), str(tmp_path / "p")
    Server.open(state, Server(ALPHA, LAM, KERNEL)).close()
    tokens = issue_tokens(tokfile, ["a"])
    proc, url = start(state, tokfile, port_file)
    try:
        with RemoteClient(url, tokens["a"]) as client:
            assert client.health()
            client.send([0.0, 1.0], 2.0)
            with pytest.raises(ParameterError, match="disclos"):
                client.disclosed()
            assert json.loads(httpx.get(url + "/health").text) == {"status": "ok"}
    finally:
        proc.kill()
        proc.wait(timeout=60)
