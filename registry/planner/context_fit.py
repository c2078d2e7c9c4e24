"""Requests against serving.max_model_len: the share of each class vLLM would reject."""

from __future__ import annotations

from registry.planner.result import (
    ContextFit,
)
from registry.planner.sampling import context_overflow_share, p99_of
from registry.records.plan import CapacityPlan
from registry.records.provider import ProviderProfile
from registry.records.workload import WorkloadProfile


def context_fit(
    plan: CapacityPlan, workload: WorkloadProfile, provider: ProviderProfile, *, seed: int
) -> dict[str, ContextFit]:
    limit = plan.serving.max_model_len
    out: dict[str, ContextFit] = {}
    for cls in workload.classes:
        prompt = p99_of(cls.prompt_tokens)
        output = p99_of(cls.output_tokens)
        if cls.max_output_tokens is not None:
            output = min(output, float(cls.max_output_tokens))
        out[cls.name] = ContextFit(
            max_model_len=limit,
            p99_prompt_tokens=round(prompt, 1),
            p99_output_tokens=round(output, 1),
            p99_context_tokens=round(prompt + output, 1),
            rejected_share=round(context_overflow_share(cls, limit, seed=seed), 5),
        )
    return out
