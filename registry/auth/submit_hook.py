"""Series ownership's part in a submission (registry.records.hooks)."""

from __future__ import annotations

from registry.records.hooks import Stored, Submission, SubmitHook
from registry.storage.database import WriteContext

_TEAM = "auth.new_series_team"


class SeriesOwnership(SubmitHook):
    """Only the owner team publishes the next version of a series; a new series is
    claimed for the first publisher's team, in the submission's own event
    (registry.auth.ownership)."""

    def check_resolved(self, ctx: WriteContext, submission: Submission) -> None:
        from registry.auth.identity import local_identity
        from registry.auth.ownership import check_publish

        plan_row = submission.targets.get("plan")
        submission.state[_TEAM] = check_publish(
            ctx,
            submission.identity or local_identity(ctx.principal),
            submission.kind,
            submission.record,
            plan=plan_row.name if plan_row is not None else None,
            team=submission.team,
        )

    def after_write(self, ctx: WriteContext, submission: Submission, stored: Stored) -> None:
        from registry.auth.ownership import claim

        team = submission.state.get(_TEAM)
        if team is not None:
            stored.audit_rows.append(claim(ctx, submission.kind, submission.record.name, team))
