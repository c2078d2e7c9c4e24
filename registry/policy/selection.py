"""Choosing the policy engine from settings.

Apart from registry.policy.engine (the types every engine shares: the decision, the
error, the input check) so that the engines import those types and this module imports
the engines, never the other way round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registry.policy.engine import PolicyEngine, PolicyError

if TYPE_CHECKING:
    from registry.settings import Settings


def engine_from_settings(settings: Settings) -> PolicyEngine:
    """CAPGATE_POLICY_ENGINE: ``embedded`` (default), or ``opa`` / ``both`` with
    CAPGATE_OPA_URL (``both`` is built by registry.gate.engine_factory)."""
    choice = settings.policy_engine.strip().lower()
    if choice == "embedded":
        from registry.policy.embedded import EmbeddedEngine

        return EmbeddedEngine()
    if choice in ("opa", "both"):
        if not settings.opa_url:
            raise PolicyError(
                f"CAPGATE_POLICY_ENGINE={choice} needs CAPGATE_OPA_URL (the OPA server)"
            )
        if choice == "both":
            raise PolicyError("CAPGATE_POLICY_ENGINE=both is built by engine_for (gate)")
        from registry.policy.opa_server import OpaServerEngine

        return OpaServerEngine(settings.opa_url)
    raise PolicyError(
        f"unknown CAPGATE_POLICY_ENGINE {settings.policy_engine!r}: expected 'embedded', "
        "'opa' or 'both'"
    )
