"""The worked example registered for the report tests (tests/report/*), as a user does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.factories import EXAMPLE_EVIDENCE, LOAD_TEST_DIR, example_path
from tests.support.cli_runner import Capgate

PLAN = "chat-assistant-prod"


@pytest.fixture
def capgate(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Capgate:
    """The worked example registered and its load test imported (dated last week)."""
    for name in ("CAPGATE_SERVER", "CAPGATE_TOKEN", "CAPGATE_POLICY_ENGINE", "CAPGATE_OPA_URL"):
        monkeypatch.delenv(name, raising=False)
    # Roles from a server's configuration would change which decision a report shows.
    monkeypatch.delenv("CAPGATE_AUTH_CONFIG", raising=False)
    monkeypatch.setenv("CAPGATE_DATABASE_URL", database_url)
    monkeypatch.setenv("CAPGATE_PRINCIPAL", "alice")
    run = Capgate()
    for kind in ("workload", "provider", "plan"):
        run(kind, "submit", str(example_path(kind)))
    measured_at = (datetime.now(UTC) - timedelta(days=6)).strftime("%Y-%m-%dT00:00:00Z")
    run(
        "evidence", "import", "--workload", "chat-assistant", "--provider", "llama31-8b-h100-vllm",
        "--plan", PLAN, "--replicas", "1", "--measured-at", measured_at,
        "--class", f"interactive={LOAD_TEST_DIR / 'interactive.profile_export_aiperf.json'}",
        "--class", f"batch={LOAD_TEST_DIR / 'batch.profile_export_aiperf.json'}",
        "--name", EXAMPLE_EVIDENCE,
    )  # fmt: skip
    return run
