"""The folds of the per-task and per-output families: k-fold splits stratified by task
(:func:`task_kfold_masks`) and the parts of every fold's held-out rows that the cross-fitted loss
scores (:func:`validation_parts`, ``N_PARTS`` of them); see :mod:`jaxmtl.models._per_task`."""

from __future__ import annotations

import numpy as np

N_PARTS = 5  # parts of the held-out rows in the cross-fitted loss: each part scores a choice made on 80 % of them

__all__ = ["N_PARTS", "validation_parts", "task_kfold_masks"]


def validation_parts(masks: np.ndarray, codes: np.ndarray, n_parts: int, random_state: int | None) -> np.ndarray:
    """(k, N) part (0 … V−1, V = ``n_parts``) of every fold's held-out rows, −1 on training rows.

    Each row has one part, in every fold that holds it out: with repeated partitions a row held
    out in several folds scores the same part in each, so that no choice made on the other parts
    has seen the row (a part per fold and row would leak it across the repeats). The held-out rows
    of each task (over all folds) are put in a random order and dealt to the parts in turn: part
    sizes differ by at most one row per task — also where every fold holds out a single row of a
    task (k-fold at a few rows per task), whose rows a dealing within each fold would put in one
    part and leave nothing to cross-fit.

    Example:
        >>> masks = np.array([[False, False, False, True]])
        >>> validation_parts(masks, np.array([0, 0, 1, 1]), 2, 0).tolist()
        [[1, 0, 0, -1]]
    """
    k, N = masks.shape
    held = ~np.asarray(masks, bool)
    key = np.random.default_rng(random_state).random((N,))
    group = np.where(held.any(axis=0), np.asarray(codes), -1)  # the task of every held-out row
    order = np.lexsort((key, group))
    g = group[order]
    pos = np.arange(N)
    start = np.maximum.accumulate(np.where(np.diff(g, prepend=-2) != 0, pos, 0))
    part = np.empty(N, int)
    part[order] = np.where(g >= 0, (pos - start) % n_parts, -1)
    return np.where(held, part[None, :], -1)


def task_kfold_masks(codes: np.ndarray, n_folds: int, seed: int | None = 0, n_repeats: int = 1) -> np.ndarray:
    """(n_repeats·n_folds, N) training masks of k-fold splits stratified by task (True = training).

    In each partition the rows, task after task and each task's rows in a random order, are dealt
    to the folds in turn from a random fold on: each fold holds out 1/k of every task (sizes
    differ by at most one row per task) and 1/k of all rows (at least one, with k ≤ N: no fold
    without validation rows, as a random start per task could leave at a few rows per task). The
    per-task choice of the independent family is then made on all of a task's rows, as a per-task
    ``GridSearchCV`` makes it. Partition r uses the seed (seed, r) (the seed itself for r = 0, a
    fresh shuffle each with ``seed=None``).

    Example:
        >>> masks = task_kfold_masks(np.array([0, 0, 0, 1, 1, 1]), 3)
        >>> (~masks).sum(axis=1).tolist()  # one row of each task held out per fold
        [2, 2, 2]
    """
    codes = np.asarray(codes)
    N = len(codes)
    out = []
    for r in range(n_repeats):  # a handful of partitions: each is one vectorised deal over all rows
        rng = np.random.default_rng(seed if r == 0 or seed is None else (seed, r))
        key, first = rng.random(N), int(rng.integers(n_folds))
        fold = np.empty(N, int)
        fold[np.lexsort((key, codes))] = (np.arange(N) + first) % n_folds  # consecutive rows: consecutive folds
        out.append(fold[None, :] != np.arange(n_folds)[:, None])
    return np.concatenate(out)
