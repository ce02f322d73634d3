"""Repeated k-fold selection judged on data outside the sets it was chosen on.

``MultiClassClassifier()`` selects its kernel width and step count on ⌈1000 / n⌉ (at most 3)
shuffles of 5-fold cross-validation (``n_repeats=None``), a rule chosen on the IDA benchmark.
This script checks that choice on classification problems that played no part in it —
scikit-learn's bundled real sets (breast cancer, wine, iris, digits) and its synthetic generators
(moons, circles, a 20-feature ``make_classification``) — against one partition (``n_repeats=1``):
test error over random splits, its split-to-split standard deviation and the fit time, both
estimators on the same splits, features standardised on the training rows.

The regression part (``--parts regression``) asks the same of ``VectorValuedRegressor`` (width,
ω and step selected by k-fold): scikit-learn's diabetes set, the small Mulan sets bundled in
``jaxmtl.datasets`` (slump, edm, jura, enb) and ``make_friedman1``; the test error is the
aRRMSE (per-output RMSE relative to predicting the training mean, averaged over outputs).

Real sets: ``--splits`` random splits (stratified for classification) with at most 300 training
rows for classification, 150 for regression (half the set below twice that), the rest for
testing. Synthetic sets: per split a fresh draw of 300 (regression: 150) training and 2000 test
rows. Fit times are CPU seconds (median over the splits after the first,
which compiles): the machine may be shared.

Claims per part (printed PASS / FAIL, the script exits 0 either way): over the sets, repeating the
partition lowers the split-to-split std (the mean over the sets of its ratio to one partition's
is below 1) and does not raise the mean test error (classification: by more than 0.1 points;
regression: the mean over the sets of the aRRMSE ratio by more than 0.5 %). ``--quick`` runs a
reduced version for the tests.
Results: ``benchmarks/results/selection_repeats[_regression][_quick].json``.
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
from defaults_vs_tuned import _dtype, arrmse  # noqa: E402

SETS = ("breast_cancer", "wine", "iris", "digits", "moons", "circles", "classification")
REGRESSION_SETS = ("diabetes", "slump", "edm", "jura", "enb", "friedman1")
SYNTHETIC = ("moons", "circles", "classification", "friedman1")
PARTS = ("classification", "regression")
TRAIN_ROWS = 300
REGRESSION_TRAIN_ROWS = 150  # the regressors' fits cost more than the classifier's (ω is searched)
TEST_ROWS = 2000


def _real(name):
    from sklearn import datasets

    from jaxmtl.datasets import load_mulan

    if name == "diabetes":
        return datasets.load_diabetes(return_X_y=True)
    if name in REGRESSION_SETS:
        X, Y, _, _ = load_mulan(name)
        return X, Y
    loader = {"breast_cancer": datasets.load_breast_cancer, "wine": datasets.load_wine,
              "iris": datasets.load_iris, "digits": datasets.load_digits}[name]
    return loader(return_X_y=True)


def _synthetic(name, n, seed):
    from sklearn import datasets

    if name == "moons":
        return datasets.make_moons(n, noise=0.3, random_state=seed)
    if name == "circles":
        return datasets.make_circles(n, noise=0.2, factor=0.5, random_state=seed)
    if name == "friedman1":
        return datasets.make_friedman1(n, n_features=10, noise=1.0, random_state=seed)
    return datasets.make_classification(n, n_features=20, n_informative=5, flip_y=0.05, class_sep=0.8,
                                        random_state=seed)


def splits(name, n_splits):
    """(X_train, y_train, X_test, y_test) for each split, features standardised on the training rows."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    rows = REGRESSION_TRAIN_ROWS if name in REGRESSION_SETS else TRAIN_ROWS
    for split in range(n_splits):
        if name in SYNTHETIC:
            X, y = _synthetic(name, rows + TEST_ROWS, 1000 + split)
            Xtr, Xte, ytr, yte = X[:rows], X[rows:], y[:rows], y[rows:]
        else:
            X, y = _real(name)
            Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=min(rows, len(y) // 2),
                                                  stratify=None if name in REGRESSION_SETS else y,
                                                  random_state=split)
        scaler = StandardScaler().fit(Xtr)
        yield scaler.transform(Xtr), ytr, scaler.transform(Xte), yte


def error_of(model, name, X_test, y_test, y_train) -> float:
    """Classification: % misclassified. Regression: aRRMSE (outputs relative to the training mean)."""
    if name in REGRESSION_SETS:
        return arrmse(np.asarray(y_test).reshape(len(y_test), -1), model.predict(X_test).reshape(len(y_test), -1),
                      np.asarray(y_train).reshape(len(y_train), -1))
    return 100.0 * (1.0 - model.score(X_test, y_test))


def compare(name, n_splits):
    from jaxmtl import MultiClassClassifier, VectorValuedRegressor

    estimator = VectorValuedRegressor if name in REGRESSION_SETS else MultiClassClassifier
    errors = {"one": [], "repeated": []}
    times = {"one": [], "repeated": []}
    for Xtr, ytr, Xte, yte in splits(name, n_splits):
        for key, repeats in (("one", 1), ("repeated", None)):
            start = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = estimator(n_repeats=repeats).fit(Xtr, ytr)
            times[key].append(time.process_time() - start)
            errors[key].append(error_of(model, name, Xte, yte, ytr))
    row = {"set": name, "splits": n_splits, "train_rows": len(ytr)}
    for key in errors:
        row[f"{key}_error"] = float(np.mean(errors[key]))
        row[f"{key}_std"] = float(np.std(errors[key], ddof=1))
        row[f"{key}_fit_s"] = statistics.median(times[key][1:] or times[key])  # the first fit compiles
    row["fit_time_ratio"] = row["repeated_fit_s"] / row["one_fit_s"]
    return row


def claims(part, rows) -> list[dict]:
    std_ratio = float(np.mean([r["repeated_std"] / r["one_std"] for r in rows]))
    out = [{"claim": "repeated partitions lower the split-to-split std: mean ratio over the sets below 1",
            "value": std_ratio, "pass": bool(std_ratio < 1.0)}]
    if part == "classification":
        shift = float(np.mean([r["repeated_error"] - r["one_error"] for r in rows]))
        out.append({"claim": "repeated partitions raise the mean test error over the sets by at most 0.1 points",
                    "value": shift, "pass": bool(shift <= 0.1)})
    else:
        ratio = float(np.mean([r["repeated_error"] / r["one_error"] for r in rows]))
        out.append({"claim": "repeated partitions raise the mean aRRMSE by at most 0.5 %: mean ratio over the sets "
                             "at most 1.005", "value": ratio, "pass": bool(ratio <= 1.005)})
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    args = parser.parse_args(argv)
    n_splits = 3 if args.quick else args.splits
    for part in args.parts:
        start = time.perf_counter()
        if part == "classification":
            names = ("wine", "moons") if args.quick else SETS
        else:
            names = ("slump", "friedman1") if args.quick else REGRESSION_SETS
        rows = []
        for name in names:
            rows.append(compare(name, n_splits))
            print(table(rows[-1:], list(rows[-1])), flush=True)
        checked = claims(part, rows)
        for c in checked:
            print(("PASS" if c["pass"] else "FAIL"), c["claim"], c["value"])
        name = "selection_repeats" + ("_regression" if part == "regression" else "") + ("_quick" if args.quick else "")
        train_rows = REGRESSION_TRAIN_ROWS if part == "regression" else TRAIN_ROWS
        write(name, {"quick": args.quick, "splits": n_splits, "train_rows": train_rows, "test_rows": TEST_ROWS,
                     "dtype": _dtype(), "fit_time": "CPU seconds", "seconds": time.perf_counter() - start,
                     "results": {"rows": rows}, "claims": checked})


if __name__ == "__main__":
    main()
