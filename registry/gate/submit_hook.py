"""The waiver rules' part in a submission (registry.records.hooks).

registry.gate.waivers is imported when a submission runs, not when the hook is installed
at start-up: installing it must not slow every CLI command down.
"""

from __future__ import annotations

from typing import cast

from registry.records.hooks import Submission, SubmitHook
from registry.records.kinds import RecordKind
from registry.storage.database import WriteContext


class WaiverRules(SubmitHook):
    """A new waiver keeps the waiver rules (it expires in the future and within the
    maximum lifetime), checked before its references are resolved."""

    def check_new(self, ctx: WriteContext, submission: Submission) -> None:
        if submission.kind is not RecordKind.waiver:
            return
        from registry.gate.waivers import check_new_waiver
        from registry.records.waiver import Waiver

        check_new_waiver(cast(Waiver, submission.record), now=ctx.now)
