"""Synthetic problems of Baldassarre, Rosasco, Barla & Verri ([BRBV11], §7.1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from ..errors import ParameterError, ShapeError

__all__ = [
    "TOY_CENTRES",
    "TOY_WIDTH",
    "TOY_AMPLITUDE",
    "TOY_TASK_WEIGHTS",
    "FIELD1_CENTRES",
    "FIELD1_VARIANCE",
    "FIELD2_WIDTH",
    "ToyData",
    "multitask_toy_function",
    "make_multitask_toy",
    "vector_field_1",
    "vector_field_2",
    "grid_2d",
]

#: Centres of the three Gaussian bumps of the multi-task toy problem.
TOY_CENTRES = np.array([0.05, 0.4, 0.7])
#: Width (standard deviation) of the bumps.
TOY_WIDTH = 0.1
#: Amplitude of the task-specific part: f_t = sin(2πx) + TOY_AMPLITUDE · p_t(x).
TOY_AMPLITUDE = 0.6
#: Default task weights W (4 tasks × 3 bumps), p_t(x) = Σ_k W[t, k] exp(−(x − c_k)² / (2·0.1²)).
#: The paper does not publish its weights; these are ours: each of the first three tasks has
#: its own bump, the fourth mixes all three with alternating signs.
TOY_TASK_WEIGHTS = np.array(
    [
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [1.0, -1.0, 1.0],
    ]
)
TOY_TASK_WEIGHTS.setflags(write=False)
TOY_CENTRES.setflags(write=False)

#: Centres of the five Gaussians whose sum is the potential of vector field 1.
FIELD1_CENTRES = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
FIELD1_CENTRES.setflags(write=False)
#: Their (isotropic) variance: covariance 0.45·I.
FIELD1_VARIANCE = 0.45
#: Width of the Gaussian envelope of vector field 2.
FIELD2_WIDTH = 1.2


class ToyData(NamedTuple):
    """Long-form multi-task sample: ``y[i] = f[i] + noise`` for input ``x[i]`` of task ``tasks[i]``."""

    x: np.ndarray
    tasks: np.ndarray
    y: np.ndarray
    f: np.ndarray


def _rng(rng) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(rng)
    raise ParameterError(f"rng must be a numpy Generator, an int seed or None, got {rng!r}")


def _weights(task_weights) -> np.ndarray:
    W = TOY_TASK_WEIGHTS if task_weights is None else np.asarray(task_weights, dtype=np.float64)
    if W.ndim != 2 or W.shape[1] != len(TOY_CENTRES) or W.shape[0] < 1:
        raise ShapeError(f"task_weights must have shape (n_tasks, 3), got {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ParameterError("task_weights must be finite")
    return W


def multitask_toy_function(x: npt.ArrayLike, task: int | npt.ArrayLike,
                           task_weights: npt.ArrayLike | None = None) -> np.ndarray:
    """Noiseless targets of the multi-task toy: f_t(x) = sin(2πx) + 0.6·p_t(x).

    ``p_t(x) = Σ_k W[t, k] · exp(−(x − c_k)² / (2·0.1²))`` with centres ``c = (0.05, 0.4, 0.7)``
    and ``W = task_weights`` (default :data:`TOY_TASK_WEIGHTS`).

    Args:
        x: inputs, shape ``(n,)`` or ``(n, 1)``.
        task: an int task id, or an int array of shape ``(n,)``.
        task_weights: optional ``(n_tasks, 3)`` weight matrix.

    Returns:
        float64 array of shape ``(n,)``.

    Example:
        >>> import numpy as np
        >>> multitask_toy_function(np.linspace(0, 1, 5), task=2).shape
        (5,)
    """
    W = _weights(task_weights)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 2 and x.shape[1] == 1:
        x = x[:, 0]
    if x.ndim != 1:
        raise ShapeError(f"x must have shape (n,) or (n, 1), got {x.shape}")
    t = np.broadcast_to(np.asarray(task), x.shape)
    if not np.issubdtype(t.dtype, np.integer):
        raise ParameterError("task ids must be integers")
    if t.size and (t.min() < 0 or t.max() >= W.shape[0]):
        raise ParameterError(f"task ids must lie in 0..{W.shape[0] - 1}")
    bumps = np.exp(-((x[:, None] - TOY_CENTRES[None, :]) ** 2) / (2 * TOY_WIDTH**2))
    p = np.sum(W[t] * bumps, axis=1)
    return np.sin(2 * np.pi * x) + TOY_AMPLITUDE * p


def make_multitask_toy(
    n_per_task: int | Sequence[int],
    rng: np.random.Generator | int | None,
    setting: str = "multitask",
    noise_var: float = 0.01,
    task_weights: npt.ArrayLike | None = None,
) -> ToyData:
    """Sample the multi-task vs vector-valued toy problem ([BRBV11] §7.1, Figures 2–4).

    Four tasks (rows of ``task_weights``) on [0, 1], ``f_t = sin(2πx) + 0.6·p_t(x)`` (see
    :func:`multitask_toy_function`), outputs ``y = f_t(x) + ε`` with ``ε ~ N(0, noise_var)``.

    * ``setting="multitask"``: every task draws its own inputs ``x ~ U[0, 1]``; ``n_per_task``
      may be an int or one count per task.
    * ``setting="vector"``: all tasks share the same ``n_per_task`` inputs (vector-valued
      learning); noise is drawn independently for each task.

    Examples are ordered task by task (all of task 0, then task 1, ...).

    Args:
        n_per_task: examples per task (int ≥ 1, or a sequence of them in the multitask setting).
        rng: a ``numpy.random.Generator``, an int seed, or None.
        setting: ``"multitask"`` or ``"vector"``.
        noise_var: noise variance (≥ 0); the paper uses 0.01.
        task_weights: optional ``(n_tasks, 3)`` matrix, default :data:`TOY_TASK_WEIGHTS`.

    Returns:
        :class:`ToyData` ``(x (N, 1), tasks (N,) int64, y (N,), f (N,))`` with ``N = Σ n_t``,
        ``f`` the noiseless targets.

    Example:
        >>> d = make_multitask_toy(10, rng=0)
        >>> d.x.shape, d.tasks.shape, d.y.shape
        ((40, 1), (40,), (40,))
        >>> v = make_multitask_toy(10, rng=0, setting="vector")
        >>> bool((v.x[:10] == v.x[10:20]).all())
        True
    """
    gen = _rng(rng)
    W = _weights(task_weights)
    n_tasks = W.shape[0]
    if setting not in ("multitask", "vector"):
        raise ParameterError(f"setting must be 'multitask' or 'vector', got {setting!r}")
    noise_var = float(noise_var)
    if not np.isfinite(noise_var) or noise_var < 0:
        raise ParameterError(f"noise_var must be a finite number >= 0, got {noise_var}")
    if isinstance(n_per_task, Sequence) or isinstance(n_per_task, np.ndarray):
        counts = [int(c) for c in n_per_task]
        if len(counts) != n_tasks:
            raise ShapeError(f"n_per_task has {len(counts)} entries for {n_tasks} tasks")
        if setting == "vector" and len(set(counts)) != 1:
            raise ParameterError("the vector setting needs the same number of inputs per task")
    else:
        counts = [int(n_per_task)] * n_tasks
    if min(counts) < 1:
        raise ParameterError(f"n_per_task must be >= 1, got {n_per_task}")
    if setting == "vector":
        shared = gen.uniform(0.0, 1.0, size=counts[0])
        xs = [shared] * n_tasks
    else:
        xs = [gen.uniform(0.0, 1.0, size=c) for c in counts]
    x = np.concatenate(xs)
    tasks = np.concatenate([np.full(c, t, dtype=np.int64) for t, c in enumerate(counts)])
    f = multitask_toy_function(x, tasks, W)
    y = f + np.sqrt(noise_var) * gen.standard_normal(x.shape[0])
    return ToyData(x=x[:, None], tasks=tasks, y=y, f=f)


def _points(points) -> np.ndarray:
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 2:
        raise ShapeError(f"points must have shape (n, 2), got {p.shape}")
    return p


def vector_field_1(points: npt.ArrayLike, gamma: float = 0.5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first 2-D vector field of [BRBV11] §7.1 (Figures 5–8).

    Potential ``φ(x) = Σ_j exp(−‖x − c_j‖² / (2·0.45))`` with centres (0,0), (1,0), (0,1),
    (−1,0), (0,−1) (covariance 0.45·I; the Gaussians are unnormalised, peak value 1).

    * curl-free part: ``∇φ``;
    * divergence-free part: ``∇φ`` rotated by π/2, ``(a, b) → (−b, a)``;
    * field: ``γ · curl_free + (1 − γ) · div_free``.

    The paper only says "a convex combination ... controlled by a parameter γ". Here **γ is
    the weight of the curl-free part**: γ = 1 is a pure gradient field, γ = 0 purely solenoidal.
    A learner using ``γ̃·Γ_cf + (1 − γ̃)·Γ_df`` (curl-free kernel (27), divergence-free kernel
    (26)) should therefore recover γ̃ ≈ γ.

    Args:
        points: ``(n, 2)`` inputs, e.g. :func:`grid_2d`.
        gamma: weight in [0, 1] (the paper sweeps 0, 0.1, ..., 1).

    Returns:
        ``(field, curl_free, div_free)``, each float64 of shape ``(n, 2)``.

    Example:
        >>> v, cf, df = vector_field_1(grid_2d(70), gamma=0.3)
        >>> v.shape
        (4900, 2)
    """
    p = _points(points)
    gamma = float(gamma)
    if not 0.0 <= gamma <= 1.0:
        raise ParameterError(f"gamma must lie in [0, 1], got {gamma}")
    diff = p[:, None, :] - FIELD1_CENTRES[None, :, :]  # (n, 5, 2)
    g = np.exp(-np.sum(diff**2, axis=-1) / (2 * FIELD1_VARIANCE))  # (n, 5)
    curl_free = np.sum(-diff / FIELD1_VARIANCE * g[..., None], axis=1)
    div_free = np.stack([-curl_free[:, 1], curl_free[:, 0]], axis=1)
    field = gamma * curl_free + (1.0 - gamma) * div_free
    return field, curl_free, div_free


def vector_field_2(points: npt.ArrayLike) -> np.ndarray:
    """The second 2-D vector field of [BRBV11] §7.1 (Figures 9–12).

    ``v¹ = 2 sin(3x¹) sin(1.5x²)``, ``v² = 2 cos(1.5x¹) cos(3x²)``, both multiplied by the
    Gaussian envelope ``exp(−‖x‖² / (2·1.2²))``.

    Args:
        points: ``(n, 2)`` inputs.

    Returns:
        float64 array ``(n, 2)``.

    Example:
        >>> vector_field_2(grid_2d(70)).shape
        (4900, 2)
    """
    p = _points(points)
    x1, x2 = p[:, 0], p[:, 1]
    envelope = np.exp(-(x1**2 + x2**2) / (2 * FIELD2_WIDTH**2))
    v1 = 2 * np.sin(3 * x1) * np.sin(1.5 * x2)
    v2 = 2 * np.cos(1.5 * x1) * np.cos(3 * x2)
    return np.stack([v1, v2], axis=1) * envelope[:, None]


def grid_2d(size: int = 70, low: float = -2.0, high: float = 2.0) -> np.ndarray:
    """A ``size × size`` regular grid on ``[low, high]²`` (end points included).

    Returns:
        float64 ``(size², 2)``; row ``i·size + j`` is ``(g[i], g[j])`` with
        ``g = linspace(low, high, size)`` (the first coordinate varies slowest).

    Example:
        >>> grid_2d(3, 0, 1)[:4].tolist()
        [[0.0, 0.0], [0.0, 0.5], [0.0, 1.0], [0.5, 0.0]]
    """
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise ParameterError(f"size must be a positive int, got {size!r}")
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ParameterError(f"need finite low < high, got {low}, {high}")
    g = np.linspace(low, high, int(size))
    a, b = np.meshgrid(g, g, indexing="ij")
    return np.stack([a.ravel(), b.ravel()], axis=1)
