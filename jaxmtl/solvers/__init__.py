"""Kernel machines for any convex loss: fixed-point and coordinate-descent solvers ([Din11] ch. 2).

=========================  ================================================================
module                     contents
=========================  ================================================================
:mod:`.losses`             the losses by their resolvents (Table 2.1 + Huber, logistic), registry
:mod:`.fixed_point`        the fixed-point iteration (2.10) over any Gram operator, C paths
:mod:`.coordinate_descent` coordinate descent (Algorithms 1–2), the column protocol
:mod:`.smo`                libsvm's SMO (pairs keeping Σ c = 0) for the hinge and ε-insensitive losses
=========================  ================================================================

[Din11] F. Dinuzzo, *Learning functions with kernel methods*, PhD thesis, University of Pavia, 2011.
"""

from ._common import SolverResult, duality_gap, primal_objective
from .coordinate_descent import ColumnAccess, column_access, coordinate_descent, coordinate_descent_path
from .fixed_point import fixed_point, fixed_point_path, step_size
from .losses import LOSSES, Loss, get_loss, resolvent
from .smo import SMO_LOSSES, smo, smo_path

__all__ = ["Loss", "LOSSES", "get_loss", "resolvent", "SolverResult", "duality_gap", "primal_objective",
           "fixed_point", "fixed_point_path", "step_size", "coordinate_descent", "coordinate_descent_path",
           "ColumnAccess", "column_access", "smo", "smo_path", "SMO_LOSSES"]
