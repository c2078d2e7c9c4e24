"""The real parts the suite tests against (PostgreSQL, OPA, Prometheus, Chromium).

A test that needs one skips where it is absent (a quick local run), but fails on CI
(``CI`` set): the README's test command installs every one of them, so an absent part
there means the suite would pass without testing it for real.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def absent(what: str, install: str) -> NoReturn:
    """``what`` is missing: a failure on CI, a skip elsewhere; ``install`` is what fixes it."""
    if os.environ.get("CI"):
        pytest.fail(f"{what}: CI must test it for real ({install})")
    pytest.skip(f"{what} ({install})")
