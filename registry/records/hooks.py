"""What the features above records run when a record is submitted.

Records know nothing of the features built on them (waiver rules, ownership, evidence
withdrawal and laundering, staleness, observation review). Each feature states what it
does on a submission as a SubmitHook; registry.wiring installs the list once at start-up,
in one place and in order, and registry.records.service.submit runs each phase of every
hook, in that order, inside the submission's own unit of work: a hook that raises refuses
the submission and nothing of it is stored.

Submitting with no hooks installed is refused rather than run without them: a registry
that skipped its waiver rules or staleness would store what it should have refused or
leave stale evidence looking fresh.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from registry.auth.identity import Identity
from registry.errors import Unavailable
from registry.records.common import Metadata
from registry.records.kinds import RecordKind
from registry.storage.database import WriteContext
from registry.storage.models import RecordRow


@dataclass
class Submission:
    """One submission as the hooks see it, filled in as submit goes along."""

    kind: RecordKind
    record: Metadata  # as submitted: references as their author wrote them
    identity: Identity | None  # None: the local user of an embedded registry
    team: str | None  # the owner team asked for a new series
    # Set once references are resolved: the record each reference names, by role.
    targets: dict[str, RecordRow] = field(default_factory=dict)
    # Set before the write phase: the record with its references pinned to name@vN.
    pinned: Metadata | None = None
    # Set before the write phase: the earlier version this content is a revert of.
    reverted: RecordRow | None = None
    # What a hook keeps between its phases of this one submission, under its own key.
    state: dict[str, Any] = field(default_factory=dict)


@dataclass
class Stored:
    """The version just written, and what the after-write steps add to its audit event."""

    row: RecordRow
    # Audit entries (registry.audit.rows) after the record's own, in hook order.
    audit_rows: list[dict[str, Any]] = field(default_factory=list)
    # Fields of the submission's event payload set by a hook (e.g. "staled").
    event_fields: dict[str, Any] = field(default_factory=dict)
    # Events recorded after the submission's own event, in this order.
    later_events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


class SubmitHook:
    """A feature's part in a submission. Every phase does nothing unless overridden."""

    def check_new(self, ctx: WriteContext, submission: Submission) -> None:
        """Before references are resolved: rules on the record as submitted."""

    def check_resolved(self, ctx: WriteContext, submission: Submission) -> None:
        """References resolved (`targets`), before the cross-record checks."""

    def check_before_write(self, ctx: WriteContext, submission: Submission) -> None:
        """A new version will be written (`pinned`, `reverted` set): last refusals."""

    def after_write(self, ctx: WriteContext, submission: Submission, stored: Stored) -> None:
        """The version is stored and flushed: the steps it causes, in the same transaction."""


_installed: tuple[SubmitHook, ...] | None = None


def install(hooks: Sequence[SubmitHook]) -> None:
    """Set the hooks every submission runs (registry.wiring.install; replaces any)."""
    global _installed
    _installed = tuple(hooks)


def installed() -> tuple[SubmitHook, ...]:
    if _installed is None:
        raise Unavailable(
            "record submission is not wired: the start-up hooks (staleness, waiver rules, "
            "ownership...) were never installed (registry.wiring.install)"
        )
    return _installed
