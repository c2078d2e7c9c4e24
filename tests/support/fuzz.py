"""Schemathesis against a live `capgate serve`: one harness for the test and the benchmark.

`fuzz_server` migrates nothing itself: give it a migrated, empty registry URL. It mints an
API token with every role (so generated requests reach the handlers, not only 401/403),
starts `capgate serve --auth-config` on that registry, and seeds it with the worked example
(workload, provider, plan, imported load test, one gate decision) so that GET-by-name
routes hit real records some of the time. `fuzz` then drives every operation of the
served OpenAPI document with Hypothesis, positive and negative data, and runs every
response check schemathesis has (see `EXCLUDED_CHECKS`), collecting the failures
instead of stopping at the first.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.core.result import Ok

from registry.keys import private_key_pem
from registry.storage.database import Database
from tests.factories import example, example_import
from tests.support.auth import bearer, token_for
from tests.support.serve import capgate_serve

PLAN = "chat-assistant-prod"
MODES = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)

# Every check schemathesis registers runs (`case.validate_response` with no explicit list
# runs all enabled ones, and all are enabled by default), except:
# - positive_data_acceptance: schema-valid data is not necessarily acceptable data. The
#   OpenAPI document cannot express capgate's semantic rules (a plan's workload must
#   exist, owners must be teams the token carries, evidence must match its plan, ...),
#   so a well-typed request is rightly refused with 422 or 409 most of the time.
EXCLUDED_CHECKS = ("positive_data_acceptance",)


@dataclass(frozen=True)
class LiveServer:
    backend: str
    url: str
    headers: dict[str, str]  # an API token with every role


@dataclass
class Finding:
    """One kind of failure on one operation, with the first request that showed it."""

    operation: str
    check: str
    title: str
    status: int
    detail: str
    count: int = 1

    def describe(self) -> str:
        return (
            f"{self.operation}: {self.check} ({self.title}), HTTP {self.status}, "
            f"seen {self.count}x\n{self.detail}"
        )


@dataclass
class FuzzReport:
    backend: str
    operations: int = 0
    cases: int = 0
    server_errors: int = 0  # responses with a 5xx status
    findings: dict[tuple[str, str, str, int], Finding] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def conformance_failures(self) -> int:
        """Failed checks on non-5xx answers (a 5xx is counted once, as `server_errors`)."""
        return sum(f.count for f in self.findings.values() if f.status < 500)

    def summary(self) -> str:
        if not self.findings:
            return f"{self.backend}: no failures in {self.cases} cases"
        lines = [f"{self.backend}: {len(self.findings)} distinct failures in {self.cases} cases"]
        lines += [f.describe() for f in self.findings.values()]
        return "\n\n".join(lines)


def _seed(server: LiveServer) -> None:
    """The worked example through the API, as scripts/demo.sh registers it, and a decision."""
    with httpx.Client(base_url=server.url, headers=server.headers, timeout=60) as client:
        for collection, kind in (
            ("workloads", "workload"),
            ("providers", "provider"),
            ("plans", "plan"),
        ):
            response = client.post(f"/v1/{collection}", json=example(kind))
            response.raise_for_status()
        response = client.post("/v1/evidence/import", **example_import(PLAN))
        response.raise_for_status()
        client.post("/v1/gate/checks", json={"plan": PLAN}).raise_for_status()


@contextmanager
def fuzz_server(backend: str, database_url: str, workdir: Path) -> Iterator[LiveServer]:
    """`capgate serve` on a migrated, empty registry, seeded, with an every-role token."""
    database = Database(database_url)
    try:
        token = token_for(database, subject="fuzzer")
    finally:
        database.engine.dispose()
    auth_config = workdir / "auth.yaml"
    auth_config.write_text("issuers: []\n")
    signing_key = workdir / "attest.pem"
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    signing_key.write_bytes(private_key_pem(Ed25519PrivateKey.generate()))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(
        CAPGATE_DATABASE_URL=database_url,
        CAPGATE_SIGNING_KEY=str(signing_key),
        XDG_DATA_HOME=str(workdir / "xdg-data"),
    )
    with capgate_serve(env, "--auth-config", str(auth_config), "--log-level", "warning") as url:
        server = LiveServer(backend, url, bearer(token))
        _seed(server)
        yield server


def load_schema(server: LiveServer) -> Any:
    """The served OpenAPI document, every request sent to the server with the token."""
    config = schemathesis.Config()
    # The schema is a read like any other: fetched with the token (registry.api.app).
    schema = schemathesis.openapi.from_url(
        server.url + "/openapi.json", config=config, headers=server.headers
    )
    schema.config.update(base_url=server.url, headers=server.headers)
    return schema


def _excluded() -> list[Any]:
    return [getattr(schemathesis.checks, name) for name in EXCLUDED_CHECKS]


def _record(report: FuzzReport, label: str, failure: Failure, status: int, curl: str) -> None:
    key = (label, type(failure).__name__, failure.title, status)
    if key in report.findings:
        report.findings[key].count += 1
        return
    message = failure.message if len(failure.message) < 1500 else failure.message[:1500] + "..."
    report.findings[key] = Finding(
        operation=label,
        check=type(failure).__name__,
        title=failure.title,
        status=status,
        detail=f"{message}\n  reproduce: {curl}",
    )


def fuzz(
    server: LiveServer,
    max_examples: int,
    progress: Callable[[str], None] | None = None,
) -> FuzzReport:
    """Every operation, `max_examples` positive and as many negative cases each."""
    schema = load_schema(server)
    report = FuzzReport(server.backend)
    excluded = _excluded()
    started = time.monotonic()
    session = requests.Session()
    session.headers.update(server.headers)
    for result in schema.get_all_operations():
        if not isinstance(result, Ok):  # an operation schemathesis cannot read
            raise AssertionError(f"invalid operation in the OpenAPI document: {result}")
        operation = result.ok()
        report.operations += 1
        for mode in MODES:
            _fuzz_operation(operation, mode, max_examples, session, excluded, report)
        if progress:
            progress(
                f"{server.backend}: {operation.label}: {report.cases} cases, "
                f"{len(report.findings)} distinct failures, {time.monotonic() - started:.0f} s"
            )
    report.seconds = time.monotonic() - started
    return report


def _fuzz_operation(
    operation: Any,
    mode: schemathesis.GenerationMode,
    max_examples: int,
    session: requests.Session,
    excluded: list[Any],
    report: FuzzReport,
) -> None:
    strategy = operation.as_strategy(generation_mode=mode)

    @settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        report.cases += 1
        response = case.call(session=session, timeout=60)
        if response.status_code >= 500:
            report.server_errors += 1
        try:
            case.validate_response(
                response, headers=dict(session.headers), excluded_checks=excluded
            )
        except FailureGroup as group:
            curl = case.as_curl_command(headers=dict(response.request.headers))
            for failure in group.exceptions:
                _record(report, operation.label, failure, response.status_code, curl)

    # Unsatisfiable: nothing to generate, e.g. negative data for an operation whose only
    # input is an unconstrained string (a path segment is a string whatever it holds).
    with suppress(Unsatisfiable):
        run()


def print_progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
