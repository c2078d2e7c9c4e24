"""The repositories' shared table aliases are fully built at import, before any request
thread can race to build them (registry/storage/repository/queries.py, _shared_alias).

Two threads building the same memoised part of one alias at once each made their own,
and a statement compiled with one was read with the other: HTTP 500s (NoSuchColumnError
"target.id", "multiple FROMS") on the first concurrent gate checks of a fresh server.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import inspect

from registry.storage.repository.queries import SHARED_ALIASES, WARMED


def _slot_is_set(state: Any, name: str) -> bool:
    """Whether the slot `name` holds a value, read without SQLAlchemy's memoising
    fallback (which would build it now and hide a missing warm-up)."""
    for cls in type(state).__mro__:
        slot = cls.__dict__.get(name)
        if (
            slot is not None
            and hasattr(slot, "__get__")
            and type(slot).__name__ == ("member_descriptor")
        ):
            try:
                slot.__get__(state, type(state))
            except AttributeError:
                return False
            return True
    raise AssertionError(f"{type(state).__name__} has no slot {name}")


@pytest.mark.parametrize("alias", SHARED_ALIASES, ids=lambda a: inspect(a).name)
def test_success_every_shared_alias_is_built_before_any_thread_uses_it(alias: Any) -> None:
    state = inspect(alias)
    adapted = vars(alias)
    missing = [
        key
        for key in inspect(state.mapper).all_orm_descriptors.keys()  # noqa: SIM118 (yields values)
        if key not in adapted
    ]
    assert missing == [], f"attributes adapted on first use, not at import: {missing}"
    for name in (*WARMED, "__clause_element__"):
        assert _slot_is_set(state, name), f"{name} is built on first use, not at import"
