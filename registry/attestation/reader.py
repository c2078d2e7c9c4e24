"""How a stored decision is read back as the API shows it, for attestation to sign.

The gate imports registry.attestation.store to attest each decision it stores, so that
module cannot import the gate's reader back: registry.wiring installs it here at
start-up (registry.gate.service.get_decision). Apart from the store so that installing
it does not load the signing code (the CLI must start fast).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from registry.errors import Unavailable

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from registry.gate.views import DecisionView

DecisionReader = Callable[["Session", str], "DecisionView"]
_installed: DecisionReader | None = None


def use_decision_reader(reader: DecisionReader) -> None:
    """Set how a decision is read back by id (registry.wiring.install; replaces any)."""
    global _installed
    _installed = reader


def decision_reader() -> DecisionReader:
    if _installed is None:
        # Refused rather than stored unsigned: the decision is not taken.
        raise Unavailable(
            "decisions cannot be attested: the decision reader was never installed "
            "(registry.wiring.install)"
        )
    return _installed
