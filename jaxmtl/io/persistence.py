r"""Saving and loading fitted estimators: one portable ``.npz`` file, no pickle.

File format (``format = 'jaxmtl-model'``, ``format_version = 1``)
-----------------------------------------------------------------
A ZIP archive readable by ``numpy.load(path, allow_pickle=False)``:

* one ``.npy`` entry per fitted array (coefficients, training inputs, validation scores, …),
  written with ``allow_pickle=False`` — numeric, boolean and fixed-width string dtypes only;
* an entry ``__meta__``: a UTF-8 JSON document (stored as a uint8 array) holding the format
  name and version, the library version that wrote the file, the estimator class, its
  constructor parameters, every non-array fitted attribute (kernels and filters as their
  ``spec()`` dicts, class labels as a JSON list), the name, dtype and shape of each array, and
  the SHA-256 of the arrays' bytes;
* the archive comment: ``jaxmtl-sha256:`` followed by the SHA-256 (hex) of every byte of the
  file before the comment, so that a truncated or altered file — any byte — is detected.

Loading never executes code from the file: arrays are read with ``allow_pickle=False``, JSON
is parsed with the standard library, and kernels, filters and estimators are rebuilt only from
a fixed registry of jaxmtl's own classes and of the classes registered in the loading process
with :func:`jaxmtl.register_kernel` / :func:`jaxmtl.register_filter` (by class name; nothing is
imported or evaluated by a name read from the file). Every failure — missing file, truncation, checksum mismatch, another
format or a newer format version, missing or mis-shaped arrays, unknown classes — raises
:class:`~jaxmtl.errors.PersistenceError` with a message naming what was found.

:func:`save` writes to a temporary file in the target directory and renames it over ``path``
only once it is complete, so an interrupted save never destroys a previous model file.

A loaded model gives bit-identical predictions to the saved one in the same JAX configuration
(``jax_enable_x64`` on or off as when saving; arrays keep their saved dtypes, but a float64
model loaded with x64 disabled runs in float32).

Example:
    >>> import numpy as np, tempfile, os
    >>> import jaxmtl
    >>> X = np.random.default_rng(0).normal(size=(30, 2)); Y = np.c_[X[:, 0], X[:, 1] ** 2]
    >>> model = jaxmtl.VectorValuedRegressor(n_steps=20).fit(X, Y)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> jaxmtl.save(model, path)
    >>> bool(np.array_equal(jaxmtl.load(path).predict(X), model.predict(X)))
    True
"""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import math
import os
import tempfile
import zipfile
from typing import Any

import jax
import numpy as np

from ..errors import PersistenceError
from . import registry

__all__ = ["save", "load", "FORMAT_NAME", "FORMAT_VERSION", "write_archive", "write_atomically", "read_archive",
           "kernel_spec", "kernel_from_spec"]

FORMAT_NAME = "jaxmtl-model"
FORMAT_VERSION = 1
_META = "__meta__"
_TRAILER_PREFIX = b"jaxmtl-sha256:"
_TRAILER_LEN = len(_TRAILER_PREFIX) + 64
_LABEL_TYPES = (str, int, float, bool)


# --------------------------------------------------------------------------- registries
def _kernel_registry() -> dict[str, type]:
    """jaxmtl's kernel classes by name: those of :mod:`jaxmtl.kernels` and the registered others."""
    from .. import kernels

    return {**{name: getattr(kernels, name) for name in kernels.__all__
               if isinstance(getattr(kernels, name), type)
               and issubclass(getattr(kernels, name), kernels.Kernel)
               and getattr(kernels, name) is not kernels.Kernel}, **registry.extra_kernels()}


def _filter_registry() -> dict[str, type]:
    """jaxmtl's filter classes by name: the built-in ones and those given to ``register_filter``."""
    from ..filters.spectral import filter_classes

    return filter_classes()


# the call that makes a class of one's own known to save and load, by registry field
_REGISTER = {"kernel": "decorate the class with @jaxmtl.register_kernel",
             "filter": "register the class with jaxmtl.register_filter(name, cls)"}


# --------------------------------------------------------------------------- encoding
class _Encoder:
    """Turns estimator state into JSON plus a dict of arrays; refuses what it cannot store."""

    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, value, where: str, kind: str) -> dict:
        arr = np.asarray(value)
        if arr.dtype.kind not in "biufU":
            raise PersistenceError(
                f"cannot save {where}: arrays must hold numbers, booleans or strings; received "
                f"dtype {arr.dtype}."
            )
        key = f"a{len(self.arrays)}"
        self.arrays[key] = np.ascontiguousarray(arr)
        return {"__array__": key, "kind": kind}

    def labels(self, arr: np.ndarray, where: str) -> dict:
        items = []
        for x in arr.tolist():
            if isinstance(x, np.generic):
                x = x.item()
            if not isinstance(x, _LABEL_TYPES) or (isinstance(x, float) and not math.isfinite(x)):
                raise PersistenceError(
                    f"cannot save {where}: labels must be str, int, float or bool to be stored "
                    f"portably; received {x!r} of type {type(x).__name__}."
                )
            items.append(x)
        return {"__labels__": items}

    def encode(self, value: Any, where: str) -> Any:
        from ..filters.spectral import SpectralFilter
        from ..kernels.scalar import Kernel

        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (int, np.integer)) and not isinstance(value, np.bool_):
            return int(value)
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, (float, np.floating)):
            v = float(value)
            return v if math.isfinite(v) else {"__float__": repr(v)}
        if isinstance(value, Kernel):
            return {"__kernel__": kernel_spec(value, where)}
        if isinstance(value, SpectralFilter):
            name = type(value).__name__
            if _filter_registry().get(name) is not type(value):
                raise PersistenceError(
                    f"cannot save {where}: filter class {type(value).__qualname__} is not one of "
                    f"jaxmtl's filters {sorted(_filter_registry())}; {_REGISTER['filter']}."
                )
            return {"__filter__": _plain(value.spec())}
        if isinstance(value, jax.Array):
            return self.array(value, where, "jax")
        if isinstance(value, np.ndarray):
            if value.dtype == object:
                return self.labels(value, where)
            return self.array(value, where, "numpy")
        if isinstance(value, tuple):
            return {"__tuple__": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, list):
            return [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            if not all(isinstance(k, str) for k in value):
                raise PersistenceError(f"cannot save {where}: dict keys must be strings.")
            if any(k.startswith("__") for k in value):
                raise PersistenceError(f"cannot save {where}: dict keys must not start with '__'.")
            return {k: self.encode(v, f"{where}[{k!r}]") for k, v in value.items()}
        raise PersistenceError(
            f"cannot save {where}: values of type {type(value).__qualname__} have no portable "
            "representation (supported: numbers, strings, None, arrays, lists, tuples, dicts, "
            "jaxmtl kernels and filters)."
        )


def kernel_spec(kernel: Any, where: str = "the kernel") -> dict:
    """``kernel.spec()`` as a JSON-ready dict; PersistenceError if its class is not jaxmtl's own.

    Example:
        >>> from jaxmtl.kernels import Gaussian
        >>> kernel_spec(Gaussian(2.0))
        {'kernel': 'Gaussian', 'sigma': 2.0}
    """
    known, cls = _kernel_registry(), type(kernel)
    if known.get(cls.__name__) is not cls:
        raise PersistenceError(f"cannot save {where}: kernel class {cls.__qualname__} is not one of "
                               f"jaxmtl's kernels {sorted(known)}; {_REGISTER['kernel']}.")
    return _plain(kernel.spec())


def kernel_from_spec(spec, where: str = "the kernel"):
    """The kernel a :func:`kernel_spec` dict describes; PersistenceError on an unknown or bad spec."""
    return _rebuild(spec, "kernel", _kernel_registry(), where)


def _plain(spec: dict) -> dict:
    """A spec dict with NumPy scalars turned into Python numbers (JSON-ready)."""
    out = {}
    for k, v in spec.items():
        if isinstance(v, np.generic):
            v = v.item()
        out[k] = v
    return out


class _Decoder:
    def __init__(self, arrays: dict[str, np.ndarray]):
        self.arrays = arrays
        self.used: set[str] = set()

    def decode(self, value: Any, where: str) -> Any:
        if value is None or isinstance(value, (bool, str, int, float)):
            return value
        if isinstance(value, list):
            return [self.decode(v, where) for v in value]
        if not isinstance(value, dict):
            raise PersistenceError(f"corrupted metadata at {where}: unexpected {type(value).__name__}.")
        if "__array__" in value:
            key = value["__array__"]
            if key not in self.arrays:
                raise PersistenceError(f"the file lacks the array {key!r} needed for {where}.")
            self.used.add(key)
            arr = self.arrays[key]
            if value.get("kind") == "jax":
                import jax.numpy as jnp

                return jnp.asarray(arr)
            return arr
        if "__labels__" in value:
            items = value["__labels__"]
            if not isinstance(items, list) or not all(isinstance(x, _LABEL_TYPES) for x in items):
                raise PersistenceError(f"corrupted metadata at {where}: labels must be a list of scalars.")
            out = np.empty(len(items), dtype=object)
            out[:] = items
            return out
        if "__float__" in value:
            text = value["__float__"]
            if text not in ("inf", "-inf", "nan"):
                raise PersistenceError(f"corrupted metadata at {where}: bad float {text!r}.")
            return float(text)
        if "__tuple__" in value:
            return tuple(self.decode(v, where) for v in value["__tuple__"])
        if "__kernel__" in value:
            return kernel_from_spec(value["__kernel__"], where)
        if "__filter__" in value:
            return _rebuild(value["__filter__"], "filter", _filter_registry(), where)
        return {k: self.decode(v, f"{where}[{k!r}]") for k, v in value.items()}


def _rebuild(spec: Any, field: str, registry: dict[str, type], where: str):
    if not isinstance(spec, dict) or not isinstance(spec.get(field), str):
        raise PersistenceError(f"corrupted metadata at {where}: a {field} spec needs a {field!r} name.")
    cls = registry.get(spec[field])
    if cls is None:
        raise PersistenceError(
            f"the file names an unknown {field} {spec[field]!r} at {where}; known: {sorted(registry)}. "
            f"If {spec[field]} is a class of your own, {_REGISTER[field]} before jaxmtl.load."
        )
    kwargs = {k: v for k, v in spec.items() if k != field}
    try:
        return cls(**kwargs)
    except Exception as exc:  # a bad hyperparameter or keyword in the spec
        raise PersistenceError(f"cannot rebuild the {field} {spec!r} at {where}: {exc}") from None


def _arrays_digest(arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for key in sorted(arrays):
        arr = np.ascontiguousarray(arrays[key])
        h.update(f"{key}|{arr.dtype.str}|{arr.shape}|".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


# --------------------------------------------------------------------------- writing
def write_archive(meta: dict, arrays: dict[str, np.ndarray], path) -> None:
    """Write a model file (atomically) from JSON-ready metadata and a dict of arrays."""
    body = json.dumps(meta, sort_keys=True, allow_nan=False).encode("utf-8")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for key in sorted(arrays):
            with zf.open(f"{key}.npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asarray(arrays[key]), allow_pickle=False)
        with zf.open(f"{_META}.npy", "w") as f:
            np.lib.format.write_array(f, np.frombuffer(body, dtype=np.uint8), allow_pickle=False)
        zf.comment = b"0" * _TRAILER_LEN
    data = buf.getvalue()
    head = data[:-_TRAILER_LEN]
    write_atomically(head + _TRAILER_PREFIX + hashlib.sha256(head).hexdigest().encode("ascii"), path)


def write_atomically(data: bytes, path) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it over ``path`` once complete
    (an interrupted write never destroys a previous file)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".jaxmtl-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save(model: Any, path: str | os.PathLike[str]) -> None:
    """Save a fitted jaxmtl estimator to ``path`` (a portable ``.npz``; see the module doc).

    Args:
      model: a fitted estimator of jaxmtl (VectorValuedRegressor, MultiClassClassifier,
        MultiTaskRegressor, VectorFieldRegressor, …).
      path: file name; written as given (no suffix added), replacing an existing file only
        once the new one is complete.

    Raises:
      NotFittedError: the model has not been fitted.
      PersistenceError: the model holds something without a portable representation (labels
        that are not str/int/float/bool, a kernel or filter class of your own not registered with
        :func:`jaxmtl.register_kernel` / :func:`jaxmtl.register_filter`, …) or is not a jaxmtl
        estimator.

    A class registered with its own format (:func:`jaxmtl.io.registry.register_format`, e.g. the
    mixed-effect ``Server``) is written in that format, in the same envelope.
    """
    from .. import __version__

    own = registry.format_for(model)
    if own is not None:
        return _save_own_format(own, model, path, __version__)
    cls = type(model)
    if registry.estimator_class(registry.estimator_name(cls)) is not cls:
        raise PersistenceError(
            f"can only save jaxmtl estimators; received {cls.__qualname__} from {cls.__module__}."
        )
    model._check_fitted()
    enc = _Encoder()
    params = {k: enc.encode(v, f"parameter {k!r}") for k, v in model.get_params().items()}
    param_names = set(params)
    fitted = {k: enc.encode(v, f"attribute {k!r}") for k, v in vars(model).items()
              if k not in param_names}
    meta = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "estimator": registry.estimator_name(cls),
        "params": params,
        "fitted": fitted,
        "x64": bool(jax.config.read("jax_enable_x64")),
        "arrays": {k: {"dtype": v.dtype.str, "shape": list(v.shape)} for k, v in enc.arrays.items()},
        "arrays_sha256": _arrays_digest(enc.arrays),
    }
    write_archive(meta, enc.arrays, path)


def _save_own_format(fmt: registry.FileFormat, obj, path, library_version: str) -> None:
    """Write ``obj`` in its registered format: its state plus the envelope of every jaxmtl file."""
    meta, arrays = fmt.state(obj)
    meta = {**meta, "format": fmt.name, "format_version": fmt.version, "library_version": library_version,
            "arrays": {k: {"dtype": v.dtype.str, "shape": list(v.shape)} for k, v in arrays.items()},
            "arrays_sha256": _arrays_digest(arrays)}
    write_archive(meta, arrays, path)


def _load_own_format(fmt: registry.FileFormat, meta: dict, arrays: dict[str, np.ndarray], path):
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= fmt.version:
        raise PersistenceError(f"{os.fspath(path)!r}: unsupported {fmt.name} file version {version!r} "
                               f"(this jaxmtl reads 1 … {fmt.version}).")
    if _arrays_digest(arrays) != meta.get("arrays_sha256"):
        raise PersistenceError("the arrays' SHA-256 does not match the one recorded in the metadata.")
    return fmt.restore(meta, arrays)


# --------------------------------------------------------------------------- reading
def read_archive(path) -> tuple[dict, dict[str, np.ndarray]]:
    """(metadata, arrays) of a file written by :func:`write_archive`, its whole-file checksum verified."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise PersistenceError(f"cannot read the model file {os.fspath(path)!r}: {exc}") from None
    if len(data) < _TRAILER_LEN + 22 or data[:2] != b"PK":
        raise PersistenceError(
            f"{os.fspath(path)!r} is not a jaxmtl model file ({len(data)} bytes, expected a ZIP "
            "archive written by jaxmtl.save)."
        )
    trailer = data[-_TRAILER_LEN:]
    if not trailer.startswith(_TRAILER_PREFIX):
        raise PersistenceError(
            f"{os.fspath(path)!r} is truncated or not written by jaxmtl.save: its end-of-file "
            "checksum record is missing."
        )
    expected = trailer[len(_TRAILER_PREFIX):].decode("ascii", errors="replace")
    actual = hashlib.sha256(data[:-_TRAILER_LEN]).hexdigest()
    if expected != actual:
        raise PersistenceError(
            f"{os.fspath(path)!r} is corrupted: SHA-256 of its content is {actual[:12]}…, the file "
            f"records {expected[:12]}…."
        )
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = zf.namelist()
            for name in names:
                if not name.endswith(".npy") or "/" in name:
                    raise PersistenceError(f"unexpected entry {name!r} in the model file.")
                with zf.open(name) as f:
                    arrays[name[:-4]] = np.lib.format.read_array(f, allow_pickle=False)
    except PersistenceError:
        raise
    except (zipfile.BadZipFile, EOFError, ValueError, OSError, KeyError, UnicodeDecodeError) as exc:
        raise PersistenceError(f"{os.fspath(path)!r} is corrupted: {type(exc).__name__}: {exc}") from None
    raw = arrays.pop(_META, None)
    if raw is None:
        raise PersistenceError(f"{os.fspath(path)!r} has no {_META!r} entry: not a jaxmtl model file.")
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise PersistenceError(f"the {_META!r} entry must be a byte string; received {raw.dtype}{raw.shape}.")
    try:
        meta = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PersistenceError(f"the metadata of {os.fspath(path)!r} is not valid JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise PersistenceError("the metadata must be a JSON object.")
    return meta, arrays


def load(path: str | os.PathLike[str]) -> Any:
    """Load an estimator saved by :func:`save`; its predictions equal the saved model's.

    Raises:
      PersistenceError: the file is missing, truncated, corrupted, of another format or of a
        newer format version, or names classes that jaxmtl does not know.
    """
    meta, arrays = read_archive(path)
    own = registry.format_named(meta.get("format"))
    if own is not None:
        return _load_own_format(own, meta, arrays, path)
    fmt, version = meta.get("format"), meta.get("format_version")
    if fmt != FORMAT_NAME:
        raise PersistenceError(f"unknown file format {fmt!r}; expected {FORMAT_NAME!r}.")
    if not isinstance(version, int) or isinstance(version, bool):
        raise PersistenceError(f"format_version must be an integer; received {version!r}.")
    if version > FORMAT_VERSION:
        raise PersistenceError(
            f"the file has format version {version}, written by jaxmtl "
            f"{meta.get('library_version', '?')}; this jaxmtl reads versions up to {FORMAT_VERSION}. "
            "Upgrade jaxmtl to load it."
        )
    if version < 1:
        raise PersistenceError(f"format version {version} is not a valid jaxmtl format version.")
    for key in ("estimator", "params", "fitted", "arrays", "arrays_sha256"):
        if key not in meta:
            raise PersistenceError(f"the metadata lacks the field {key!r}.")
    declared = meta["arrays"]
    if not isinstance(declared, dict) or set(declared) != set(arrays):
        missing = sorted(set(declared) - set(arrays)) if isinstance(declared, dict) else []
        extra = sorted(set(arrays) - set(declared)) if isinstance(declared, dict) else sorted(arrays)
        raise PersistenceError(f"the file's arrays do not match its metadata: missing {missing}, unexpected {extra}.")
    for key, info in declared.items():
        arr = arrays[key]
        if not isinstance(info, dict) or info.get("dtype") != arr.dtype.str or info.get("shape") != list(arr.shape):
            raise PersistenceError(
                f"array {key!r} has dtype {arr.dtype.str} and shape {list(arr.shape)}; the metadata "
                f"records {info!r}."
            )
    if _arrays_digest(arrays) != meta["arrays_sha256"]:
        raise PersistenceError("the arrays' SHA-256 does not match the one recorded in the metadata.")
    name = meta["estimator"]
    # by full path, else by class name: files written before the package layout of 0.2 name
    # their class under a former module (jaxmtl.estimators.X, jaxmtl.task_models.X, ...)
    cls = registry.estimator_class(name) if isinstance(name, str) else None
    if cls is None:
        raise PersistenceError(f"unknown estimator class {meta['estimator']!r} in the file.")
    params, fitted = meta["params"], meta["fitted"]
    if not isinstance(params, dict) or not isinstance(fitted, dict):
        raise PersistenceError("the metadata's 'params' and 'fitted' must be JSON objects.")
    dec = _Decoder(arrays)
    kwargs = {k: dec.decode(v, f"parameter {k!r}") for k, v in params.items()}
    valid = set(cls._param_names())
    # a parameter added after the file was written takes its default (its behaviour before it existed)
    added = {k for k in valid - set(kwargs)
             if inspect.signature(cls).parameters[k].default is not inspect.Parameter.empty}
    if set(kwargs) | added != valid:
        raise PersistenceError(
            f"the file's parameters {sorted(kwargs)} do not match {cls.__name__}'s {sorted(valid)}."
        )
    try:
        model = cls(**kwargs)
    except Exception as exc:
        raise PersistenceError(f"cannot rebuild {cls.__name__} from the saved parameters: {exc}") from None
    for k, v in fitted.items():
        if not isinstance(k, str) or k.startswith("__") or not k.isidentifier():
            raise PersistenceError(f"invalid attribute name {k!r} in the file.")
        setattr(model, k, dec.decode(v, f"attribute {k!r}"))
    try:
        model._check_fitted()
    except Exception:
        raise PersistenceError(f"the file holds no fitted {cls.__name__} (no coefficients).") from None
    return model
