"""Drift: does what production did still match the workload version the plan pins?

The same material-change rules and thresholds as staleness (registry.staleness.rules),
judged on what buckets measure: the share of requests at or below each bucket bound is
exact, so a length quantile is compared at the bounds around it (the profile's quantile
at the observed share, against the bound), never through an interpolated value (inside
vLLM's 5,000-10,000 token bucket an interpolation can say nothing about a 10 % move). Rates
and shares are compared as staleness compares them. Separately, an SLO of the workload or
a p99 the plan claims that the observed buckets show was missed (fewer than 99 % of
requests within it) calls for review too.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from registry.records.common import Distribution
from registry.records.observation import Observation, ObservedClass, ObservedHistogram
from registry.records.plan import CapacityPlan
from registry.records.workload import TrafficClass, WorkloadProfile
from registry.staleness.rules import QUANTILES_WATCHED, Change, StalenessThresholds


@dataclass(frozen=True)
class Drift:
    """What an observation says about the plan: material changes and missed SLOs."""

    changes: list[Change]
    slo_misses: list[Change]
    notes: list[str]

    @property
    def material(self) -> bool:
        return bool(self.changes)

    @property
    def review(self) -> bool:
        return bool(self.changes or self.slo_misses)


def _scale_at(bound: float, share: float, planned: Distribution) -> float | None:
    """How much larger than the profile the traffic is at one bucket bound.

    The share of requests at or below ``bound`` is measured exactly (a bucket count);
    the profile puts that same share at its quantile ``q``. ``bound / q`` is the factor
    the traffic's quantile at that level differs from the profile's: 1.3 when lengths
    grew 30 % there, whatever the bucket widths."""
    if bound <= 0 or not 0 < share < 1:
        return None
    from registry.planner.sampling import profile_quantile

    profiled = profile_quantile(planned, share)
    return bound / profiled if profiled > 0 else None


def _length_changes(
    prefix: str, field: str, planned: Distribution, observed: ObservedHistogram, limit: float
) -> Iterator[Change]:
    total = observed.cumulative[-1]
    if not total:
        return
    # Imported here: the sampler brings NumPy, which a gate check without an observation
    # never needs.
    from registry.planner.sampling import profile_quantile, quantile_of

    for level in QUANTILES_WATCHED:
        seen = observed.quantiles.get(f"p{level:g}")
        if seen is None:
            continue
        # The two bounds around the observed quantile, read as exact CDF points.
        scales = []
        for bound in (seen.bucket_lower, seen.bucket_upper):
            if bound is None or bound not in observed.bounds:
                continue
            share = observed.cumulative[observed.bounds.index(bound)] / total
            scale = _scale_at(bound, share, planned)
            if scale is not None:
                scales.append((bound, share, scale))
        if not scales:
            continue
        grew = all(scale > 1 + limit for _, _, scale in scales)
        shrank = all(scale < 1 - limit for _, _, scale in scales)
        if not (grew or shrank):
            continue
        # The smaller move of the two: what the buckets prove at least.
        factor = (min if grew else max)(scale for _, _, scale in scales)
        want = quantile_of(planned, level)
        points = "; ".join(
            f"{share:.1%} of requests <= {bound:g} where the profile has "
            f"{profile_quantile(planned, share):.0f}"
            for bound, share, _ in scales
        )
        yield Change(
            f"{prefix}.{field}.p{level:g}",
            round(want, 3),
            round(want * factor, 3),
            f"{'grew' if grew else 'shrank'} {abs(factor - 1):.0%} around p{level:g} "
            f"({observed.series}: {points})",
            limit,
        )


def _class_changes(
    planned: TrafficClass, observed: ObservedClass, limits: StalenessThresholds
) -> Iterator[Change]:
    prefix = f"classes.{planned.name}"
    limit = limits.length_quantile_change
    yield from _length_changes(
        prefix, "prompt_tokens", planned.prompt_tokens, observed.prompt_tokens, limit
    )
    yield from _length_changes(
        prefix, "output_tokens", planned.output_tokens, observed.output_tokens, limit
    )
    arrival = planned.arrival
    # The observed peak is averaged over peak_window_s; over a longer window than the
    # plan's it is a lower bound of the plan's peak, so growth beyond it is still growth.
    if observed.peak_rps > arrival.peak_rps * (1 + limits.peak_rate_growth):
        yield Change(
            f"{prefix}.arrival.peak_rps",
            arrival.peak_rps,
            round(observed.peak_rps, 3),
            f"grew {observed.peak_rps / arrival.peak_rps - 1:.0%} "
            f"(observed over {observed.peak_window_s:g} s windows)",
            limits.peak_rate_growth,
        )
    cv = observed.interarrival_cv
    if cv is not None and cv > arrival.interarrival_cv * (1 + limits.burstiness_growth):
        yield Change(
            f"{prefix}.arrival.interarrival_cv",
            arrival.interarrival_cv,
            round(cv, 3),
            "burstiness grew (estimated from the dispersion of request counts)",
            limits.burstiness_growth,
        )
    share = observed.cancellation_share
    if share is not None:
        before = planned.cancellation_rate
        if abs(share - (before or 0.0)) > limits.cancellation_rate_change:
            yield Change(
                f"{prefix}.cancellation_rate",
                before,
                round(share, 4),
                f"moved {share - (before or 0.0):+.2f} (requests finished with abort)",
                limits.cancellation_rate_change,
            )


def _slo_misses(observed: ObservedClass) -> Iterator[Change]:
    for attained in observed.slo:
        if attained.met is False:
            yield Change(
                f"classes.{observed.name}.slo.{attained.objective}",
                f"{attained.target:.0%} within {attained.limit_ms:g} ms",
                f"at most {attained.share_at_most:.2%}",
                "SLO attainment below the workload's objective",
                attained.target,
            )


def _claim_misses(observed: ObservedClass, claims: dict[str, float]) -> Iterator[Change]:
    """A p99 the plan claims (tighter than the SLO) that the observed buckets show was
    missed: fewer than 99 % of requests within it, whatever lies inside the bucket."""
    from registry.observe.read import attainment

    histograms = {
        key: histogram
        for key, histogram in (
            ("ttft", observed.ttft),
            ("itl", observed.itl),
            ("e2e", observed.e2e),
        )
        if histogram is not None
    }
    for attained in attainment(histograms, claims):
        if attained.met is False:
            yield Change(
                f"classes.{observed.name}.claims.{attained.objective}",
                f"{attained.target:.0%} within {attained.limit_ms:g} ms",
                f"at most {attained.share_at_most:.2%}",
                "the plan's claim missed in production",
                attained.target,
            )


def plan_claims(plan: CapacityPlan) -> dict[str, dict[str, float]]:
    """The plan's per-class p99 claims as ``drift`` takes them."""
    return {
        name: claim.model_dump(exclude_none=True) for name, claim in plan.claims.per_class.items()
    }


def drift(
    observation: Observation,
    workload: WorkloadProfile,
    limits: StalenessThresholds,
    claims: dict[str, dict[str, float]] | None = None,
) -> Drift:
    """``claims``: the plan's per-class p99 claims (class -> {ttft_p99_ms: ...})."""
    planned = {c.name: c for c in workload.classes}
    seen = {c.name: c for c in observation.classes}
    changes = [
        Change(f"classes.{name}", None, name, "traffic class observed that the workload lacks")
        for name in sorted(seen.keys() - planned.keys())
    ]
    notes = [
        f"class {name}: no traffic observed in the window"
        for name in sorted(planned.keys() - seen.keys())
    ]
    misses: list[Change] = []
    for name in sorted(planned.keys() & seen.keys()):
        changes.extend(_class_changes(planned[name], seen[name], limits))
        misses.extend(_slo_misses(seen[name]))
        misses.extend(_claim_misses(seen[name], (claims or {}).get(name, {})))
    return Drift(changes=changes, slo_misses=misses, notes=notes)
