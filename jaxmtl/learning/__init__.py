"""Learning the kernel: output kernels by block coordinate descent and hyperparameters by gradient.

=========================  ================================================================
module                     contents
=========================  ================================================================
:mod:`.output_kernel`      output kernel learning, Algorithm 1 of [DOGP11] (Sylvester step on a
                           cached eigendecomposition of K, closed-form L step, low-rank variant)
:mod:`.gradient`           differentiable validation criteria (k-fold with implicit
                           differentiation, LOO / GCV on the eigen path, checkpointed matrix-free
                           paths), constrained parametrisations and the optax optimisation loop
=========================  ================================================================
"""

from .gradient import *  # noqa: F403
from .gradient import __all__ as _gradient_all
from .output_kernel import *  # noqa: F403
from .output_kernel import __all__ as _okl_all

__all__ = [*_okl_all, *_gradient_all]
