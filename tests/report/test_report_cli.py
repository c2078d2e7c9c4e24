"""`capgate report`: one self-contained HTML file per plan and decision, on both databases.

The worked example is registered as a user does (the CLI in this process, on the local
registry), decided on by the gate, and the report read back as a person and a printer
would see it: what it says, what it would fetch (nothing), its headings, tables and charts.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.factories import (
    example,
    example_path,
    short_grace_plan_file,
)
from tests.report.html_checks import Page, parse
from tests.support.cli_runner import Capgate

PLAN = "chat-assistant-prod"


def report(capgate: Capgate, tmp_path: Path, *args: str) -> tuple[str, Page, str]:
    """`capgate report ARGS --output FILE`: the line it prints, the page and its text."""
    out = tmp_path / "reports" / "report.html"
    printed = capgate("report", *args, "--output", str(out)).stdout
    html = out.read_text(encoding="utf-8")
    page = parse(html)
    return printed, page, html


def assert_self_contained_and_accessible(page: Page) -> None:
    assert not page.errors, page.errors
    assert page.external_references() == []
    assert not page.named("script")
    # One h1, then headings that never skip a level.
    levels = page.headings()
    assert levels.count(1) == 1 and levels[0] == 1
    assert all(b - a <= 1 for a, b in itertools.pairwise(levels)), levels
    # Table headers say what they head.
    headers = page.named("th")
    assert headers and all(th.attrs.get("scope") in ("row", "col", "rowgroup") for th in headers)
    # Every chart is an image with a title and a description it is labelled by.
    ids = {t.attrs["id"] for t in page.tags if "id" in t.attrs}
    charts = [t for t in page.named("svg")]
    assert all(svg.attrs.get("role") == "img" for svg in charts)
    for svg in charts:
        labelled_by = svg.attrs["aria-labelledby"].split()
        assert len(labelled_by) == 2 and all(i in ids for i in labelled_by)
    titles = [t for t in page.named("title") if "svg" in t.parents]
    descs = [t for t in page.named("desc") if "svg" in t.parents]
    assert len(titles) == len(charts) == len(descs)
    # Printing is styled.
    assert any("@media print" in css for css in page.styles)


def test_denying_decision(capgate: Capgate, tmp_path: Path) -> None:
    capgate("plan", "submit", str(short_grace_plan_file(tmp_path)))
    decision = capgate.json("gate", "check", PLAN, code=1)
    assert decision["outcome"] == "deny"
    (event,) = capgate.json("audit", "list", "--action", "gate.check")["items"]

    printed, page, html = report(capgate, tmp_path, PLAN)

    assert printed.startswith(f"DENY {PLAN}@v2: report written to ")
    assert_self_contained_and_accessible(page)
    text = page.text
    assert "DENY" in text and decision["id"] in text
    assert len(decision["violations"]) == 2
    for violation in decision["violations"]:
        assert violation["message"] in text  # escaped in the file, read back as written
        assert violation["rule"] in text
        for key, value in violation["details"].items():
            assert key in text
            assert f"{value:g}" in text
    # At least the load, distribution, scenario and warm-up charts, each with its title.
    charts = page.named("svg")
    assert len(charts) >= 4
    assert {"chart-load-ttft", "chart-load-tpot", "chart-warmup"} <= {
        svg.attrs["id"] for svg in charts
    }
    assert any(svg.attrs["id"].startswith("chart-scenario-") for svg in charts)
    assert any(svg.attrs["id"].startswith("chart-dist-") for svg in charts)
    # Every input's digest, and the audit event that recorded the decision.
    inputs = decision["inputs"]
    for role in ("plan", "workload", "provider"):
        assert inputs[role]["digest"] in html
    assert inputs["evidence"][0]["digest"] in html
    assert inputs["recomputation"] in html
    assert decision["input_digest"] in html
    assert f"event #{event['seq']}" in text and event["hash"] in html
    assert "nan" not in html.lower().replace("nano", "")


def test_allowing_decision_and_choosing_a_decision(capgate: Capgate, tmp_path: Path) -> None:
    allowed = capgate.json("gate", "check", PLAN)
    capgate("plan", "submit", str(short_grace_plan_file(tmp_path)))
    denied = capgate.json("gate", "check", PLAN, code=1)

    # A pinned version reports that version's latest decision.
    printed, page, _ = report(capgate, tmp_path, f"{PLAN}@v1")
    assert printed.startswith(f"ALLOW {PLAN}@v1")
    assert_self_contained_and_accessible(page)
    assert "ALLOW" in page.text and allowed["id"] in page.text and denied["id"] not in page.text
    assert "every policy holds" in page.text
    # The calibration says how much of the fit it used and which held-out group is worst.
    assert "share of the fit used (the largest at which no held-out group does worse)" in (
        page.text
    )
    # The worked example's two classes pass the per-group rule: the worst group is named
    # after the example's own load test (a rejected or absent check would show none).
    assert (
        "worst held-out group (its error against the defaults'): chat-assistant-h100-mixed-2026-11 "
    ) in page.text
    # A bare name with --decision: that decision, on whichever version it was taken.
    printed, page, _ = report(capgate, tmp_path, PLAN, "--decision", allowed["id"])
    assert printed.startswith(f"ALLOW {PLAN}@v1") and allowed["id"] in page.text
    printed, _, _ = report(capgate, tmp_path, PLAN)
    assert printed.startswith(f"DENY {PLAN}@v2")


def test_plan_without_a_decision_is_read_only(capgate: Capgate, tmp_path: Path) -> None:
    before = capgate.json("audit", "list", "--limit", "500")["items"]

    printed, page, _ = report(capgate, tmp_path, PLAN)

    assert printed.startswith(f"NO DECISION YET {PLAN}@v1")
    assert_self_contained_and_accessible(page)
    assert "NO DECISION YET" in page.text
    assert "Computed for this report and not stored" in page.text
    assert len(page.named("svg")) >= 4
    # Nothing decided, nothing stored, nothing appended to the trail.
    assert capgate.json("gate", "list")["items"] == []
    assert capgate.json("audit", "list", "--limit", "500")["items"] == before


def test_default_output_is_out_plan_name(
    capgate: Capgate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    capgate.json("gate", "check", PLAN)
    monkeypatch.chdir(tmp_path)
    printed = capgate("report", f"{PLAN}@v1").stdout
    assert printed.strip().startswith(f"ALLOW {PLAN}@v1: report written to out/{PLAN}.html (")
    assert (tmp_path / "out" / f"{PLAN}.html").is_file()


# ---- errors, as the installed command prints them --------------------------------------


def capgate_process(
    db: Path, *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(CAPGATE_DATABASE_URL=f"sqlite:///{db}", CAPGATE_PRINCIPAL="ci")
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = str(root)
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd or root,
    )


@pytest.fixture(scope="module")
def registry_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite registry holding the example's workload, provider and plan."""
    db = tmp_path_factory.mktemp("report-errors") / "registry.db"
    assert capgate_process(db, "db", "upgrade").returncode == 0
    for kind in ("workload", "provider", "plan"):
        result = capgate_process(db, kind, "submit", str(example_path(kind)))
        assert result.returncode == 0, result.stderr
    return db


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no-such-plan"], "capgate: error: no plan record no-such-plan"),
        ([f"{PLAN}@v7"], f"capgate: error: no plan record {PLAN}@v7"),
        (
            [PLAN, "--decision", "00000000-0000-4000-8000-000000000000"],
            "capgate: error: no decision 00000000-0000-4000-8000-000000000000",
        ),
        ([PLAN, "--decision", "not-a-uuid"], "capgate: error: decision_id: 'not-a-uuid' is not"),
    ],
)
def test_unknown_plan_or_decision_exits_2_with_one_line(
    registry_file: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    out = tmp_path / "report.html"
    result = capgate_process(registry_file, "report", *args, "--output", str(out))
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(message), result.stderr
    assert result.stderr.count("\n") == 1 and result.stdout == ""
    assert not out.exists()


def test_a_server_is_refused_by_name(registry_file: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(CAPGATE_DATABASE_URL=f"sqlite:///{registry_file}", CAPGATE_SERVER="http://x:1")
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", "report", PLAN, "--output", str(tmp_path / "r.html")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 2
    assert result.stderr.startswith("capgate: error: capgate report reads the registry directly")
    assert result.stderr.count("\n") == 1


def test_a_decision_about_another_plan_version_exits_2(registry_file: Path, tmp_path: Path) -> None:
    decided = capgate_process(registry_file, "gate", "check", PLAN, "--json")
    decision = json.loads(decided.stdout)
    other = example("plan")
    other["replicas_per_zone"] = {zone: 4 for zone in other["replicas_per_zone"]}
    path = tmp_path / "plan-v2.yaml"
    path.write_text(yaml.safe_dump(other))
    assert capgate_process(registry_file, "plan", "submit", str(path)).returncode == 0
    result = capgate_process(
        registry_file, "report", f"{PLAN}@v2", "--decision", decision["id"], "--output",
        str(tmp_path / "r.html"),
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == (
        f"capgate: error: decision: decision {decision['id']} is about {PLAN}@v1, not {PLAN}@v2\n"
    )
