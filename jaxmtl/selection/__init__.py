"""Model selection on the regularization path: hold-out, k-fold, leave-one-out and GCV.

:func:`regularization_path` is the one convention every path is called with (:mod:`.path`); the
criteria's own functions live in :mod:`.criteria`.
"""

from .criteria import *  # noqa: F403
from .criteria import __all__ as _criteria_all
from .path import *  # noqa: F403
from .path import __all__ as _path_all

__all__ = [*_criteria_all, *_path_all]
