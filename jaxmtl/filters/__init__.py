"""Spectral filters g_λ(σ) and their recurrences (seed 000 §3.2–3.3; seed 004 §5).

See :mod:`jaxmtl.filters.spectral` for the normalisation and each filter's formula.
"""

from .spectral import *  # noqa: F403
from .spectral import __all__ as _all

__all__ = list(_all)
