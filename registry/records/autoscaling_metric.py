"""The metrics a plan's autoscaler may follow, in the standard library only.

Kept apart from registry.records.plan (pydantic) so that reading manifests for a
`gate check --server --manifests` loads no schema code.
"""

from __future__ import annotations

from enum import StrEnum


class AutoscalingMetric(StrEnum):
    num_requests_waiting = "vllm:num_requests_waiting"
    kv_cache_usage_perc = "vllm:kv_cache_usage_perc"
    num_requests_running = "vllm:num_requests_running"
    cpu = "cpu"
