"""A real, headless Chromium for tests that check what a person sees on a page.

``scripts/ci/chromium.sh`` installs Debian's ``chromium`` and ``chromium-driver`` and
prints the chromedriver's path (the test command exports it as CAPGATE_CHROMEDRIVER).
Selenium drives them; Selenium Manager never runs (it would download drivers and
report usage): the driver and browser paths are given explicitly, it is told to stay
offline, and calling it fails the test.

The browser reaches nothing but this machine: every non-loopback request goes to a
dead proxy (``--proxy-server``) and fails, and :func:`external_requests` lists any a
page attempted, from the DevTools network log, so a page that would need the internet
fails its "works offline" assertion instead of quietly loading from a CDN.

Fixtures (import them into the conftest of the directory that uses them, as
tests/browser/conftest.py does; one conftest only, or each starts its own browser):

``chromium_binaries`` (session)
    :class:`ChromiumBinaries`; skips when absent, fails when env CI is set.
``chromium_session`` (session)
    :class:`HeadlessChromium`: one browser per test session (per xdist worker), quit at
    the end; restarted if a test left it dead.
``browser`` (function)
    The session's ``WebDriver``, reset for the test: about:blank, no cookies, the
    1280x2000 window, an empty network log.
``screenshot_dir`` (session)
    Where screenshots go: ``<pytest basetemp>/screenshots``.
``screenshot`` (function)
    ``screenshot(driver, name) -> Path``: a full-page PNG named after the test, in
    ``screenshot_dir`` and, when env CAPGATE_SCREENSHOTS names a folder, copied there
    (CI keeps that folder as an artifact).

Helpers: :func:`rendered` (an element's on-screen size and visible text),
:func:`external_requests`, :func:`save_screenshot`, :func:`png_size`.
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import json
import os
import re
import shutil
import struct
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import urlsplit

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.selenium_manager import SeleniumManager
from selenium.webdriver.remote.webelement import WebElement

from tests.support.real_parts import absent

WINDOW_WIDTH = 1280
WINDOW_HEIGHT = 2000
PAGE_LOAD_TIMEOUT_S = 30
SCRIPT_TIMEOUT_S = 10
# Nothing listens on the discard port: a request sent through this proxy fails at once.
# Chromium bypasses proxies for loopback (localhost, 127.0.0.1, [::1]) by itself.
DEAD_PROXY = "http://127.0.0.1:9"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Schemes that never leave the machine (chrome: is the browser's own pages, such as the
# new-tab page it opens at start).
LOCAL_SCHEMES = frozenset({"file", "data", "blob", "about", "chrome", "devtools", "javascript"})
LOOPBACK_NAMES = frozenset({"localhost"})


@dataclass(frozen=True)
class ChromiumBinaries:
    driver: Path  # chromedriver
    browser: Path  # chromium, the real executable (not Debian's /usr/bin wrapper script)


def find_chromium() -> ChromiumBinaries | None:
    """CAPGATE_CHROMEDRIVER, else ``chromedriver`` on PATH (resolved); the browser is
    CAPGATE_CHROMIUM, else ``chromium`` beside the driver (Debian: /usr/lib/chromium/),
    else ``chromium`` on PATH. None when either is missing."""
    configured = os.environ.get("CAPGATE_CHROMEDRIVER")
    if configured:
        driver = Path(configured)
    else:
        found = shutil.which("chromedriver")
        if found is None:
            return None
        driver = Path(found).resolve()
    browser_configured = os.environ.get("CAPGATE_CHROMIUM")
    if browser_configured:
        browser = Path(browser_configured)
    elif (driver.parent / "chromium").is_file():
        browser = driver.parent / "chromium"
    else:
        found = shutil.which("chromium")
        if found is None:
            return None
        browser = Path(found).resolve()
    if not (driver.is_file() and browser.is_file()):
        return None
    return ChromiumBinaries(driver=driver, browser=browser)


def chromium_options(binaries: ChromiumBinaries, user_data_dir: Path) -> Options:
    options = Options()
    options.binary_location = str(binaries.browser)
    for argument in (
        "--headless=new",
        # Tests run as root in containers, where Chromium refuses its sandbox (and
        # --no-install-recommends leaves out chromium-sandbox); the pages are our own.
        "--no-sandbox",
        "--disable-gpu",
        # Docker's default /dev/shm is 64 MB; Chromium crashes when it fills.
        "--disable-dev-shm-usage",
        f"--window-size={WINDOW_WIDTH},{WINDOW_HEIGHT}",
        "--force-device-scale-factor=1",
        "--hide-scrollbars",  # full-page screenshots as wide as the window
        "--lang=en-US",
        f"--user-data-dir={user_data_dir}",
        # Offline: no request leaves the machine, and the browser asks for nothing itself.
        f"--proxy-server={DEAD_PROXY}",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--no-pings",
        "--mute-audio",
    ):
        options.add_argument(argument)
    # The DevTools network events, for external_requests().
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    options.add_experimental_option(
        "perfLoggingPrefs", {"enableNetwork": True, "enablePage": False}
    )
    return options


def _selenium_manager_called(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("Selenium Manager would download a driver: pass the binaries explicitly")


def start_chromium(binaries: ChromiumBinaries, workdir: Path) -> WebDriver:
    """A headless Chromium with its profile and chromedriver log in ``workdir``; the
    caller quits it."""
    profile = Path(tempfile.mkdtemp(prefix="chromium-profile-", dir=workdir))
    service = Service(
        executable_path=str(binaries.driver), log_output=str(workdir / "chromedriver.log")
    )
    with ExitStack() as stack:
        # Selenium skips its manager when the service names the driver; make sure.
        stack.enter_context(
            mock.patch.dict(os.environ, {"SE_OFFLINE": "true", "SE_AVOID_STATS": "true"})
        )
        stack.enter_context(
            mock.patch.object(SeleniumManager, "binary_paths", _selenium_manager_called)
        )
        driver = webdriver.Chrome(service=service, options=chromium_options(binaries, profile))
    try:
        driver.set_page_load_timeout(PAGE_LOAD_TIMEOUT_S)
        driver.set_script_timeout(SCRIPT_TIMEOUT_S)
    except BaseException:
        driver.quit()
        raise
    return driver


class HeadlessChromium:
    """One browser, started on first use and again if it died; :meth:`close` quits it."""

    def __init__(self, binaries: ChromiumBinaries, workdir: Path) -> None:
        self.binaries = binaries
        self.workdir = workdir
        self._driver: WebDriver | None = None

    def fresh(self) -> WebDriver:
        """The browser on about:blank with no cookies, the standard window and an empty
        network log."""
        if self._driver is not None:
            try:
                self._reset(self._driver)
                return self._driver
            except Exception:  # dead: WebDriverException, or urllib3's connection errors
                self.close()
        self._driver = start_chromium(self.binaries, self.workdir)
        self._reset(self._driver)
        return self._driver

    @staticmethod
    def _reset(driver: WebDriver) -> None:
        driver.get("about:blank")
        driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
        driver.set_window_size(WINDOW_WIDTH, WINDOW_HEIGHT)
        _performance_log(driver)  # drain

    def close(self) -> None:
        driver, self._driver = self._driver, None
        if driver is not None:
            # Already dead or not: quit() stops chromedriver either way.
            with contextlib.suppress(Exception):
                driver.quit()


# ---- what a person sees ---------------------------------------------------------------


@dataclass(frozen=True)
class Rendered:
    width: float  # CSS pixels, from getBoundingClientRect()
    height: float
    text: str  # the visible text (WebDriver's rendering-aware text, not textContent)
    displayed: bool

    @property
    def has_area(self) -> bool:
        return self.displayed and self.width > 0 and self.height > 0


def rendered(driver: WebDriver, target: WebElement | str) -> Rendered:
    """The on-screen size and visible text of an element, or of the first element
    matching a CSS selector."""
    element = driver.find_element(By.CSS_SELECTOR, target) if isinstance(target, str) else target
    box = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return [r.width, r.height];", element
    )
    return Rendered(
        width=float(box[0]),
        height=float(box[1]),
        text=element.text,
        displayed=element.is_displayed(),
    )


def is_local_url(url: str) -> bool:
    """True for URLs that stay on this machine: file:, data:, about: and the like, and
    http(s)/ws(s) to a loopback address."""
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return True
    host = (parts.hostname or "").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _performance_log(driver: WebDriver) -> list[dict[str, Any]]:
    """The DevTools events logged since the last call (chromedriver's performance log)."""
    entries: list[dict[str, Any]] = driver.get_log("performance")  # type: ignore[no-untyped-call]
    return entries


def external_requests(driver: WebDriver) -> list[str]:
    """URLs of the requests the browser attempted to send off this machine since the last
    call (or since the ``browser`` fixture reset it), blocked or not: page loads, form
    submissions, images, scripts, styles, fonts, fetches, websockets. Drains the
    DevTools network log."""
    urls: list[str] = []
    for entry in _performance_log(driver):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            url = message["params"]["request"]["url"]
        elif message["method"] == "Network.webSocketCreated":
            url = message["params"]["url"]
        else:
            continue
        if not is_local_url(url) and url not in urls:
            urls.append(url)
    return urls


# ---- screenshots ----------------------------------------------------------------------


def save_screenshot(driver: WebDriver, path: Path) -> Path:
    """The whole page (not only the window) as a PNG at ``path``."""
    metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
    content = metrics["cssContentSize"]
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {
                "x": 0,
                "y": 0,
                "width": max(1, content["width"]),
                "height": max(1, content["height"]),
                "scale": 1,
            },
        },
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))
    return path


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) of a PNG file; ValueError when it is not one."""
    with path.open("rb") as handle:
        head = handle.read(24)
    if len(head) < 24 or head[:8] != PNG_SIGNATURE or head[12:16] != b"IHDR":
        raise ValueError(f"{path} is not a PNG file")
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def screenshot_name(nodeid: str, name: str) -> str:
    """``tests/browser/test_x.py::test_y[a]`` + ``report`` -> ``test_x.test_y-a--report.png``."""
    path, _, test = nodeid.partition("::")
    stem = f"{Path(path).stem}.{test}" if test else Path(path).stem
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{stem}--{name}").strip("-")
    return f"{slug}.png"


# ---- fixtures -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def chromium_binaries() -> ChromiumBinaries:
    """Chromium and chromedriver, or skip (scripts/ci/chromium.sh installs them)."""
    found = find_chromium()
    if found is None:
        absent("chromium absent", "run scripts/ci/chromium.sh")
    return found


@pytest.fixture(scope="session")
def chromium_session(
    chromium_binaries: ChromiumBinaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HeadlessChromium]:
    session = HeadlessChromium(chromium_binaries, tmp_path_factory.mktemp("chromium"))
    try:
        yield session
    finally:
        session.close()


@pytest.fixture
def browser(chromium_session: HeadlessChromium) -> WebDriver:
    """The session's headless Chromium, reset for this test."""
    return chromium_session.fresh()


@pytest.fixture(scope="session")
def screenshot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.getbasetemp() / "screenshots"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture
def screenshot(
    request: pytest.FixtureRequest, screenshot_dir: Path
) -> Callable[[WebDriver, str], Path]:
    """``screenshot(driver, name)``: saves the page as ``<test>--<name>.png`` in
    ``screenshot_dir`` (and in $CAPGATE_SCREENSHOTS when set); returns the first path."""
    keep = os.environ.get("CAPGATE_SCREENSHOTS")

    def take(driver: WebDriver, name: str) -> Path:
        filename = screenshot_name(request.node.nodeid, name)
        path = save_screenshot(driver, screenshot_dir / filename)
        if keep:
            target = Path(keep)
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target / filename)
        return path

    return take
