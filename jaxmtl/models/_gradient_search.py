r"""``search="gradient"``: continuous hyperparameters learned by optax on a differentiable criterion.

The spectral estimators (:class:`~jaxmtl.VectorValuedRegressor`,
:class:`~jaxmtl.MultiClassClassifier`) select on a grid by default. With ``search="gradient"``
the grid's choice is the starting point and the continuous hyperparameters are then learned by
Adam (:func:`~jaxmtl.learning.minimize`) on a differentiable validation criterion
(:mod:`jaxmtl.learning.gradient`):

* the kernel's array hyperparameters — the Gaussian width, or one width per feature (ARD) when
  the kernel is built with a vector, ``Gaussian(np.ones(p))``; every positive leaf of any other
  kernel;
* ω of the common-similarity output family (when its grid has more than one value);
* the Tikhonov λ.

Criterion: the k-fold (hold-out, predefined masks) squared loss of the Tikhonov solution with
implicit gradients (:func:`~jaxmtl.learning.kfold_tikhonov_loss`), or closed-form LOO / GCV on the
eigen path (:func:`~jaxmtl.learning.eigen_criterion`) for ``selection='loo'`` / ``'gcv'``. Above
``GRADIENT_SUBSAMPLE`` rows the criterion is evaluated on a random subsample of that size.

Parametrisation (no clipping): each positive value is v₀·softplus(r) / softplus(r₀) with r₀ the
start (so a step of Adam changes a value by a similar fraction whatever its scale), ω = sigmoid(r).

Start: the grid's kernel and ω (for ARD, each width at the width the default isotropic grid
selects; ω kept inside [0.02, 0.98] so that its logit is finite), and the λ of the default λ
grid that minimises the criterion there.

Final model: with the Tikhonov filter the learned λ; with an iterative filter λ only stood in for
the path parameter during the search: the step is then selected on the filter's own path for the
learned kernel and ω, by the same selection as the grid search.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_random_state
from .._jit import jit
from ..errors import ParameterError
from ..filters.spectral import Tikhonov
from ..kernels.scalar import Gaussian

__all__: list[str] = []

SEARCHES = ("grid", "gradient")
GRADIENT_STEPS = 150
LEARNING_RATE = 0.1
GRADIENT_SUBSAMPLE = 500
OMEGA_RANGE = (0.02, 0.98)


def check_search(est) -> str:
    """The estimator's ``search`` ('grid' or 'gradient'); a ParameterError naming it otherwise."""
    search = getattr(est, "search", "grid")
    if not isinstance(search, str) or search not in SEARCHES:
        raise ParameterError(f"search must be 'grid' or 'gradient'; received {search!r}.")
    if search == "gradient" and getattr(est, "approximation", None) is not None:
        raise ParameterError("search='gradient' needs the exact kernel (approximation=None); received "
                             f"approximation={est.approximation!r}.")
    return search


def _is_ard(kernel) -> bool:
    return isinstance(kernel, Gaussian) and jnp.ndim(kernel.sigma) == 1


def _positive_leaves(kernel):
    """(learned leaves as a list of arrays, rebuild(values) -> kernel): every leaf > 0."""
    leaves, treedef = jax.tree_util.tree_flatten(kernel)
    learn = [i for i, v in enumerate(leaves)
             if isinstance(v, jax.Array) and jnp.issubdtype(v.dtype, jnp.floating) and bool(jnp.all(v > 0))]

    def rebuild(values):
        out = list(leaves)
        for i, v in zip(learn, values):
            out[i] = v
        return jax.tree_util.tree_unflatten(treedef, out)

    return [leaves[i] for i in learn], rebuild


def fit_gradient(est, X: np.ndarray, Y: np.ndarray):
    """Fit ``est`` on its grid, then learn its continuous hyperparameters by gradient and refit.

    Args:
      est: a spectral estimator (``_SpectralEstimator``) with ``search='gradient'``; X: (n, p);
      Y: (n, d) outputs (coded labels for the classifier).
    """
    from ..kernels import outputs as _outputs
    from ..learning.gradient import (
        constrain,
        eigen_criterion,
        kfold_tikhonov_loss,
        minimize,
        unconstrain,
    )

    # ---- start: the grid's choice (the default isotropic width grid for ARD widths)
    ard = _is_ard(est.kernel)
    start_est = type(est)(**{**est.get_params(deep=False), "search": "grid",
                             **({"kernel": None} if ard else {})})
    start_est._fit_coded(X, Y)
    for key, value in vars(start_est).items():  # the grid fit's attributes, then the learned ones over them
        if key.endswith("_") and not key.startswith("_"):
            setattr(est, key, value)
    n, d = Y.shape
    filt = est.filter_
    dtype = est.X_fit_.dtype
    Yc = np.asarray(Y - est.y_mean_)
    offset = jnp.asarray(est.y_mean_, dtype)
    mode = est.selection if isinstance(est.selection, str) else "masks"

    if ard:
        width0 = float(start_est.best_params_["kernel_width"])
        kernel0 = Gaussian(jnp.full(est.kernel.sigma.shape, width0, dtype))
    else:
        kernel0 = est.kernel_
    omega0 = start_est.best_params_.get("omega")
    learn_omega = omega0 is not None and est.omegas_ is not None and len(est.omegas_) > 1
    if omega0 is not None:
        omega0 = float(np.clip(omega0, *OMEGA_RANGE)) if learn_omega else float(omega0)

    # ---- output family: A(ω) and its eigensystem with ω-independent eigenvectors
    if omega0 is not None:
        V = jnp.asarray(_outputs.common_similarity_eigh(d, [0.0])[1], dtype)

        def a_of(om):
            return jnp.concatenate([jnp.reshape(om * d + 1.0 - om, (1,)), jnp.full((d - 1,), 1.0 - om)])
    else:
        A_fixed = np.asarray(est.output_matrix_, np.float64)
        a_fix, V_fix = np.linalg.eigh(A_fixed)
        V = jnp.asarray(V_fix, dtype)

        def a_of(om):
            return jnp.asarray(np.maximum(a_fix, 0.0), dtype)

    # ---- data of the criterion (a subsample above GRADIENT_SUBSAMPLE rows)
    rows = np.arange(n)
    masks = est._masks(n)
    if n > GRADIENT_SUBSAMPLE and isinstance(est.selection, str):
        rows = np.sort(np.random.default_rng(check_random_state(est.random_state))
                       .choice(n, GRADIENT_SUBSAMPLE, replace=False))
        masks = est._masks(GRADIENT_SUBSAMPLE)
    Xs, Ys = jnp.asarray(X[rows], dtype), jnp.asarray(Yc[rows], dtype)
    masks_j = jnp.asarray(masks)
    base_loss = type(est)._loss

    def sq_loss(F, Yv, w):
        v = base_loss(F, Yv, w)
        return v[0] if v.ndim else v  # the classifiers' (squared loss, error rate): the smooth part

    def criterion(kern, om, lam):
        K = kern(Xs, Xs)
        a = a_of(om)
        if mode in ("loo", "gcv"):
            return eigen_criterion(K, a, V, Ys, lam, criterion=mode)
        return kfold_tikhonov_loss(K, (V * a) @ V.T, Ys, lam, masks_j, loss=sq_loss, offset=offset)

    leaves0, rebuild = _positive_leaves(kernel0)
    om0 = jnp.asarray(0.0 if omega0 is None else omega0, dtype)

    # ---- starting λ: the best of the λ grid under the criterion, at the start kernel and ω
    scale = float(np.mean(np.asarray(kernel0.diag(Xs))))
    lambdas = est._resolve_params(Tikhonov(), scale if scale > 0 else 1.0)
    lam_grid = jnp.asarray(lambdas, dtype)
    grid_vals = np.asarray(jit(lambda ls: jax.lax.map(lambda lam: criterion(kernel0, om0, lam), ls))(lam_grid))
    grid_vals = np.where(np.isfinite(grid_vals), grid_vals, np.inf)
    lam0 = float(lambdas[int(np.argmin(grid_vals))])

    # ---- reparametrisation: v = v0·softplus(r)/softplus(r0), ω = sigmoid(r)
    one = unconstrain({"x": jnp.asarray(1.0, dtype)}, {"x": "positive"})["x"]
    scales: dict[str, Any] = {"kernel": [jnp.asarray(v, dtype) for v in leaves0], "lam": jnp.asarray(lam0, dtype)}
    spec = {"kernel": "positive", "lam": "positive", "omega": "unit"}
    raw0 = {"kernel": [jnp.full(jnp.shape(v), one, dtype) for v in leaves0], "lam": one}
    if learn_omega:
        raw0["omega"] = unconstrain({"omega": om0}, {"omega": "unit"})["omega"]

    def params_of(raw):
        c = constrain(raw, {k: spec[k] for k in raw})
        kern = rebuild([s * v for s, v in zip(scales["kernel"], c["kernel"])])
        om = c["omega"] if learn_omega else om0
        return kern, om, scales["lam"] * c["lam"]

    def objective(raw):
        return criterion(*params_of(raw))

    start_score = float(jit(objective)(raw0))
    best, trace = minimize(objective, raw0, "adam", GRADIENT_STEPS, LEARNING_RATE)
    end_score = float(jit(objective)(best))
    if not end_score <= start_score:  # the start is the best point seen
        best, end_score = raw0, start_score
    kern, om, lam = params_of(best)
    kern = jax.tree_util.tree_map(lambda v: jnp.asarray(np.asarray(v), dtype) if isinstance(v, jax.Array) else v, kern)
    om, lam = float(om), float(lam)

    # ---- final model on all rows: the grid fit of the learned kernel, ω (and λ for Tikhonov), which
    # selects an iterative filter's step on its own path exactly as the grid search does
    final = {"kernel": kern, "search": "grid", "verbose": False}
    if omega0 is not None:
        final["omegas"] = [om]
    if not filt.iterative:
        final["lambdas"] = [lam]
    final_est = type(est)(**{**est.get_params(deep=False), **final})
    final_est._fit_coded(X, Y)
    for key, value in vars(final_est).items():
        if key.endswith("_") and not key.startswith("_") and key not in ("kernel_widths_", "omegas_"):
            setattr(est, key, value)
    width = np.asarray(kern.sigma) if isinstance(kern, Gaussian) else None
    est.best_params_ = {
        **final_est.best_params_,
        "kernel_width": None if width is None else (float(width) if width.ndim == 0 else width.tolist()),
        "lambda": lam,
    }
    est.search_start_ = {"kernel": kernel0, "omega": omega0, "lambda": lam0}
    est.search_start_score_ = start_score
    est.search_score_ = end_score
    est.search_trace_ = np.asarray(trace)
    return est
