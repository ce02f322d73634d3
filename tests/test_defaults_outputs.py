"""The output-count part of ``benchmarks/defaults_vs_tuned.py``: its splits, its synthetic sets, its
baselines (against scikit-learn's own per-output search) and one row of its table."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import _defaults_outputs as part  # noqa: E402


def test_sarcos_splits_have_disjoint_test_sets_and_the_stated_sizes():
    splits = list(part.sarcos_splits())
    assert len(splits) == 3
    seen = []
    for Xtr, Ytr, Xte, Yte in splits:
        assert Xtr.shape == (3000, 21) and Ytr.shape == (3000, 7) and Xte.shape == (1449, 21) and Yte.shape == (1449, 7)
        rows = {tuple(x) for x in Xte}
        assert not rows & {tuple(x) for x in Xtr}  # the inputs are distinct: no test row in training
        assert all(not rows & s for s in seen)
        seen.append(rows)
    with pytest.raises(ValueError, match="disjoint test sets"):
        list(part.sarcos_splits(3000, 4))


def test_synthetic_sets_share_or_not_as_stated():
    rng = np.random.default_rng(0)
    for d in (5, 20):
        X, Y = part.many_outputs(d, True)(rng, 3000)
        assert X.shape == (3000, 5) and Y.shape == (3000, d) and np.all(np.abs(X) <= 1)
        C = np.corrcoef(Y.T)
        assert C[~np.eye(d, dtype=bool)].min() > 0.5  # one common function: every pair correlated
        C = np.corrcoef(part.many_outputs(d, False)(rng, 3000)[1].T)
        pairs = C[~np.eye(d, dtype=bool)]  # own functions: correlated by chance only, either sign
        assert abs(pairs.mean()) < 0.05 and np.abs(pairs).mean() < 0.2
    # the same seed is the same problem: a new draw of rows from the same functions
    a, b = part.many_outputs(5, True, seed=3), part.many_outputs(5, True, seed=3)
    np.testing.assert_array_equal(a(np.random.default_rng(1), 10)[1], b(np.random.default_rng(1), 10)[1])


def test_per_output_baseline_is_scikit_learns_search_on_each_output():
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(1)
    X, Y = part.many_outputs(3, False, seed=1)(rng, 80)
    Y = Y * np.array([1.0, 10.0, 0.1]) + np.array([5.0, -3.0, 0.0])
    per_output, joint, params = part._baselines(X[:60], Y[:60], X[60:])
    grid = {"kernelridge__alpha": part.KR_ALPHAS, "kernelridge__gamma": part.KR_GAMMA_FACTORS / X.shape[1]}
    for j in range(3):  # each output on its own: standardised, searched by neg. MSE, refitted
        mean, sd = Y[:60, j].mean(), Y[:60, j].std()
        ref = GridSearchCV(make_pipeline(StandardScaler(), KernelRidge(kernel="rbf")), grid, cv=5,
                           scoring="neg_mean_squared_error").fit(X[:60], (Y[:60, j] - mean) / sd)
        assert params[j] == ref.best_params_
        np.testing.assert_allclose(per_output[:, j], ref.predict(X[60:]) * sd + mean, rtol=1e-8, atol=1e-8)
    assert joint.shape == (20, 3)


@pytest.mark.long
def test_a_row_of_the_table_is_the_paired_difference_of_its_errors():
    row = part.compare("tiny", part.synthetic_splits(5, True, 60, 40, 2))
    assert row["d"] == 5 and row["n_train"] == 60 and row["n_test"] == 40 and row["splits"] == 2
    assert len(row["families"]) == 2 and len(row["split_smse"]) == 2
    better = min(row["per_output_smse"], row["joint_smse"])
    assert row[f"{row['better_baseline']}_smse"] == better
    # the splits' test sets are the same size: the pooled mean is the mean of the split means
    for key in ("ours", "per_output", "joint"):
        assert row[f"{key}_smse"] == pytest.approx(np.mean([s[key] for s in row["split_smse"]]))
    assert row["diff"] == pytest.approx(row["ours_smse"] - better)
    assert row["diff_se"] > 0 and row["within_se"] == (row["diff"] <= row["diff_se"])
    assert 0 < row["ours_smse"] < 2 and row["ratio_to_better"] == pytest.approx(row["ours_smse"] / better)
    # per split and output the default's width and parameter beside the search's α and γ, the latter
    # also as KernelRidge's width 1/√(2γ) and λ = α/n of the default's units
    assert len(row["choices"]) == 2
    for c in row["choices"]:
        assert all(len(v) == 5 for v in c.values())
        assert set(c["kr_alpha"]) <= set(part.KR_ALPHAS) and set(c["kr_gamma"]) <= set(part.KR_GAMMA_FACTORS / 5)
        np.testing.assert_allclose(c["kr_lambda"], np.array(c["kr_alpha"]) / 60, rtol=1e-12)
        np.testing.assert_allclose(np.exp(-1 / (2 * np.array(c["kr_width"]) ** 2)), np.exp(-np.array(c["kr_gamma"])),
                                   rtol=1e-12)
        assert np.all(np.array(c["width"]) > 0) and np.all(np.array(c["param"]) > 0)
