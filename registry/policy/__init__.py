"""Policy engines: the gate's Rego bundle as OPA's Wasm build in process, or on OPA servers."""

from registry.policy.bundle import PolicyBundle, load_bundle
from registry.policy.engine import (
    PolicyDecision,
    PolicyEngine,
    PolicyError,
    Violation,
)
from registry.policy.selection import engine_from_settings

__all__ = [
    "PolicyBundle",
    "PolicyDecision",
    "PolicyEngine",
    "PolicyError",
    "Violation",
    "engine_from_settings",
    "load_bundle",
]
