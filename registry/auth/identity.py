"""The verified principal behind a request: subject, roles and teams."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from registry.errors import FieldProblem, Forbidden, InvalidInput


class Role(StrEnum):
    submitter = "submitter"  # records and evidence
    pipeline = "pipeline"  # gate checks
    approver = "approver"  # waiver approvals
    auditor = "auditor"  # reads everything, writes nothing
    admin = "admin"  # tokens, withdrawals
    policy_admin = "policy-admin"  # policy releases (four eyes)


ALL_ROLES = frozenset(Role)


def parse_roles(values: Iterable[str], *, field: str = "roles") -> frozenset[Role]:
    roles = set()
    for value in values:
        try:
            roles.add(Role(value))
        except ValueError:
            known = ", ".join(r.value for r in Role)
            raise InvalidInput(
                "unknown role", problems=[FieldProblem(field, f"{value!r} is not one of {known}")]
            ) from None
    return frozenset(roles)


@dataclass(frozen=True)
class Identity:
    """`teams` None means unrestricted: the trusted local user of an embedded registry."""

    subject: str
    roles: frozenset[Role]
    teams: frozenset[str] | None
    via: str

    def require(self, allowed: frozenset[Role], what: str) -> None:
        if not self.roles & allowed:
            needs = " or ".join(sorted(r.value for r in allowed))
            has = ", ".join(sorted(r.value for r in self.roles)) or "none"
            raise Forbidden(f"{self.subject} (roles: {has}) may not {what}: it needs {needs}")

    def member_of(self, team: str) -> bool:
        return self.teams is None or team in self.teams


def local_identity(subject: str) -> Identity:
    """Direct access to the registry's database is the trust boundary of local use."""
    return Identity(subject=subject, roles=ALL_ROLES, teams=None, via="local")
