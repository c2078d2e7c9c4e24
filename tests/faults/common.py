"""What every fault test needs: a seeded registry, the CLI, and the ledger checks.

A fault must end in an error (CLI exit 2 with one `capgate: error:` line, or an HTTP
5xx in the one error shape), never an allow and never a traceback; afterwards the
registry's audit chain verifies, every acknowledged write is there, every refused one
is not, and each series' versions run 1..n without a gap or a duplicate.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import httpx
from sqlalchemy import select

from registry.audit.service import verify
from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.records.views import SubmitResult
from registry.settings import Settings
from registry.storage.database import Database, WriteContext
from registry.storage.models import DecisionRow, RecordRow
from tests.factories import example, import_example_evidence

CAPGATE = [sys.executable, "-m", "cli.main"]
PLAN = "chat-assistant-prod"


def embedded_settings() -> Settings:
    """A server's settings with the embedded policy engine (the database is the app's)."""
    return Settings(
        database_url="unused",
        server=None,
        principal="unused",
        policy_engine="embedded",
        opa_url=None,
    )


def cli_env(database_url: str, **extra: str) -> dict[str, str]:
    """The CLI's environment: this registry, a principal, nothing else of CAPGATE_*."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(CAPGATE_DATABASE_URL=database_url, CAPGATE_PRINCIPAL="faults", **extra)
    return env


def capgate(
    *args: str, env: dict[str, str], uid: int | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the CLI; `uid` runs it as that unprivileged user (setpriv, we are root)."""
    prefix: list[str] = []
    if uid is not None:
        prefix = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    return subprocess.run(
        [*prefix, *CAPGATE, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def assert_cli_error(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    """Exit 2, one `capgate: error:` line on stderr naming every needle, no traceback,
    and no verdict on stdout."""
    stderr = result.stderr.strip()
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    assert len(stderr.splitlines()) == 1, result.stderr
    assert stderr.startswith("capgate: error: "), result.stderr
    assert "ALLOW" not in result.stdout + result.stderr
    for needle in needles:
        assert needle in stderr, result.stderr
    return stderr


def assert_http_error(response: httpx.Response, status: int = 503, *needles: str) -> str:
    """The documented error shape `{"error", "message"}` with `status`."""
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert set(body) <= {"error", "message", "problems", "details"}, body
    assert isinstance(body["error"], str) and isinstance(body["message"], str), body
    assert "Traceback" not in body["message"]
    for needle in needles:
        assert needle in body["message"], body
    return str(body["message"])


def submit_workload(database: Database, description: str) -> int:
    """A new version of the example workload; its version number."""
    record = validate_record(RecordKind.workload, example("workload", description=description))
    result = database.write(
        lambda ctx: service.submit(ctx, kind=RecordKind.workload, record=record),
        principal="faults",
    )
    assert result.created
    return result.record.version


def seed(database: Database) -> None:
    """The worked example: workload, provider, plan, and its load test from last week."""
    for kind in (RecordKind.workload, RecordKind.provider, RecordKind.plan):
        database.write(
            partial(_submit, kind=kind, record=validate_record(kind, example(kind))),
            principal="faults",
        )
    import_example_evidence(
        database, measured_at=(datetime.now(UTC) - timedelta(days=6)).isoformat()
    )


def _submit(ctx: WriteContext, *, kind: RecordKind, record: Any) -> SubmitResult:
    return service.submit(ctx, kind=kind, record=record)


@dataclass
class Ledger:
    """What a client was told: writes acknowledged and writes refused."""

    acknowledged: set[str] = field(default_factory=set)  # workload descriptions
    refused: set[str] = field(default_factory=set)
    decisions: set[str] = field(default_factory=set)  # decision ids acknowledged


def workload_descriptions(database: Database) -> dict[int, str]:
    with database.reading() as session:
        rows = session.execute(
            select(RecordRow.version, RecordRow.content).where(
                RecordRow.kind == RecordKind.workload.value, RecordRow.name == "chat-assistant"
            )
        ).all()
    return {version: json.loads(content).get("description", "") for version, content in rows}


def assert_registry_whole(database: Database, ledger: Ledger | None = None) -> dict[str, Any]:
    """The audit chain verifies; versions are 1..n per series; the ledger holds."""
    with database.reading() as session:
        report = verify(session)
        series: dict[tuple[str, str], list[int]] = {}
        for kind, name, version in session.execute(
            select(RecordRow.kind, RecordRow.name, RecordRow.version)
        ).all():
            series.setdefault((kind, name), []).append(version)
        decisions = set(session.scalars(select(DecisionRow.id)).all())
    assert report.intact, report.problems
    for key, versions in series.items():
        assert sorted(versions) == list(range(1, len(versions) + 1)), (key, versions)
    if ledger is not None:
        stored = set(workload_descriptions(database).values())
        assert ledger.acknowledged <= stored, ledger.acknowledged - stored
        assert not (ledger.refused & stored), ledger.refused & stored
        assert ledger.decisions <= decisions, ledger.decisions - decisions
    return {"events": report.events, "decisions": decisions, "series": series}
