"""Staleness's part in a submission (registry.records.hooks).

The features' modules are imported when a submission runs, not when the hooks are
installed: installing them at start-up must not slow every CLI command down.
"""

from __future__ import annotations

from typing import cast

from registry.records.evidence import LoadTestEvidence
from registry.records.hooks import Stored, Submission, SubmitHook
from registry.records.kinds import RecordKind
from registry.storage.database import WriteContext
from registry.storage.models import StalenessRow


class RawFilesNotLaundered(SubmitHook):
    """New evidence may not re-use a raw file measured against a version since changed
    materially (registry.staleness.laundering)."""

    def check_before_write(self, ctx: WriteContext, submission: Submission) -> None:
        if submission.kind is not RecordKind.evidence:
            return
        from registry.staleness.laundering import check_raw_digests

        check_raw_digests(
            ctx, record=cast(LoadTestEvidence, submission.pinned), targets=submission.targets
        )


class StaleOnNewVersion(SubmitHook):
    """A new version stales the evidence it changes materially; the event says which
    (`staled`) and carries the staleness rows."""

    def after_write(self, ctx: WriteContext, submission: Submission, stored: Stored) -> None:
        from registry.audit.rows import staleness_entry
        from registry.staleness.service import on_new_version

        written: list[StalenessRow] = []
        stored.event_fields["staled"] = on_new_version(
            ctx, kind=submission.kind, row=stored.row, written=written
        )
        stored.audit_rows.extend(staleness_entry(s) for s in written)
