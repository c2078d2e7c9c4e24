"""The OPA server engine: a real OPA that pulled capgate's signed bundle, queried over REST.

capgate never writes policies or data into OPA. An OPA sidecar pulls the bundle from
``GET /v1/bundles/capgate.tar.gz`` (registry.policy.opa_bundle), verifies its signature
against capgate's bundle key and activates it; OPA then refuses every REST write under
the bundle's roots (``capgate``, ``system/log``): ``PUT``/``DELETE /v1/policies`` of a
module there and ``PUT``/``PATCH /v1/data`` below them answer 400 "owned by bundle".

Each decision is ``POST /v1/data/capgate/gate/decision?provenance=true`` and is taken
only when OPA's provenance names exactly one activated bundle whose revision is the
content digest of the bundle this engine expects (:attr:`revision`, the embedded
engine's too). A genuine OPA can only report that revision by activating a bundle
whose manifest capgate signed, and capgate signs that revision only over those files.
So the decision was reached on exactly the expected files; anything else (no
provenance, no bundle yet, another revision, more than one bundle, an undefined or
malformed result, an HTTP or evaluation error) is a :class:`PolicyError`, never an
allow.

What provenance cannot prove is that the endpoint *is* an OPA: the digest is public,
so an impostor that knows it can echo it. With ``ca_file`` (CAPGATE_OPA_CA_FILE) the
engine talks https only and the OPA must hold a certificate issued by that CA; that
authenticates the endpoint.

Built-in errors are fatal (``strict-builtin-errors``), as in the embedded engine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests
from opa_client.opa import OpaClient

from registry.policy.bundle import PolicyBundle, load_bundle
from registry.policy.engine import (
    DECISION_PATH,
    PolicyDecision,
    PolicyError,
    decision_from_result,
    validate_input,
)

DEFAULT_TIMEOUT_S = 5.0
QUERY_PARAMS = {"provenance": "true", "strict-builtin-errors": "true"}


@dataclass(frozen=True)
class OpaAnswer:
    """A verified decision and what OPA said about it."""

    decision: PolicyDecision
    revision: str
    # OPA's id of the decision (present when its decision logs are on): the key of the
    # event it reports to POST /v1/decision-logs.
    decision_id: str | None


def _error_body(response: requests.Response) -> str:
    """OPA's error message and details, else the body's start."""
    body = response.text.strip()
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if isinstance(payload, dict) and ("message" in payload or "errors" in payload):
        errors = payload.get("errors") or []
        details = [str(error.get("message")) for error in errors if isinstance(error, dict)]
        body = "; ".join([str(payload.get("message", "")), *details]).strip("; ")
    return f"HTTP {response.status_code}: {body[:1000]}"


def _transport_error(exc: requests.RequestException) -> str:
    kind = "ConnectionError" if isinstance(exc, requests.ConnectionError) else type(exc).__name__
    return f"{kind}: {exc}"


class OpaServerEngine:
    """A real OPA server, holding capgate's bundle, as the decision point."""

    name = "opa"

    def __init__(
        self,
        url: str,
        bundle: PolicyBundle | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        ca_file: str | None = None,
        client_cert: str | None = None,
        client_key: str | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise PolicyError(f"opa engine: {url!r} is not an http(s) URL of an OPA server")
        if parts.path not in ("", "/"):
            raise PolicyError(f"opa engine: {url!r} has a path; give the server's base URL")
        if ca_file:
            if parts.scheme != "https":
                raise PolicyError(
                    f"opa engine: {url!r} is not https, but CAPGATE_OPA_CA_FILE asks that the "
                    "OPA server prove who it is with a certificate"
                )
            if not Path(ca_file).is_file():
                raise PolicyError(f"opa engine: cannot read the CA file {ca_file}")
        if (client_cert is None) != (client_key is None):
            raise PolicyError(
                "opa engine: a client certificate needs its key and a key its certificate "
                "(CAPGATE_OPA_CLIENT_CERT and CAPGATE_OPA_CLIENT_KEY together)"
            )
        if client_cert is not None and client_key is not None:
            if parts.scheme != "https":
                raise PolicyError(
                    f"opa engine: {url!r} is not https, but a client certificate is set "
                    "(mutual TLS)"
                )
            for what, path in (("client certificate", client_cert), ("client key", client_key)):
                if not Path(path).is_file():
                    raise PolicyError(f"opa engine: cannot read the {what} {path}")
        self.url = url.rstrip("/")
        self._bundle = bundle or load_bundle()
        https = parts.scheme == "https"
        # One retry: a connection that fails is tried once more; an evaluation error is
        # deterministic, repeating it more only delays the error.
        self._client = OpaClient(
            host=parts.hostname,
            port=parts.port or (443 if https else 80),
            ssl=https,
            timeout=timeout,
            retries=1,
        )
        session = self._client._session  # the client's requests session: TLS and proxies
        session.trust_env = False  # no proxy or CA from the environment between us and OPA
        session.max_redirects = 0
        if ca_file:
            # opa-python-client verifies against the system's CAs; the OPA's own CA is
            # set on its requests session, the documented requests knob.
            session.verify = ca_file
        if client_cert is not None and client_key is not None:
            # Mutual TLS: an OPA run with --authentication=tls answers only a client whose
            # certificate chains to its --tls-ca-cert-file.
            session.cert = (client_cert, client_key)

    @property
    def revision(self) -> str:
        """The content digest of the bundle every decision must come from."""
        return self._bundle.revision

    def close(self) -> None:
        self._client.close_connection()

    # ---- decisions ------------------------------------------------------------------

    def _where(self) -> str:
        return f"opa engine at {self.url}"

    def _query(self, input: dict[str, Any]) -> dict[str, Any]:
        try:
            json.dumps(input, allow_nan=False)  # NaN is not JSON: refuse it here, by name
        except (TypeError, ValueError) as exc:
            raise PolicyError(f"{self._where()}: the input is not JSON: {exc}") from exc
        try:
            body = self._client.query_rule(
                input, package_path=DECISION_PATH, query_params=QUERY_PARAMS
            )
        except requests.HTTPError as exc:  # OPA answered, with an error
            assert exc.response is not None
            raise PolicyError(
                f"{self._where()}: could not evaluate data/{DECISION_PATH}: "
                f"{_error_body(exc.response)}"
            ) from exc
        except requests.RequestException as exc:  # unreachable, refused, timed out, TLS
            raise PolicyError(
                f"{self._where()}: could not evaluate data/{DECISION_PATH}: {_transport_error(exc)}"
            ) from exc
        except ValueError:  # a body that is not JSON
            body = None
        if not isinstance(body, dict):
            raise PolicyError(f"{self._where()}: answered with something other than a JSON object")
        return body

    def _verified_revision(self, body: dict[str, Any]) -> str:
        """The revision OPA decided under, when it is exactly the expected one."""
        provenance = body.get("provenance")
        if not isinstance(provenance, dict):
            raise PolicyError(
                f"{self._where()}: the answer carries no provenance, so nothing shows which "
                "bundle decided it (not an OPA server?); refusing it"
            )
        bundles = provenance.get("bundles")
        if not isinstance(bundles, dict) or not bundles:
            raise PolicyError(
                f"{self._where()}: holds no activated bundle (still downloading capgate's, or "
                "it refused it: see its /health?bundles and logs); expected revision "
                f"{self.revision}"
            )
        revisions = {
            str(name): info.get("revision") if isinstance(info, dict) else None
            for name, info in bundles.items()
        }
        if len(revisions) != 1:
            raise PolicyError(
                f"{self._where()}: decided with {len(revisions)} bundles "
                f"({json.dumps(revisions, sort_keys=True)}); expected capgate's alone at "
                f"{self.revision}"
            )
        ((name, revision),) = revisions.items()
        if revision != self.revision:
            raise PolicyError(
                f"{self._where()}: decided under bundle {name} revision {revision}, "
                f"expected {self.revision}"
            )
        return str(revision)

    def evaluate(self, input: dict[str, Any]) -> OpaAnswer:
        """The decision, once the answer is shown to come from the expected bundle."""
        validate_input(input)
        body = self._query(input)
        revision = self._verified_revision(body)
        if "result" not in body:
            raise PolicyError(
                f"{self._where()}: data/{DECISION_PATH} is undefined "
                "(a policy or the gate is missing, or the input lacks a top-level document)"
            )
        decision = decision_from_result(body["result"], engine=self.name)
        decision_id = body.get("decision_id")
        return OpaAnswer(
            decision=decision,
            revision=revision,
            decision_id=decision_id if isinstance(decision_id, str) else None,
        )

    def decide(self, input: dict[str, Any]) -> PolicyDecision:
        return self.evaluate(input).decision
