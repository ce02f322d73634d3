"""What a client of the mixed-effect server can learn about the other clients (docs/privacy.md).

* ``disclosure='database'`` (the thesis's design): from the disclosed x̌, b, G and its own data, a
  client solves for the inputs, outputs and weights of every other task whose inputs no third
  task shares — exactly (the reconstruction below succeeds to 1e-9).
* ``disclosure='predictions'``: the client receives only its own task's predictions. Two worlds
  whose other clients differ in their task partition, outputs and individual-kernel coupling give
  it identical predictions (to 1e-10), so neither can be solved for; what predictions still reveal
  (the common function ḡ, hence the outputs of a lone other client whose inputs and weights the
  attacker already knows) is shown too.
"""

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np
import pytest

from jaxmtl.errors import ParameterError
from jaxmtl.kernels import Gaussian
from jaxmtl.mixed_effect import Server

ALPHA, LAM, S_BAR, S_TIL = 0.5, 0.08, 1.3, 0.6


def gauss(A, B, s):
    return np.exp(-((A[:, None, :] - B[None, :, :]) ** 2).sum(-1) / (2 * s * s))


def gram(X1, t1, X2, t2):
    """(5.5): α K̄ + (1 − α)[t = t'] K̃."""
    return ALPHA * gauss(X1, X2, S_BAR) + (1 - ALPHA) * (t1[:, None] == t2[None, :]) * gauss(X1, X2, S_TIL)


def world(seed=0):
    """The attacker 'me' (5 examples) and two other clients with inputs of their own."""
    rng = np.random.default_rng(seed)
    data = {"me": (rng.normal(size=(5, 2)), rng.normal(size=5), np.ones(5)),
            "alice": (rng.normal(size=(4, 2)) + 2.0, rng.normal(size=4), rng.uniform(0.5, 2.0, 4)),
            "bob": (rng.normal(size=(3, 2)) - 2.0, rng.normal(size=3), rng.uniform(0.5, 2.0, 3))}
    return data, rng


def serve(data, disclosure):
    server = Server(ALPHA, LAM, Gaussian(S_BAR), Gaussian(S_TIL), disclosure=disclosure)
    for task, (X, y, w) in data.items():
        for i in range(len(y)):
            server.client(task).send(X[i], y[i], w[i])
    return server


def reconstruct(db, X_me, y_me, w_me):
    """The attack: what 'me' computes from the disclosed database and its own data.

    Its own R = [(1 − α)K̃ + λW]⁻¹ removed from G and b leaves Σ over the other tasks; the support
    of that matrix splits into one block per task whose inputs no third task shares; in each
    block R recovers the weights (R⁻¹ = (1 − α)K̃ + λW) and R⁻¹b the outputs.
    """
    R_me = np.linalg.inv((1 - ALPHA) * gauss(X_me, X_me, S_TIL) + LAM * np.diag(w_me))
    pos = [int(np.flatnonzero((db.X == x).all(1))[0]) for x in X_me]
    G, b = db.G.copy(), db.b.copy()
    G[np.ix_(pos, pos)] -= R_me
    b[pos] -= R_me @ y_me
    support = np.abs(G) > 1e-12 * np.abs(G).max()
    left, found = set(range(len(b))) - set(pos), []
    while left:                                          # connected components of the support
        block, frontier = set(), {min(left)}
        while frontier:
            block |= frontier
            frontier = {j for i in frontier for j in np.flatnonzero(support[i])} - block
        h = sorted(block)
        left -= block
        M = np.linalg.inv(G[np.ix_(h, h)])
        X = db.X[h]
        found.append((X, M @ b[h], (np.diag(M) - (1 - ALPHA)) / LAM))
    return found


def test_the_disclosed_database_reveals_other_clients_data_exactly():
    data, _ = world()
    server = serve(data, "database")
    found = reconstruct(server.disclosed(), *data["me"])
    assert len(found) == 2
    for name in ("alice", "bob"):
        X, y, w = data[name]
        (Xr, yr, wr), = [f for f in found if len(f[0]) == len(X) and np.allclose(np.sort(f[0], 0), np.sort(X, 0))]
        order = [int(np.flatnonzero((Xr == x).all(1))[0]) for x in X]
        np.testing.assert_array_equal(Xr[order], X)                    # inputs: exactly
        np.testing.assert_allclose(yr[order], y, rtol=0, atol=1e-9)   # outputs
        np.testing.assert_allclose(wr[order], w, rtol=0, atol=1e-9)   # weights


def two_worlds(seed=1):
    """World A: 'alice' sends inputs a, b. World B: 'carol' sends a and 'dave' sends b, with the
    outputs y_B = (K_B + λI) c_A that give every example the coefficient it has in world A."""
    rng = np.random.default_rng(seed)
    X_me, y_me = rng.normal(size=(5, 2)), rng.normal(size=5)
    X_o, y_a = rng.normal(size=(2, 2)) * 0.5, rng.normal(size=2)
    X = np.r_[X_me, X_o]
    t_a, t_b = np.array([0] * 5 + [1, 1]), np.array([0] * 5 + [2, 3])
    c_a = np.linalg.solve(gram(X, t_a, X, t_a) + LAM * np.eye(7), np.r_[y_me, y_a])
    y_b = (gram(X, t_b, X, t_b) + LAM * np.eye(7)) @ c_a
    np.testing.assert_allclose(y_b[:5], y_me, atol=1e-12)                # 'me' is the same in both
    A = {"me": (X_me, y_me, np.ones(5)), "alice": (X_o, y_a, np.ones(2))}
    B = {"me": (X_me, y_me, np.ones(5)), "carol": (X_o[:1], y_b[5:6], np.ones(1)),
         "dave": (X_o[1:], y_b[6:], np.ones(1))}
    return A, B, rng


def test_predictions_only_disclosure_hides_the_other_clients_partition_and_outputs():
    A, B, rng = two_worlds()
    assert np.abs(A["alice"][1] - np.r_[B["carol"][1], B["dave"][1]]).max() > 0.05
    Xq = np.r_[rng.normal(size=(20, 2)), A["me"][0], A["alice"][0]]
    views = []
    for data in (A, B):
        server = serve(data, "predictions")
        with pytest.raises(ParameterError, match="disclosure='predictions'"):
            server.disclosed()
        views.append(server.client("me").predict_parts(Xq))
    for part_a, part_b in zip(*views):                   # everything 'me' can ask for is the same
        np.testing.assert_allclose(part_a, part_b, rtol=0, atol=1e-10)
    # the same two worlds told apart, and world A's other client recovered, from the database
    dbs = [serve(data, "database").disclosed() for data in (A, B)]
    assert np.abs(dbs[0].G - dbs[1].G).max() > 1e-3
    (Xr, yr, _), = reconstruct(dbs[0], *A["me"])
    order = [int(np.flatnonzero((Xr == x).all(1))[0]) for x in A["alice"][0]]
    np.testing.assert_allclose(yr[order], A["alice"][1], atol=1e-9)
    assert len(reconstruct(dbs[1], *B["me"])) == 2


def test_what_predictions_still_reveal_a_lone_clients_outputs_given_its_inputs():
    """Not protected: predictions are linear in all outputs. An attacker who knows the inputs and
    weights of the only other client solves its outputs from its own predictions."""
    data, rng = world(2)
    del data["bob"]
    server = serve(data, "predictions")
    (X_me, y_me, w_me), (X_a, y_a, w_a) = data["me"], data["alice"]
    X, t = np.r_[X_me, X_a], np.array([0] * 5 + [1] * 4)
    Q = rng.normal(size=(30, 2)) + 1.0
    seen = server.client("me").predict(Q)
    S = gram(Q, np.zeros(30, int), X, t) @ np.linalg.inv(gram(X, t, X, t) + LAM * np.diag(np.r_[w_me, w_a]))
    y_rec = np.linalg.lstsq(S[:, 5:], seen - S[:, :5] @ y_me, rcond=None)[0]
    np.testing.assert_allclose(y_rec, y_a, rtol=0, atol=1e-6)


def test_two_downloads_around_one_send_reveal_it():
    """With the database disclosed, a client that downloads before and after another client's
    first send reads off its input (the new row of x̌), output and weight."""
    data, rng = world(3)
    server = serve(data, "database")
    before = server.disclosed()
    x, y, w = rng.normal(size=2) + 5.0, 0.7, 1.6
    server.client("newcomer").send(x, y, w)
    after = server.disclosed()
    new = len(before.b)
    np.testing.assert_array_equal(after.X[new], x)
    dG, db = after.G[new, new], after.b[new]
    assert abs(db / dG - y) < 1e-12 and abs((1 / dG - (1 - ALPHA)) / LAM - w) < 1e-9
