"""Loaders for the real data sets shipped with jaxmtl (School, IDA, Mulan)."""

from __future__ import annotations

from importlib import resources
from typing import NamedTuple

import numpy as np

from ..errors import NonFiniteError, ParameterError
from ._arff import parse_arff

__all__ = [
    "MultiTaskData",
    "BinarySplit",
    "MulanData",
    "SCHOOL_FEATURE_NAMES",
    "SCHOOL_STUDENT_COLUMNS",
    "load_school",
    "ida_names",
    "load_ida",
    "mulan_names",
    "load_mulan",
]

_PACKAGE = "jaxmtl.datasets"

_IDA_NAMES = ("banana", "breast_cancer", "german", "heart", "image", "titanic")
# name -> number of targets (the last k attributes of the ARFF file)
_MULAN_TARGETS = {"atp1d": 6, "edm": 2, "enb": 2, "jura": 3, "osales": 12, "scpf": 3, "sf1": 3, "slump": 3,
                  "wq": 14}

#: Names of the 28 School columns (layout from PROVENANCE_school.txt, verified on the data).
SCHOOL_FEATURE_NAMES: tuple[str, ...] = (
    ("year_1985", "year_1986", "year_1987", "school_pct_free_meals", "school_pct_vr_band1")
    + ("student_gender_a", "student_gender_b")
    + ("student_vr_band1", "student_vr_band2", "student_vr_band3")
    + tuple(f"student_ethnic_{i}" for i in range(1, 12))
    + ("school_gender_mixed", "school_gender_boys", "school_gender_girls")
    + ("school_denom_maintained", "school_denom_cofe", "school_denom_rc")
    + ("bias",)
)

#: The 19 binary student-level columns (year 3, gender 2, VR band 3, ethnic group 11).
SCHOOL_STUDENT_COLUMNS: tuple[int, ...] = (0, 1, 2, 5, 6) + tuple(range(7, 21))


class MultiTaskData(NamedTuple):
    """Multi-task data in long form: example ``i`` is ``(X[i], y[i])`` of task ``tasks[i]``."""

    X: np.ndarray
    y: np.ndarray
    tasks: np.ndarray
    feature_names: tuple[str, ...] | None
    description: str


class BinarySplit(NamedTuple):
    """One train/test realisation of a binary benchmark; labels are -1.0 / +1.0."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


class MulanData(NamedTuple):
    """A multi-target regression set: inputs ``X (n, p)`` and targets ``Y (n, k)``."""

    X: np.ndarray
    Y: np.ndarray
    feature_names: list[str]
    target_names: list[str]


def _load_npz(filename: str) -> dict[str, np.ndarray]:
    ref = resources.files(_PACKAGE) / filename
    with resources.as_file(ref) as path, np.load(path) as npz:
        return {key: npz[key] for key in npz.files}


def _read_text(filename: str) -> str:
    return (resources.files(_PACKAGE) / filename).read_bytes().decode("utf-8", errors="replace")


def _normalise_name(name, valid: tuple[str, ...], what: str) -> str:
    if not isinstance(name, str):
        raise ParameterError(f"{what} name must be a string, got {type(name).__name__}")
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    if key not in valid:
        raise ParameterError(f"unknown {what} data set {name!r}; valid names: {', '.join(valid)}")
    return key


def load_school(student_features_only: bool = True) -> MultiTaskData:
    """The ILEA School data: 15362 students in 139 schools (tasks), exam score as output.

    Args:
        student_features_only: if True (default) keep the 19 binary student-level columns
            used by Bonilla et al. (2007) and Baldassarre et al. (2012) (year of exam 3,
            gender 2, verbal-reasoning band 3, ethnic group 11; see
            :data:`SCHOOL_STUDENT_COLUMNS`); if False keep all 28 columns (those plus two
            school-level percentages, school gender 3, school denomination 3 and a constant
            bias column).

    Returns:
        :class:`MultiTaskData` with ``X`` float64 ``(15362, 19)`` (or ``(15362, 28)``), ``y``
        float64 ``(15362,)`` exam scores in [1, 70], ``tasks`` int64 ``(15362,)`` school ids
        0..138, ``feature_names`` (names of the kept columns) and a short ``description``.
        Provenance and licence: ``PROVENANCE_school.txt`` beside this module.

    Example:
        >>> from jaxmtl.datasets import load_school
        >>> data = load_school()
        >>> data.X.shape, data.y.shape, int(data.tasks.max()) + 1
        ((15362, 19), (15362,), 139)
    """
    raw = _load_npz("school.npz")
    X = raw["X"].astype(np.float64)
    cols = list(SCHOOL_STUDENT_COLUMNS) if student_features_only else list(range(X.shape[1]))
    X = X[:, cols]
    names = tuple(SCHOOL_FEATURE_NAMES[c] for c in cols)
    kind = "19 binary student-level features" if student_features_only else "all 28 columns"
    description = (
        "ILEA School data (exam scores 1985-87): 15362 students, 139 schools as tasks, "
        f"{kind}; output = exam score. Source: MALSAR school.mat (see PROVENANCE_school.txt)."
    )
    return MultiTaskData(
        X=X,
        y=raw["y"].astype(np.float64),
        tasks=raw["task"].astype(np.int64),
        feature_names=names,
        description=description,
    )


def ida_names() -> tuple[str, ...]:
    """Names of the bundled IDA binary benchmarks, for :func:`load_ida`."""
    return _IDA_NAMES


def load_ida(name: str, split: int | None = None, n_splits: int | None = None) -> BinarySplit | list[BinarySplit]:
    """One of Rätsch's IDA binary classification benchmarks, with the realisations bundled (the first 10).

    Available: ``banana`` (2-d, 400 train / 4900 test), ``breast_cancer`` (9-d, 200/77),
    ``german`` (20-d, 700/300), ``heart`` (13-d, 170/100), ``image`` (18-d, 1300/1010),
    ``titanic`` (3-d, 150/2051). The inputs are already standardised by Rätsch. Only the
    first 10 of the original 100 realisations are available. Provenance:
    ``PROVENANCE_ida.txt`` beside this module.

    Args:
        name: one of :func:`ida_names` (case-insensitive; ``-`` is read as ``_``).
        split: 0-based index of the realisation (0..9, the original IDA realisation numbers
            1..10), or None for several (see ``n_splits``).
        n_splits: with ``split=None``, how many realisations to return, the first ones in the
            original order (None: every bundled realisation). A script that must stay comparable
            when more realisations are bundled names its count here.

    Returns:
        a :class:`BinarySplit` ``(X_train (n_train, d), y_train (n_train,), X_test (n_test, d),
        y_test (n_test,))`` of float64 arrays with labels in {-1.0, +1.0} when ``split`` is an
        int; a list of ``n_splits`` of them (all bundled ones by default) when ``split`` is None.

    Raises:
        ParameterError: unknown name, split not an int in 0..9, n_splits not an int in 1..10, or
            both split and n_splits given.

    Example:
        >>> from jaxmtl.datasets import load_ida
        >>> Xtr, ytr, Xte, yte = load_ida("heart", split=0)
        >>> Xtr.shape, Xte.shape, sorted(set(ytr.tolist()))
        ((170, 13), (100, 13), [-1.0, 1.0])
        >>> len(load_ida("heart")), len(load_ida("heart", n_splits=5))
        (10, 5)
    """
    key = _normalise_name(name, _IDA_NAMES, "IDA")
    raw = _load_npz(f"{key}.npz")
    x = raw["x"].astype(np.float64)
    t = raw["t"].astype(np.float64)
    train, test = raw["train"].astype(np.int64), raw["test"].astype(np.int64)
    n_total = train.shape[0]

    def one(i: int) -> BinarySplit:
        return BinarySplit(x[train[i]], t[train[i]], x[test[i]], t[test[i]])

    if split is None:
        if n_splits is None:
            return [one(i) for i in range(n_total)]
        if isinstance(n_splits, bool) or not isinstance(n_splits, (int, np.integer)) or not 1 <= n_splits <= n_total:
            raise ParameterError(f"n_splits must be an int in 1..{n_total} (the bundled realisations) or None, "
                                 f"got {n_splits!r}")
        return [one(i) for i in range(int(n_splits))]
    if n_splits is not None:
        raise ParameterError(f"give split (one realisation) or n_splits (the first ones), not both: "
                             f"split={split!r}, n_splits={n_splits!r}")
    if isinstance(split, bool) or not isinstance(split, (int, np.integer)):
        raise ParameterError(f"split must be an int in 0..{n_total - 1} or None, got {split!r}")
    if not 0 <= int(split) < n_total:
        raise ParameterError(f"split must be in 0..{n_total - 1}, got {split}")
    return one(int(split))


def mulan_names() -> tuple[str, ...]:
    """Names of the bundled Mulan multi-target regression sets, for :func:`load_mulan`."""
    return tuple(sorted(_MULAN_TARGETS))


def load_mulan(name: str, missing: str = "median") -> MulanData:
    """A Mulan multi-target regression set (Spyromitros-Xioufis et al., 2016).

    ==========  ======  ====  ====
    name        n       p     k
    ==========  ======  ====  ====
    ``atp1d``   337     411   6
    ``edm``     154     16    2
    ``enb``     768     8     2
    ``jura``    359     15    3
    ``osales``  639     401   12   (online product sales; missing inputs)
    ``scpf``    1137    23    3    (SeeClickFix counts, heavy-tailed targets; missing inputs)
    ``sf1``     323     10    3    (solar-flare counts, mostly zero)
    ``slump``   103     7     3
    ``wq``      1060    16    14
    ==========  ======  ====  ====

    The targets are the last ``k`` attributes of each ARFF file; every attribute is numeric.
    osales and scpf have missing inputs (``?``; no target is missing): with ``missing='median'``
    each missing entry is replaced by its column's median over the whole file (0 for a column
    with no value) — a simple, documented imputation that uses no target; ``missing='raise'``
    raises :class:`~jaxmtl.errors.NonFiniteError` instead. Provenance and licences:
    ``PROVENANCE_mulan.txt`` beside this module.

    Args:
        name: one of :func:`mulan_names` (case-insensitive).
        missing: 'median' (impute missing inputs) or 'raise'.

    Returns:
        :class:`MulanData` ``(X (n, p) float64, Y (n, k) float64, feature_names (p,),
        target_names (k,))``.

    Example:
        >>> from jaxmtl.datasets import load_mulan
        >>> X, Y, features, targets = load_mulan("jura")
        >>> X.shape, Y.shape, targets
        ((359, 15), (359, 3), ['Cd', 'Co', 'Cu'])
    """
    key = _normalise_name(name, mulan_names(), "Mulan")
    arff = parse_arff(_read_text(f"{key}.arff"))
    if missing not in ("median", "raise"):
        raise ParameterError(f"missing must be 'median' or 'raise'; received {missing!r}.")
    k = _MULAN_TARGETS[key]
    X = arff.data[:, :-k].copy()
    if not np.all(np.isfinite(arff.data[:, -k:])) or (missing == "raise" and not np.all(np.isfinite(X))):
        raise NonFiniteError(f"Mulan set {key!r} has missing or non-finite values")
    holes = ~np.isfinite(X)
    if holes.any():
        observed = np.where(holes, np.nan, X)
        with np.errstate(all="ignore"):
            medians = np.nanmedian(np.where(holes.all(0), 0.0, observed), axis=0) if holes.all(0).any() \
                else np.nanmedian(observed, axis=0)
        X[holes] = np.take(medians, np.nonzero(holes)[1])
    return MulanData(
        X=X,
        Y=arff.data[:, -k:].copy(),
        feature_names=list(arff.names[:-k]),
        target_names=list(arff.names[-k:]),
    )
