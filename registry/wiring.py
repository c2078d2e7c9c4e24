"""Start-up wiring: the one place that plugs the features into the layers below them.

Lower layers name what they need and never import the features that provide it
(docs/architecture.md):

- record submission runs the hooks installed here, phase by phase, in this order
  (registry.records.hooks): waiver rules, withdrawn evidence, laundered raw files,
  staleness, observation review, series ownership;
- attestation reads a stored decision back with the gate's reader.

Every entry point installs before it writes: the API (registry.api.app.create_app), the
CLI's local registry (cli/backend.py, cli/report.py) and the tests (tests/conftest.py).
Installing again is harmless: it sets the same hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry.attestation.reader import use_decision_reader
from registry.auth.submit_hook import SeriesOwnership
from registry.evidence_lifecycle import WithdrawalIsFinal
from registry.gate.submit_hook import WaiverRules
from registry.observe.submit_hook import ObservationReview
from registry.records import hooks
from registry.staleness.submit_hooks import RawFilesNotLaundered, StaleOnNewVersion

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from registry.gate.views import DecisionView

# In the order each phase runs them. StaleOnNewVersion precedes ObservationReview (whose
# stale refs replace its own); SeriesOwnership's claim is the event's last row.
SUBMIT_HOOKS: tuple[hooks.SubmitHook, ...] = (
    WaiverRules(),
    WithdrawalIsFinal(),
    RawFilesNotLaundered(),
    StaleOnNewVersion(),
    ObservationReview(),
    SeriesOwnership(),
)


def _read_decision(session: Session, decision_id: str) -> DecisionView:
    # Imported on the first decision: the gate service brings the planner with it.
    from registry.gate.service import get_decision

    return get_decision(session, decision_id, current_revision=None)


def install() -> None:
    hooks.install(SUBMIT_HOOKS)
    use_decision_reader(_read_decision)
