"""Rendering a decision for people (text), and what every report reads of its warnings.

JUnit XML is in :mod:`registry.gate.junit`; GitHub Actions workflow commands, SARIF and
GitLab Code Quality are in :mod:`registry.gate.formats`.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from registry.gate.outcome import DecisionLike

# A policy's note, as the decision lists it among its warnings: "policy.rule: message".
_NOTE = re.compile(r"(?P<policy>[a-z][a-z0-9_]*)\.(?P<rule>[a-z][a-z0-9_]*): (?P<message>.*)", re.S)


class PolicyWarning(NamedTuple):
    policy: str
    rule: str
    message: str


def policy_warning(warning: str) -> PolicyWarning | None:
    """The policy and rule a warning comes from, when it is a policy's note.

    Other warnings (waivers not applied or expiring, stale evidence) are free text.
    """
    match = _NOTE.fullmatch(warning)
    if match is None:
        return None
    return PolicyWarning(match["policy"], match["rule"], match["message"])


def warning_policy(warning: str, policies: list[str]) -> str | None:
    """The policy a warning is about: the one whose note it is, else one it names.

    A waiver's warnings name the policy the waiver is for ("waiver x@v1 for
    drain_configured ..."); stale evidence names none.
    """
    note = policy_warning(warning)
    if note is not None:
        return note.policy if note.policy in policies else None
    for policy in policies:
        if re.search(rf"\b{re.escape(policy)}\b", warning):
            return policy
    return None


def render_text(decision: DecisionLike) -> str:
    """The verdict, then the violations under a heading per policy, what blocks the
    release first (registry.gate.severity), then waived violations in the same order,
    warnings and the inputs decided on."""
    from registry.gate.severity import by_policy, in_order

    lines = [decision.verdict()]
    for group in by_policy(decision.violations):
        count = len(group.violations)
        lines.append(
            f"  {group.policy}: {count} violation{'' if count == 1 else 's'}, {group.severity}"
        )
        lines.extend(
            f"    DENY  [{violation.get('severity')}] {violation.get('policy')}."
            f"{violation.get('rule')}: {violation.get('message')}"
            for violation in group.violations
        )
    for violation in in_order(decision.waived):
        lines.append(
            f"  WAIVED {violation.get('policy')}.{violation.get('rule')}: "
            f"{violation.get('message')} (waiver {violation.get('waived_by')}, owner "
            f"{violation.get('waiver_owner')}, until {violation.get('waiver_expires_at')})"
        )
    lines.extend(f"  warning: {warning}" for warning in decision.warnings)
    inputs = decision.inputs
    if inputs:
        lines.append(
            "  inputs: "
            + ", ".join(
                f"{role} {inputs[role]['ref']}"
                for role in ("plan", "workload", "provider")
                if role in inputs
            )
            + f", {len(inputs.get('evidence', []))} evidence"
        )
        manifests = inputs.get("manifests")
        if manifests:
            lines.append(_manifests_line(manifests))
    release = decision.policy_release or "none approved"
    lines.append(
        f"  bundle {decision.bundle_revision[:19]} (policy release {release}), "
        f"input {decision.input_digest[:19]}"
    )
    return "\n".join(lines)


def _manifests_line(manifests: dict[str, object]) -> str:
    """The manifests compared, their shared folder said once: each file's name below it
    and the start of its digest."""
    from registry.gate.paths import shared_folder, shortened

    files = manifests.get("files") or {}
    compared = f"  manifests: {manifests.get('compared_fields', 0)} fields compared, "
    if not isinstance(files, dict) or not files:
        return compared + "from stdin"
    folder = shared_folder(files)
    listed = ", ".join(
        f"{path.short} ({str(files[path.full])[:19]})" for path in shortened(files, folder)
    )
    return compared + (f"from {folder}: {listed}" if folder else f"from {listed}")


def policy_ids(module_paths: list[str]) -> list[str]:
    """The bundle's policies: one folder each, besides the shared library and the gate."""
    folders = {path.replace("\\", "/").split("/")[0] for path in module_paths if "/" in path}
    return sorted(folders - {"lib", "gate"})
