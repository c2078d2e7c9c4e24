"""Builders of workload, provider and plan records for benchmarks and validation cases."""

from __future__ import annotations

from typing import Any

from registry.planner.catalog import AcceleratorCard, find_accelerator, find_model
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.workload import WorkloadProfile


def accelerator_doc(a: AcceleratorCard) -> dict[str, Any]:
    """A provider profile's accelerator section from a catalog card."""
    return {
        "name": a.name,
        "memory_gib": a.memory_gib,
        "memory_bandwidth_gb_s": a.memory_bandwidth_gb_s,
        "dense_tflops": dict(a.dense_tflops),
        "interconnect": {"kind": a.interconnect.value, "bandwidth_gb_s": a.interconnect_gb_s},
    }


def provider(model: str, accelerator: str, *, price: float | None = None) -> ProviderProfile:
    m = find_model(model)
    a = find_accelerator(accelerator)
    assert m is not None and a is not None, (model, accelerator)
    return ProviderProfile.model_validate(
        {
            "name": "bench-provider",
            "model": {
                "name": m.name,
                "layers": m.layers,
                "hidden_size": m.hidden_size,
                "attention_heads": m.attention_heads,
                "kv_heads": m.kv_heads,
                "head_dim": m.head_dim,
                "total_params_b": m.total_params_b,
                "active_params_b": m.active_params_b,
                "max_context_tokens": m.max_context_tokens,
            },
            "accelerator": accelerator_doc(a),
            "runtime": {"name": "vllm", "version": "0.10.2"},
            "zones": ["z-a", "z-b", "z-c"],
            "warmup": {"basis": "assumed", "cold_start_to_ready_s": 240.0, "reason": "benchmark"},
            "price_per_accelerator_hour_usd": price,
        }
    )


def fixed(value: float) -> dict[str, Any]:
    return {
        "basis": "assumed",
        "reason": "fixed by the benchmark",
        "quantiles": {"p0": value, "p50": value, "p99": value, "p100": value},
    }


def workload(
    *,
    rate: float,
    prompt: dict[str, Any],
    output: dict[str, Any],
    cv: float = 1.0,
    prefix_share: float = 0.0,
    slo: dict[str, float] | None = None,
    cancellation: float = 0.0,
    name: str = "c",
) -> WorkloadProfile:
    return WorkloadProfile.model_validate(
        {
            "name": "bench-workload",
            "classes": [
                {
                    "name": name,
                    "priority": 0,
                    "arrival": {
                        "basis": "assumed",
                        "reason": "benchmark",
                        "mean_rps": rate,
                        "peak_rps": rate,
                        "interarrival_cv": cv,
                    },
                    "prompt_tokens": prompt,
                    "output_tokens": output,
                    "prefix_cache_share": prefix_share,
                    "cancellation_rate": cancellation,
                    "slo": slo
                    or {
                        "ttft_p99_ms": 1e7,
                        "tpot_p99_ms": 1e7,
                        "e2e_p99_ms": 1e8,
                        "queue_deadline_ms": 1e8,
                    },
                }
            ],
        }
    )


def plan(
    *,
    replicas: int = 1,
    tp: int = 1,
    max_num_seqs: int = 1024,
    max_num_batched_tokens: int = 8192,
    max_model_len: int = 8192,
    gpu_memory_utilization: float = 0.9,
    balancer: str = "least_outstanding",
    zones: int = 1,
) -> CapacityPlan:
    per_zone = {
        f"z-{chr(97 + i)}": replicas // zones + (1 if i < replicas % zones else 0)
        for i in range(zones)
    }
    return CapacityPlan.model_validate(
        {
            "name": "bench-plan",
            "workload": "bench-workload",
            "provider": "bench-provider",
            "replicas_per_zone": per_zone,
            "parallelism": {"tensor_parallel": tp, "gpus_per_replica": tp},
            "serving": {
                "max_num_seqs": max_num_seqs,
                "max_num_batched_tokens": max_num_batched_tokens,
                "gpu_memory_utilization": gpu_memory_utilization,
                "block_size": 16,
                "max_model_len": max_model_len,
            },
            "load_balancer": balancer,
        }
    )
