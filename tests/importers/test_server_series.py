"""`capgate evidence import ... --prometheus URL --selector S` against a real Prometheus.

The server's series are written by hand as OpenMetrics with known increases over each
test window, backfilled with ``promtool tsdb create-blocks-from openmetrics`` and served
by ``prometheus`` (tests/support/prometheus.py). A sample lies on every window edge, so
``increase()`` over the window (Prometheus 2.x ranges include both ends) is the plain
difference and the stored figures can be compared exactly. Every counter also moves, and
every gauge peaks higher, outside the windows and in another namespace: none of that may
be counted. The imports run the CLI's entry point, on the registry and against a server
(which drives the REST form fields too): the refusals as real processes, the figures in
this process.
"""

from __future__ import annotations

import json
import math
import socket
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from registry.importers.server_series import PREFIX_GAUGE
from registry.observe.catalog import buckets
from tests.cli.test_cli import capgate
from tests.cli.test_evidence_cli import AGAINST
from tests.conftest import sqlite_only
from tests.importers.helpers import EXAMPLE_PROVIDER, one, path_of, provider_for
from tests.staleness.test_laundering import workload_with_p99
from tests.support.cli_runner import capgate_in_process
from tests.support.prometheus import backfill, find_binaries, go_float, running_prometheus
from tests.support.real_parts import absent

GUIDELLM = "guidellm/danielkorat__guidellm-bench__qwen3-4b-thinking-tp2-fp8-xpu-synchronous.json"
# States no time (given with --measured-at) and a 58.5 s run.
NO_TIME = "inference-perf/kubernetes-sigs__inference-perf__kubecon25-vllm-stage0-lifecycle.json"
NO_DURATION = "genai-perf/wellflat__k8s-dev__gpt-oss-20b-c1-sdk2501.json"
# vLLM's `date`: the runner's wall clock when the run ended, without a zone.
NO_ZONE = "vllm-bench/llm-d__llm-d-benchmark__exp7-h100-vllm-2replicas.json"
SELECTOR = 'namespace="llm",model_name="m"'
SCRAPE_S = 15

# Started first by tests/conftest.py: 60 s of an idle core in the last full run (48 tests);
# 42 s instead of 71 s on the same loaded machine since the refusals run on SQLite only.
pytestmark = pytest.mark.long(35)


# ---- series with known values --------------------------------------------------------------


@dataclass(frozen=True)
class Ramp:
    """A counter's rise by ``by`` from ``start`` to ``end`` (linear; whole before, none after)."""

    start: int
    end: int
    by: float

    def at(self, t: int) -> float:
        return self.by * min(1.0, max(0.0, (t - self.start) / (self.end - self.start)))


@dataclass(frozen=True)
class Level:
    """A gauge's value from ``start`` to ``end`` (inclusive), over its baseline."""

    start: int
    end: int
    value: float


# A labelset's samples (name, labels) and their values at a scrape time (None: not scraped).
Samples = list[tuple[str, dict[str, str]]]
Values = Callable[[int], list[float] | None]


@dataclass
class Scrapes:
    """Every series, as functions of the scrape time; written as OpenMetrics."""

    times: list[int]
    families: dict[str, tuple[str, list[tuple[Samples, Values]]]] = field(default_factory=dict)

    def add(self, family: str, kind: str, samples: Samples, value: Values) -> None:
        self.families.setdefault(family, (kind, []))[1].append((samples, value))

    def counter(self, name: str, labels: dict[str, str], ramps: list[Ramp], since: int) -> None:
        def value(t: int) -> list[float] | None:
            return None if t < since else [sum(r.at(t) for r in ramps)]

        self.add(name.removesuffix("_total"), "counter", [(name, labels)], value)

    def gauge(
        self,
        name: str,
        labels: dict[str, str],
        base: float,
        levels: Sequence[Level] = (),
        since: int | None = None,
        until: int | None = None,
    ) -> None:
        def value(t: int) -> list[float] | None:
            if (since is not None and t < since) or (until is not None and t > until):
                return None
            return [next((lv.value for lv in levels if lv.start <= t <= lv.end), base)]

        self.add(name, "gauge", [(name, labels)], value)

    def histogram(self, name: str, labels: dict[str, str], ramps: dict[float, list[Ramp]]) -> None:
        """Cumulative bucket counters; ``ramps`` per bucket bound give each bucket's own
        (non-cumulative) observations."""
        bounds = sorted(ramps)
        samples = [(f"{name}_bucket", {**labels, "le": go_float(b)}) for b in bounds]
        samples += [(f"{name}_sum", labels), (f"{name}_count", labels)]

        def value(t: int) -> list[float] | None:
            own = [sum(r.at(t) for r in ramps[b]) for b in bounds]
            cumulative = [sum(own[: i + 1]) for i in range(len(own))]
            return [*cumulative, 0.0, cumulative[-1]]

        self.add(name, "histogram", samples, value)

    def write(self, path: Path) -> None:
        with path.open("w", encoding="utf-8") as out:
            for family, (kind, members) in self.families.items():
                out.write(f"# TYPE {family} {kind}\n")
                for samples, value in members:
                    for t in self.times:
                        values = value(t)
                        if values is None:
                            continue
                        for (name, labels), v in zip(samples, values, strict=True):
                            text = ",".join(f'{k}="{labels[k]}"' for k in sorted(labels))
                            out.write(f"{name}{{{text}}} {go_float(float(v))} {t}\n")
            out.write("# EOF\n")


@dataclass(frozen=True)
class Window:
    start: int
    end: int


@dataclass(frozen=True)
class Served:
    """The backfilled Prometheus, and the windows its series were written for."""

    url: str
    guidellm: Window  # the GuideLLM file's own run
    first: Window  # where NO_TIME is first imported (--measured-at)
    second: Window  # where a re-import says it ran


def _window(rel: str, measured_at: datetime | None = None) -> Window:
    """The window the import reads for the file's run: its start and end, whole seconds."""
    stage = one(rel, measured_at=measured_at) if measured_at else one(rel)
    start = stage.evidence.measured_at.timestamp()
    duration = stage.evidence.offered.duration_s
    assert duration is not None
    return Window(math.floor(start), math.ceil(start + duration))


def _stamp(t: int) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def series(g: Window, first: Window, second: Window) -> Scrapes:
    """What Prometheus scraped: exact truths inside the windows, noise outside."""
    lo, hi = g.start - 1800, second.end + 1800
    edges = {w.start for w in (g, first, second)} | {w.end for w in (g, first, second)}
    times = sorted(set(range(lo, hi, SCRAPE_S)) | edges)
    s = Scrapes(times)
    llm = {"namespace": "llm", "model_name": "m", "engine": "0"}

    def during(w: Window, by: float) -> Ramp:
        return Ramp(w.start, w.end, by)

    def before(w: Window, by: float) -> Ramp:  # ends a minute before the window
        return Ramp(w.start - 600, w.start - 60, by)

    def after(w: Window, by: float) -> Ramp:  # starts a minute after it
        return Ramp(w.end + 60, w.end + 600, by)

    # Prefix cache: 250 of 1000 queried tokens hit during the GuideLLM run (two pods), 60 of
    # 120 in the first window, 108 of 120 in the second; a 90 % hit rate around them.
    per_pod = {
        "vllm-0": {"queries": (600, 80, 60), "hits": (150, 40, 54)},
        "vllm-1": {"queries": (400, 40, 60), "hits": (100, 20, 54)},
    }
    for pod, counts in per_pod.items():
        labels = {**llm, "pod": pod}
        for what, (in_g, in_first, in_second) in counts.items():
            noise = 9000.0 if what == "queries" else 8100.0
            ramps = [
                before(g, noise),
                during(g, in_g),
                after(g, noise),
                during(first, in_first),
                during(second, in_second),
                after(second, noise),
            ]
            s.counter(f"vllm:prefix_cache_{what}_total", labels, ramps, lo)
        s.counter(
            "vllm:num_preemptions_total",
            labels,
            [before(g, 50), during(g, 3 if pod == "vllm-0" else 4), after(g, 50)],
            lo,
        )
    # The same series in another namespace, far busier: outside the selector.
    other = {"namespace": "batch", "model_name": "m", "engine": "0", "pod": "other-0"}
    for what in ("queries", "hits"):
        s.counter(f"vllm:prefix_cache_{what}_total", other, [during(g, 5000.0)], lo)
    s.counter("vllm:num_preemptions_total", other, [during(g, 900)], lo)

    # Queue time: 1000 requests in the run, 900 within 0.3 s, 80 more within 0.5 s, the last
    # 20 within 0.8 s: p99 (rank 990) interpolates to 0.5 + 0.3 * 10 / 20 = 0.65 s. Before
    # and after, 500 requests waited over a minute.
    bounds = [*buckets("queue", 0), math.inf]
    split = {"vllm-0": {0.3: 500, 0.5: 50, 0.8: 10}, "vllm-1": {0.3: 400, 0.5: 30, 0.8: 10}}
    for pod, own in split.items():
        per_bucket = {
            b: [during(g, own.get(b, 0)), *([before(g, 500), after(g, 500)] if b == 120 else [])]
            for b in bounds
        }
        s.histogram("vllm:request_queue_time_seconds", {**llm, "pod": pod}, per_bucket)

    # KV cache: vllm-0 peaks at 0.83 during the run; 0.99 just before and just after it.
    spikes = [Level(g.start - 75, g.start - 45, 0.99), Level(g.end + 45, g.end + 75, 0.99)]
    s.gauge(
        "vllm:kv_cache_usage_perc",
        {**llm, "pod": "vllm-0"},
        0.5,
        [*spikes, Level(g.start + 300, g.start + 330, 0.83)],
    )
    s.gauge("vllm:kv_cache_usage_perc", {**llm, "pod": "vllm-1"}, 0.6, spikes)
    s.gauge("vllm:kv_cache_usage_perc", other, 1.0)

    # Running: 4 + 5 at rest; vllm-0 at 9 over [200, 260] s and vllm-1 at 7 over [230, 290]
    # s into the run: the fleet's peak is 16 (vllm-2 serves 2 only from 287 s). Waiting
    # peaks at 3. Around the run, 40 running and 30 waiting.
    busy = [Level(g.start - 120, g.start - 60, 20), Level(g.end + 60, g.end + 120, 20)]
    s.gauge(
        "vllm:num_requests_running",
        {**llm, "pod": "vllm-0"},
        4,
        [*busy, Level(g.start + 200, g.start + 260, 9)],
    )
    s.gauge(
        "vllm:num_requests_running",
        {**llm, "pod": "vllm-1"},
        5,
        [*busy, Level(g.start + 230, g.start + 290, 7)],
    )
    queued = [Level(g.start - 120, g.start - 60, 15), Level(g.end + 60, g.end + 120, 15)]
    s.gauge(
        "vllm:num_requests_waiting",
        {**llm, "pod": "vllm-0"},
        0,
        [*queued, Level(g.start + 200, g.start + 230, 3)],
    )
    s.gauge("vllm:num_requests_waiting", {**llm, "pod": "vllm-1"}, 0, queued)
    s.gauge("vllm:num_requests_running", other, 100)
    # Pods started during the run: vllm-2 ready after 187 s; vllm-3 not ready by its end.
    late = {"vllm-2": g.start + 100 + 187, "vllm-3": g.start + 450}
    for pod, since in late.items():
        for name in ("vllm:num_requests_running", "vllm:num_requests_waiting"):
            base = 2 if name.endswith("running") and pod == "vllm-2" else 0
            s.gauge(name, {**llm, "pod": pod}, base, since=since)
    # Older vLLM: V1 before 0.9 (gpu_ prefix counters; 50 of 200 hit), and V0 (the hit-rate
    # gauge, 0.4 throughout the run and 0.95 around it; the old KV gauge at 0.7).
    v09 = {"namespace": "v09", "model_name": "m", "pod": "v09-0"}
    s.counter("vllm:gpu_prefix_cache_queries_total", v09, [during(g, 200), after(g, 900)], lo)
    s.counter("vllm:gpu_prefix_cache_hits_total", v09, [during(g, 50), after(g, 900)], lo)
    v0 = {"namespace": "v0", "model_name": "m", "pod": "v0-0"}
    s.gauge(PREFIX_GAUGE, v0, 0.4, [*spikes[:1], Level(g.end + 15, hi, 0.95)])
    s.gauge("vllm:gpu_cache_usage_perc", v0, 0.7)
    # Only running requests in namespace "bare": every other figure is missing there.
    s.gauge("vllm:num_requests_running", {"namespace": "bare", "pod": "bare-0"}, 1)

    # kube-state-metrics: (namespace, pod, started, ready); None: not ready by the end.
    pods = [
        ("llm", "vllm-0", g.start - 7200, g.start - 7200 + 90),
        ("llm", "vllm-1", g.start - 7000, g.start - 7000 + 1500),
        ("llm", "vllm-2", g.start + 100, g.start + 100 + 187),
        ("llm", "vllm-3", g.start + 400, g.end + 300),
        ("batch", "other-0", g.start + 60, g.start + 60 + 999),
    ]
    for namespace, pod, started, ready in pods:
        labels = {"namespace": namespace, "pod": pod, "uid": f"uid-{pod}"}
        s.gauge("kube_pod_start_time", labels, float(started), since=started)
        s.gauge("kube_pod_status_ready_time", labels, float(ready), since=ready)
        for condition, before_ready, after_ready in (("true", 0, 1), ("false", 1, 0)):
            s.gauge(
                "kube_pod_status_ready",
                {**labels, "condition": condition},
                before_ready,
                [Level(ready, hi, after_ready)],
                since=started,
            )
    return s


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    binaries = find_binaries()
    if binaries is None:
        absent("prometheus absent", "run scripts/ci/prometheus.sh")
    g = _window(GUIDELLM)
    first_start = g.end + 1800
    first = _window(NO_TIME, datetime.fromtimestamp(first_start, UTC))
    second = _window(NO_TIME, datetime.fromtimestamp(first_start + 1800, UTC))
    directory = tmp_path_factory.mktemp("server-series")
    source = directory / "series.om"
    series(g, first, second).write(source)
    backfill(binaries, source, directory / "tsdb")
    with running_prometheus(binaries, directory / "tsdb") as url:
        yield Served(url, g, first, second)


@pytest.fixture(scope="module")
def down_url() -> str:
    """A Prometheus URL nothing answers on."""
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture(autouse=True)
def _server_reads_these(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, down_url: str
) -> None:
    """The Prometheus URLs a capgate server may read (CAPGATE_PROMETHEUS_URLS), set before
    the `env` fixture starts one: the test Prometheus (where the test uses it), the one
    that does not answer and the one the refusals name."""
    allowed = [down_url, "http://127.0.0.1:9"]
    if "served" in request.fixturenames:
        allowed.append(request.getfixturevalue("served").url)
    monkeypatch.setenv("CAPGATE_PROMETHEUS_URLS", ",".join(allowed))


# ---- helpers -------------------------------------------------------------------------------


def json_error(result: subprocess.CompletedProcess[str]) -> str:
    """The error of an import run with --json: one JSON object, the last line of stderr
    (cli.output), as its message and every problem in one line."""
    error = json.loads(result.stderr.splitlines()[-1])
    assert error["exit_code"] == result.returncode == 2, result.stderr
    problems = [
        f"{p['loc']}: {p['message']}" if p["loc"] else p["message"] for p in error["problems"]
    ]
    return " ".join([error["message"], *problems])


def run_import(env: dict[str, str], rel: str, *extra: str) -> Any:
    # Each file against a provider serving the model it measured (the env registers them).
    against = [provider_for(rel) if a == EXAMPLE_PROVIDER else a for a in AGAINST]
    return capgate("evidence", "import", str(path_of(rel)), *against, *extra, "--json", env=env)


def imported(env: dict[str, str], rel: str, *extra: str) -> tuple[dict[str, Any], str]:
    """The one record imported and its stderr: the figures are the subject, so the console
    entry point runs in this process (the refusals' exit codes and errors stay processes)."""
    against = [provider_for(rel) if a == EXAMPLE_PROVIDER else a for a in AGAINST]
    result = capgate_in_process(
        "evidence", "import", str(path_of(rel)), *against, *extra, "--json", env=env
    )
    assert result.returncode == 0, result.stderr
    (item,) = json.loads(result.stdout)
    return item, result.stderr


def figures(item: dict[str, Any]) -> dict[str, Any]:
    server = dict(item["record"]["content"]["server"])
    return {k: v for k, v in server.items() if k not in ("queries", "notes")}


def evidence_count(env: dict[str, str]) -> int:
    listed = capgate_in_process("evidence", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    body = json.loads(listed.stdout)
    return len(body["items"] if isinstance(body, dict) else body)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# ---- the figures ---------------------------------------------------------------------------


def test_figures_equal_what_the_server_measured_in_the_window(
    env: dict[str, str], served: Served
) -> None:
    item, stderr = imported(
        env, GUIDELLM, "--prometheus", served.url, "--selector", SELECTOR, "--name", "run"
    )
    g = served.guidellm
    assert figures(item) == {
        "source": served.url,
        "selector": SELECTOR,
        "start": _stamp(g.start),
        "end": _stamp(g.end),
        "prefix_cache_hit_rate": 0.25,
        "prefix_cache_queried_tokens": 1000.0,
        "kv_cache_usage_peak": 0.83,
        "preemptions": 7,
        "queue_p99_ms": pytest.approx(650.0, abs=1e-9),
        "requests_running_peak": 16.0,
        "requests_waiting_peak": 3.0,
        "warmup_s": 187.0,
    }
    server = item["record"]["content"]["server"]
    # Every query is recorded with what it answered, the figure's own value among them.
    asked = {q["figure"] for q in server["queries"]}
    assert asked == set(figures(item)) - {"source", "selector", "start", "end"}
    assert all(SELECTOR in q["query"] for q in server["queries"] if q["query"].count("vllm:"))
    hit = next(q for q in server["queries"] if q["figure"] == "prefix_cache_hit_rate")
    assert hit == {
        "figure": "prefix_cache_hit_rate",
        "query": f"sum(increase(vllm:prefix_cache_hits_total{{{SELECTOR}}}[{g.end - g.start}s])) / "
        f"sum(increase(vllm:prefix_cache_queries_total{{{SELECTOR}}}[{g.end - g.start}s]))",
        "value": 0.25,
    }
    assert "warmup_s: 1 pod(s) started inside the window and were not ready by its end" in " ".join(
        server["notes"]
    )
    assert any("(500, 800] ms" in n for n in server["notes"])
    assert stderr.startswith(f"import: reading the server's series from {served.url}")


def test_the_same_import_again_is_the_same_version(env: dict[str, str], served: Served) -> None:
    args = ("--prometheus", served.url, "--selector", SELECTOR, "--name", "again")
    first, _ = imported(env, GUIDELLM, *args)
    second, _ = imported(env, GUIDELLM, *args)
    assert first["created"] is True
    assert second["created"] is False
    assert second["record"]["digest"] == first["record"]["digest"]


def test_missing_series_are_null_with_a_note(env: dict[str, str], served: Served) -> None:
    item, stderr = imported(
        env,
        GUIDELLM,
        "--prometheus",
        served.url,
        "--selector",
        'namespace="bare"',
        "--name",
        "bare",
    )
    got = figures(item)
    assert got["requests_running_peak"] == 1.0
    for name in (
        "prefix_cache_hit_rate",
        "prefix_cache_queried_tokens",
        "kv_cache_usage_peak",
        "preemptions",
        "queue_p99_ms",
        "requests_waiting_peak",
        "warmup_s",
    ):
        assert got[name] is None, name
    notes = item["record"]["content"]["server"]["notes"]
    assert (
        "kv_cache_usage_peak: no vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc series "
        'for {namespace="bare"} over the window'
    ) in notes
    assert any(
        n.startswith("prefix_cache_hit_rate: no vllm:prefix_cache_hits_total") for n in notes
    )
    assert "warmup_s: no pod serving these series started inside the window" in notes
    # The notes reach the person importing too (stderr, and notes in the API's answer).
    assert "note: bare: server series: preemptions: no vllm:num_preemptions_total" in stderr
    assert any("preemptions" in n for n in item["notes"])


def test_older_vllm_names_are_read_and_the_v0_gauge_said_so(
    env: dict[str, str], served: Served
) -> None:
    args = ("--prometheus", served.url, "--name", "older", "--selector")
    v09, _ = imported(env, GUIDELLM, *args, 'namespace="v09"')
    assert figures(v09)["prefix_cache_hit_rate"] == 0.25
    assert figures(v09)["prefix_cache_queried_tokens"] == 200.0
    v0, _ = imported(env, GUIDELLM, *args, 'namespace="v0"')
    got = figures(v0)
    assert (got["prefix_cache_hit_rate"], got["prefix_cache_queried_tokens"]) == (0.4, None)
    assert got["kv_cache_usage_peak"] == 0.7  # vllm:gpu_cache_usage_perc, the name before 0.10
    notes = v0["record"]["content"]["server"]["notes"]
    assert any(
        n.startswith(
            f"prefix_cache_hit_rate: 0.400 is the mean over the window of vLLM V0's "
            f"gauge {PREFIX_GAUGE} (its max 0.400)"
        )
        for n in notes
    ), notes


# ---- re-import keeps the first time, and its window -----------------------------------------


def test_reimport_reads_the_window_of_the_first_measured_time(
    env: dict[str, str], served: Served
) -> None:
    first_at, second_at = _stamp(served.first.start), _stamp(served.second.start)
    plain, _ = imported(env, NO_TIME, "--measured-at", first_at, "--name", "stage0")
    assert "server" not in plain["record"]["content"]
    again, stderr = imported(
        env,
        NO_TIME,
        "--measured-at",
        second_at,
        "--name",
        "stage0",
        "--prometheus",
        served.url,
        "--selector",
        SELECTOR,
    )
    # A new version (it has `server`), at the first import's time, read over that window.
    assert again["created"] is True
    assert again["record"]["version"] == plain["record"]["version"] + 1
    assert again["record"]["content"]["measured_at"] == plain["record"]["content"]["measured_at"]
    got = figures(again)
    assert (got["start"], got["end"]) == (_stamp(served.first.start), _stamp(served.first.end))
    assert got["prefix_cache_hit_rate"] == 0.5  # 60 of 120, not the second window's 0.9
    assert got["prefix_cache_queried_tokens"] == 120.0
    assert "kept from the first import of these bytes" in stderr
    # The raw file is still the same measurement: the earlier version is replaced, not laundered.
    history = capgate_in_process("evidence", "history", "stage0@v1", "--json", env=env)
    assert history.returncode == 0, history.stderr
    assert "evidence data replaced" in history.stdout


def test_no_laundering_with_server_series_either(
    env: dict[str, str], served: Served, tmp_path: Path
) -> None:
    args = ("--prometheus", served.url, "--selector", SELECTOR, "--name", "launder")
    imported(env, GUIDELLM, *args)
    changed = tmp_path / "workload.json"
    changed.write_text(json.dumps(workload_with_p99(1.3)))
    submitted = capgate_in_process("workload", "submit", str(changed), env=env)
    assert submitted.returncode == 0, submitted.stderr
    before = evidence_count(env)
    assert before == 1
    again = run_import(env, GUIDELLM, *args)
    assert again.returncode == 2
    line = json_error(again)
    assert "raw_file.sha256" in line and "chat-assistant@v2 changed materially" in line
    assert evidence_count(env) == before


# ---- refusals -------------------------------------------------------------------------------


@sqlite_only  # refused before anything is stored
def test_unreachable_prometheus_exits_2_and_writes_nothing(
    env: dict[str, str], down_url: str
) -> None:
    before = evidence_count(env)
    result = run_import(env, GUIDELLM, "--prometheus", down_url, "--name", "down")
    assert result.returncode == 2
    assert result.stdout == ""
    error = json_error(result)
    assert "Prometheus" in error and "127.0.0.1" in error
    assert evidence_count(env) == before


@sqlite_only  # the file refused: no database changes that
def test_a_file_without_duration_exits_2_naming_the_field(env: dict[str, str]) -> None:
    result = run_import(
        env,
        NO_DURATION,
        "--measured-at",
        "2026-03-02T12:00:00Z",
        "--prometheus",
        "http://127.0.0.1:9",
    )
    assert result.returncode == 2
    line = json_error(result)
    assert "offered.duration_s: the file states no run duration" in line


@sqlite_only  # the file refused: no database changes that
def test_a_time_without_a_zone_is_no_window(env: dict[str, str]) -> None:
    result = run_import(env, NO_ZONE, "--prometheus", "http://127.0.0.1:9")
    assert result.returncode == 2
    line = json_error(result)
    assert (
        "--measured-at: the file's time 2025-05-13T04:56:48 has no time zone; read as UTC" in line
    )
    assert "give the run's start with its zone" in line


def test_credentials_are_sent_not_stored(env: dict[str, str], served: Served) -> None:
    with_secret = served.url.replace("http://", "http://reader:s3cret@")
    item, stderr = imported(
        env, GUIDELLM, "--prometheus", with_secret, "--selector", SELECTOR, "--name", "secret"
    )
    assert item["record"]["content"]["server"]["source"] == served.url
    assert "s3cret" not in json.dumps(item) and "s3cret" not in stderr


@sqlite_only  # the flags refused: no database changes that
def test_selector_without_prometheus_is_refused(env: dict[str, str]) -> None:
    result = run_import(env, GUIDELLM, "--selector", SELECTOR)
    assert result.returncode == 2
    assert "--selector" in result.stderr


@sqlite_only  # refused before anything is fetched or stored
def test_a_server_reads_only_the_prometheus_its_operator_named(
    env: dict[str, str], served: Served
) -> None:
    """Through a server, a URL outside CAPGATE_PROMETHEUS_URLS is refused before anything
    is fetched or written (the API would otherwise fetch wherever a caller points it);
    a local import reads the URL given, since the caller's own machine fetches it."""
    other = f"http://127.0.0.1:{free_port()}"  # not named by the operator
    before = evidence_count(env)
    result = run_import(env, GUIDELLM, "--prometheus", other, "--name", "elsewhere")
    if env.get("CAPGATE_SERVER"):
        assert result.returncode == 2
        line = json_error(result)
        assert "reads only the Prometheus URLs in CAPGATE_PROMETHEUS_URLS" in line
        assert served.url in line and other in line
    else:
        assert result.returncode == 2  # fetched and unreachable here, not refused unread
        assert "CAPGATE_PROMETHEUS_URLS" not in result.stderr
    assert evidence_count(env) == before
