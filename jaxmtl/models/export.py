"""Export a fitted model's prediction function as a serialized StableHLO artefact (``jax.export``).

:func:`export` traces a fitted model's :class:`~jaxmtl.models.Predictor` once, with the number of
rows symbolic (``n``), lowers it for CPU and CUDA, and returns JAX's ``jax.export.Exported``;
with ``path`` it also writes the serialized bytes there. The artefact holds the fitted leaves as
constants: loading and running it needs JAX (and ``flatbuffers``, with which JAX serializes:
``pip install "jaxmtl[export]"``) but neither jaxmtl nor equinox::

    import jax
    with open("model.jaxexport", "rb") as f:
        exported = jax.export.deserialize(bytearray(f.read()))
    F = exported.call(X)   # X: (m, p) for any m ≥ 1, in exported.in_avals[0].dtype
    F = exported.call(X, codes)   # multi-task models: also the rows' (m,) int32 task codes

Every estimator that predicts exports (the online mixed-effect server excepted: its model lives
in a database that changes as clients join). What the function computes: a regressor's
predictions, (m, d) — (m, 1) for a model fitted on 1-D targets, whose ``predict`` returns (m,);
a classifier's **decision scores**: (m, n_classes) one coded score per entry of ``classes_``
(their argmax indexes ``predict``'s class; a two-class ``decision_function`` is column 1 minus
column 0), or (m, 1), the ``decision_function``, for the estimators that code two classes as
one ±1 output (``KernelMachineClassifier``, ``RLS2Classifier``). ``MultiTaskRegressor`` and
``MixedEffectRegressor`` take the rows' task codes, indices into ``tasks_`` (int32, as many as
the rows); an unknown code gives NaN rows (``MultiTaskRegressor``) or the average task
(``MixedEffectRegressor``), see :mod:`jaxmtl.models.predictor_kinds`.

Precision: the artefact takes and returns the predictor's dtype. A float64 model is traced with
x64 enabled for the call (``jax.enable_x64``), a float32 one with it disabled (the artefact does not
depend on the exporting process's setting); a float64 artefact must be called where x64 is on
(``jax.config.update("jax_enable_x64", True)`` or inside ``with jax.enable_x64(True):``; JAX
refuses float32 arguments with "Dtype mismatch"); export ``model.predictor().astype('float32')``
for an artefact that runs in JAX's default configuration.

Example:
    >>> import jax, numpy as np, jaxmtl
    >>> X = np.random.default_rng(0).normal(size=(40, 2)); Y = np.c_[X[:, 0], X[:, 1] ** 2]
    >>> model = jaxmtl.VectorValuedRegressor(n_steps=20).fit(X, Y)
    >>> exported = jaxmtl.export(model, X[:2])
    >>> exported.in_avals, exported.platforms
    ((ShapedArray(float32[n,2]),), ('cpu', 'cuda'))
    >>> loaded = jax.export.deserialize(exported.serialize())   # what a reader of the bytes does
    >>> F = loaded.call(np.asarray(X[:5], np.float32))
    >>> F.shape, bool(np.abs(F - model.predict(X[:5])).max() < 1e-2)   # float32 roundoff, coefficients ~1e4
    ((5, 2), True)
"""

from __future__ import annotations

import os
from typing import Any

import jax
import numpy as np

from ..errors import DTypeError, ParameterError, ShapeError
from ..io.persistence import write_atomically
from .predictors import Predictor
from ..products import full_precision

__all__ = ["export", "DEFAULT_PLATFORMS", "PLATFORMS"]

DEFAULT_PLATFORMS = ("cpu", "cuda")  # lowered for both whether or not a GPU is present
PLATFORMS = ("cpu", "cuda", "rocm", "tpu")  # what jax.export lowers for


@full_precision
def export(model_or_predictor: Any, example_input: Any, path: str | os.PathLike[str] | None = None,
           platforms: tuple[str, ...] = DEFAULT_PLATFORMS) -> jax.export.Exported:
    """The prediction function of a fitted model as a ``jax.export.Exported``, rows symbolic.

    Args:
      model_or_predictor: a fitted estimator (every one has ``predictor()``) or a
        :class:`~jaxmtl.models.Predictor`.
      example_input: an (m, p) array (or ``jax.ShapeDtypeStruct``) of real inputs: the number of
        features p must be the model's; the rows become the symbolic dimension ``n``, and the
        artefact takes inputs in the predictor's dtype whatever this array's.
      path: where to write the serialized bytes (``Exported.serialize()``), replacing a file
        only once the new one is complete; None writes nothing.
      platforms: the platforms to lower for, among ``PLATFORMS`` (default CPU and CUDA).

    Returns:
      ``jax.export.Exported``: ``call`` maps (m, p) inputs (and, for a multi-task model, (m,)
      int32 task codes) to (m, d) outputs (see the module doc).

    Raises (before anything is traced):
      NotFittedError: the estimator is not fitted.
      ParameterError: ``model_or_predictor`` has no prediction function to export (an object
        without ``predictor()``), or ``path`` / ``platforms`` is unusable.
      ShapeError / DTypeError: ``example_input`` is not an (m, p) array of real numbers.

    Example:
        >>> import numpy as np, jaxmtl
        >>> X = np.random.default_rng(0).normal(size=(30, 3))
        >>> clf = jaxmtl.MultiClassClassifier(n_steps=20).fit(X, np.where(X[:, 0] > 0, "a", "b"))
        >>> jaxmtl.export(clf, X, platforms=("cpu",)).out_avals   # one score per class
        (ShapedArray(float32[n,2]),)
    """
    platforms = _check_platforms(platforms)
    if path is not None:
        _check_path(path)
    predictor = _predictor_of(model_or_predictor)
    _check_example(example_input, predictor.n_features)
    shape = jax.export.symbolic_shape(f"n, {predictor.n_features}")
    specs = [jax.ShapeDtypeStruct(shape, predictor.dtype)]
    if predictor.takes_tasks:  # the rows' task codes, as many as the rows
        specs.append(jax.ShapeDtypeStruct(shape[:1], np.int32))
    with jax.enable_x64(predictor.dtype == "float64"):
        exported = jax.export.export(jax.jit(lambda *args: predictor(*args)), platforms=platforms)(*specs)
    if path is not None:
        try:
            import flatbuffers  # noqa: F401  # what jax.export serializes with
        except ImportError:
            raise ImportError("writing an exported model needs the flatbuffers package: pip install flatbuffers "
                              "(or pip install \"jaxmtl[export]\"); the Exported object is returned without path="
                              ) from None
        write_atomically(bytes(exported.serialize()), path)
    return exported


def _check_platforms(platforms: Any) -> tuple[str, ...]:
    if isinstance(platforms, str):
        platforms = (platforms,)
    try:
        resolved = tuple(platforms)
    except TypeError:
        resolved = ()
    if not resolved or any(p not in PLATFORMS for p in resolved) or len(set(resolved)) != len(resolved):
        raise ParameterError(f"platforms must be distinct names among {PLATFORMS}; received {platforms!r}.")
    return resolved


def _check_path(path: Any) -> None:
    """ParameterError unless ``path`` names a file in an existing folder."""
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterError(f"path must be a file name (str or os.PathLike) or None; received {path!r}.")
    folder = os.path.dirname(os.path.abspath(os.fspath(path)))
    if not os.path.isdir(folder) or os.path.isdir(path):
        raise ParameterError(f"path must name a file in an existing folder; received {os.fspath(path)!r}.")


def _predictor_of(model: Any) -> Any:
    """The :class:`Predictor` of a fitted estimator (``predictor()``) or the predictor itself."""
    if isinstance(model, Predictor):
        return model
    if callable(getattr(model, "predictor", None)):
        return model.predictor()  # NotFittedError / ParameterError of the estimator's own checks
    if type(model).__module__ == "jaxmtl.mixed_effect.server":  # the one estimator-like object that does not export
        raise ParameterError(f"model_or_predictor: the online mixed-effect {type(model).__name__} has no fixed "
                             "prediction function to export (its model changes as clients join); export a "
                             "MixedEffectRegressor fitted on the same data instead.")
    if callable(getattr(model, "fit", None)):
        raise ParameterError(f"model_or_predictor: {type(model).__name__} has no predictor() to export; export "
                             "takes a fitted jaxmtl estimator or a Predictor.")
    raise ParameterError(f"model_or_predictor must be a fitted jaxmtl estimator with predictor() or a jaxmtl "
                         f"Predictor; received {type(model).__name__}.")


def _check_example(example: Any, p: int) -> None:
    """ShapeError / DTypeError unless ``example`` is an (m, p) array of real numbers."""
    if not (hasattr(example, "shape") and hasattr(example, "dtype")):
        try:
            example = np.asarray(example)
        except (ValueError, TypeError):
            raise ShapeError(f"example_input must be an (m, {p}) array; received {type(example).__name__} "
                             "that is not one.") from None
    dtype = np.dtype(example.dtype)
    if dtype.kind not in "iuf":
        raise DTypeError(f"example_input must hold real numbers; received dtype {dtype}.")
    shape = tuple(example.shape)
    if len(shape) != 2 or shape[1] != p:
        raise ShapeError(f"example_input must have shape (m, {p}): rows of the {p} features the model was "
                         f"fitted on; received shape {shape}.")
