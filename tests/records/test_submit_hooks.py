"""Submission runs the hooks registry.wiring installs, phase by phase, in their order.

Records import none of the features; what those do on a submission reaches it only as
installed hooks (registry.records.hooks). Without them a submission is refused, not run
unchecked; a hook that refuses leaves nothing stored; what a hook adds after the write
goes into the submission's own audit event. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select

from registry import wiring
from registry.errors import InvalidInput, Unavailable
from registry.records import hooks, service
from registry.records.documents import validate_record
from registry.records.hooks import Stored, Submission, SubmitHook
from registry.records.kinds import RecordKind
from registry.storage.database import Database, WriteContext
from registry.storage.models import AuditEventRow, RecordRow
from tests.factories import example
from tests.records.test_versioning import waiver_document


@pytest.fixture
def rewired() -> Iterator[None]:
    """Each test installs its own hooks; the start-up wiring is put back after it."""
    yield
    wiring.install()


def submit(database: Database, kind: RecordKind = RecordKind.workload) -> Any:
    record = validate_record(kind, example(kind))
    return database.write(lambda ctx: service.submit(ctx, kind=kind, record=record), principal="t")


def stored(database: Database) -> int:
    with database.reading() as session:
        return session.scalar(select(func.count()).select_from(RecordRow)) or 0


class Logged(SubmitHook):
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def check_new(self, ctx: WriteContext, submission: Submission) -> None:
        self.log.append(f"{self.name}.check_new")

    def check_resolved(self, ctx: WriteContext, submission: Submission) -> None:
        self.log.append(f"{self.name}.check_resolved")

    def check_before_write(self, ctx: WriteContext, submission: Submission) -> None:
        assert submission.pinned is not None
        self.log.append(f"{self.name}.check_before_write")

    def after_write(self, ctx: WriteContext, submission: Submission, stored: Stored) -> None:
        self.log.append(f"{self.name}.after_write")
        stored.event_fields[self.name] = stored.row.version


def test_without_installed_hooks_a_submission_is_refused(database: Database, rewired: None) -> None:
    hooks._installed = None  # as in a process that never ran registry.wiring.install
    with pytest.raises(Unavailable, match=r"registry\.wiring\.install"):
        submit(database)
    assert stored(database) == 0


def test_each_phase_runs_every_hook_in_installed_order_and_feeds_the_event(
    database: Database, rewired: None
) -> None:
    log: list[str] = []
    hooks.install([Logged("first", log), Logged("second", log)])
    result = submit(database)
    assert result.created
    assert log == [
        f"{name}.{phase}"
        for phase in ("check_new", "check_resolved", "check_before_write", "after_write")
        for name in ("first", "second")
    ]
    with database.reading() as session:
        payload = json.loads(session.scalars(select(AuditEventRow.payload)).one())
    assert payload["first"] == payload["second"] == 1


def test_a_hook_that_refuses_before_the_write_leaves_nothing_stored(
    database: Database, rewired: None
) -> None:
    class Refuses(SubmitHook):
        def check_before_write(self, ctx: WriteContext, submission: Submission) -> None:
            raise InvalidInput("refused by a hook")

    hooks.install([Refuses()])
    with pytest.raises(InvalidInput, match="refused by a hook"):
        submit(database)
    assert stored(database) == 0


def test_the_start_up_wiring_runs_the_waiver_rules_on_submission(database: Database) -> None:
    # The real wiring (tests/conftest.py installs it): an expired waiver is refused by
    # registry.gate.waivers through its hook, which records itself knows nothing of.
    for kind in (RecordKind.workload, RecordKind.provider, RecordKind.plan):
        submit(database, kind)
    record = validate_record(RecordKind.waiver, waiver_document(expires_at="2020-01-01T00:00:00Z"))
    with pytest.raises(InvalidInput) as caught:
        database.write(
            lambda ctx: service.submit(ctx, kind=RecordKind.waiver, record=record),
            principal="t",
        )
    assert [p.loc for p in caught.value.problems] == ["expires_at"]
    assert "has already passed" in caught.value.problems[0].message
    assert stored(database) == 3
