"""The worked example's report, as a person sees it in Chromium (issue 15, the report):
the verdict in text, every chart drawn with a size, tables with headers, nothing fetched
from outside the file, and a screenshot kept for review."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from tests.support.browser import external_requests, png_size, rendered


def capgate(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", *args], env=env, capture_output=True, text=True
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def test_the_worked_examples_report_reads_in_a_browser(
    browser: WebDriver,
    screenshot: Callable[[WebDriver, str], Path],
    tmp_path: Path,
    env: dict[str, str],
) -> None:
    # `env`: the worked example registered through the CLI and sized (tests/conftest.py).
    capgate(env, "gate", "check", "chat-assistant-prod")
    report = tmp_path / "chat-assistant-prod.html"
    written = capgate(env, "report", "chat-assistant-prod", "--output", str(report))
    assert written.startswith("ALLOW chat-assistant-prod@v1: report written to")

    browser.get(report.as_uri())
    assert browser.find_element(By.TAG_NAME, "h1").text == (
        "Capacity plan report: chat-assistant-prod@v1"
    )
    verdict = rendered(browser, "#verdict")
    assert verdict.displayed and "ALLOW" in verdict.text  # in words, not only colour
    charts = browser.find_elements(By.CSS_SELECTOR, "svg[role='img']")
    assert len(charts) >= 4
    for chart in charts:
        drawn = rendered(browser, chart)
        assert drawn.has_area, chart.get_attribute("aria-labelledby")
        assert chart.find_element(By.TAG_NAME, "title").get_attribute("textContent")
    assert browser.find_elements(By.CSS_SELECTOR, "table th[scope]")
    assert external_requests(browser) == []
    shot = screenshot(browser, "report")
    width, height = png_size(shot)
    assert width == 1280 and height > 3000  # the whole page, not the window
