"""jaxmtl: learning many related functions at once with kernels, in JAX.

Matrix-valued kernels Γ(x, x') = K(x, x')·A and their generalisations, spectral filtering
(Tikhonov, iterated Tikhonov, truncated SVD, Landweber, the ν-method) with the whole
regularization path in one compiled call, and model selection on it.

Layout (each folder is one layer of the architecture; see docs/design.md):
  kernels     scalar kernels (pytrees), width heuristics, output matrices A (kernels.outputs)
  operators   Gram operators: K ⊗ A, task-indexed, sums of separable, div/curl-free fields
  filters     the spectral filters and their recurrences
  paths       eigen path, matrix-free scan, iterated Tikhonov, stacked ω paths
  selection   hold-out, k-fold, leave-one-out and GCV on the path
  models      the estimators, one module per family
  solvers     fixed-point and coordinate-descent solvers for any convex loss (resolvents)
  mkl         RLS2: multiple kernel learning with the square loss, basis-kernel dictionaries
  mixed_effect mixed-effect multi-task kernels, Algorithm 4, the client-server online learner
  io          save / load fitted estimators (portable .npz, no pickle); export a prediction function
  datasets    bundled real data and the papers' synthetic problems
  errors      the exception hierarchy
  compilation enable_compilation_cache: compiled programs kept on disk for later processes
  extend      registering a kernel, filter, output family or loss of your own (checks: its validation)
"""

import importlib
from typing import TYPE_CHECKING, Any

# Imported when first used (PEP 562), so that ``import jaxmtl`` costs about what ``import jax``
# costs: scikit-learn (the estimators' base classes), optax (gradient searches), the data sets and
# the rest load with the first name that needs them. Each public name maps to the module defining it.
_SUBMODULES = ("checks", "compilation", "datasets", "errors", "extend", "filters", "io", "kernels",
               "mixed_effect", "mkl", "models", "operators", "paths", "selection", "solvers")
_NAMES = {
    **dict.fromkeys(("IteratedTikhonov", "Landweber", "NuMethod", "Tikhonov", "TruncatedSVD"), "filters"),
    **dict.fromkeys(("register_filter", "register_kernel", "register_loss", "register_output_family"),
                    "extend"),
    **dict.fromkeys(("load", "save"), "io"),
    "export": "models.export",
    **dict.fromkeys(("Gaussian", "Laplacian", "Linear", "Matern", "Polynomial", "SobolevSpline", "outputs"),
                    "kernels"),
    **dict.fromkeys(("ApproximateKernelRegressor", "KernelMachine", "KernelMachineClassifier",
                     "MixedEffectRegressor", "MultiClassClassifier", "MultiTaskRegressor",
                     "OutputKernelClassifier", "OutputKernelRegressor", "RLS2Classifier", "RLS2Regressor",
                     "VectorFieldRegressor", "VectorValuedRegressor"), "models"),
    "spectral_path": "paths",
    **dict.fromkeys(("enable_compilation_cache", "disable_compilation_cache"), "compilation"),
    **dict.fromkeys(("GCV", "Holdout", "KFold", "LeaveOneOut", "PathSelection", "regularization_path"),
                    "selection"),
}


def __getattr__(name: str) -> Any:
    """The submodule or public name ``name``, imported on first access and then kept here."""
    if name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    elif name in _NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # what the names are, for type checkers and documentation tools
    from . import (checks, compilation, datasets, errors, extend, filters, io, kernels, mixed_effect, mkl, models,
                   operators, paths, selection, solvers)
    from .compilation import disable_compilation_cache, enable_compilation_cache
    from .extend import register_filter, register_kernel, register_loss, register_output_family
    from .filters import IteratedTikhonov, Landweber, NuMethod, Tikhonov, TruncatedSVD
    from .io import load, save
    from .kernels import Gaussian, Laplacian, Linear, Matern, Polynomial, SobolevSpline, outputs
    from .models import (ApproximateKernelRegressor, KernelMachine, KernelMachineClassifier,
                         MixedEffectRegressor, MultiClassClassifier, MultiTaskRegressor,
                         OutputKernelClassifier, OutputKernelRegressor, RLS2Classifier, RLS2Regressor,
                         VectorFieldRegressor, VectorValuedRegressor)
    from .models.export import export
    from .paths import spectral_path
    from .selection import GCV, Holdout, KFold, LeaveOneOut, PathSelection, regularization_path

__version__ = "0.2.0"

__all__ = [
    "checks",
    "compilation",
    "datasets",
    "errors",
    "extend",
    "filters",
    "io",
    "kernels",
    "mixed_effect",
    "mkl",
    "models",
    "operators",
    "outputs",
    "paths",
    "selection",
    "solvers",
    "VectorValuedRegressor",
    "MultiTaskRegressor",
    "VectorFieldRegressor",
    "MixedEffectRegressor",
    "KernelMachine",
    "KernelMachineClassifier",
    "RLS2Regressor",
    "RLS2Classifier",
    "ApproximateKernelRegressor",
    "OutputKernelRegressor",
    "OutputKernelClassifier",
    "MultiClassClassifier",
    "Tikhonov",
    "IteratedTikhonov",
    "TruncatedSVD",
    "Landweber",
    "NuMethod",
    "Gaussian",
    "Laplacian",
    "Linear",
    "Polynomial",
    "Matern",
    "SobolevSpline",
    "spectral_path",
    "regularization_path",
    "PathSelection",
    "Holdout",
    "KFold",
    "LeaveOneOut",
    "GCV",
    "save",
    "load",
    "export",
    "register_kernel",
    "register_filter",
    "register_output_family",
    "register_loss",
    "enable_compilation_cache",
    "disable_compilation_cache",
    "__version__",
]
