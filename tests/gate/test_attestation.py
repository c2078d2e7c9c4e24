"""Signed decisions: in-toto statements in DSSE envelopes, kept beside each decision."""

from __future__ import annotations

import base64
import hashlib
import json
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient

from registry import keys
from registry.api.app import create_app
from registry.attestation.dsse import (
    IN_TOTO_PAYLOAD_TYPE,
    AttestationRejected,
    EnvelopeUnreadable,
    pae,
    parse_envelope,
    sign_envelope,
    verify_envelope,
)
from registry.attestation.statement import PREDICATE_TYPE, STATEMENT_TYPE, statement_bytes
from registry.attestation.store import (
    attest_decision,
    attest_stored_decision,
    envelope_of,
    get_attestation,
)
from registry.attestation.verify import verify_attestation
from registry.errors import InvalidInput, NotFound, Unavailable
from registry.gate.service import check, get_decision
from registry.gate.views import DecisionView, Outcome
from registry.keys import SigningKey, load_private_key, signing_key
from registry.planner import PLANNER_VERSION
from registry.policy.embedded import EmbeddedEngine
from registry.policy.engine import PolicyError
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.settings import Settings
from registry.staleness.rules import StalenessThresholds
from registry.storage import migrate
from registry.storage.database import Database
from registry.storage.models import DecisionRow
from tests.factories import example, import_example_evidence, short_grace_plan

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


# ---- helpers: a registry, a decision, its attestation ---------------------------------


def new_key_file(folder: Path, name: str = "signing-key.pem") -> Path:
    path = folder / name
    path.write_bytes(keys.private_key_pem(Ed25519PrivateKey.generate()))
    path.chmod(0o600)
    return path


def register(database: Database, plan: dict[str, Any] | None = None) -> None:
    for kind, document in (
        ("workload", example("workload")),
        ("provider", example("provider")),
        ("plan", plan or example("plan")),
    ):
        record = validate_record(RecordKind(kind), document)
        database.write(
            lambda ctx, k=kind, r=record: service.submit(ctx, kind=RecordKind(k), record=r),
            principal="alice",
            now=lambda: NOW,
        )
    import_example_evidence(database)


def submit_plan(database: Database, plan: dict[str, Any]) -> str:
    record = validate_record(RecordKind.plan, plan)
    result = database.write(
        lambda ctx: service.submit(ctx, kind=RecordKind.plan, record=record),
        principal="alice",
        now=lambda: NOW,
    )
    return result.record.ref


def gate(database: Database, engine: Any) -> DecisionView:
    return check(
        database,
        engine,
        plan_ref="chat-assistant-prod",
        principal="release-bot",
        limits=StalenessThresholds(),
        now=NOW,
    )


def plan_digest_of(database: Database, decision: DecisionView) -> str:
    with database.reading() as session:
        return service.get(session, kind=RecordKind.plan, ref=decision.plan).digest


def attest(database: Database, decision: DecisionView, key: SigningKey) -> dict[str, Any]:
    """The decision's envelope: signed here unless the gate already signed it."""
    digest = plan_digest_of(database, decision)

    def work(ctx: Any) -> dict[str, Any]:
        existing = get_attestation(ctx.session, decision.id)
        row = existing or attest_decision(ctx.session, decision, digest, key)
        return envelope_of(row)

    return database.write(work, principal="release-bot")


def payload_of(envelope: dict[str, Any]) -> dict[str, Any]:
    statement: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return statement


@pytest.fixture
def key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SigningKey:
    """The server's key, configured as an operator does (the gate signs with it too)."""
    path = new_key_file(tmp_path)
    monkeypatch.setenv(keys.ENV_VAR, str(path))
    return signing_key()


@pytest.fixture(scope="module")
def engine() -> EmbeddedEngine:
    return EmbeddedEngine()


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory, engine: EmbeddedEngine) -> Iterator[Any]:
    """One allow decision on SQLite, attested once per module: tampering tests share it."""
    folder = tmp_path_factory.mktemp("signed")
    url = f"sqlite:///{folder / 'registry.db'}"
    migrate.upgrade(url)
    database = Database(url)
    module_key = load_private_key(new_key_file(folder))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(keys.ENV_VAR, module_key.source)
        register(database)
        decision = gate(database, engine)
        envelope = attest(database, decision, module_key)
    yield decision, envelope, module_key, plan_digest_of(database, decision)
    database.engine.dispose()


# ---- DSSE -----------------------------------------------------------------------------


def test_pae_is_the_dsse_v1_encoding() -> None:
    # The DSSE protocol's own example.
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )
    # Lengths count bytes, not characters.
    assert pae("t/\u00e9", "\u00e9".encode()) == b"DSSEv1 4 t/\xc3\xa9 2 \xc3\xa9"


def test_envelope_round_trip_and_key_id() -> None:
    private = Ed25519PrivateKey.generate()
    raw = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    assert keys.key_id(private.public_key()) == hashlib.sha256(raw).hexdigest()
    envelope = sign_envelope(b'{"a":1}', IN_TOTO_PAYLOAD_TYPE, private, "k")
    assert set(envelope) == {"payload", "payloadType", "signatures"}
    assert verify_envelope(parse_envelope(envelope), private.public_key(), "k") == b'{"a":1}'


@pytest.mark.parametrize(
    ("envelope", "says"),
    [
        ([], "JSON object"),
        ({"payloadType": IN_TOTO_PAYLOAD_TYPE, "signatures": []}, "no payload"),
        ({"payload": "e30=", "payloadType": IN_TOTO_PAYLOAD_TYPE, "signatures": []}, "no sig"),
        ({"payload": "e30=", "payloadType": IN_TOTO_PAYLOAD_TYPE}, "no signatures"),
        (
            {"payload": "e30=", "payloadType": IN_TOTO_PAYLOAD_TYPE, "signatures": [{}]},
            "signatures[0] has no sig",
        ),
        (
            {"payload": "*not base64*", "payloadType": "x", "signatures": [{"sig": "AA=="}]},
            "payload is not base64",
        ),
    ],
    ids=["not an object", "no payload", "empty signatures", "no signatures", "no sig", "base64"],
)
def test_what_is_not_an_envelope_is_unreadable(envelope: Any, says: str) -> None:
    with pytest.raises(EnvelopeUnreadable) as error:
        parse_envelope(envelope)
    assert says in error.value.message
    assert error.value.exit_code == 2


# ---- decisions, signed ------------------------------------------------------------------


def test_allow_and_deny_decisions_verify(
    database: Database, engine: EmbeddedEngine, key: SigningKey
) -> None:
    register(database)
    allowed = gate(database, engine)
    assert allowed.outcome is Outcome.allow, allowed.violations
    submit_plan(database, short_grace_plan())
    denied = gate(database, engine)
    assert denied.outcome is Outcome.deny

    for decision in (allowed, denied):
        digest = plan_digest_of(database, decision)
        envelope = attest(database, decision, key)
        assert envelope["payloadType"] == IN_TOTO_PAYLOAD_TYPE
        assert envelope["signatures"][0]["keyid"] == key.key_id
        verified = verify_attestation(
            envelope, key.public_key, plan_digest=digest, expect_outcome=decision.outcome.value
        )
        assert (verified.plan, verified.plan_digest, verified.outcome, verified.decision_id) == (
            decision.plan,
            digest,
            decision.outcome.value,
            decision.id,
        )
        with database.reading() as session:
            row = get_attestation(session, decision.id)
            assert row is not None and row.key_id == key.key_id
            assert envelope_of(row) == envelope
    assert [
        payload_of(attest(database, d, key))["subject"][0]["name"] for d in (allowed, denied)
    ] == [
        "chat-assistant-prod@v1",
        "chat-assistant-prod@v2",
    ]
    with pytest.raises(AttestationRejected, match="outcome is deny"):
        verify_attestation(attest(database, denied, key), key.public_key, expect_outcome="allow")
    with pytest.raises(AttestationRejected, match="plan digest is"):
        verify_attestation(
            attest(database, denied, key),
            key.public_key,
            plan_digest=plan_digest_of(database, allowed),
        )


def test_statement_digests_equal_the_decisions(
    signed: tuple[DecisionView, dict[str, Any], SigningKey, str],
) -> None:
    decision, envelope, _, plan_digest = signed
    payload = base64.b64decode(envelope["payload"])
    statement = json.loads(payload)
    assert payload == statement_bytes(statement)  # canonical JSON, byte for byte
    assert statement["_type"] == STATEMENT_TYPE
    assert statement["predicateType"] == PREDICATE_TYPE
    assert statement["subject"] == [
        {
            "name": "chat-assistant-prod@v1",
            "digest": {"sha256": plan_digest.removeprefix("sha256:")},
        }
    ]
    assert plan_digest == decision.inputs["plan"]["digest"]
    predicate = statement["predicate"]
    view = decision.model_dump(mode="json")
    assert predicate["decision_id"] == decision.id
    for field in (
        "outcome",
        "violations",
        "waived",
        "waivers_used",
        "inputs",
        "input_digest",
        "bundle_revision",
        "engine",
        "principal",
        "created_at",
        "error",
    ):
        assert predicate[field] == view[field], field
    assert predicate["inputs"]["recomputation"].startswith("sha256:")
    assert {e["digest"] for e in predicate["inputs"]["evidence"]} == {
        e["digest"] for e in decision.inputs["evidence"]
    }
    assert predicate["planner_version"] == PLANNER_VERSION
    assert predicate["created_at"] == "2026-11-30T12:00:00Z"


def test_every_altered_byte_of_payload_or_signature_is_rejected(
    signed: tuple[DecisionView, dict[str, Any], SigningKey, str],
) -> None:
    _, envelope, key, _ = signed
    payload = base64.b64decode(envelope["payload"])
    signature = base64.b64decode(envelope["signatures"][0]["sig"])
    for index in range(len(payload)):
        altered = bytearray(payload)
        altered[index] ^= 0x01
        forged = dict(envelope, payload=base64.b64encode(bytes(altered)).decode())
        with pytest.raises(AttestationRejected):
            verify_attestation(forged, key.public_key)
    for index in range(len(signature)):
        altered = bytearray(signature)
        altered[index] ^= 0x80
        sig = {"keyid": key.key_id, "sig": base64.b64encode(bytes(altered)).decode()}
        with pytest.raises(AttestationRejected):
            verify_attestation(dict(envelope, signatures=[sig]), key.public_key)
    assert verify_attestation(envelope, key.public_key).outcome == "allow"


def test_swapped_payload_type_other_key_or_other_statement_is_rejected(
    signed: tuple[DecisionView, dict[str, Any], SigningKey, str],
) -> None:
    _, envelope, key, _ = signed
    for payload_type in ("application/json", "application/vnd.in-toto+JSON", ""):
        with pytest.raises(AttestationRejected, match="does not verify"):
            verify_attestation(dict(envelope, payloadType=payload_type), key.public_key)

    other = Ed25519PrivateKey.generate()
    with pytest.raises(AttestationRejected, match="not by the given key"):
        verify_attestation(envelope, other.public_key())
    # The keyid is only a hint: claiming the other key's id does not help either.
    hinted = dict(
        envelope,
        signatures=[dict(envelope["signatures"][0], keyid=keys.key_id(other.public_key()))],
    )
    with pytest.raises(AttestationRejected, match="does not verify"):
        verify_attestation(hinted, other.public_key())

    # Validly signed, but not capgate's decision statement: rejected after the signature.
    statement = payload_of(envelope)
    for change, says in (
        ({"predicateType": "https://slsa.dev/provenance/v1"}, "predicate type"),
        ({"_type": "https://in-toto.io/Statement/v0.1"}, "not an in-toto statement"),
    ):
        wrong = sign_envelope(
            statement_bytes({**statement, **change}),
            IN_TOTO_PAYLOAD_TYPE,
            key.private_key,
            key.key_id,
        )
        with pytest.raises(AttestationRejected, match=says):
            verify_attestation(wrong, key.public_key)
    other_type = sign_envelope(
        statement_bytes(statement), "application/json", key.private_key, key.key_id
    )
    with pytest.raises(AttestationRejected, match="payload type"):
        verify_attestation(other_type, key.public_key)
    with pytest.raises(InvalidInput, match="not a sha256 digest"):
        verify_attestation(envelope, key.public_key, plan_digest="sha256:abc")


def test_the_gates_call_signs_the_same_statement_once(
    database: Database,
    engine: EmbeddedEngine,
    key: SigningKey,
) -> None:
    """attest_stored_decision (what the gate calls in its transaction) agrees with
    attest_decision on the decision read back, and a decision is attested only once."""
    register(database)
    decision = gate(database, engine)
    with database.reading() as session:  # rolled back: nothing kept
        row = session.get(DecisionRow, decision.id)
        assert row is not None
        in_transaction = envelope_of(attest_stored_decision(session, row, key))
    envelope = attest(database, decision, key)
    assert in_transaction == envelope  # Ed25519 is deterministic: the same bytes
    again = database.write(
        lambda ctx: envelope_of(
            attest_decision(ctx.session, decision, plan_digest_of(database, decision), key)
        ),
        principal="release-bot",
    )
    assert again == envelope


class BrokenEngine:
    name = "embedded"
    revision = "sha256:" + "0" * 64

    def decide(self, input_document: dict[str, Any]) -> Any:
        raise PolicyError("policy evaluation failed: builtin error")


def test_an_error_decision_is_signed_too(database: Database, key: SigningKey) -> None:
    register(database)
    decision = gate(database, BrokenEngine())
    assert decision.outcome is Outcome.error
    envelope = attest(database, decision, key)
    verified = verify_attestation(envelope, key.public_key, expect_outcome="error")
    assert verified.plan_digest == plan_digest_of(database, decision)
    predicate = verified.statement["predicate"]
    assert predicate["error"] == "policy evaluation failed: builtin error"
    # The engine failed after the input was assembled: its digests are still attested.
    assert predicate["inputs"] == decision.model_dump(mode="json")["inputs"]


# ---- keys ---------------------------------------------------------------------------------


def test_default_key_is_made_once_private_and_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(keys.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    path = keys.default_key_path()
    assert path == tmp_path / "data" / "capgate" / "signing-key.pem"
    from registry.settings import default_database_url

    assert default_database_url() == f"sqlite:///{path.with_name('registry.db')}"
    first = signing_key()
    assert path.is_file() and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert signing_key().key_id == first.key_id
    assert load_private_key(path).key_id == first.key_id
    assert [p.name for p in path.parent.iterdir()] == ["signing-key.pem"]  # no leftovers


def test_configured_key_is_used_and_a_bad_one_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = new_key_file(tmp_path, "server.pem")
    monkeypatch.setenv(keys.ENV_VAR, str(path))
    assert signing_key().key_id == load_private_key(path).key_id
    assert keys.load_public_key(path) is not None  # a private PEM gives its public half
    public = tmp_path / "public.pem"
    public.write_text(signing_key().public_pem())
    assert keys.key_id(keys.load_public_key(public)) == signing_key().key_id

    monkeypatch.setenv(keys.ENV_VAR, str(tmp_path / "missing.pem"))
    with pytest.raises(Unavailable, match=r"missing\.pem: signing key file not found"):
        signing_key()
    rsa_like = tmp_path / "garbage.pem"
    rsa_like.write_text("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    monkeypatch.setenv(keys.ENV_VAR, str(rsa_like))
    with pytest.raises(Unavailable, match="not an unencrypted PEM private key"):
        signing_key()
    with pytest.raises(InvalidInput, match="not an unencrypted PEM private key"):
        keys.load_public_key(rsa_like)


# ---- REST --------------------------------------------------------------------------------


def _client(database: Database) -> TestClient:
    """With tokens once the API requires them (tests.support.auth), else as it is today."""
    app = create_app(
        database,
        Settings(
            database_url="unused",
            server=None,
            principal="unused",
            policy_engine="embedded",
            opa_url=None,
        ),
    )
    try:
        from tests.support.auth import client_for  # type: ignore[import-not-found]
    except ImportError:
        return TestClient(app, headers={"X-Capgate-Principal": "auditor"})
    client: TestClient = client_for(app)
    return client


def test_rest_serves_the_envelope_and_the_public_key(
    database: Database, engine: EmbeddedEngine, key: SigningKey
) -> None:
    register(database)
    decision = gate(database, engine)
    with _client(database) as client:
        # A decision without an attestation (only until the gate signs every decision).
        with database.reading() as session:
            unsigned = get_attestation(session, decision.id) is None
        if unsigned:
            missing = client.get(f"/v1/decisions/{decision.id}/attestation")
            assert missing.status_code == 404, missing.text
            assert "has no attestation" in missing.json()["message"]
        envelope = attest(database, decision, key)
        response = client.get(f"/v1/decisions/{decision.id}/attestation")
        assert response.status_code == 200, response.text
        assert response.json() == envelope

        unknown = client.get("/v1/decisions/00000000-0000-4000-8000-000000000000/attestation")
        assert unknown.status_code == 404
        assert client.get("/v1/decisions/not-a-uuid/attestation").status_code == 422

        pem = client.get("/v1/attestation/public-key")
        assert pem.status_code == 200
        assert pem.headers["content-type"].startswith("text/plain")
        assert pem.headers["x-capgate-key-id"] == key.key_id
        public = keys.public_key_from_pem(pem.text.encode(), "response")
        assert verify_attestation(response.json(), public).decision_id == decision.id


def test_get_attestation_of_nothing_is_none(database: Database) -> None:
    with database.reading() as session:
        assert get_attestation(session, "00000000-0000-4000-8000-000000000000") is None
        with pytest.raises(NotFound):
            get_decision(session, "00000000-0000-4000-8000-000000000000", current_revision=None)
