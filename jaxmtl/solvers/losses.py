r"""Convex losses by their resolvents: the one place a loss enters the solvers ([Din11] Table 2.1).

The kernel machine of [Din11] ch. 2 (Dinuzzo, *Learning functions with kernel methods*, PhD
thesis, 2011) minimises, over coefficients c,

    F(c) = f(Γc) + ½ cᵀΓc,        f(z) = Σᵢ C·L(yᵢ, zᵢ)        (2.2), (2.3)

and its solutions are the fixed points of c = −J_α(αΓc − c) (Theorem 8, eq. 2.7), with
J_α = (I + α(∂f)⁻¹)⁻¹ the resolvent of the inverse subdifferential (2.6). For an additively
separable f the resolvent acts entry by entry. Writing z = prox_{f/α}(v/α) (Moreau's identity)
gives, for every loss,

    S(v) := −J_α(v) = α·(prox_{(C/α)L(y,·)}(v/α) − v/α),

from which each closed form below follows; S is what :func:`resolvent` returns and what the
fixed-point iteration (2.10) and coordinate descent (2.13) apply.

Each :class:`Loss` holds three pure element-wise functions of ``(y, z_or_v, C, alpha, eps)``:
``value`` L(y, z), ``resolvent`` S(v) and ``conjugate`` f_i*(u) (the Fenchel conjugate of
z ↦ C·L(y, z), used for the duality gap f(Γc) + f*(−c) + cᵀΓc ≥ 0 that stops the solvers).
A loss of one's own is a :class:`Loss` given to :func:`register_loss` (``jaxmtl.register_loss``).

=======================  ==============================  ========================================
name                     L(y, z)                          S(v) = −J_α(v)   (r = αy − v)
=======================  ==============================  ========================================
``hinge`` (L1-SVM)       (1 − yz)₊                        y·min(C, (α − yv)₊)
``squared_hinge`` (L2)   (1 − yz)₊² / 2                   y·(α − yv)₊ / (1 + α/C)
``square`` (RLS)         (y − z)² / 2                     r / (1 + α/C)
``absolute`` (RLA)       |y − z|                          sign(r)·min(C, |r|)
``epsilon_insensitive``  (|y − z| − ε)₊  (SVR)            sign(r)·min(C, (|r| − αε)₊)
``huber``                ε-Huber of y − z                 sign(r)·min(|r| / (1 + α/C), Cε)
``logistic``             log(1 + e^{−yz})                 y·s, s = C·σ(−(yv + s)/α) (Newton)
=======================  ==============================  ========================================

Departures from the printed Table 2.1: the RLA and SVR rows there read sign(y − v)·min(C, y − v)
and sign(y − v)·min(C, (y − v − αε)₊); the derivation above (and the optimality test in
``tests/test_solvers.py``) gives |αy − v| in both — the printed rows are the α = 1 case with the
absolute value dropped. Huber and logistic are not in the table; their resolvents follow from
the same identity (logistic has no closed form: a safeguarded Newton solve of the scalar
equation above, 8 bisection + 8 Newton steps).

Entries with C = 0 (held-out rows of a fold, padding) have f_i ≡ 0: their coefficient is 0.

Example:
    >>> import jax.numpy as jnp
    >>> float(resolvent(get_loss("hinge"), jnp.asarray(0.5), jnp.asarray(1.0), 2.0, 1.0, 0.0))  # min(C, α − yv)
    1.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..errors import ParameterError

__all__ = ["Loss", "LOSSES", "get_loss", "register_loss", "resolvent", "loss_values", "conjugate_values"]

Array = jax.Array


@dataclass(frozen=True)
class Loss:
    """A convex loss L(y, z) through its resolvent (hashable: a static argument of ``jit``).

    Attributes:
      name: registry key.
      value: ``(y, z, eps) -> L(y, z)``, element-wise.
      resolvent: ``(v, y, alpha, C, eps) -> S(v) = −J_α(v)`` for f_i = C·L(y_i, ·), element-wise.
      conjugate: ``(u, y, C, eps) -> f_i*(u)``, +inf outside its domain.
      labels: True when y must be ±1 (classification losses; ``predict``'s sign or argmax decides).
    """

    name: str
    value: Callable
    resolvent: Callable
    conjugate: Callable
    labels: bool = False


def _pos(x):
    return jnp.maximum(x, 0.0)


def _inf_unless(ok, x):
    return jnp.where(ok, x, jnp.inf)


def _slack(c, C):
    """Domain test |u| ≤ C with a relative round-off margin."""
    return c <= C * (1.0 + 1e-9) + 1e-300


# ---- hinge (L1-SVM) ------------------------------------------------------------------------
def _hinge_value(y, z, eps):
    return _pos(1.0 - y * z)


def _hinge_resolvent(v, y, alpha, C, eps):
    return y * jnp.minimum(C, _pos(alpha - y * v))


def _hinge_conjugate(u, y, C, eps):
    s = -u * y  # f*(u) = uy on −C ≤ uy ≤ 0
    return _inf_unless((s >= -1e-12 * C) & _slack(s, C), -s)


# ---- squared hinge (L2-SVM) ----------------------------------------------------------------
def _sqhinge_value(y, z, eps):
    return 0.5 * _pos(1.0 - y * z) ** 2


def _sqhinge_resolvent(v, y, alpha, C, eps):
    return y * _pos(alpha - y * v) / (1.0 + alpha / C)


def _sqhinge_conjugate(u, y, C, eps):
    s = u * y  # f*(u) = s + s²/(2C) for s ≤ 0
    return _inf_unless(s <= 1e-12 * C, s + s**2 / (2.0 * C))


# ---- square (RLS) --------------------------------------------------------------------------
def _square_value(y, z, eps):
    return 0.5 * (y - z) ** 2


def _square_resolvent(v, y, alpha, C, eps):
    return (alpha * y - v) / (1.0 + alpha / C)


def _square_conjugate(u, y, C, eps):
    return u * y + u**2 / (2.0 * C)


# ---- absolute (RLA) ------------------------------------------------------------------------
def _abs_value(y, z, eps):
    return jnp.abs(y - z)


def _abs_resolvent(v, y, alpha, C, eps):
    r = alpha * y - v
    return jnp.sign(r) * jnp.minimum(C, jnp.abs(r))


def _abs_conjugate(u, y, C, eps):
    return _inf_unless(_slack(jnp.abs(u), C), u * y)


# ---- epsilon-insensitive (SVR) -------------------------------------------------------------
def _eps_value(y, z, eps):
    return _pos(jnp.abs(y - z) - eps)


def _eps_resolvent(v, y, alpha, C, eps):
    r = alpha * y - v
    return jnp.sign(r) * jnp.minimum(C, _pos(jnp.abs(r) - alpha * eps))


def _eps_conjugate(u, y, C, eps):
    return _inf_unless(_slack(jnp.abs(u), C), u * y + eps * jnp.abs(u))


# ---- Huber (threshold eps) -----------------------------------------------------------------
def _huber_value(y, z, eps):
    r = jnp.abs(y - z)
    return jnp.where(r <= eps, 0.5 * r**2, eps * (r - 0.5 * eps))


def _huber_resolvent(v, y, alpha, C, eps):
    r = alpha * y - v
    return jnp.sign(r) * jnp.minimum(jnp.abs(r) / (1.0 + alpha / C), C * eps)


def _huber_conjugate(u, y, C, eps):
    return _inf_unless(_slack(jnp.abs(u), C * eps), u * y + u**2 / (2.0 * C))


# ---- logistic ------------------------------------------------------------------------------
LOGISTIC_BISECTIONS = 8
LOGISTIC_NEWTON = 8


def _logistic_value(y, z, eps):
    return jnp.logaddexp(0.0, -y * z)


def _logistic_resolvent(v, y, alpha, C, eps):
    """y·s with s ∈ (0, C) the root of g(s) = s − C·σ(−(yv + s)/α) (g' = 1 + (C/α)σ(1 − σ) ≥ 1)."""
    w = y * v

    def g(s):
        return s - C * jax.nn.sigmoid(-(w + s) / alpha)

    def bisect(_, lohi):
        lo, hi = lohi
        mid = 0.5 * (lo + hi)
        up = g(mid) > 0
        return jnp.where(up, lo, mid), jnp.where(up, mid, hi)

    lo, hi = jax.lax.fori_loop(0, LOGISTIC_BISECTIONS, bisect, (jnp.zeros_like(w), jnp.broadcast_to(C, w.shape)))

    def newton(_, s):
        p = jax.nn.sigmoid(-(w + s) / alpha)
        step = (s - C * p) / (1.0 + (C / alpha) * p * (1.0 - p))
        return jnp.clip(s - step, lo, hi)

    s = jax.lax.fori_loop(0, LOGISTIC_NEWTON, newton, 0.5 * (lo + hi))
    return y * s


def _xlogx(x):
    return jnp.where(x > 0, x * jnp.log(jnp.where(x > 0, x, 1.0)), 0.0)


def _logistic_conjugate(u, y, C, eps):
    q = -u * y / C  # f*(u) = C[q log q + (1 − q) log(1 − q)] on 0 ≤ q ≤ 1
    ok = (q >= -1e-12) & (q <= 1.0 + 1e-12)
    q = jnp.clip(q, 0.0, 1.0)
    return _inf_unless(ok, C * (_xlogx(q) + _xlogx(1.0 - q)))


LOSSES: dict[str, Loss] = {
    loss.name: loss
    for loss in (
        Loss("hinge", _hinge_value, _hinge_resolvent, _hinge_conjugate, labels=True),
        Loss("squared_hinge", _sqhinge_value, _sqhinge_resolvent, _sqhinge_conjugate, labels=True),
        Loss("square", _square_value, _square_resolvent, _square_conjugate),
        Loss("absolute", _abs_value, _abs_resolvent, _abs_conjugate),
        Loss("epsilon_insensitive", _eps_value, _eps_resolvent, _eps_conjugate),
        Loss("huber", _huber_value, _huber_resolvent, _huber_conjugate),
        Loss("logistic", _logistic_value, _logistic_resolvent, _logistic_conjugate, labels=True),
    )
}


_BUILTIN = dict(LOSSES)


def get_loss(loss: str | Loss) -> Loss:
    """The :class:`Loss` named ``loss`` (or ``loss`` itself); ParameterError for unknown names."""
    if isinstance(loss, Loss):
        return loss
    if isinstance(loss, str) and loss in LOSSES:
        return LOSSES[loss]
    raise ParameterError(f"loss must be one of {sorted(LOSSES)} or a jaxmtl.solvers.Loss; received {loss!r}. "
                         "A loss of your own is named with jaxmtl.register_loss(Loss(...)).")


def register_loss(loss: Loss) -> Loss:
    """Name a convex loss: ``KernelMachine(loss=loss.name)`` then uses it, and a model fitted with
    it is saved by that name (register it again before :func:`jaxmtl.load` in a new process).

    The three functions of ``loss`` are element-wise and pure ``jax.numpy`` (they run inside the
    compiled solvers): ``value(y, z, eps)``, ``resolvent(v, y, alpha, C, eps)`` =
    α(prox_{(C/α)L(y,·)}(v/α) − v/α) and ``conjugate(u, y, C, eps)`` (+inf off its domain; the
    duality gap that stops the solvers needs it exact). Built-in names stay theirs; a name
    registered again takes the newer loss.

    Returns:
      ``loss``.

    Example:
        >>> import jax.numpy as jnp
        >>> half = Loss("half_square", lambda y, z, eps: (y - z) ** 2 / 4,
        ...             lambda v, y, alpha, C, eps: (alpha * y - v) / (1 + 2 * alpha / C),
        ...             lambda u, y, C, eps: u * y + u ** 2 / C)
        >>> register_loss(half) is get_loss("half_square")
        True
    """
    if not isinstance(loss, Loss) or not isinstance(loss.name, str) or not loss.name.isidentifier():
        raise ParameterError(f"register_loss needs a jaxmtl.solvers.Loss whose name is an identifier; "
                             f"received {loss!r}.")
    bad = [f for f in ("value", "resolvent", "conjugate") if not callable(getattr(loss, f))]
    if bad:
        raise ParameterError(f"loss {loss.name!r}: {', '.join(bad)} must be callable.")
    if _BUILTIN.get(loss.name, loss) is not loss:
        raise ParameterError(f"{loss.name!r} is one of jaxmtl's losses {sorted(_BUILTIN)}: choose another name.")
    LOSSES[loss.name] = loss
    return loss


def resolvent(loss: Loss, v: Array, y: Array, alpha: ArrayLike, C: Array, eps: ArrayLike) -> Array:
    """S(v) = −J_α(v) element-wise for f_i = C_i·L(y_i, ·); 0 where C_i = 0.

    Args:
      loss: a :class:`Loss`.
      v: (...) points; y: targets (broadcastable); alpha: α > 0 (scalar or per entry);
      C: weights C_i ≥ 0 (broadcastable); eps: the loss's ε (SVR tube, Huber threshold).

    Returns:
      array of v's shape.
    """
    C = jnp.broadcast_to(C, v.shape)
    on = C > 0
    return jnp.where(on, loss.resolvent(v, y, alpha, jnp.where(on, C, 1.0), eps), 0.0)


def loss_values(loss: Loss, y: Array, z: Array, C: Array, eps) -> Array:
    """f_i(z_i) = C_i·L(y_i, z_i) element-wise."""
    return C * loss.value(y, z, eps)


def conjugate_values(loss: Loss, u: Array, y: Array, C: Array, eps) -> Array:
    """f_i*(u_i) element-wise: the conjugate of C_i·L(y_i, ·) (ι{0} where C_i = 0)."""
    C = jnp.broadcast_to(C, u.shape)
    on = C > 0
    inner = loss.conjugate(u, y, jnp.where(on, C, 1.0), eps)
    return jnp.where(on, inner, jnp.where(u == 0, 0.0, jnp.inf))
