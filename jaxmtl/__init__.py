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
  extend      registering a kernel, filter, output family or loss of your own (checks: its validation)
"""

from . import (
                     checks,
                     datasets,
                     errors,
                     extend,
                     filters,
                     io,
                     kernels,
                     mixed_effect,
                     mkl,
                     models,
                     operators,
                     paths,
                     selection,
                     solvers,
)
from .filters import IteratedTikhonov, Landweber, NuMethod, Tikhonov, TruncatedSVD
from .extend import register_filter, register_kernel, register_loss, register_output_family
from .io import load, save
from .models.export import export
from .kernels import Gaussian, Laplacian, Linear, Matern, Polynomial, SobolevSpline, outputs
from .models import (
                     ApproximateKernelRegressor,
                     KernelMachine,
                     KernelMachineClassifier,
                     MixedEffectRegressor,
                     MultiClassClassifier,
                     MultiTaskRegressor,
                     OutputKernelClassifier,
                     OutputKernelRegressor,
                     RLS2Classifier,
                     RLS2Regressor,
                     VectorFieldRegressor,
                     VectorValuedRegressor,
)
from .paths import spectral_path
from .selection import GCV, Holdout, KFold, LeaveOneOut, PathSelection, regularization_path

__version__ = "0.2.0"

__all__ = [
    "checks",
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
    "__version__",
]
