"""`capgate audit keygen|checkpoint|verify --checkpoint`, on the embedded registry."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.audit import audit_app
from registry.audit import checkpoint as checkpoints
from registry.audit.chain import extent
from registry.audit.service import verify
from registry.errors import InvalidInput, Tampered, Unavailable
from registry.gate.views import DecisionView
from registry.keys import generate_key_pair, load_private_key, load_public_key, public_path_for
from registry.policy.embedded import EmbeddedEngine
from registry.storage.database import Database
from tests.audit.conftest import gate, seq_of, sql


@pytest.fixture
def cli(database: Database, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for name in ("CAPGATE_SERVER", "CAPGATE_SIGNING_KEY", "CAPGATE_TOKEN", "CAPGATE_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CAPGATE_DATABASE_URL", database.url)
    monkeypatch.setenv("CAPGATE_PRINCIPAL", "auditor-ann")
    return CliRunner()


def test_keygen_checkpoint_then_a_cut_tail_fails_verification(
    registered: Database,
    allowed: DecisionView,
    cli: CliRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key, public, saved = tmp_path / "audit.pem", tmp_path / "audit.pub.pem", tmp_path / "cp.json"
    made = cli.invoke(audit_app, ["keygen", "--out", str(key)])
    assert made.exit_code == 0, made.output
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and public.is_file()
    again = cli.invoke(audit_app, ["keygen", "--out", str(key)])
    assert isinstance(again.exception, InvalidInput)  # never overwrites a key

    signed = cli.invoke(audit_app, ["checkpoint", "--out", str(saved), "--key", str(key)])
    assert signed.exit_code == 0, signed.output
    size = checkpoints.read(saved).checkpoint.size
    ok = cli.invoke(audit_app, ["verify", "--checkpoint", str(saved), "--key", str(public)])
    assert ok.exit_code == 0, ok.output
    assert "consistent with the checkpoint" in ok.output and f"({size} events)" in ok.output

    cut = seq_of(registered, "gate.check")
    sql(registered, "DELETE FROM audit_events WHERE seq >= :s", s=cut)
    sql(registered, "DELETE FROM decision_attestations")  # the attacker drops these too
    sql(registered, "DELETE FROM decisions")
    plain = cli.invoke(audit_app, ["verify"])
    assert plain.exit_code == 0, plain.output  # the chain alone cannot tell
    broken = cli.invoke(audit_app, ["verify", "--checkpoint", str(saved), "--key", str(public)])
    assert broken.exit_code == 1
    assert f"the chain ends at event {cut - 1}, before event {size}" in broken.output
    assert "its tail was removed" in broken.output

    # The key can come from CAPGATE_SIGNING_KEY; a checkpoint of another key is refused.
    monkeypatch.setenv("CAPGATE_SIGNING_KEY", str(key))
    assert cli.invoke(audit_app, ["checkpoint", "--out", str(tmp_path / "now.json")]).exit_code == 0
    other = tmp_path / "other.pem"
    assert cli.invoke(audit_app, ["keygen", "--out", str(other)]).exit_code == 0
    wrong = cli.invoke(
        audit_app,
        ["verify", "--checkpoint", str(saved), "--key", str(tmp_path / "other.pub.pem")],
    )
    assert isinstance(wrong.exception, InvalidInput)
    assert "signature does not verify" in wrong.exception.message
    assert load_public_key(public)  # the public key file is a public key


def test_a_broken_chain_is_not_checkpointed(
    registered: Database, cli: CliRunner, tmp_path: Path
) -> None:
    key = tmp_path / "k.pem"
    assert cli.invoke(audit_app, ["keygen", "--out", str(key)]).exit_code == 0
    sql(registered, "UPDATE audit_events SET principal = 'mallory' WHERE seq = 1")
    refused = cli.invoke(
        audit_app, ["checkpoint", "--out", str(tmp_path / "cp.json"), "--key", str(key)]
    )
    assert refused.exit_code == 1
    assert "event 1 was altered" in refused.output
    assert not (tmp_path / "cp.json").exists()


def test_signed_checkpoint_rejects_an_edited_size(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    signed = checkpoints.sign(
        checkpoints.Checkpoint(size=10, head="sha256:" + "a" * 64, at=datetime.now(UTC)), key
    )
    forged = signed.model_copy(
        update={"checkpoint": signed.checkpoint.model_copy(update={"size": 3})}
    )
    assert checkpoints.verified(signed, key.public_key(), source="cp").size == 10
    with pytest.raises(InvalidInput, match="signature does not verify"):
        checkpoints.verified(forged, key.public_key(), source="cp")


def test_gate_refuses_a_chain_that_contradicts_the_saved_checkpoint(
    registered: Database,
    allowed: DecisionView,
    engine: EmbeddedEngine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With CAPGATE_AUDIT_CHECKPOINT, a cut tail stops the gate itself, not only verify."""
    key, saved = tmp_path / "audit.pem", tmp_path / "head.json"
    generate_key_pair(key)
    with registered.reading() as session:
        count, head = extent(session)[1], verify(session).head
    assert head is not None
    signed = checkpoints.sign(
        checkpoints.Checkpoint(size=count, head=head, at=datetime.now(UTC)),
        load_private_key(key).private_key,
    )
    checkpoints.write(signed, saved)
    monkeypatch.setenv("CAPGATE_AUDIT_CHECKPOINT", str(saved))
    monkeypatch.setenv("CAPGATE_AUDIT_CHECKPOINT_KEY", str(public_path_for(key)))
    cut = seq_of(registered, "gate.check")  # the allowed decision, inside the checkpoint
    assert gate(Database(registered.url), engine).outcome.value == "allow"  # consistent

    sql(registered, "DELETE FROM audit_events WHERE seq >= :s", s=cut)
    sql(registered, "DELETE FROM decision_attestations")
    sql(registered, "DELETE FROM decisions")
    with pytest.raises(Tampered, match=r"contradicts the saved checkpoint .* tail was removed"):
        gate(Database(registered.url), engine)  # a fresh process: only the checkpoint knows

    # A checkpoint the gate cannot verify is an error too, never a pass.
    generate_key_pair(tmp_path / "other.pem")
    monkeypatch.setenv("CAPGATE_AUDIT_CHECKPOINT_KEY", str(tmp_path / "other.pub.pem"))
    with pytest.raises(Unavailable, match="signature does not verify"):
        gate(Database(registered.url), engine)
