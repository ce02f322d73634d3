"""Plots of fitted models (matplotlib is imported only when a function here is called).

* :func:`plot_output_kernel` — the learned output kernel of
  :class:`~jaxmtl.OutputKernelClassifier` / :class:`~jaxmtl.OutputKernelRegressor` (or any
  d × d matrix) as a heat map, the class similarities of [DOGP11] §5.2.
"""

from __future__ import annotations

import numpy as np

from . import errors
from .errors import ShapeError

__all__ = ["plot_output_kernel"]


def plot_output_kernel(model_or_matrix, class_names=None, ax=None, cmap="viridis", annotate=None):
    """Draw an output kernel L (d × d) as a heat map and return the matplotlib Axes.

    Args:
      model_or_matrix: a fitted estimator with ``output_kernel_`` (e.g. OutputKernelClassifier), or
        a (d, d) matrix.
      class_names: d tick labels (default: the model's ``classes_`` when it has them, else 0 … d−1).
      ax: Axes to draw on (default: a new figure).
      cmap: colour map.
      annotate: write each entry in its cell (default: when d ≤ 12).

    Example:
        >>> import matplotlib; matplotlib.use("Agg")
        >>> ax = plot_output_kernel(np.eye(3), class_names=["a", "b", "c"])
        >>> ax.get_title()
        'learned output kernel'
    """
    if hasattr(model_or_matrix, "get_params") and not hasattr(model_or_matrix, "output_kernel_"):
        raise errors.NotFittedError(f"This {type(model_or_matrix).__name__} is not fitted yet (no output_kernel_); "
                                    "call fit(...) first.")
    L = np.asarray(getattr(model_or_matrix, "output_kernel_", model_or_matrix), dtype=float)
    if L.ndim != 2 or L.shape[0] != L.shape[1]:
        raise ShapeError(f"the output kernel must be a square matrix; received shape {L.shape}.")
    d = L.shape[0]
    if class_names is None:
        classes = getattr(model_or_matrix, "classes_", None)
        class_names = [str(c) for c in classes] if classes is not None else [str(i) for i in range(d)]
    if len(class_names) != d:
        raise ShapeError(f"class_names must have {d} entries; received {len(class_names)}.")
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(1.0 + 0.45 * d, 0.8 + 0.4 * d))
    image = ax.imshow(L, cmap=cmap)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    ax.set_xticks(range(d), [str(c) for c in class_names], rotation=90 if d > 6 else 0)
    ax.set_yticks(range(d), [str(c) for c in class_names])
    if annotate if annotate is not None else d <= 12:
        high = np.nanmax(L)
        for i in range(d):
            for j in range(d):
                ax.text(j, i, f"{L[i, j]:.2g}", ha="center", va="center", fontsize=7,
                        color="black" if L[i, j] > 0.6 * high else "white")
    ax.set_title("learned output kernel")
    return ax
