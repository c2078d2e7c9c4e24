"""`capgate gate check PLAN --server URL`: the thin client a release pipeline runs.

One live server per module (a real uvicorn on loopback that requires an API token) on a
copy of the worked example's registry, where ``chat-assistant-prod@v1`` allows and
``@v2`` (a drain grace period too short) denies, both with warnings (an old load test
beside the fresh one). The CLI runs as a real process whose own database does not exist:
every decision below is the server's.
"""

from __future__ import annotations

import http.server
import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cli.backend import LocalBackend
from cli.gate_reports import Format, render
from tests.cli.test_cli import running_server
from tests.cli.test_gate_cli import capgate, import_load_test
from tests.factories import short_grace_plan_file
from tests.gate.test_manifest_consistency import K8S, drifted, line_of
from tests.support.cli_registry import copy_registry, local_env
from tests.support.cli_runner import capgate_in_process
from tests.support.http_stub import serving

PLAN = "chat-assistant-prod"
ALLOWS, DENIES = f"{PLAN}@v1", f"{PLAN}@v2"
DECISION_ID = re.compile(r"\(decision ([0-9a-f-]{36})[,)]")
# What the thin client must not import: it is one round trip, not a registry.
HEAVY = ("sqlalchemy", "pydantic", "registry.planner", "registry.storage", "numpy", "fastapi")


@dataclass(frozen=True)
class Remote:
    url: str
    env: dict[str, str]  # CAPGATE_TOKEN for the server; a local database that does not exist
    local: dict[str, str]  # the server's own registry, opened in place (no server)
    database_url: str

    def check(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return capgate("gate", "check", *args, "--server", self.url, env=env or self.env)


@pytest.fixture(scope="module")
def remote(seeded: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Remote]:
    folder = tmp_path_factory.mktemp("remote-gate")
    # The worked example (tests/conftest.py's `seeded`), its evidence dated last week.
    local = local_env(copy_registry(seeded, folder))
    # Evidence past its maximum age beside the fresh one: decisions carry warnings too.
    # Set up through the console entry point in this process (tests/support/cli_runner.py).
    old = import_load_test(
        folder, local, days_ago=120, run=1, name="old-load-test", cli=capgate_in_process
    )
    assert old.returncode == 0, old.stderr
    submitted = capgate_in_process("plan", "submit", str(short_grace_plan_file(folder)), env=local)
    assert submitted.returncode == 0, submitted.stderr
    assert submitted.stdout.startswith(f"{DENIES} ")
    database_url = local["CAPGATE_DATABASE_URL"]
    with running_server(database_url) as env:
        # --server is given on each command line, not through the environment.
        url = env.pop("CAPGATE_SERVER")
        yield Remote(url=url, env=env, local=local, database_url=database_url)


def decision_id(result: subprocess.CompletedProcess[str]) -> str:
    """The decision the one-line verdict names (stdout for text, else stderr)."""
    found = DECISION_ID.search(result.stdout + result.stderr)
    assert found, result.stdout + result.stderr
    return found.group(1)


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """Exit 2, nothing on stdout, exactly one `capgate: error:` line on stderr."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    assert result.stderr.endswith("\n") and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("capgate: error: "), result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr.rstrip("\n")


# ---- decisions through the server --------------------------------------------------------


def test_allow_exits_0_and_deny_exits_1_naming_the_verdict(remote: Remote) -> None:
    allowed = remote.check(ALLOWS)
    assert (allowed.returncode, allowed.stderr) == (0, ""), allowed.stdout + allowed.stderr
    assert allowed.stdout.startswith(f"ALLOW {ALLOWS} (decision ")
    assert ", engine embedded)" in allowed.stdout.splitlines()[0]

    denied = remote.check(DENIES)
    assert (denied.returncode, denied.stderr) == (1, ""), denied.stdout + denied.stderr
    assert denied.stdout.startswith(f"DENY {DENIES}: 2 violation(s) of drain_configured ")
    assert "drain_configured.grace_period_too_short" in denied.stdout
    # The server decided and stored it, as the token's subject: the local registry of the
    # CLI's environment does not exist.
    stored = LocalBackend(remote.database_url, "ci").get_decision(decision_id(denied))
    assert (stored.plan, stored.outcome.value, stored.principal) == (DENIES, "deny", "bob")


@pytest.mark.parametrize("plan", [ALLOWS, DENIES], ids=["allow", "deny"])
@pytest.mark.parametrize("chosen", list(Format), ids=[f.value for f in Format])
def test_every_format_renders_the_server_decision_as_a_local_check_would(
    remote: Remote, plan: str, chosen: Format
) -> None:
    """The report from the server's JSON is byte for byte the one rendered from the same
    decision as the registry stores it (the DecisionView a local check renders)."""
    plan_file = (
        "deploy/plan.yaml" if chosen in (Format.github, Format.sarif, Format.gitlab) else None
    )
    result = remote.check(
        plan, "--format", chosen.value, *(("--plan-file", plan_file) if plan_file else ())
    )
    assert result.returncode == (0 if plan == ALLOWS else 1), result.stdout + result.stderr
    stored = LocalBackend(remote.database_url, "ci").get_decision(decision_id(result))
    assert stored.plan == plan
    assert stored.warnings and (stored.violations or plan == ALLOWS)
    assert result.stdout == render(stored, chosen, plan_file) + "\n"
    # Any format but text: the report on stdout, the verdict line on stderr.
    assert result.stderr == ("" if chosen is Format.text else stored.verdict() + "\n")


def test_json_is_the_decision_gate_show_reads_from_the_registry(remote: Remote) -> None:
    result = remote.check(DENIES, "--format", "json")
    assert result.returncode == 1, result.stderr
    sent = json.loads(result.stdout)
    shown = capgate("gate", "show", sent["id"], "--json", env=remote.local)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == sent
    assert sent["principal"] == "bob"
    assert {v["policy"] for v in sent["violations"]} == {"drain_configured"}


def test_manifests_are_sent_to_the_server_and_drift_denies_at_file_and_line(
    remote: Remote, tmp_path: Path
) -> None:
    agreed = remote.check(ALLOWS, "--manifests", str(K8S), "--format", "json")
    assert agreed.returncode == 0, agreed.stdout + agreed.stderr
    assert json.loads(agreed.stdout)["outcome"] == "allow"

    folder = drifted(tmp_path)
    deployment = folder / "deployment.yaml"
    grace = line_of(deployment, "terminationGracePeriodSeconds")
    github = remote.check(ALLOWS, "--manifests", str(folder), "--format", "github")
    assert github.returncode == 1, github.stdout + github.stderr
    assert github.stderr.startswith(f"DENY {ALLOWS}: 8 violation(s) of manifests_consistent ")
    annotations = [line for line in github.stdout.splitlines() if "manifests_consistent" in line]
    assert len(annotations) == 8  # 3 zones, the total, TP, GPUs, grace period, metric
    (grace_line,) = [line for line in annotations if "termination_grace" in line]
    assert grace_line.startswith(f"::error file={deployment},line={grace},title=capgate ")
    assert f"is 300 in the plan but 30 in {deployment}:{grace}" in grace_line
    # The same manifests, the same plan: without them the server allows.
    assert remote.check(ALLOWS).returncode == 0


# ---- errors: exit 2 and one line, never a decision ---------------------------------------


def test_fail_server_down_cannot_reach(remote: Remote) -> None:
    # A bound socket that does not listen: connections are refused, and no one else can
    # take the port while the test runs.
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{unused.getsockname()[1]}"
        result = capgate("gate", "check", ALLOWS, "--server", url, env=remote.env)
    line = one_error_line(result)
    assert line.startswith(f"capgate: error: cannot reach capgate server {url}: ")


def test_fail_no_token_is_refused_in_one_line(remote: Remote) -> None:
    anonymous = {k: v for k, v in remote.env.items() if k != "CAPGATE_TOKEN"}
    line = one_error_line(remote.check(ALLOWS, env=anonymous))
    assert line == (
        "capgate: error: authentication required: send Authorization: Bearer <token> "
        f"(HTTP 401 from {remote.url})"
    )
    forged = dict(remote.env, CAPGATE_TOKEN="cgt_not-a-token")
    assert "(HTTP 401 from " in one_error_line(remote.check(ALLOWS, env=forged))


def test_fail_unknown_plan_names_it(remote: Remote) -> None:
    line = one_error_line(remote.check("no-such-plan"))
    assert line == f"capgate: error: no plan record no-such-plan (HTTP 404 from {remote.url})"


# ---- a server that answers garbage -------------------------------------------------------


# Every field of a decision, but violations that are not objects and warnings that are
# not a list of strings: no report can be rendered from it.
WRONG_TYPES: dict[str, Any] = {
    "id": "00000000-0000-0000-0000-000000000000",
    "plan": ALLOWS,
    "outcome": "deny",
    "engine": "embedded",
    "bundle_revision": "sha256:0",
    "input_digest": "sha256:0",
    "inputs": {},
    "violations": ["drain_configured"],
    "waived": [],
    "waivers_used": [],
    "warnings": [{"message": "not a string"}],
    "error": None,
    "principal": "bob",
    "created_at": "2026-01-01T00:00:00Z",
    "needs_recheck": None,
}


class Garbage(http.server.BaseHTTPRequestHandler):
    """Answers POST /<case>/v1/gate/checks as `case` says."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        case = self.path.split("/")[1]
        if case == "not-http":
            self.wfile.write(b"SSH-2.0-OpenSSH_9.6\r\n")
            self.close_connection = True
            return
        if case in ("cut-short", "cut-short-500"):
            self.send_response(200 if case == "cut-short" else 500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "500")
            self.end_headers()
            self.wfile.write(b'{"id": ')
            self.close_connection = True
            return
        status, kind, body = {
            "not-json": (200, "text/plain", b"all good"),
            "not-a-decision": (200, "application/json", b'{"hello": 1}'),
            "a-list": (200, "application/json", b"[1, 2]"),
            "wrong-types": (200, "application/json", json.dumps(WRONG_TYPES).encode()),
            "html-500": (500, "text/html", b"<html><body><h1>500</h1>oops</body></html>"),
            # The one error shape, but a message over several lines (a proxy's, a stack).
            "multi-line-503": (503, "application/json", b'{"message": "down\\n  for\\nrepair"}'),
        }[case]
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def garbage_server() -> Iterator[str]:
    with serving(Garbage) as url:
        yield url


NOT_A_DECISION = (
    "capgate server {base} answered the gate check with something that is not a decision"
)
# Each case, and how the one line starts after `capgate: error: `.
GARBAGE = {
    "not-json": NOT_A_DECISION,
    "not-a-decision": NOT_A_DECISION,
    "a-list": NOT_A_DECISION,
    "wrong-types": NOT_A_DECISION,
    "html-500": "Internal Server Error (HTTP 500 from {base})",
    "cut-short-500": "Internal Server Error (HTTP 500 from {base})",
    "multi-line-503": "down for repair (HTTP 503 from {base})",
    "not-http": "cannot reach capgate server {base}: BadStatusLine(",
    "cut-short": "cannot reach capgate server {base}: IncompleteRead(",
}


@pytest.mark.parametrize("case", list(GARBAGE))
def test_fail_garbage_answer_exits_2_in_one_line(
    remote: Remote, garbage_server: str, case: str
) -> None:
    base = f"{garbage_server}/{case}"
    result = capgate("gate", "check", ALLOWS, "--server", base, env=remote.env)
    line = one_error_line(result)
    assert line.startswith(f"capgate: error: {GARBAGE[case].format(base=base)}"), line
    if GARBAGE[case] == NOT_A_DECISION:
        assert line == f"capgate: error: {NOT_A_DECISION.format(base=base)}"


# ---- what the thin client imports --------------------------------------------------------

REPOSITORY = Path(__file__).resolve().parents[2]

IMPORTS_AFTER_CHECK = """
import json, sys
from cli.main import run
sys.argv = ["capgate", "gate", "check", sys.argv[1], "--server", sys.argv[2]]
try:
    run()
except SystemExit as done:
    code = done.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def test_check_through_the_server_imports_no_orm_schema_or_planner(remote: Remote) -> None:
    result = subprocess.run(
        [sys.executable, "-c", IMPORTS_AFTER_CHECK, ALLOWS, remote.url],
        env=remote.env,
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    verdict, report = result.stdout.rstrip("\n").rsplit("\n", 1)
    assert verdict.startswith(f"ALLOW {ALLOWS} (decision "), result.stdout + result.stderr
    ran = json.loads(report)
    assert ran["code"] == 0
    modules = ran["modules"]
    assert "cli.remote_gate" in modules and "registry.gate.outcome" in modules
    assert [m for m in modules if m.startswith(HEAVY)] == []


def test_gate_service_does_not_import_the_planner_engine() -> None:
    """A check that reuses a stored recomputation never needs NumPy or the simulator."""
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys; import registry.gate.service; "
            "print(json.dumps(sorted(sys.modules)))",
        ],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    modules = json.loads(result.stdout)
    assert "registry.gate.service" in modules
    assert "registry.planner.recomputation" not in modules
    assert [m for m in modules if m == "numpy" or m.startswith("numpy.")] == []
