"""Rendering a decision for people (text) and for CI systems (JUnit XML).

GitHub Actions workflow commands and SARIF are in :mod:`registry.gate.formats`.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from registry.gate.outcome import DecisionLike, Outcome

if TYPE_CHECKING:
    from xml.etree import ElementTree as ET

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
    lines = [decision.verdict()]
    for violation in decision.violations:
        lines.append(
            f"  DENY  [{violation.get('severity')}] {violation.get('policy')}."
            f"{violation.get('rule')}: {violation.get('message')}"
        )
    for violation in decision.waived:
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
    release = decision.policy_release or "none approved"
    lines.append(
        f"  bundle {decision.bundle_revision[:19]} (policy release {release}), "
        f"input {decision.input_digest[:19]}"
    )
    return "\n".join(lines)


def render_junit(decision: DecisionLike, policy_ids: list[str]) -> str:
    """One test case per policy: failed when it has unwaived violations.

    Warnings are where CI systems show them: each in the system-out of the test case of
    the policy it is about, and all of them as suite properties named ``warning`` and
    in the suite's system-err.
    """
    from xml.etree import ElementTree as ET  # only this format needs it

    suite = ET.Element(
        "testsuite",
        name=f"capgate gate {decision.plan}",
        tests=str(len(policy_ids) if decision.outcome is not Outcome.error else 1),
        failures=str(len({str(v.get("policy")) for v in decision.violations})),
        errors="1" if decision.outcome is Outcome.error else "0",
        timestamp=decision.created_at.isoformat(),
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("decision", decision.id),
        ("outcome", decision.outcome.value),
        ("engine", decision.engine),
        ("bundle_revision", decision.bundle_revision),
        ("input_digest", decision.input_digest),
        *(("warning", warning) for warning in decision.warnings),
    ):
        ET.SubElement(properties, "property", name=name, value=value)
    if decision.outcome is Outcome.error:
        case = ET.SubElement(suite, "testcase", classname="capgate.gate", name="evaluate")
        error = ET.SubElement(case, "error", message=decision.error or "error")
        error.text = decision.error
        _system_out(case, [], decision.warnings)
    else:
        for policy in policy_ids:
            case = ET.SubElement(suite, "testcase", classname="capgate.policies", name=policy)
            failed = [v for v in decision.violations if v.get("policy") == policy]
            waived = [v for v in decision.waived if v.get("policy") == policy]
            warnings = [w for w in decision.warnings if warning_policy(w, policy_ids) == policy]
            if failed:
                failure = ET.SubElement(
                    case,
                    "failure",
                    message="; ".join(str(v.get("message")) for v in failed),
                    type=str(failed[0].get("severity")),
                )
                failure.text = json.dumps(failed, indent=2)
            _system_out(case, waived, warnings)
    if decision.warnings:
        ET.SubElement(suite, "system-err").text = "\n".join(decision.warnings)
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode")


def _system_out(case: ET.Element, waived: list[dict[str, Any]], warnings: list[str]) -> None:
    """A test case's output: its waived violations, then its warnings, one per line."""
    from xml.etree import ElementTree as ET

    parts = [f"warning: {warning}" for warning in warnings]
    if waived:
        parts.insert(0, "waived: " + json.dumps(waived, indent=2))
    if parts:
        ET.SubElement(case, "system-out").text = "\n".join(parts)


def policy_ids(module_paths: list[str]) -> list[str]:
    """The bundle's policies: one folder each, besides the shared library and the gate."""
    folders = {path.replace("\\", "/").split("/")[0] for path in module_paths if "/" in path}
    return sorted(folders - {"lib", "gate"})
