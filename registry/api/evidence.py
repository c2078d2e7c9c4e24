"""Evidence import (multipart upload), stale evidence and staleness history."""

from __future__ import annotations

from fastapi import APIRouter


def evidence_router() -> APIRouter:
    return APIRouter(tags=["evidence"])
