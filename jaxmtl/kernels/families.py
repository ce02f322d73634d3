r"""Named output families: output matrices A_θ = V diag(a_θ) Vᵀ sharing their eigenvectors V.

The eigen path vmaps over the eigenvalues of the output matrix only ([BRBV11] §4.2), so a family
of output matrices is searched in one compiled call when every member has the same eigenvectors
— as the common-similarity family ω·11ᵀ + (1 − ω)I does. :func:`register_output_family` names
such a family; the estimators that take ``output=`` (:class:`~jaxmtl.VectorValuedRegressor`,
:class:`~jaxmtl.MultiClassClassifier`, :class:`~jaxmtl.ApproximateKernelRegressor`) then accept
the name, search its parameter θ on ``omegas`` (default: the family's grid) with the kernel and
the filter parameter, and report the name in ``family_`` and θ in ``best_params_["omega"]``.

Example:
    >>> import numpy as np
    >>> def scaled(d, thetas):  # A_θ = θ·I: one eigenvector basis for every θ
    ...     return np.outer(thetas, np.ones(d)), np.eye(d)
    >>> fam = register_output_family("scaled_identity", scaled, grid=[0.5, 1.0, 2.0])
    >>> a, V, thetas = family_eigh(fam, 2, None)
    >>> a.tolist(), thetas.tolist()
    ([[0.5, 0.5], [1.0, 1.0], [2.0, 2.0]], [0.5, 1.0, 2.0])
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np
import numpy.typing as npt

from .._checks import as_float_array
from ..errors import OutputMatrixError, ParameterError

__all__ = ["OutputFamily", "register_output_family", "output_family", "family_names", "family_eigh", "RESERVED_NAMES"]

# output= values the estimators read themselves: never a registered family's name
RESERVED_NAMES = ("common_similarity", "independent", "custom", "auto")


class OutputFamily(NamedTuple):
    """A registered family.

    Attributes:
      name: the name passed as ``output=`` and reported in ``family_``.
      eigh: ``(d, thetas (Θ,)) -> (a (Θ, d), V (d, d))``: the eigenvalues of every member (≥ 0)
        and their shared orthonormal eigenvectors, as NumPy or JAX arrays.
      grid: (Θ,) float64, the parameter values searched when ``omegas`` is None.
    """

    name: str
    eigh: Callable[[int, np.ndarray], tuple[Any, Any]]
    grid: np.ndarray


_FAMILIES: dict[str, OutputFamily] = {}


def register_output_family(name: str, eigh: Callable | None = None, grid: npt.ArrayLike = (1.0,)) -> Any:
    """Name a family of output matrices with shared eigenvectors (see the module doc).

    Usable as a call or as a function decorator, ``@register_output_family("name", grid=...)``.
    A name registered again takes the newer family.

    Args:
      name: a Python identifier, not one of ``RESERVED_NAMES``.
      eigh: ``(d, thetas) -> (a (Θ, d), V (d, d))``; it may raise jaxmtl's errors for a d or θ it
        does not accept.
      grid: the default parameter values, a non-empty 1-D array of finite numbers.

    Returns:
      the :class:`OutputFamily` (a decorator returning it when ``eigh`` is omitted).
    """
    if not isinstance(name, str) or not name.isidentifier() or name in RESERVED_NAMES:
        raise ParameterError(f"an output family's name must be a Python identifier other than {RESERVED_NAMES}; "
                             f"received {name!r}.")
    if eigh is None:
        return lambda fn: register_output_family(name, fn, grid)
    if not callable(eigh):
        raise ParameterError(f"output family {name!r}: eigh must be callable (d, thetas) -> (a, V); "
                             f"received {eigh!r}.")
    family = OutputFamily(name, eigh, _thetas(grid, f"the grid of output family {name!r}"))
    _FAMILIES[name] = family
    return family


def output_family(name: str) -> OutputFamily | None:
    """The family registered as ``name``, or None."""
    return _FAMILIES.get(name)


def family_names() -> list[str]:
    """The registered families' names, sorted."""
    return sorted(_FAMILIES)


def _thetas(values: Any, what: str) -> np.ndarray:
    thetas = as_float_array(values, what, ndim=1).astype(np.float64)
    if thetas.size == 0 or not np.all(np.isfinite(thetas)):
        raise ParameterError(f"{what} must be a non-empty 1-D array of finite numbers; received {values!r}.")
    return thetas


def family_eigh(family: OutputFamily, d: int, omegas: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a (Θ, d), V (d, d), thetas (Θ,)) of ``family`` for d outputs on ``omegas`` (None: its grid),
    in float64, checked: a finite and ≥ 0 (round-off below 1e-10·max|a| clipped), V orthonormal.

    Raises:
      OutputMatrixError: the family returned arrays of the wrong shape, non-finite or negative
        eigenvalues, or eigenvectors that are not orthonormal.
    """
    thetas = family.grid if omegas is None else _thetas(omegas, "omegas")
    a, V = family.eigh(d, thetas)
    a, V = np.asarray(a, np.float64), np.asarray(V, np.float64)
    where = f"output family {family.name!r} (d = {d}, {thetas.size} parameter values)"
    if a.shape != (thetas.size, d) or V.shape != (d, d):
        raise OutputMatrixError(f"{where} must return a of shape {(thetas.size, d)} and V of shape {(d, d)}; "
                                f"received {a.shape} and {V.shape}.")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(V))):
        raise OutputMatrixError(f"{where} returned non-finite eigenvalues or eigenvectors.")
    scale = max(float(np.abs(a).max()), np.finfo(np.float64).tiny)
    if a.min() < -1e-10 * scale:
        raise OutputMatrixError(f"{where}: every member must be positive semidefinite; its smallest eigenvalue "
                                f"is {a.min():.3g}.")
    orth = float(np.abs(V.T @ V - np.eye(d)).max())
    if orth > 1e-5:
        raise OutputMatrixError(f"{where}: V must be orthonormal; max |VᵀV − I| = {orth:.3g}.")
    return np.maximum(a, 0.0), V, thetas
