"""Model selection on the regularization path: hold-out, k-fold, leave-one-out and GCV."""

from .criteria import *  # noqa: F403
from .criteria import __all__ as _all

__all__ = list(_all)
