"""What else a decision weighed, in words for the report: the manifests that ship (checked or
not, and which fields disagree) and the production signal, read from the decision's stored
input document.
"""

from __future__ import annotations

from typing import Any


def _said(value: Any) -> str:
    """A value the manifests state, as the gate's messages write it (no Python repr)."""
    return (
        "not set"
        if value is None
        else str(value).lower()
        if isinstance(value, bool)
        else str(value)
    )


def weighed_in_words(document: dict[str, Any]) -> list[tuple[str, str]]:
    """The manifests and the production signal the decision's input held, in words."""
    out = []
    manifests = document.get("manifests")
    if isinstance(manifests, dict):
        if manifests.get("checked"):
            found = manifests.get("discrepancies") or []
            out.append(
                (
                    "manifests that ship",
                    f"checked: {len(found)} field(s) disagree with the plan"
                    + "".join(
                        f"; {d.get('field')} = {_said(d.get('manifests'))} at {d.get('file')}:"
                        f"{d.get('line')}"
                        for d in found
                    ),
                )
            )
        else:
            out.append(("manifests that ship", "not checked (gate check without --manifests)"))
    production = document.get("production")
    if isinstance(production, dict):
        if production.get("observed"):
            drift = production.get("drift") or []
            misses = production.get("slo_misses") or []
            out.append(
                (
                    "production signal",
                    f"observation {production.get('observation')} (window ending "
                    f"{production.get('window_end')}): {len(drift)} material drift(s), "
                    f"{len(misses)} SLO miss(es)",
                )
            )
        else:
            out.append(("production signal", "no observation of production"))
    return out
