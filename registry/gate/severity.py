"""Violations in the order a reader fixes them: by severity, then by policy.

The text verdict, the report and the /ui pages group a decision's violations under one
heading per policy, the policy holding the most severe violation first (critical, high,
medium, low; an unknown severity after low), ties by policy name; within a policy, by
severity, then rule, then the order the decision lists them. The stored decision and
its machine formats (JSON, SARIF, JUnit, GitLab Code Quality) keep the decision's own
order: consumers diff and fingerprint them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

SEVERITIES = ("critical", "high", "medium", "low")


def severity_rank(severity: object) -> int:
    """0 for critical ... 3 for low; an unknown severity ranks after low."""
    return SEVERITIES.index(severity) if severity in SEVERITIES else len(SEVERITIES)


def _key(violation: dict[str, Any]) -> tuple[int, str, str]:
    return (
        severity_rank(violation.get("severity")),
        str(violation.get("policy")),
        str(violation.get("rule")),
    )


def in_order(violations: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The violations by severity, then policy, then rule (a stable sort)."""
    return sorted(violations, key=_key)


@dataclass(frozen=True)
class PolicyGroup:
    """One policy's violations under one heading."""

    policy: str
    severity: str  # the most severe of its violations
    violations: list[dict[str, Any]]


def by_policy(violations: Iterable[dict[str, Any]]) -> list[PolicyGroup]:
    """One group per policy, the group with the most severe violation first."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for violation in in_order(violations):
        groups.setdefault(str(violation.get("policy")), []).append(violation)
    out = [
        PolicyGroup(policy, str(items[0].get("severity")), items)
        for policy, items in groups.items()
    ]
    return sorted(out, key=lambda g: (severity_rank(g.severity), g.policy))
