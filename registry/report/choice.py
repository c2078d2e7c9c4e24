"""Which decision a report on a plan version shows, and what it says about the others.

A release report must not flip because an engineer ran one exploratory `gate check` on the
plan. So, unless a decision or a principal is asked for, the report shows the plan
version's latest decision taken by a principal holding the `pipeline` role, as far as the
registry can tell who held it:

- an API token (active or not now) for the decision's principal, granting `pipeline`, that
  was valid when the decision was taken (created before it, not yet expired or revoked);
- the auth configuration (`capgate serve --auth-config`), for a grant of `pipeline` that
  matches on the subject claim alone (a grant on other claims cannot be judged from the
  principal a decision records).

A registry that knows no roles (no API tokens, no auth configuration: local use) cannot
tell, and the report keeps to the latest decision. Whatever is shown, the report says which
decision it is (id, principal, time), why that one, and names a newer decision when there
is one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from fnmatch import fnmatchcase

from sqlalchemy.orm import Session

from registry.auth.config import AuthConfig
from registry.auth.identity import Role
from registry.auth.tokens import list_tokens
from registry.errors import FieldProblem, InvalidInput, NotFound
from registry.gate.service import list_decisions
from registry.gate.views import DecisionView

PAGE = 200  # decisions read at a time while looking for the latest pipeline one


@dataclass(frozen=True)
class DecisionRef:
    """A decision named in a sentence: which, what, by whom and when."""

    id: str
    plan: str
    outcome: str
    principal: str
    created_at: datetime

    @classmethod
    def of(cls, view: DecisionView) -> DecisionRef:
        return cls(view.id, view.plan, view.outcome.value, view.principal, view.created_at)

    def words(self) -> str:
        return (
            f"decision {self.id} ({self.outcome.upper()}), taken "
            f"{self.created_at:%Y-%m-%d %H:%M:%S} UTC by {self.principal}"
        )


@dataclass(frozen=True)
class PipelineRoles:
    """Who held the `pipeline` role when, as the registry's tokens and auth config say."""

    tokens: tuple[tuple[str, datetime, datetime, datetime | None], ...]
    # (subject prefix, pattern on the rest of the subject) of config grants of `pipeline`.
    subject_grants: tuple[tuple[str, str], ...]
    known: bool  # the registry knows some principal's roles (tokens or a configuration)
    sources: str  # where the roles come from, in words

    @classmethod
    def read(cls, session: Session, auth_config: AuthConfig | None) -> PipelineRoles:
        every = list_tokens(session, include_revoked=True)
        tokens = tuple(
            (t.subject, t.created_at, t.expires_at, t.revoked_at)
            for t in every
            if Role.pipeline.value in t.roles
        )
        grants: list[tuple[str, str]] = []
        issuers = auth_config.issuers if auth_config is not None else []
        for issuer in issuers:
            for grant in issuer.grants:
                if Role.pipeline in grant.roles and set(grant.match) == {issuer.subject_claim}:
                    grants.append((issuer.subject_prefix, grant.match[issuer.subject_claim]))
        sources = [
            name
            for name, present in (("the API tokens", bool(every)), ("--auth-config", bool(issuers)))
            if present
        ]
        return cls(tokens, tuple(grants), bool(sources), " and ".join(sources))

    def holds_pipeline(self, principal: str, at: datetime) -> bool:
        for subject, created, expires, revoked in self.tokens:
            if (
                subject == principal
                and created <= at < expires
                and (revoked is None or at < revoked)
            ):
                return True
        return any(
            principal.startswith(prefix) and fnmatchcase(principal[len(prefix) :], pattern)
            for prefix, pattern in self.subject_grants
        )


@dataclass(frozen=True)
class DecisionChoice:
    """The decision a report shows, why, and the decisions a reader should know of."""

    shown: DecisionRef
    why: str
    newer: DecisionRef | None = None  # the newest decision on the version after the shown one
    newer_count: int = 0  # how many were taken after it (0 when not counted)
    newer_note: str = ""  # about the newer one's principal, e.g. "holds no pipeline role"
    other: DecisionRef | None = None  # the latest by another principal, when shown is latest

    def sentences(self) -> list[str]:
        """What the report and the CLI say about the choice, one sentence each."""
        out = [f"This report shows {self.shown.words()}: {self.why}."]
        if self.newer is not None:
            more = self.newer_count - 1
            also = (
                f" ({more} other newer decision{'s' if more > 1 else ''} too)" if more > 0 else ""
            )
            note = f", {self.newer_note}" if self.newer_note else ""
            out.append(
                f"A newer {self.newer.words()}{note}{also}; "
                f"`capgate report {self.newer.plan} --decision {self.newer.id}` reports on it."
            )
        if self.other is not None:
            out.append(
                f"Another principal decided on this plan version too: {self.other.words()}; "
                f"`capgate report {self.other.plan} --principal {self.other.principal}` "
                "reports on that principal's latest."
            )
        return out


def refuse_both(decision_id: str | None, principal: str | None) -> None:
    """--decision names a decision and --principal chooses one: both at once is an error."""
    if decision_id is not None and principal is not None:
        raise InvalidInput(
            "give --decision or --principal, not both",
            problems=[
                FieldProblem(
                    "principal",
                    "--decision names the decision to report on; --principal chooses one: "
                    "give one of them",
                )
            ],
        )


def _decisions(session: Session, plan: str, current_revision: str | None) -> Iterator[DecisionView]:
    """The plan version's decisions, newest first, read a page at a time."""
    cursor: str | None = None
    while True:
        page = list_decisions(
            session, plan=plan, limit=PAGE, cursor=cursor, current_revision=current_revision
        )
        yield from page.items
        if not page.next_cursor:
            return
        cursor = page.next_cursor


def _newer(
    session: Session, shown: DecisionView, current_revision: str | None
) -> tuple[DecisionRef | None, int]:
    """The newest decision on the shown one's plan version taken after it, and how many."""
    newest: DecisionRef | None = None
    count = 0
    for view in _decisions(session, shown.plan, current_revision):
        if view.id == shown.id or view.created_at < shown.created_at:
            break
        newest = newest or DecisionRef.of(view)
        count += 1
    return newest, count


def _other(
    session: Session, shown: DecisionView, current_revision: str | None
) -> DecisionRef | None:
    """The latest decision on the version by a principal other than the shown one's."""
    for view in _decisions(session, shown.plan, current_revision):
        if view.principal != shown.principal:
            return DecisionRef.of(view)
    return None


def choose(
    session: Session,
    *,
    plan_pinned: str,
    asked: DecisionView | None,
    principal: str | None,
    auth_config: AuthConfig | None,
    current_revision: str | None,
) -> tuple[str | None, DecisionChoice | None]:
    """The id of the decision to report on (None: there is none) and what to say of it.

    ``asked``: the decision named with --decision (already read); ``principal``: report on
    that principal's latest decision on ``plan_pinned`` (give one of them, see
    refuse_both). Raises NotFound when the principal took no decision on it.
    """
    if asked is not None:
        newer, count = _newer(session, asked, current_revision)
        return asked.id, DecisionChoice(
            DecisionRef.of(asked), "the decision asked for", newer, count
        )
    if principal is not None:
        page = list_decisions(
            session,
            plan=plan_pinned,
            principal=principal,
            limit=1,
            current_revision=current_revision,
        )
        if not page.items:
            raise NotFound(f"no decision on {plan_pinned} was taken by {principal}")
        chosen = page.items[0]
        newer, count = _newer(session, chosen, current_revision)
        return chosen.id, DecisionChoice(
            DecisionRef.of(chosen),
            f"the latest on {plan_pinned} by {principal} (--principal)",
            newer,
            count,
        )
    roles = PipelineRoles.read(session, auth_config)
    latest: DecisionView | None = None
    newer_views: list[DecisionView] = []
    if roles.known:
        for view in _decisions(session, plan_pinned, current_revision):
            latest = latest or view
            if roles.holds_pipeline(view.principal, view.created_at):
                newest = DecisionRef.of(newer_views[0]) if newer_views else None
                return view.id, DecisionChoice(
                    DecisionRef.of(view),
                    f"the latest on {plan_pinned} by a principal holding the pipeline role "
                    f"(as {roles.sources} say)",
                    newest,
                    len(newer_views),
                    "by a principal holding no pipeline role" if newest else "",
                )
            newer_views.append(view)
        why = (
            f"the latest on {plan_pinned}; none was taken by a principal holding the "
            f"pipeline role (as {roles.sources} say)"
        )
    else:
        page = list_decisions(session, plan=plan_pinned, limit=1, current_revision=current_revision)
        latest = page.items[0] if page.items else None
        why = (
            f"the latest on {plan_pinned}; this registry knows no principal's roles (no API "
            "tokens, no --auth-config), so which decisions a release pipeline took cannot be "
            "told: --decision ID or --principal NAME chooses"
        )
    if latest is None:
        return None, None
    return latest.id, DecisionChoice(
        DecisionRef.of(latest), why, other=_other(session, latest, current_revision)
    )
