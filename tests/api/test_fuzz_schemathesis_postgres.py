"""The fuzzing of test_fuzz_schemathesis.py on PostgreSQL: a second file, so that the
two workers (pytest's loadfile distribution) fuzz the two backends side by side."""

from __future__ import annotations

import pytest

from tests.api.test_fuzz_schemathesis import test_fuzz_every_operation

__all__ = ["test_fuzz_every_operation"]

pytestmark = [
    pytest.mark.long(30),
    pytest.mark.parametrize("database_url", ["postgres"], indirect=True),
]
