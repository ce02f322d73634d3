"""The client-server online algorithm ([Din11] §5.3, Algorithms 5–9): after every send of a
shuffled stream, every client's predictions equal the dense solve of (5.4); what the disclosed
database hides; fault tolerance (bad sends change nothing, save / load / continue)."""

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
import pytest

from jaxmtl.errors import NonFiniteError, ParameterError, PersistenceError, ShapeError, TaskError
from jaxmtl.kernels import Gaussian, Linear
from jaxmtl.mixed_effect import Server

KBAR, KTIL, LAM = Gaussian(1.3), Gaussian(0.6), 0.08


def gauss(A, B, s):
    return np.exp(-((A[:, None, :] - B[None, :, :]) ** 2).sum(-1) / (2 * s * s))


def me_gram(X1, t1, X2, t2, alpha):
    """(5.5) in NumPy: α K̄ + (1 − α)[t = t'] K̃ with the Gaussians of widths 1.3 and 0.6."""
    return alpha * gauss(X1, X2, 1.3) + (1 - alpha) * (t1[:, None] == t2[None, :]) * gauss(X1, X2, 0.6)


def reference(X, t, y, w, Xq, task, alpha, fit_intercept):
    """Dense solve of (5.4) (bordered with the unpenalized bias when fit_intercept)."""
    K = me_gram(X, t, X, t, alpha) + LAM * np.diag(w)
    n = len(y)
    if fit_intercept:
        sol = np.linalg.solve(np.block([[K, np.ones((n, 1))], [np.ones((1, n)), np.zeros((1, 1))]]), np.r_[y, 0])
        c, b = sol[:-1], sol[-1]
    else:
        c, b = np.linalg.solve(K, y), 0.0
    return me_gram(Xq, np.full(len(Xq), task), X, t, alpha) @ c + b


def stream(seed=0, n=30, n_tasks=3):
    rng = np.random.default_rng(seed)
    pool = rng.normal(size=(7, 2))
    X = pool[rng.integers(0, 7, n)]
    return X, rng.integers(0, n_tasks, n), rng.normal(size=n), rng.uniform(0.5, 2.0, n), rng


def cases(X, t):
    """Which case of Algorithm 5 each send hits (3: new input, 2: new to its task, 1: repeat)."""
    seen, seen_task, out = set(), set(), []
    for x, j in zip(map(tuple, X), t):
        out.append(1 if (x, j) in seen_task else 2 if x in seen else 3)
        seen.add(x)
        seen_task.add((x, j))
    return out


@pytest.mark.parametrize("alpha, fit_intercept, capacity", [(0.4, False, 1), (0.4, True, 16), (0.0, False, 16),
                                                            (1.0, True, 3)])
def test_online_equals_centralized_after_every_send(alpha, fit_intercept, capacity):
    X, t, y, w, rng = stream()
    assert set(cases(X, t)) == {1, 2, 3}
    Xq = rng.normal(size=(4, 2))
    server = Server(alpha, LAM, KBAR, KTIL, fit_intercept=fit_intercept, capacity=capacity)  # 1, 3: buffers grow
    clients = {j: server.client(j) for j in range(3)}
    for i in range(len(y)):
        clients[t[i]].send(X[i], y[i], w[i])
        for j in set(t[: i + 1].tolist()):
            ref = reference(X[: i + 1], t[: i + 1], y[: i + 1], w[: i + 1], Xq, j, alpha, fit_intercept)
            np.testing.assert_allclose(clients[j].predict(Xq), ref, rtol=0, atol=1e-8)
    assert server.n_inputs == len(np.unique(X, axis=0)) and server.n_tasks == 3 and server.n_received == 30


def test_passive_client_predicts_as_if_it_had_sent_without_changing_the_server():
    X, t, y, w, rng = stream(1)
    server = Server(0.5, LAM, KBAR, KTIL, fit_intercept=True, disclosure="database")
    for i in range(25):
        server.client(int(t[i])).send(X[i], y[i], w[i])
    before = server.disclosed()
    Xp, yp = np.r_[X[25:], rng.normal(size=(2, 2))], rng.normal(size=7)
    passive = server.passive_client(Xp, yp, task="me")
    Xq = rng.normal(size=(5, 2))
    tt = np.r_[t[:25], np.full(7, 9)]
    ref = reference(np.r_[X[:25], Xp], tt, np.r_[y[:25], yp], np.r_[w[:25], np.ones(7)], Xq, 9, 0.5, True)
    np.testing.assert_allclose(passive.predict(Xq), ref, atol=1e-8)
    after = server.disclosed()
    for f in ("X", "b", "G", "b_ones", "a"):
        np.testing.assert_array_equal(getattr(before, f), getattr(after, f))
    assert server.n_tasks == len(set(t[:25].tolist()))


def test_disclosed_database_sees_only_sums_over_tasks_with_the_same_inputs():
    """What the database does hide (docs/privacy.md; what it does not: test_mixed_effect_privacy):
    tasks 0 and 1 use the same inputs and weights and their outputs move in opposite directions
    (b = Σⱼ I(:, hʲ)Rʲyʲ and a = Σⱼ 1ᵀRʲyʲ only see the sum); G and b₁ do not depend on any output."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(4, 2))
    y0, y1, y2, delta = (rng.normal(size=4) for _ in range(4))
    servers = []
    for d in (0.0, 1.0):
        s = Server(0.5, LAM, KBAR, KTIL, fit_intercept=True, disclosure="database")
        for i in range(4):
            s.client("u0").send(X[i], y0[i] + d * delta[i])
            s.client("u1").send(X[i], y1[i] - d * delta[i])
            s.client("u2").send(X[i] + 1.0, y2[i] * (1 + 3 * d))       # any outputs: G, b₁ unchanged
        servers.append(s)
    a, b = (s.disclosed() for s in servers)
    assert sorted(a._fields) == ["G", "X", "a", "alpha", "b", "b_ones", "fit_intercept", "kernel", "lam"]
    for f in ("X", "G", "b_ones"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    # b changes only through u2's outputs: the u0/u1 exchange is invisible
    s3 = Server(0.5, LAM, KBAR, KTIL, fit_intercept=True, disclosure="database")
    for i in range(4):
        s3.client("u0").send(X[i], y0[i] + delta[i])
        s3.client("u1").send(X[i], y1[i] - delta[i])
        s3.client("u2").send(X[i] + 1.0, y2[i])
    np.testing.assert_allclose(s3.disclosed().b, servers[0].disclosed().b, atol=1e-12)
    np.testing.assert_allclose(s3.disclosed().a, servers[0].disclosed().a, atol=1e-12)
    Xq = rng.normal(size=(3, 2))
    assert np.abs(s3.client("u0").predict(Xq) - servers[0].client("u0").predict(Xq)).max() > 1e-3


def state(server):
    """Every array of the state, disclosed and undisclosed, for exact comparisons."""
    d = server._db.arrays()
    for task, r in sorted(server._records.items(), key=lambda kv: repr(kv[0])):
        d.update({f"{task}_h": np.array(r.h), f"{task}_Y": r.Y, f"{task}_w": r.w, f"{task}_R": r.R})
    return d


def assert_same_state(a, b):
    sa, sb = state(a), state(b)
    assert sa.keys() == sb.keys()
    for k in sa:
        np.testing.assert_array_equal(sa[k], sb[k], err_msg=k)


def test_semidefinite_common_kernel_works_and_equals_the_dense_solve():
    """A linear K̄ with more distinct inputs than features (Ǩ singular): the thesis's Cholesky
    extension refused the third input; the state in (G, b) form does not divide by Ǩ's pivots."""
    rng = np.random.default_rng(7)
    X, t, y = rng.normal(size=(12, 2)), rng.integers(0, 3, 12), rng.normal(size=12)
    server = Server(0.5, LAM, Linear(), KTIL)
    for i in range(12):
        server.client(int(t[i])).send(X[i], y[i])
    Xq = rng.normal(size=(4, 2))
    K = 0.5 * X @ X.T + 0.5 * (t[:, None] == t[None, :]) * gauss(X, X, 0.6) + LAM * np.eye(12)
    c = np.linalg.solve(K, y)
    for j in range(3):
        ref = (0.5 * Xq @ X.T + 0.5 * (t[None, :] == j) * gauss(Xq, X, 0.6)) @ c
        np.testing.assert_allclose(server.client(j).predict(Xq), ref, rtol=0, atol=1e-9)


def test_bad_sends_raise_and_change_nothing():
    X, t, y, w, _ = stream(3)
    server = Server(0.5, LAM, KBAR, {0: KTIL, 1: KTIL, 2: KTIL})
    for i in range(10):
        server.client(int(t[i])).send(X[i], y[i], w[i])
    snapshot = {k: v.copy() for k, v in state(server).items()}
    c = server.client(0)
    bad = [((np.array([np.nan, 0.0]), 1.0, 1.0), NonFiniteError), ((X[0], np.inf, 1.0), NonFiniteError),
           ((X[0], 1.0, -1.0), ParameterError), ((X[0], 1.0, 0.0), ParameterError),
           ((np.zeros(3), 1.0, 1.0), ShapeError), ((X[:2], 1.0, 1.0), ShapeError), ((X[0], [1.0, 2.0], 1.0), ShapeError)]
    for args, err in bad:
        with pytest.raises(err):
            c.send(*args)
    with pytest.raises(TaskError):
        server.client(7)                                   # no individual kernel for task 7
    with pytest.raises(TaskError):
        server.passive_client(X[:2], y[:2], task=7)        # unknown task to a passive client
    with pytest.raises(TaskError):
        server.passive_client(X[:2], y[:2], task=0)        # task 0 is active: it would count twice
    with pytest.raises(TaskError):
        server.client(1.5)
    for k, v in state(server).items():
        np.testing.assert_array_equal(v, snapshot[k])
    for alpha in (-0.1, 1.1, np.nan):
        with pytest.raises((ParameterError, NonFiniteError), match="alpha"):
            Server(alpha, LAM, KBAR)
    for lam in (0.0, 1e300, 1e-300, np.inf):
        with pytest.raises((ParameterError, NonFiniteError), match="lam"):
            Server(0.5, lam, KBAR)
    for capacity in (0, 2.5, True):
        with pytest.raises(ParameterError, match="capacity"):
            Server(0.5, LAM, KBAR, capacity=capacity)


def _long_stream(n, seed, bad_every=None):
    rng = np.random.default_rng(seed)
    pool = rng.normal(size=(12, 2))
    for i in range(n):
        x, task, y = pool[rng.integers(0, 12)], int(rng.integers(0, 40)), float(rng.normal())
        if bad_every and i % bad_every == bad_every - 1:
            kind = (i // bad_every) % 3
            yield task, (np.array([np.nan, 1.0]) if kind == 0 else x), (np.nan if kind == 1 else y), \
                (-1.0 if kind == 2 else 1.0), True
        yield task, x, y, 1.0, False


def _run(server, items):
    for task, x, y, w, bad in items:
        if bad:
            with pytest.raises((NonFiniteError, ParameterError)):
                server.client(task).send(x, y, w)
        else:
            server.client(task).send(x, y, w)
    return server


@pytest.mark.parametrize("n", [1500, pytest.param(10_000, marks=pytest.mark.slow)])
def test_stream_with_one_percent_malformed_sends_equals_the_good_sends_alone(n):
    dirty = _run(Server(0.3, LAM, KBAR, KTIL, fit_intercept=True), _long_stream(n, 4, bad_every=100))
    clean = _run(Server(0.3, LAM, KBAR, KTIL, fit_intercept=True), _long_stream(n, 4))
    assert dirty.n_received == clean.n_received == n
    assert_same_state(dirty, clean)


def test_save_kill_load_continue_equals_uninterrupted(tmp_path):
    items = list(_long_stream(400, 5))
    full = _run(Server(0.3, LAM, KBAR, KTIL, fit_intercept=True), items)
    first = _run(Server(0.3, LAM, KBAR, KTIL, fit_intercept=True), items[:170])
    first.save(tmp_path / "state.npz")
    del first                                              # the process holding it is gone
    resumed = _run(Server.load(tmp_path / "state.npz"), items[170:])
    assert_same_state(resumed, full)
    Xq = np.random.default_rng(0).normal(size=(3, 2))
    np.testing.assert_allclose(resumed.client(3).predict(Xq), full.client(3).predict(Xq), rtol=0, atol=1e-12)
    data = (tmp_path / "state.npz").read_bytes()
    (tmp_path / "bad.npz").write_bytes(data[:-200])
    with pytest.raises(PersistenceError):
        Server.load(tmp_path / "bad.npz")
