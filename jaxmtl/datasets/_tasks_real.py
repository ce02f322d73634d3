"""Loaders for the bundled multi-task sets beyond School: Parkinson's telemonitoring, computer survey.

Both are long-form multi-task data (:class:`~jaxmtl.datasets.MultiTaskData`) whose tasks differ
in behaviour — each patient's symptom score its own level and trend, each respondent's ratings
their own preferences — the setting where per-task models are the baseline to beat. Provenance,
sources and licences: ``PROVENANCE_tasks.txt`` beside this module.

Example:
    >>> from jaxmtl.datasets import load_parkinsons
    >>> d = load_parkinsons()
    >>> d.X.shape, len(set(d.tasks.tolist()))
    ((5875, 19), 42)
"""

from __future__ import annotations

import gzip
from importlib import resources

import numpy as np

from ..errors import ParameterError
from ._real import MultiTaskData, _load_npz

__all__ = ["PARKINSONS_TARGETS", "load_parkinsons", "load_computer_survey"]

_PACKAGE = "jaxmtl.datasets"
#: The two targets of the Parkinson's telemonitoring set (columns 4 and 5 of the file).
PARKINSONS_TARGETS: tuple[str, ...] = ("motor_UPDRS", "total_UPDRS")


def _parkinsons_table() -> tuple[list[str], np.ndarray]:
    raw = (resources.files(_PACKAGE) / "parkinsons_updrs.csv.gz").read_bytes()
    lines = gzip.decompress(raw).decode("ascii").splitlines()
    header = lines[0].split(",")
    return header, np.array([[float(v) for v in line.split(",")] for line in lines[1:] if line], dtype=np.float64)


def load_parkinsons(target: str = "total_UPDRS", outputs: bool = False) -> MultiTaskData:
    """Parkinson's telemonitoring (Tsanas et al., 2010): 5875 voice recordings of 42 patients.

    The tasks are the patients (101–168 recordings each, over six months); the inputs are age,
    sex, the time since recruitment (days) and 16 voice measures; the target is a UPDRS symptom
    score, whose level and trend differ from patient to patient (patient means 7–54, within-patient
    standard deviations 0.3–4.9 for ``total_UPDRS``).

    Args:
      target: 'total_UPDRS' (default) or 'motor_UPDRS' — ``y`` of the multi-task form.
      outputs: if True, ``y`` is (5875, 2): both scores as two outputs (a multi-output set for
        :class:`~jaxmtl.VectorValuedRegressor`; ``tasks`` still names the patients).

    Returns:
      :class:`~jaxmtl.datasets.MultiTaskData` with ``X`` float64 (5875, 19), ``y`` (5875,) or
      (5875, 2), ``tasks`` int64 patient ids 1..42, ``feature_names`` and a ``description``.

    Example:
        >>> d = load_parkinsons(outputs=True)
        >>> d.y.shape
        (5875, 2)
    """
    if not isinstance(target, str) or target not in PARKINSONS_TARGETS:
        raise ParameterError(f"target must be one of {PARKINSONS_TARGETS}; received {target!r}.")
    header, data = _parkinsons_table()
    features = [i for i, name in enumerate(header) if i > 0 and name not in PARKINSONS_TARGETS]
    y = data[:, [4, 5]] if outputs else data[:, header.index(target)]
    return MultiTaskData(
        X=data[:, features], y=y, tasks=data[:, 0].astype(np.int64),
        feature_names=tuple(header[i] for i in features),
        description=("Parkinson's telemonitoring (UCI, Tsanas, Little, McSharry & Ramig 2010): 5875 recordings "
                     f"of 42 patients as tasks; output {'motor_UPDRS and total_UPDRS' if outputs else target}. "
                     "See PROVENANCE_tasks.txt."),
    )


def load_computer_survey(split: str = "all") -> MultiTaskData:
    """The computer survey of Lenk, DeSarbo, Green & Young (1996): 180 respondents (tasks) rate 20
    personal-computer profiles each on a 0–10 scale.

    The inputs are the profiles' 13 binary attributes (coded ±1: telephone hot line, RAM, screen
    size, CPU, hard disk, CD-ROM, cache, colour, availability, warranty, software, guarantee,
    price); each respondent weighs them in their own way. The multi-task literature (Argyriou,
    Evgeniou & Pontil 2008) trains on the first 16 ratings of each respondent and tests on the
    last 4, the split kept here.

    Args:
      split: 'all' (3600 rows), 'train' (the 16 ratings per respondent, 2880 rows) or 'test'
        (the 4 others, 720 rows).

    Returns:
      :class:`~jaxmtl.datasets.MultiTaskData` with ``X`` float64 (·, 13) in {−1, 1}, ``y`` float64
      ratings 0..10, ``tasks`` int64 respondent ids 0..179.

    Example:
        >>> d = load_computer_survey("train")
        >>> d.X.shape, int(d.tasks.max()) + 1
        ((2880, 13), 180)
    """
    if split not in ("all", "train", "test"):
        raise ParameterError(f"split must be 'all', 'train' or 'test'; received {split!r}.")
    raw = _load_npz("computer_survey.npz")
    keep = np.ones(len(raw["y"]), bool) if split == "all" else raw["test"] == (split == "test")
    return MultiTaskData(
        X=raw["X"][keep].astype(np.float64), y=raw["y"][keep].astype(np.float64),
        tasks=raw["task"][keep].astype(np.int64), feature_names=None,
        description=(f"Computer survey (Lenk et al. 1996), {split} rows: 180 respondents as tasks, 13 binary "
                     "attributes, rating 0-10. See PROVENANCE_tasks.txt."),
    )
