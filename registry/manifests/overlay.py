"""Merging what the manifests say with an overlay: a plan fragment for all they cannot
say (admission, retries, reserve, claims, names). The manifests are what ships, so a
field both state is taken from the manifests, and a note says so."""

from __future__ import annotations

from typing import Any

from registry.manifests.loading import Where


def _leaves(document: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    leaves: dict[str, Any] = {}
    for key, value in document.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            leaves.update(_leaves(value, path))
        else:
            leaves[path] = value
    return leaves


def _set(document: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        child = document.get(part)
        if not isinstance(child, dict):
            child = document[part] = {}
        document = child
    document[last] = value


def _within(path: str, field: str) -> bool:
    return path == field or path.startswith(field + ".")


def merge(
    fields: dict[str, tuple[Any, Where]], overlay: dict[str, Any], notes: list[str]
) -> dict[str, Any]:
    """The overlay with every manifest field laid over it.

    A manifest field replaces the overlay's value at that path and anything below it
    (replicas_per_zone is one field: the manifests' zones, not a union with the overlay's).
    """
    document: dict[str, Any] = {}
    overlay_leaves = _leaves(overlay)
    for path, value in overlay_leaves.items():
        owner = next((field for field in fields if _within(path, field)), None)
        if owner is None:
            _set(document, path, value)
        else:
            manifest_value, where = fields[owner]
            notes.append(
                f"{owner}: given by the overlay and by the manifests ({where}); the "
                f"manifests win: {manifest_value!r}"
            )
    for field, (value, _) in fields.items():
        _set(document, field, value)
    # One note per field, however many overlay leaves it covered.
    notes[:] = list(dict.fromkeys(notes))
    return document
