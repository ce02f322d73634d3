"""The client-server learner on ordinary and hostile data: the state holds thousands of ordinary
sends in float32 mode (it is kept in float64 on the host), every send is a transaction (a refused
send leaves the state bit-identical), one client's far input or huge output changes the others'
predictions only as the dense float64 solve of (5.4) says, hyperparameters out of range are refused
by name, and a long random stream with hostile sends mixed in stays finite and saves / reloads
bit-identically."""

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
import pytest

from jaxmtl.errors import NonFiniteError, ParameterError, RangeError, ShapeError
from jaxmtl.kernels import Gaussian
from jaxmtl.mixed_effect import Server
from test_mixed_effect_server import assert_same_state, state

LAM = 0.1


def gauss(A, B, s):
    """Gaussian kernel in NumPy (s a scalar or a per-feature vector of widths)."""
    s = np.broadcast_to(np.asarray(s, float), (A.shape[1],))
    return np.exp(-((((A[:, None, :] - B[None, :, :]) / s) ** 2).sum(-1)) / 2)


def reference(X, t, y, w, Xq, task, alpha, s_bar, s_til=None, lam=LAM):
    """Dense float64 solve of (5.4) with a Gaussian K̄ (width s_bar) and Gaussian K̃ʲ (s_til[j])."""
    s_til = s_til or {}

    def k(A, ta, B, tb):
        out = alpha * gauss(A, B, s_bar)
        width = {j: tuple(np.atleast_1d(s_til.get(j, s_bar))) for j in set(ta.tolist())}
        for v in set(width.values()):                   # one Gram matrix per distinct width
            tasks = [j for j in width if width[j] == v]
            m = (ta[:, None] == tb[None, :]) & np.isin(ta, tasks)[:, None]
            out = out + (1 - alpha) * m * gauss(A, B, np.array(v))
        return out

    c = np.linalg.solve(k(X, t, X, t) + lam * np.diag(w), y)
    return k(Xq, np.full(len(Xq), task), X, t) @ c


def test_sixty_distinct_points_in_float32_are_all_accepted_and_exact():
    """Reproduction of the refusal: with the thesis's Cholesky form the 36th of these sends was
    refused in float32 (Schur complement β = 0) and the 92nd of a longer stream in float64."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 2)), rng.normal(size=60)
    t = np.arange(60) % 5
    with jax.enable_x64(False):
        server = Server(0.5, LAM, Gaussian(1.0))
        for i in range(60):
            server.client(int(t[i])).send(X[i], y[i])
        Xq = rng.normal(size=(5, 2))
        pred = {j: server.client(j).predict(Xq) for j in range(5)}
    assert server.n_inputs == 60
    for j in range(5):
        np.testing.assert_allclose(pred[j], reference(X, t, y, np.ones(60), Xq, j, 0.5, 1.0), rtol=0, atol=1e-8)


@pytest.mark.parametrize("n, n_pool", [(1000, 150), pytest.param(5000, 2000, marks=pytest.mark.slow)])
def test_thousands_of_ordinary_sends_are_all_accepted(n, n_pool):
    rng = np.random.default_rng(1)
    pool = rng.normal(size=(n_pool, 3))
    X = pool[rng.integers(0, n_pool, n)]
    t, y, w = rng.integers(0, 30, n), rng.normal(size=n), rng.uniform(0.5, 2.0, n)
    with jax.enable_x64(False):
        server = Server(0.3, LAM, Gaussian(0.7), Gaussian(0.4), capacity=4)
        for i in range(n):
            server.client(int(t[i])).send(X[i], y[i], w[i])
        Xq = rng.normal(size=(3, 3))
        got = server.client(4).predict(Xq)
    assert server.n_received == n and server.n_inputs == len(np.unique(X, axis=0))
    np.testing.assert_allclose(got, reference(X, t, y, w, Xq, 4, 0.3, 0.7, {j: 0.4 for j in range(30)}),
                               rtol=0, atol=1e-7)


def _ordinary(seed, n=40):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 2)), rng.integers(0, 4, n), rng.normal(size=n), rng


def _fill(server, X, t, y):
    for i in range(len(y)):
        server.client(int(t[i])).send(X[i], y[i])
    return server


@pytest.mark.parametrize("x64", [False, True])
def test_a_far_input_changes_the_others_only_as_the_model_does(x64):
    """send([1e4, 0], y) is a valid example far from all others: every client's predictions stay
    equal to the dense float64 solve with it included (with a Gaussian K̄ it moves nothing)."""
    X, t, y, rng = _ordinary(2)
    Xq = rng.normal(size=(6, 2))
    with jax.enable_x64(x64):
        server = _fill(Server(0.5, LAM, Gaussian(1.0), fit_intercept=False), X, t, y)
        before = {j: server.client(j).predict(Xq) for j in range(4)}
        server.client(9).send([1e4, 0.0], 5.0)
        after = {j: server.client(j).predict(Xq) for j in range(4)}
    X2, t2, y2 = np.r_[X, [[1e4, 0.0]]], np.r_[t, 9], np.r_[y, 5.0]
    for j in range(4):
        np.testing.assert_allclose(after[j], reference(X2, t2, y2, np.ones(41), Xq, j, 0.5, 1.0), atol=1e-9)
        np.testing.assert_allclose(after[j], before[j], rtol=0, atol=1e-9)


def test_huge_outputs_are_refused_and_change_nothing_then_valid_sends_work():
    X, t, y, rng = _ordinary(3)
    server = _fill(Server(0.5, LAM, Gaussian(1.0), fit_intercept=True), X, t, y)
    snapshot = {k: v.copy() for k, v in state(server).items()}
    Xq = rng.normal(size=(4, 2))
    before = server.client(0).predict(Xq)
    for x, yy in (([0.3, 0.3], 1e308), ([0.3, 0.3], -1e308), (X[0], 1e308), (X[5], -1.7e308)):
        # refused by the common range check (squares overflow float64) before the state is touched
        with pytest.raises(RangeError, match=r"y holds finite values up to 1(\.7)?e\+308"):
            server.client(1).send(x, yy)
    for k, v in state(server).items():
        np.testing.assert_array_equal(v, snapshot[k], err_msg=k)
    np.testing.assert_array_equal(server.client(0).predict(Xq), before)
    server.client(1).send([0.3, 0.3], 2.0)                  # a valid send after the refused ones
    ref = _fill(Server(0.5, LAM, Gaussian(1.0), fit_intercept=True), np.r_[X, [[0.3, 0.3]]], np.r_[t, 1],
                np.r_[y, 2.0])
    assert_same_state(server, ref)


def test_large_finite_output_is_kept_as_the_model_implies():
    """y = 1e150 (below the range check's 6.7e153) is kept; its effect on everyone is what (5.4)
    implies (relative 1e-9)."""
    X, t, y, rng = _ordinary(4)
    y = y.copy()
    y[7] = 1e150
    server = _fill(Server(0.5, LAM, Gaussian(1.0)), X, t, y)
    Xq = rng.normal(size=(4, 2))
    for j in range(4):
        ref = reference(X, t, y, np.ones(40), Xq, j, 0.5, 1.0)
        np.testing.assert_allclose(server.client(j).predict(Xq), ref, rtol=1e-9)


def test_hyperparameters_and_weights_out_of_range_are_refused_by_name():
    for lam in (1e300, 1e-300, 1e101, 0.0, -1.0):
        with pytest.raises(ParameterError, match="lam"):
            Server(0.5, lam, Gaussian(1.0))
    server = Server(0.5, LAM, Gaussian(1.0))
    server.client(0).send([0.0, 0.0], 1.0)
    before = state(server)
    with pytest.raises(ParameterError, match="w = "):
        server.client(0).send([1.0, 0.0], 1.0, 1e-300)
    with pytest.raises(RangeError, match="w holds finite values up to 1e\\+300"):
        server.client(0).send([1.0, 0.0], 1.0, 1e300)
    with pytest.raises(ParameterError, match="w = "):
        server.passive_client(np.ones((1, 2)), np.ones(1), w=[1e-300])
    with pytest.raises(ParameterError, match="disclosure"):
        Server(0.5, LAM, Gaussian(1.0), disclosure="some")
    for k, v in state(server).items():
        np.testing.assert_array_equal(v, before[k])


def test_lam_range_is_float64_s_in_float32_mode():
    """The state is float64 whatever the flag: λ is checked against float64's range (no fix that
    names a dtype the server does not take), and a λ below float32's range works."""
    X, t, y, rng = _ordinary(9, 12)
    with jax.enable_x64(False):
        with pytest.raises(ParameterError, match=r"lam must lie in .*float64") as info:
            Server(0.5, 1e300, Gaussian(1.0))
        assert "dtype" not in str(info.value)
        server = _fill(Server(0.5, 1e-50, Gaussian(1.0)), X, t, y)
        Xq = rng.normal(size=(3, 2))
        got = server.client(0).predict(Xq)
    np.testing.assert_allclose(got, reference(X, t, y, np.ones(12), Xq, 0, 0.5, 1.0, lam=1e-50), rtol=1e-6)


def test_overflowing_inputs_are_refused_and_change_nothing():
    """|x| = 1e200: its squared distances overflow float64; the send is refused by name."""
    X, t, y, _ = _ordinary(5, 10)
    server = _fill(Server(0.5, LAM, Gaussian(1.0)), X, t, y)
    before = {k: v.copy() for k, v in state(server).items()}
    with pytest.raises(RangeError, match="x holds finite values up to 1e\\+200"):
        server.client(0).send([1e200, 1e200], 1.0)
    for k, v in state(server).items():
        np.testing.assert_array_equal(v, before[k])
    server.client(0).send([0.5, 0.5], 1.0)
    assert server.n_received == 11


def test_ard_task_kernel_valid_send_after_a_rejected_one():
    widths = {0: np.array([0.5, 2.0]), 1: np.array([1.0, 0.3])}
    server = Server(0.4, LAM, Gaussian(1.0), {j: Gaussian(v) for j, v in widths.items()})
    rng = np.random.default_rng(6)
    X, t, y = rng.normal(size=(12, 2)), np.arange(12) % 2, rng.normal(size=12)
    bad = [((np.zeros(3), 1.0), ShapeError), (([np.nan, 0.0], 1.0), NonFiniteError),
           ((X[0], 1e308), NonFiniteError), (([1e200, 0.0], 1.0), RangeError)]
    for i in range(12):
        if i % 3 == 0:                                          # a refused send, then a valid one
            args, err = bad[i // 3]
            with pytest.raises(err):
                server.client(int(t[i])).send(*args)
        server.client(int(t[i])).send(X[i], y[i])
    Xq = rng.normal(size=(5, 2))
    for j in (0, 1):
        np.testing.assert_allclose(server.client(j).predict(Xq),
                                   reference(X, t, y, np.ones(12), Xq, j, 0.4, 1.0, widths), rtol=0, atol=1e-9)


def _hostile_stream(n, seed):
    """(task, x, y, w) with about one send in seven hostile: far inputs (valid), outputs up to
    ±1.8e308, inputs whose squared norm overflows, NaN outputs, weights 1e±300, outputs ±1e150."""
    rng = np.random.default_rng(seed)
    pool = rng.normal(size=(60, 2))
    for _ in range(n):
        task, x, y, w = int(rng.integers(0, 12)), pool[rng.integers(0, 60)], float(rng.normal()), 1.0
        r = rng.random()
        if r < 0.03:
            x = np.array([1e4 * rng.choice([-1.0, 1.0]), rng.normal()])
        elif r < 0.06:
            y = float(rng.choice([-1.0, 1.0]) * 10.0 ** rng.uniform(290.0, 308.2))
        elif r < 0.08:
            x = np.array([1e200, rng.normal()])
        elif r < 0.10:
            y = float("nan")
        elif r < 0.12:
            w = 10.0 ** float(rng.choice([-300.0, 300.0]))
        elif r < 0.14:
            y = float(rng.choice([-1.0, 1.0]) * 1e150)
        yield task, x, y, w


@pytest.mark.parametrize("n", [1500, pytest.param(10_000, marks=pytest.mark.slow)])
def test_random_stream_with_hostile_sends_stays_finite_and_reloads_identically(n, tmp_path):
    with jax.enable_x64(False):
        server = Server(0.4, LAM, Gaussian(1.0), {j: Gaussian(np.array([0.8, 1.5]) if j % 2 else 0.6)
                                                  for j in range(12)}, fit_intercept=True, capacity=8)
        accepted, refused = [], 0
        for task, x, y, w in _hostile_stream(n, 7):
            try:
                server.client(task).send(x, y, w)
                accepted.append((task, x, y, w))
            except (NonFiniteError, ParameterError):
                refused += 1
        assert refused > n // 20 and server.n_received == len(accepted)
        assert all(np.all(np.isfinite(v)) for v in state(server).values())
        Xq = np.random.default_rng(8).normal(size=(4, 2))
        for j in range(12):
            assert np.all(np.isfinite(server.client(j).predict(Xq)))
        replay = Server(0.4, LAM, server.kernel, server.task_kernel, fit_intercept=True, capacity=8)
        for task, x, y, w in accepted:                          # the refused sends changed nothing
            replay.client(task).send(x, y, w)
        assert_same_state(server, replay)
        server.save(tmp_path / "s.npz")
        loaded = Server.load(tmp_path / "s.npz")
        assert_same_state(loaded, server)
        assert loaded.disclosure == "predictions" and loaded.n_received == server.n_received
