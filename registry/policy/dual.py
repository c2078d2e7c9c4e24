"""Both engines on every decision: OPA's Wasm in process and a real OPA server.

``CAPGATE_POLICY_ENGINE=both`` (or ``capgate gate check --engine both``) decides every
input on the embedded engine and on the OPA server and takes the decision only when the
two are identical (allow, every violation and note with its message and details). A
difference is an error naming the first one, never either answer: the two engines are
meant to be one policy truth (docs/opa.md), and a disagreement in production says that
one of them is not running what capgate thinks. Either engine failing is an error too.
"""

from __future__ import annotations

import json
from typing import Any

from registry.policy.embedded import EmbeddedEngine
from registry.policy.engine import PolicyDecision, PolicyError
from registry.policy.opa_server import OpaServerEngine


def first_difference(embedded: PolicyDecision, opa: PolicyDecision) -> str | None:
    """Where two decisions differ, in words; None when they are identical."""
    if embedded.allow != opa.allow:
        return f"allow: embedded {embedded.allow}, opa {opa.allow}"
    for part in ("violations", "notes"):
        mine = [item.model_dump() for item in getattr(embedded, part)]
        theirs = [item.model_dump() for item in getattr(opa, part)]
        for item in mine:
            if item not in theirs:
                return f"{part}: only the embedded engine has {json.dumps(item)[:400]}"
        for item in theirs:
            if item not in mine:
                return f"{part}: only OPA has {json.dumps(item)[:400]}"
    return None


class DualEngine:
    """The embedded engine and an OPA server deciding together; a disagreement is an error."""

    name = "both"

    def __init__(self, embedded: EmbeddedEngine, opa: OpaServerEngine) -> None:
        if embedded.revision != opa.revision:
            raise PolicyError(
                f"engines both: the embedded engine runs {embedded.revision}, the OPA engine "
                f"expects {opa.revision}"
            )
        self.embedded = embedded
        self.opa = opa

    @property
    def revision(self) -> str:
        return self.embedded.revision

    def decide(self, input: dict[str, Any]) -> PolicyDecision:
        mine = self.embedded.decide(input)
        theirs = self.opa.decide(input)
        if mine == theirs:  # both sorted by decision_from_result: the common case, cheap
            return mine
        difference = first_difference(mine, theirs)
        if difference is not None:
            raise PolicyError(
                f"engines both: the embedded engine and OPA at {self.opa.url} disagree, so "
                f"neither answer is taken: {difference}"
            )
        return mine
