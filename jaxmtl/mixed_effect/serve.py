r"""The mixed-effect server on the network: an ASGI app (Starlette, served by uvicorn) over a durable
:class:`~jaxmtl.mixed_effect.Server` (optional extra ``jaxmtl[serve]``; ``import jaxmtl`` does not load it).

Run ``python -m jaxmtl.mixed_effect.serve --state DIR --tokens FILE [--host 127.0.0.1] [--port 8000]``
on a state directory the operator created with ``Server.open(DIR, Server(...))`` and a token file
written by :func:`issue_tokens` (it keeps SHA-256 digests of the tokens, never the tokens). Each
token belongs to one task: a request acts only as the task of its token, and a body naming a task
is refused.

=====================  ==================================================================
endpoint               answer
=====================  ==================================================================
``GET /health``        200 ``{"status": "ok"}`` (no token needed, nothing about the state)
``POST /send``         body ``{"x": [p numbers], "y": number, "w": number (optional)}``; 200
                       ``{"seq": k}`` once the send is in the log (fsync'd per ``--sync-every``)
``POST /predict``      body ``{"X": [[p numbers], ...]}``; 200 ``{"g_bar", "g_tilde", "prediction"}``
``GET /database``      the disclosed database, only if the server was created with
                       ``disclosure='database'`` (else 403), as docs/privacy.md describes
=====================  ==================================================================

Every request but ``/health`` needs ``Authorization: Bearer <token>`` (401 without a known one).
A body is read up to ``--max-body`` bytes (413 beyond, checked on the declared length and on the
bytes received), parsed as JSON (400 if it is not, or if it is not an object with exactly the
keys above and lists of numbers where numbers are expected — checked before anything touches
the state). The library's own refusals come back with their class name and message, ``{"error":
"NonFiniteError", "message": "..."}``, status 422 (409 for NotFittedError; 503 when the log
cannot be written); :class:`~jaxmtl.mixed_effect.remote.RemoteClient` raises the same class.
Sends and predictions run in worker threads; the server serialises them (:mod:`.server`).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import secrets
import socket
from typing import Any, AsyncIterator, Callable, Mapping, Sequence


from .. import errors
from ..errors import ParameterError, PersistenceError
from ..io.persistence import kernel_spec
from .server import Server, check_task_label

__all__ = ["issue_tokens", "load_tokens", "build_app", "main", "TOKENS_FORMAT", "MAX_BODY"]

TOKENS_FORMAT = "jaxmtl-mixed-effect-tokens"
MAX_BODY = 1 << 20
BODY_KEYS = {"/send": ({"x", "y"}, {"w"}), "/predict": ({"X"}, set())}


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def issue_tokens(path: str | os.PathLike[str], tasks: Sequence[int | str]) -> dict[int | str, str]:
    """Issue one fresh random token per task; write their SHA-256 digests to ``path`` (mode 0600,
    replaced atomically) and return {task: token} for the operator to hand to each client."""
    tasks = [check_task_label(t) for t in tasks]
    if len(set(tasks)) != len(tasks):
        raise ParameterError(f"tasks must be distinct; received {tasks!r}.")
    tokens = {t: secrets.token_urlsafe(32) for t in tasks}
    body = {"format": TOKENS_FORMAT, "tokens": [{"task": t, "sha256": _digest(k)} for t, k in tokens.items()]}
    tmp = os.fspath(path) + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(body, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return tokens


def load_tokens(path: str | os.PathLike[str]) -> dict[str, int | str]:
    """{SHA-256 digest: task} from a file written by :func:`issue_tokens`; ParameterError otherwise."""
    try:
        with open(path) as f:
            body = json.load(f)
        if body.get("format") != TOKENS_FORMAT:
            raise ValueError(f"format {body.get('format')!r}")
        return {str(e["sha256"]): check_task_label(e["task"]) for e in body["tokens"]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ParameterError(f"{os.fspath(path)!r} is not a token file of issue_tokens: {exc}") from None


class _Refused(Exception):
    """A request refused before it reaches the server: HTTP status, error name, message."""

    def __init__(self, status: int, name: str, message: str) -> None:
        super().__init__(message)
        self.status, self.name = status, name


def _status(exc: Exception) -> int:
    if isinstance(exc, errors.NotFittedError):
        return 409
    if isinstance(exc, PersistenceError):
        return 503
    return 422


def _numbers(value: Any, name: str, depth: int) -> None:
    """``value`` is a list (of lists, ``depth`` deep) of JSON numbers (NaN / ±Infinity included:
    the library refuses them by name)."""
    if not isinstance(value, list):
        raise _Refused(400, "RequestError", f"{name} must be a JSON array; received {type(value).__name__}.")
    for v in value:
        if depth > 1:
            _numbers(v, name, depth - 1)
        elif isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _Refused(400, "RequestError", f"{name} must hold numbers; received {v!r}.")


def _parse(raw: bytes, path: str) -> dict:
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise _Refused(400, "RequestError", f"the body is not JSON: {exc}.") from None
    required, optional = BODY_KEYS[path]
    if not isinstance(body, dict) or not required <= set(body) <= required | optional:
        keys = sorted(body) if isinstance(body, dict) else type(body).__name__
        raise _Refused(400, "RequestError", f"the body must be an object with keys {sorted(required)} "
                       f"(optional {sorted(optional)}); received {keys}. The task is the token's.")
    if path == "/send":
        _numbers(body["x"], "x", 1)
        for key in ("y", "w"):
            if key in body and (isinstance(body[key], bool) or not isinstance(body[key], (int, float))):
                raise _Refused(400, "RequestError", f"{key} must be a number; received {body[key]!r}.")
    else:
        _numbers(body["X"], "X", 2)
    return body


def build_app(server: Server, tokens: Mapping[str, int | str], max_body: int = MAX_BODY) -> Any:
    """The Starlette app serving ``server`` to the holders of ``tokens`` ({SHA-256 digest: task})."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    def refusal(status: int, name: str, message: str) -> JSONResponse:
        return JSONResponse({"error": name, "message": message}, status_code=status)

    def task_of(request: Request) -> int | str:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        task = tokens.get(_digest(token.strip())) if scheme.lower() == "bearer" else None
        if task is None:
            raise _Refused(401, "AuthenticationError", "missing or unknown token (Authorization: Bearer <token>).")
        return task

    async def body_of(request: Request) -> dict:
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > max_body):
            raise _Refused(413, "RequestError", f"the body declares {declared} bytes; the limit is {max_body}.")
        raw = bytearray()
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > max_body:
                raise _Refused(413, "RequestError", f"the body exceeds the limit of {max_body} bytes.")
        return _parse(bytes(raw), request.url.path)

    def endpoint(work: Callable[[int | str, dict], Any], with_body: bool = True) -> Callable:
        async def handle(request: Request) -> JSONResponse:
            try:
                task = task_of(request)
                body = await body_of(request) if with_body else {}
                return JSONResponse(await run_in_threadpool(work, task, body))
            except _Refused as exc:
                return refusal(exc.status, exc.name, str(exc))
            except errors.JaxmtlError as exc:
                return refusal(_status(exc), type(exc).__name__, str(exc))
        return handle

    def send(task: int | str, body: dict) -> dict:
        return {"seq": server._receive(task, body["x"], body["y"], body.get("w", 1.0))}

    def predict(task: int | str, body: dict) -> dict:
        g_bar, g_tilde = server.client(task).predict_parts(body["X"])
        return {"g_bar": g_bar.tolist(), "g_tilde": g_tilde.tolist(), "prediction": (g_bar + g_tilde).tolist()}

    def database(task: int | str, body: dict) -> dict:
        if server.disclosure != "database":
            raise _Refused(403, "ParameterError", "this server was created with disclosure='predictions': it "
                           "discloses no database, only each client's own predictions (POST /predict).")
        d = server.disclosed()
        listed = (lambda a: None if a is None else a.tolist())
        return {"X": d.X.tolist(), "b": d.b.tolist(), "G": d.G.tolist(), "b_ones": listed(d.b_ones),
                "a": listed(d.a), "alpha": d.alpha, "lam": d.lam, "kernel": kernel_spec(d.kernel),
                "fit_intercept": d.fit_intercept}

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    routes = [Route("/health", health, methods=["GET"]), Route("/send", endpoint(send), methods=["POST"]),
              Route("/predict", endpoint(predict), methods=["POST"]),
              Route("/database", endpoint(database, with_body=False), methods=["GET"])]
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        server.close()                              # fsync the log on a clean shutdown

    return Starlette(routes=routes, lifespan=lifespan)


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: serve the durable server of ``--state`` to the holders of ``--tokens``."""
    import uvicorn

    parser = argparse.ArgumentParser(prog="python -m jaxmtl.mixed_effect.serve", description=__doc__.split("\n")[0])
    parser.add_argument("--state", required=True, help="directory of a durable server (Server.open)")
    parser.add_argument("--tokens", required=True, help="token file written by issue_tokens")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0: a free port chosen by the system")
    parser.add_argument("--port-file", help="write the bound port here once listening")
    parser.add_argument("--sync-every", type=int, default=1, help="fsync the log every k sends (default 1)")
    parser.add_argument("--max-body", type=int, default=MAX_BODY, help="largest request body in bytes")
    parser.add_argument("--max-connections", type=int, default=1024,
                        help="open connections and requests beyond which uvicorn answers 503")
    args = parser.parse_args(argv)
    server = Server.open(args.state, sync_every=args.sync_every)
    app = build_app(server, load_tokens(args.tokens), args.max_body)
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(sock.getsockname()[1]))
        os.replace(tmp, args.port_file)
    config = uvicorn.Config(app, log_level="warning", timeout_keep_alive=5, limit_concurrency=args.max_connections)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
