"""Multiple kernel learning with the square loss: RLS2 ([Din11] ch. 3–4).

=====================  ===================================================================
module                 contents
=====================  ===================================================================
:mod:`.dictionaries`   basis-kernel dictionaries (standard benchmark set, linear per feature,
                       user lists), scalings (4.12–4.14), dense or lazy Gram stacks
:mod:`.simplex`        the simplex-constrained least squares d-step (4.4) by SMO
:mod:`.rls2`           Algorithm 3, warm-started λ paths, KKT conditions, linear RLS2 weights
:mod:`.bayes`          the MAP view (§4.2): predictive variances, degrees of freedom (4.11),
                       coefficient profiles (Figure 4.3)
=====================  ===================================================================

[Din11] F. Dinuzzo, *Learning functions with kernel methods*, PhD thesis, University of Pavia, 2011.
"""

from .bayes import Predictive, degrees_of_freedom, plot_profiles, predictive
from .dictionaries import (
    STANDARD_DEGREES,
    STANDARD_WIDTHS,
    BasisKernel,
    GramStack,
    KernelDictionary,
    dictionary,
    linear_dictionary,
    standard_dictionary,
)
from .rls2 import (
    RLS2Path,
    RLS2Result,
    initial_kernel,
    kkt_conditions,
    linear_coefficients,
    path_predict,
    rls2_objective,
    rls2_path,
    rls2_solve,
    rls2_step,
)
from .simplex import simplex_qp

__all__ = ["STANDARD_WIDTHS", "STANDARD_DEGREES", "BasisKernel", "KernelDictionary", "GramStack",
           "standard_dictionary", "linear_dictionary", "dictionary", "simplex_qp", "RLS2Result", "RLS2Path",
           "initial_kernel", "rls2_step", "rls2_objective", "rls2_solve", "rls2_path", "kkt_conditions",
           "path_predict", "linear_coefficients", "Predictive", "predictive", "degrees_of_freedom", "plot_profiles"]
