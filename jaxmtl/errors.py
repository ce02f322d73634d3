"""The exceptions jaxmtl raises.

Every error caused by the caller's input derives from :class:`JaxmtlError` and from the
matching built-in (``ValueError`` or ``TypeError``), so ``except ValueError`` keeps working.

==========================  ==========================================================
exception                   raised when
==========================  ==========================================================
``ShapeError``              an array has the wrong rank, or shapes do not agree
``NonFiniteError``          an array holds NaN or inf
``RangeError``              finite values too large for the working precision, or inputs whose
                            squared differences underflow in it (a NonFiniteError)
``DTypeError``              an array has a dtype that cannot be used (strings, complex)
``ParameterError``          a hyperparameter is out of its admissible range
``TracedArgumentError``     an argument that must be concrete was traced (inside ``jit``, ``vmap``
                            or ``grad``); the message names it and the way out
``OutputMatrixError``       an output matrix A is not symmetric positive semidefinite
``TaskError``               task ids are unknown, missing, or a task has no examples
``LabelError``              class labels are unusable (a single class, say)
``NotFittedError``          an estimator is used before ``fit``
``DivergenceError``         an iterative path diverged (step size too large)
``PersistenceError``        a model file is truncated, corrupted or of another version
``DistributedError``        a process of a multi-process run never joined, died or left
==========================  ==========================================================
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

__all__ = [
    "JaxmtlError",
    "ShapeError",
    "NonFiniteError",
    "RangeError",
    "DTypeError",
    "ParameterError",
    "TracedArgumentError",
    "OutputMatrixError",
    "TaskError",
    "LabelError",
    "NotFittedError",
    "DivergenceError",
    "PersistenceError",
    "DistributedError",
    "GridEdgeWarning",
    "RouteFallbackWarning",
]


class JaxmtlError(Exception):
    """Base class of every exception raised by jaxmtl."""


class ShapeError(JaxmtlError, ValueError):
    """An array has the wrong rank, or two arrays' shapes do not agree."""


class NonFiniteError(JaxmtlError, ValueError):
    """An array holds NaN or infinite values."""


class RangeError(NonFiniteError):
    """Finite values whose squares or products overflow the working precision (float32 or float64),
    or inputs spread so little that their squared differences underflow to 0 in it.

    The message gives the magnitude received, the dtype and the fix (``dtype='float64'``, or
    rescaling); a subclass of NonFiniteError because the computation would be non-finite."""


class DTypeError(JaxmtlError, TypeError, ValueError):
    """An array's dtype cannot be used (strings, objects, complex numbers)."""


class ParameterError(JaxmtlError, ValueError):
    """A hyperparameter lies outside its admissible range."""


class TracedArgumentError(ParameterError):
    """An argument that must be concrete (a static shape, fold masks that define gathered sizes,
    a host-side setting) was given as a JAX tracer inside ``jit``, ``vmap`` or ``grad``.

    The message names the argument and the way out: pass it static, precompute what it
    defines (``sizes=fold_sizes(masks)``), or call a function that accepts it traced."""


class OutputMatrixError(JaxmtlError, ValueError):
    """An output matrix is not square, symmetric and positive semidefinite."""


class TaskError(JaxmtlError, ValueError):
    """Task ids are unknown or missing, or a task has no examples."""


class LabelError(JaxmtlError, ValueError):
    """Class labels cannot be used for classification."""


if TYPE_CHECKING:
    class NotFittedError(JaxmtlError, ValueError, AttributeError):
        """An estimator was used before ``fit`` was called."""

    class ConvergenceWarning(UserWarning):
        """An iterative solver stopped at its iteration limit (scikit-learn's class when installed)."""

    class DataConversionWarning(UserWarning):
        """Targets were given in another shape than expected (scikit-learn's class when installed)."""
else:
    _LAZY_LOCK = threading.Lock()
    _SKLEARN_WARNINGS = ("ConvergenceWarning", "DataConversionWarning")

    def __getattr__(name: str) -> type:
        """Classes shared with scikit-learn, made on first use (PEP 562), so that scikit-learn
        (about a second to import) loads only when one is raised or asked for:

        * ``NotFittedError`` derives from scikit-learn's own ``NotFittedError`` when scikit-learn
          is installed, so that scikit-learn's tools recognise it;
        * ``ConvergenceWarning`` and ``DataConversionWarning`` are scikit-learn's classes when it
          is installed (its estimator checks expect them), else ``UserWarning`` subclasses.
        """
        if name != "NotFittedError" and name not in _SKLEARN_WARNINGS:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        with _LAZY_LOCK:
            if name not in globals():
                try:
                    import sklearn.exceptions as sk
                except ImportError:  # pragma: no cover - exercised only without scikit-learn
                    sk = None
                if name in _SKLEARN_WARNINGS:
                    made = getattr(sk, name) if sk is not None else type(name, (UserWarning,), {"__module__": __name__})
                else:
                    base = sk.NotFittedError if sk is not None else type("_NotFittedBase", (ValueError, AttributeError), {})
                    made = type("NotFittedError", (JaxmtlError, base), {
                        "__doc__": "An estimator was used before ``fit`` was called.", "__module__": __name__})
                globals()[name] = made
        return globals()[name]


class DivergenceError(JaxmtlError, ArithmeticError):
    """An iterative path produced non-finite values or a growing residual."""


class PersistenceError(JaxmtlError, ValueError):
    """A saved model file is truncated, corrupted or written by an incompatible version."""


class DistributedError(JaxmtlError, RuntimeError):
    """A multi-process run lost a process: one never joined the coordinator, or died or left
    while the others waited in a collective (the message names the process and the timeout)."""


class GridEdgeWarning(UserWarning):
    """A selected hyperparameter lies on the edge of its search grid after the grid was extended:
    the best value may lie beyond it (the message names the parameter and what to pass)."""


class RouteFallbackWarning(UserWarning):
    """A route could not serve a problem it was chosen for — a Cholesky factor of the direct route
    failed in the working precision (an indefinite shifted Gram) — and the eigen route served it."""
