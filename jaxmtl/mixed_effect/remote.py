r"""A client of the mixed-effect server over HTTP (:mod:`.serve`; optional extra ``jaxmtl[serve]``, httpx).

:class:`RemoteClient` has the methods of an in-process :class:`~jaxmtl.mixed_effect.Client` —
``send``, ``predict``, ``predict_parts`` — plus ``disclosed`` (only where the server discloses its
database) and ``health``. The task is the token's: the operator issued the token for one task
(:func:`~jaxmtl.mixed_effect.serve.issue_tokens`). A refusal raises the library's own exception
class with the server's message (``NonFiniteError`` for a NaN output, ``ShapeError`` for a wrong
number of features, ...); a refusal by the HTTP layer (unknown token, body too large, malformed
request) raises :class:`RemoteError` with its HTTP status.

Example (a server must be listening)::

    client = RemoteClient("http://127.0.0.1:8000", token)
    client.send([0.3, 1.2], 0.7)
    client.predict([[0.0, 1.0]])
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import errors
from ..errors import JaxmtlError
from ..io.persistence import kernel_from_spec
from .server import DisclosedDatabase

__all__ = ["RemoteClient", "RemoteError"]


class RemoteError(JaxmtlError):
    """A request refused by the HTTP layer (``status``: 400 malformed, 401 token, 413 too large, ...)."""

    def __init__(self, status: int, name: str, message: str) -> None:
        super().__init__(f"HTTP {status} {name}: {message}")
        self.status, self.name = status, name


def _array(name: str, value: Any, ndim: int) -> list:
    """``value`` as nested lists of float (NaN and ±inf kept: the server refuses them by name)."""
    a = np.asarray(value, dtype=np.float64)
    if a.ndim != ndim:
        raise errors.ShapeError(f"{name} must have {ndim} dimension(s); received shape {a.shape}.")
    return a.tolist()


class RemoteClient:
    """The client of one task on a server at ``url`` (e.g. ``http://127.0.0.1:8000``), with its ``token``.

    Args:
      url: the server's base address.
      token: the token the operator issued for this client's task.
      timeout: seconds per request.
    """

    def __init__(self, url: str, token: str, timeout: float = 30.0) -> None:
        import httpx

        self._http = httpx.Client(base_url=url, timeout=timeout, headers={"Authorization": f"Bearer {token}"})

    def _call(self, method: str, path: str, body: dict | None = None) -> Any:
        content = None if body is None else json.dumps(body).encode()  # NaN / Infinity kept: refused by name
        response = self._http.request(method, path, content=content, headers={"Content-Type": "application/json"})
        if response.status_code == 200:
            return response.json()
        try:
            err = response.json()
            name, message = str(err["error"]), str(err["message"])
        except (ValueError, KeyError, TypeError):
            name, message = "HTTPError", response.text[:200]
        cls = getattr(errors, name, None)
        if isinstance(cls, type) and issubclass(cls, JaxmtlError) and response.status_code in (403, 409, 422, 503):
            raise cls(message)
        raise RemoteError(response.status_code, name, message)

    def health(self) -> bool:
        """Whether the server answers its health check."""
        return bool(self._call("GET", "/health").get("status") == "ok")

    def send(self, x: npt.ArrayLike, y: float, w: float = 1.0) -> int:
        """Send one example (x (p,), y, w > 0); returns its number in the server's log once it is there."""
        return int(self._call("POST", "/send", {"x": _array("x", x, 1), "y": float(y), "w": float(w)})["seq"])

    def predict_parts(self, X: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(ḡ(X), g̃_j(X)), each (q,), for X (q, p): the common function and this task's shift."""
        out = self._call("POST", "/predict", {"X": _array("X", X, 2)})
        return np.asarray(out["g_bar"], np.float64), np.asarray(out["g_tilde"], np.float64)

    def predict(self, X: npt.ArrayLike) -> np.ndarray:
        """(q,) estimates ĝ_j(X) = ḡ(X) + g̃_j(X) for X (q, p)."""
        g_bar, g_tilde = self.predict_parts(X)
        return g_bar + g_tilde

    def disclosed(self) -> DisclosedDatabase:
        """The disclosed database (only from a server with ``disclosure='database'``; else ParameterError)."""
        d = self._call("GET", "/database")
        opt = (lambda v: None if v is None else np.asarray(v, np.float64))
        p = len(d["X"][0]) if d["X"] else 0
        return DisclosedDatabase(np.asarray(d["X"], np.float64).reshape(-1, p), np.asarray(d["b"], np.float64),
                                 np.asarray(d["G"], np.float64).reshape(len(d["b"]), len(d["b"])),
                                 opt(d["b_ones"]), opt(d["a"]), d["alpha"], d["lam"],
                                 kernel_from_spec(d["kernel"], "kernel"), d["fit_intercept"])

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._http.close()

    def __enter__(self) -> "RemoteClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
