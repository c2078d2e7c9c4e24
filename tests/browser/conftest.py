"""The headless Chromium fixtures (tests/support/browser.py).

Browser tests belong in this directory: a second conftest importing the fixtures would
start a second browser per worker.
"""

from __future__ import annotations

from tests.support.browser import (
    browser,
    chromium_binaries,
    chromium_session,
    screenshot,
    screenshot_dir,
)

__all__ = ["browser", "chromium_binaries", "chromium_session", "screenshot", "screenshot_dir"]
