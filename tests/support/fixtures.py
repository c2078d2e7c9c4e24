"""Where test data lives.

Third-party result files and traces stay outside the repository, in ``../shared/fixtures``
beside the checkout (every development machine and CI have it; override with
``CAPGATE_SHARED_FIXTURES``). A test that needs one skips with one line when it is absent.
``tests/fixtures`` holds only files this project wrote itself (synthetic files that
reproduce a format's quirks).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OWN = ROOT / "tests" / "fixtures"


def shared_root() -> Path:
    override = os.environ.get("CAPGATE_SHARED_FIXTURES")
    return Path(override) if override else ROOT.parent / "shared" / "fixtures"


def shared(rel: str) -> Path:
    """A file under ../shared/fixtures, or skip the test with one line naming it."""
    path = shared_root() / rel
    if not path.is_file():
        pytest.skip(f"shared fixture absent: ../shared/fixtures/{rel}")
    return path


def own(rel: str) -> Path:
    """A file this project wrote, under tests/fixtures (always present)."""
    return OWN / rel
