"""`capgate gate check --server`: the thin client a release pipeline runs.

It sends one request with the standard library's HTTP client and reads the decision
without pydantic, SQLAlchemy or the planner: the server holds the registry and the
engine, so the client's cost is Python's start-up and one round trip (about what
`opa eval` costs; benchmarks/cli/bench_gate_check.py measures both side by side).
Every other remote command goes through cli.backend.RemoteBackend.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from typing import Any

from registry.gate.outcome import WireDecision

TIMEOUT_S = 30.0


def _json_or_empty(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return {}


def _one_line(reason: object) -> str:
    return " ".join(str(reason).split())


def check_remote(
    server: str,
    token: str | None,
    plan: str,
    manifests: dict[str, Any] | None = None,
    *,
    policy_release: str | None = None,
    timeout_s: float = TIMEOUT_S,
) -> WireDecision:
    """POST /v1/gate/checks; the decision, or the server's error as a CapgateError."""
    from cli.http_errors import error_for
    from registry.errors import Unavailable

    base = server.rstrip("/")
    body: dict[str, Any] = {"plan": plan}
    if manifests is not None:
        body["manifests"] = manifests
    if policy_release is not None:
        body["policy_release"] = policy_release
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if token:
        # The server records the token's subject as the principal; without a token only a
        # server started with --insecure-local answers.
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        f"{base}/v1/gate/checks", data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        try:
            answer = _json_or_empty(exc.read())
        except (OSError, http.client.HTTPException):
            answer = {}  # an error body cut short: the status still says what happened
        if not isinstance(answer, dict) or not answer:
            answer = {}
        raise error_for(exc.code, answer, reason=str(exc.reason), server=base) from None
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
        # URLError wraps refused connections and DNS failures; a bare OSError is a timeout
        # or reset mid-answer; ValueError an unusable URL; HTTPException an answer that is
        # not HTTP (BadStatusLine) or is cut short (IncompleteRead). None of them is a
        # decision.
        reason = getattr(exc, "reason", exc)
        if isinstance(exc, http.client.HTTPException) and not isinstance(exc, OSError):
            reason = repr(exc)  # BadStatusLine('SSH-2.0-...'), IncompleteRead(7 bytes read, ...)
        raise Unavailable(f"cannot reach capgate server {base}: {_one_line(reason)}") from None
    answer = _json_or_empty(raw)
    try:
        return WireDecision.from_json(answer)
    except (KeyError, ValueError, TypeError, AttributeError):
        raise Unavailable(
            f"capgate server {base} answered the gate check with something that is not a decision"
        ) from None
