"""Which roles may call which route: one table, checked before any handler runs.

Reads are open to every role (auditors read everything; the others need to read what
they write). Every write names its roles here; a write route missing from the table is
refused for everyone, so a new route cannot ship unguarded (tests/api/test_access.py
walks every route of the application against this table).
"""

from __future__ import annotations

from registry.auth.identity import ALL_ROLES, Role

READ = ALL_ROLES
SUBMIT = frozenset({Role.submitter})

WRITES: dict[tuple[str, str], frozenset[Role]] = {
    ("POST", "/workloads"): SUBMIT,
    ("POST", "/providers"): SUBMIT,
    ("POST", "/plans"): SUBMIT,
    ("POST", "/evidence"): SUBMIT,
    ("POST", "/evidence/import"): SUBMIT,
    # What production did (capgate observe --submit): engineers, or a scheduled pipeline job.
    ("POST", "/observations"): frozenset({Role.submitter, Role.pipeline}),
    # Requesting a waiver; it applies only once an approver (someone else) approves it.
    ("POST", "/waivers"): frozenset({Role.submitter, Role.approver}),
    ("POST", "/waivers/{ref}/approvals"): frozenset({Role.approver}),
    ("POST", "/plans/{ref}/recomputations"): frozenset({Role.submitter, Role.pipeline}),
    ("POST", "/sizing"): frozenset({Role.submitter, Role.pipeline}),
    ("POST", "/gate/checks"): frozenset({Role.pipeline}),
    ("POST", "/gate/rechecks"): frozenset({Role.pipeline, Role.admin}),
    ("POST", "/evidence/{ref}/withdrawals"): frozenset({Role.admin}),
    # Who owns a series decides who may write it: moving it is an admin's act.
    ("POST", "/owners/{kind}/{name}/transfers"): frozenset({Role.admin}),
    ("POST", "/tokens"): frozenset({Role.admin}),
    # Lifting the quarantine of a known, repaired integrity failure (it is audited).
    ("POST", "/audit/acknowledgements"): frozenset({Role.admin}),
    ("POST", "/tokens/{token_id}/revocation"): frozenset({Role.admin}),
    # Policy releases: submitted by one policy-admin, put in force by another.
    ("POST", "/policy-releases"): frozenset({Role.policy_admin}),
    ("POST", "/policy-releases/{ref}/approvals"): frozenset({Role.policy_admin}),
    # OPA sidecars report the decisions they took: they hold pipeline tokens.
    ("POST", "/decision-logs"): frozenset({Role.pipeline}),
}

# Reads that are narrower than READ.
READS: dict[tuple[str, str], frozenset[Role]] = {
    ("GET", "/tokens"): frozenset({Role.admin, Role.auditor}),
}


def allowed_roles(method: str, path: str) -> frozenset[Role]:
    """The roles allowed on a route (its template, without the /v1 prefix); none if unknown."""
    key = (method.upper(), path.removeprefix("/v1"))
    if key[0] in {"GET", "HEAD"}:
        return READS.get(key, READ)
    return WRITES.get(key, frozenset())
