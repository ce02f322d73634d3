"""Loaders for the UCI benchmark sets of RLS2 ([Din11] Tables 4.2–4.3), shipped in ``uci/``.

Provenance: ``uci/PROVENANCE_uci.md``. Pre-processing as [Din11] §4.5.2: rows with missing values
are dropped (none in these copies), and features that are constant on the whole set (column 2 of
IONOSPHERE) are removed, which gives the feature counts of Table 4.2 (HOUSING 13, PIMA 8,
IONOSPHERE 33, SONAR 60; HEART here is the 303-row Cleveland file with 13 features, an
approximation of the thesis's 270-row set). Standardisation is left to the caller (Table 4.2 says
which sets the thesis standardised: see :data:`UCI_STANDARDIZE`).

Example:
    >>> from jaxmtl.datasets._uci import load_uci
    >>> data = load_uci("housing")
    >>> data.X.shape, data.task
    ((506, 13), 'regression')
"""

from __future__ import annotations

import csv
import io
from importlib import resources
from typing import NamedTuple

import numpy as np

from ..errors import ParameterError

__all__ = ["UCIData", "UCI_STANDARDIZE", "uci_names", "load_uci"]

# name -> (file, task); the label is the last column (±1 for classification, a float for regression)
_FILES = {
    "housing": ("housing.data", "regression"),
    "heart": ("heart.csv", "classification"),
    "pima": ("diabetes.csv", "classification"),
    "ionosphere": ("ionosphere.data", "classification"),
    "sonar": ("sonar.all-data", "classification"),
}
_POSITIVE = {"heart": "1", "pima": "1", "ionosphere": "g", "sonar": "M"}

#: Whether [Din11] Table 4.2 standardised the features of each set.
UCI_STANDARDIZE = {"housing": True, "heart": True, "pima": True, "ionosphere": True, "sonar": False}


class UCIData(NamedTuple):
    """One UCI set: inputs X (n, p) float64, target y (n,) float64 (±1 for classification)."""

    X: np.ndarray
    y: np.ndarray
    feature_names: list[str]
    task: str
    name: str


def uci_names() -> tuple[str, ...]:
    """Names accepted by :func:`load_uci`: ('heart', 'housing', 'ionosphere', 'pima', 'sonar')."""
    return tuple(sorted(_FILES))


def load_uci(name: str) -> UCIData:
    """A bundled UCI set, as used for [Din11] Tables 4.2–4.4.

    Args:
      name: one of :func:`uci_names` (case-insensitive).

    Returns:
      :class:`UCIData`: HOUSING (506 × 13, median value), HEART (303 × 13, ±1 disease),
      PIMA (768 × 8, ±1 diabetes), IONOSPHERE (351 × 33, +1 good radar return), SONAR (208 × 60, +1 mine).
    """
    if not isinstance(name, str) or name.strip().lower() not in _FILES:
        raise ParameterError(f"unknown UCI data set {name!r}; valid names: {', '.join(uci_names())}")
    key = name.strip().lower()
    filename, task = _FILES[key]
    text = (resources.files("jaxmtl.datasets") / "uci" / filename).read_text(encoding="utf-8-sig")
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    header, body = rows[0], rows[1:]
    labels = [r[-1].strip() for r in body]
    X = np.array([[float(v) for v in r[:-1]] for r in body])
    if task == "regression":
        y = np.array([float(v) for v in labels])
    else:
        y = np.where(np.array(labels) == _POSITIVE[key], 1.0, -1.0)
    keep = np.ptp(X, axis=0) > 0
    names = [h.strip() for h, k in zip(header[:-1], keep) if k]
    return UCIData(X[:, keep], y, names, task, key)
