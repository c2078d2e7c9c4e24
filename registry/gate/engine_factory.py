"""Choosing the policy engine from settings, imported only by what evaluates policies."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from registry.gate.service import Engine
    from registry.settings import Settings


def engine_for(settings: Settings) -> Engine:
    from registry.policy.engine import engine_from_settings

    engine: Engine = engine_from_settings(settings)
    return engine
