"""The observe test infrastructure tells the truth: a real Prometheus, real PromQL.

Generated vLLM series are backfilled with promtool and queried over the HTTP API; what
Prometheus answers is checked against the requests the generator drew.

Why counts are exact and quantiles only bucket-exact: ``increase()`` over a range whose
edges both fall on scrape timestamps sees the first and last sample on the edges (in
Prometheus 2.x a range includes both ends), so it does not extrapolate and returns the
plain difference of the counter. A histogram only keeps how many observations fell at
or below each bucket bound, so ``histogram_quantile`` knows the bucket holding the
requested rank and nothing about where in it the values lie; it interpolates linearly
inside that bucket. The true quantile lies in that same bucket (Sample.quantile uses the
rank ``histogram_quantile`` uses), so the estimate must land in the true quantile's
bucket, and no closer claim can be made.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from registry.observe.catalog import signals
from registry.records.documents import read_record
from registry.records.kinds import RecordKind
from tests.support.prometheus import (
    HISTOGRAM_KEYS,
    BackfilledPrometheus,
    ClassTraffic,
    Dataset,
    LogNormal,
    classes_from_profile,
    go_float,
    grow_prompt_p99,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chat-assistant"
PROFILE = read_record(RecordKind.workload, EXAMPLE / "workload.yaml")
# Two hours of the example profile at 15 % of its rates (~3.3 req/s), two pods per class.
BASE = Dataset(
    classes=classes_from_profile(PROFILE, rate_scale=0.15, preemption_share=0.01, lognormal=True),
    runtime_version="0.10.2",
    seed=7,
)
GROWN = grow_prompt_p99(BASE, 1.3)


def _small(version: str) -> Dataset:
    chat = ClassTraffic("chat", 1.0, LogNormal(300, 3000), LogNormal(100, 800), abort_share=0.05)
    namespace = "v" + version.replace(".", "-")
    return Dataset(
        classes=(chat,), runtime_version=version, duration_s=1800, pods=1, namespace=namespace
    )


Start = Callable[..., BackfilledPrometheus]
VERSIONS = {version: _small(version) for version in ("0.8.5", "0.10.2", "0.11.0")}


@pytest.fixture(scope="module")
def base(backfilled_prometheus: Start) -> BackfilledPrometheus:
    return backfilled_prometheus(BASE)


@pytest.fixture(scope="module")
def grown(backfilled_prometheus: Start) -> BackfilledPrometheus:
    return backfilled_prometheus(GROWN)


@pytest.fixture(scope="module")
def versions(backfilled_prometheus: Start) -> BackfilledPrometheus:
    return backfilled_prometheus(*VERSIONS.values())


def _span(server: BackfilledPrometheus) -> str:
    return f"{round(server.truth.end - server.truth.start)}s"


def _selector(server: BackfilledPrometheus, name: str | None) -> str:
    return "" if name is None else f'{server.truth.class_label}="{name}"'


def _name(server: BackfilledPrometheus, key: str) -> str:
    return server.truth.names[key][0]


def test_counters_hold_exactly_the_generated_requests(base: BackfilledPrometheus) -> None:
    truth = base.truth
    for name, cls in truth.classes.items():
        match = _selector(base, name)
        at_start = base.value(f"sum(vllm:request_success_total{{{match}}})", truth.start)
        assert at_start == 0
        by_reason = base.values_by(
            f"sum by (finished_reason) (vllm:request_success_total{{{match}}})",
            "finished_reason",
            truth.end,
        )
        assert by_reason == {reason: float(n) for reason, n in cls.finished.items()}
        assert sum(by_reason.values()) == cls.requests > 0
        assert cls.finished["abort"] > 0 and cls.finished["length"] > 0
        assert base.value(f"sum(vllm:num_preemptions_total{{{match}}})", truth.end) == (
            cls.preemptions
        )
        for key in HISTOGRAM_KEYS:
            count = base.value(f"sum({_name(base, key)}_count{{{match}}})", truth.end)
            assert count == cls.sample(key).count, key

    # increase() over the whole span, and over the last hour: both edges on scrapes,
    # so no extrapolation and the exact count.
    whole = base.value(f"sum(increase(vllm:request_success_total[{_span(base)}]))", truth.end)
    assert whole == truth.overall.requests
    last_hour = truth.between_overall(truth.end - 3600, truth.end)
    assert 0 < last_hour.requests < truth.overall.requests
    assert base.value("sum(increase(vllm:request_success_total[1h]))", truth.end) == (
        last_hour.requests
    )
    # Off the scrape grid increase() extrapolates, and the count stops being exact.
    off_grid = base.value("sum(increase(vllm:request_success_total[1h]))", truth.end - 7)
    assert off_grid != pytest.approx(last_hour.requests, abs=0.5)


@pytest.mark.parametrize("key", HISTOGRAM_KEYS)
def test_buckets_exact_and_quantiles_in_the_true_bucket(
    base: BackfilledPrometheus, key: str
) -> None:
    truth = base.truth
    name = _name(base, key)
    for cls in [*truth.classes.values(), truth.overall]:
        match = _selector(base, None if cls.name == "*" else cls.name)
        sample = cls.sample(key)
        rate = f"increase({name}_bucket{{{match}}}[{_span(base)}])"
        counts = base.values_by(f"sum by (le) ({rate})", "le", truth.end)
        expected = dict(
            zip([*map(go_float, sample.bounds), "+Inf"], sample.cumulative_counts(), strict=True)
        )
        assert counts == {le: float(n) for le, n in expected.items()}
        total_sum = base.value(f"sum({name}_sum{{{match}}})", truth.end)
        assert total_sum == pytest.approx(sample.sum, rel=1e-9)
        for q in (0.5, 0.9, 0.99):
            estimate = base.value(f"histogram_quantile({q}, sum by (le) ({rate}))", truth.end)
            lower, upper = sample.bucket(q)
            if math.isinf(upper):  # the +Inf bucket: Prometheus answers the last finite bound
                assert estimate == sample.bounds[-1]
            else:
                assert lower <= estimate <= upper, (cls.name, q, sample.quantile(q))
            assert lower < sample.quantile(q) <= upper


def test_class_label_separates_the_deployments(base: BackfilledPrometheus) -> None:
    truth = base.truth
    label = truth.class_label
    assert label == "traffic_class"
    pods = base.values_by(f"count by ({label}) (vllm:num_requests_running)", label, truth.end)
    assert pods == {name: float(len(cls.pods)) for name, cls in truth.classes.items()}
    running = base.values_by(
        f"max by ({label}) (max_over_time(vllm:num_requests_running[{_span(base)}]))",
        label,
        truth.end,
    )
    assert running == {name: cls.running_max for name, cls in truth.classes.items()}
    kv = base.values_by(
        f"max by ({label}) (max_over_time(vllm:kv_cache_usage_perc[{_span(base)}]))",
        label,
        truth.end,
    )
    assert kv == pytest.approx({n: c.kv_cache_usage_max for n, c in truth.classes.items()})
    labels = base.query('vllm:request_success_total{finished_reason="stop"}', truth.end)[0]
    assert set(labels["metric"]) == {
        "__name__", "engine", "finished_reason", "model_name", "namespace", "pod", label,
    }  # fmt: skip
    # The classes really differ: batch prompts are longer at the median.
    medians = base.values_by(
        f"histogram_quantile(0.5, sum by ({label}, le) "
        f"(increase(vllm:request_prompt_tokens_bucket[{_span(base)}])))",
        label,
        truth.end,
    )
    assert medians["batch"] > medians["interactive"]


def test_peak_rate_over_scrape_aligned_windows(base: BackfilledPrometheus) -> None:
    truth = base.truth
    window = round(truth.overall.peak_window_s)
    # Subquery steps land on the scrape grid; the first window starts at the data start.
    inner = f"[{round(truth.end - truth.start) - window}s:{round(BASE.scrape_interval_s)}s]"
    for cls in [*truth.classes.values(), truth.overall]:
        match = _selector(base, None if cls.name == "*" else cls.name)
        peak = base.value(
            f"max_over_time(sum(increase(vllm:request_success_total{{{match}}}[{window}s])){inner})",
            truth.end,
        )
        assert peak / window == pytest.approx(cls.peak_rps)
        assert cls.peak_rps > 1.5 * cls.completed_rps  # the profile's peak window shows
    interactive = truth["interactive"]
    assert interactive.interarrival_cv == pytest.approx(1.6, rel=0.1)
    assert interactive.mean_rps == pytest.approx(18.0 * 0.15, rel=0.05)
    assert truth["batch"].abort_share == pytest.approx(0.01, abs=0.01)


def _names(server: BackfilledPrometheus, namespace: str) -> set[str]:
    response = httpx.get(
        f"{server.url}/api/v1/label/__name__/values",
        params={"match[]": f'{{namespace="{namespace}"}}'},
        timeout=30,
    )
    response.raise_for_status()
    return set(response.json()["data"])


def test_release_names(versions: BackfilledPrometheus) -> None:
    old = {"vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds_bucket"}
    new = {"vllm:kv_cache_usage_perc", "vllm:inter_token_latency_seconds_bucket"}
    seen = {d.runtime_version: _names(versions, d.namespace) for d in versions.datasets}
    assert old <= seen["0.8.5"] and not new & seen["0.8.5"]
    assert new <= seen["0.11.0"] and not old & seen["0.11.0"]
    assert old | new <= seen["0.10.2"]  # 0.10 exported both, the old ones deprecated
    for version, names in seen.items():
        for key, signal in signals(version).items():  # every signal has a series
            suffix = "_bucket" if signal.kind == "histogram" else ""
            assert {n + suffix for n in signal.names} & names, (version, key)
    truth = versions.truths[1]
    assert truth.dataset.runtime_version == "0.10.2"
    match = '{namespace="v0-10-2"}'
    for a, b in (
        ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
        ("vllm:inter_token_latency_seconds_count", "vllm:time_per_output_token_seconds_count"),
    ):
        assert versions.value(f"sum({a}{match})", truth.end) == versions.value(
            f"sum({b}{match})", truth.end
        )
    assert (
        versions.value(f"sum(vllm:inter_token_latency_seconds_count{match})", truth.end)
        == truth.overall.itl.count
    )


def test_grown_prompt_tail(base: BackfilledPrometheus, grown: BackfilledPrometheus) -> None:
    for name, before in base.truth.classes.items():
        after = grown.truth[name]
        assert after.prompt_tokens.p50 == before.prompt_tokens.p50
        assert after.prompt_tokens.p99 / before.prompt_tokens.p99 == pytest.approx(1.3, rel=0.03)
        assert after.requests == before.requests  # the same requests, longer prompts
        assert after.output_tokens.p99 == before.output_tokens.p99
        assert after.e2e.p99 == before.e2e.p99

    def estimate(server: BackfilledPrometheus, name: str) -> float:
        return server.value(
            "histogram_quantile(0.99, sum by (le) (increase("
            f"vllm:request_prompt_tokens_bucket{{{_selector(server, name)}}}[{_span(server)}])))",
            server.truth.end,
        )

    for name in base.truth.classes:
        assert estimate(grown, name) > estimate(base, name)
