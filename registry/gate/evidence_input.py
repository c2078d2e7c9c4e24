"""The gate input's evidence section: each load test as the evidence policies read it.

Per class, the p99s, error and cancellation rates the test measured and the prompts it
offered; for the test, the load per replica it really carried, its arrival and length
variability (the import's findings, or the same figures derived from a submitted record),
its warm-up and prefix-cache hit rate beside production's share for the mix offered, and
its freshness.
"""

from __future__ import annotations

import math

from registry.gate.context import EvidenceItem, PlanContext
from registry.gate.workload_input import rounded_quantile
from registry.policy.input_document import EvidenceClassInput, EvidenceFindings, EvidenceInput
from registry.records.common import Distribution
from registry.records.evidence import ClassResult, ImportFindings, LoadTestEvidence, Offered
from registry.records.workload import TrafficClass, WorkloadProfile


def _arrival_cv(offered: Offered) -> float | None:
    """Gamma arrivals of shape k have inter-arrival CV 1/sqrt(k) (Poisson: k = 1, CV 1);
    evenly spaced arrivals (a constant-rate test) have CV 0."""
    if offered.constant_arrivals:
        return 0.0
    if offered.burstiness is None:
        return None
    return round(1.0 / math.sqrt(offered.burstiness), 3)


def _length_cv(distribution: Distribution | None) -> float | None:
    """CV of offered lengths stated as a distribution (for evidence without findings)."""
    from registry.importers.stats import cv_from_stated

    if distribution is None or distribution.quantiles is None:
        return None
    from registry.records.common import quantile_level

    levels = {quantile_level(k): v for k, v in distribution.quantiles.items()}
    return cv_from_stated(
        mean=distribution.mean, std=None, levels=levels, samples=distribution.samples
    ).cv


def _findings(evidence: LoadTestEvidence, workload: WorkloadProfile) -> EvidenceFindings:
    """The import's findings, or the same figures derived from a submitted record.

    Priority classes always come from the workload: a result file knows which classes the
    test offered, only the workload knows their priorities.
    """
    stated: ImportFindings | None = evidence.findings
    priorities = {
        c.priority
        for c in workload.classes
        if c.name in (evidence.offered.classes or list(evidence.results.per_class))
    }
    cancelled = sum(r.cancelled or 0 for r in evidence.results.per_class.values())
    derived_cancellation = cancelled > 0 or bool(evidence.offered.cancellation_rate)
    if stated is not None:
        return EvidenceFindings(
            prompt_tokens_cv=stated.prompt_tokens.cv,
            output_tokens_cv=stated.output_tokens.cv,
            cancellation_exercised=bool(stated.cancellations_exercised),
            priority_classes=len(priorities),
        )
    return EvidenceFindings(
        prompt_tokens_cv=_length_cv(evidence.offered.prompt_tokens),
        output_tokens_cv=_length_cv(evidence.offered.output_tokens),
        cancellation_exercised=derived_cancellation,
        priority_classes=len(priorities),
    )


def _error_rate(completed: int | None, failed: int | None) -> float | None:
    if completed is None or failed is None or completed + failed == 0:
        return None
    return round(failed / (completed + failed), 6)


def _total(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v or 0 for v in values)


def _rate_per_replica(offered: Offered) -> float | None:
    """The load the test really carried per replica: a client that fell behind sent less."""
    rate = offered.request_rate_rps
    if offered.client_behind:
        rate = offered.achieved_rate_rps  # unknown achieved rate: no rate to claim at all
    return rate / offered.replicas if rate is not None else None


def _offered_prompt_p99(evidence: LoadTestEvidence, traffic_class: str) -> float | None:
    """The p99 prompt length a test offered one class: the class's own lengths when the
    file states them per class, else the whole test's (a mix reaching the class's long
    prompts exercised them)."""
    own = evidence.results.per_class[traffic_class].prompt_tokens
    offered = own if own is not None else evidence.offered.prompt_tokens
    return rounded_quantile(offered, 99) if offered is not None else None


def _class_cancellation(result: ClassResult, offered: Offered, *, single: bool) -> float | None:
    """The share of a class's requests the test cancelled. Requests cut off when the tool
    stopped measuring are left out: they were neither served nor cancelled by a client."""
    if result.cancelled is not None:
        settled = [result.completed, result.failed]
        if all(n is not None for n in settled):
            total = (result.completed or 0) + (result.failed or 0) + result.cancelled
        else:
            total = (result.requests or 0) - (result.incomplete or 0)
        return round(result.cancelled / total, 6) if total > 0 else None
    # A single-class test whose file counts no cancellations ran at the rate it was given.
    return offered.cancellation_rate if single else None


def _mean_prompt(traffic_class: TrafficClass) -> float:
    stated = traffic_class.prompt_tokens.mean
    return (
        float(stated) if stated is not None else rounded_quantile(traffic_class.prompt_tokens, 50)
    )


def _workload_prefix_share(evidence: LoadTestEvidence, workload: WorkloadProfile) -> float | None:
    """Production's prefix-cache share for the mix the test offered: each class's share
    weighted by the prompt tokens it brought to the test (its requests there, else its peak
    rate, times its mean prompt). Unknown when any offered class's share is unknown."""
    offered = evidence.offered.classes or list(evidence.results.per_class)
    classes = [c for c in workload.classes if c.name in offered]
    if not classes or any(c.prefix_cache_share is None for c in classes):
        return None
    results = evidence.results.per_class
    counts = {c.name: results[c.name].requests if c.name in results else None for c in classes}
    use_counts = all(n for n in counts.values())
    weights = {
        c.name: float(counts[c.name] or 0 if use_counts else c.arrival.peak_rps) * _mean_prompt(c)
        for c in classes
    }
    total = sum(weights.values())
    if total <= 0:
        return None
    share = sum(weights[c.name] * (c.prefix_cache_share or 0.0) for c in classes) / total
    return round(share, 6)


def _prefix_hit_rate(evidence: LoadTestEvidence) -> float | None:
    server = evidence.server
    if server is not None and server.prefix_cache_hit_rate is not None:
        return server.prefix_cache_hit_rate
    return evidence.results.prefix_cache_hit_rate


def _queue_p99(evidence: LoadTestEvidence, name: str) -> float | None:
    """A class's p99 queue wait: the file's own, else the server's when the test offered
    that class alone (the server's queue histogram does not tell classes apart)."""
    result = evidence.results.per_class[name]
    if result.queue_ms is not None:
        return result.queue_ms.at(99)
    server = evidence.server
    if server is not None and len(evidence.results.per_class) == 1:
        return server.queue_p99_ms
    return None


def _warmup_s(evidence: LoadTestEvidence) -> float | None:
    if evidence.results.warmup_s is not None:
        return evidence.results.warmup_s
    return evidence.server.warmup_s if evidence.server is not None else None


def evidence_input(item: EvidenceItem, context: PlanContext) -> EvidenceInput:
    evidence = item.model
    offered = evidence.offered
    measured = evidence.measured_against
    results = evidence.results.per_class
    per_class = {
        name: EvidenceClassInput(
            ttft_p99_ms=result.ttft_ms.at(99) if result.ttft_ms else None,
            tpot_p99_ms=result.tpot_ms.at(99) if result.tpot_ms else None,
            e2e_p99_ms=result.e2e_ms.at(99) if result.e2e_ms else None,
            queue_p99_ms=_queue_p99(evidence, name),
            error_rate=_error_rate(result.completed, result.failed),
            prompt_tokens_p99=_offered_prompt_p99(evidence, name),
            cancellation_rate=_class_cancellation(result, offered, single=len(results) == 1),
        )
        for name, result in results.items()
    }
    completed = _total([r.completed for r in results.values()])
    failed = _total([r.failed for r in results.values()])
    return EvidenceInput(
        ref=item.view.ref,
        digest=item.view.digest,
        tool=evidence.tool.name,
        entry=evidence.provenance.entry.value,
        fresh=item.freshness.fresh,
        stale_reasons=item.freshness.reasons,
        age_days=round(item.freshness.age_days, 3),
        measured_against={
            "workload": measured.workload,
            "provider": measured.provider,
            "plan": measured.plan,
        },
        replicas=offered.replicas,
        offered_rps_per_replica=_rate_per_replica(offered),
        client_behind=offered.client_behind,
        completed=completed,
        failed=failed,
        error_rate=_error_rate(completed, failed),
        classes=list(offered.classes or evidence.results.per_class),
        per_class=per_class,
        findings=_findings(evidence, context.workload),
        # Evidence pinned to a plan ran that plan's serving config; otherwise assume TP=1.
        arrival_cv=_arrival_cv(offered),
        warmup_s=_warmup_s(evidence),
        prefix_cache_hit_rate=_prefix_hit_rate(evidence),
        workload_prefix_cache_share=_workload_prefix_share(evidence, context.workload),
        tp_degree=context.plan.parallelism.tensor_parallel if measured.plan else 1,
        interconnect=context.provider.accelerator.interconnect.kind.value,
    )
