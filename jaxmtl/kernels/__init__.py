"""Kernels: scalar kernels K(x, x') (:mod:`.scalar`) and output matrices A (:mod:`.outputs`).

A matrix-valued kernel of the separable family is Γ(x, x') = K(x, x')·A ([BRBV11] §4.1): the
scalar kernel is an equinox Module from :mod:`jaxmtl.kernels.scalar`, the output matrix a (d, d)
array built by :mod:`jaxmtl.kernels.outputs` (common similarity, graph regularization, output
clusters, mean-regularized, low rank).
"""

from . import outputs
from .scalar import *  # noqa: F403
from .scalar import __all__ as _scalar_all

__all__ = [*_scalar_all, "outputs"]
