"""Read-only pages for people under /ui/ (issue 15): server-side HTML, no script.

Rendered by the report's Jinja2 environment (registry.report.render), every page extends
``base.html`` through ``ui/layout.html``; charts are the report's inline SVG.

Access is the API's: a page needs the same verified identity a /v1 read does. A browser
sends no bearer token of its own, so the pages are reached either on a server started
with ``capgate serve --insecure-local`` (loopback only: a request without a credential
acts as the local user, as the CLI does on the database) or through a reverse proxy (an
OIDC proxy) that adds ``Authorization: Bearer ...`` to every request. Without a
credential any other server answers 401: the pages are never open on a non-loopback
server. Reads are open to every role (registry.auth.access), as in the API.

Every error is a page too, with the error's status: an invalid filter is a 422 naming
the field and what is wrong, an unknown plan or decision a 404, a refusal 401 or 403.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from registry.api.deps import get_identity
from registry.auth.access import allowed_roles
from registry.errors import CapgateError, FieldProblem, InvalidInput, Unauthenticated
from registry.gate.outcome import Outcome
from registry.policy.bundle import installed_revision
from registry.storage.database import Database

Page = tuple[str, dict[str, Any]]

DECISION_FILTERS = ("plan", "outcome", "since", "until", "principal")
DECISIONS_PER_PAGE = 50
MAX_FILTER_CHARS = 256
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


def _render(request: Request, status: int, template: str, context: dict[str, Any]) -> HTMLResponse:
    from registry.report.render import render

    html = render(template, request_path=request.url.path, **context)
    headers = {"Cache-Control": "no-store"}
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return HTMLResponse(html, status_code=status, headers=headers)


def _page(
    request: Request,
    build: Callable[[Database], Page],
    invalid: Callable[[InvalidInput], Page] | None = None,
) -> HTMLResponse:
    """Authenticate as the API does, then build the page; any capgate error is a page
    (``invalid``, when given, draws invalid input on the page itself, still a 422)."""
    try:
        identity = get_identity(request)
        route = request.scope.get("route")
        path = getattr(route, "path_format", request.url.path)
        identity.require(allowed_roles(request.method, path), f"{request.method} {path}")
        template, context = build(request.app.state.database)
    except InvalidInput as exc:
        if invalid is None:
            return _error(request, exc)
        template, context = invalid(exc)
        return _render(request, 422, template, context)
    except CapgateError as exc:
        return _error(request, exc)
    return _render(request, 200, template, context)


def _error(request: Request, exc: CapgateError) -> HTMLResponse:
    problems = exc.problems if isinstance(exc, InvalidInput) else []
    return _render(
        request,
        exc.status_code,
        "ui/error.html",
        {
            "status": exc.status_code,
            "message": exc.message,
            "problems": problems,
            "unauthenticated": isinstance(exc, Unauthenticated),
        },
    )


def _instant(name: str, text: str, *, end_of_day: bool) -> datetime:
    """A date (YYYY-MM-DD, the whole day in UTC) or an RFC 3339 date-time."""
    text = text.strip()
    if _DATE.fullmatch(text):
        try:
            day = date.fromisoformat(text)
        except ValueError:
            raise _invalid(name, f"{text!r} is not a date") from None
        start = datetime.combine(day, time(0), tzinfo=UTC)
        return start + timedelta(days=1) if end_of_day else start
    if not _DATE_TIME.match(text):
        raise _invalid(name, f"{text!r} is not a date (YYYY-MM-DD) or a date-time")
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise _invalid(name, f"{text!r} is not a date (YYYY-MM-DD) or a date-time") from None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _invalid(name: str, message: str) -> InvalidInput:
    return InvalidInput(f"invalid filter: {name}", problems=[FieldProblem(name, message)])


def decision_filters(query: dict[str, str]) -> dict[str, Any]:
    """The decision listing's filters from the form's query; blank fields filter nothing."""
    unknown = sorted(set(query) - {*DECISION_FILTERS, "cursor"})
    if unknown:
        raise InvalidInput(
            "unknown query parameter(s): " + ", ".join(unknown),
            problems=[FieldProblem(k, "not a filter of this page") for k in unknown],
        )
    problems: list[FieldProblem] = []
    values: dict[str, Any] = {}
    for key in DECISION_FILTERS:
        text = query.get(key, "").strip()
        if not text:
            continue
        if len(text) > MAX_FILTER_CHARS or "\x00" in text:
            problems.append(FieldProblem(key, f"at most {MAX_FILTER_CHARS} characters, no NUL"))
            continue
        try:
            if key == "outcome":
                if text.lower() not in {o.value for o in Outcome}:
                    raise _invalid(key, f"{text!r} is not one of allow, deny, error")
                values[key] = Outcome(text.lower())
            elif key in {"since", "until"}:
                values[key] = _instant(key, text, end_of_day=key == "until")
            else:
                values[key] = text
        except InvalidInput as exc:
            problems.extend(exc.problems)
    since, until = values.get("since"), values.get("until")
    if since is not None and until is not None and since >= until:
        problems.append(FieldProblem("until", "must be after since"))
    if problems:
        raise InvalidInput(
            "invalid filter: " + ", ".join(p.loc for p in problems), problems=problems
        )
    return values


def ui_router() -> APIRouter:
    router = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)

    @router.get("/")
    def index(request: Request) -> HTMLResponse:
        return _page(request, lambda _db: ("ui/index.html", {}))

    @router.get("/plans")
    def plans(request: Request) -> HTMLResponse:
        def build(database: Database) -> Page:
            from registry.gate.service import list_decisions
            from registry.records.kinds import RecordKind
            from registry.records.service import MAX_PAGE, list_series

            with database.reading() as session:
                page = list_series(session, kind=RecordKind.plan, limit=MAX_PAGE)
                # Each plan's latest decision, on any of its versions: one indexed read
                # per plan listed (at most MAX_PAGE), newest first by the listing's order.
                latest = {
                    series.name: next(
                        iter(list_decisions(session, plan=series.name, limit=1).items), None
                    )
                    for series in page.items
                }
            return "ui/plans.html", {"plans": page.items, "total": page.total, "latest": latest}

        return _page(request, build)

    @router.get("/plans/{name}")
    def plan(request: Request, name: str) -> HTMLResponse:
        def build(database: Database) -> Page:
            from registry.audit.service import list_events
            from registry.gate.service import list_decisions
            from registry.records.kinds import RecordKind
            from registry.records.service import MAX_PAGE, list_versions

            with database.reading() as session:
                versions = list_versions(session, kind=RecordKind.plan, name=name, limit=MAX_PAGE)
                decisions = list_decisions(session, plan=name, limit=10)
                # Outcomes a new policy release changed (registry.gate.recheck): for review.
                changed = [
                    event
                    for event in list_events(
                        session, action="gate.outcome_changed", limit=MAX_PAGE
                    ).items
                    if str(event.payload.get("plan", "")).rsplit("@", 1)[0] == name
                ]
            return "ui/plan.html", {
                "name": name,
                "versions": versions.items,
                "total": versions.total,
                "decisions": decisions.items,
                "changed": changed,
            }

        return _page(request, build)

    @router.get("/decisions")
    def decisions(request: Request) -> HTMLResponse:
        raw = dict(request.query_params)
        form = {key: raw.get(key, "") for key in DECISION_FILTERS}
        base = {"form": form, "outcomes": [o.value for o in Outcome], "problems": []}

        def invalid(exc: InvalidInput) -> Page:
            return "ui/decisions.html", base | {"message": exc.message, "problems": exc.problems}

        def build(database: Database) -> Page:
            from registry.gate.service import list_decisions

            filters = decision_filters(raw)
            cursor = raw.get("cursor") or None
            with database.reading() as session:
                page = list_decisions(
                    session,
                    **filters,
                    limit=DECISIONS_PER_PAGE,
                    cursor=cursor,
                    current_revision=installed_revision(),
                )
            following = None
            if page.next_cursor:
                following = {k: v for k, v in form.items() if v} | {"cursor": page.next_cursor}
            return "ui/decisions.html", base | {
                "decisions": page.items,
                "filtered": bool(filters),
                "paged": cursor is not None,
                "next_query": following,
            }

        return _page(request, build, invalid)

    @router.get("/decisions/{decision_id}")
    def decision(request: Request, decision_id: str) -> HTMLResponse:
        def build(database: Database) -> Page:
            from registry.gate.service import get_decision
            from registry.report.charts import build as build_charts
            from registry.report.data import gather
            from registry.staleness.thresholds import load_thresholds

            revision = installed_revision()
            with database.reading() as session:
                view = get_decision(session, decision_id, current_revision=revision)
            data = gather(
                database,
                plan_ref=view.plan,
                decision_id=view.id,
                now=datetime.now(UTC),
                limits=load_thresholds(),
                current_revision=revision,
            )
            return "ui/decision.html", {"report": data, "charts": build_charts(data, "ui")}

        return _page(request, build)

    @router.get("/evidence/stale")
    def stale(request: Request) -> HTMLResponse:
        def build(database: Database) -> Page:
            from registry.staleness.service import MAX_PAGE, list_stale

            with database.reading() as session:
                page = list_stale(session, now=datetime.now(UTC), limit=MAX_PAGE)
            return "ui/stale.html", {"stale": page.items, "total": page.total}

        return _page(request, build)

    @router.get("/audit")
    def audit(request: Request) -> HTMLResponse:
        def build(database: Database) -> Page:
            from registry.audit.service import verify

            with database.reading(snapshot=True) as session:
                report = verify(session)
            return "ui/audit.html", {"chain": report}

        return _page(request, build)

    return router
