"""Predictions in fixed-size row blocks: one compiled program for every batch size, and a row's
prediction bit for bit the same whatever batch it comes in.

Every estimator's ``predict`` / ``decision_function`` / ``predict_proba`` evaluates its
cross-Gram through :func:`in_row_blocks`: the new rows are padded (with copies of the last row)
to a multiple of :data:`BLOCK_ROWS` and the compiled per-block function runs on each block of
exactly that many rows, the padding stripped from the result. The block shape never changes, so

* the program is compiled once per fitted model, whatever the number of rows predicted (a
  scikit-learn cross-validation or a server answering batches of every size pays no recompilation);
* a row goes through the same program, with the same reduction order, wherever it sits: XLA's
  products of a (1, n) and of a (256, n) block round differently in float32, those of two
  (256, n) blocks do not depend on the row's position in them (scikit-learn's
  ``check_methods_sample_order_invariance`` and ``check_methods_subset_invariance``).

The cost is at most ``BLOCK_ROWS − 1`` padded rows per call (one block for a single row), and the
memory of one block's (256, n) cross-Gram instead of the whole (m, n) one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

__all__ = ["BLOCK_ROWS", "in_row_blocks"]

BLOCK_ROWS = 256  # rows of every block: the one shape each prediction program is compiled for


def in_row_blocks(fn: Callable[..., Any], *rows: Any, block_rows: int = BLOCK_ROWS) -> Any:
    """``fn(*blocks)`` evaluated on fixed-size blocks of rows and concatenated, padding stripped.

    Args:
      fn: maps blocks of ``block_rows`` rows of each array of ``rows`` to a pytree of arrays whose
        leading axis is those rows (typically a call of a jitted function: compiled once).
      rows: (m, ...) host arrays sharing their leading axis m (inputs, per-row task codes, ...).
      block_rows: the rows of every block.

    Returns:
      ``fn``'s pytree with NumPy leaves of leading axis m, row i computed from row i of ``rows``
      by the same program whatever m and wherever row i sits.

    Example:
        >>> import jax, jax.numpy as jnp, numpy as np
        >>> square = jax.jit(lambda X: X @ X.T)      # any per-block program
        >>> X = np.arange(6.0, dtype=np.float32).reshape(3, 2)
        >>> in_row_blocks(lambda B: square(B)[:, :1], X, block_rows=4)[:, 0]
        array([1., 3., 5.], dtype=float32)
    """
    arrays = [np.asarray(r) for r in rows]
    m = arrays[0].shape[0]
    pad = -m % block_rows if m else block_rows
    padded = [np.concatenate([a, np.repeat(a[-1:] if m else np.zeros((1,) + a.shape[1:], a.dtype), pad, axis=0)])
              for a in arrays]
    outs = [fn(*(a[start:start + block_rows] for a in padded)) for start in range(0, m + pad, block_rows)]
    return jax.tree.map(lambda *blocks: np.concatenate([np.asarray(b) for b in blocks])[:m], *outs)
