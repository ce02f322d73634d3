r"""Spectral filters g_λ(σ) ([BRBV11] §3.2–3.3; [LRODV08] §5).

A spectral filter turns the kernel system Γ C = Y into the stable estimate C = g_λ(Γ) Y.

Normalisation
-------------
Every filter here acts on the spectrum σ of the *normalised* Gram operator Γ/n, where n is
the number of training inputs, and coefficients are ``C = g(Γ/n) Y / n``. With this
convention

* Tikhonov ``g = 1/(σ + λ)`` gives ``C = (Γ + nλ I)^{-1} Y``: the ridge problem
  ``min (1/n) Σ‖y_i − f(x_i)‖² + λ‖f‖²``, which is scikit-learn's ``KernelRidge`` with
  ``alpha = n·λ`` (for A = I);
* the paper's λ and its ``1/(σ + nλ)`` on the unnormalised Γ are the same thing;
* the iterative filters use a step ``τ``; the default ``τ = 1/σ_max`` (σ_max the largest
  eigenvalue of Γ/n, or an upper bound) keeps ``τσ ∈ [0, 1]``, which the papers obtain by
  assuming κ² = sup K(x, x) ≤ 1. For Landweber λ ↔ 1/t, for the ν-method λ ↔ 1/t².

The parameter of a filter is λ (Tikhonov, iterated Tikhonov, TSVD) or the iteration count t
(Landweber, ν-method). ``filter(sigma, param, tau)`` evaluates g on an array of eigenvalues.
Iterative filters also expose their recurrence as an ``init``/``update`` pair acting on any
linear map, so the same code runs on eigenvalues (a diagonal map: the eigen path) and on a
Gram operator (the matrix-free path)::

    state = filt.init(rhs)                      # C⁰ = 0
    state, C = filt.update(state, i, rhs, matvec, tau)   # step i = 1, 2, ...

Example:
    >>> import jax.numpy as jnp
    >>> from jaxmtl.filters import Tikhonov, NuMethod
    >>> sigma = jnp.array([1.0, 0.1, 1e-3])
    >>> Tikhonov()(sigma, 0.01).shape
    (3,)
    >>> NuMethod()(sigma, 20, 1.0).shape
    (3,)
"""

from __future__ import annotations

import abc
import inspect
from typing import Any, Callable, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from .._checks import check_int, check_positive
from ..errors import ParameterError

__all__ = [
    "SpectralFilter",
    "IterativeFilter",
    "Tikhonov",
    "IteratedTikhonov",
    "TruncatedSVD",
    "Landweber",
    "NuMethod",
    "get_filter",
    "register_filter",
    "filter_classes",
]

Array = jax.Array


class SpectralFilter(eqx.Module):
    """A filter g(σ, param) on the spectrum of Γ/n.

    Subclasses set ``iterative`` (the parameter is an iteration count) and implement
    ``__call__(sigma, param, tau=None)`` returning g on every entry of ``sigma``.
    """

    iterative: ClassVar[bool] = False
    name: ClassVar[str] = "filter"

    @abc.abstractmethod
    def __call__(self, sigma: Array, param: Any, tau: Any = None) -> Array:
        """g_param(σ) elementwise; ``sigma`` ≥ 0 of any shape, result of the same shape."""

    def residual(self, sigma: Array, param: Any, tau: Any = None) -> Array:
        """σ·g(σ): the filter factor of the hat matrix (0 ≤ σg ≤ 1 for admissible filters)."""
        return sigma * self(sigma, param, tau)

    def spec(self) -> dict:
        """A JSON-ready description: the class name and its settings."""
        fields = {k: (float(v) if not isinstance(v, (int, str)) else v) for k, v in vars(self).items()}
        return {"filter": type(self).__name__, **fields}


class Tikhonov(SpectralFilter):
    """Tikhonov (ridge) filter g_λ(σ) = 1/(σ + λ) ([BRBV11] §3.2).

    Example:
        >>> Tikhonov()(jnp.array([1.0]), 1.0)
        Array([0.5], dtype=float32)
    """

    name: ClassVar[str] = "tikhonov"

    def __call__(self, sigma: Array, param: Any, tau: Any = None) -> Array:
        return 1.0 / (sigma + param)


class IteratedTikhonov(SpectralFilter):
    """Iterated Tikhonov of order ν: g_λ(σ) = ((σ+λ)^ν − λ^ν) / (σ (σ+λ)^ν) ([LRODV08] §5.4).

    Evaluated stably as ``−expm1(−ν·log1p(σ/λ)) / σ`` with the limit ν/λ at σ = 0. Order 1
    is Tikhonov.

    Args:
      order: the number ν of Tikhonov iterations (a positive integer).
    """

    order: int = eqx.field(static=True, default=5)
    name: ClassVar[str] = "iterated_tikhonov"

    def __check_init__(self):
        check_int(self.order, "order", minimum=1)

    def __call__(self, sigma: Array, param: Any, tau: Any = None) -> Array:
        x = sigma / param
        safe = jnp.where(x > 0, x, 1.0)
        val = -jnp.expm1(-self.order * jnp.log1p(safe)) / jnp.where(x > 0, sigma, 1.0)
        return jnp.where(x > 0, val, self.order / param)


class TruncatedSVD(SpectralFilter):
    """Spectral cut-off: g_λ(σ) = 1/σ for σ ≥ λ, else 0 ([LRODV08] §5.3)."""

    name: ClassVar[str] = "tsvd"

    def __call__(self, sigma: Array, param: Any, tau: Any = None) -> Array:
        keep = (sigma >= param) & (sigma > 0)
        return jnp.where(keep, 1.0 / jnp.where(keep, sigma, 1.0), 0.0)


class IterativeFilter(SpectralFilter):
    """A filter defined by a recurrence on C = g(Γ/n)·rhs; the parameter is the step count t.

    ``init(rhs)`` returns the state at t = 0; ``update(state, i, rhs, matvec, tau)`` performs
    step i (1-based) with ``matvec(C) = (Γ/n) C`` and returns ``(state, C_i)``. On eigenvalues
    ``rhs = ones`` and ``matvec = sigma * ·`` give g_i(σ) exactly.
    """

    iterative: ClassVar[bool] = True

    @abc.abstractmethod
    def init(self, rhs: Array) -> Any:
        """State at step 0 (C⁰ = 0)."""

    @abc.abstractmethod
    def update(
        self, state: Any, i: ArrayLike, rhs: Array, matvec: Callable[[Array], Array], tau: ArrayLike
    ) -> tuple[Any, Array]:
        """One step of the recurrence; returns (new state, current C)."""

    @staticmethod
    def current(state: Any) -> Array:
        """The coefficients held in ``state``."""
        return state[0]

    def __call__(self, sigma: Array, param: Any, tau: Any = None) -> Array:
        tau = 1.0 if tau is None else tau
        ones = jnp.ones_like(sigma)

        def body(i, state):
            return self.update(state, i + 1, ones, lambda g: sigma * g, tau)[0]

        return self.current(jax.lax.fori_loop(0, param, body, self.init(ones)))


class Landweber(IterativeFilter):
    """Landweber iteration / L2 boosting: g_t(σ) = τ Σ_{i<t} (1 − τσ)^i ([BRBV11] §3.3).

    Recurrence: Cⁱ = Cⁱ⁻¹ + τ (rhs − (Γ/n) Cⁱ⁻¹), C⁰ = 0. Converges for τσ_max < 2.
    """

    name: ClassVar[str] = "landweber"

    def init(self, rhs: Array) -> tuple[Array, ...]:
        return (jnp.zeros_like(rhs),)

    def update(
        self, state: Any, i: ArrayLike, rhs: Array, matvec: Callable[[Array], Array], tau: ArrayLike
    ) -> tuple[tuple[Array, ...], Array]:
        (c,) = state
        c = c + tau * (rhs - matvec(c))
        return (c,), c

    def closed_form(self, sigma: Array, t: ArrayLike, tau: ArrayLike = 1.0) -> Array:
        """(1 − (1 − τσ)^t)/σ, equal to the recurrence (limit τt at σ = 0); the shape of ``sigma``."""
        x = tau * sigma
        pos = x > 0
        safe = jnp.where(pos, x, 0.5)
        val = -jnp.expm1(t * jnp.log1p(-jnp.minimum(safe, 1.0))) / jnp.where(pos, sigma, 1.0)
        return jnp.where(pos, val, tau * t)


class NuMethod(IterativeFilter):
    """The ν-method (accelerated Landweber) of [BRBV11] §3.3 / [LRODV08] §5.2.

    Cⁱ = Cⁱ⁻¹ + u_i (Cⁱ⁻¹ − Cⁱ⁻²) + τ ω_i (rhs − (Γ/n) Cⁱ⁻¹), with
    u_i = (i−1)(2i−3)(2i+2ν−1) / ((i+2ν−1)(2i+4ν−1)(2i+2ν−3)) and
    ω_i = 4 (2i+2ν−1)(i+ν−1) / ((i+2ν−1)(2i+4ν−1)); u_1 = 0, ω_1 = (4ν+2)/(4ν+1).
    Requires τσ ≤ 1.

    Args:
      nu: the qualification ν ∈ (0, 1e6] (the papers use 1).
    """

    nu: float = eqx.field(static=True, default=1.0)
    name: ClassVar[str] = "nu_method"

    def __check_init__(self):
        if check_positive(self.nu, "nu") > 1e6:  # larger ν overflows the step coefficients
            raise ParameterError(f"nu must lie in (0, 1e6]; received {self.nu!r}.")

    def coefficients(self, i: ArrayLike) -> tuple[Array, Array]:
        """(u_i, ω_i) for step i ≥ 1 (array-valued i allowed)."""
        i = jnp.asarray(i, dtype=jnp.result_type(float))
        nu = self.nu
        u = (i - 1) * (2 * i - 3) * (2 * i + 2 * nu - 1) / (
            (i + 2 * nu - 1) * (2 * i + 4 * nu - 1) * (2 * i + 2 * nu - 3)
        )
        w = 4 * (2 * i + 2 * nu - 1) * (i + nu - 1) / ((i + 2 * nu - 1) * (2 * i + 4 * nu - 1))
        # step 1 in closed form: the general formula is 0/0 there for ν = 1/2 (and tiny ν)
        first = i == 1
        return jnp.where(first, 0.0, u), jnp.where(first, (4 * nu + 2) / (4 * nu + 1), w)

    def init(self, rhs: Array) -> tuple[Array, ...]:
        z = jnp.zeros_like(rhs)
        return (z, z)

    def update(
        self, state: Any, i: ArrayLike, rhs: Array, matvec: Callable[[Array], Array], tau: ArrayLike
    ) -> tuple[tuple[Array, ...], Array]:
        c, c_prev = state
        u, w = self.coefficients(i)
        u = u.astype(rhs.dtype)
        w = w.astype(rhs.dtype)
        c_new = c + u * (c - c_prev) + (tau * w) * (rhs - matvec(c))
        return (c_new, c), c_new


_FILTERS: dict[str, type[SpectralFilter]] = {
    "tikhonov": Tikhonov,
    "ridge": Tikhonov,
    "iterated_tikhonov": IteratedTikhonov,
    "tsvd": TruncatedSVD,
    "spectral_cutoff": TruncatedSVD,
    "landweber": Landweber,
    "nu_method": NuMethod,
    "nu": NuMethod,
}
_BUILTIN = dict(_FILTERS)


def get_filter(spec: Any) -> SpectralFilter:
    """A filter from an instance or a name ('tikhonov', 'iterated_tikhonov', 'tsvd',
    'landweber', 'nu_method', or a name given to :func:`register_filter`).

    Example:
        >>> get_filter("nu_method")
        NuMethod()
    """
    if isinstance(spec, SpectralFilter):
        return spec
    if isinstance(spec, str) and spec.lower() in _FILTERS:
        return _FILTERS[spec.lower()]()
    raise ParameterError(
        f"filter must be a SpectralFilter or one of {sorted(set(_FILTERS))}; received {spec!r}. "
        "A filter of your own is named with jaxmtl.register_filter(name, cls)."
    )


def register_filter(name: str, cls: type[SpectralFilter] | None = None) -> Any:
    """Give a filter class a name: ``get_filter(name)`` — hence ``filter=name`` in every
    estimator — builds ``cls()``, and :func:`jaxmtl.save` stores its instances.

    Usable as a call, ``register_filter("my_filter", MyFilter)``, or as a class decorator,
    ``@register_filter("my_filter")``. The class must be a concrete
    :class:`SpectralFilter` (or :class:`IterativeFilter`) subclass built by ``cls()`` and by
    ``cls(**spec)`` from its :meth:`~SpectralFilter.spec` (files store that dict). Names are
    case-insensitive; the built-in names and the built-in classes' names stay theirs; a name
    registered again takes the newer class (a redefined class in a notebook).

    Returns:
      ``cls`` (a decorator returning it when ``cls`` is omitted).

    Example:
        >>> class Shifted(Tikhonov):
        ...     def __call__(self, sigma, param, tau=None):
        ...         return 1.0 / (sigma + 2.0 * param)
        >>> _ = register_filter("shifted", Shifted)
        >>> type(get_filter("shifted")).__name__
        'Shifted'
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ParameterError(f"a filter name must be a Python identifier such as 'my_filter'; received {name!r}.")
    key = name.lower()
    if cls is None:
        return lambda c: register_filter(name, c)
    if not isinstance(cls, type) or not issubclass(cls, SpectralFilter) or inspect.isabstract(cls):
        raise ParameterError(f"register_filter({name!r}, cls) needs a concrete jaxmtl.filters.SpectralFilter "
                             f"subclass implementing __call__ (and init / update for an IterativeFilter); "
                             f"received {cls!r}.")
    own = {c.__name__: c for c in _BUILTIN.values()}
    if _BUILTIN.get(key, cls) is not cls or own.get(cls.__name__, cls) is not cls:
        raise ParameterError(f"{name!r} / class {cls.__name__} would replace one of jaxmtl's filters "
                             f"{sorted(_BUILTIN)}: choose another name and class name.")
    _FILTERS[key] = cls
    return cls


def filter_classes() -> dict[str, type[SpectralFilter]]:
    """Every filter class :func:`get_filter` knows, built-in and registered, by class name (the
    name a saved file records).

    Example:
        >>> {"IteratedTikhonov", "Landweber", "NuMethod"} <= set(filter_classes())
        True
    """
    return {cls.__name__: cls for cls in _FILTERS.values()}
