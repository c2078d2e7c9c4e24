"""A decision as a JUnit XML report, for test report views (GitLab, Jenkins, ...).

A policy without violations is one passing test case named after it; a policy with
violations is one failed test case per violation, named ``policy.rule`` (with the field
a violation is about, or its rank, where the same rule fails more than once), so a test
report view lists every finding and compares them across pipelines. A test case carries
``file`` (and ``line``) where its finding is located, as the SARIF and GitLab reports
place it. An error (a decision that failed, or a check that could not decide) is one
test case in error.

Warnings are where CI systems show them: each in the system-out of the first test case
of the policy it is about (beside the policy's waived violations), and all of them as
suite properties named ``warning`` and in the suite's system-err.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from xml.etree import ElementTree as ET

from registry.gate.formats import Places, places
from registry.gate.outcome import DecisionLike, Outcome
from registry.gate.report import warning_policy


def render_junit(
    decision: DecisionLike,
    policy_ids: list[str],
    *,
    plan_file: str | None = None,
    relative: Callable[[str], str] | None = None,
) -> str:
    where = places(plan_file, relative)
    suite = ET.Element("testsuite", name=f"capgate gate {decision.plan}")
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("decision", decision.id),
        ("outcome", decision.outcome.value),
        ("engine", decision.engine),
        ("bundle_revision", decision.bundle_revision),
        ("input_digest", decision.input_digest),
        *(("warning", warning) for warning in decision.warnings),
    ):
        if value:  # a check that could not decide has no id, engine or digests
            ET.SubElement(properties, "property", name=name, value=value)
    if decision.outcome is Outcome.error:
        case = _case(suite, "capgate.gate", "evaluate", where.plan)
        error = ET.SubElement(case, "error", message=decision.error or "error")
        error.text = decision.error
        _system_out(case, [], decision.warnings)
    else:
        for policy in policy_ids:
            _policy_cases(suite, decision, policy, policy_ids, where)
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(case.find("failure") is not None for case in cases)))
    suite.set("errors", str(sum(case.find("error") is not None for case in cases)))
    suite.set("timestamp", decision.created_at.isoformat())
    if decision.warnings:
        ET.SubElement(suite, "system-err").text = "\n".join(decision.warnings)
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode")


def _policy_cases(
    suite: ET.Element, decision: DecisionLike, policy: str, policy_ids: list[str], where: Places
) -> None:
    """A passing case for a policy without violations, else a failed case per violation;
    the policy's waived violations and warnings go to its first case."""
    failed = [v for v in decision.violations if v.get("policy") == policy]
    waived = [v for v in decision.waived if v.get("policy") == policy]
    warnings = [w for w in decision.warnings if warning_policy(w, policy_ids) == policy]
    if not failed:
        _system_out(_case(suite, "capgate.policies", policy, where.plan), waived, warnings)
        return
    names = _case_names(failed)
    for rank, (violation, name) in enumerate(zip(failed, names, strict=True)):
        source = where.of(violation)
        case = _case(
            suite,
            "capgate.policies",
            name,
            source[0] if source else where.plan,
            source[1] if source else None,
        )
        failure = ET.SubElement(
            case,
            "failure",
            message=str(violation.get("message")),
            type=str(violation.get("severity")),
        )
        failure.text = json.dumps(violation, indent=2, ensure_ascii=False)
        if rank == 0:
            _system_out(case, waived, warnings)


def _case_names(violations: list[dict[str, Any]]) -> list[str]:
    """``policy.rule``; where a rule fails more than once, with the field each violation
    is about (``policy.rule[field]``), and where that still repeats, with a rank (``[2]``)."""
    rule_ids = [f"{v.get('policy')}.{v.get('rule')}" for v in violations]
    names = []
    for rule_id, violation in zip(rule_ids, violations, strict=True):
        details = violation.get("details")
        field = details.get("field") if isinstance(details, dict) else None
        repeated = rule_ids.count(rule_id) > 1 and isinstance(field, str) and field
        names.append(f"{rule_id}[{field}]" if repeated else rule_id)
    return [
        name if names.count(name) == 1 else f"{name}[{names[:rank].count(name) + 1}]"
        for rank, name in enumerate(names)
    ]


def _case(
    suite: ET.Element, classname: str, name: str, file: str | None, line: int | None = None
) -> ET.Element:
    case = ET.SubElement(suite, "testcase", classname=classname, name=name)
    if file:
        case.set("file", file)
        if line is not None:
            case.set("line", str(line))
    return case


def _system_out(case: ET.Element, waived: list[dict[str, Any]], warnings: list[str]) -> None:
    """A test case's output: its waived violations, then its warnings, one per line."""
    parts = [f"warning: {warning}" for warning in warnings]
    if waived:
        parts.insert(0, "waived: " + json.dumps(waived, indent=2))
    if parts:
        ET.SubElement(case, "system-out").text = "\n".join(parts)
