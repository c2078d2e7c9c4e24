"""scripts/demo_observe.sh, as the demo runs it, on a registry holding the worked example."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from registry.storage import migrate
from tests.support.prometheus import PrometheusBinaries

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "chat-assistant"
LOAD_TEST = EXAMPLE / "load-test"


def test_demo_shows_no_drift_then_names_the_drift(
    prometheus_binaries: PrometheusBinaries, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    migrate.upgrade(url)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")},
        "CAPGATE_DATABASE_URL": url,
        "CAPGATE_PROMETHEUS_BINARY": str(prometheus_binaries.prometheus),
    }

    def capgate(*args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "cli.main", *args], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr

    capgate("workload", "submit", str(EXAMPLE / "workload.yaml"))
    capgate("provider", "submit", str(EXAMPLE / "provider.yaml"))
    capgate("plan", "submit", str(EXAMPLE / "plan.yaml"))
    measured_at = (datetime.now(UTC) - timedelta(days=6)).strftime("%Y-%m-%dT00:00:00Z")
    capgate(
        "evidence", "import", "--workload", "chat-assistant", "--provider", "llama31-8b-h100-vllm",
        "--plan", "chat-assistant-prod", "--replicas", "1", "--measured-at", measured_at,
        "--class", f"interactive={LOAD_TEST / 'interactive.profile_export_aiperf.json'}",
        "--class", f"batch={LOAD_TEST / 'batch.profile_export_aiperf.json'}",
    )  # fmt: skip
    demo = subprocess.run(
        ["bash", str(ROOT / "scripts" / "demo_observe.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert demo.returncode == 0, demo.stdout + demo.stderr
    as_profiled, grown = demo.stdout.split("== interactive prompts 30 % longer")
    assert "no drift from workload chat-assistant@v1" in as_profiled
    assert "DRIFT from workload chat-assistant@v1:" in grown
    assert "classes.interactive.prompt_tokens.p99: 6100.0 -> " in grown
    assert "classes.batch" not in grown.split("DRIFT")[1]
    # Nothing submitted: the demo leaves the registry as it found it.
    listed = subprocess.run(
        [sys.executable, "-m", "cli.main", "observation", "list", "--json"],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert '"items": []' in listed.stdout
