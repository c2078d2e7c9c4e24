"""The /ui pages as a person sees them in Chromium (issue 15, the served pages): a real
`capgate serve --insecure-local` on loopback over a registry holding the worked example
with a deny and an allow decision; the decisions page, its filter form, one decision's
report, screenshots kept for review, and nothing fetched from outside the machine."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select, WebDriverWait

from registry.storage import migrate
from tests.browser.test_report_page import capgate
from tests.support.browser import external_requests, png_size, rendered
from tests.support.serve import capgate_serve
from tests.support.worked_example import import_load_test, submit_records

# Started first by tests/conftest.py: every page in a real browser.
pytestmark = pytest.mark.long(30)


def outcomes(browser: WebDriver) -> list[str]:
    """The outcome column as displayed (words, not colours)."""
    return [
        cell.text
        for cell in browser.find_elements(By.CSS_SELECTOR, "table.decisions tbody .outcome")
    ]


def test_the_decision_pages_read_in_a_browser(
    browser: WebDriver, screenshot: Callable[[WebDriver, str], Path], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    migrate.upgrade(url)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")},
        "CAPGATE_DATABASE_URL": url,
        "CAPGATE_PRINCIPAL": "alice",
    }
    run = functools.partial(capgate, env)
    submit_records(run)
    # No load test yet: a deny.
    assert capgate(env, "gate", "check", "chat-assistant-prod").startswith("DENY")
    import_load_test(run)
    assert capgate(env, "gate", "check", "chat-assistant-prod").startswith("ALLOW")

    with capgate_serve(env, "--insecure-local") as server:
        browser.get(f"{server}/ui/decisions")
        assert browser.find_element(By.TAG_NAME, "h1").text == "Gate decisions"
        assert outcomes(browser) == ["ALLOW", "DENY"]  # newest first, in words
        assert all(
            h.get_attribute("scope") == "col"
            for h in browser.find_elements(By.CSS_SELECTOR, "table.decisions thead th")
        )
        listing = screenshot(browser, "ui-decisions")
        assert png_size(listing)[0] == 1280

        # The filter form, as a person uses it: pick "deny" and submit.
        Select(browser.find_element(By.ID, "f-outcome")).select_by_visible_text("deny")
        browser.find_element(By.CSS_SELECTOR, "form.filters button[type='submit']").click()
        # A click returns before the navigation it starts: wait for the filtered page.
        WebDriverWait(browser, 10).until(expected_conditions.url_contains("outcome=deny"))
        WebDriverWait(browser, 10).until(
            lambda driver: driver.execute_script("return document.readyState") == "complete"
        )
        assert outcomes(browser) == ["DENY"]
        assert Select(browser.find_element(By.ID, "f-outcome")).first_selected_option.text == "deny"

        # A date range that holds nothing empties the table.
        browser.get(f"{server}/ui/decisions?until=2000-01-01")
        assert outcomes(browser) == []
        assert "No decision matches the filter" in browser.find_element(By.TAG_NAME, "main").text

        # An invalid filter: a message on the page, not a stack trace.
        browser.get(f"{server}/ui/decisions?since=someday")
        problem = rendered(browser, "#filter-problem")
        assert problem.displayed and "since" in problem.text and "not a date" in problem.text

        # One decision: its report, verdict in words and charts drawn.
        browser.get(f"{server}/ui/decisions?outcome=deny")
        browser.find_element(By.CSS_SELECTOR, "table.decisions tbody a").click()
        heading = browser.find_element(By.TAG_NAME, "h1").text
        assert heading.startswith("Decision ") and "DENY chat-assistant-prod@v1" in heading
        verdict = rendered(browser, "#verdict")
        assert verdict.displayed and "DENY" in verdict.text
        assert "load_test_coverage" in verdict.text  # the violated policy, by name
        charts = browser.find_elements(By.CSS_SELECTOR, "svg[role='img']")
        assert charts
        for chart in charts:
            assert rendered(browser, chart).has_area, chart.get_attribute("id")
            assert chart.find_element(By.TAG_NAME, "title").get_attribute("textContent")
        decision_shot = screenshot(browser, "ui-decision")
        assert png_size(decision_shot)[1] > 2000

        # The other pages a person reaches from the navigation.
        for link, heading_text in (
            ("Plans", "Capacity plans"),
            ("Stale evidence", "Stale evidence"),
            ("Audit trail", "Audit trail verification"),
        ):
            browser.find_element(By.LINK_TEXT, link).click()
            assert browser.find_element(By.TAG_NAME, "h1").text == heading_text
        assert "INTACT" in rendered(browser, "#chain-status").text
        browser.find_element(By.LINK_TEXT, "Plans").click()
        browser.find_element(By.LINK_TEXT, "chat-assistant-prod").click()
        assert "chat-assistant-prod@v1" in browser.find_element(By.TAG_NAME, "main").text

        assert external_requests(browser) == []
