"""Choosing the policy engine from settings, imported only by what evaluates policies."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from registry.gate.service import Engine
    from registry.settings import Settings


def engine_for(settings: Settings) -> Engine:
    """CAPGATE_POLICY_ENGINE: ``embedded`` (default) or ``opa``: an OPA server at
    CAPGATE_OPA_URL that pulled capgate's signed bundle (registry.policy.opa_server),
    authenticated by a certificate from CAPGATE_OPA_CA_FILE when that is set."""
    if settings.policy_engine.strip().lower() == "opa" and settings.opa_url:
        from registry.policy.opa_server import OpaServerEngine

        return OpaServerEngine(settings.opa_url, ca_file=settings.opa_ca_file)
    from registry.policy.engine import engine_from_settings

    engine: Engine = engine_from_settings(settings)
    return engine
