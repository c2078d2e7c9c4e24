"""OPA's side of capgate: the policy bundle OPA sidecars pull, and the decision logs
they send back. (Routes land with issue 11's OPA work.)"""

from __future__ import annotations

from fastapi import APIRouter


def bundles_router() -> APIRouter:
    return APIRouter(tags=["opa"])
