"""Test error of each estimator in float64, float32 and with TF32 / bfloat16 matrix products.

Per estimator on a bundled set (Slump: 70 training / 33 test rows of three targets; IDA heart,
realisation 1: 170 / 100), the test error (regression: MSE over the test targets' variance;
classification: error rate) of the model selected with

* ``dtype='float64'``; ``dtype='float32'`` (full float32 products);
* ``dtype='float32', matmul_precision='tf32'`` with TF32 products and
  ``matmul_precision='bfloat16'`` with bfloat16 products, emulated on the CPU
  (:mod:`jaxmtl._emulate`: operands rounded to 10 / 7 mantissa bits);

whether the library warned about the reduced products, and the fit's CPU seconds in float64 and
float32 (the emulated runs' times say nothing about accelerators). ``--quick`` runs two estimators
with small grids (seconds). Writes ``results/precision[_quick].json`` and prints the markdown table of
``docs/precision.md``.

The estimators whose ``fit`` needs task labels or fields (``MultiTaskRegressor``,
``MixedEffectRegressor``, ``VectorFieldRegressor``) have no bundled set of that form small
enough here; their float32 accuracy is tested in ``tests/test_float32.py``.

Usage: ``python benchmarks/precision.py [--quick]``
"""

from __future__ import annotations

import contextlib
import sys
import time
import warnings

import numpy as np

import _bench  # noqa: F401  (puts this checkout on sys.path)
from _bench import report

SETTINGS = {  # name -> (dtype, matmul_precision, emulated mantissa bits)
    "float64": ("float64", None, None),
    "float32": ("float32", None, None),
    "tf32": ("float32", "tf32", 10),
    "bfloat16": ("float32", "bfloat16", 7),
}


def data_sets():
    from jaxmtl.datasets import load_ida, load_mulan

    d = load_mulan("slump")
    idx = np.random.default_rng(0).permutation(len(d.X))
    h = load_ida("heart", split=0)
    return {"slump": (d.X[idx[:70]], d.Y[idx[:70]], d.X[idx[70:]], d.Y[idx[70:]]),
            "heart": (h.X_train, h.y_train, h.X_test, h.y_test)}


def estimators(quick: bool) -> list[tuple[str, str, dict]]:
    """(class name, data set, parameters)."""
    if quick:
        return [("VectorValuedRegressor", "slump", {"n_steps": 60, "width_factors": (0.5, 1.0, 2.0), "n_folds": 3}),
                ("MultiClassClassifier", "heart", {"n_steps": 60, "width_factors": (0.5, 1.0, 2.0), "n_folds": 3})]
    return [("VectorValuedRegressor", "slump", {}),
            ("VectorValuedRegressor", "slump", {"filter": "landweber"}),
            ("VectorValuedRegressor", "slump", {"filter": "tikhonov"}),
            ("MultiClassClassifier", "heart", {}),
            ("ApproximateKernelRegressor", "slump", {}),
            ("KernelMachine", "slump", {}),
            ("KernelMachineClassifier", "heart", {}),
            ("RLS2Regressor", "slump", {}),
            ("RLS2Classifier", "heart", {}),
            ("OutputKernelRegressor", "slump", {}),
            ("OutputKernelClassifier", "heart", {})]


def run_one(cls_name: str, data, params: dict, setting: str) -> dict:
    """Test error, CPU seconds of the fit and the reduced-products warning of one setting."""
    import jaxmtl
    from jaxmtl._emulate import emulated_products

    dtype, products, bits = SETTINGS[setting]
    X, Y, Xt, Yt = data
    model = getattr(jaxmtl, cls_name)(**params, dtype=dtype, matmul_precision=products)
    with warnings.catch_warnings(record=True) as caught, \
            (emulated_products(bits) if bits else contextlib.nullcontext()):
        warnings.simplefilter("always")
        start = time.process_time()
        model.fit(X, Y if Y.ndim == 1 or Y.shape[1] > 1 else Y[:, 0])
        seconds = time.process_time() - start
        pred = model.predict(Xt)
    if cls_name.endswith("Classifier"):
        error = float(np.mean(pred != Yt))
    else:
        error = float(np.mean((pred.reshape(Yt.shape) - Yt) ** 2) / np.mean(np.var(Yt, axis=0)))
    return {"error": error, "cpu_s": seconds,
            "warned": any("matmul_precision" in str(w.message) for w in caught)}


def markdown(rows: list[dict]) -> str:
    """The docs' table: errors per setting ("w": the library warned), float32/float64 error ratio, CPU s."""
    def cell(r, s):
        return f"{r[f'error_{s}']:.3f}" + (" w" if r.get(f"warned_{s}") else "")

    lines = ["| estimator | data | float64 | float32 | TF32 | bfloat16 | float32 / float64 | CPU s (f64 / f32) |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| `{r['estimator']}` | {r['data']} | " + " | ".join(cell(r, s) for s in SETTINGS)
              + f" | {r['ratio_float32']:.3f} | {r['cpu_s_float64']:.1f} / {r['cpu_s_float32']:.1f} |" for r in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    sets = data_sets()
    rows = []
    for cls_name, set_name, params in estimators(args.quick):
        row = {"estimator": cls_name + "".join(f" {k}={v}" for k, v in params.items() if k == "filter"),
               "data": set_name}
        for setting in SETTINGS:
            out = run_one(cls_name, sets[set_name], params, setting)
            row[f"error_{setting}"] = out["error"]
            if setting in ("float64", "float32"):
                row[f"cpu_s_{setting}"] = out["cpu_s"]
            else:
                row[f"warned_{setting}"] = out["warned"]
        row["ratio_float32"] = row["error_float32"] / max(row["error_float64"], 1e-12)
        rows.append(row)
        print(row, flush=True)
    columns = ["estimator", "data", *(f"error_{s}" for s in SETTINGS), "warned_tf32", "warned_bfloat16",
               "cpu_s_float64", "cpu_s_float32"]
    print(markdown(rows))
    report("precision", args.quick, rows, columns, {},
           dtype="float64, float32, float32 with emulated TF32 / bfloat16 products",
           command="python benchmarks/precision.py" + (" --quick" if args.quick else ""),
           note="emulated on the CPU (operands rounded to 10 / 7 mantissa bits); no GPU was available")
    return 0


if __name__ == "__main__":
    sys.exit(main())
