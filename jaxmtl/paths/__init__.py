"""Regularization paths: every filter parameter in one compiled call.

=====================  ===================================================================
module                 paths
=====================  ===================================================================
:mod:`.eigen`          the eigen path of a separable kernel K ⊗ A (any filter), losses
:mod:`.tridiagonal`    the (iterated) Tikhonov path through one tridiagonal reduction of K
:mod:`.scan`           Landweber / ν-method over any Gram operator as one ``lax.scan``
:mod:`.iterated`       iterated Tikhonov with one reused Cholesky; predictions along a path
:mod:`.omega`          every ω of the common-similarity family in one stacked scan
:mod:`.memory`         memory plans: the batch a compiled sweep may hold, in chunks
:mod:`.preconditioned` Falkon-preconditioned paths and the D × D feature-space path (Nyström, RFF)
:mod:`.falkon_grid`    Falkon's CG over a whole ω × λ grid: hold-out losses, the selected model
=====================  ===================================================================
"""

from .eigen import *  # noqa: F403
from .eigen import __all__ as _eigen_all
from .falkon_grid import *  # noqa: F403
from .falkon_grid import __all__ as _falkon_grid_all
from .iterated import *  # noqa: F403
from .memory import *  # noqa: F403
from .memory import __all__ as _memory_all
from .iterated import __all__ as _iterated_all
from .omega import *  # noqa: F403
from .omega import __all__ as _omega_all
from .preconditioned import *  # noqa: F403
from .preconditioned import __all__ as _preconditioned_all
from .scan import *  # noqa: F403
from .scan import __all__ as _scan_all
from .tridiagonal import *  # noqa: F403
from .tridiagonal import __all__ as _tridiagonal_all

__all__ = [*_eigen_all, *_falkon_grid_all, *_scan_all, *_iterated_all, *_omega_all, *_preconditioned_all, *_memory_all,
           *_tridiagonal_all]
