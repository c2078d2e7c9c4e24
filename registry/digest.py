"""Canonical JSON and the sha256 digests that address every record."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def _normalised(value: Any) -> Any:
    """-0.0 becomes 0.0: numerically equal content must give one digest."""
    if isinstance(value, float):
        return 0.0 if value == 0.0 else value
    if isinstance(value, dict):
        return {key: _normalised(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_normalised(item) for item in value]
    return value


def _dumps(value: Any) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def canonical_json(value: Any) -> str:
    """Key-sorted, whitespace-free JSON: equal content always gives equal bytes."""
    text = _dumps(value)
    # A -0.0 anywhere is written "-0.0": without that text there is none to normalise,
    # and the walk (most of the cost of hashing a stored decision input) is skipped.
    return _dumps(_normalised(value)) if "-0.0" in text else text


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def content_digest(value: Any) -> str:
    return sha256_digest(canonical_json(value).encode("utf-8"))
