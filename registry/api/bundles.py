"""OPA's side of capgate: the policy bundle OPA sidecars pull, and the decision logs
they send back.

- ``GET /v1/bundles/capgate.tar.gz``: the current policy bundle as a signed OPA bundle
  (registry.policy.opa_bundle). ``ETag`` is the quoted revision (the bundle's content
  digest); a poll whose ``If-None-Match`` names it gets 304. The first time a revision
  is served it is kept (table ``policy_bundles``, one ``opa.bundle_served`` audit
  event), exactly as served.
- ``GET /v1/bundles/revisions/{revision}.tar.gz``: a revision served before.
- ``POST /v1/decision-logs``: what OPA's ``decision_logs`` plugin uploads, a gzip
  compressed JSON array of events (uncompressed JSON is accepted too). Each event is
  stored under OPA's ``decision_id``, once: an event already stored is a duplicate (OPA
  retries uploads), and a different event under a stored id is a conflict, reported and
  never stored over the first. One ``opa.decision_logs`` audit event per batch names
  every event's digest.
- ``GET /v1/decision-logs``: the stored events, newest first, by bundle revision, path
  or sender.
"""

from __future__ import annotations

import re
import threading
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from registry.api.deps import DatabaseDep, PrincipalDep
from registry.api.limits import Offset
from registry.digest import sha256_digest
from registry.errors import FieldProblem, InvalidInput, NotFound
from registry.policy.bundle import PolicyBundle, load_bundle
from registry.policy.decision_logs import (
    MAX_UPLOAD_BYTES,
    DecisionLogReceipt,
    DecisionLogView,
    decompressed,
    list_decision_logs,
    parse_decision_logs,
    store_decision_logs,
)
from registry.policy.opa_bundle import (
    BUNDLE_NAME,
    MEDIA_TYPE,
    BundleSigningKey,
    OpaBundle,
    build_opa_bundle,
    load_signing_key,
)
from registry.records.views import Page
from registry.settings import Settings
from registry.storage.database import Database, WriteContext
from registry.storage.models import PolicyBundleRow

REVISION_PATTERN = re.compile(r"^sha256:[0-9a-f]{64}$")


# ---- the bundle ---------------------------------------------------------------------

_built: dict[tuple[str, str, str], OpaBundle] = {}
_built_lock = threading.Lock()


def signed_bundle(bundle: PolicyBundle, key: BundleSigningKey) -> OpaBundle:
    """The signed tarball of `bundle`, built once per revision and key."""
    cache_key = (bundle.revision, key.key_id, key.public_pem())
    with _built_lock:
        built = _built.get(cache_key)
        if built is None:
            built = build_opa_bundle(bundle, key)
            _built.clear()  # one bundle per process at a time; a new key or revision replaces it
            _built[cache_key] = built
        return built


def _signing_key(settings: Settings) -> BundleSigningKey:
    return load_signing_key(settings.bundle_signing_key, settings.bundle_signing_key_id)


def keep_served_bundle(database: Database, built: OpaBundle, key_id: str, principal: str) -> None:
    """Store the revision the first time it is served (idempotent across replicas)."""

    def work(ctx: WriteContext) -> None:
        if ctx.session.get(PolicyBundleRow, built.revision) is not None:
            return
        digest = sha256_digest(built.tarball)
        ctx.session.add(
            PolicyBundleRow(
                revision=built.revision,
                tarball=built.tarball,
                tarball_sha256=digest,
                key_id=key_id,
                first_served_at=ctx.now,
                first_served_to=ctx.principal,
            )
        )
        ctx.record_event(
            "opa.bundle_served",
            {
                "bundle": BUNDLE_NAME,
                "revision": built.revision,
                "tarball_sha256": digest,
                "key_id": key_id,
            },
        )

    database.write(work, principal=principal)


def _kept(request: Request) -> set[str]:
    kept: set[str] | None = getattr(request.app.state, "opa_bundles_kept", None)
    if kept is None:
        kept = set()
        request.app.state.opa_bundles_kept = kept
    return kept


def _etag_matches(if_none_match: str | None, etag: str) -> bool:
    if not if_none_match:
        return False
    for candidate in if_none_match.split(","):
        tag = candidate.strip().removeprefix("W/")
        if tag in ("*", etag, etag.strip('"')):
            return True
    return False


def _tarball_response(body: bytes, etag: str, if_none_match: str | None) -> Response:
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    if _etag_matches(if_none_match, etag):
        return Response(status_code=304, headers=headers)
    return Response(content=body, media_type=MEDIA_TYPE, headers=headers)


# ---- routes -------------------------------------------------------------------------

_TARBALL: dict[int | str, dict[str, Any]] = {
    200: {"content": {MEDIA_TYPE: {}}, "description": "The signed OPA bundle tarball."},
    304: {"description": "Not modified: If-None-Match names this revision."},
}


def bundles_router() -> APIRouter:
    router = APIRouter(tags=["opa"])

    @router.get(
        f"/bundles/{BUNDLE_NAME}.tar.gz",
        response_class=Response,
        responses=_TARBALL,
        operation_id="get_opa_bundle",
        summary="The current policy bundle as a signed OPA bundle (OPA's bundles plugin "
        "polls it; ETag is the revision)",
    )
    def current_bundle(
        request: Request,
        database: DatabaseDep,
        principal: PrincipalDep,
        if_none_match: Annotated[str | None, Header()] = None,
    ) -> Response:
        settings: Settings = request.app.state.settings
        key = _signing_key(settings)
        built = signed_bundle(load_bundle(), key)
        kept = _kept(request)
        if built.revision not in kept:
            keep_served_bundle(database, built, key.key_id, principal)
            kept.add(built.revision)
        return _tarball_response(built.tarball, built.etag, if_none_match)

    @router.get(
        "/bundles/revisions/{revision}.tar.gz",
        response_class=Response,
        responses=_TARBALL,
        operation_id="get_opa_bundle_revision",
        summary="A policy bundle revision capgate served before, exactly as served",
    )
    def bundle_revision(
        revision: str,
        request: Request,
        database: DatabaseDep,
        principal: PrincipalDep,
        if_none_match: Annotated[str | None, Header()] = None,
    ) -> Response:
        if not REVISION_PATTERN.match(revision):
            raise InvalidInput(
                "not a bundle revision",
                problems=[FieldProblem("revision", "sha256: and 64 lowercase hex digits")],
            )
        with database.reading() as session:
            row = session.get(PolicyBundleRow, revision)
            tarball = row.tarball if row is not None else None
        if tarball is None and revision == load_bundle().revision:
            key = _signing_key(request.app.state.settings)
            built = signed_bundle(load_bundle(), key)
            keep_served_bundle(database, built, key.key_id, principal)
            _kept(request).add(built.revision)
            tarball = built.tarball
        if tarball is None:
            raise NotFound(f"capgate never served policy bundle revision {revision}")
        return _tarball_response(bytes(tarball), f'"{revision}"', if_none_match)

    @router.post(
        "/decision-logs",
        response_model=DecisionLogReceipt,
        operation_id="post_decision_logs",
        summary="Decision logs from an OPA sidecar (gzip JSON array of events, as OPA's "
        "decision_logs plugin sends them)",
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"type": "array", "items": {}}}},
            }
        },
    )
    async def post_decision_logs(
        request: Request, database: DatabaseDep, principal: PrincipalDep
    ) -> DecisionLogReceipt:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_UPLOAD_BYTES:
            raise InvalidInput(f"a decision log upload is at most {MAX_UPLOAD_BYTES} bytes")
        body = bytearray()
        async for part in request.stream():
            body.extend(part)
            if len(body) > MAX_UPLOAD_BYTES:
                raise InvalidInput(f"a decision log upload is at most {MAX_UPLOAD_BYTES} bytes")
        encoding = request.headers.get("content-encoding")

        def receive() -> DecisionLogReceipt:
            raw = decompressed(bytes(body), encoding)
            events = parse_decision_logs(raw)
            return database.write(
                lambda ctx: store_decision_logs(ctx, events, sha256_digest(raw)),
                principal=principal,
            )

        return await run_in_threadpool(receive)

    @router.get(
        "/decision-logs",
        response_model=Page[DecisionLogView],
        operation_id="list_decision_logs",
        summary="Decision logs OPA sidecars sent, newest first",
    )
    def decision_logs(
        database: DatabaseDep,
        revision: Annotated[
            str | None, Query(description="Only events decided under this bundle revision.")
        ] = None,
        path: Annotated[str | None, Query(description="Only events of this decision path.")] = None,
        received_from: Annotated[
            str | None, Query(description="Only events this principal sent.")
        ] = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Offset = 0,
    ) -> Page[DecisionLogView]:
        with database.reading() as session:
            return list_decision_logs(
                session,
                revision=revision,
                path=path,
                received_from=received_from,
                limit=limit,
                offset=offset,
            )

    return router


__all__ = ["bundles_router", "keep_served_bundle", "signed_bundle"]
