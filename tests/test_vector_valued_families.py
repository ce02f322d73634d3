"""VectorValuedRegressor's families: per-output selection against brute-force per-output refits,
the choice between the independent and the coupled (A_ω) family, and bad family input."""

import os
import tempfile

import jax
import numpy as np
import pytest
from conftest import FLOAT32_PROMISE, X64

from jaxmtl import Gaussian, Laplacian, VectorValuedRegressor, load, save
from jaxmtl.errors import ParameterError
from jaxmtl.models._task_folds import N_PARTS, validation_parts
from jaxmtl.selection import kfold_masks

# against the float64 references: float64 tightly, float32 (JAXMTL_TEST_PRECISION) to its promise;
# a chosen width to its storage precision
RTOL, ATOL = (1e-6, 1e-8) if X64 else (FLOAT32_PROMISE["rtol"], FLOAT32_PROMISE["atol"])
WIDTH_RTOL = 1e-10 if X64 else 1e-6


def _outputs(n, functions, noise, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n, 1))
    Y = np.stack([f(X[:, 0]) for f in functions], axis=1)
    return X, Y + np.resize(noise, len(functions)) * rng.normal(size=Y.shape)


def _gram(A, B, w):
    return np.exp(-(A - B.T) ** 2 / (2 * w**2))


def _row_errors(X, Y, masks, widths, lambdas):
    """(d, W, L, k, n) squared errors of every held-out row of every fold (0 on training rows), by
    explicit loops over outputs, widths, λ and folds of dense Tikhonov solves (K + n λ I) c = y − mean
    on the fold's training rows."""
    Y = Y - Y.mean(axis=0)
    err = np.zeros((Y.shape[1], len(widths), len(lambdas)) + masks.shape)
    for j in range(Y.shape[1]):
        for i, w in enumerate(widths):
            for l, lam in enumerate(lambdas):
                for f, tr in enumerate(masks):
                    te, mu = ~tr, Y[tr, j].mean()
                    c = np.linalg.solve(_gram(X[tr], X[tr], w) + tr.sum() * lam * np.eye(tr.sum()), Y[tr, j] - mu)
                    err[j, i, l, f, te] = (_gram(X[te], X[tr], w) @ c + mu - Y[te, j]) ** 2
    return err


def _fold_loss(err, masks):
    """(…,) the loss of errors (…, k, n): per fold the sum over held-out rows over their count, averaged."""
    return (err.sum(axis=-1) / (~masks).sum(axis=1)).mean(axis=-1)


def _null_errors(Y, masks):
    """(d, k, n) squared errors of each fold's training mean on its held-out rows (0 on training rows)."""
    err = np.zeros((Y.shape[1],) + masks.shape)
    for f, tr in enumerate(masks):
        err[:, f, ~tr] = ((Y[~tr] - Y[tr].mean(axis=0)) ** 2).T
    return err


def _by_part(err, masks, part, parts=range(N_PARTS)):
    """(V',) the loss of errors (k, n) on each of the parts ``parts`` of the held-out rows."""
    return np.array([_fold_loss(np.where(part == v, err, 0.0), masks) for v in parts])


def _keeps_mean(best, null):
    """The paired one-standard-error rule on per-part losses: the best's mean lead over the mean
    predictor at most the standard error of the lead."""
    lead = null - best
    return lead.mean() <= lead.std(ddof=1) / np.sqrt(len(lead))


def _factors_widths(X, factors):
    d = np.abs(X - X.T)[np.triu_indices(len(X), 1)]
    return np.median(d) * factors


FACTORS, LAMBDAS = np.array([0.5, 1.0, 2.0]), np.array([1e-1, 1e-2, 1e-3])
# n_repeats=None: ⌈1000 / n⌉ shuffles of the k-fold partition, at most 3 — 3 at every n of these tests
REPEATS = 3
FUNCTIONS = [np.sin, lambda x: x**2, lambda x: np.cos(3 * x)]


def test_per_output_selection_equals_brute_force_refits():
    X, Y = _outputs(30, FUNCTIONS, [0.1, 0.3, 0.05], 0)
    model = VectorValuedRegressor(filter="tikhonov", n_folds=3, family="independent", width_factors=FACTORS,
                                  lambdas=LAMBDAS, normalize_y=False).fit(X, Y)
    masks, widths = kfold_masks(len(X), 3, 0, REPEATS), _factors_widths(X, FACTORS)
    loss = _fold_loss(_row_errors(X, Y, masks, widths, LAMBDAS), masks)  # (d, W, L)
    X_new = np.linspace(-2, 2, 7)[:, None]
    pred = model.predict(X_new)
    for j in range(Y.shape[1]):
        i, l = np.unravel_index(np.argmin(loss[j]), loss[j].shape)
        np.testing.assert_allclose(model.output_widths_[j], widths[i], rtol=WIDTH_RTOL)
        np.testing.assert_allclose(model.output_params_[j], LAMBDAS[l], rtol=WIDTH_RTOL)
        c = np.linalg.solve(_gram(X, X, widths[i]) + len(X) * LAMBDAS[l] * np.eye(len(X)), Y[:, j] - Y[:, j].mean())
        np.testing.assert_allclose(pred[:, j], _gram(X_new, X, widths[i]) @ c + Y[:, j].mean(), rtol=RTOL, atol=ATOL)
    # the family's loss in the coupled family's units: the mean over outputs
    np.testing.assert_allclose(model.best_score_, loss.reshape(3, -1).min(axis=1).mean(), rtol=RTOL)
    # scaling the outputs (normalize_y) changes no output's choice, nor the predictions
    scaled = VectorValuedRegressor(filter="tikhonov", n_folds=3, family="independent", width_factors=FACTORS,
                                   lambdas=LAMBDAS).fit(X, Y)
    np.testing.assert_allclose(scaled.output_widths_, model.output_widths_, rtol=1e-12)
    np.testing.assert_allclose(scaled.output_params_, model.output_params_, rtol=1e-12)
    np.testing.assert_allclose(scaled.predict(X_new), pred, rtol=RTOL, atol=ATOL)


def _parts(masks, seed):
    return validation_parts(masks, np.zeros(masks.shape[1], int), N_PARTS, seed)


def _nested_loss(err, masks, seed, null):
    """The cross-fitted loss of errors (d, W, L, k, n): each output's held-out rows dealt to
    N_PARTS parts; per part, the (width, λ) of least loss on the other parts scores it — or the
    mean predictor (errors ``null`` (d, k, n)) where the rule keeps it on the other parts; the
    mean over outputs. Explicit loops over outputs and parts."""
    part = _parts(masks, seed)
    expected = 0.0
    for j in range(len(err)):
        for v in range(N_PARTS):
            rest = _fold_loss(np.where((part >= 0) & (part != v), err[j], 0.0), masks)
            i, l = np.unravel_index(np.argmin(rest), rest.shape)
            others = [u for u in range(N_PARTS) if u != v]
            kept = _keeps_mean(_by_part(err[j, i, l], masks, part, others), _by_part(null[j], masks, part, others))
            expected += _fold_loss(np.where(part == v, null[j] if kept else err[j, i, l], 0.0), masks) / len(err)
    return expected


def test_cross_fitted_family_loss_equals_explicit_nested_selection():
    X, Y = _outputs(30, FUNCTIONS, 0.3, 6)
    model = VectorValuedRegressor(filter="tikhonov", n_folds=3, family="independent", width_factors=FACTORS,
                                  lambdas=LAMBDAS, normalize_y=False, random_state=3).fit(X, Y)
    masks = kfold_masks(len(X), 3, 3, REPEATS)
    err = _row_errors(X, Y, masks, _factors_widths(X, FACTORS), LAMBDAS)
    np.testing.assert_allclose(model.family_scores_["independent"], _nested_loss(err, masks, 3, _null_errors(Y, masks)),
                               rtol=RTOL)


def test_an_output_without_signal_keeps_its_training_mean():
    """Output 1 is noise: its best (width, λ) does not beat its mean predictor by one standard
    error paired over the parts of its held-out rows, so it keeps C = 0 (λ = ∞) and predicts its
    training mean; output 0 keeps its model. Against explicit loops over outputs and parts."""
    X, Y = _outputs(30, [np.sin, lambda x: 0 * x], [0.1, 1.0], 0)
    model = VectorValuedRegressor(filter="tikhonov", n_folds=3, family="independent", width_factors=FACTORS,
                                  lambdas=LAMBDAS, normalize_y=False).fit(X, Y)
    masks = kfold_masks(len(X), 3, 0, REPEATS)
    err, null = _row_errors(X, Y, masks, _factors_widths(X, FACTORS), LAMBDAS), _null_errors(Y, masks)
    part, losses = _parts(masks, 0), _fold_loss(err, masks)  # (d, W, L)
    kept = []
    for j in range(2):
        i, l = np.unravel_index(np.argmin(losses[j]), losses[j].shape)
        kept.append(_keeps_mean(_by_part(err[j, i, l], masks, part), _by_part(null[j], masks, part)))
    assert kept == [False, True]  # the premise: output 1 has no signal the rule can see
    assert np.isfinite(model.output_params_[0]) and model.output_params_[1] == np.inf
    assert np.all(np.asarray(model.coef_)[:, 1] == 0) and np.any(np.asarray(model.coef_)[:, 0] != 0)
    X_new = np.linspace(-2, 2, 7)[:, None]
    np.testing.assert_allclose(model.predict(X_new)[:, 1], np.full(7, Y[:, 1].mean()), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(model.best_score_, np.mean([losses[0].min(), _fold_loss(null[1], masks)]), rtol=RTOL)
    np.testing.assert_allclose(model.family_scores_["independent"], _nested_loss(err, masks, 0, null), rtol=RTOL)


def test_default_width_search_on_a_subsample_as_the_coupled_family():
    """Above 512 rows (where it costs less than all rows) each output's default width grid is
    searched on the coupled family's random 400-row subsample (its folds there), extended past an
    edge or refined × 2^±1 around the best; then its best × 2^-1, 1, 2^1 on all rows, where width,
    λ and both family losses are taken."""
    n, seed = 600, 4
    X, Y = _outputs(n, FUNCTIONS[:2], [0.1, 0.3], 7)
    model = VectorValuedRegressor(filter="tikhonov", n_folds=3, family="independent", lambdas=LAMBDAS,
                                  normalize_y=False, random_state=seed).fit(X, Y)
    rows = np.sort(np.random.default_rng(seed).choice(n, 400, replace=False))
    sub_masks, masks = kfold_masks(400, 3, seed, REPEATS), kfold_masks(n, 3, seed, model._n_repeats(n))
    grid = _factors_widths(X, 4.0 ** np.arange(-2, 4))  # the default grid, from all rows' median distance
    sub_err = _row_errors(X[rows], Y[rows], sub_masks, grid, LAMBDAS)
    X_new = np.linspace(-2, 2, 7)[:, None]
    pred, losses, errors = model.predict(X_new), [], []
    for j in range(Y.shape[1]):
        sub = _fold_loss(sub_err[j], sub_masks).min(axis=1)  # (W,)
        best = grid[np.argmin(sub)]
        extra = best * (np.array([1 / 16, 1 / 4]) if best == grid.min() else
                        np.array([4.0, 16.0]) if best == grid.max() else np.array([0.5, 2.0]))
        tried = np.r_[grid, extra]
        more = _fold_loss(_row_errors(X[rows], Y[rows][:, [j]], sub_masks, extra, LAMBDAS)[0], sub_masks).min(axis=1)
        widths = tried[np.argmin(np.r_[sub, more])] * np.array([0.5, 1.0, 2.0])
        err = _row_errors(X, Y[:, [j]], masks, widths, LAMBDAS)  # (1, 3, L, k, n)
        loss = _fold_loss(err[0], masks)
        i, l = np.unravel_index(np.argmin(loss), loss.shape)
        np.testing.assert_allclose(model.output_widths_[j], widths[i], rtol=WIDTH_RTOL)
        np.testing.assert_allclose(model.output_params_[j], LAMBDAS[l], rtol=WIDTH_RTOL)
        c = np.linalg.solve(_gram(X, X, widths[i]) + n * LAMBDAS[l] * np.eye(n), Y[:, j] - Y[:, j].mean())
        np.testing.assert_allclose(pred[:, j], _gram(X_new, X, widths[i]) @ c + Y[:, j].mean(), rtol=RTOL, atol=ATOL)
        losses.append(loss.min())
        errors.append(err[0])
    np.testing.assert_allclose(model.best_score_, np.mean(losses), rtol=RTOL)
    np.testing.assert_allclose(model.family_scores_["independent"],
                               _nested_loss(np.stack(errors), masks, seed, _null_errors(Y, masks)), rtol=RTOL)


def test_family_selection_independent_and_shared_outputs():
    # outputs of their own length scale, level and noise: one width and step count for all is worse
    X, Y = _outputs(120, [lambda x: 3 * np.sin(5 * x), lambda x: 0.3 * x + 5, lambda x: np.cos(x / 2)],
                    [0.1, 0.5, 0.02], 2)
    m = VectorValuedRegressor(omegas=[0.0, 0.5, 1.0]).fit(X, Y)
    assert m.family_ == "independent", m.family_scores_
    assert m.output_widths_[0] < m.output_widths_[2]
    # the same function observed with independent noise: coupling averages the noise away
    X, Y = _outputs(40, [np.sin] * 4, 0.3, 2)
    m = VectorValuedRegressor(omegas=[0.0, 0.5, 1.0]).fit(X, Y)
    assert m.family_ == "common_similarity", m.family_scores_
    assert m.best_params_["omega"] >= 0.5
    assert set(m.family_scores_) == {"independent", "common_similarity"}


def test_independent_family_reaches_lambdas_below_the_shared_floor_on_noiseless_outputs():
    # every output shares all n rows: its λ grid continues the coupled family's [1e-6, 1] at the same
    # ratio down to float32's resolution (output_lambdas, in both precisions); noiseless smooth
    # outputs choose λ there, and the refit is the dense Tikhonov solve (K + n λ I) c = y − mean at
    # the chosen width and λ
    from jaxmtl.models._per_task import output_lambdas

    X, Y = _outputs(60, [np.sin, lambda x: np.cos(2 * x)], 0.0, 5)
    m = VectorValuedRegressor(family="independent", dtype="float64").fit(X, Y)
    grid = output_lambdas()
    assert np.allclose(grid[:30], np.geomspace(1.0, 1e-6, 30), rtol=1e-12)
    assert np.finfo(np.float32).eps / 10 <= grid[-1] < 1.3 * np.finfo(np.float32).eps / 10
    assert all(np.any(np.isclose(lam, grid, rtol=1e-12)) for lam in m.output_params_)
    assert np.all(m.output_params_ < 1e-6), m.output_params_
    Z = np.linspace(-1.9, 1.9, 7)[:, None]
    for j, (w, lam) in enumerate(zip(m.output_widths_, m.output_params_)):
        mu = Y[:, j].mean()
        c = np.linalg.solve(_gram(X, X, w) + len(X) * lam * np.eye(len(X)), Y[:, j] - mu)
        # c itself agrees only to ~ε·‖K‖/(nλ) (up to 10⁻⁸ relative)
        np.testing.assert_allclose(m.predict(Z)[:, j], _gram(Z, X, w) @ c + mu, rtol=1e-6, atol=1e-6)


def test_independent_family_persists_and_gives_a_per_output_predictor():
    # the shapes and settings of test_independent_family_float32's fits (their programs are shared)
    X, Y = _outputs(40, FUNCTIONS, 0.1, 1)
    m = VectorValuedRegressor(family="independent", n_steps=60).fit(X, Y)
    assert m.kernel_ is None and m.family_scores_.keys() == {"independent"}
    path = os.path.join(tempfile.mkdtemp(), "model.npz")
    save(m, path)
    np.testing.assert_array_equal(load(path).predict(X), m.predict(X))
    f = m.predictor()  # a width per output, as a pytree: jit, and gradients through the widths
    assert type(f).__name__ == "PerOutputPredictor"
    # two summation orders of Σᵢ K(x, xᵢ) cᵢ (the predictor at once, predict in row blocks): in float32
    # their roundoff grows with Σ|c|, which a 60-step path on 40 rows makes large
    atol = ATOL if X64 else max(ATOL, 64 * np.finfo(np.float32).eps * float(np.abs(np.asarray(f.coef)).sum(axis=0).max()
                                                                           * np.abs(np.asarray(f.output_matrix)).max()))
    np.testing.assert_allclose(jax.jit(lambda model, x: model(x))(f, X), m.predict(X), rtol=RTOL, atol=atol)
    np.testing.assert_allclose(f(X[0]), m.predict(X[:1])[0], rtol=RTOL, atol=atol)
    # each column is a Gaussian-kernel expansion with its own width: the dense sum, column by column
    Xc = X - (0 if f.input_offset is None else np.asarray(f.input_offset))
    Xf = np.asarray(f.X_fit)
    for j, w in enumerate(np.asarray(f.widths)):
        G = np.exp(-((Xc[:, None] - Xf[None]) ** 2).sum(-1) / (2 * w**2))
        c, s, b = np.asarray(f.coef)[:, j], np.asarray(f.output_matrix)[j, j], np.asarray(f.offset)[j]
        size = np.abs(G) @ np.abs(c) * abs(s) + abs(b)  # rounding of the sum scales with its terms
        assert np.all(np.abs(m.predict(X)[:, j] - (G @ c * s + b)) <= RTOL * size + ATOL)
    grad = jax.grad(lambda model: model(X).sum())(f)
    assert grad.widths.shape == (Y.shape[1],) and np.all(np.isfinite(grad.widths))
    one = VectorValuedRegressor(n_steps=60).fit(X, Y[:, 0])  # a single output: the families coincide
    assert one.family_ == "common_similarity" and one.predict(X).shape == (40,)


def test_independent_family_float32():
    X, Y = _outputs(40, FUNCTIONS, 0.05, 3)
    with jax.enable_x64(False):
        m = VectorValuedRegressor(family="independent", n_steps=60).fit(X.astype(np.float32), Y.astype(np.float32))
        pred = m.predict(X.astype(np.float32))
    assert m.coef_.dtype == np.float32 and np.all(np.isfinite(pred))
    assert np.all(np.mean((pred - Y) ** 2, axis=0) < 0.1 * np.var(Y, axis=0))
    # like with like: one λ grid that both precisions resolve (the default's runs below float32's
    # resolution in float64, and below ~1e-6 float32's validation losses differ by round-off)
    lambdas = np.geomspace(1e-6, 1.0, 30)
    with jax.enable_x64(False):
        m = VectorValuedRegressor(family="independent", n_steps=60, lambdas=lambdas).fit(X.astype(np.float32),
                                                                                          Y.astype(np.float32))
        pred = m.predict(X.astype(np.float32))
    f64 = VectorValuedRegressor(family="independent", n_steps=60, lambdas=lambdas, dtype="float64").fit(X, Y)
    np.testing.assert_allclose(m.output_params_, f64.output_params_, rtol=1e-6)
    # two outputs select λ = 1e-6 with wide kernels (K + nλI conditioned near 1e6): float32's promise
    # for predictions, relative to the outputs' scale (1.04e-3 of it measured on an AMD EPYC)
    np.testing.assert_allclose(pred, f64.predict(X), atol=FLOAT32_PROMISE["rtol"] * np.abs(Y).max())


def test_family_arguments_checked_before_fitting():
    X, Y = _outputs(12, FUNCTIONS[:2], 0.05, 5)
    bad = np.full_like(X, np.nan)  # the family is refused before the inputs are even read
    with pytest.raises(ParameterError, match=r"family must be one of .*'independent'.*received 'shared'"):
        VectorValuedRegressor(family="shared").fit(bad, Y)
    for kwargs, match in [({"selection": "loo"}, "selects on folds.*'loo'"),
                          ({"kernel": Laplacian(1.0)}, "Gaussian kernel per output"),
                          ({"output": "independent"}, "output must be 'common_similarity'"),
                          ({"approximation": "nystrom"}, "approximation must be None"),
                          ({"search": "gradient"}, "search must be 'grid'")]:
        with pytest.raises(ParameterError, match=match):
            VectorValuedRegressor(family="independent", **kwargs).fit(bad, Y)
        if "kernel" not in kwargs and "search" not in kwargs:  # 'auto' keeps the coupled family there
            assert VectorValuedRegressor(n_steps=10, **kwargs).fit(X, Y).family_ == "common_similarity"
    m = VectorValuedRegressor(kernel=Gaussian(1.0), n_steps=10, family="independent").fit(X, Y)
    np.testing.assert_array_equal(m.output_widths_, [1.0, 1.0])


def test_padding_widths_of_a_scoring_batch_are_skipped():
    """task_fold_losses scores the active widths of a batch exactly as a batch of only active
    widths does (against the brute-force held-out errors of dense solves), and holds inf for the
    skipped ones (the padding of the last batch, which costs no eigendecomposition)."""
    from jaxmtl.filters.spectral import get_filter
    from jaxmtl.models._fold_losses import fold_gathers, task_fold_losses

    X, Y = _outputs(24, FUNCTIONS[:1], 0.1, 1)
    masks = kfold_masks(len(X), 3, 0)
    widths = _factors_widths(X, FACTORS[:2])
    part = _parts(masks, 0)
    parts = (part[..., None] == np.arange(N_PARTS))[:, None]
    data = (X[None], Y[None], fold_gathers(masks[:, None], np.ones((1, len(X)), bool), parts, masks))
    out = np.asarray(task_fold_losses(widths[:, None], np.array([True, False]), *data, get_filter("tikhonov"),
                                      LAMBDAS))  # (W, T, k, P, d, V)
    assert np.isinf(out[1]).all()
    err = _row_errors(X, Y, masks, widths, LAMBDAS)[0]  # (W, L, k, n), Y centred on its overall mean
    Yc = Y - Y.mean(axis=0)
    ref = np.array([[[np.sum(err[0, l, f][part[f] == v]) for v in range(N_PARTS)] for l in range(len(LAMBDAS))]
                    for f in range(len(masks))])  # (k, L, V)
    np.testing.assert_allclose(out[0, 0, :, :, 0], ref, rtol=RTOL, atol=ATOL * np.mean(Yc**2))


def test_either_family_predicts_through_one_program(programs):
    """Where both families were candidates, a fit predicts with either through one program: after a
    fit that kept the coupled family has predicted, one of the same bucket that keeps the per-output
    family predicts without compiling (the later folds of a cross-validation), and each equals its
    family's formula — K(X, X_fit) C A, or each output's own Gaussian — computed here in NumPy."""
    def _gaussian(A, B, w):
        return np.exp(-((A[:, None, :] - B[None, :, :]) ** 2).sum(-1) / (2 * w**2))

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    shared = np.c_[np.sin(X[:, 0]), np.sin(X[:, 0])] + 0.3 * rng.normal(size=(60, 2))
    separate = np.c_[np.sin(4 * X[:, 0]), X[:, 1] ** 2] + 0.05 * rng.normal(size=(60, 2))
    X_new = rng.normal(size=(9, 2))
    coupled = VectorValuedRegressor(n_folds=3).fit(X, shared)
    own = VectorValuedRegressor(n_folds=3).fit(X[:58], separate[:58])  # the same size bucket
    assert (coupled.family_, own.family_) == ("common_similarity", "independent")
    first = coupled.predict(X_new)
    before = programs.count
    second = own.predict(X_new)
    assert programs.count == before

    def check(got, terms, A, offset):  # terms (d, m, n): the products K(x, x_i) c_ij of each output
        ref = terms.sum(axis=2).T @ A + offset
        if X64:
            np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)
        else:  # small λ's coefficients cancel in float32: within its rounding of the sums' terms
            assert np.all(np.abs(got - ref) <= 1e-4 * (np.abs(terms).sum(axis=2).T @ np.abs(A)) + ATOL)

    C, A = np.asarray(coupled.coef_, np.float64), np.asarray(coupled.output_matrix_, np.float64)
    K = _gaussian(X_new, X, float(coupled.kernel_.sigma))
    check(first, np.stack([K * C[:, j] for j in range(2)]), A, coupled.y_mean_)
    C, A = np.asarray(own.coef_, np.float64), np.asarray(own.output_matrix_, np.float64)
    check(second, np.stack([_gaussian(X_new, X[:58], w) * C[:, j] for j, w in enumerate(own.output_widths_)]), A,
          own.y_mean_)
