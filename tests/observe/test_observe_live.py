"""`capgate observe` against a real Prometheus holding vLLM series of known traffic.

The worked example is registered (workload, provider, plan, its load test). Prometheus
holds two hours of the example's two classes, drawn from its workload profile as the
planner draws it (at a tenth of its rates, to keep the data small), under three
namespaces: as profiled, with every interactive prompt 30 % longer, and as profiled but
exported by vLLM 0.8.5 (the old KV-cache and per-token metric names). Each observation is
checked against the generated truth, then judged against the plan's workload.
"""

from __future__ import annotations

import http.server
import json
import math
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from registry.records.workload import WorkloadProfile
from tests.conftest import sqlite_only
from tests.observe.test_docs import documented_queries
from tests.support.cli_runner import Capgate
from tests.support.http_stub import serving
from tests.support.opa_server import free_port
from tests.support.prometheus import (
    AS_CLAIMED,
    BackfilledPrometheus,
    Dataset,
    classes_from_profile,
    grow_prompt_p99,
)

EXAMPLE = Path(__file__).parents[2] / "examples" / "chat-assistant"
PLAN = "chat-assistant-prod"

# Started first by tests/conftest.py: 31 s of an idle core in the last full run; 26 s
# instead of 44 s on the same loaded machine since the refusals run on SQLite only.
pytestmark = pytest.mark.long(18)
PROFILE = WorkloadProfile.model_validate(yaml.safe_load((EXAMPLE / "workload.yaml").read_text()))
END = math.floor((datetime.now(UTC).timestamp() - 120) / 60) * 60  # whole minutes: steps align
BASE = Dataset(
    classes=classes_from_profile(PROFILE, rate_scale=0.1, with_peak=False, latency=AS_CLAIMED),
    runtime_version="0.10.2",
    duration_s=7200,
    end=END,
    namespace="assistant",
    seed=3,
)
GROWN = replace(grow_prompt_p99(BASE, 1.3, classes=("interactive",)), namespace="assistant-grown")
OLD_NAMES = replace(BASE, runtime_version="0.8.5", namespace="assistant-085", seed=4)
WINDOW = ["--window", "2h", "--end", datetime.fromtimestamp(END, UTC).isoformat()]


@pytest.fixture(scope="module")
def prometheus(backfilled_prometheus: Callable[..., BackfilledPrometheus]) -> BackfilledPrometheus:
    return backfilled_prometheus(BASE, GROWN, OLD_NAMES)


@pytest.fixture
def capgate(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Capgate:
    for name in ("CAPGATE_SERVER", "CAPGATE_TOKEN", "CAPGATE_POLICY_ENGINE", "CAPGATE_OPA_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("CAPGATE_PROMETHEUS_URL", raising=False)
    monkeypatch.setenv("CAPGATE_DATABASE_URL", database_url)
    monkeypatch.setenv("CAPGATE_PRINCIPAL", "alice")
    run = Capgate()
    run("workload", "submit", str(EXAMPLE / "workload.yaml"))
    run("provider", "submit", str(EXAMPLE / "provider.yaml"))
    run("plan", "submit", str(EXAMPLE / "plan.yaml"))
    measured_at = (datetime.now(UTC) - timedelta(days=6)).strftime("%Y-%m-%dT00:00:00Z")
    load_test = EXAMPLE / "load-test"
    run(
        "evidence", "import", "--workload", "chat-assistant", "--provider", "llama31-8b-h100-vllm",
        "--plan", PLAN, "--replicas", "1", "--measured-at", measured_at,
        "--class", f"interactive={load_test / 'interactive.profile_export_aiperf.json'}",
        "--class", f"batch={load_test / 'batch.profile_export_aiperf.json'}",
        "--name", "chat-assistant-h100-mixed-2026-11",
    )  # fmt: skip
    return run


def observe(
    capgate: Capgate, url: str, namespace: str, *extra: str, code: int = 0
) -> dict[str, Any]:
    result = capgate(
        "observe", "--prometheus", url, "--plan", PLAN, *WINDOW,
        "--selector", f'namespace="{namespace}"', "--class-label", "traffic_class",
        "--json", *extra, code=code,
    )  # fmt: skip
    answer: dict[str, Any] = json.loads(result.stdout)
    return answer


def test_traffic_from_the_profile_matches_the_truth_and_shows_no_drift(
    capgate: Capgate, prometheus: BackfilledPrometheus
) -> None:
    answer = observe(capgate, prometheus.url, "assistant")
    assert answer["drift"] == [] and answer["submitted"] is None
    truth = prometheus.truths[0]
    for cls in answer["observation"]["classes"]:
        expected = truth.classes[cls["name"]]
        assert cls["requests"] == expected.requests
        assert sum(cls["finished"].values()) == expected.requests
        for key in ("prompt_tokens", "output_tokens", "ttft", "e2e"):
            sample = getattr(expected, key)
            for level in (50, 90, 99):
                q = cls[key]["quantiles"][f"p{level}"]
                lower, upper = sample.bucket(level / 100)
                # The true quantile's bucket is the bucket reported: exact, not close.
                assert q["bucket_lower"] == lower, (cls["name"], key, level)
                assert (q["bucket_upper"] or math.inf) == upper, (cls["name"], key, level)
        for attained in cls["slo"]:
            key = {"ttft_p99_ms": "ttft", "tpot_p99_ms": "itl", "e2e_p99_ms": "e2e"}.get(
                attained["objective"], "queue"
            )
            share = getattr(expected, key).share_at_most(attained["limit_ms"] / 1000)
            assert attained["share_at_least"] - 1e-6 <= share <= attained["share_at_most"] + 1e-6
        # Burstiness estimated from per-step counts: near the profile's, not 1 (Poisson).
        planned = next(c for c in PROFILE.classes if c.name == cls["name"])
        assert cls["interarrival_cv"] == pytest.approx(planned.arrival.interarrival_cv, rel=0.2)
    assert answer["observation"]["fleet"]["kv_cache_series"] == "vllm:kv_cache_usage_perc"
    # Every query docs/observe.md documents is one this observation sent.
    sent = answer["observation"]["source"]["queries"]
    documented = documented_queries('namespace="assistant"', "traffic_class", "7200s", "60s")
    assert len(documented) >= 8
    assert [q for q in documented if q not in sent] == []


def test_prompts_grown_30_percent_drift_deny_and_stale_until_a_new_profile(
    capgate: Capgate, prometheus: BackfilledPrometheus
) -> None:
    text = capgate(
        "observe", "--prometheus", prometheus.url, "--plan", PLAN, *WINDOW,
        "--selector", 'namespace="assistant-grown"', "--class-label", "traffic_class",
        code=1,
    ).stdout  # fmt: skip
    assert "DRIFT from workload chat-assistant@v1:" in text
    assert "classes.interactive.prompt_tokens.p99: 6100.0 -> " in text
    answer = observe(capgate, prometheus.url, "assistant-grown", "--submit", code=1)
    fields = {c["field"] for c in answer["drift"]}
    assert "classes.interactive.prompt_tokens.p99" in fields
    assert not any(f.startswith("classes.batch") for f in fields)
    assert answer["submitted"] == f"{PLAN}-observed@v1"

    stale = json.loads(capgate("evidence", "list", "--stale", "--json").stdout)["items"]
    assert [item["ref"] for item in stale] == ["chat-assistant-h100-mixed-2026-11@v1"]
    assert stale[0]["reasons"][0].startswith(
        f"production drift: observation {PLAN}-observed@v1 of workload chat-assistant@v1: "
        "classes.interactive.prompt_tokens"
    )
    events = json.loads(capgate("audit", "list", "--json").stdout)["items"]
    review = next(e for e in events if e["action"] == "observation.review")
    assert review["payload"]["material"] is True
    changed = {c["field"]: c for c in review["payload"]["changes"]}
    assert changed["classes.interactive.prompt_tokens.p99"]["planned"] == 6100.0
    assert changed["classes.interactive.prompt_tokens.p99"]["threshold"] == 0.1

    denied = capgate("gate", "check", PLAN, code=1).stdout
    assert "production_drift.workload_drifted" in denied
    assert f"capgate workload from-observation {PLAN}-observed@v1" in denied

    # Traffic back as profiled: the latest observation decides, and shows no drift.
    observe(capgate, prometheus.url, "assistant", "--submit")
    checked = capgate("gate", "check", PLAN, "--json", code=1)
    violations = json.loads(checked.stdout)["violations"]
    assert not any(v["policy"] == "production_drift" for v in violations)


def test_old_metric_names_are_read_when_the_new_ones_have_no_data(
    capgate: Capgate, prometheus: BackfilledPrometheus
) -> None:
    answer = observe(capgate, prometheus.url, "assistant-085")
    fleet = answer["observation"]["fleet"]
    assert fleet["kv_cache_series"] == "vllm:gpu_cache_usage_perc"
    assert answer["observation"]["classes"][0]["itl"]["series"] == (
        "vllm:time_per_output_token_seconds"
    )
    assert answer["drift"] == []


# ---- failures: never a silent "no drift" -------------------------------------------------


def failing(*args: str) -> str:
    """`capgate ARGS` as a user runs it (errors become one line and exit 2); that line."""
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", *args], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if not line.startswith("observe: ")]
    assert len(errors) == 1 and errors[0].startswith("capgate: error: "), result.stderr
    return errors[0]


@sqlite_only  # Prometheus unreachable: no database changes that
def test_fail_prometheus_down_is_exit_2(capgate: Capgate) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    line = failing("observe", "--prometheus", url, "--plan", PLAN, "--class-label", "traffic_class")
    assert f"cannot reach Prometheus {url}" in line


@sqlite_only  # refused on what Prometheus answers: no database changes that
def test_fail_no_series_for_the_selector_is_exit_2(
    capgate: Capgate, prometheus: BackfilledPrometheus
) -> None:
    line = failing(
        "observe", "--prometheus", prometheus.url, "--plan", PLAN, *WINDOW,
        "--selector", 'namespace="nobody-here"', "--class-label", "traffic_class",
    )  # fmt: skip
    assert "has no vllm:request_prompt_tokens series" in line


@sqlite_only  # refused on what Prometheus answers: no database changes that
def test_fail_a_query_the_server_refuses_names_it(
    capgate: Capgate, prometheus: BackfilledPrometheus
) -> None:
    line = failing(
        "observe", "--prometheus", prometheus.url, "--plan", PLAN, *WINDOW,
        "--selector", "namespace=", "--class-label", "traffic_class",
    )  # fmt: skip
    assert line.startswith("capgate: error: query: ") and "parse error" in line
    assert "namespace=}" in line  # the query as sent, so the selector can be fixed


@pytest.fixture
def slow_server() -> Iterator[str]:
    class Slow(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            threading.Event().wait(3)
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    with serving(Slow) as url:
        yield url


@sqlite_only  # refused on what Prometheus answers: no database changes that
def test_fail_a_query_timeout_is_exit_2(capgate: Capgate, slow_server: str) -> None:
    line = failing(
        "observe", "--prometheus", slow_server, "--plan", PLAN, "--timeout", "1",
        "--class-label", "traffic_class",
    )  # fmt: skip
    assert "did not answer within 1 s" in line


@sqlite_only  # refused on the flags and the workload's classes, read as any record is
def test_fail_several_classes_need_the_class_label(
    capgate: Capgate, prometheus: BackfilledPrometheus
) -> None:
    line = failing("observe", "--prometheus", prometheus.url, "--plan", PLAN)
    assert "class_label" in line and "interactive" in line


def test_a_profile_from_the_observation_closes_the_loop(
    capgate: Capgate, prometheus: BackfilledPrometheus, tmp_path: Path
) -> None:
    observe(capgate, prometheus.url, "assistant-grown", "--submit", code=1)
    profile_file = tmp_path / "workload.yaml"
    written = capgate(
        "workload", "from-observation", f"{PLAN}-observed", "--output", str(profile_file)
    )
    assert f"workload chat-assistant from {PLAN}-observed@v1" in written.stdout
    profile = yaml.safe_load(profile_file.read_text())
    interactive = next(c for c in profile["classes"] if c["name"] == "interactive")
    assert interactive["slo"] == PROFILE.classes[0].slo.model_dump()  # kept, not observed
    assert interactive["prompt_tokens"]["histogram"]["edges"][:3] == [0.0, 1.0, 2.0]
    assert profile["measurement"]["trace_ref"].startswith(f"observation {PLAN}-observed@v1")

    submitted = capgate("workload", "submit", str(profile_file)).stdout
    assert submitted.startswith("chat-assistant@v2")
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(
        (EXAMPLE / "plan.yaml").read_text().replace("chat-assistant@v1", "chat-assistant@v2")
    )
    assert capgate("plan", "submit", str(plan_file)).stdout.startswith(f"{PLAN}@v2")
    # The same production traffic, judged against the profile it produced: no drift.
    again = observe(capgate, prometheus.url, "assistant-grown")
    assert again["drift"] == [], again["drift"]
    assert again["observation"]["workload"] == "chat-assistant@v2"
    # The old observation judged v1: the plan pinning v2 is no longer denied for drift.
    checked = json.loads(capgate("gate", "check", PLAN, "--json", code=1).stdout)
    assert not any(v["policy"] == "production_drift" for v in checked["violations"])


@pytest.mark.parametrize(
    ("window", "problem"),
    [("soon", "'soon' is not a positive duration"), ("401d", "'401d' is longer than 400d")],
)
def test_fail_a_window_is_a_positive_duration_of_at_most_400_days(
    window: str, problem: str
) -> None:
    line = failing(
        "observe", "--prometheus", "http://127.0.0.1:9", "--plan", PLAN, "--window", window
    )
    assert line == f"capgate: error: --window: {problem}" + (
        " such as 60s, 5m or 1h" if window == "soon" else ""
    )
