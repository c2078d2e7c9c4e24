"""A registry with a plan, its evidence and a decision, and the means to tamper with it.

Tampering goes through raw SQL on `database.engine`, as someone with write access to the
database (and no business there) would do it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import Integer, Table, func, select, text

from registry.audit import checkpoint as checkpoints
from registry.audit.chain import GENESIS, event_body, event_hash
from registry.audit.service import verify
from registry.digest import canonical_json
from registry.errors import Tampered
from registry.gate.service import check
from registry.gate.views import DecisionView
from registry.policy.embedded import EmbeddedEngine
from registry.policy.engine import PolicyDecision, Violation
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.staleness.rules import StalenessThresholds
from registry.storage import migrate
from registry.storage.database import Database
from registry.storage.models import AuditEventRow, Base, DecisionRow
from tests.conftest import BACKENDS, _empty_tables
from tests.factories import example, import_example_evidence

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
LIMITS = StalenessThresholds()
PLAN = "chat-assistant-prod"


@pytest.fixture(scope="session")
def engine() -> EmbeddedEngine:
    return EmbeddedEngine()


def submit(database: Database, kind: str, document: dict[str, Any]) -> str:
    record_kind = RecordKind(kind)
    record = validate_record(record_kind, document)
    result = database.write(
        lambda ctx: service.submit(ctx, kind=record_kind, record=record),
        principal="alice",
        now=lambda: NOW,
    )
    return str(result.record.ref)


def gate(database: Database, engine: Any, plan: str = PLAN) -> DecisionView:
    return check(database, engine, plan_ref=plan, principal="release-bot", limits=LIMITS, now=NOW)


class HouseRule:
    """The real policies plus one house rule that denies every plan.

    A deny on the worked example's plan itself: the planner (seconds per new plan
    content) runs once for the whole folder.
    """

    def __init__(self, inner: EmbeddedEngine) -> None:
        self.inner = inner
        self.name = inner.name

    @property
    def revision(self) -> str:
        return self.inner.revision

    def decide(self, input_document: dict[str, Any]) -> PolicyDecision:
        decided = self.inner.decide(input_document)
        rule = Violation(
            policy="change_freeze",
            rule="frozen",
            severity="high",
            message="no releases during the change freeze",
            details={},
        )
        return PolicyDecision(allow=False, violations=[*decided.violations, rule])


def _register(database: Database) -> None:
    for kind in ("workload", "provider", "plan"):
        submit(database, kind, example(kind))
    import_example_evidence(database)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite registry with the worked example registered, built once."""
    path = tmp_path_factory.mktemp("template") / "registry.db"
    migrate.upgrade(f"sqlite:///{path}")
    database = Database(f"sqlite:///{path}")
    _register(database)
    database.engine.dispose()  # the last connection's close folds the WAL into the file
    return path


Rows = list[tuple[Table, list[dict[str, Any]]]]


@pytest.fixture(scope="session")
def postgres_template(migrated_postgres_url: str) -> Rows:
    """The worked example registered once on PostgreSQL, as rows to put back."""
    database = Database(migrated_postgres_url)
    _empty_tables(database)
    _register(database)
    with database.engine.connect() as connection:
        rows = [
            (table, [dict(r) for r in connection.execute(table.select()).mappings()])
            for table in Base.metadata.sorted_tables
        ]
    database.engine.dispose()
    return rows


def _restore(url: str, rows: Rows) -> None:
    database = Database(url)
    _empty_tables(database)
    with database.engine.begin() as connection:
        for table, values in rows:
            if values:
                connection.execute(table.insert(), values)
            key = table.c.get("id")
            if key is not None and isinstance(key.type, Integer):
                connection.execute(
                    text(
                        f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                        f"(SELECT COALESCE(MAX(id), 0) + 1 FROM {table.name}), false)"
                    )
                )
    database.engine.dispose()


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """As tests/conftest.py's, with the worked example already registered (the folder
    must stay fast): a copy of a template file on SQLite, the template's rows put back
    on PostgreSQL, both written once through the services."""
    if request.param == "sqlite":
        path = tmp_path / "registry.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite:///{path}"
        return
    url = request.getfixturevalue("migrated_postgres_url")
    _restore(url, request.getfixturevalue("postgres_template"))
    yield url


@pytest.fixture
def registered(database: Database) -> Database:
    """Workload, provider, plan and imported evidence; nothing decided yet."""
    return database


@pytest.fixture
def allowed(registered: Database, engine: EmbeddedEngine) -> DecisionView:
    decision = gate(registered, engine)
    assert decision.outcome.value == "allow", decision.violations
    return decision


@pytest.fixture
def denied(registered: Database, engine: EmbeddedEngine) -> DecisionView:
    decision = gate(registered, HouseRule(engine))
    assert decision.outcome.value == "deny"
    assert [v["policy"] for v in decision.violations] == ["change_freeze"]
    return decision


# ---- reading what audit verify and the gate say -----------------------------------------


def problems(database: Database, checkpoint: checkpoints.Checkpoint | None = None) -> list[str]:
    with database.reading() as session:
        report = verify(session, checkpoint=checkpoint)
    assert report.intact is (not report.problems)
    return report.problems


def decisions(database: Database) -> list[tuple[str, str]]:
    with database.reading() as session:
        rows = session.execute(select(DecisionRow.id, DecisionRow.outcome)).all()
    return sorted((r[0], r[1]) for r in rows)


def event_count(database: Database) -> int:
    with database.reading() as session:
        return int(session.scalar(select(func.count()).select_from(AuditEventRow)) or 0)


@pytest.fixture
def fresh_process(database: Database) -> Iterator[Database]:
    """Another handle on the same registry: the gate's guard starts from scratch, as in
    a new CLI process or a restarted server."""
    other = Database(database.url)
    yield other
    other.engine.dispose()


def assert_gate_refuses(
    database: Database, fresh_process: Database, engine: EmbeddedEngine, plan: str = PLAN
) -> list[str]:
    """The gate fails closed, in this process (its guard warm) and in a new one: it
    raises Tampered (exit 2) with one line, and keeps no decision and no event."""
    before_decisions, before_events = decisions(database), event_count(database)
    messages = []
    for handle in (database, fresh_process):
        with pytest.raises(Tampered) as refused:
            gate(handle, engine, plan)
        assert refused.value.exit_code == 2
        assert "\n" not in refused.value.message
        messages.append(refused.value.message)
    assert decisions(database) == before_decisions
    assert event_count(database) == before_events
    return messages


# ---- tampering ---------------------------------------------------------------------------


def sql(database: Database, statement: str, **params: Any) -> Any:
    with database.engine.begin() as connection:
        return connection.execute(text(statement), params)


def events(database: Database) -> list[dict[str, Any]]:
    rows = sql(database, "SELECT seq, action, payload, hash FROM audit_events ORDER BY seq")
    return [{"seq": r[0], "action": r[1], "payload": json.loads(r[2]), "hash": r[3]} for r in rows]


def seq_of(database: Database, action: str, **where: Any) -> int:
    """The last event with `action` whose payload has the `where` values."""
    found = [
        e["seq"]
        for e in events(database)
        if e["action"] == action and all(e["payload"].get(k) == v for k, v in where.items())
    ]
    assert found, (action, where)
    return int(found[-1])


def record_id(database: Database, kind: str, name: str, version: int) -> int:
    return int(
        sql(
            database,
            "SELECT id FROM records WHERE kind = :k AND name = :n AND version = :v",
            k=kind,
            n=name,
            v=version,
        ).scalar_one()
    )


def rechain(database: Database) -> None:
    """What an attacker who knows the hash rule does: recompute every event's hash."""
    with database.engine.begin() as connection:
        rows = connection.execute(select(AuditEventRow).order_by(AuditEventRow.seq)).all()
        prev = GENESIS
        for row in rows:
            payload = json.loads(row.payload)
            digest = event_hash(
                prev, event_body(row.seq, row.at, row.principal, row.action, payload)
            )
            connection.execute(
                AuditEventRow.__table__.update()
                .where(AuditEventRow.seq == row.seq)
                .values(prev_hash=prev, hash=digest)
            )
            prev = digest


def edit_event_payload(database: Database, seq: int, **changes: Any) -> None:
    payload = next(e["payload"] for e in events(database) if e["seq"] == seq)
    payload.update(changes)
    sql(
        database,
        "UPDATE audit_events SET payload = :p WHERE seq = :s",
        p=canonical_json(payload),
        s=seq,
    )


# ---- checkpoints -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def signing_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def take_checkpoint(database: Database, key: Ed25519PrivateKey) -> checkpoints.SignedCheckpoint:
    with database.reading() as session:
        report = verify(session)
    assert report.intact and report.head is not None, report.problems
    return checkpoints.sign(
        checkpoints.Checkpoint(size=report.events, head=report.head, at=NOW), key
    )


def checked(signed: checkpoints.SignedCheckpoint, key: Ed25519PrivateKey) -> checkpoints.Checkpoint:
    return checkpoints.verified(signed, key.public_key(), source="checkpoint.json")
