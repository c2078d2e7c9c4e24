"""One policy truth with OPA: real OPA sidecars pull capgate's signed bundle and report
their decisions back; the OPA engine takes a decision only from that exact bundle.

capgate runs on loopback (uvicorn in a thread) on a migrated SQLite registry; each OPA
is the real binary configured with ``services`` (capgate, with an API token),
``bundles`` (polling every 1-2 s, signature verified with the bundle key) and
``decision_logs`` (reporting to capgate every second), as docs/opa.md shows.
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from fastapi import FastAPI
from fastapi.testclient import TestClient

from registry.api.app import create_app
from registry.policy.bundle import PolicyBundle, load_bundle
from registry.policy.embedded import EmbeddedEngine
from registry.policy.engine import PolicyError, decision_from_result
from registry.policy.opa_bundle import (
    BundleSigningKey,
    build_opa_bundle,
    read_tarball,
)
from registry.policy.opa_server import OpaServerEngine
from registry.settings import Settings
from registry.storage import migrate
from registry.storage.database import Database
from tests.api.test_gate_api import register
from tests.policy.conftest import CASES, load_case
from tests.support.auth import bearer, client_for, token_for
from tests.support.opa_server import (
    BundleServer,
    Sidecar,
    health_status,
    running_capgate,
    running_opa,
    running_opa_sidecar,
    sidecar_config,
    signing_key_for_tests,
    wait_for_bundle,
)

pytestmark = pytest.mark.opa

PLAN = "chat-assistant-prod"
DENIED = "drain_configured__short_grace_period.json"
SIDECAR = "opa-sidecar"

# Hardening beyond bundle ownership: OPA's own API refuses every write (--authorization).
AUTHZ = """package system.authz

default allow := false

allow if input.method == "GET"

allow if {
	input.method == "POST"
	input.path[0] == "v1"
	input.path[1] == "data"
}
"""


def settings(
    key_file: Path, engine: str = "embedded", opa_url: str | None = None, ca: Path | None = None
) -> Settings:
    return Settings(
        database_url="unused",
        server=None,
        principal="unused",
        policy_engine=engine,
        opa_url=opa_url,
        bundle_signing_key=str(key_file),
        opa_ca_file=str(ca) if ca else None,
    )


@dataclass
class Stack:
    database: Database
    app: FastAPI
    key_file: Path
    key: BundleSigningKey
    config: dict[str, Any]
    sidecar: Sidecar

    def auditor(self) -> TestClient:
        token = token_for(self.database, subject="auditor-ann", roles=["auditor"])
        return TestClient(self.app, headers=bearer(token))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, opa_binary: Path) -> Iterator[Stack]:
    directory = tmp_path_factory.mktemp("opa-stack")
    url = f"sqlite:///{directory / 'registry.db'}"
    migrate.upgrade(url)
    database = Database(url)
    key = signing_key_for_tests()
    key_file = directory / "bundle-key.pem"
    key_file.write_bytes(key.private_pem())
    app = create_app(database, settings(key_file))
    # OPA's credential for capgate: an API token with the pipeline role.
    token = token_for(database, subject=SIDECAR, roles=["pipeline"])
    with client_for(app, "release-pipeline") as client:
        register(client)
    with running_capgate(app) as capgate_url:
        config = sidecar_config(f"{capgate_url}/v1", token, key)
        with running_opa_sidecar(opa_binary, config) as sidecar:
            yield Stack(database, app, key_file, key, config, sidecar)
    database.engine.dispose()


@pytest.fixture(scope="module")
def embedded() -> EmbeddedEngine:
    return EmbeddedEngine()


def _opa_request(
    url: str, method: str, path: str, body: bytes | None = None
) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(f"{url}{path}", data=body, method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            text = response.read()
            return response.status, json.loads(text) if text.strip() else {}
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _wait_for(condition: Any, what: str, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


# ---- (a) the same decisions as the embedded engine ------------------------------------


def test_parity_corpus_through_a_pulled_bundle(stack: Stack, embedded: EmbeddedEngine) -> None:
    engine = OpaServerEngine(stack.sidecar.url)
    try:
        for name in CASES:
            doc = load_case(name)
            answer = engine.evaluate(doc)
            assert answer.decision == embedded.decide(doc), name
            assert answer.revision == embedded.revision == load_bundle().revision
            assert answer.decision_id
    finally:
        engine.close()


def test_parity_gate_decision_on_the_worked_example(stack: Stack) -> None:
    opa_app = create_app(stack.database, settings(stack.key_file, "opa", stack.sidecar.url))
    decisions = {}
    for engine, app in (("embedded", stack.app), ("opa", opa_app)):
        with client_for(app, "release-pipeline") as client:
            response = client.post("/v1/gate/checks", json={"plan": PLAN})
            assert response.status_code == 200, response.text
            decisions[engine] = response.json()
    embedded, opa = decisions["embedded"], decisions["opa"]
    assert (embedded["engine"], opa["engine"]) == ("embedded", "opa")
    assert opa["outcome"] == embedded["outcome"] == "allow"
    for field in ("violations", "warnings", "bundle_revision", "input_digest"):
        assert opa[field] == embedded[field], field


# ---- (e) decision logs arrive and are stored ------------------------------------------


def test_success_decision_logs_arrive_and_are_stored(stack: Stack) -> None:
    engine = OpaServerEngine(stack.sidecar.url)
    doc = load_case(DENIED)
    answer = engine.evaluate(doc)
    engine.close()
    assert answer.decision.allow is False and answer.decision_id
    revision = load_bundle().revision
    with stack.auditor() as auditor:

        def logged() -> dict[str, Any] | None:
            page = auditor.get("/v1/decision-logs", params={"revision": revision, "limit": 500})
            by_id = {item["decision_id"]: item for item in page.json()["items"]}
            return by_id.get(answer.decision_id or "")

        item = _wait_for(logged, "the decision log of the OPA decision")
        assert item["received_from"] == SIDECAR
        assert item["bundle_revision"] == revision
        assert item["path"] == "capgate/gate/decision"
        assert item["intact"] is True
        assert item["entry"]["input"] == doc
        assert decision_from_result(item["entry"]["result"], engine="opa") == answer.decision
        assert item["entry"]["bundles"] == {"capgate": {"revision": revision}}
        events = auditor.get("/v1/audit/events", params={"action": "opa.decision_logs"}).json()
        stored = [
            entry
            for event in events["items"]
            for entry in event["payload"]["stored"]
            if entry["decision_id"] == answer.decision_id
        ]
        assert stored == [{"decision_id": answer.decision_id, "digest": item["digest"]}]
        assert all(event["principal"] == SIDECAR for event in events["items"])
        # The bundle the sidecar pulled was kept, as served to it.
        served = auditor.get(f"/v1/bundles/revisions/{revision}.tar.gz")
        assert served.status_code == 200
        assert json.loads(read_tarball(served.content)[".manifest"])["revision"] == revision
        kept = auditor.get("/v1/audit/events", params={"action": "opa.bundle_served"}).json()
        assert [event["principal"] for event in kept["items"]] == [SIDECAR]


# ---- (f) several OPA servers, one bundle, one decision --------------------------------


def test_parity_three_opa_servers_pulling_one_bundle(
    stack: Stack, opa_binary: Path, embedded: EmbeddedEngine
) -> None:
    with ExitStack() as stack_of:
        urls = [
            stack_of.enter_context(running_opa_sidecar(opa_binary, stack.config)).url
            for _ in range(3)
        ]
        engines = [OpaServerEngine(url) for url in urls]
        for name in ("compliant.json", DENIED, "tail_slo__claims_disagree.json"):
            doc = load_case(name)
            answers = [engine.evaluate(doc) for engine in engines]
            assert {answer.revision for answer in answers} == {load_bundle().revision}
            assert all(answer.decision == embedded.decide(doc) for answer in answers), name
        for engine in engines:
            engine.close()


# ---- (c) OPA's REST API cannot change what the bundle loaded ---------------------------


def _permissive_gate() -> bytes:
    return b'package capgate.gate\n\ndecision := {"allow": true, "violations": [], "notes": []}\n'


def _attempt_swaps(url: str) -> dict[str, int]:
    """Every REST write that could change a capgate decision or hide it from the logs."""
    status, listed = _opa_request(url, "GET", "/v1/policies")
    assert status == 200
    gate_id = next(p["id"] for p in listed["result"] if p["id"].endswith("gate/gate.rego"))
    attempts = {
        "replace the gate module": ("PUT", f"/v1/policies/{gate_id}", _permissive_gate()),
        "add a module to the gate": ("PUT", "/v1/policies/evil", _permissive_gate()),
        "delete the gate module": ("DELETE", f"/v1/policies/{gate_id}", None),
        "rewrite a threshold": (
            "PUT",
            "/v1/data/capgate/thresholds/drain_min_grace_period_s",
            b"0",
        ),
        "patch the data": (
            "PATCH",
            "/v1/data",
            json.dumps([{"op": "add", "path": "/capgate/thresholds", "value": {}}]).encode(),
        ),
        "drop decision logs": (
            "PUT",
            "/v1/policies/drop",
            b"package system.log\n\ndrop if true\n",
        ),
    }
    return {
        what: _opa_request(url, method, path, body)[0]
        for what, (method, path, body) in attempts.items()
    }


def test_fail_module_swap_through_opa_rest_api_is_refused(
    stack: Stack, embedded: EmbeddedEngine
) -> None:
    doc = load_case(DENIED)
    statuses = _attempt_swaps(stack.sidecar.url)
    # Bundle-owned roots (capgate, system/log): OPA refuses each write, 400.
    assert statuses == dict.fromkeys(statuses, 400), statuses
    _, body = _opa_request(stack.sidecar.url, "PUT", "/v1/policies/evil", _permissive_gate())
    assert "owned by bundle" in body["message"]
    engine = OpaServerEngine(stack.sidecar.url)
    assert engine.decide(doc) == embedded.decide(doc)
    assert engine.decide(doc).allow is False
    engine.close()


def test_fail_module_swap_with_opa_authorization_is_refused_401(
    stack: Stack, opa_binary: Path, tmp_path: Path, embedded: EmbeddedEngine
) -> None:
    authz = tmp_path / "authz.rego"
    authz.write_text(AUTHZ)
    args = ["--authorization=basic", str(authz)]
    with running_opa_sidecar(opa_binary, stack.config, args=args) as sidecar:
        statuses = _attempt_swaps(sidecar.url)
        assert statuses == dict.fromkeys(statuses, 401), statuses
        # The authorization policy cannot be replaced either.
        replaced = _opa_request(
            sidecar.url,
            "PUT",
            "/v1/policies/authz",
            b"package system.authz\n\nallow := true\n",
        )
        assert replaced[0] == 401
        engine = OpaServerEngine(sidecar.url)
        assert engine.decide(load_case(DENIED)) == embedded.decide(load_case(DENIED))
        engine.close()


def test_fail_module_loaded_beside_the_bundle_is_erased(
    stack: Stack, opa_binary: Path, tmp_path: Path, embedded: EmbeddedEngine
) -> None:
    """A module under capgate's root given to OPA at start (not through the bundle) is
    erased when the bundle activates: the bundle alone defines data.capgate."""
    evil = tmp_path / "evil.rego"
    evil.write_text(_permissive_gate().decode())
    with running_opa_sidecar(opa_binary, stack.config, args=[str(evil)]) as sidecar:
        _, listed = _opa_request(sidecar.url, "GET", "/v1/policies")
        assert not [p for p in listed["result"] if "evil" in p["id"]]
        engine = OpaServerEngine(sidecar.url)
        assert engine.decide(load_case(DENIED)) == embedded.decide(load_case(DENIED))
        engine.close()


# ---- (d) a tampered bundle is never activated ------------------------------------------


def _tampered(bundle: PolicyBundle, key: BundleSigningKey) -> bytes:
    """The bundle's signed tarball with the gate replaced after signing."""
    import gzip
    import io
    import tarfile

    files = read_tarball(build_opa_bundle(bundle, key).tarball)
    files["gate/gate.rego"] = _permissive_gate()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as archive:
        for name, content in sorted(files.items()):
            info = tarfile.TarInfo("/" + name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return gzip.compress(raw.getvalue())


def test_fail_tampered_bundle_is_never_activated(
    opa_binary: Path, embedded: EmbeddedEngine
) -> None:
    bundle, key = load_bundle(), signing_key_for_tests()
    doc = load_case(DENIED)
    refusals = [
        (_tampered(bundle, key), "digest mismatch"),
        (build_opa_bundle(bundle, BundleSigningKey.generate()).tarball, "verify"),
        (build_opa_bundle(bundle, None).tarball, "missing .signatures.json"),
    ]
    with BundleServer() as server:
        server.serve(refusals[0][0])
        config = sidecar_config(server.url, None, key, decision_logs=False)
        with running_opa_sidecar(opa_binary, config, wait_for_activation=False) as sidecar:
            engine = OpaServerEngine(sidecar.url)
            for tarball, reason in refusals:
                server.serve(tarball)
                _wait_for(lambda reason=reason: reason in sidecar.log(), f"OPA refusing: {reason}")
                assert health_status(sidecar.url, "/health?bundles") != 200
                with pytest.raises(PolicyError, match="holds no activated bundle"):
                    engine.decide(doc)
            # The genuine bundle activates; a tampered one served later is refused and
            # the genuine one stays: decisions go on from the expected revision.
            server.serve(build_opa_bundle(bundle, key).tarball)
            wait_for_bundle(sidecar.url)
            assert engine.decide(doc) == embedded.decide(doc)
            refused = sidecar.log().count("digest mismatch")
            server.serve(_tampered(bundle, key))
            _wait_for(lambda: sidecar.log().count("digest mismatch") > refused, "a refusal")
            answer = engine.evaluate(doc)
            assert answer.revision == bundle.revision
            assert answer.decision == embedded.decide(doc)
            engine.close()


# ---- (b) an impostor is never believed -------------------------------------------------


class FakeOpa:
    """Answers every query with allow and accepts every write (the old push), echoing
    the last revision it saw written, or `revision`, or no provenance at all."""

    def __init__(self, revision: str | None, *, provenance: bool = True) -> None:
        self.seen_revision: str | None = None
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self, payload: dict[str, Any]) -> None:
                body = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _write(self) -> None:
                text = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                found = [word for word in text.replace('"', " ").split() if "sha256:" in word]
                fake.seen_revision = found[-1] if found else fake.seen_revision
                self._answer({})

            do_PUT = do_PATCH = _write

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                echoed = fake.seen_revision or revision
                payload: dict[str, Any] = {
                    "decision_id": "00000000-0000-4000-8000-000000000000",
                    "result": {"allow": True, "violations": [], "notes": []},
                }
                if provenance:
                    payload["provenance"] = {
                        "version": "1.22.3",
                        "bundles": {"capgate": {"revision": echoed}} if echoed else {},
                    }
                self._answer(payload)

            def do_GET(self) -> None:
                self._answer({"result": {"revision": fake.seen_revision or revision}})

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def use_tls(self, cert: Path, key: Path) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self.url = self.url.replace("http:", "https:")

    def __enter__(self) -> FakeOpa:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.mark.parametrize(
    ("revision", "provenance", "reason"),
    [
        (None, False, "carries no provenance"),
        (None, True, "holds no activated bundle"),
        ("sha256:" + "0" * 64, True, "decided under bundle capgate revision sha256:0000"),
    ],
)
def test_fail_fake_opa_is_an_error_never_allow(
    stack: Stack, revision: str | None, provenance: bool, reason: str
) -> None:
    with FakeOpa(revision, provenance=provenance) as fake:
        with pytest.raises(PolicyError, match=reason):
            OpaServerEngine(fake.url).decide(load_case("compliant.json"))
        app = create_app(stack.database, settings(stack.key_file, "opa", fake.url))
        with client_for(app, "release-pipeline") as client:
            decision = client.post("/v1/gate/checks", json={"plan": PLAN}).json()
        assert decision["outcome"] == "error"
        assert decision["violations"] == []
        assert reason.split(" sha256")[0] in decision["error"]


def _certificate(
    directory: Path, name: str, issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey, Path, Path]:
    """A certificate for 127.0.0.1 (a CA when `issuer` is None), and its PEM files."""
    import ipaddress

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer[0].subject if issuer else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    )
    certificate = builder.sign(issuer[1] if issuer else key, hashes.SHA256())
    cert_file, key_file = directory / f"{name}.crt", directory / f"{name}.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return certificate, key, cert_file, key_file


def test_fail_impostor_knowing_the_digest_fails_the_pinned_ca(
    opa_binary: Path, tmp_path: Path, embedded: EmbeddedEngine
) -> None:
    """The digest is public, so an impostor can echo it: with CAPGATE_OPA_CA_FILE the
    OPA must prove it holds a certificate from capgate's CA, which an impostor cannot."""
    ca_cert, ca_key, ca_file, _ = _certificate(tmp_path, "opa-ca", None)
    _, _, opa_cert, opa_key = _certificate(tmp_path, "opa", (ca_cert, ca_key))
    _, _, fake_cert, fake_key = _certificate(tmp_path, "impostor", None)
    doc = load_case(DENIED)
    with running_opa(opa_binary, tls=(opa_cert, opa_key)) as url:
        engine = OpaServerEngine(url, ca_file=str(ca_file))
        assert engine.decide(doc) == embedded.decide(doc)
        engine.close()
    with FakeOpa(load_bundle().revision) as fake:
        # Over plain http the pinned engine does not even ask.
        with pytest.raises(PolicyError, match="is not https"):
            OpaServerEngine(fake.url, ca_file=str(ca_file))
        fake.use_tls(fake_cert, fake_key)
        engine = OpaServerEngine(fake.url, ca_file=str(ca_file))
        with pytest.raises(PolicyError, match="CERTIFICATE_VERIFY_FAILED"):
            engine.decide(doc)
        engine.close()


def test_success_mutual_tls_to_a_real_opa_and_a_stranger_is_refused(
    opa_binary: Path, tmp_path: Path, embedded: EmbeddedEngine
) -> None:
    """CAPGATE_OPA_CLIENT_CERT/KEY: capgate proves itself to an OPA run with
    --authentication=tls, and the OPA proves itself to capgate (the pinned CA); a client
    without a certificate, or with one from another CA, gets no decision: an error."""
    ca_cert, ca_key, ca_file, _ = _certificate(tmp_path, "opa-ca", None)
    _, _, opa_cert, opa_key = _certificate(tmp_path, "opa", (ca_cert, ca_key))
    client_ca, client_ca_key, client_ca_file, _ = _certificate(tmp_path, "client-ca", None)
    _, _, client_cert, client_key = _certificate(tmp_path, "capgate", (client_ca, client_ca_key))
    _, _, stranger_cert, stranger_key = _certificate(tmp_path, "stranger", None)
    doc = load_case(DENIED)
    with running_opa(
        opa_binary,
        tls=(opa_cert, opa_key),
        client_ca=client_ca_file,
        client=(client_cert, client_key),
    ) as url:
        engine = OpaServerEngine(
            url, ca_file=str(ca_file), client_cert=str(client_cert), client_key=str(client_key)
        )
        assert engine.decide(doc) == embedded.decide(doc)
        engine.close()
        for cert, key in ((None, None), (str(stranger_cert), str(stranger_key))):
            stranger = OpaServerEngine(url, ca_file=str(ca_file), client_cert=cert, client_key=key)
            with pytest.raises(PolicyError, match="SSLError"):
                stranger.decide(doc)
            stranger.close()
    with pytest.raises(PolicyError, match="CAPGATE_OPA_CLIENT_CERT and CAPGATE_OPA_CLIENT_KEY"):
        OpaServerEngine(url, ca_file=str(ca_file), client_cert=str(client_cert))
    with pytest.raises(PolicyError, match="is not https, but a client certificate is set"):
        OpaServerEngine(
            "http://127.0.0.1:1", client_cert=str(client_cert), client_key=str(client_key)
        )


# ---- docs/opa.md is what runs here ------------------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "opa.md"


def _docs_block(after: str, language: str) -> str:
    text = DOCS.read_text()
    start = text.index(f"```{language}\n", text.index(after)) + len(language) + 4
    return text[start : text.index("```", start)]


def test_success_docs_config_runs_with_the_real_opa(
    stack: Stack, opa_binary: Path, tmp_path: Path, embedded: EmbeddedEngine
) -> None:
    import yaml

    capgate_url = stack.config["services"]["capgate"]["url"].removesuffix("/v1")
    token = stack.config["services"]["capgate"]["credentials"]["bearer"]["token"]
    text = _docs_block("`opa.yaml` (OPA 1.x):", "yaml")
    config = yaml.safe_load(
        text.replace("${CAPGATE_URL}", capgate_url).replace("${OPA_CAPGATE_TOKEN}", token)
    )
    assert config["keys"]["capgate"]["algorithm"] == stack.key.algorithm
    config["keys"]["capgate"]["key"] = stack.key.public_pem()
    # The same configuration, polling faster.
    config["bundles"]["capgate"]["polling"] = {"min_delay_seconds": 1, "max_delay_seconds": 2}
    config["decision_logs"]["reporting"] = {"min_delay_seconds": 1, "max_delay_seconds": 1}
    authz = tmp_path / "authz.rego"
    authz.write_text(_docs_block("`authz.rego`, for", "rego"))
    assert authz.read_text() == AUTHZ
    args = ["--authorization=basic", str(authz)]
    with running_opa_sidecar(opa_binary, config, args=args) as sidecar:
        engine = OpaServerEngine(sidecar.url)
        answer = engine.evaluate(load_case(DENIED))
        engine.close()
        assert answer.decision == embedded.decide(load_case(DENIED))
        with stack.auditor() as auditor:

            def logged() -> bool:
                page = auditor.get("/v1/decision-logs", params={"limit": 500}).json()
                return answer.decision_id in {item["decision_id"] for item in page["items"]}

            _wait_for(logged, "the decision log")
