"""Approving a policy release, then rechecking what it changes: one step for its users.

A new release is a material change (the review trigger of a policy or data change).
Once approved, every plan whose latest decision was taken under another bundle is
decided again, when the engine at hand runs the approved release; otherwise the answer
says to install the release and run ``capgate gate recheck --all``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from pydantic import BaseModel

from registry.errors import CapgateError
from registry.gate.recheck import RecheckReport, recheck_all
from registry.gate.service import Engine
from registry.policy.releases import PolicyReleaseView, approve
from registry.staleness.rules import StalenessThresholds
from registry.storage.database import Database


class ReleaseApproval(BaseModel):
    release: PolicyReleaseView
    recheck: RecheckReport | None
    note: str | None


def approve_and_recheck(
    database: Database,
    engine_factory: Callable[[], Engine],
    *,
    ref: str,
    comment: str | None,
    principal: str,
    limits: StalenessThresholds,
    now: datetime | None = None,
) -> ReleaseApproval:
    release = database.write(
        lambda ctx: approve(ctx, ref=ref, comment=comment),
        principal=principal,
        now=(lambda: now) if now is not None else None,
    )
    # The engine after the approval: one that cannot start does not undo the approval.
    unavailable = ""
    try:
        engine: Engine | None = engine_factory()
    except CapgateError as exc:
        engine, unavailable = None, exc.message
    if engine is None or engine.revision != release.bundle_revision:
        running = (
            f"no policy engine ({unavailable})"
            if engine is None
            else f"the engine runs {engine.revision}"
        )
        return ReleaseApproval(
            release=release,
            recheck=None,
            note=(
                f"{release.ref} is in force, but {running}: every gate check is an error "
                f"until {release.bundle_revision} is installed (capgate policy release "
                f"export {release.ref} DIR); then run capgate gate recheck --all"
            ),
        )
    report = recheck_all(database, engine, principal=principal, limits=limits, now=now)
    return ReleaseApproval(release=release, recheck=report, note=None)
