"""The Prometheus series vLLM exports, by release, and their histogram buckets.

vLLM's V1 engine exports these from ``vllm/v1/metrics/loggers.py`` with the labels
``model_name`` and ``engine``; the Python client adds ``_total`` to counters and
``_bucket``/``_sum``/``_count`` to histograms. Two series were renamed within the releases
capgate's catalog covers, and the old names were emitted beside the new ones for a while:

- the KV-cache usage gauge: ``vllm:gpu_cache_usage_perc`` until 0.9, then
  ``vllm:kv_cache_usage_perc`` (the old name deprecated, later hidden);
- the per-token latency histogram: ``vllm:time_per_output_token_seconds`` until 0.9, then
  ``vllm:inter_token_latency_seconds`` (the old one deprecated).

A signal therefore names its candidates in order of preference for a release; the reader
takes the first that has data and records which one it used.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    counter = "counter"
    gauge = "gauge"
    histogram = "histogram"


def one_two_five(limit: int) -> tuple[float, ...]:
    """vLLM's ``build_1_2_5_buckets``: 1, 2, 5, 10, 20, 50, ... up to ``limit``."""
    out: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > limit:
                return tuple(out)
            out.append(float(value))
        exponent += 1


TTFT_BUCKETS = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
    2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
TOKEN_LATENCY_BUCKETS = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
    2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
)  # fmt: skip
REQUEST_TIME_BUCKETS = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
    120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
)  # fmt: skip


@dataclass(frozen=True)
class Signal:
    """One thing capgate reads, and the series names that carry it (preferred first)."""

    key: str
    kind: Kind
    names: tuple[str, ...]
    unit: str
    help: str


def _release(version: str) -> tuple[int, int]:
    parts = version.split("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return (0, 0)


def signals(runtime_version: str) -> dict[str, Signal]:
    """What capgate reads from a vLLM of ``runtime_version`` (e.g. ``0.10.2``)."""
    renamed = _release(runtime_version) >= (0, 10)
    kv = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
    itl = ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds")
    listed = [
        Signal("prompt_tokens", Kind.histogram, ("vllm:request_prompt_tokens",), "tokens",
               "prompt length per request"),
        Signal("output_tokens", Kind.histogram, ("vllm:request_generation_tokens",), "tokens",
               "generated tokens per request"),
        Signal("ttft", Kind.histogram, ("vllm:time_to_first_token_seconds",), "seconds",
               "time to first token"),
        Signal("itl", Kind.histogram, itl if renamed else itl[::-1], "seconds",
               "time between output tokens"),
        Signal("e2e", Kind.histogram, ("vllm:e2e_request_latency_seconds",), "seconds",
               "end-to-end request latency"),
        Signal("queue", Kind.histogram, ("vllm:request_queue_time_seconds",), "seconds",
               "time waiting for admission"),
        Signal("success", Kind.counter, ("vllm:request_success_total",), "requests",
               "finished requests by finished_reason (stop, length, abort)"),
        Signal("preemptions", Kind.counter, ("vllm:num_preemptions_total",), "preemptions",
               "requests preempted to free KV blocks"),
        Signal("running", Kind.gauge, ("vllm:num_requests_running",), "requests",
               "requests in the running batch"),
        Signal("waiting", Kind.gauge, ("vllm:num_requests_waiting",), "requests",
               "requests waiting for admission"),
        Signal("kv_cache_usage", Kind.gauge, kv if renamed else kv[::-1], "fraction",
               "share of KV-cache blocks in use (0-1)"),
    ]  # fmt: skip
    return {signal.key: signal for signal in listed}


def buckets(key: str, max_model_len: int) -> tuple[float, ...]:
    """The upper bounds vLLM gives the histogram ``key`` (without +Inf)."""
    if key in ("prompt_tokens", "output_tokens"):
        return one_two_five(max_model_len)
    if key == "ttft":
        return TTFT_BUCKETS
    if key == "itl":
        return TOKEN_LATENCY_BUCKETS
    if key in ("e2e", "queue"):
        return REQUEST_TIME_BUCKETS
    raise KeyError(f"{key} is not a histogram capgate reads")


def markdown_table() -> str:
    """docs/observe.md's table of series by release (python -m registry.observe.catalog)."""
    old, new = signals("0.9.2"), signals("0.10.2")
    rows = [
        "| signal | kind | vLLM before 0.10 reads | vLLM 0.10 and later reads | what it is |",
        "|---|---|---|---|---|",
    ]
    for key, signal in new.items():
        rows.append(
            f"| `{key}` | {signal.kind.value} | "
            f"{', then '.join(f'`{n}`' for n in old[key].names)} | "
            f"{', then '.join(f'`{n}`' for n in signal.names)} | {signal.help} ({signal.unit}) |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
