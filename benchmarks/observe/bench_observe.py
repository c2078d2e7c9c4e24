"""`capgate observe` over a 30-day window on a real Prometheus (the issue: "queries are
bounded in points (step chosen from the window) so a 30-day window over 1,000 pods
answers in seconds").

    CAPGATE_PROMETHEUS_BINARY=/usr/bin/prometheus \\
        .venv/bin/python -m benchmarks.observe.bench_observe [--pods 112] [--scrape-interval 300]

What is built (tests/support/prometheus.py, the generator the live tests use): the
worked example's two classes (interactive, batch; lognormal lengths through the profile's
p50/p99, its CVs and abort shares) on ``--pods`` pods (half per class) scraped every
``--scrape-interval`` seconds for ``--days`` days, at ``--rate-scale`` times the
profile's rates per pod (low: the query cost is the number of samples, not their
values). vLLM 0.11 names (0.10 also exports two deprecated series the reader never
queries). promtool holds its whole OpenMetrics input in memory, so the pods are split
into shards of as many pods as fit ``--file-budget-mb`` (bytes per sample measured on a
twelve-scrape probe, extrapolated), one namespace each, all labelled ``job="vllm"``;
each shard is generated, backfilled into the one TSDB (``promtool tsdb
create-blocks-from openmetrics``, blocks up to ``--block`` wide: each block is one more
pass of promtool over its input) and deleted; this is ``prometheus_holding`` done shard
by shard, keeping each file's size and the truth's totals but not its drawn requests.
Prometheus is then started over the TSDB and left to settle: a minute after it opens the
TSDB it merges the shards' overlapping blocks (and compacts adjacent ones up to 486h, as
a server keeping a year would), and the timings wait for that so that they measure a
settled server, not one merging blocks at query time or compacting beside the queries.

What is measured, ``--runs`` times (median, min, max), windows interleaved round by round
so that machine noise falls on all alike: ``observe()`` in-process with a fresh
``Prometheus`` client per run, over the 30-day window on every pod (the issue's case),
over the same window on one shard (scaling in pods), and over the last 7 days and the
last day on every pod (scaling in the window); and each query it sends (HTTP request to
response body read, through a timing transport). One more, untimed run per window asks
Prometheus for its query statistics (``stats=all``): the samples each query scanned and
the most it held at once. Checked: the 30-day observation's requests per class, finished
requests by reason and every bucket of the six histograms equal the generator's truth,
and Prometheus holds as many ``vllm:`` series as were written. Reported: the dataset
(series, samples, file sizes, generation, backfill and compaction seconds, TSDB size),
peak RSS of this process, promtool and Prometheus, and load averages (the machine may be
shared: they say how much).

What it does not measure: 1,000 pods. The implications printed at the end are a linear
extrapolation in samples scanned, labelled as such.

Progress on stderr; the header, tables and notes on stdout (markdown).
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import yaml

import tests.support.prometheus as generator
from benchmarks.doc_blocks import Measurement, add_write_flag, publish
from registry.observe.prometheus import Prometheus, step_for
from registry.observe.read import CONCURRENT_QUERIES, HISTOGRAMS, Target, observe
from registry.records.observation import Observation
from registry.records.workload import WorkloadProfile
from tests.support.prometheus import (
    Dataset,
    PrometheusBinaries,
    classes_from_profile,
    find_binaries,
    running_prometheus,
    write_openmetrics,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chat-assistant"
PROFILE = WorkloadProfile.model_validate(yaml.safe_load((EXAMPLE / "workload.yaml").read_text()))
RUNTIME_VERSION = "0.11.0"
JOB = ("job", "vllm")
DAY_S = 86400
PEAK_WINDOW_S = max(c.arrival.peak_window_s for c in PROFILE.classes)  # as the CLI sets it
SETTLE_TIMEOUT_S = 900.0
# Prometheus' own defaults, for the notes: --query.timeout and --query.max-samples.
QUERY_TIMEOUT_S = 120.0
MAX_SAMPLES = 50_000_000


def say(message: str) -> None:
    print(f"bench_observe: {message}", file=sys.stderr, flush=True)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


# ---- building the dataset --------------------------------------------------------------


@dataclass
class ClassFigures:
    """What the truth says one class did over the whole span, summed over shards."""

    requests: int = 0
    finished: dict[str, int] = field(default_factory=dict)
    cumulative: dict[str, list[int]] = field(default_factory=dict)  # histogram -> counts

    def add(self, truth: Any) -> None:
        self.requests += truth.requests
        for reason, count in truth.finished.items():
            self.finished[reason] = self.finished.get(reason, 0) + count
        for key in HISTOGRAMS:
            counts = truth.sample(key).cumulative_counts()
            before = self.cumulative.get(key, [0] * len(counts))
            self.cumulative[key] = [a + b for a, b in zip(before, counts, strict=True)]


@dataclass
class Built:
    shards: list[Dataset]
    series: int = 0
    samples: int = 0
    file_bytes: list[int] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=lambda: {"generate": 0.0, "backfill": 0.0})
    classes: dict[str, ClassFigures] = field(default_factory=dict)
    promtool_rss_kib: int = 0


def shard_datasets(args: argparse.Namespace, end: float, per_shard: int) -> list[Dataset]:
    """The fleet as shards of ``per_shard`` pods per class (the last one may be smaller),
    one namespace each; each class runs at the profile's rate x rate_scale per pod."""
    per_class = args.pods // 2
    shards = []
    for index, first in enumerate(range(0, per_class, per_shard)):
        pods = min(per_shard, per_class - first)
        shards.append(
            Dataset(
                classes=classes_from_profile(
                    PROFILE, rate_scale=args.rate_scale * pods, with_peak=False, lognormal=True
                ),
                runtime_version=RUNTIME_VERSION,
                duration_s=args.days * DAY_S,
                end=end,
                scrape_interval_s=args.scrape_interval,
                pods=pods,
                namespace=f"fleet-{index:02d}",
                peak_window_s=args.scrape_interval,
                extra_labels=(JOB,),
                seed=index,
            )
        )
    return shards


def pods_per_shard(args: argparse.Namespace, end: float, directory: Path) -> tuple[int, float]:
    """Pods per class that fit the file budget, from the bytes per sample of a short probe
    (one pod per class, twelve scrapes) extrapolated to the whole span."""
    probe = replace(
        shard_datasets(args, end, 1)[0],
        duration_s=12 * args.scrape_interval,
        pods=1,
    )
    path = directory / "probe.om"
    truth = write_openmetrics(probe, path)
    bytes_per_sample = path.stat().st_size / truth.samples
    path.unlink()
    points = round(args.days * DAY_S / args.scrape_interval) + 1
    per_pod = bytes_per_sample * (truth.series / 2) * points  # 2 pods in the probe
    fitting = int(args.file_budget_mb * 1e6 // (2 * per_pod))
    if fitting < 1:
        sys.exit(
            f"one pod per class is ~{2 * per_pod / 1e9:.2f} GB of OpenMetrics at "
            f"{args.scrape_interval:g} s over {args.days:g} days, above --file-budget-mb "
            f"{args.file_budget_mb:g}: raise the scrape interval or the budget"
        )
    return min(fitting, args.pods // 2), per_pod


@contextmanager
def block_width(width: str) -> Iterator[None]:
    """promtool's --max-block-duration for backfill() (a module setting there)."""
    saved = generator.MAX_BLOCK_DURATION
    generator.MAX_BLOCK_DURATION = width
    try:
        yield
    finally:
        generator.MAX_BLOCK_DURATION = saved


def build(
    args: argparse.Namespace, binaries: PrometheusBinaries, end: float, directory: Path
) -> Built:
    """Generate and backfill every shard into ``directory / "tsdb"`` (as
    ``prometheus_holding`` does, shard by shard, keeping the file sizes and the truth's
    figures but not the drawn requests)."""
    per_shard, per_pod = pods_per_shard(args, end, directory)
    built = Built(shard_datasets(args, end, per_shard))
    say(
        f"{args.pods} pods in {len(built.shards)} shards of <= {per_shard} pods per class "
        f"(~{2 * per_shard * per_pod / 1e9:.2f} GB of OpenMetrics each, estimated)"
    )
    tsdb = directory / "tsdb"
    began_all = time.perf_counter()
    with block_width(args.block):
        for index, dataset in enumerate(built.shards):
            source = directory / f"shard-{index:02d}.om"
            began = time.perf_counter()
            truth = write_openmetrics(dataset, source)
            built.timings["generate"] += time.perf_counter() - began
            built.file_bytes.append(source.stat().st_size)
            built.series += truth.series
            built.samples += truth.samples
            for name, figures in truth.classes.items():
                built.classes.setdefault(name, ClassFigures()).add(figures)
            del truth
            began = time.perf_counter()
            generator.backfill(binaries, source, tsdb)
            built.timings["backfill"] += time.perf_counter() - began
            source.unlink()
            done = index + 1
            elapsed = time.perf_counter() - began_all
            say(
                f"shard {done}/{len(built.shards)}: {built.file_bytes[-1] / 1e9:.2f} GB, "
                f"{elapsed:.0f} s so far, ~{elapsed / done * (len(built.shards) - done):.0f} s "
                f"to go (load {load()})"
            )
    built.promtool_rss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return built


# ---- the server ------------------------------------------------------------------------


def server_metrics(url: str) -> dict[str, float]:
    """Prometheus' own unlabelled metrics (its /metrics page)."""
    out = {}
    for line in httpx.get(f"{url}/metrics", timeout=30).text.splitlines():
        if line.startswith("#") or "{" in line:
            continue
        name, _, value = line.partition(" ")
        try:
            out[name] = float(value)
        except ValueError:
            continue
    return out


def settle(url: str) -> tuple[float, int, int, int]:
    """Wait until the server has run its first compaction cycle (a minute after it opens
    the TSDB) and gone idle: (seconds waited, blocks before, blocks after, compactions)."""
    began = time.perf_counter()
    first = server_metrics(url)
    blocks_before = int(first["prometheus_tsdb_blocks_loaded"])
    last_note = began
    while time.perf_counter() - began < SETTLE_TIMEOUT_S:
        before = server_metrics(url)
        time.sleep(3.0)
        after = server_metrics(url)
        busy = after["process_cpu_seconds_total"] - before["process_cpu_seconds_total"]
        if (
            after["prometheus_tsdb_compactions_triggered_total"] >= 1
            and after["prometheus_tsdb_compaction_populating_block"] == 0
            and after["prometheus_tsdb_compactions_total"]
            == before["prometheus_tsdb_compactions_total"]
            and busy < 0.15
        ):
            return (
                time.perf_counter() - began,
                blocks_before,
                int(after["prometheus_tsdb_blocks_loaded"]),
                int(after["prometheus_tsdb_compactions_total"]),
            )
        if time.perf_counter() - last_note > 15:
            last_note = time.perf_counter()
            say(
                f"waiting for Prometheus to compact: {after['prometheus_tsdb_blocks_loaded']:.0f}"
                f" blocks, {after['prometheus_tsdb_compactions_total']:.0f} compactions, "
                f"{busy / 3:.0%} CPU"
            )
    sys.exit(f"Prometheus did not settle in {SETTLE_TIMEOUT_S:g} s")


def server_peak_rss_kib(tsdb: Path) -> int | None:
    """VmHWM of the prometheus serving ``tsdb`` (found by its command line), if readable."""
    wanted = f"--storage.tsdb.path={tsdb}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if wanted not in (proc / "cmdline").read_bytes().split(b"\0"):
                continue
            for line in (proc / "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        except OSError:
            continue
    return None


def instant(url: str, promql: str, at: float) -> list[dict[str, Any]]:
    body = httpx.get(
        f"{url}/api/v1/query", params={"query": promql, "time": at}, timeout=QUERY_TIMEOUT_S
    ).json()
    if body.get("status") != "success":
        sys.exit(f"{promql} failed: {body}")
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


# ---- timing observe() --------------------------------------------------------------------


@dataclass
class Call:
    kind: str  # instant | range
    query: str
    seconds: float
    scanned: int | None = None  # totalQueryableSamples (stats runs only)
    peak: int | None = None  # peakSamples
    series: int | None = None  # series in the result
    points: int | None = None  # points per series (range queries)


class TimingTransport(httpx.BaseTransport):
    """Times each request until its body is read; with ``stats``, asks Prometheus for its
    query statistics and keeps them (the client ignores the extra field)."""

    def __init__(self, stats: bool = False) -> None:
        self.inner = httpx.HTTPTransport()
        self.stats = stats
        self.calls: list[Call] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.stats:
            request.url = request.url.copy_add_param("stats", "all")
        began = time.perf_counter()
        response = self.inner.handle_request(request)
        response.read()
        elapsed = time.perf_counter() - began
        kind = "range" if request.url.path.endswith("query_range") else "instant"
        call = Call(kind, request.url.params["query"], elapsed)
        if self.stats:
            data = json.loads(response.content).get("data", {})
            samples = data.get("stats", {}).get("samples", {})
            call.scanned = samples.get("totalQueryableSamples")
            call.peak = samples.get("peakSamples")
            call.series = len(data.get("result", []))
            if data.get("resultType") == "matrix" and data["result"]:
                call.points = max(len(item["values"]) for item in data["result"])
        self.calls.append(call)
        return response

    def close(self) -> None:
        self.inner.close()


@dataclass(frozen=True)
class Window:
    label: str
    span_s: float
    selector: str
    pods: int


@dataclass
class Measured:
    window: Window
    totals: list[float] = field(default_factory=list)
    runs: list[list[Call]] = field(default_factory=list)
    stats: list[Call] = field(default_factory=list)
    observation: Observation | None = None

    def per_query(self) -> list[tuple[Call, list[float]]]:
        """Each query of the stats run with its times over the timed runs (matched by the
        query: the histogram reads are sent concurrently, in no fixed order)."""
        timed = [{c.query: c.seconds for c in run} for run in self.runs]
        return [(call, [run[call.query] for run in timed]) for call in self.stats]


def observe_once(
    url: str, window: Window, end: float, stats: bool
) -> tuple[float, Observation, list[Call]]:
    target = Target(
        selector=window.selector,
        class_label="traffic_class",
        classes={c.name: c.slo.model_dump() for c in PROFILE.classes},
        runtime_version=RUNTIME_VERSION,
        peak_window_s=PEAK_WINDOW_S,
    )
    transport = TimingTransport(stats=stats)
    began = time.perf_counter()
    with Prometheus(url, timeout_s=600, transport=transport) as client:
        observation = observe(
            client,
            target,
            name="bench-observed",
            plan="bench@v1",
            workload="chat-assistant@v1",
            start=datetime.fromtimestamp(end - window.span_s, UTC),
            end=datetime.fromtimestamp(end, UTC),
        )
    return time.perf_counter() - began, observation, transport.calls


def check(observation: Observation, built: Built) -> list[str]:
    """The observation against the truth; the problems (none when it read every sample)."""
    problems = []
    seen = {c.name: c for c in observation.classes}
    for name, truth in built.classes.items():
        got = seen.get(name)
        if got is None:
            problems.append(f"{name}: not observed")
            continue
        if got.requests != truth.requests:
            problems.append(f"{name}: {got.requests} requests, the truth {truth.requests}")
        if {k: v for k, v in got.finished.items() if v} != {
            k: v for k, v in truth.finished.items() if v
        }:
            problems.append(f"{name}: finished {got.finished}, the truth {truth.finished}")
        for key in HISTOGRAMS:
            histogram = getattr(got, key)
            counts = histogram.cumulative if histogram is not None else None
            if counts != truth.cumulative[key]:
                problems.append(
                    f"{name}.{key}: buckets {counts}, the truth {truth.cumulative[key]}"
                )
    return problems


# ---- reporting ---------------------------------------------------------------------------


def si(value: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f}"


def cell(query: str) -> str:
    return "`" + query.replace("|", "\\|") + "`"


BLOCK = "observe"
HEADER = (  # the first table's header (tests/docs checks the page has it)
    "| observation | pods | step s | range points | queries | samples scanned "
    "| median s | min s | max s | M samples/s |"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=112, help="pods in all (half per class)")
    parser.add_argument("--scrape-interval", type=float, default=300.0, help="seconds")
    parser.add_argument("--days", type=float, default=30.0, help="span held and observed")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rate-scale", type=float, default=0.005, help="x profile rps per pod")
    parser.add_argument("--file-budget-mb", type=float, default=1200.0, help="per shard file")
    parser.add_argument("--block", default="486h", help="promtool --max-block-duration")
    parser.add_argument("--slowest", type=int, default=8, help="queries listed")
    add_write_flag(parser, BLOCK)
    args = parser.parse_args()
    measurement = Measurement(BLOCK)
    if args.pods < 2 or args.pods % 2:
        sys.exit("--pods must be even (two classes) and at least 2")
    binaries = find_binaries()
    if binaries is None:
        sys.exit("prometheus absent: set CAPGATE_PROMETHEUS_BINARY (promtool beside it)")
    answer = subprocess.run(
        [str(binaries.prometheus), "--version"], capture_output=True, text=True, check=False
    )
    version = "Prometheus " + (answer.stdout.split() or ["", "", "?"])[2]
    loads = {"start": load()}
    span_s = args.days * DAY_S
    end = math.floor((time.time() - 600) / args.scrape_interval) * args.scrape_interval

    with tempfile.TemporaryDirectory(prefix="capgate-bench-observe-") as tmp:
        directory = Path(tmp)
        built = build(args, binaries, end, directory)
        loads["built"] = load()
        tsdb = directory / "tsdb"
        say(f"starting Prometheus over {tsdb}")
        began = time.perf_counter()
        with running_prometheus(binaries, tsdb) as url:
            built.timings["start"] = time.perf_counter() - began
            say("waiting for the server's first compaction cycle (a minute after it opens)")
            settle_s, blocks_before, blocks_after, settled = settle(url)
            tsdb_bytes = sum(p.stat().st_size for p in tsdb.rglob("*") if p.is_file())
            counted = instant(url, 'count({__name__=~"vllm:.+"})', end)
            series_in_tsdb = int(float(counted[0]["value"][1])) if counted else 0
            shard_pods = 2 * built.shards[0].pods
            windows = [
                Window(f"{args.days:g} d, all pods", span_s, f'{JOB[0]}="{JOB[1]}"', args.pods),
                Window(
                    f"{args.days:g} d, one shard",
                    span_s,
                    f'{JOB[0]}="{JOB[1]}",namespace="fleet-00"',
                    shard_pods,
                ),
                *(
                    Window(f"{days} d, all pods", days * DAY_S, f'{JOB[0]}="{JOB[1]}"', args.pods)
                    for days in (7, 1)
                    if days < args.days
                ),
            ]
            if len(built.shards) == 1:
                windows.pop(1)
            measured = [Measured(w) for w in windows]
            for round_ in range(args.runs):
                say(f"round {round_ + 1}/{args.runs} (load {load()})")
                for m in measured:
                    seconds, observation, calls = observe_once(url, m.window, end, stats=False)
                    m.totals.append(seconds)
                    m.runs.append(calls)
                    m.observation = m.observation or observation
            say("one more run per window with query statistics")
            for m in measured:
                _, _, m.stats = observe_once(url, m.window, end, stats=True)
                if sorted(c.query for c in m.stats) != sorted(c.query for c in m.runs[0]):
                    sys.exit(f"{m.window.label}: the stats run sent other queries")
            compactions = server_metrics(url)["prometheus_tsdb_compactions_total"]
            server_rss_kib = server_peak_rss_kib(tsdb)
        loads["end"] = load()

    self_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    whole = measured[0]
    assert whole.observation is not None
    problems = check(whole.observation, built)
    written = io.StringIO()
    with redirect_stdout(written):
        report(
            args,
            built,
            measured,
            loads=loads,
            settle_s=settle_s,
            blocks=(blocks_before, blocks_after, settled, int(compactions) - settled),
            tsdb_bytes=tsdb_bytes,
            series_in_tsdb=series_in_tsdb,
            rss_kib={
                "python": self_rss_kib,
                "promtool": built.promtool_rss_kib,
                "prometheus": server_rss_kib,
            },
            problems=problems,
            version=version,
        )
    text = written.getvalue()
    print(text, end="")
    if args.write:
        # The report's heading becomes the block's first line: the page has its own.
        publish(
            measurement,
            text.replace("## ", "", 1),
            f"median of {args.runs} rounds, windows interleaved",
            [version],
        )
    if problems or series_in_tsdb != built.series:
        sys.exit(1)


def report(
    args: argparse.Namespace,
    built: Built,
    measured: list[Measured],
    *,
    loads: dict[str, str],
    settle_s: float,
    blocks: tuple[int, int, int, int],
    tsdb_bytes: int,
    series_in_tsdb: int,
    rss_kib: dict[str, int | None],
    problems: list[str],
    version: str,
) -> None:
    whole = measured[0]
    observation = whole.observation
    assert observation is not None
    shards = len(built.shards)
    rss = ", ".join(
        f"{name} {value / 2**20:.2f} GiB" if value else f"{name} unknown"
        for name, value in rss_kib.items()
    )
    print(
        f"## `capgate observe` over a {args.days:g}-day window: {version}, {os.cpu_count()} cores"
    )
    print()
    print(
        f"- load average (1/5/15 min): {loads['start']} at start, {loads['built']} after the "
        f"backfill, {loads['end']} at the end (other work on the machine slows every figure)"
    )
    print(
        f"- dataset: {args.pods} pods ({args.pods // 2} per class x 2 classes) in {shards} "
        f"shards (namespaces), {args.days:g} d scraped every {args.scrape_interval:g} s, vLLM "
        f"{RUNTIME_VERSION} names, the example profile's rates x {args.rate_scale:g} per pod "
        f"({sum(c.requests for c in built.classes.values()):,} requests); {built.series:,} "
        f"series, {built.samples:,} samples ({si(built.samples)}); Prometheus counts "
        f"{series_in_tsdb:,} `vllm:` series"
    )
    print(
        f"- OpenMetrics: {sum(built.file_bytes) / 1e9:.2f} GB in all, largest file "
        f"{max(built.file_bytes) / 1e9:.2f} GB; generation {built.timings['generate']:.0f} s, "
        f"backfill {built.timings['backfill']:.0f} s (promtool, blocks <= {args.block}), "
        f"server start {built.timings['start']:.1f} s, its compaction {settle_s:.0f} s "
        f"({blocks[0]} blocks -> {blocks[1]}); TSDB {tsdb_bytes / 1e6:.0f} MB on disk "
        f"({tsdb_bytes / built.samples:.2f} B/sample)"
    )
    print(f"- peak RSS: {rss}")
    print(
        f"- compactions by the server: {blocks[2]} while settling, {blocks[3]} during the "
        "timed runs"
    )
    requests = ", ".join(
        f"{c.name} {c.requests:,} (truth {built.classes[c.name].requests:,})"
        for c in observation.classes
    )
    verdict = "equal to the truth" if not problems else "NOT equal to the truth"
    print(
        f"- correctness ({whole.window.label}): requests per class {requests}; requests, "
        f"finished by reason and every bucket of the six histograms {verdict}"
    )
    for problem in problems:
        print(f"  - {problem}")
    print()
    print(HEADER)
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m in measured:
        scanned = sum(c.scanned or 0 for c in m.stats)
        points = max((c.points or 0) for c in m.stats)
        median = statistics.median(m.totals)
        step = step_for(m.window.span_s, floor_s=PEAK_WINDOW_S)
        print(
            f"| {m.window.label} | {m.window.pods} | {step:g} "
            f"| {points} | {len(m.stats)} | {si(scanned)} | {median:.3f} | {min(m.totals):.3f} "
            f"| {max(m.totals):.3f} | {scanned / median / 1e6:.1f} |"
        )
    print()
    print(f"Slowest queries of the {whole.window.label} observation (of {len(whole.stats)}):")
    print()
    print(
        "| query | kind | median s | min s | max s | samples scanned | peak samples "
        "| result series |"
    )
    print("|---|---|---|---|---|---|---|---|")
    ranked = sorted(whole.per_query(), key=lambda pair: -statistics.median(pair[1]))
    for call, times in ranked[: args.slowest]:
        print(
            f"| {cell(call.query)} | {call.kind} | {statistics.median(times):.3f} "
            f"| {min(times):.3f} | {max(times):.3f} | {si(call.scanned or 0)} "
            f"| {si(call.peak or 0)} | {call.series} |"
        )
    scanned = sum(c.scanned or 0 for c in whole.stats)
    median = statistics.median(whole.totals)
    queries = sum(statistics.median(t) for _, t in whole.per_query())
    peak = max(c.peak or 0 for c in whole.stats)
    slowest = max(statistics.median(t) for _, t in whole.per_query())
    scale = 1000 / args.pods
    print()
    print("Notes:")
    print()
    print(
        f"- The {whole.window.label} observation sent {len(whole.stats)} queries (the six "
        f"histograms' {CONCURRENT_QUERIES} at a time, the rest one after another); their "
        f"medians sum to {queries:.3f} s against the observation's {median:.3f} s. "
        f"Prometheus scanned {si(scanned)} samples ({scanned / median / 1e6:.1f} M "
        f"samples/s end to end); the most any query held at once was {si(peak)} "
        f"(--query.max-samples is {si(MAX_SAMPLES)} by default). The range query is bounded "
        f"in points; the instant queries aggregate server-side over every sample in the "
        f"window, so their cost grows with the samples in it (pods x series x window / "
        f"scrape interval), which the one-shard and shorter-window rows show."
    )
    print(
        f"- 1,000 pods: NOT measured. A linear extrapolation in samples scanned (x{scale:.1f} "
        f"the pods at the same {args.scrape_interval:g} s scrape interval) gives ~"
        f"{median * scale:.0f} s for the observation and ~{slowest * scale:.0f} s for its "
        f"slowest query (Prometheus' --query.timeout is {QUERY_TIMEOUT_S:g} s by default, "
        f"capgate's --timeout 60 s per query); at a 30 s scrape interval multiply by "
        f"{args.scrape_interval / 30:g}, at 15 s by {args.scrape_interval / 15:g}. Whether "
        f"it stays linear that far (memory, page cache, block layout) is untested here."
    )


if __name__ == "__main__":
    main()
