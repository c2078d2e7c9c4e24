"""Canonical JSON and the sha256 digests that address every record."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Key-sorted, whitespace-free JSON: equal content always gives equal bytes."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def content_digest(value: Any) -> str:
    return sha256_digest(canonical_json(value).encode("utf-8"))
