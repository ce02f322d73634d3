"""Which classes :func:`jaxmtl.save` / :func:`jaxmtl.load` know, filled by the classes themselves.

The persistence layer imports no model: every class that can be saved registers itself here
from the package that defines it, and :mod:`jaxmtl.io.persistence` reads only this registry (and
the leaf packages of kernels and filters). Two kinds of entries:

* **estimators** (:func:`register_estimator`), saved in the common ``jaxmtl-model`` format: their
  constructor parameters and fitted attributes, through the :class:`SavedEstimator` protocol
  (scikit-learn's ``get_params`` plus ``_param_names`` and ``_check_fitted``);
* **classes with their own format** (:func:`register_format`), such as the mixed-effect
  ``Server``: a :class:`FileFormat` names the format and gives two functions, ``state(obj) ->
  (meta, arrays)`` and ``restore(meta, arrays) -> obj``; the persistence layer adds the envelope
  (format name and version, library version, the arrays' SHA-256) and does all file handling.

Kernels that live outside :mod:`jaxmtl.kernels` (the mixed-effect ``ExponentialDot``, a user's
own kernel through the public :func:`jaxmtl.register_kernel`) register with
:func:`register_kernel` so that they can be stored as their ``spec()`` dicts.

Example:
    >>> from jaxmtl.io import registry
    >>> import jaxmtl
    >>> registry.estimator_class("jaxmtl.models.vector_valued.VectorValuedRegressor") is jaxmtl.VectorValuedRegressor
    True
    >>> registry.format_named("jaxmtl-mixed-effect-server").cls.__name__
    'Server'
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Protocol, runtime_checkable

import numpy as np

__all__ = ["SavedEstimator", "FileFormat", "register_estimator", "register_format", "register_kernel",
           "estimator_class", "estimator_name", "format_for", "format_named", "extra_kernels"]


@runtime_checkable
class SavedEstimator(Protocol):
    """What an estimator provides to be saved in the ``jaxmtl-model`` format.

    The file holds ``get_params()`` and every other instance attribute (``vars(obj)``); loading
    calls ``cls(**params)``, sets the attributes back and calls ``_check_fitted()``.
    """

    def get_params(self, deep: bool = True) -> dict[str, Any]: ...

    @classmethod
    def _param_names(cls) -> list[str]: ...

    def _check_fitted(self) -> None: ...


class FileFormat(NamedTuple):
    """A class saved in its own format.

    Attributes:
      name: the format name written in the file's metadata (``meta["format"]``).
      version: the newest format version this code writes and reads.
      cls: the class whose instances use it (subclasses too).
      state: ``obj -> (meta, arrays)``: JSON-ready metadata and a dict of NumPy arrays.
      restore: ``(meta, arrays) -> obj``, the inverse; raises PersistenceError on bad content.
    """

    name: str
    version: int
    cls: type
    state: Callable[[Any], tuple[dict, dict[str, np.ndarray]]]
    restore: Callable[[dict, dict[str, np.ndarray]], Any]


_ESTIMATORS: dict[str, type[SavedEstimator]] = {}
_FORMATS: dict[str, FileFormat] = {}
_KERNELS: dict[str, type] = {}


def estimator_name(cls: type) -> str:
    """The name a file records for an estimator class: ``module.QualifiedName``."""
    return f"{cls.__module__}.{cls.__qualname__}"


def register_estimator(*classes: type) -> None:
    """Make estimator classes savable (by full name; the short class name reads older files)."""
    for cls in classes:
        if not isinstance(cls, type) or not issubclass(cls, SavedEstimator):
            raise TypeError(f"{cls!r} does not provide get_params, _param_names and _check_fitted.")
        _ESTIMATORS[estimator_name(cls)] = cls
        _ESTIMATORS.setdefault(cls.__name__, cls)


def register_format(fmt: FileFormat) -> None:
    """Register a class with its own file format (see :class:`FileFormat`)."""
    _FORMATS[fmt.name] = fmt


def register_kernel(cls: type) -> type:
    """Let :func:`jaxmtl.save` store a kernel class of your own (and :func:`jaxmtl.load` rebuild it).

    A file records a kernel as its ``spec()`` dict — the class name and its hyperparameters —
    and loading calls ``cls(**hyperparameters)`` on the class registered under that name: the
    constructor must accept the keys of ``spec()`` (the default ``spec()`` lists the instance's
    fields). Nothing is imported by a name read from a file, so a file naming a class that is not
    registered in the loading process is refused. Usable as a class decorator
    (``@jaxmtl.register_kernel``); registering a class under the name of another registered class
    replaces it (a class redefined in a notebook), but never one of jaxmtl's own kernels.

    Args:
      cls: a concrete subclass of :class:`jaxmtl.kernels.Kernel`.

    Returns:
      ``cls``.

    Example:
        >>> import jax.numpy as jnp
        >>> from jaxmtl.kernels import Kernel
        >>> @register_kernel
        ... class Constant(Kernel):
        ...     level: jnp.ndarray
        ...     def __init__(self, level=1.0):
        ...         self.level = jnp.asarray(level)
        ...     def __call__(self, X1, X2):
        ...         return jnp.full((X1.shape[0], X2.shape[0]), self.level)
        >>> extra_kernels()["Constant"] is Constant
        True
    """
    import inspect

    from .. import kernels

    if not isinstance(cls, type) or not issubclass(cls, kernels.Kernel) or inspect.isabstract(cls):
        raise TypeError(f"register_kernel needs a concrete subclass of jaxmtl.kernels.Kernel implementing "
                        f"__call__; received {cls!r}.")
    own = getattr(kernels, cls.__name__, None) if cls.__name__ in kernels.__all__ else None
    if own is not None and own is not cls:
        raise TypeError(f"kernel class name {cls.__name__!r} is one of jaxmtl's own kernels: rename the class.")
    _KERNELS[cls.__name__] = cls
    return cls


def estimator_class(name: str) -> type[SavedEstimator] | None:
    """The registered estimator named ``name`` (full name, else the class name), or None."""
    return _ESTIMATORS.get(name) or _ESTIMATORS.get(name.rsplit(".", 1)[-1])


def format_for(obj: Any) -> FileFormat | None:
    """The own format of ``obj``'s class (or of a base class), or None."""
    return next((f for f in _FORMATS.values() if isinstance(obj, f.cls)), None)


def format_named(name: Any) -> FileFormat | None:
    """The registered format called ``name``, or None."""
    return _FORMATS.get(name) if isinstance(name, str) else None


def extra_kernels() -> dict[str, type]:
    """Kernel classes registered from outside :mod:`jaxmtl.kernels`, by class name."""
    return dict(_KERNELS)
