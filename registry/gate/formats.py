"""A decision for CI systems that annotate: GitHub Actions workflow commands, SARIF and
GitLab Code Quality.

All say what each finding is with the same id, ``policy.rule``; warnings that are not a
policy's note (waivers not applied or expiring, stale evidence) are ``gate.warning``, and
an evaluation that failed is ``gate.error`` (``gate`` is the bundle's entry point, never a
policy id). None knows which file a plan came from: a caller that does passes it. A
violation whose details name a ``file`` and ``line`` (manifests_consistent: the manifest
that contradicts the plan) is located there instead, where the fix is made. Every path
is written as the caller's ``relative`` names it (the CLI's: relative to the repository
root, as code scanning, annotations and Code Quality expect).

A check that could not decide at all (:class:`registry.gate.undecided.Undecided`) renders
as an error decision without an id: the report says why the pipeline stopped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from typing import Any
from urllib.parse import quote

from registry import __version__
from registry.gate.outcome import DecisionLike, Outcome
from registry.gate.report import policy_warning
from registry.gate.undecided import decision_ref

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
WARNING_RULE = "gate.warning"
ERROR_RULE = "gate.error"
_RULE_TEXT = {
    WARNING_RULE: "A warning of the gate beside the policies' findings (waivers, evidence).",
    ERROR_RULE: "The gate could not decide: an error, never an allow.",
}


def _rule_id(violation: dict[str, Any]) -> str:
    return f"{violation.get('policy')}.{violation.get('rule')}"


def _waiver_text(violation: dict[str, Any]) -> str:
    return (
        f"waiver {violation.get('waived_by')}, owner {violation.get('waiver_owner')}, "
        f"until {violation.get('waiver_expires_at')}"
    )


def _warning_finding(warning: str) -> tuple[str, str]:
    """The rule id and message of a warning."""
    note = policy_warning(warning)
    if note is None:
        return WARNING_RULE, warning
    return f"{note.policy}.{note.rule}", note.message


# ---- GitHub Actions workflow commands ----------------------------------------------------


def escape_data(text: str) -> str:
    """A workflow command's message: %, CR and LF escaped, so it stays one line."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: also : and , which delimit properties."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _as_given(path: str) -> str:
    return path


@dataclass(frozen=True)
class Places:
    """Where a report puts its findings: a violation at the file and line its details
    name, anything else at ``plan_file`` (when known); every path as ``relative`` writes it."""

    plan_file: str | None = None
    relative: Callable[[str], str] = _as_given

    @property
    def plan(self) -> str | None:
        return self.relative(self.plan_file) if self.plan_file else None

    def of(self, violation: dict[str, Any]) -> tuple[str, int] | None:
        """The file and line a violation's details point at, when they name both."""
        details = violation.get("details")
        if not isinstance(details, dict):
            return None
        file, line = details.get("file"), details.get("line")
        if isinstance(file, str) and file and isinstance(line, int) and not isinstance(line, bool):
            return self.relative(file), line
        return None


def places(plan_file: str | None, relative: Callable[[str], str] | None) -> Places:
    return Places(plan_file, relative or _as_given)


def _command(
    kind: str,
    title: str,
    message: str,
    plan_file: str | None,
    source: tuple[str, int] | None = None,
) -> str:
    if source is not None:
        properties = [f"file={escape_property(source[0])}", f"line={source[1]}"]
    else:
        properties = [f"file={escape_property(plan_file)}"] if plan_file else []
    properties.append(f"title={escape_property(title)}")
    return f"::{kind} {','.join(properties)}::{escape_data(message)}"


def render_github(
    decision: DecisionLike,
    *,
    plan_file: str | None = None,
    relative: Callable[[str], str] | None = None,
) -> str:
    """One annotation per finding: ::error per violation, ::warning per warning, ::notice
    per waived violation and for an allow."""
    where = places(plan_file, relative)
    lines = []
    if decision.outcome is Outcome.error:
        lines.append(
            _command(
                "error",
                "capgate error",
                f"{decision.plan}: {decision.error} ({decision_ref(decision)})",
                where.plan,
            )
        )
    for violation in decision.violations:
        lines.append(
            _command(
                "error",
                f"capgate {_rule_id(violation)}",
                str(violation.get("message")),
                where.plan,
                where.of(violation),
            )
        )
    for warning in decision.warnings:
        rule_id, message = _warning_finding(warning)
        title = "capgate warning" if rule_id == WARNING_RULE else f"capgate {rule_id}"
        lines.append(_command("warning", title, message, where.plan))
    for violation in decision.waived:
        lines.append(
            _command(
                "notice",
                f"capgate {_rule_id(violation)} waived",
                f"{violation.get('message')} ({_waiver_text(violation)})",
                where.plan,
                where.of(violation),
            )
        )
    if decision.outcome is Outcome.allow:
        lines.append(_command("notice", "capgate ALLOW", decision.verdict(), where.plan))
    return "\n".join(lines)


# ---- SARIF 2.1.0 -------------------------------------------------------------------------


def render_sarif(
    decision: DecisionLike,
    *,
    plan_file: str | None = None,
    relative: Callable[[str], str] | None = None,
) -> str:
    """A SARIF 2.1.0 log of one run: error per violation, warning per warning, note per
    waived violation (with its waiver as an accepted external suppression).

    A result is located in a file whenever one is known: its manifest's file and line,
    else ``plan_file`` (GitHub code scanning refuses a result with a logical location
    only). An error is an unsuccessful invocation with a tool execution notification."""
    where = places(plan_file, relative)
    common = (
        {"decision": decision.id, "plan": decision.plan} if decision.id else {"plan": decision.plan}
    )
    locations: list[dict[str, Any]] = [
        {"logicalLocations": [{"name": decision.plan, "kind": "resource"}]}
    ]
    if where.plan:
        locations[0]["physicalLocation"] = {"artifactLocation": {"uri": _uri(where.plan)}}
    results: list[dict[str, Any]] = []

    def add(
        rule_id: str,
        level: str,
        message: str,
        properties: dict[str, Any],
        source: tuple[str, int] | None = None,
        **extra: Any,
    ) -> None:
        results.append(
            {
                "ruleId": rule_id,
                "level": level,
                "message": {"text": message},
                "locations": locations if source is None else _located(decision.plan, source),
                **extra,
                "properties": {**common, **properties},
            }
        )

    if decision.outcome is Outcome.error:
        add(ERROR_RULE, "error", decision.error or "error", {})
    for violation in decision.violations:
        add(
            _rule_id(violation),
            "error",
            str(violation.get("message")),
            _numbers(violation),
            where.of(violation),
        )
    for warning in decision.warnings:
        rule_id, message = _warning_finding(warning)
        add(rule_id, "warning", message, {})
    for violation in decision.waived:
        add(
            _rule_id(violation),
            "note",
            str(violation.get("message")),
            {
                **_numbers(violation),
                "waived_by": violation.get("waived_by"),
                "waiver_owner": violation.get("waiver_owner"),
                "waiver_expires_at": violation.get("waiver_expires_at"),
            },
            where.of(violation),
            suppressions=[
                {"kind": "external", "status": "accepted", "justification": _waiver_text(violation)}
            ],
        )

    rule_ids = sorted({result["ruleId"] for result in results})
    results = [
        {"ruleId": result["ruleId"], "ruleIndex": rule_ids.index(result["ruleId"]), **result}
        for result in results
    ]
    moment = decision.created_at
    moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    invocation: dict[str, Any] = {
        "executionSuccessful": decision.outcome is not Outcome.error,
        "endTimeUtc": moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    }
    if decision.outcome is Outcome.error:
        invocation["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": decision.error or "error"}}
        ]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "capgate",
                        "version": __version__,
                        "rules": [_rule(rule_id) for rule_id in rule_ids],
                    }
                },
                "invocations": [invocation],
                "results": results,
                "properties": {
                    **common,
                    "outcome": decision.outcome.value,
                    # Nothing to say of an engine or digests when nothing was decided.
                    **{
                        name: value
                        for name, value in (
                            ("engine", decision.engine),
                            ("bundle_revision", decision.bundle_revision),
                            ("input_digest", decision.input_digest),
                        )
                        if value
                    },
                },
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False)


def _uri(path: str) -> str:
    """A file path as ``artifactLocation.uri``, which SARIF requires to be a URI reference
    (RFC 3986): everything but unreserved characters and "/" percent-encoded (UTF-8), so
    a space, "%", "," or a non-ASCII letter is written %20, %25, %2C, %C3%A9."""
    return quote(path, safe="/")


def _located(plan: str, source: tuple[str, int]) -> list[dict[str, Any]]:
    """A result located at a file and line (a manifest), still naming the plan."""
    return [
        {
            "physicalLocation": {
                "artifactLocation": {"uri": _uri(source[0])},
                "region": {"startLine": source[1]},
            },
            "logicalLocations": [{"name": plan, "kind": "resource"}],
        }
    ]


def _numbers(violation: dict[str, Any]) -> dict[str, Any]:
    """A violation's severity, and its numbers (details) when it has any."""
    out: dict[str, Any] = {"severity": violation.get("severity")}
    if violation.get("details"):
        out["details"] = violation["details"]
    return out


def _rule(rule_id: str) -> dict[str, Any]:
    if rule_id in _RULE_TEXT:
        return {"id": rule_id, "shortDescription": {"text": _RULE_TEXT[rule_id]}}
    policy, _, rule = rule_id.partition(".")
    return {
        "id": rule_id,
        "shortDescription": {"text": f"capgate policy {policy}, rule {rule}"},
        "properties": {"policy": policy, "rule": rule},
    }


# ---- GitLab Code Quality -----------------------------------------------------------------

# capgate's severities as GitLab's (info, minor, major, critical, blocker). A violation
# denies the release: never below major. An unknown severity is major.
GITLAB_SEVERITY = {"critical": "blocker", "high": "critical", "medium": "major", "low": "major"}


def gitlab_fingerprint(plan: str, rule_id: str, subject: str) -> str:
    """A finding's identity: the same rule on the same field (or message) of the same plan
    version has the same fingerprint in every run."""
    return hashlib.sha256("\x00".join((plan, rule_id, subject)).encode("utf-8")).hexdigest()


def render_gitlab(
    decision: DecisionLike,
    *,
    plan_file: str | None = None,
    relative: Callable[[str], str] | None = None,
) -> str:
    """A GitLab Code Quality report: a JSON array with an issue per violation and per
    warning (info for a policy's note, minor for the gate's free text) and, for an error,
    a blocker. Waived violations are accepted and left out; an allow with no warning is
    ``[]``. An issue is located at its manifest's file and line when it names one, else at
    ``plan_file`` (line 1), else at the plan reference itself."""
    where = places(plan_file, relative)
    issues: list[dict[str, Any]] = []
    seen: dict[str, int] = {}

    def add(
        rule_id: str,
        severity: str,
        message: str,
        subject: str,
        source: tuple[str, int] | None = None,
    ) -> None:
        fingerprint = gitlab_fingerprint(decision.plan, rule_id, subject)
        repeat = seen.get(fingerprint, 0)
        seen[fingerprint] = repeat + 1
        if repeat:  # two findings alike: still one fingerprint each, the same every run
            fingerprint = gitlab_fingerprint(decision.plan, rule_id, f"{subject}#{repeat}")
        path, line = source if source is not None else (where.plan or decision.plan, 1)
        issues.append(
            {
                "description": message,
                "check_name": rule_id,
                "fingerprint": fingerprint,
                "severity": severity,
                "location": {"path": path, "lines": {"begin": line}},
            }
        )

    if decision.outcome is Outcome.error:
        error = decision.error or "error"
        add(ERROR_RULE, "blocker", f"capgate could not decide: {error}", "error")
    for violation in decision.violations:
        message = str(violation.get("message"))
        details = violation.get("details")
        field = details.get("field") if isinstance(details, dict) else None
        add(
            _rule_id(violation),
            GITLAB_SEVERITY.get(str(violation.get("severity")), "major"),
            message,
            field if isinstance(field, str) and field else message,
            where.of(violation),
        )
    for warning in decision.warnings:
        rule_id, message = _warning_finding(warning)
        add(rule_id, "minor" if rule_id == WARNING_RULE else "info", message, message)
    return json.dumps(issues, indent=2, ensure_ascii=False)
