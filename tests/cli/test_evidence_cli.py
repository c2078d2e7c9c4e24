"""`capgate evidence import|list --stale|history` and `workload from-trace`, as a user runs them.

Real processes, on the embedded registry and against a server, on both databases.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from registry.records import service
from registry.records.documents import validate_record
from registry.records.kinds import RecordKind
from registry.storage import migrate
from registry.storage.database import Database
from tests.cli.test_cli import capgate, running_server
from tests.conftest import sqlite_only
from tests.factories import EXAMPLE_KINDS, example, example_path
from tests.support.cli_runner import capgate_in_process
from tests.support.fixtures import own, shared_root

# Started first by tests/conftest.py: each test four times: local and server, SQLite and PostgreSQL.
# 44 s of an idle core before the refusals ran on SQLite only; 36 s instead of 59 s on the
# same loaded machine since.
pytestmark = pytest.mark.long(27)

# Real files from ../shared/fixtures; a test that uses one skips when it is absent.
FIX = shared_root()
MULTI = (
    FIX / "load-tests" / "guidellm" / "llm-d__llm-d-benchmark__guidellm-report-v2-mockserver.json"
)
# Measured on two replicas (the file does not say so: its folder name does).
VLLM = FIX / "load-tests" / "vllm-bench" / "llm-d__llm-d-benchmark__exp7-h100-vllm-2replicas.json"
GENAI = FIX / "load-tests" / "genai-perf" / "wellflat__k8s-dev__gpt-oss-20b-c1-sdk2501.json"
AZURE = FIX / "traces" / "Azure__AzurePublicDataset__AzureLLMInferenceTrace_code_2023.csv"
ALL_FAILED = own("load-tests/vllm-bench/synthetic__vllm-all-failed-completed-0.json")


def need(*paths: Path) -> None:
    for path in paths:
        if not path.is_file():
            pytest.skip(f"shared fixture absent: {path.name}")


EVIDENCE = "chat-assistant-h100-mixed-2026-11"
AGAINST = (
    "--workload",
    "chat-assistant",
    "--provider",
    "llama31-8b-h100-vllm",
    "--class",
    "interactive",
    "--replicas",
    "2",
)
SLO = ("--ttft-p99-ms", "2000", "--tpot-p99-ms", "100", "--e2e-p99-ms", "60000")
SLO_ALL = (*SLO, "--queue-deadline-ms", "5000")


# What a command prints and stores, in the tests that say so: the console entry point in
# this process (tests/support/cli_runner.py); exit codes and one-line errors stay processes.
run = capgate_in_process


def register(database: Database, kind: RecordKind) -> None:
    record = validate_record(kind, example(kind))
    database.write(lambda ctx: service.submit(ctx, kind=kind, record=record), principal="alice")


@pytest.fixture(params=["local", "server"])
def env(request: pytest.FixtureRequest, database_url: str) -> Iterator[dict[str, str]]:
    """The worked example registered, then the same commands locally and via a server."""
    local = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    local.update(CAPGATE_DATABASE_URL=database_url, CAPGATE_PRINCIPAL="alice")
    # Registered in-process (the submit command has its own tests): it saves a process each.
    database = Database(database_url)
    for kind in EXAMPLE_KINDS:
        register(database, kind)
    database.engine.dispose()
    if request.param == "local":
        yield local
        return
    with running_server(database_url) as remote:
        yield remote


def evidence_names(env: dict[str, str]) -> list[str]:
    listed = run("evidence", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    return [item["name"] for item in json.loads(listed.stdout)["items"]]


def test_import_real_files_stages_and_reimport(env: dict[str, str]) -> None:
    need(MULTI, VLLM)
    first = run("evidence", "import", str(MULTI), str(VLLM), *AGAINST, env=env)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert [line.split()[0] for line in lines] == [
        "llm-d__llm-d-benchmark__guidellm-report-v2-mockserver-stage-0@v1",
        "llm-d__llm-d-benchmark__guidellm-report-v2-mockserver-stage-1@v1",
        "llm-d__llm-d-benchmark__exp7-h100-vllm-2replicas@v1",
    ]
    assert all(line.endswith("(created)") for line in lines)

    again = run("evidence", "import", str(MULTI), str(VLLM), *AGAINST, "--json", env=env)
    assert again.returncode == 0, again.stderr
    body = json.loads(again.stdout)
    assert [r["created"] for r in body] == [False, False, False]
    assert [r["record"]["ref"] for r in body] == [line.split()[0] for line in lines]
    stage = body[1]["record"]["content"]
    assert stage["labels"] == {
        "series": "llm-d__llm-d-benchmark__guidellm-report-v2-mockserver",
        "stage": "1",
    }
    assert stage["tool"]["name"] == "guidellm"
    assert stage["raw_file"]["file_name"] == MULTI.name
    assert stage["raw_file"]["sha256"].startswith("sha256:")
    assert len(evidence_names(env)) == 4


@sqlite_only  # the file is refused before anything is stored
def test_broken_file_exits_2_with_one_line_and_leaves_nothing(
    env: dict[str, str], tmp_path: Path
) -> None:
    need(VLLM)
    broken = tmp_path / "broken.json"
    broken.write_text('{"benchmarks": [')
    result = capgate("evidence", "import", str(VLLM), str(broken), *AGAINST, env=env)
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"capgate: error: {broken}: (file): not JSON")

    unknown = tmp_path / "results.json"
    unknown.write_text('{"hello": "world"}')
    result = capgate("evidence", "import", str(unknown), *AGAINST, env=env)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"capgate: error: {unknown}: (top level): the file's shape matches no supported tool"
    )
    assert evidence_names(env) == [EVIDENCE]


def test_list_stale_and_history(env: dict[str, str], tmp_path: Path) -> None:
    need(VLLM)
    assert run("evidence", "list", "--stale", env=env).stdout == "no stale evidence\n"
    # The vLLM fixture was measured in 2025: past the 90-day maximum.
    imported = run("evidence", "import", str(VLLM), *AGAINST, env=env)
    assert imported.returncode == 0, imported.stderr
    aged = json.loads(run("evidence", "list", "--stale", "--json", env=env).stdout)
    (item,) = aged["items"]
    assert item["ref"] == "llm-d__llm-d-benchmark__exp7-h100-vllm-2replicas@v1"
    assert item["expired"] is True
    assert item["reasons"][0].endswith("past the maximum age of 90 days")

    # A material workload change: p99 prompt of the interactive class +30%.
    workload = tmp_path / "workload.yaml"
    workload.write_text(example_path("workload").read_text().replace("p99: 6100", "p99: 7930", 1))
    assert run("workload", "submit", str(workload), env=env).returncode == 0
    table = run("evidence", "list", "--stale", env=env)
    assert table.returncode == 0, table.stderr
    rows = table.stdout.splitlines()
    assert rows[0].split() == ["REF", "MEASURED", "AGE", "REASON"]
    assert rows[1].startswith(f"{EVIDENCE}@v1")
    assert (
        "workload chat-assistant@v1 -> chat-assistant@v2: classes.interactive.prompt_tokens.p99: "
        "6100.0 -> 7930.0, moved 30% (threshold 0.1)" in rows[1]
    )
    assert "(+1 more)" in rows[2]  # the aged import: changed and too old

    history = run("evidence", "history", EVIDENCE, env=env)
    assert history.returncode == 0, history.stderr
    lines = history.stdout.splitlines()
    assert lines[0] == f"{EVIDENCE}@v1  STALE"
    assert lines[2].endswith("workload chat-assistant@v1 -> chat-assistant@v2")
    assert lines[3].strip() == (
        "classes.interactive.prompt_tokens.p99: 6100.0 -> 7930.0, moved 30% (threshold 0.1)"
    )
    missing = run("evidence", "history", "nothing-here", env=env)
    assert (missing.returncode, missing.stderr.splitlines()[0]) == (
        2,
        "capgate: error: no evidence record nothing-here"
        + (" (HTTP 404 from " + env["CAPGATE_SERVER"] + ")" if "CAPGATE_SERVER" in env else ""),
    )


def test_from_trace_azure_validates_and_submits(env: dict[str, str], tmp_path: Path) -> None:
    need(AZURE)
    out = tmp_path / "azure.yaml"
    written = run(
        "workload", "from-trace", str(AZURE), "--name", "azure-code", *SLO_ALL,
        "--window", "60s", "--trace-ref", "azure-code-2023", "--output", str(out), env=env,
    )  # fmt: skip
    assert written.returncode == 0, written.stderr
    assert written.stdout == f"wrote {out}: 8819 requests (azure trace), classes default\n"
    document = yaml.safe_load(out.read_text())
    profile = validate_record(RecordKind.workload, document)
    assert profile.model_dump()["measurement"]["requests"] == 8819
    assert document["classes"][0]["prompt_tokens"]["samples"] == 8819
    assert document["classes"][0]["slo"]["queue_deadline_ms"] == 5000

    submitted = run("workload", "submit", str(out), env=env)
    assert submitted.returncode == 0, submitted.stderr
    assert submitted.stdout.startswith("azure-code@v1 ")
    # Fitting is deterministic: --submit of the same fit is the same version.
    again = run(
        "workload", "from-trace", str(AZURE), "--name", "azure-code", *SLO_ALL,
        "--trace-ref", "azure-code-2023", "--submit", "--json", env=env,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    body = json.loads(again.stdout)
    assert (body["created"], body["record"]["ref"]) == (False, "azure-code@v1")


def test_from_trace_to_stdout_with_slo_file(local_env: dict[str, str], tmp_path: Path) -> None:
    need(AZURE)
    slo = tmp_path / "slo.yaml"
    slo.write_text(
        "ttft_p99_ms: 1500\ntpot_p99_ms: 60\ne2e_p99_ms: 75000\nqueue_deadline_ms: 2000\n"
    )
    result = capgate(
        "workload", "from-trace", str(AZURE), "--name", "azure-code", "--slo-file", str(slo),
        "--window", "5m", env=local_env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = yaml.safe_load(result.stdout)
    validate_record(RecordKind.workload, document)
    assert document["classes"][0]["arrival"]["peak_window_s"] == 300.0
    assert document["classes"][0]["slo"]["ttft_p99_ms"] == 1500
    # The joint length histogram's cells print one per line, inline ([i, j, count]).
    cells = document["classes"][0]["joint_lengths"]["cells"]
    assert len(cells) > 100
    assert len(result.stdout.splitlines()) < len(cells) + 150


@pytest.fixture
def local_env(tmp_path: Path) -> dict[str, str]:
    """An empty embedded registry (SQLite): these commands fail before any database work."""
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    migrate.upgrade(url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPGATE_")}
    env.update(CAPGATE_DATABASE_URL=url, CAPGATE_PRINCIPAL="alice")
    return env


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("workload", "from-trace", str(AZURE), "--name", "x", *SLO),
            "capgate: error: slo: SLOs cannot be measured from a trace: pass --slo-file, "
            "or --queue-deadline-ms",
        ),
        (
            ("workload", "from-trace", "/no/such/trace.csv", "--name", "x", *SLO_ALL),
            "capgate: error: /no/such/trace.csv: file not found",
        ),
        (
            ("workload", "from-trace", str(AZURE), "--name", "x", *SLO_ALL, "--window", "soon"),
            "capgate: error: --window: 'soon' is not a positive duration such as 60s, 5m or 1h",
        ),
        (
            ("workload", "from-trace", str(AZURE), "--name", "x", *SLO_ALL, "--class-by", "tier"),
            f"capgate: error: {AZURE}: --class-by: column 'tier' not found",
        ),
        (
            ("evidence", "import", "/no/such/result.json", *AGAINST),
            "capgate: error: /no/such/result.json: file not found",
        ),
        (
            ("evidence", "import", str(VLLM), *AGAINST, "--tool", "locust"),
            "capgate: error: --tool: unknown tool 'locust'; expected one of auto, vllm-bench, "
            "guidellm, inference-perf, genai-perf, aiperf (or vllm)",
        ),
        (
            ("evidence", "import", str(GENAI), *AGAINST),
            f"capgate: error: {GENAI}: --measured-at: the file states no time of measurement; "
            "pass --measured-at with an ISO 8601 time and zone, e.g. --measured-at "
            "2026-11-24T14:05:00Z (API: form field measured_at)",
        ),
        (
            ("evidence", "import", str(VLLM), *AGAINST, "--measured-at", "2026-11-20"),
            "capgate: error: --measured-at: needs a time zone, e.g. 2026-11-24T14:05:00Z",
        ),
        (
            ("evidence", "import", str(VLLM), *AGAINST[:-2]),
            f"capgate: error: {VLLM}: --replicas: the file does not state how many replicas "
            "served the test; pass --replicas N (API: form field replicas). Rates are divided "
            "by it, so it cannot default to 1",
        ),
        (
            ("evidence", "import", str(ALL_FAILED), *AGAINST),
            f"capgate: error: {ALL_FAILED}: completed: 0, failed: 8; no request completed, so "
            "the file's latencies (stated as 0) measure nothing. Fix the run and load the test "
            "again",
        ),
        (
            ("evidence", "import", *AGAINST, "--class", "batch=/no/such/batch.json"),
            "capgate: error: --class: give either result files with one --class NAME, or "
            "--class NAME=FILE for each class of a mixed test, not both",
        ),
    ],
    ids=[
        "from-trace no SLO",
        "from-trace missing file",
        "from-trace bad window",
        "from-trace unknown class column",
        "import missing file",
        "import unknown tool",
        "import file without a time",
        "import time without a zone",
        "import without replicas",
        "import a run that completed nothing",
        "import mixing --class forms",
    ],
)
def test_bad_input_exits_2_with_one_line(
    local_env: dict[str, str], args: tuple[str, ...], message: str
) -> None:
    need(*(Path(a) for a in args if a.startswith(str(FIX))))
    result = capgate(*args, env=local_env)
    assert result.returncode == 2
    assert result.stderr == message + "\n"
    assert result.stdout == ""


@sqlite_only  # refused on the workload's classes before anything is stored
def test_a_class_not_in_the_workload_names_the_flag(env: dict[str, str]) -> None:
    need(VLLM)
    result = capgate("evidence", "import", str(VLLM), *AGAINST[:-4], "--replicas", "2", env=env)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"capgate: error: {VLLM}: results.per_class.default: traffic class ")
    assert line.endswith(
        "'default' is not in workload chat-assistant (batch, interactive); name the class the "
        "test offered with --class NAME (API: form field traffic_class)"
    )


def test_from_trace_mooncake_prefix_share_with_a_bounded_cache(
    local_env: dict[str, str], tmp_path: Path
) -> None:
    """Three requests; the second and third reuse the first's leading 512-token blocks."""
    rows = [
        {"timestamp": 0, "input_length": 1024, "output_length": 50, "hash_ids": [1, 2]},
        {"timestamp": 1000, "input_length": 1536, "output_length": 60, "hash_ids": [1, 2, 3]},
        {"timestamp": 2000, "input_length": 1024, "output_length": 70, "hash_ids": [1, 4]},
    ]
    trace = tmp_path / "mooncake.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ("workload", "from-trace", str(trace), "--name", "moon", *SLO_ALL)
    start = ("--trace-start", "2026-11-20T00:00:00Z")
    unbounded = capgate(*args, *start, env=local_env)
    assert unbounded.returncode == 0, unbounded.stderr
    (cls,) = yaml.safe_load(unbounded.stdout)["classes"]
    # Hits: 0 + 1024 (blocks 1, 2) + 512 (block 1) tokens of 1024 + 1536 + 1024 prompt tokens.
    assert cls["prefix_cache_share"] == round(1536 / 3584, 4)
    # hash_ids make the prefix share measured; nothing in the trace says who cancelled.
    assert set(cls["unknown"]) == {"cancellation_rate"}
    assert "cancellation_rate" not in cls
    bounded = capgate(*args, *start, "--prefix-cache-tokens", "1024", env=local_env)
    assert bounded.returncode == 0, bounded.stderr
    (small,) = yaml.safe_load(bounded.stdout)["classes"]
    # An LRU cache of two blocks: request 3 finds block 1 evicted by blocks 2 and 3.
    assert small["prefix_cache_share"] < cls["prefix_cache_share"]
    # Without a start, the error names the flag to give, not the fitter's parameter.
    unanchored = capgate(*args, env=local_env)
    assert unanchored.returncode == 2
    (line,) = unanchored.stderr.splitlines()
    assert "--trace-start: needed: the trace's timestamps are relative" in line
    assert "trace_start" not in line


def test_mixed_test_from_files_that_name_their_classes(env: dict[str, str], tmp_path: Path) -> None:
    """vLLM generators run with --metadata traffic_class=NAME: --together makes one record."""
    from tests.factories import vllm_summary

    chat, batch = tmp_path / "chat.json", tmp_path / "batch.json"
    chat.write_bytes(vllm_summary(rate=6.0, traffic_class="interactive"))
    batch.write_bytes(vllm_summary(rate=2.0, traffic_class="batch"))
    against = ("--workload", "chat-assistant", "--provider", "llama31-8b-h100-vllm")
    result = run(
        "evidence", "import", str(chat), str(batch), *against, "--replicas", "1",
        "--together", "--name", "mixed-vllm", "--json", env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (record,) = json.loads(result.stdout)
    content = record["record"]["content"]
    assert content["offered"]["classes"] == ["interactive", "batch"]
    assert content["offered"]["request_rate_rps"] == 8.0
    assert sorted(content["results"]["per_class"]) == ["batch", "interactive"]
    # Without --together the same files are two single-class records.
    apart = run("evidence", "import", str(chat), str(batch), *against, "--replicas", "1", env=env)
    assert apart.returncode == 0, apart.stderr
    assert len(apart.stdout.splitlines()) == 2
