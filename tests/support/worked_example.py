"""The worked example registered through the CLI, as scripts/demo.sh registers it.

``run`` is how a test runs `capgate ARGS` (in process or as a subprocess, on its own
registry); these only say which commands the worked example takes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "chat-assistant"
LOAD_TEST = EXAMPLE / "load-test"
PLAN = "chat-assistant-prod"


def submit_records(run: Callable[..., object]) -> None:
    """The workload, provider and plan."""
    for kind in ("workload", "provider", "plan"):
        run(kind, "submit", str(EXAMPLE / f"{kind}.yaml"))


def import_load_test(run: Callable[..., object], *, days_ago: float = 6) -> None:
    """The example's load test against the plan, measured ``days_ago`` (within the
    90-day freshness limit, as the demo dates it)."""
    measured_at = (datetime.now(UTC) - timedelta(days=days_ago)).strftime("%Y-%m-%dT00:00:00Z")
    run(
        "evidence", "import", "--workload", "chat-assistant",
        "--provider", "llama31-8b-h100-vllm", "--plan", PLAN,
        "--replicas", "1", "--measured-at", measured_at,
        "--class", f"interactive={LOAD_TEST / 'interactive.profile_export_aiperf.json'}",
        "--class", f"batch={LOAD_TEST / 'batch.profile_export_aiperf.json'}",
    )  # fmt: skip
