"""Spectral filters g_λ(σ) and their recurrences ([BRBV11] §3.2–3.3; [LRODV08] §5).

See :mod:`jaxmtl.filters.spectral` for the normalisation and each filter's formula.
"""

from .spectral import *  # noqa: F403
from .spectral import __all__ as _all

__all__ = list(_all)
