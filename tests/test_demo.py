"""The README's main job runs end to end on bundled data, and says what each model was trained on."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp
import numpy as np
import pytest

from _reference import gaussian_gram
from jaxmtl import Gaussian, Tikhonov, VectorValuedRegressor
from jaxmtl.datasets import load_school
from jaxmtl.demo import main, school_split
from jaxmtl.errors import ParameterError
from jaxmtl.kernels import knn_width
from jaxmtl.operators import max_eigenvalue


def test_default_demo_is_the_school_protocol_trained_on_the_training_set(capsys):
    result = main([])
    out = capsys.readouterr().out
    n = result["n_train"]
    assert f"trained on the {n} training students" in out
    assert f"refit on training + validation ({2 * n} students)" in out
    assert result["n_validation"] == n and result["refit_n_train"] == 2 * n
    # the paper's-protocol model recomputed densely: Q_ω built entry-wise, the ν-method as a loop
    data = load_school()
    tr, _, te = school_split(data.tasks, np.random.default_rng(0))
    w, om, t = knn_width(data.X[tr], int(0.2 * len(tr))), result["omega"], result["param"]
    same = lambda a, b: data.tasks[a][:, None] == data.tasks[b][None, :]
    Q = gaussian_gram(data.X[tr], data.X[tr], w) * (om + (1 - om) * same(tr, tr))
    ym = data.y[tr].mean()
    y = (data.y[tr] - ym)[:, None]
    N = len(tr)
    tau = 1.0 / float(max_eigenvalue(lambda C: jnp.asarray(Q) @ C / N, y.shape, jnp.float64))
    c = cp = np.zeros_like(y)
    for i in range(1, t + 1):  # ν = 1 ([BRBV11] §3.3)
        u = 0.0 if i == 1 else (i - 1) * (2 * i - 3) * (2 * i + 1) / ((i + 1) * (2 * i + 3) * (2 * i - 1))
        wi = 6 / 5 if i == 1 else 4 * (2 * i + 1) * i / ((i + 1) * (2 * i + 3))
        c, cp = c + u * (c - cp) + wi * tau / N * (y - Q @ c), c
    pred = (gaussian_gram(data.X[te], data.X[tr], w) * (om + (1 - om) * same(te, tr))) @ c[:, 0] + ym
    ev = 1 - np.mean((pred - data.y[te]) ** 2) / np.var(data.y[te])
    assert result["explained_variance"] == pytest.approx(ev, abs=1e-8)
    # one split of [BRBV11] §7.2; the paper reports 31 ± 3 % over 10 splits
    assert 0.25 < result["explained_variance"] < 0.40
    assert 0.0 <= result["omega"] <= 1.0 and 1 <= result["param"] <= 150


def test_help_reads_like_a_command_and_states_every_default(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m jaxmtl.demo")
    for option in ("--data", "--filter", "--seed", "--steps"):
        block = out.split(option + " ", 1)[1].split("\n  --", 1)[0]
        assert "default" in block, option
    with pytest.raises(SystemExit):
        main(["--steps", "0"])
    assert "--steps: expected a whole number >= 1; received '0'" in capsys.readouterr().err


def test_demo_runs_on_a_bundled_mulan_set(capsys):
    result = main(["--data", "slump"])
    out = capsys.readouterr().out
    assert "test R^2" in out and f"trained on          the {result['n_train']} training rows" in out
    assert np.isfinite(result["test_aRRMSE"]) and result["test_aRRMSE"] < 1.0
    assert ("one model per target" in out) == (result["family"] == "independent")


def test_predefined_validation_mask_scores_equal_one_refit_on_its_training_rows():
    """A boolean mask trains on its True rows and scores the others: Tikhonov's validation MSE of
    every λ recomputed by solving the training system; a different mask gives different scores."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    Y = np.sin(X[:, :1]) + 0.1 * rng.normal(size=(30, 1))
    lams = np.array([1e-1, 1e-2, 1e-3, 1e-4, 1e-5])
    scores = []
    for mask in (np.arange(30) < 20, np.arange(30) >= 10):
        model = VectorValuedRegressor(kernel=Gaussian(1.0), filter=Tikhonov(), lambdas=lams, selection=mask,
                                      omegas=[0.0]).fit(X, Y)
        K, Yc = gaussian_gram(X, X, 1.0), Y - Y.mean(0)
        tr, va = np.flatnonzero(mask), np.flatnonzero(~mask)
        ref = [np.mean((K[np.ix_(va, tr)] @ np.linalg.solve(K[np.ix_(tr, tr)] + len(tr) * lam * np.eye(len(tr)),
                                                             Yc[tr]) - Yc[va]) ** 2) for lam in model.path_params_]
        np.testing.assert_allclose(model.cv_scores_[0, 0], ref, rtol=1e-8)
        scores.append(model.cv_scores_[0, 0])
    assert not np.allclose(scores[0], scores[1])
    with pytest.raises(ParameterError, match="boolean"):
        VectorValuedRegressor(selection=np.arange(30)).fit(X, Y)
    with pytest.raises(ParameterError, match="training"):
        VectorValuedRegressor(selection=np.ones(30, bool)).fit(X, Y)
