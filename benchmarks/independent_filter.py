"""The independent family's filter: Tikhonov (the default, KernelRidge per output) against the ν-method.

``VectorValuedRegressor(family='independent', filter=F)`` for F in {'tikhonov', 'nu_method'} on
Mulan sets (inputs standardised on the training rows), 5 outer folds (``KFold(shuffle=True,
random_state=0)``, as ``defaults_vs_tuned.py --parts mulan``): mean aRRMSE of each filter, the
paired difference (Tikhonov − ν) over the folds in units of its standard error, and the fit CPU
seconds (``time.process_time()``). This is the measurement behind ``filter=None`` running Tikhonov
in the independent family (docs/defaults.md).

Usage: python benchmarks/independent_filter.py [--sets slump,edm,jura,atp1d,sf1,enb] [--quick]
Writes benchmarks/results/independent_filter[_quick].json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import table, write  # noqa: E402
from defaults_vs_tuned import arrmse  # noqa: E402

SETS = ("slump", "edm", "jura", "atp1d", "sf1", "enb")
FILTERS = ("tikhonov", "nu_method")


def compare(name: str, folds: int) -> dict:
    """One set: per filter the mean aRRMSE and CPU seconds over the outer folds, and the paired
    difference of the two in standard errors."""
    from sklearn.model_selection import KFold
    from sklearn.preprocessing import StandardScaler

    from jaxmtl import VectorValuedRegressor
    from jaxmtl.datasets import load_mulan

    X, Y, _, _ = load_mulan(name)
    err, cpu = {f: [] for f in FILTERS}, {f: 0.0 for f in FILTERS}
    for train, test in KFold(folds, shuffle=True, random_state=0).split(X):
        scaler = StandardScaler().fit(X[train])
        for f in FILTERS:
            start = time.process_time()
            m = VectorValuedRegressor(family="independent", filter=f).fit(scaler.transform(X[train]), Y[train])
            cpu[f] += time.process_time() - start
            err[f].append(arrmse(Y[test], np.asarray(m.predict(scaler.transform(X[test]))), Y[train]))
    diff = np.asarray(err["tikhonov"]) - np.asarray(err["nu_method"])
    se = diff.std(ddof=1) / np.sqrt(len(diff))
    return {"set": name, "tikhonov_arrmse": float(np.mean(err["tikhonov"])),
            "nu_method_arrmse": float(np.mean(err["nu_method"])),
            "difference_in_se": float(diff.mean() / se) if se > 0 else 0.0,
            "tikhonov_cpu_s": cpu["tikhonov"], "nu_method_cpu_s": cpu["nu_method"]}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--quick", action="store_true", help="slump only, 2 folds")
    args = parser.parse_args(argv)
    names, folds = (["slump"], 2) if args.quick else (args.sets.split(","), 5)
    rows = []
    for name in names:
        rows.append(compare(name, folds))
        print(table(rows[-1:], list(rows[-1])), flush=True)
    path = write("independent_filter" + ("_quick" if args.quick else ""),
                 {"command": "python benchmarks/independent_filter.py" + (" --quick" if args.quick else ""),
                  "folds": folds, "dtype": "float32 (JAX default)", "rows": rows})
    print(table(rows, list(rows[0])))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
