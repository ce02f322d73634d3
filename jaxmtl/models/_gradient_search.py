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

import dataclasses
from functools import partial
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import check_random_state
from .._jit import jit
from ..errors import ParameterError
from ..filters.spectral import Tikhonov
from ..kernels.scalar import Gaussian
from ._buckets import mean_diag, pad_rows, size_bucket

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


@dataclasses.dataclass(frozen=True)
class _Objective:
    """The search's criterion as a hashable callable of (raw parameters, data): the data — the
    padded rows, folds, output family and start values, a dict built by :func:`fit_gradient` —
    are arguments, so one compiled program serves every fit of a size bucket (equal objects hash
    alike) and nothing is folded in as a constant.

    ``raw``: {"kernel": [r per learned leaf], "lam": r[, "omega": r]} (unconstrained)."""

    mode: str  # 'kfold' (k-fold, hold-out and given masks), 'loo' or 'gcv'
    loss: Callable  # the estimator's loss(F, Y, w): a value, or (squared loss, error rate)
    treedef: Any  # the kernel's pytree structure
    fixed: tuple  # (position, value) of its leaves that are not arrays
    arrays: tuple[int, ...]  # positions of its array leaves (data["leaves"], in order)
    learn: tuple[int, ...]  # the learned ones: positive floating arrays
    learn_omega: bool
    omega_family: bool  # A(ω) of the common-similarity family, else the fixed output matrix

    def kernel(self, values: dict) -> Any:
        leaves: list[Any] = [None] * self.treedef.num_leaves
        for i, v in (*self.fixed, *values.items()):
            leaves[i] = v
        return jax.tree_util.tree_unflatten(self.treedef, leaves)

    def start(self, data: dict) -> Any:
        """The start kernel, exactly (its leaves as given)."""
        return self.kernel(dict(zip(self.arrays, data["leaves"])))

    def params(self, raw: dict, data: dict) -> tuple[Any, Any, Any]:
        """(kernel, ω, λ) of ``raw``: each positive value v₀·softplus(r)/softplus(r₀), ω = sigmoid(r)."""
        from ..learning.gradient import constrain

        spec = {"kernel": "positive", "lam": "positive", "omega": "unit"}
        c = constrain(raw, {k: spec[k] for k in raw})
        values = dict(zip(self.arrays, data["leaves"]))
        for i, v in zip(self.learn, c["kernel"]):
            values[i] = values[i] * v
        return self.kernel(values), c["omega"] if self.learn_omega else data["omega"], data["lam"] * c["lam"]

    def value(self, kern: Any, om: Any, lam: Any, data: dict) -> Any:
        """The criterion at (kernel, ω, λ) on the real rows of the data."""
        from ..learning.gradient import eigen_criterion, kfold_tikhonov_loss

        X, Y, V = data["X"], data["Y"], data["V"]
        K = kern(X, X)
        if self.omega_family:
            d = V.shape[0]
            a = jnp.concatenate([jnp.reshape(om * d + 1.0 - om, (1,)), jnp.full((d - 1,), 1.0 - om)])
        else:
            a = data["a"]
        if self.mode in ("loo", "gcv"):  # the padded block of the Gram zero (docs/design.md, "Size buckets")
            real = jnp.arange(K.shape[0]) < data["n"]
            K = K * (real[:, None] & real[None, :]).astype(K.dtype)
            return eigen_criterion(K, a, V, Y, lam, criterion=self.mode, n=data["n"])

        def squared(F, Yv, w):  # the classifiers' (squared loss, error rate): the smooth part
            v = self.loss(F, Yv, w)
            return v[0] if v.ndim else v

        return kfold_tikhonov_loss(K, (V * a) @ V.T, Y, lam, data["masks"], loss=squared, offset=data["offset"],
                                   held=data["held"])

    def __call__(self, raw: dict, data: dict) -> Any:
        return self.value(*self.params(raw, data), data)


@partial(jit, static_argnames="objective")
def _value(objective: _Objective, raw: dict, data: dict):
    return objective(raw, data)


@partial(jit, static_argnames="objective")
def _learned(objective: _Objective, raw: dict, data: dict):
    return objective.params(raw, data)


@partial(jit, static_argnames="objective")
def _on_lambda_grid(objective: _Objective, data: dict, lambdas):
    """The criterion at the start kernel and ω for each λ of ``lambdas``."""
    kern = objective.start(data)
    return jax.lax.map(lambda lam: objective.value(kern, data["omega"], lam, data), lambdas)


def fit_gradient(est, X: np.ndarray, Y: np.ndarray):
    """Fit ``est`` on its grid, then learn its continuous hyperparameters by gradient and refit.

    Args:
      est: a spectral estimator (``_SpectralEstimator``) with ``search='gradient'``; X: (n, p);
      Y: (n, d) outputs (coded labels for the classifier).
    """
    from ..kernels.outputs import common_similarity_eigh
    from ..learning.gradient import minimize

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
    mode = est.selection if isinstance(est.selection, str) else "masks"

    if ard:
        width0 = float(start_est.best_params_["kernel_width"])
        kernel0 = Gaussian(jax.device_put(np.full(np.shape(est.kernel.sigma), width0, dtype)))
    else:
        kernel0 = est.kernel_
    omega0 = start_est.best_params_.get("omega")
    learn_omega = omega0 is not None and est.omegas_ is not None and len(est.omegas_) > 1
    if omega0 is not None:
        omega0 = float(np.clip(omega0, *OMEGA_RANGE)) if learn_omega else float(omega0)

    # ---- output family: A(ω) = V diag(a(ω)) Vᵀ with ω-independent eigenvectors, or the fixed matrix
    if omega0 is not None:
        V, a_fix = common_similarity_eigh(d, [0.0])[1], np.zeros(d)
    else:
        a_fix, V = np.linalg.eigh(np.asarray(est.output_matrix_, np.float64))
        a_fix = np.maximum(a_fix, 0.0)

    # ---- data of the criterion (a subsample above GRADIENT_SUBSAMPLE rows), padded up the size
    # bucket ladder (docs/design.md, "Size buckets"): one program per bucket, the data arguments
    rows = np.arange(n)
    masks = est._masks(n)
    if n > GRADIENT_SUBSAMPLE and isinstance(est.selection, str):
        rows = np.sort(np.random.default_rng(check_random_state(est.random_state))
                       .choice(n, GRADIENT_SUBSAMPLE, replace=False))
        masks = est._masks(GRADIENT_SUBSAMPLE)
    m, N = len(rows), size_bucket(len(rows))
    Xs = pad_rows(np.asarray(X[rows], dtype), N)
    leaves, treedef = jax.tree_util.tree_flatten(kernel0)
    arrays = [i for i, v in enumerate(leaves) if isinstance(v, (jax.Array, np.ndarray))]
    learn = tuple(i for i in arrays if jnp.issubdtype(np.asarray(leaves[i]).dtype, jnp.floating)
                  and bool(np.all(np.asarray(leaves[i]) > 0)))
    criterion = _Objective(mode if mode in ("loo", "gcv") else "kfold", type(est)._loss, treedef,
                           tuple((i, v) for i, v in enumerate(leaves) if i not in arrays), tuple(arrays), learn,
                           learn_omega, omega0 is not None)
    data = {"X": Xs, "Y": pad_rows(np.asarray(Yc[rows], dtype), N), "n": np.int32(m),
            "masks": pad_rows(masks.T, N).T, "held": pad_rows((~masks).T, N).T,
            "offset": np.asarray(est.y_mean_, dtype), "V": np.asarray(V, dtype), "a": np.asarray(a_fix, dtype),
            "omega": np.asarray(0.0 if omega0 is None else omega0, dtype),
            "leaves": [np.asarray(leaves[i], dtype if i in learn else None) for i in arrays]}

    # ---- starting λ: the best of the λ grid under the criterion, at the start kernel and ω
    scale = float(mean_diag(kernel0, Xs, np.int32(m)))
    lambdas = est._resolve_params(Tikhonov(), scale if scale > 0 else 1.0)
    grid_vals = np.asarray(_on_lambda_grid(criterion, data, np.asarray(lambdas, dtype)))
    grid_vals = np.where(np.isfinite(grid_vals), grid_vals, np.inf)
    lam0 = float(lambdas[int(np.argmin(grid_vals))])

    # ---- reparametrisation: v = v0·softplus(r)/softplus(r0), ω = sigmoid(r); r0 = softplus⁻¹(1)
    # for the positive values (computed on the host: no program), the start's logit for ω
    one = np.asarray(np.log(np.expm1(1.0)), dtype)
    data["lam"] = np.asarray(lam0, dtype)
    raw0: dict[str, Any] = {"kernel": [np.full(np.shape(leaves[i]), one, dtype) for i in learn], "lam": one}
    if omega0 is not None and learn_omega:
        raw0["omega"] = np.asarray(np.log(omega0 / (1.0 - omega0)), dtype)  # logit

    start_score = float(_value(criterion, raw0, data))
    best, trace = minimize(criterion, raw0, "adam", GRADIENT_STEPS, LEARNING_RATE, args=(data,))
    end_score = float(_value(criterion, best, data))
    if not end_score <= start_score:  # the start is the best point seen
        best, end_score = raw0, start_score
    kern, om, lam = _learned(criterion, best, data)
    kern = jax.tree_util.tree_map(lambda v: jax.device_put(np.asarray(v, dtype)) if isinstance(v, jax.Array) else v,
                                  kern)
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
