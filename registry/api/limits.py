"""Bounds on what a request may carry, so malformed input is a 4xx and never a 500.

Declared per parameter where a route owns it (`Offset`, `Seed`, `NoNul` below, shown in
OpenAPI) and enforced for every route by `install_body_limit`'s middleware:

* a body larger than `MAX_BODY_BYTES` is 413 (evidence uploads keep their own limit);
* a JSON body with duplicate keys, NaN/Infinity, out-of-range numbers or deep nesting
  is 422 naming the field;
* a NUL character in the path or a query parameter is 422 naming the parameter
  (PostgreSQL cannot store or compare NUL in text).
"""

from __future__ import annotations

import json
from typing import Annotated
from urllib.parse import parse_qsl

from fastapi import FastAPI, Path, Query
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from registry.api.errors import error_body
from registry.errors import CapgateError, FieldProblem, InvalidInput
from registry.records.documents import loads_json

# Offsets beyond this are never a real page and overflow database integers.
MAX_OFFSET = 1_000_000
# Integer columns (sequence numbers, seeds) are 32-bit signed on PostgreSQL.
MAX_INT32 = 2**31 - 1
# Seeds are 32-bit signed integers wherever they are stored or passed on.
MAX_SEED = MAX_INT32
MAX_BODY_BYTES = 8 * 1024 * 1024
# Routes that read uploads themselves and enforce their own, larger limits.
OWN_LIMIT_PATH_PREFIXES = ("/v1/evidence/import", "/v1/decision-logs")

NO_NUL = r"^[^\x00]*$"

Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Items to skip.")]
Seed = Annotated[
    int, Query(ge=0, le=MAX_SEED, description="Seed of the Monte Carlo recomputation.")
]
PathText = Annotated[str, Path(pattern=NO_NUL)]


class PayloadTooLarge(CapgateError):
    status_code = 413


def _problem(status: int, exc: CapgateError) -> tuple[int, bytes]:
    return status, json.dumps(error_body(exc)).encode("utf-8")


def _nul_problems(scope: Scope) -> list[FieldProblem]:
    problems = []
    if "\x00" in scope.get("path", ""):
        problems.append(FieldProblem("path", "must not contain NUL characters"))
    query = scope.get("query_string", b"").decode("latin-1")
    if "%00" in query or "\x00" in query:
        seen = set()
        for name, value in parse_qsl(query, keep_blank_values=True):
            if "\x00" in value or "\x00" in name:
                label = name.replace("\x00", "\\x00")
                if label not in seen:
                    seen.add(label)
                    problems.append(FieldProblem(label, "must not contain NUL characters"))
    return problems


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value)
    return None


def _checked(scope: Scope) -> bool:
    """JSON bodies (FastAPI reads a body without a content type as JSON too), except
    routes that stream uploads under their own limits."""
    if scope.get("method") in {"GET", "HEAD", "OPTIONS"}:
        return False
    if scope.get("path", "").startswith(OWN_LIMIT_PATH_PREFIXES):
        return False
    if _header(scope, b"content-encoding") not in {None, b"identity"}:
        return False
    content_type = _header(scope, b"content-type")
    return content_type is None or b"json" in content_type.lower()


def _declared_length(scope: Scope) -> int | None:
    value = _header(scope, b"content-length")
    return int(value) if value is not None and value.isdigit() else None


class BodyLimitMiddleware:
    """Buffers JSON bodies up to `max_bytes`, checks them, and replays them to the app."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problems = _nul_problems(scope)
        if problems:
            await self._answer(send, 422, InvalidInput("invalid request", problems=problems))
            return
        if not _checked(scope):
            await self.app(scope, receive, send)
            return
        too_large = PayloadTooLarge(f"request body larger than {self.max_bytes} bytes")
        declared = _declared_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._answer(send, 413, too_large)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                # Client went away: let the app see the disconnect.
                await self.app(scope, _replay([message], receive), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._answer(send, 413, too_large)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body:
            try:
                loads_json(body)
            except InvalidInput as exc:
                await self._answer(send, 422, exc)
                return
        replay: Message = {"type": "http.request", "body": body, "more_body": False}
        await self.app(scope, _replay([replay], receive), send)

    @staticmethod
    async def _answer(send: Send, status: int, exc: CapgateError) -> None:
        status, payload = _problem(status, exc)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})


def _replay(messages: list[Message], then: Receive) -> Receive:
    """`messages` first, then the real channel (where a later disconnect arrives)."""
    pending = list(messages)

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        return await then()

    return receive


def install_body_limit(app: FastAPI, max_bytes: int = MAX_BODY_BYTES) -> None:
    """Install the request bounds on `app` (once; before it starts serving)."""
    if any(getattr(m, "cls", None) == BodyLimitMiddleware for m in app.user_middleware):
        return
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_bytes)
