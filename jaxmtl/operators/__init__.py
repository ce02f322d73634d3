"""Gram operators: Γ C without forming the (nd × nd) matrix of a matrix-valued kernel.

One protocol (:class:`GramOperator`): ``shape``, ``mv(C)`` (C of shape (n, d) → (m, d)),
``as_matrix()`` (dense, for tests), ``eigh()`` where the structure allows it.

=====================  ===================================================================
module                 operators
=====================  ===================================================================
:mod:`.base`           the protocol, K ⊗ A (:class:`SeparableOperator`, Kronecker eigen trick,
                       one-λ solve), a dense reference, σ_max by Lanczos
:mod:`.tasks`          multi-task data with different inputs per task (task-indexed, common
                       similarity over per-task blocks)
:mod:`.sums`           sums of separable kernels Σ Kᵢ ⊗ Bᵢ, transformable kernels
:mod:`.fields`         divergence-free / curl-free Gaussian field kernels
:mod:`.blocked`        exact kernels evaluated in row blocks inside each product (K never stored)
:mod:`.nystrom`        Nyström features (uniform / leverage-score centres), feature statistics
:mod:`.random_features` random Fourier features (Gaussian, Laplacian, Matérn spectral densities)
:mod:`.streaming`      feature statistics and predictions streamed from memory-mapped rows
:mod:`.sharded`        rows sharded across devices with ``jax.sharding`` (Mesh, NamedSharding)
:mod:`.lineax_adapter` any training operator (+ ridge·I) as a lineax operator (:func:`as_lineax`)
=====================  ===================================================================
"""

from .base import *  # noqa: F403
from .base import __all__ as _base_all
from .blocked import *  # noqa: F403
from .blocked import __all__ as _blocked_all
from .fields import *  # noqa: F403
from .fields import __all__ as _fields_all
from .lineax_adapter import as_lineax
from .nystrom import *  # noqa: F403
from .nystrom import __all__ as _nystrom_all
from .random_features import *  # noqa: F403
from .random_features import __all__ as _rff_all
from .sharded import *  # noqa: F403
from .sharded import __all__ as _sharded_all
from .streaming import *  # noqa: F403
from .streaming import __all__ as _streaming_all
from .sums import *  # noqa: F403
from .sums import __all__ as _sums_all
from .tasks import *  # noqa: F403
from .tasks import __all__ as _tasks_all

__all__ = [*_base_all, *_tasks_all, *_sums_all, *_fields_all, *_blocked_all, *_nystrom_all, *_rff_all,
           *_sharded_all, *_streaming_all, "as_lineax"]
