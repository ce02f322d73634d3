r"""Mixed-effect multi-task kernels ([Din11] §5.1, eqs. 5.2 and 5.5).

The kernel on (input, task) pairs is

    K((x₁, t₁), (x₂, t₂)) = α·K̄(x₁, x₂) + (1 − α)·[t₁ = t₂ = j]·K̃ʲ(x₁, x₂),   0 ≤ α ≤ 1   (5.2)

a common part K̄ shared by all tasks plus an individual part K̃ʲ seen only inside task j, so that
the estimate of task j is g_j = ḡ + g̃_j, the *average task* plus an *individual shift* (5.3).
α = 1 pools all examples into one task, α = 0 learns the tasks separately.

This module holds the pieces shared by the centralized solver, the online server and the
estimator: :class:`ExponentialDot` (K̄(x, x') = exp(⟨x, x'⟩), the common kernel of the music
simulation of [Din11] §5.4), the resolution of ``task_kernel`` (one kernel for every task or a
mapping task → kernel), the validation of α and λ, and :func:`mixed_effect_gram`, the dense
kernel matrix (5.5) for small problems and checks.

[Din11] F. Dinuzzo, *Learning functions with kernel methods*, PhD thesis, Università di Pavia, 2011.

Example:
    >>> import numpy as np
    >>> from jaxmtl.kernels import Linear
    >>> X = np.eye(3); t = np.array([0, 0, 1])
    >>> mixed_effect_gram(X, t, X, t, 0.5, Linear(), Linear())
    array([[1., 0., 0.],
           [0., 1., 0.],
           [0., 0., 1.]])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
from jax.typing import ArrayLike

from .._checks import check_positive, check_unit_interval, is_traced, require_concrete, traced_check
from ..errors import ParameterError, TaskError
from ..kernels.scalar import Kernel, _checked, _pair
from ..products import full_precision

__all__ = ["ExponentialDot", "check_alpha", "check_lam", "check_scaled_weight", "LAM_RANGE", "check_kernel",
           "resolve_task_kernel", "mixed_effect_gram"]


class ExponentialDot(Kernel):
    """Exponential inner-product kernel K(x, x') = exp(γ·⟨x, x'⟩).

    Strictly positive definite on distinct points of a sphere (there it equals e^γ times a
    Gaussian kernel of width 1/√γ); the common kernel K̄ of the music simulation of [Din11]
    §5.4 (γ = 1, tag vectors on the unit sphere).

    Args:
      gamma: scale γ > 0.

    Example:
        >>> K = ExponentialDot()(jnp.array([[1.0, 0.0]]), jnp.array([[1.0, 0.0], [0.0, 1.0]]))
        >>> [round(float(v), 4) for v in K[0]]
        [2.7183, 1.0]
    """

    gamma: jax.Array

    def __init__(self, gamma: ArrayLike = 1.0) -> None:
        self.gamma = _checked(gamma, "gamma")

    def __call__(self, X1: ArrayLike, X2: ArrayLike) -> jax.Array:
        X1, X2 = _pair(X1, X2)
        return jnp.exp(self.gamma * (X1 @ X2.T))


def check_alpha(alpha: Any, name: str = "alpha") -> float:
    """α in [0, 1] as a float, else ParameterError naming ``name`` (TracedArgumentError when traced:
    the mixed-effect solvers and the server run on the host in float64)."""
    require_concrete(alpha, name, "the mixed-effect solvers run on the host in float64; pass a number "
                     "(mixed_effect_gram accepts a traced alpha)")
    if isinstance(alpha, (bool, np.bool_)) or np.ndim(alpha) != 0:
        raise ParameterError(f"{name} must be a number in [0, 1]; received {alpha!r}.")
    return float(check_unit_interval(alpha, name)[0])


LAM_RANGE = (1e-100, 1e100)
"""λ's admissible range: the per-task systems (1 − α)K̃ʲ + λWʲ and their inverses stay far from
float64's under- and overflow (about 1e−308 and 1.8e308) for kernels of order one."""

SCALED_WEIGHT_RANGE = (1e-200, 1e200)
"""Admissible range of λ·wᵢ for one example (its inverse enters Rʲ)."""


def check_lam(lam: Any, name: str = "lam") -> float:
    """λ in :data:`LAM_RANGE` as a float (the thesis's unnormalised regularization parameter);
    TracedArgumentError when traced (the solvers run on the host)."""
    require_concrete(lam, name, "the mixed-effect solvers run on the host in float64; pass a number")
    if isinstance(lam, (bool, np.bool_)) or np.ndim(lam) != 0:
        raise ParameterError(f"{name} must be a positive number; received {lam!r}.")
    lam = check_positive(lam, name)
    if not LAM_RANGE[0] <= lam <= LAM_RANGE[1]:
        raise ParameterError(f"{name} must lie in [{LAM_RANGE[0]:.0e}, {LAM_RANGE[1]:.0e}]; received {lam!r} "
                             "(outside, (K + λW)⁻¹ under- or overflows float64 for kernels of order one).")
    return lam


def check_scaled_weight(lam: float, w: float, name: str = "w") -> None:
    """λ·w in :data:`SCALED_WEIGHT_RANGE`, else ParameterError naming ``name``."""
    require_concrete(lam, "lam", "the mixed-effect solvers run on the host in float64; pass a number")
    require_concrete(w, name, "the mixed-effect solvers run on the host in float64; pass numbers")
    if not SCALED_WEIGHT_RANGE[0] <= lam * w <= SCALED_WEIGHT_RANGE[1]:
        raise ParameterError(f"{name} = {w!r} makes λ·{name} = {lam * w:.3g}, outside "
                             f"[{SCALED_WEIGHT_RANGE[0]:.0e}, {SCALED_WEIGHT_RANGE[1]:.0e}] where 1/(λ·{name}) "
                             "stays finite in float64; rescale the weights.")


def check_kernel(k: Any, name: str) -> Kernel:
    if not isinstance(k, Kernel):
        raise ParameterError(f"{name} must be a jaxmtl kernel (jaxmtl.kernels.Kernel); received {k!r}.")
    return k


def resolve_task_kernel(task_kernel: Any, default: Kernel, name: str = "task_kernel"):
    """``task_kernel`` as a function task → K̃ʲ.

    Args:
      task_kernel: None (use ``default`` for every task), one kernel for every task, or a
        mapping task label → kernel.
      default: the kernel used when ``task_kernel`` is None.

    Returns:
      (lookup, mapping): ``lookup(task)`` returns the task's kernel and raises TaskError for a
      task missing from a mapping; ``mapping`` is the validated dict, or None.
    """
    if task_kernel is None or isinstance(task_kernel, Kernel):
        k = check_kernel(default if task_kernel is None else task_kernel, name)
        return (lambda task: k), None
    if not isinstance(task_kernel, Mapping):
        raise ParameterError(
            f"{name} must be None, a kernel, or a mapping task -> kernel; received {type(task_kernel).__name__}."
        )
    mapping = {t: check_kernel(k, f"{name}[{t!r}]") for t, k in task_kernel.items()}

    def lookup(task):
        try:
            return mapping[task]
        except (KeyError, TypeError):
            raise TaskError(
                f"{name} has no kernel for task {task!r}; it maps {sorted(map(repr, mapping))[:10]}."
            ) from None

    return lookup, mapping


@full_precision
def mixed_effect_gram(X1: npt.ArrayLike, tasks1: npt.ArrayLike, X2: npt.ArrayLike, tasks2: npt.ArrayLike,
                      alpha: ArrayLike, kernel: Kernel, task_kernel: Any) -> np.ndarray | jax.Array:
    """Dense mixed-effect kernel matrix (5.2)/(5.5) between (X1, tasks1) and (X2, tasks2).

    O(n₁·n₂) memory: for small problems, checks and plots; the solvers never form it.

    Args:
      X1: (n1, p); tasks1: (n1,) labels; X2: (n2, p); tasks2: (n2,) labels.
      alpha: α in [0, 1]; kernel: K̄; task_kernel: K̃ (one kernel or a mapping task → kernel).

    Returns:
      (n1, n2) float64 NumPy array α·K̄ + (1 − α)·[t₁ = t₂]·K̃^{t₁}; a JAX array (default float
      dtype, differentiable) when α or a kernel's hyperparameters are traced (inside ``jit``,
      ``vmap`` or ``grad``; α ∈ [0, 1] is then checked at run time). Inputs and tasks stay concrete.
    """
    traced = is_traced((alpha, kernel, task_kernel))
    if is_traced(alpha):
        a = jnp.asarray(alpha)  # a traced array (ArrayLike admits complex numbers, which do not compare)
        if a.ndim != 0:
            raise ParameterError(f"alpha must be a number in [0, 1]; received shape {a.shape}.")
        alpha = traced_check(a, (a >= 0) & (a <= 1), "alpha must lie in [0, 1].")
    else:
        alpha = check_alpha(alpha)
    lookup, _ = resolve_task_kernel(task_kernel, kernel)
    X1, X2 = (np.asarray(a, dtype=np.float64) for a in (X1, X2))
    t1, t2 = np.asarray(tasks1), np.asarray(tasks2)
    xp: Any = jnp if traced else np
    dtype = None if traced else np.float64  # traced: JAX's default float dtype
    common = xp.asarray(kernel(X1, X2), dtype=dtype)
    individual = xp.zeros_like(common)
    for task in np.unique(np.concatenate([t1, t2])).tolist():
        i, j = np.flatnonzero(t1 == task), np.flatnonzero(t2 == task)
        if len(i) and len(j):
            block = xp.asarray(lookup(task)(X1[i], X2[j]), dtype=dtype)
            if traced:
                individual = individual.at[np.ix_(i, j)].set(block)
            else:
                individual[np.ix_(i, j)] = block
    return alpha * common + (1 - alpha) * individual
