"""Repeated k-fold selection judged on data outside the IDA benchmark.

``MultiClassClassifier()`` selects its kernel width and step count on ⌈1000 / n⌉ (at most 3)
shuffles of 5-fold cross-validation (``n_repeats=None``). This script checks that choice on
classification problems that played no part in it — scikit-learn's bundled real sets (breast
cancer, wine, iris, digits) and its synthetic generators (moons, circles, a 20-feature
``make_classification``) — against one partition (``n_repeats=1``): test error over random
splits, its split-to-split standard deviation and the fit time, both estimators on the same
splits, features standardised on the training rows.

Real sets: ``--splits`` stratified random splits with at most 300 training rows (half the set
below 600), the rest for testing. Synthetic sets: per split a fresh draw of 300 training and
2000 test rows.

Claims (printed PASS / FAIL, the script exits 0 either way): over the sets, repeating the
partition lowers the split-to-split std (the mean over the sets of its ratio to one partition's
is below 1) and does not raise the mean test error by more than 0.1 points. ``--quick`` runs a
reduced version for the tests.
Results: ``benchmarks/results/selection_repeats[_quick].json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import table, write  # noqa: E402
from defaults_vs_tuned import _dtype  # noqa: E402

SETS = ("breast_cancer", "wine", "iris", "digits", "moons", "circles", "classification")
TRAIN_ROWS = 300
TEST_ROWS = 2000


def _real(name):
    from sklearn import datasets

    loader = {"breast_cancer": datasets.load_breast_cancer, "wine": datasets.load_wine,
              "iris": datasets.load_iris, "digits": datasets.load_digits}[name]
    return loader(return_X_y=True)


def _synthetic(name, n, seed):
    from sklearn import datasets

    if name == "moons":
        return datasets.make_moons(n, noise=0.3, random_state=seed)
    if name == "circles":
        return datasets.make_circles(n, noise=0.2, factor=0.5, random_state=seed)
    return datasets.make_classification(n, n_features=20, n_informative=5, flip_y=0.05, class_sep=0.8,
                                        random_state=seed)


def splits(name, n_splits):
    """(X_train, y_train, X_test, y_test) for each split, features standardised on the training rows."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    for split in range(n_splits):
        if name in ("moons", "circles", "classification"):
            X, y = _synthetic(name, TRAIN_ROWS + TEST_ROWS, 1000 + split)
            Xtr, Xte, ytr, yte = X[:TRAIN_ROWS], X[TRAIN_ROWS:], y[:TRAIN_ROWS], y[TRAIN_ROWS:]
        else:
            X, y = _real(name)
            Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=min(TRAIN_ROWS, len(y) // 2), stratify=y,
                                                  random_state=split)
        scaler = StandardScaler().fit(Xtr)
        yield scaler.transform(Xtr), ytr, scaler.transform(Xte), yte


def compare(name, n_splits):
    from jaxmtl import MultiClassClassifier

    errors = {"one": [], "repeated": []}
    times = {"one": [], "repeated": []}
    for Xtr, ytr, Xte, yte in splits(name, n_splits):
        for key, repeats in (("one", 1), ("repeated", None)):
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = MultiClassClassifier(n_repeats=repeats).fit(Xtr, ytr)
            times[key].append(time.perf_counter() - start)
            errors[key].append(100.0 * (1.0 - model.score(Xte, yte)))
    row = {"set": name, "splits": n_splits, "train_rows": len(ytr)}
    for key in errors:
        row[f"{key}_error"] = float(np.mean(errors[key]))
        row[f"{key}_std"] = float(np.std(errors[key], ddof=1))
        row[f"{key}_fit_s"] = statistics.median(times[key][1:] or times[key])  # the first fit compiles
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--splits", type=int, default=20)
    args = parser.parse_args(argv)
    names = ("wine", "moons") if args.quick else SETS
    n_splits = 3 if args.quick else args.splits
    start = time.perf_counter()
    rows = []
    for name in names:
        rows.append(compare(name, n_splits))
        print(table(rows[-1:], list(rows[-1])), flush=True)
    std_ratio = float(np.mean([r["repeated_std"] / r["one_std"] for r in rows]))
    shift = float(np.mean([r["repeated_error"] - r["one_error"] for r in rows]))
    claims = [
        {"claim": "repeated partitions lower the split-to-split std: mean ratio over the sets below 1",
         "value": std_ratio, "pass": bool(std_ratio < 1.0)},
        {"claim": "repeated partitions raise the mean test error over the sets by at most 0.1 points",
         "value": shift, "pass": bool(shift <= 0.1)},
    ]
    for c in claims:
        print(("PASS" if c["pass"] else "FAIL"), c["claim"], c["value"])
    name = "selection_repeats" + ("_quick" if args.quick else "")
    write(name, {"quick": args.quick, "splits": n_splits, "train_rows": TRAIN_ROWS, "test_rows": TEST_ROWS,
                 "dtype": _dtype(), "seconds": time.perf_counter() - start, "results": {"rows": rows}, "claims": claims})


if __name__ == "__main__":
    main()
