"""Output a person can read (issue 27, section 5), in Chromium: the report's tables fit a
1280 px window and A4 paper (print emulation, and a real print to PDF), a deny's
violations grouped by policy, the /ui plans list with each plan's latest verdict, a
plan page with its violations grouped and its manifest paths shortened, the pages using
a wide window's width; no Python repr on any of them. Screenshots are kept for review.

The registry holds the worked example denied against manifests kept in a deep folder
(a copy of examples/chat-assistant/k8s that runs 7 replicas instead of the plan's 9), a
copy of its plan allowed once the example's load test is imported, and a third plan
with no decision yet.
"""

from __future__ import annotations

import base64
import functools
import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from registry.storage import migrate
from tests.browser.test_report_page import capgate
from tests.support.browser import WINDOW_HEIGHT, WINDOW_WIDTH, png_size
from tests.support.serve import capgate_serve
from tests.support.worked_example import EXAMPLE, PLAN, import_load_test, submit_records

Screenshot = Callable[[WebDriver, str], Path]

DEEP = "deploy/overlays/production/us-east1/serving/chat-assistant"
# A Python repr as it would leak into a page: a dict or list literal with quoted
# strings, a bare None/True/False word (as tests/cli/test_readable_output.py checks), and
# on a page (where no YAML is shown) an empty list or mapping too.
REPR = re.compile(r"\{'|\['|\[\]|\{\}|\bNone\b|\bTrue\b|\bFalse\b")
# A4 less the report's @page margins (12 mm each side), in CSS pixels (96 per inch).
A4_PRINTABLE_PX = round((210 - 2 * 12) / 25.4 * 96)
A4_WIDTH_PT = 595.28

# Every table whose content is wider than the element holding it, as "caption: widths".
OVERFLOWING_TABLES = """
return [...document.querySelectorAll('table')]
  .filter(t => t.getClientRects().length > 0)
  .filter(t => t.scrollWidth > t.parentElement.clientWidth + 1
            || t.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
  .map(t => (t.caption ? t.caption.textContent.trim().slice(0, 60) : t.className)
            + ': ' + t.scrollWidth + ' > ' + t.parentElement.clientWidth);
"""
OVERFLOWING_CHARTS = """
return [...document.querySelectorAll('figure svg')]
  .filter(s => s.getBoundingClientRect().width > s.parentElement.clientWidth + 1)
  .map(s => s.getAttribute('aria-labelledby'));
"""


@dataclass(frozen=True)
class Registry:
    env: dict[str, str]
    report: Path  # the deny's report, written by `capgate report`
    manifests: Path  # the deep folder the deny compared


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    root = tmp_path_factory.mktemp("readable")
    url = f"sqlite:///{root / 'registry.db'}"
    migrate.upgrade(url)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")},
        "CAPGATE_DATABASE_URL": url,
        "CAPGATE_PRINCIPAL": "alice",
    }
    run = functools.partial(capgate, env)
    submit_records(run)
    # Two more plans: one allowed below, one never checked ("none yet").
    for name in ("chat-canary", "chat-staging"):
        other = root / f"{name}.yaml"
        other.write_text(
            (EXAMPLE / "plan.yaml").read_text().replace(f"name: {PLAN}", f"name: {name}")
        )
        run("plan", "submit", str(other))

    manifests = root / DEEP
    shutil.copytree(EXAMPLE / "k8s", manifests)
    deployment = manifests / "deployment.yaml"
    deployment.write_text(deployment.read_text().replace("replicas: 9", "replicas: 7", 1))
    denied = capgate(env, "gate", "check", PLAN, "--manifests", str(manifests))
    assert denied.startswith("DENY"), denied
    report = root / "deny.html"
    capgate(env, "report", PLAN, "--output", str(report))
    import_load_test(run)
    assert capgate(env, "gate", "check", "chat-canary").startswith("ALLOW")
    yield Registry(env=env, report=report, manifests=manifests)


def overflowing(browser: WebDriver) -> list[str]:
    found: list[str] = browser.execute_script(OVERFLOWING_TABLES)
    return found


def no_repr(browser: WebDriver) -> None:
    text = browser.find_element(By.TAG_NAME, "body").text
    assert [line for line in text.splitlines() if REPR.search(line)] == []


def policy_groups(browser: WebDriver) -> list[str]:
    return [
        group.get_attribute("data-policy") or ""
        for group in browser.find_elements(By.CSS_SELECTOR, "table.violations tbody.policy-group")
    ]


def pdf_page_widths(pdf: bytes) -> list[float]:
    """The width, in points, of each page's MediaBox (Chromium writes them uncompressed)."""
    boxes = re.findall(rb"/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)", pdf)
    return [float(x1) - float(x0) for x0, _, x1, _ in boxes]


def test_the_report_fits_1280_and_a4_and_groups_violations_by_policy(
    browser: WebDriver, screenshot: Screenshot, registry: Registry
) -> None:
    browser.set_window_size(WINDOW_WIDTH, 900)
    browser.get(registry.report.as_uri())
    assert overflowing(browser) == []
    assert browser.execute_script(OVERFLOWING_CHARTS) == []
    # What blocks the release, one heading per policy (all three are "high": by name).
    assert policy_groups(browser) == ["load_test_coverage", "manifests_consistent", "tail_slo"]
    heading = browser.find_element(
        By.CSS_SELECTOR, "tbody.policy-group[data-policy='manifests_consistent'] tr.group"
    )
    assert heading.text == "manifests_consistent 1 violation, high"
    # The deep folder said once; each path below it, its full path in the title.
    paths = browser.find_elements(By.CSS_SELECTOR, "#verdict .path[title]")
    shown = {p.text for p in paths}
    assert "deployment.yaml" in shown and not any(DEEP in text for text in shown)
    assert all(p.get_attribute("title").endswith(p.text) for p in paths)
    assert str(registry.manifests / "deployment.yaml") in {p.get_attribute("title") for p in paths}
    no_repr(browser)
    shot = screenshot(browser, "report-1280")
    assert png_size(shot)[0] == WINDOW_WIDTH

    # Print: emulated on a window as wide as A4's printable width.
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": A4_PRINTABLE_PX, "height": 1100, "deviceScaleFactor": 1, "mobile": False},
    )
    try:
        assert not browser.find_element(By.CSS_SELECTOR, "nav.toc").is_displayed()
        assert overflowing(browser) == []
        assert browser.execute_script(OVERFLOWING_CHARTS) == []
        assert (
            browser.execute_script(
                "return getComputedStyle(document.querySelector('tbody tr')).breakInside"
            )
            == "avoid"
        )
        screenshot(browser, "report-print")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
    printed = browser.execute_cdp_cmd(
        "Page.printToPDF", {"preferCSSPageSize": True, "printBackground": True}
    )
    widths = pdf_page_widths(base64.b64decode(printed["data"]))
    assert len(widths) > 3 and all(abs(w - A4_WIDTH_PT) < 1.5 for w in widths), widths[:3]


def test_the_plans_list_and_a_plan_page_read_at_1280_and_use_1920(
    browser: WebDriver, screenshot: Screenshot, registry: Registry
) -> None:
    with capgate_serve(registry.env, "--insecure-local") as server:
        browser.set_window_size(WINDOW_WIDTH, 900)
        browser.get(f"{server}/ui/plans")
        rows = {
            row.find_element(By.CSS_SELECTOR, "th").text: row
            for row in browser.find_elements(By.CSS_SELECTOR, "table.plans tbody tr")
        }
        assert set(rows) == {PLAN, "chat-canary", "chat-staging"}
        allowed = rows["chat-canary"].find_element(By.CSS_SELECTOR, "td.verdict-cell")
        assert allowed.text.startswith("ALLOW chat-canary@v1")
        denied = rows[PLAN].find_element(By.CSS_SELECTOR, "td.verdict-cell")
        assert denied.text.startswith("DENY chat-assistant-prod@v1, ")
        link = denied.find_element(By.TAG_NAME, "a").get_attribute("href") or ""
        assert re.search(r"/ui/decisions/[0-9a-f-]{36}$", link), link
        decided = rows[PLAN].find_elements(By.TAG_NAME, "td")[2].text
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", decided), decided
        assert rows["chat-staging"].find_element(By.CSS_SELECTOR, "td.verdict-cell").text == (
            "none yet"
        )
        assert overflowing(browser) == []
        no_repr(browser)
        screenshot(browser, "ui-plans")

        browser.find_element(By.LINK_TEXT, PLAN).click()
        verdict = browser.find_element(By.CSS_SELECTOR, ".verdict")
        assert verdict.text.startswith("DENY")
        assert policy_groups(browser) == ["load_test_coverage", "manifests_consistent", "tail_slo"]
        caption = browser.find_element(By.CSS_SELECTOR, "table.violations caption").text
        assert f"manifest paths below {registry.manifests}/" in caption
        message = browser.find_element(
            By.CSS_SELECTOR, "tbody.policy-group[data-policy='manifests_consistent'] td.message"
        )
        # The folder is in the caption once, not in the message or the numbers again.
        assert DEEP not in message.text and "deployment.yaml" in message.text
        table = browser.find_element(By.CSS_SELECTOR, "table.violations").text
        assert table.count(DEEP) == 1
        assert overflowing(browser) == []
        no_repr(browser)
        screenshot(browser, "ui-plan-grouped")

        # Printed, the page keeps its content and drops the site's navigation.
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
        try:
            assert not browser.find_element(By.CSS_SELECTOR, "nav.site").is_displayed()
            assert overflowing(browser) == []
        finally:
            browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})

        # A 1920 px window: the content takes its width, not a narrow column.
        browser.set_window_size(1920, WINDOW_HEIGHT)
        browser.refresh()
        main = browser.execute_script(
            "return document.querySelector('main').getBoundingClientRect().width"
        )
        assert main > 1800, main
        assert overflowing(browser) == []
