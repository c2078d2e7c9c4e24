"""`capgate evidence import|list --stale|history` and `capgate workload from-trace`."""

from __future__ import annotations

import typer


def extend_evidence(group: typer.Typer) -> None:
    """Add the evidence commands beyond submit/show/list/versions to `group`."""


def extend_workload(group: typer.Typer) -> None:
    """Add `from-trace` to the workload group."""
