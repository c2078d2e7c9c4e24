"""The browser harness itself, on pages this file writes: a self-contained report-like
HTML file opened from disk, and a server-rendered page with a filter form on loopback.

What the page tests rely on: visible text, charts with an on-screen size, a form that
changes the rows, full-page screenshots, and catching any request that would leave the
machine.
"""

from __future__ import annotations

import html
import http.server
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.support.browser import (
    WINDOW_WIDTH,
    ChromiumBinaries,
    external_requests,
    is_local_url,
    png_size,
    rendered,
)
from tests.support.http_stub import serving

Screenshot = Callable[[WebDriver, str], Path]

CHART = """<svg role="img" aria-labelledby="chart-title" width="480" height="240"
     viewBox="0 0 480 240" xmlns="http://www.w3.org/2000/svg">
  <title id="chart-title">p99 TTFT against offered load</title>
  <line x1="40" y1="200" x2="460" y2="200" stroke="black"/>
  <line x1="40" y1="20" x2="40" y2="200" stroke="black"/>
  <line x1="40" y1="60" x2="460" y2="60" stroke="#c00" stroke-dasharray="6 4"/>
  <polyline points="40,190 120,180 200,165 280,140 360,100 440,70" fill="none"
            stroke="#036" stroke-width="3"/>
  <text x="300" y="52" font-size="14">SLO 500 ms</text>
</svg>"""

REPORT = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Harness report</title>
<style>body {{ font-family: sans-serif; margin: 2rem; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #999; padding: 4px 8px; }}
.hidden {{ display: none; }}</style></head>
<body>
<h1>Decision: <span id="verdict">DENY</span></h1>
<p class="hidden" id="secret">not for people</p>
<h2>Latency</h2>
{CHART}
<h2>Violations</h2>
<table>
  <thead><tr><th scope="col">Policy</th><th scope="col">Message</th></tr></thead>
  <tbody>
    <tr><td>slo.ttft</td><td>p99 TTFT 612 ms exceeds 500 ms at peak</td></tr>
    <tr><td>headroom</td><td>one zone lost leaves 0.82 of peak</td></tr>
  </tbody>
</table>
<h2>Inputs</h2>
<div style="height: 2400px; border-left: 4px solid #036; padding-left: 8px">digests</div>
</body></html>
"""

ROWS = [
    ("d-001", "chat-assistant", "allow"),
    ("d-002", "chat-assistant", "deny"),
    ("d-003", "search-rerank", "allow"),
    ("d-004", "search-rerank", "deny"),
    ("d-005", "chat-assistant", "deny"),
]


def decisions_page(outcome: str) -> str:
    rows = [row for row in ROWS if not outcome or row[2] == outcome]
    body = "\n".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    options = "".join(
        f'<option value="{value}"{" selected" if value == outcome else ""}>{label}</option>'
        for value, label in (("", "any"), ("allow", "allow"), ("deny", "deny"))
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Decisions</title></head>
<body>
<h1>Decisions</h1>
<form method="get" action="/ui/decisions">
  <label for="outcome">Outcome</label>
  <select id="outcome" name="outcome">{options}</select>
  <button type="submit">Filter</button>
</form>
<table id="decisions">
  <thead>
    <tr><th scope="col">ID</th><th scope="col">Plan</th><th scope="col">Outcome</th></tr>
  </thead>
  <tbody>{body}</tbody>
</table>
{CHART}
</body></html>
"""


class _DecisionsHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path != "/ui/decisions":
            self.send_error(404)
            return
        outcome = parse_qs(url.query).get("outcome", [""])[0]
        payload = decisions_page(outcome).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


@pytest.fixture(scope="module")
def decisions_server() -> Iterator[str]:
    """A server-rendered /ui/decisions page on a free loopback port."""
    with serving(_DecisionsHandler) as url:
        yield url


def outcomes(driver: WebDriver) -> list[str]:
    cells = driver.find_elements(By.CSS_SELECTOR, "#decisions tbody tr td:nth-child(3)")
    return [cell.text for cell in cells]


def assert_screenshot(path: Path, min_bytes: int = 4000) -> None:
    assert path.is_file(), path
    width, height = png_size(path)
    assert width == WINDOW_WIDTH and height > 200, (width, height)
    assert path.stat().st_size > min_bytes, path.stat().st_size


def test_uses_the_given_chromium(browser: WebDriver, chromium_binaries: ChromiumBinaries) -> None:
    capabilities = browser.capabilities
    browser_major = capabilities["browserVersion"].split(".")[0]
    driver_major = capabilities["chrome"]["chromedriverVersion"].split(".")[0]
    assert browser_major == driver_major
    assert browser.execute_script("return navigator.webdriver") is True
    assert "HeadlessChrome" in browser.execute_script("return navigator.userAgent")


def test_file_report_shows_verdict_chart_and_table(
    browser: WebDriver, screenshot: Screenshot, tmp_path: Path
) -> None:
    page = tmp_path / "report.html"
    page.write_text(REPORT, encoding="utf-8")
    browser.get(page.as_uri())

    assert rendered(browser, "#verdict").text == "DENY"
    assert rendered(browser, "h1").text == "Decision: DENY"
    hidden = rendered(browser, "#secret")
    assert not hidden.displayed and hidden.text == "" and not hidden.has_area

    chart = rendered(browser, "svg[role=img]")
    assert chart.has_area and (chart.width, chart.height) == (480, 240)
    assert "SLO 500 ms" in chart.text
    title = browser.find_element(By.CSS_SELECTOR, "svg[role=img] title")
    assert title.get_attribute("textContent") == "p99 TTFT against offered load"

    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "thead th")]
    assert headers == ["Policy", "Message"]
    assert "exceeds 500 ms at peak" in browser.find_element(By.TAG_NAME, "body").text

    shot = screenshot(browser, "report")
    assert_screenshot(shot)
    # The whole page, not only the window.
    assert png_size(shot)[1] > browser.execute_script("return window.innerHeight") > 1000
    assert external_requests(browser) == []


def test_server_page_filter_changes_rows(
    browser: WebDriver, screenshot: Screenshot, decisions_server: str
) -> None:
    browser.get(f"{decisions_server}/ui/decisions")
    assert outcomes(browser) == ["allow", "deny", "allow", "deny", "deny"]
    assert rendered(browser, "svg[role=img]").has_area
    assert_screenshot(screenshot(browser, "decisions-all"))

    table = browser.find_element(By.ID, "decisions")
    Select(browser.find_element(By.ID, "outcome")).select_by_value("deny")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    WebDriverWait(browser, 10).until(expected_conditions.staleness_of(table))

    assert urlsplit(browser.current_url).query == "outcome=deny"
    assert outcomes(browser) == ["deny", "deny", "deny"]
    ids = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#decisions td:first-child")]
    assert ids == ["d-002", "d-004", "d-005"]
    assert Select(browser.find_element(By.ID, "outcome")).first_selected_option.text == "deny"
    assert_screenshot(screenshot(browser, "decisions-deny"))

    assert external_requests(browser) == []


def test_external_requests_are_caught_and_blocked(browser: WebDriver, tmp_path: Path) -> None:
    page = tmp_path / "cdn.html"
    page.write_text(
        '<!doctype html><html><head><script src="https://cdn.example.com/chart.js"></script>'
        '</head><body><h1>Uses a CDN</h1><img id="logo" alt="logo" '
        'src="http://203.0.113.7/logo.png"></body></html>',
        encoding="utf-8",
    )
    browser.get(page.as_uri())
    assert rendered(browser, "h1").text == "Uses a CDN"
    # Blocked: the image never arrived (the proxy is dead), but the attempt is reported.
    assert browser.execute_script("return document.getElementById('logo').naturalWidth") == 0
    assert external_requests(browser) == [
        "https://cdn.example.com/chart.js",
        "http://203.0.113.7/logo.png",
    ]
    assert external_requests(browser) == []  # drained


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("file:///tmp/report.html", True),
        ("data:image/png;base64,AAAA", True),
        ("about:blank", True),
        ("chrome://new-tab-page/", True),
        ("http://127.0.0.1:8080/ui/", True),
        ("http://localhost/ui/", True),
        ("http://[::1]:9000/", True),
        ("ws://127.0.0.2:1/", True),
        ("https://cdn.jsdelivr.net/npm/chart.js", False),
        ("http://10.0.0.5/", False),
        ("http://localhost.example.com/", False),
    ],
)
def test_is_local_url(url: str, local: bool) -> None:
    assert is_local_url(url) is local
