"""Choosing the policy engine from settings, imported only by what evaluates policies."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from registry.gate.service import Engine
    from registry.settings import Settings


def engine_for(settings: Settings) -> Engine:
    """CAPGATE_POLICY_ENGINE: ``embedded`` (default) or ``opa``: an OPA server at
    CAPGATE_OPA_URL that pulled capgate's signed bundle (registry.policy.opa_server),
    authenticated by a certificate from CAPGATE_OPA_CA_FILE when that is set, and
    presented capgate's client certificate (CAPGATE_OPA_CLIENT_CERT/KEY) when those are."""
    choice = settings.policy_engine.strip().lower()
    if choice in ("opa", "both") and settings.opa_url:
        from registry.policy.opa_server import OpaServerEngine

        opa = OpaServerEngine(
            settings.opa_url,
            ca_file=settings.opa_ca_file,
            client_cert=settings.opa_client_cert,
            client_key=settings.opa_client_key,
        )
        if choice == "opa":
            return opa
        # ``both``: every decision on the embedded engine and on OPA, taken only when equal.
        from registry.policy.dual import DualEngine
        from registry.policy.embedded import EmbeddedEngine

        return DualEngine(EmbeddedEngine(), opa)
    from registry.policy.selection import engine_from_settings

    engine: Engine = engine_from_settings(settings)
    return engine
