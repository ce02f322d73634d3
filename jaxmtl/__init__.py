"""jaxmtl: learning many related functions at once with kernels, in JAX.

Matrix-valued kernels Γ(x, x') = K(x, x')·A and their generalisations, spectral filtering
(Tikhonov, iterated Tikhonov, truncated SVD, Landweber, the ν-method) with the whole
regularization path in one compiled call, and model selection on it.

Modules:
  kernels     scalar kernels (pytrees) and width heuristics
  outputs     output matrices A
  operators   Gram operators (K ⊗ A and a dense reference)
  filters     the spectral filters
  paths       the eigen regularization path
  matrix_free Landweber / ν-method paths over any Gram operator (lax.scan)
  iterative   iterated Tikhonov with one Cholesky; stacked common-similarity ω paths
  structured  task-indexed, common-similarity, sum-of-separable and transformable operators
  fields      divergence-free / curl-free Gaussian field kernels (one GEMM per product)
  selection   hold-out, k-fold, leave-one-out and GCV on the path
  estimators  VectorValuedRegressor, MultiClassClassifier
  task_models MultiTaskRegressor (long-form data, different inputs per task)
  field_models VectorFieldRegressor (div-free / curl-free kernels)
  datasets    bundled real data and the papers' synthetic problems
  errors      the exception hierarchy
  persistence save / load fitted estimators (portable .npz, no pickle)
"""

from . import (errors, fields, filters, iterative, kernels, matrix_free, operators, outputs, paths, selection,
               structured)
from .estimators import MultiClassClassifier, VectorValuedRegressor
from .field_models import VectorFieldRegressor
from .task_models import MultiTaskRegressor
from .filters import IteratedTikhonov, Landweber, NuMethod, Tikhonov, TruncatedSVD
from .kernels import Gaussian, Laplacian, Linear, Matern, Polynomial, SobolevSpline
from .paths import spectral_path
from .persistence import load, save

__version__ = "0.1.0"

__all__ = [
    "errors",
    "filters",
    "kernels",
    "operators",
    "outputs",
    "paths",
    "selection",
    "structured",
    "fields",
    "matrix_free",
    "iterative",
    "VectorValuedRegressor",
    "MultiTaskRegressor",
    "VectorFieldRegressor",
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
    "save",
    "load",
    "__version__",
]
