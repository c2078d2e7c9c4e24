"""The gate input's workload classes: each traffic class as the policies read it.

Its rates, SLOs and length quantiles, and which of its figures were measured rather
than assumed. `rounded_quantile` is also how the evidence section states lengths
(registry.gate.evidence_input).
"""

from __future__ import annotations

from registry.policy.input_document import MeasuredFlags, WorkloadClassInput
from registry.records.common import Basis, Distribution
from registry.records.workload import TrafficClass


def _measured(distribution: Distribution | None) -> bool:
    return (
        distribution is not None
        and distribution.basis is Basis.measured
        and bool(distribution.samples)
    )


def workload_class_input(traffic_class: TrafficClass) -> WorkloadClassInput:
    return WorkloadClassInput(
        priority=traffic_class.priority,
        mean_rps=traffic_class.arrival.mean_rps,
        peak_rps=traffic_class.arrival.peak_rps,
        interarrival_cv=traffic_class.arrival.interarrival_cv,
        max_output_tokens=traffic_class.max_output_tokens,
        cancellation_rate=traffic_class.cancellation_rate,
        cancellation_rate_unknown=traffic_class.unknown_reason("cancellation_rate"),
        slo=traffic_class.slo.model_dump(),
        measured=MeasuredFlags(
            prompt_tokens=_measured(traffic_class.prompt_tokens),
            output_tokens=_measured(traffic_class.output_tokens),
            concurrency=_measured(traffic_class.concurrency),
            arrival=traffic_class.arrival.basis is Basis.measured,
        ),
        prompt_tokens_samples=traffic_class.prompt_tokens.samples,
        output_tokens_samples=traffic_class.output_tokens.samples,
        prompt_tokens_p50=rounded_quantile(traffic_class.prompt_tokens, 50),
        prompt_tokens_p99=rounded_quantile(traffic_class.prompt_tokens, 99),
        output_tokens_p50=rounded_quantile(traffic_class.output_tokens, 50),
        output_tokens_p99=rounded_quantile(traffic_class.output_tokens, 99),
    )


def rounded_quantile(distribution: Distribution, level: float) -> float:
    stated = distribution.quantile(level)
    if stated is not None:
        return round(float(stated), 3)
    # Imported only here: the sampler's inverse CDF brings NumPy, which a check reusing a
    # stored recomputation of a workload with stated quantiles never needs.
    from registry.planner.sampling import quantile_of

    return round(quantile_of(distribution, level), 3)
