"""Estimators in scikit-learn's conventions, one module per family.

=========================  ================================================================
module                     estimator
=========================  ================================================================
:mod:`.vector_valued`      :class:`VectorValuedRegressor` — f: ℝᵖ → ℝᵈ, Γ = K·A, eigen path
:mod:`.multiclass`         :class:`MultiClassClassifier` — classes coded as vectors ([BRBV11] §5)
:mod:`.multitask`          :class:`MultiTaskRegressor` — long-form data, different inputs per task
:mod:`.fields`             :class:`VectorFieldRegressor` — divergence-free / curl-free fields
:mod:`.kernel_machine`     :class:`KernelMachine`, :class:`KernelMachineClassifier` — any convex loss ([Din11] ch. 2)
:mod:`.rls2`               :class:`RLS2Regressor`, :class:`RLS2Classifier` — sparse multiple kernel learning ([Din11] ch. 3–4)
:mod:`.mixed_effect`       :class:`MixedEffectRegressor` — common + individual functions ([Din11] ch. 5)
:mod:`.approximate`        :class:`ApproximateKernelRegressor` — Nyström / random features ([Din11] §1.6)
:mod:`.output_kernel`      :class:`OutputKernelRegressor`, :class:`OutputKernelClassifier` — learned output kernel ([DOGP11])
=========================  ================================================================

Fitted models as pytrees: :mod:`.predictors` (``model.predictor()``, for jit / vmap / grad; the
kernel expansions) and :mod:`.predictor_kinds` (multi-task, feature-map and div/curl predictors).

Shared machinery: :mod:`._base` (parameters, scikit-learn tags), :mod:`._spectral` (grid
selection on the eigen path), :mod:`._matrix_free` (grid selection on matrix-free paths).
"""

from ..io.registry import register_estimator
from ._base import BaseEstimator
from .approximate import ApproximateKernelRegressor
from .fields import VectorFieldRegressor, angular_error
from .kernel_machine import KernelMachine, KernelMachineClassifier
from .mixed_effect import MixedEffectRegressor
from .multiclass import MultiClassClassifier
from .multitask import MultiTaskRegressor
from .output_kernel import OutputKernelClassifier, OutputKernelRegressor
from .rls2 import RLS2Classifier, RLS2Regressor
from .predictor_kinds import FeaturePredictor, FieldPredictor, TaskPredictor
from .predictors import KernelPredictor, PerOutputGaussian, PerOutputPredictor, Predictor, SeparablePredictor
from .vector_valued import VectorValuedRegressor

__all__ = ["VectorValuedRegressor", "MultiClassClassifier", "MultiTaskRegressor", "VectorFieldRegressor",
           "angular_error", "Predictor", "KernelPredictor", "PerOutputPredictor", "PerOutputGaussian", "SeparablePredictor",
           "TaskPredictor", "FeaturePredictor", "FieldPredictor", "MixedEffectRegressor",
           "KernelMachine", "KernelMachineClassifier", "RLS2Regressor", "RLS2Classifier",
           "ApproximateKernelRegressor", "OutputKernelRegressor", "OutputKernelClassifier"]

# jaxmtl.save / jaxmtl.load know the estimators through this registration only (jaxmtl.io imports no model)
register_estimator(*(cls for cls in map(globals().get, __all__) if isinstance(cls, type) and issubclass(cls, BaseEstimator)))
