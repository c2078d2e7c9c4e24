"""Observation review's part in a submission (registry.records.hooks).

registry.observe.review is imported when an observation is submitted, not when the hook
is installed at start-up (it brings the planner's sampling with it).
"""

from __future__ import annotations

from registry.records.hooks import Stored, Submission, SubmitHook
from registry.records.kinds import RecordKind
from registry.records.references import pinned
from registry.storage.database import WriteContext
from registry.storage.models import StalenessRow


class ObservationReview(SubmitHook):
    """A new observation is judged against its plan: material drift stales evidence and
    calls for a review, recorded right after the submission's own event.

    Runs after StaleOnNewVersion: the stale refs it names replace that hook's `staled`,
    and its staleness rows follow that hook's in the event."""

    def after_write(self, ctx: WriteContext, submission: Submission, stored: Stored) -> None:
        if submission.kind is not RecordKind.observation:
            return
        from registry.audit.rows import staleness_entry
        from registry.observe.review import REVIEW_EVENT, review_observation

        written: list[StalenessRow] = []
        targets = submission.targets
        review = review_observation(ctx, row=stored.row, targets=targets, written=written)
        stored.event_fields["staled"] = review.staled
        stored.audit_rows.extend(staleness_entry(s) for s in written)
        if review.drift.review:
            plan, workload = targets["plan"], targets["workload"]
            stored.later_events.append(
                (
                    REVIEW_EVENT,
                    review.event(
                        pinned(stored.row.name, stored.row.version),
                        pinned(plan.name, plan.version),
                        pinned(workload.name, workload.version),
                    ),
                )
            )
