"""A recomputation that runs past the planner's wall-time budget is a clear 422 / exit 2."""

from __future__ import annotations

import os

import pytest

from registry.api.app import create_app
from registry.storage.database import Database
from tests.api.test_gate_api import register, settings
from tests.cli.test_cli import capgate, example_path
from tests.support.auth import client_for


@pytest.mark.usefixtures("cold_planner_cache")  # the planner must run
def test_fail_past_the_budget_over_the_api(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    with client_for(create_app(database, settings())) as client:
        register(client)
        monkeypatch.setenv("CAPGATE_PLANNER_BUDGET_S", "0.000001")
        response = client.post("/v1/plans/chat-assistant-prod/recomputations")
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "PlannerBudgetExceeded"
    assert body["message"].startswith("the recomputation ran past the planner's budget")


def test_fail_past_the_budget_on_the_cli(database_url: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(CAPGATE_DATABASE_URL=database_url, CAPGATE_PRINCIPAL="alice")
    for kind in ("workload", "provider"):
        assert capgate(kind, "submit", str(example_path(kind)), env=env).returncode == 0
    env["CAPGATE_PLANNER_BUDGET_S"] = "0.000001"
    result = capgate("plan", "size", str(example_path("plan")), env=env)
    assert result.returncode == 2
    assert "ran past the planner's budget of 1e-06 s (CAPGATE_PLANNER_BUDGET_S)" in result.stderr
    assert "Traceback" not in result.stderr
