"""GuideLLM benchmark reports: the old schema (v0.2/v0.3) and the report schema (v0.4 on).

Two layouts, read by shape rather than by version string:

* **old** (v0.2/v0.3, no ``metadata``): each benchmark carries ``args``, ``run_stats`` and
  ``request_totals``; a metric's ``count`` is the number of requests;
* **report** (the v0.4 rewrite; files carry ``metadata.guidellm_version``, e.g. 0.5.0.dev0,
  0.8.0.dev18): each benchmark carries ``config``, ``scheduler_metrics`` and
  ``metrics.request_totals``; a weighted metric's ``count`` is the sum of its weights.

What each metric means (GuideLLM's own source: ``src/guidellm/benchmark/benchmark.py`` for
the old schema, ``src/guidellm/schemas/request_stats.py`` and
``src/guidellm/benchmark/schemas/generative/metrics.py`` for the report schema):

* ``inter_token_latency_ms``: per request, (last token - first token) / (out - 1), which is
  capgate's TPOT ((e2e - ttft) / (out - 1)). GuideLLM aggregates it token-weighted (each
  request weighs out - 1) in both schemas: its mean is the pooled mean inter-token gap, its
  percentiles are percentiles of per-request averages with long outputs weighing more. It
  is stored as ``tpot_ms`` with that weighting noted. It is not a pooled ITL: GuideLLM keeps
  only each request's first and last token time, so no version states per-gap latencies
  and ``itl_ms`` stays missing;
* ``time_per_output_token_ms``: per request over *all* output tokens, weighted by out. Old
  schema: (last token - first token) / out; report schema: (last token - request start) /
  out, so it includes the TTFT. Neither is capgate's TPOT; not stored;
* ``time_to_first_token_ms`` (ms) and ``request_latency`` (seconds): one value per request;
* ``request_totals``: ``errored`` requests failed; ``incomplete`` requests were still in
  flight when the benchmark stopped (a time or count limit) and were cut off by the tool.
  They are recorded as ``incomplete``, never as cancellations: GuideLLM has no option to
  cancel requests on purpose, so a GuideLLM test never exercises client cancellation.

Other quirks: percentile keys ``p001``/``p999`` are the 0.1th/99.9th percentiles and
``p01``/``p05`` the 1st/5th; old files state the median only as ``median``; ``requests``
lists a bounded sample that may include warm-up and cool-down requests, so figures come
from the stated statistics; every benchmark in ``benchmarks`` is one stage.
"""

from __future__ import annotations

import re
from typing import Any

from registry.importers.identity import Identity, first, stated
from registry.importers.json_values import count, epoch_to_utc, num, obj, pos, refuse
from registry.importers.parsed_stage import ParsedStage, standard_missing
from registry.importers.stats import cv_from_stated, percentiles_ms, stated_length_distribution
from registry.records.evidence import Percentiles, Throughput

TOOL = "guidellm"
_PKEY = re.compile(r"^p(\d{2,3})$")
_RATE_STRATEGIES = ("constant", "poisson", "async")


def looks_like(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    benches = doc.get("benchmarks")
    if not isinstance(benches, list) or not benches or not isinstance(benches[0], dict):
        return False
    first = benches[0]
    return "metrics" in first and ("type_" in first or "run_stats" in first)


def guidellm_level(key: str) -> float | None:
    """``p001`` -> 0.1, ``p01`` -> 1, ``p05`` -> 5, ``p50`` -> 50, ``p999`` -> 99.9."""
    m = _PKEY.match(key)
    if m is None:
        return None
    digits = m.group(1)
    return int(digits) / 10.0 if len(digits) == 3 else float(int(digits))


def _levels(stat: dict[str, Any]) -> dict[float, float]:
    out: dict[float, float] = {}
    pcts = obj(stat.get("percentiles")) or {}
    for key, value in pcts.items():
        lvl, v = guidellm_level(key), num(value)
        if lvl is not None and v is not None:
            out[lvl] = v
    median = num(stat.get("median"))
    if median is not None:
        out.setdefault(50.0, median)
    return out


def _successful(metrics: dict[str, Any], key: str) -> dict[str, Any] | None:
    metric = obj(metrics.get(key))
    if metric is None:
        return None
    ok = obj(metric.get("successful"))
    if ok is None or not count(ok.get("count")):
        return None
    return ok


def _latency(
    stage: ParsedStage, metrics: dict[str, Any], key: str, scale: float
) -> tuple[Percentiles | None, int | None]:
    stat = _successful(metrics, key)
    if stat is None:
        return None, None
    pct = percentiles_ms(
        _levels(stat), mean=num(stat.get("mean")), scale_to_ms=scale, notes=stage.notes, what=key
    )
    return pct, count(stat.get("count"))


def _scheduler(bench: dict[str, Any]) -> dict[str, Any]:
    """Run statistics: ``scheduler_metrics`` (report schema) or ``run_stats`` (old)."""
    return obj(bench.get("scheduler_metrics")) or obj(bench.get("run_stats")) or {}


def _totals(stage: ParsedStage, bench: dict[str, Any], metrics: dict[str, Any]) -> dict[str, Any]:
    for candidate in (metrics.get("request_totals"), bench.get("request_totals")):
        t = obj(candidate)
        if t is not None:
            return t
    made = obj(_scheduler(bench).get("requests_made"))
    if made is not None:
        # The scheduler counts every request it made, warm-up and cool-down included.
        stage.notes.append(
            "the benchmark states no request_totals; counts taken from the scheduler's "
            "requests_made, which include warm-up and cool-down requests"
        )
        return made
    return {}


def _strategy(bench: dict[str, Any]) -> dict[str, Any]:
    config = obj(bench.get("config")) or {}
    args = obj(bench.get("args")) or {}
    return obj(config.get("strategy")) or obj(args.get("strategy")) or {}


def _offered_load(stage: ParsedStage, strategy: dict[str, Any]) -> None:
    kind = str(strategy.get("type_") or "")
    stage.notes.append(f"GuideLLM strategy {kind or 'unknown'}")
    if kind == "synchronous":
        stage.concurrency = 1
    elif kind == "concurrent":
        streams = count(strategy.get("streams"))
        stage.concurrency = streams if streams else None
    elif kind in _RATE_STRATEGIES:
        stage.request_rate_rps = pos(strategy.get("rate"))
        if kind == "poisson":
            stage.burstiness = 1.0  # Poisson arrivals are gamma arrivals of shape 1
        elif kind == "constant":
            stage.constant_arrivals = True
    elif kind == "throughput":
        stage.rate_unbounded = True
        conc = count(strategy.get("max_concurrency"))
        stage.concurrency = conc if conc else None
        stage.notes.append("throughput strategy: requests sent as fast as the server accepts")


def _window(stage: ParsedStage, bench: dict[str, Any]) -> None:
    """Start of measurement and its length, clipped to the last request when the window
    GuideLLM states runs past the end of the run (a cool-down that was never reached)."""
    sched = _scheduler(bench)
    start = num(bench.get("start_time"))
    basis = "start_time"
    if start is None:
        basis = "scheduler measure_start_time"
        start = num(sched.get("measure_start_time")) or num(sched.get("start_time"))
    if start is not None:
        stage.measured_at = epoch_to_utc(start)
        stage.measured_at_basis = basis
    end = num(bench.get("end_time"))
    duration = pos(bench.get("duration"))
    if duration is None and start is not None and end is not None and end > start:
        duration = end - start
    last = num(sched.get("request_end_time"))
    ran = last - start if start is not None and last is not None else None
    if ran is not None and duration is not None and 0 < ran < duration:
        stage.notes.append(
            f"GuideLLM's measurement window ({duration:g} s) runs past the last request "
            f"({ran:g} s after the start): duration clipped to the last request; "
            "GuideLLM's per-second rates are averaged over the whole window"
        )
        duration = ran
    stage.duration_s = duration


def _counts(stage: ParsedStage, bench: dict[str, Any], metrics: dict[str, Any]) -> None:
    totals = _totals(stage, bench, metrics)
    ok, err, inc = (count(totals.get(k)) for k in ("successful", "errored", "incomplete"))
    total = count(totals.get("total"))
    if total is None and None not in (ok, err, inc):
        total = (ok or 0) + (err or 0) + (inc or 0)
    stage.requests, stage.completed, stage.failed, stage.incomplete = total, ok, err, inc
    # GuideLLM cannot cancel requests on purpose: none were, whatever 'incomplete' says.
    stage.cancelled = 0 if totals else None
    stage.cancellations_exercised = False if totals else None
    stage.cancellation_basis = (
        "GuideLLM has no option to cancel requests, so the test did not exercise client "
        "cancellation; its 'incomplete' requests were cut off when the benchmark stopped "
        "and are recorded as incomplete"
    )
    if inc:
        reason = _scheduler(bench).get("termination_reason")
        why = f" ({reason})" if isinstance(reason, str) else ""
        stage.notes.append(
            f"{inc} request(s) still in flight when the benchmark stopped{why}: recorded as "
            "incomplete, not as completed, failed or cancelled"
        )
    if err:
        stage.notes.append(f"{err} errored request(s) recorded as failed")
    status = _scheduler(bench).get("status")
    if isinstance(status, str) and status != "success":
        stage.notes.append(f"GuideLLM run status {status!r}")
    samples = obj(bench.get("requests")) or {}
    listed = samples.get("successful")
    if isinstance(listed, list) and listed and ok is not None and len(listed) != ok:
        stage.notes.append(
            f"requests.successful lists {len(listed)} sampled requests but the statistics "
            f"cover {ok} (request_totals); figures are taken from the statistics"
        )
    stage.priority_classes = 1
    stage.priority_basis = "GuideLLM sends one request stream without priorities"


def _latencies(stage: ParsedStage, metrics: dict[str, Any], *, report: bool) -> None:
    stage.ttft_ms, _ = _latency(stage, metrics, "time_to_first_token_ms", 1.0)
    stage.e2e_ms, _ = _latency(stage, metrics, "request_latency", 1000.0)
    stage.tpot_ms, gaps = _latency(stage, metrics, "inter_token_latency_ms", 1.0)
    if stage.tpot_ms is not None:
        if report:
            weight = (
                f"token-weighted: each request weighs (out - 1); its count, {gaps}, is the "
                f"number of token gaps over {stage.completed} requests"
            )
        else:
            weight = "token-weighted: each request weighs (out - 1) (GuideLLM's benchmark.py)"
        stage.notes.append(
            "tpot_ms is GuideLLM's inter_token_latency_ms, per request (last token - first "
            f"token) / (out - 1), aggregated {weight}; its mean is the pooled mean "
            "inter-token gap, its percentiles are of per-request values with long outputs "
            "weighing more than in a request-weighted TPOT"
        )
    tpot_def = (
        "(last token - request start) / out, TTFT included"
        if report
        else "(last token - first token) / out"
    )
    stage.notes.append(
        f"GuideLLM's time_per_output_token_ms ({tpot_def}, weighted by out) is not capgate's "
        "TPOT and is not stored; GuideLLM keeps no per-gap times, so no pooled ITL is stated"
    )
    if _successful(metrics, "time_to_first_output_token_ms") is not None:
        stage.notes.append(
            "time_to_first_output_token_ms (first non-reasoning token) not stored; ttft_ms "
            "is the first token of any kind"
        )


def _lengths(stage: ParsedStage, metrics: dict[str, Any]) -> None:
    for key, which in (("prompt_token_count", "prompt"), ("output_token_count", "output")):
        stat = _successful(metrics, key)
        if stat is None:
            continue
        n = count(stat.get("count"))
        mean, std = num(stat.get("mean")), num(stat.get("std_dev"))
        levels = _levels(stat)
        dist = stated_length_distribution(
            levels,
            samples=n,
            mean=mean,
            minimum=num(stat.get("min")),
            maximum=num(stat.get("max")),
            notes=stage.notes,
            what=key,
        )
        est = cv_from_stated(mean=mean, std=std, levels=levels, samples=n)
        if which == "prompt":
            stage.prompt_tokens, stage.prompt_cv = dist, est
        else:
            stage.output_tokens, stage.output_cv = dist, est


def _throughput(stage: ParsedStage, metrics: dict[str, Any]) -> None:
    def rate(key: str) -> float | None:
        stat = _successful(metrics, key)
        v = num(stat.get("mean")) if stat is not None else None
        return v if v is not None and v >= 0 else None

    stage.throughput = Throughput(
        requests_per_s=rate("requests_per_second"),
        output_tokens_per_s=rate("output_tokens_per_second"),
        total_tokens_per_s=rate("tokens_per_second"),
    )
    stage.notes.append("throughputs are the means of GuideLLM's per-second rate series")
    conc = _successful(metrics, "request_concurrency")
    if conc is not None and num(conc.get("mean")) is not None:
        stage.notes.append(f"measured mean concurrency {num(conc.get('mean')):g}")


def _schedule(stage: ParsedStage, bench: dict[str, Any]) -> None:
    """The rate the client really sent, from how late GuideLLM's scheduler started requests.

    GuideLLM states the mean delay between each request's scheduled and actual start
    (``request_targeted_start_delay_avg``, old ``request_start_time_targeted_delay_avg``)
    over every request it made. A client that keeps its schedule starts them on time; one
    that falls behind accumulates lateness linearly, so over n requests the mean lateness d
    stretches the send span from (n - 1) / rate to (n - 1) / rate + 2 d. Synchronous and
    concurrent strategies have no schedule to keep (their "targeted" start is queue time).
    """
    offered = stage.request_rate_rps
    if offered is None:
        return
    sched = _scheduler(bench)
    made = count((obj(sched.get("requests_made")) or {}).get("total"))
    delay = num(sched.get("request_targeted_start_delay_avg"))
    if delay is None:
        delay = num(sched.get("request_start_time_targeted_delay_avg"))
    if made is None or made < 2 or delay is None or delay < 0:
        return
    span = (made - 1) / offered + 2.0 * delay
    stage.achieved_rate_rps = (made - 1) / span
    stage.notes.append(
        f"achieved send rate {stage.achieved_rate_rps:g} req/s estimated from the scheduler: "
        f"{made} requests started on average {delay:g} s after their scheduled time at "
        f"{offered:g} req/s"
    )


def _identity(doc: dict[str, Any], bench: dict[str, Any], i: int) -> Identity:
    """The backend's model (the one GuideLLM sent requests to) and the tokenizer
    ("processor"), per benchmark where stated, else from the report's own arguments."""
    where = f"benchmarks[{i}]"
    model = first(
        stated(bench, "config", "backend", "model", basis=f"{where}.config.backend.model"),
        stated(bench, "worker", "backend_model", basis=f"{where}.worker.backend_model"),
        stated(doc, "config", "spec", "backend", "model"),
        stated(doc, "args", "model"),
    )
    tokenizer = first(
        stated(bench, "request_loader", "processor", basis=f"{where}.request_loader.processor"),
        stated(doc, "config", "spec", "tokenizer", "model"),
        stated(doc, "args", "processor"),
    )
    return Identity(models=(model,) if model else (), tokenizer=tokenizer)


def _parse_bench(
    bench: dict[str, Any], i: int, version: str | None, *, report: bool, source: str
) -> ParsedStage:
    stage = ParsedStage(tool=TOOL, tool_version=version, stage=str(i))
    metrics = obj(bench.get("metrics"))
    if metrics is None:
        raise refuse(f"benchmarks[{i}].metrics", "each benchmark needs metrics", source=source)
    _window(stage, bench)
    _offered_load(stage, _strategy(bench))
    _counts(stage, bench, metrics)
    _latencies(stage, metrics, report=report)
    _lengths(stage, metrics)
    _throughput(stage, metrics)
    _schedule(stage, bench)
    standard_missing(stage)
    return stage


def parse(doc: Any, *, source: str) -> list[ParsedStage]:
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise refuse(
            "benchmarks",
            "a GuideLLM report is an object with a 'benchmarks' list of generative benchmarks",
            source=source,
        )
    meta = obj(doc.get("metadata")) or {}
    version = meta.get("guidellm_version")
    version = version if isinstance(version, str) else None
    stages: list[ParsedStage] = []
    for i, bench in enumerate(doc["benchmarks"]):
        if not isinstance(bench, dict):
            raise refuse(f"benchmarks[{i}]", "each benchmark must be an object", source=source)
        report = "scheduler_metrics" in bench or "run_stats" not in bench
        stage = _parse_bench(bench, i, version, report=report, source=source)
        stage.identity = _identity(doc, bench, i)
        if len(doc["benchmarks"]) == 1:
            stage.stage = None  # a single benchmark is not a series
        if version is None:
            stage.notes.append("the file states no GuideLLM version (v0.2/v0.3 schema)")
        stages.append(stage)
    return stages
