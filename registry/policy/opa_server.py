"""The OPA server engine: the bundle pushed to a real OPA and queried over REST.

The registry pushes the bundle's modules (policy ids ``capgate/<path>``) and data, and
stores the bundle revision at ``data.capgate.bundle.revision``. Before each decision it
reads that revision back; when it differs (another revision, or an OPA restarted
empty) it pushes again and re-checks, and fails if the server still disagrees.

Traps of opa-python-client 3.0.0 handled here: policies are pushed with
``rego_compat=False`` (otherwise a rejected policy is silently rewritten and retried);
an undefined decision comes back as ``{}`` (treated as an error); ``HTTPError`` drops
OPA's error body (read back from the response). Built-in errors are fatal
(``strict-builtin-errors``), as in the embedded engine.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import requests
from opa_client import OpaClient
from opa_client.errors import PolicyNotFoundError

from registry.policy.bundle import PolicyBundle, load_bundle
from registry.policy.engine import (
    DECISION_PATH,
    PolicyDecision,
    PolicyError,
    decision_from_result,
    validate_input,
)

POLICY_PREFIX = "capgate/"
REVISION_PATH = "capgate/bundle"
DEFAULT_TIMEOUT_S = 5.0


_PACKAGE = re.compile(r"^package\s+([\w.]+)", re.MULTILINE)
_IMPORT = re.compile(r"^import\s+data\.([\w.]+)", re.MULTILINE)


def push_order(modules: dict[str, str]) -> list[str]:
    """Module paths with every module after the modules it imports.

    OPA compiles a pushed module against those already on the server, so a module
    whose import is not there yet is rejected.
    """
    packages: dict[str, str] = {}
    for path, source in modules.items():
        match = _PACKAGE.search(source)
        packages[path] = match.group(1) if match else ""
    ordered: list[str] = []
    placed: set[str] = set()

    def place(path: str, visiting: frozenset[str]) -> None:
        if path in placed or path in visiting:
            return
        for imported in _IMPORT.findall(modules[path]):
            for other, package in sorted(packages.items()):
                if (
                    other != path
                    and package
                    and (imported == package or imported.startswith(package + "."))
                ):
                    place(other, visiting | {path})
        placed.add(path)
        ordered.append(path)

    for path in sorted(modules):
        place(path, frozenset())
    return ordered


def _describe(exc: BaseException) -> str:
    """What went wrong, with OPA's own error body when there is one."""
    response = getattr(exc, "response", None)
    if isinstance(response, requests.Response):
        body = response.text.strip()
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if isinstance(payload, dict):
            errors = payload.get("errors") or []
            details = [str(error.get("message")) for error in errors if isinstance(error, dict)]
            body = "; ".join([str(payload.get("message", "")), *details]).strip("; ")
        return f"HTTP {response.status_code}: {body[:1000]}"
    message = getattr(exc, "message", None)
    errors = getattr(exc, "errors", None)
    if message is not None:
        details = [str(error.get("message")) for error in errors or [] if isinstance(error, dict)]
        return "; ".join([str(message), *details])
    return f"{type(exc).__name__}: {exc}"


class OpaServerEngine:
    """A real OPA server as the decision point."""

    name = "opa"

    def __init__(
        self,
        url: str,
        bundle: PolicyBundle | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise PolicyError(f"opa engine: {url!r} is not an http(s) URL of an OPA server")
        if parts.path not in ("", "/"):
            raise PolicyError(f"opa engine: {url!r} has a path; give the server's base URL")
        self.url = url.rstrip("/")
        self._bundle = bundle or load_bundle()
        ssl = parts.scheme == "https"
        self._client = OpaClient(
            host=parts.hostname,
            port=parts.port or (443 if ssl else 80),
            ssl=ssl,
            timeout=timeout,
            # Connection errors are retried once; an evaluation error (HTTP 500) is
            # deterministic, retrying it only delays the error.
            retries=1,
        )

    @property
    def revision(self) -> str:
        return self._bundle.revision

    def close(self) -> None:
        self._client.close_connection()

    # ---- bundle on the server -------------------------------------------------------

    def server_revision(self) -> str | None:
        """The bundle revision the server holds, or None when it holds none."""
        try:
            body = self._client.get_data(f"{REVISION_PATH}/revision")
        except PolicyNotFoundError:  # opa_client's name for "undefined"
            return None
        except Exception as exc:
            raise PolicyError(
                f"opa engine at {self.url}: could not read the bundle revision: {_describe(exc)}"
            ) from exc
        revision = body.get("result")
        return revision if isinstance(revision, str) else None

    def push(self) -> None:
        """Push every module and the data, then the revision (last: it marks completion)."""
        bundle = self._bundle
        action = f"push policy bundle {bundle.revision}"
        try:
            wanted = {POLICY_PREFIX + path for path in bundle.modules}
            for path in push_order(bundle.modules):
                source = bundle.modules[path]
                self._client.update_policy_from_string(
                    source, POLICY_PREFIX + path, rego_compat=False
                )
            for policy_id in self._client.get_policies_list():
                if policy_id.startswith(POLICY_PREFIX) and policy_id not in wanted:
                    self._client.delete_policy(policy_id)
            data = dict(bundle.data)
            capgate = data.pop("capgate", {})
            for key, value in data.items():
                self._client.update_or_create_data(value, key)
            for key, value in capgate.items():
                if key != "bundle":
                    self._client.update_or_create_data(value, f"capgate/{key}")
            self._client.update_or_create_data({"revision": bundle.revision}, REVISION_PATH)
        except PolicyError:
            raise
        except Exception as exc:  # requests errors, opa_client errors (RegoParseError, ...)
            raise PolicyError(
                f"opa engine at {self.url}: could not {action}: {_describe(exc)}"
            ) from exc

    def ensure_revision(self) -> None:
        """The server holds this bundle's revision: push when it does not, then check again."""
        if self.server_revision() == self.revision:
            return
        self.push()
        found = self.server_revision()
        if found != self.revision:
            raise PolicyError(
                f"opa engine at {self.url}: holds bundle revision {found}, "
                f"expected {self.revision} even after pushing it"
            )

    # ---- decisions ------------------------------------------------------------------

    def decide(self, input: dict[str, Any]) -> PolicyDecision:
        validate_input(input)
        self.ensure_revision()
        package, rule = DECISION_PATH.rsplit("/", 1)
        try:
            body = self._client.query_rule(
                input,
                package.replace("/", "."),
                rule,
                query_params={"strict-builtin-errors": "true"},
            )
        except Exception as exc:  # requests errors: unreachable, timeout, HTTP 4xx/5xx
            raise PolicyError(
                f"opa engine at {self.url}: could not evaluate data/{DECISION_PATH}: "
                f"{_describe(exc)}"
            ) from exc
        if not isinstance(body, dict) or "result" not in body:
            raise PolicyError(
                f"opa engine at {self.url}: data/{DECISION_PATH} is undefined "
                "(a policy or the gate is missing, or the input lacks a top-level document)"
            )
        return decision_from_result(body["result"], engine=self.name)
