"""Input validation run in plain Python/NumPy before anything is traced.

Each helper names the argument it checks, says what it received and what it expected, and
returns a NumPy array of a floating dtype the rest of the library can trust.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Iterator

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .errors import (
    DTypeError,
    NonFiniteError,
    OutputMatrixError,
    ParameterError,
    RangeError,
    ShapeError,
    TracedArgumentError,
)


def is_traced(x: Any) -> bool:
    """True when ``x`` or any leaf of the pytree ``x`` is a JAX tracer (inside ``jit``, ``vmap``
    or ``grad``): its value is abstract, so the plain-Python checks below cannot read it.

    Example:
        >>> is_traced(1.0), jax.jit(lambda x: jnp.asarray(is_traced(x)))(1.0).item()
        (False, True)
    """
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(x))


HOST_WAY_OUT = "it is validated on the host, so pass a concrete value (or mark it static)"
"""The generic way out of the host-side checks below; functions name a more specific one."""


def require_concrete(x: Any, name: str, way_out: str) -> None:
    """Raise TracedArgumentError naming ``name`` and ``way_out`` when ``x`` is traced.

    For an argument a function genuinely needs as a value (a shape, fold sizes, a host-side
    setting), before JAX would raise its own conversion error.

    Example:
        >>> try:
        ...     jax.jit(lambda n: require_concrete(n, "n_steps", "mark n_steps static"))(3)
        ... except TracedArgumentError as exc:
        ...     print(exc)
        n_steps must be a concrete value, not traced by jit, vmap or grad: mark n_steps static.
    """
    if is_traced(x):
        raise TracedArgumentError(
            f"{name} must be a concrete value, not traced by jit, vmap or grad: {way_out}."
        )


def traced_check(x: Any, ok: Any, message: str) -> Any:
    """``x`` unchanged, with a runtime check that every entry of ``ok`` holds (``equinox.error_if``).

    The check of a traced hyperparameter inside ``jit`` / ``vmap`` / ``grad`` (finite, in range):
    it raises when the compiled program runs (``EQX_ON_ERROR`` selects raise, nan or off; see
    docs/errors.md). Use the returned value, or the check is dropped as dead code.

    Example:
        >>> float(jax.jit(lambda w: traced_check(w, (w >= 0) & (w <= 1), "omega must lie in [0, 1]"))(0.5))
        0.5
    """
    return eqx.error_if(x, ~jnp.all(ok), message)


_REQUESTED_FLOAT: contextvars.ContextVar[np.dtype | None] = contextvars.ContextVar("jaxmtl_requested_float",
                                                                                  default=None)


@contextlib.contextmanager
def requested_float(dtype: Any) -> Iterator[None]:
    """Within the block, :func:`narrow` gives every float input ``dtype`` (None: no request).

    An estimator's explicit ``dtype`` parameter: ``dtype='float64'`` computes in float64 whatever
    the inputs' dtype, float32 arrays included (without a request they stay float32, as
    scikit-learn keeps them).

    Example:
        >>> with jax.enable_x64(True), requested_float("float64"):
        ...     narrow(np.ones(2, np.float32), "x").dtype.name
        'float64'
    """
    token = _REQUESTED_FLOAT.set(None if dtype is None else np.dtype(dtype))
    try:
        yield
    finally:
        _REQUESTED_FLOAT.reset(token)


def default_float() -> np.dtype:
    """The floating dtype JAX uses by default (float64 when x64 is enabled, else float32)."""
    return np.dtype(np.float64 if jax.config.read("jax_enable_x64") else np.float32)


def safe_magnitude(dtype: Any, n_features: int = 1) -> float:
    """Largest |value| whose squares and sums of squares over ``n_features`` stay finite in ``dtype``.

    Squared distances sum ``n_features`` squares of differences of two values, each up to twice the
    magnitude M: (2M)²·p must not overflow, so M ≤ sqrt(max / (4p)). float32: 9.2e18 for one
    feature; float64: 6.7e153.

    Example:
        >>> f"{safe_magnitude(np.float32):.2g}"
        '9.2e+18'
    """
    return float(np.sqrt(np.finfo(dtype).max / (4.0 * max(int(n_features), 1))))


def check_magnitude(arr: np.ndarray, name: str, dtype: Any = None) -> np.ndarray:
    """Refuse finite values whose squares or products overflow the working precision ``dtype``.

    ``arr`` must already be finite. The limit is :func:`safe_magnitude` for ``dtype`` (default:
    ``arr``'s dtype) and ``arr``'s last axis as the number of features; the error gives the
    magnitude received, the dtype and the fix.

    Raises:
      RangeError: max |arr| exceeds the limit.
    """
    dtype = np.dtype(dtype or arr.dtype)
    p = arr.shape[-1] if arr.ndim == 2 else 1
    limit = safe_magnitude(dtype, p)
    top = float(np.max(np.abs(arr))) if arr.size else 0.0
    if top > limit:
        fix = ("pass dtype='float64' (or enable jax_enable_x64) or rescale it"
               if dtype == np.float32 else "rescale it")
        raise RangeError(
            f"{name} holds finite values up to {top:.3g} in magnitude; in {dtype.name} their squares and "
            f"products overflow (largest safe magnitude {limit:.3g}"
            + (f" for {p} features" if p > 1 else "") + f"): {fix}."
        )
    return arr


def as_float_array(x: Any, name: str, ndim: int | tuple[int, ...] | None = None,
                   keep_float64: bool = False) -> np.ndarray:
    """Convert ``x`` to a finite floating array, checking its rank and range.

    Integers, booleans and float16 are promoted to the default float dtype; float32/float64 keep
    their dtype (float64 is narrowed to float32 when x64 is off, as JAX would). NaN and inf are
    refused (NonFiniteError); finite values too large for the working precision (their squares
    overflow: :func:`check_magnitude`) are refused with their magnitude (RangeError), never
    reported as NaN after narrowing.

    Args:
      x: array-like.
      name: the argument's name, used in error messages.
      ndim: allowed rank(s), or None for any.
      keep_float64: return float64 (float64, integer and object sources) without narrowing, for a
        caller that centres the values on the host before it narrows them (:func:`narrow`).

    Returns:
      np.ndarray of dtype float32 or float64.

    Raises:
      TracedArgumentError: ``x`` is traced (a value checked here must be concrete).
    """
    require_concrete(x, name, HOST_WAY_OUT)
    if x is None:
        raise ShapeError(f"{name}: requires y to be passed, but the target y is None." if name in ("y", "Y")
                         else f"{name} must be array-like of numbers; received None.")
    if hasattr(x, "nnz") and hasattr(x, "toarray"):
        raise DTypeError(f"{name} is a sparse matrix; sparse input is not supported: pass {name}.toarray().")
    if hasattr(x, "__array__") or isinstance(x, (list, tuple, int, float, np.number)):
        try:
            arr = np.asarray(x)
        except Exception as exc:  # ragged lists and the like
            raise ShapeError(f"{name} could not be read as an array: {exc}") from None
    else:
        raise DTypeError(f"{name} must be array-like of numbers; received {type(x).__name__}.")
    if arr.dtype.kind in "biu":
        arr = arr.astype(np.float64 if keep_float64 else default_float())
    elif arr.dtype.kind == "f":
        if arr.dtype not in (np.float32, np.float64):
            arr = arr.astype(default_float())
    elif arr.dtype.kind == "c":
        raise DTypeError(f"Complex data not supported: {name} has dtype {arr.dtype}; it must hold real numbers.")
    elif arr.dtype.kind == "O":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise DTypeError(f"{name} must hold real numbers ({exc}).") from None
    else:
        raise DTypeError(
            f"{name} must hold real numbers; received an array of dtype {arr.dtype}."
        )
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            raise ShapeError(
                f"{name} must have rank {' or '.join(map(str, allowed))}; "
                f"received shape {arr.shape}."
            )
    if arr.size == 0:
        raise ShapeError(f"{name} must not be empty; received shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise NonFiniteError(f"{name} holds {bad} NaN or infinite value(s); all must be finite.")
    if keep_float64:
        return arr
    return narrow(arr, name)


def narrow(arr: np.ndarray, name: str, source: Any = None) -> np.ndarray:
    """A finite float array in the working precision: float64 is narrowed to float32 when x64 is off.

    ``source``: the dtype the values came in (default ``arr``'s); float32 data stays float32,
    unless an estimator's explicit ``dtype`` asks otherwise (:func:`requested_float`).
    Values whose squares would overflow the result's dtype raise RangeError
    (:func:`check_magnitude`) before anything is narrowed.

    Example:
        >>> narrow(np.array([1.0, 2.0]), "x").dtype in (np.float32, np.float64)
        True
    """
    source = np.dtype(source or arr.dtype)
    requested = _REQUESTED_FLOAT.get()
    target = requested if requested is not None else np.float32 if source == np.float32 else default_float()
    check_magnitude(arr, name, target)
    return arr.astype(target, copy=False)


def check_inputs(X: Any, name: str = "X", allow_1d: bool = True, keep_float64: bool = False) -> np.ndarray:
    """Inputs as an (n, p) float array with p ≥ 1.

    A 1-D array is read as n samples of one feature when ``allow_1d`` (the functional API);
    estimators pass ``allow_1d=False`` and ask for an explicit reshape, as scikit-learn does.
    ``keep_float64``: see :func:`as_float_array`.
    """
    arr: Any  # the input as given, or None when a ragged list cannot become an array
    try:
        arr = np.asarray(X) if isinstance(X, (list, tuple)) else X
    except ValueError:  # ragged lists: as_float_array below names the problem
        arr = None
    if getattr(arr, "ndim", 2) == 2 and getattr(arr, "shape", (1, 1))[1] == 0:
        raise ShapeError(f"{name} has 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required.")
    if getattr(arr, "ndim", 2) == 1 and not allow_1d:
        raise ShapeError(
            f"Expected 2D array, got 1D array instead: {name} has shape {arr.shape}. Reshape your data "
            "either using array.reshape(-1, 1) if your data has a single feature or array.reshape(1, -1) "
            "if it contains a single sample."
        )
    arr = as_float_array(X, name, ndim=(1, 2), keep_float64=keep_float64)
    return arr[:, None] if arr.ndim == 1 else arr


def check_outputs(Y: Any, n: int, name: str = "Y") -> tuple[np.ndarray, bool]:
    """Outputs as an (n, d) float array; returns (array, was_1d)."""
    arr = as_float_array(Y, name, ndim=(1, 2))
    was_1d = arr.ndim == 1
    arr = arr[:, None] if was_1d else arr
    if arr.shape[0] != n:
        raise ShapeError(
            f"{name} must have one row per input: expected {n} rows, received shape {arr.shape}."
        )
    return arr, was_1d


def check_positive(value: Any, name: str, allow_zero: bool = False, squared: bool = False) -> float:
    """A finite positive (or non-negative) scalar in the working precision's range
    (:func:`check_positive_range`; ``squared`` for a value the computation squares, a width)."""
    require_concrete(value, name, HOST_WAY_OUT)
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number; received {value!r}.") from None
    ok = np.isfinite(v) and (v >= 0 if allow_zero else v > 0)
    if not ok:
        what = "non-negative" if allow_zero else "positive"
        raise ParameterError(f"{name} must be a finite {what} number; received {value!r}.")
    check_positive_range(np.array([v]), name, squared=squared)
    return v


def check_positive_range(values: np.ndarray, name: str, squared: bool = False) -> np.ndarray:
    """Refuse non-negative hyperparameters that overflow when squared, or underflow to 0, in the working dtype.

    The admissible range is [tiny, :func:`safe_magnitude`] of the working precision (float32:
    [1.2e-38, 9.2e18]; float64: [2.2e-308, 6.7e153]); with ``squared`` (a width, whose square
    divides) [sqrt(tiny), …] (float32: 1.1e-19; float64: 1.5e-154). 0 itself is left to the caller.

    Example:
        >>> check_positive_range(np.array([1e-3, 1e3]), "lambdas").tolist()
        [0.001, 1000.0]
    """
    dtype = default_float()
    tiny = float(np.finfo(dtype).tiny)
    low, high = (np.sqrt(tiny) if squared else tiny), safe_magnitude(dtype)
    bad = values[(values != 0) & ((np.abs(values) < low) | (np.abs(values) > high))]
    if bad.size:
        fix = "pass dtype='float64' (or enable jax_enable_x64) or rescale" if dtype == np.float32 else "rescale"
        raise ParameterError(
            f"{name} must lie in [{low:.3g}, {high:.3g}] to keep the computation finite in {dtype.name}; "
            f"received {bad.tolist()[:5]}: {fix}."
        )
    return values


def check_positive_array(values: Any, name: str) -> np.ndarray:
    """A non-empty 1-D array of finite positive numbers."""
    arr = np.atleast_1d(as_float_array(values, name, ndim=(0, 1), keep_float64=True))
    if np.any(arr <= 0):
        raise ParameterError(f"{name} must hold positive numbers; received {arr.tolist()}.")
    return narrow(check_positive_range(arr, name), name)


def check_unit_interval(values: Any, name: str) -> np.ndarray:
    """A non-empty 1-D array of numbers in [0, 1]."""
    arr = np.atleast_1d(as_float_array(values, name, ndim=(0, 1)))
    if np.any((arr < 0) | (arr > 1)):
        raise ParameterError(f"{name} must lie in [0, 1]; received {arr.tolist()}.")
    return arr


INT32_MAX = 2**31 - 1  # counters of compiled loops are int32 unless x64 is enabled


def check_int(value: Any, name: str, minimum: int = 1, maximum: int = INT32_MAX) -> int:
    """An integer in [``minimum``, ``maximum``] (default: what an int32 loop counter holds)."""
    require_concrete(value, name, f"mark {name} static (a Python int)")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ParameterError(f"{name} must be an integer >= {minimum}; received {value!r}.")
    if value < minimum:
        raise ParameterError(f"{name} must be an integer >= {minimum}; received {value}.")
    if value > maximum:
        raise ParameterError(f"{name} must be an integer <= {maximum}; received {value}.")
    return int(value)


def check_n_folds(value: Any, n: int, name: str = "n_folds") -> int:
    """A number of cross-validation folds k, an integer with 2 <= k <= n (the ``n`` samples).

    Example:
        >>> check_n_folds(3, 1)
        Traceback (most recent call last):
        ...
        jaxmtl.errors.ParameterError: n_folds=3 folds need at least 3 samples; received n_samples=1.
    """
    k = check_int(value, name, minimum=2)
    if k > n:
        raise ParameterError(f"{name}={k} folds need at least {k} samples; received n_samples={n}.")
    return k


def check_output_matrix(A: Any, d: int | None = None, name: str = "A", tol: float = 1e-8) -> np.ndarray:
    """A symmetric positive semidefinite (d, d) matrix.

    Symmetry is checked to a relative tolerance ``tol``·max|A| and the result symmetrised;
    eigenvalues below ``-sqrt(tol)``·‖A‖ are reported as not PSD.
    """
    arr = as_float_array(A, name, ndim=2)
    if arr.shape[0] != arr.shape[1]:
        raise OutputMatrixError(f"{name} must be square; received shape {arr.shape}.")
    if d is not None and arr.shape[0] != d:
        raise OutputMatrixError(
            f"{name} must be {d}x{d} to match the {d} outputs; received shape {arr.shape}."
        )
    scale = max(float(np.max(np.abs(arr))), np.finfo(np.float64).tiny)
    asym = float(np.max(np.abs(arr - arr.T)))
    if asym > tol * scale * 100 + 1e-12:
        raise OutputMatrixError(
            f"{name} must be symmetric; max |A - A.T| = {asym:.3g} (max |A| = {scale:.3g})."
        )
    arr = 0.5 * (arr + arr.T)
    eig_min = float(np.linalg.eigvalsh(arr.astype(np.float64)).min())
    if eig_min < -np.sqrt(tol) * scale:
        raise OutputMatrixError(
            f"{name} must be positive semidefinite; its smallest eigenvalue is {eig_min:.3g}."
        )
    return arr


def check_fraction(value: Any, name: str) -> float:
    """A number strictly between 0 and 1."""
    if isinstance(value, (bool, np.bool_)):
        raise ParameterError(f"{name} must be a number in (0, 1); received {value!r}.")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number in (0, 1); received {value!r}.") from None
    if not 0.0 < v < 1.0:
        raise ParameterError(f"{name} must lie in (0, 1); received {value!r}.")
    return v


def check_random_state(value: Any, name: str = "random_state") -> int | None:
    """A seed for NumPy's generator: None or a non-negative integer."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ParameterError(f"{name} must be None or a non-negative integer; received {value!r}.")
    return int(value)


def check_bool(value: Any, name: str) -> bool:
    """A boolean flag (Python or NumPy bool)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ParameterError(f"{name} must be True or False; received {value!r}.")
    return bool(value)
