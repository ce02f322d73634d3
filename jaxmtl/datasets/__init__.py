"""Bundled real data and the synthetic problems of the source papers.

Real data (shipped as package data, provenance notes ``PROVENANCE_*.txt`` beside this file):

* :func:`load_school` — ILEA School, 15362 students × 19 (or 28) features, 139 tasks.
* :func:`load_ida` / :func:`ida_names` — six IDA binary benchmarks, 10 train/test splits each.
* :func:`load_mulan` / :func:`mulan_names` — six Mulan multi-target regression sets.
* :func:`load_parkinsons` — Parkinson's telemonitoring, 5875 recordings of 42 patients (tasks).
* :func:`load_computer_survey` — computer ratings of 180 respondents (tasks), 20 each.
* :func:`load_sarcos` — SARCOS inverse dynamics, 4449 rows × 21 inputs, 7 outputs (joint torques).
* :func:`parse_arff` — the small dense-ARFF reader used by :func:`load_mulan`.

Synthetic problems (Baldassarre et al., [BRBV11] §7.1):

* :func:`make_multitask_toy`, :func:`multitask_toy_function` — four related 1-D tasks.
* :func:`vector_field_1`, :func:`vector_field_2`, :func:`grid_2d` — the 2-D vector fields.

Output kernel learning (Dinuzzo et al., [DOGP11] §5.1): :func:`make_okl_sim` — sim0–sim3.

All arrays are NumPy (float64); pass them to the estimators as they are.
"""

from ._arff import ArffData, parse_arff
from ._real import (
    SCHOOL_FEATURE_NAMES,
    SCHOOL_STUDENT_COLUMNS,
    BinarySplit,
    MulanData,
    MultiTaskData,
    ida_names,
    load_ida,
    load_mulan,
    load_school,
    mulan_names,
)
from ._sarcos import SARCOS_FEATURE_NAMES, SARCOS_TARGET_NAMES, load_sarcos
from ._tasks_real import PARKINSONS_TARGETS, load_computer_survey, load_parkinsons
from ._synthetic import (
    FIELD1_CENTRES,
    FIELD1_VARIANCE,
    FIELD2_WIDTH,
    TOY_AMPLITUDE,
    TOY_CENTRES,
    TOY_TASK_WEIGHTS,
    TOY_WIDTH,
    ToyData,
    grid_2d,
    make_multitask_toy,
    multitask_toy_function,
    vector_field_1,
    vector_field_2,
)
from ._uci import UCI_STANDARDIZE, UCIData, load_uci, uci_names
from .okl_sims import OKL_SIM_GROUPS, OKLSimData, make_okl_sim

__all__ = [
    # real data
    "MultiTaskData",
    "BinarySplit",
    "MulanData",
    "ArffData",
    "SCHOOL_FEATURE_NAMES",
    "SCHOOL_STUDENT_COLUMNS",
    "load_school",
    "ida_names",
    "load_ida",
    "mulan_names",
    "load_mulan",
    "parse_arff",
    "PARKINSONS_TARGETS",
    "load_parkinsons",
    "load_computer_survey",
    "SARCOS_FEATURE_NAMES",
    "SARCOS_TARGET_NAMES",
    "load_sarcos",
    "UCIData",
    "UCI_STANDARDIZE",
    "load_uci",
    "uci_names",
    # synthetic
    "ToyData",
    "TOY_TASK_WEIGHTS",
    "TOY_CENTRES",
    "TOY_WIDTH",
    "TOY_AMPLITUDE",
    "FIELD1_CENTRES",
    "FIELD1_VARIANCE",
    "FIELD2_WIDTH",
    "make_multitask_toy",
    "multitask_toy_function",
    "vector_field_1",
    "vector_field_2",
    "grid_2d",
    "OKL_SIM_GROUPS",
    "OKLSimData",
    "make_okl_sim",
]
