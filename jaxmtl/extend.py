"""Extension points: make a kernel, filter, output family or loss of your own work wherever jaxmtl's do.

Each registration lives next to the registry that uses it; this module gathers them under the
names the top level exports (``jaxmtl.register_kernel``, …). Recipes: docs/extending.md.

=================================  =======================================================================
call                               what it makes work
=================================  =======================================================================
``@register_kernel``               ``jaxmtl.save`` / ``jaxmtl.load`` of a model fitted with the kernel
                                   (estimators accept any :class:`~jaxmtl.kernels.Kernel`, or a list of
                                   kernels to choose from, without registration)
``register_filter(name, cls)``     ``filter=name`` in every estimator and in
                                   :func:`jaxmtl.filters.get_filter`; saving a model that runs it
``register_output_family(name,     ``output=name`` in the estimators taking ``output=``: the family's
eigh, grid)``                      parameter searched on the eigen path, ``family_`` reporting the name
``register_loss(Loss(...))``       ``KernelMachine(loss=name)`` (and saving it by name)
=================================  =======================================================================

A user's own output matrix needs no registration: ``output=A`` (``family_ == 'custom'``). A
selection loss of your own is any ``loss(F, Y, w) -> scalar`` passed to the paths' ``loss=``
(:func:`jaxmtl.selection.kfold_path`, ``loo_path``, ``holdout_path``): F and Y (m, d) held-out
predictions and outputs, w (m,) row weights summing to 1. The validation helpers a kernel's
``__init__`` needs are in :mod:`jaxmtl.checks`.

Example:
    >>> import jax.numpy as jnp
    >>> import jaxmtl
    >>> from jaxmtl.kernels import Kernel
    >>> @jaxmtl.register_kernel
    ... class Cosine(Kernel):
    ...     def __call__(self, X1, X2):
    ...         n1, n2 = jnp.linalg.norm(X1, axis=1), jnp.linalg.norm(X2, axis=1)
    ...         return (X1 @ X2.T) / jnp.outer(n1, n2)
    >>> Cosine()(jnp.ones((3, 2)), jnp.ones((1, 2))).shape
    (3, 1)
"""

from .filters.spectral import register_filter
from .io.registry import register_kernel
from .kernels.families import register_output_family
from .solvers.losses import register_loss

__all__ = ["register_kernel", "register_filter", "register_output_family", "register_loss"]
