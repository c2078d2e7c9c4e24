"""A workload profile from what production did: `capgate workload from-observation`.

The way out of a drift: the observed lengths, rates, burstiness and cancellations replace
the planned ones, and everything production cannot say is kept from the workload version
the plan pinned (SLOs, priorities, prefix-cache shares, concurrency, output caps). Lengths
are stored as the histogram Prometheus kept, so the profile is exactly as fine as vLLM's
buckets (1-2-5 tokens: a 5,000 to 10,000 token bucket is drawn uniformly by the planner);
nothing finer is invented. The trace the profile was measured from is the observation
record itself: its reference and digest.
"""

from __future__ import annotations

from registry.observe.histogram import Buckets
from registry.records.common import Basis, Distribution, Histogram, TraceWindow
from registry.records.observation import Observation, ObservedHistogram
from registry.records.workload import Arrival, WorkloadProfile


def _distribution(observed: ObservedHistogram, planned: Distribution) -> Distribution:
    buckets = Buckets(
        (*observed.bounds, float("inf")), tuple(float(c) for c in observed.cumulative)
    )
    finite = observed.bounds[-1] if observed.bounds else 0.0
    # The open top bucket is closed at the longest the profile allowed, or twice the last
    # bound: no request is longer than the model's length, which the plan caps.
    top = max(planned.max or 0.0, finite * 2.0, 1.0)
    edges, counts = buckets.edges_and_counts(top=top)
    # Leading and trailing empty buckets say nothing: trimmed so the histogram starts and
    # ends where requests were seen (the schema needs a non-zero count).
    while counts and counts[-1] == 0:
        counts.pop()
        edges.pop()
    return Distribution(
        basis=Basis.measured,
        samples=sum(counts),
        histogram=Histogram(edges=edges, counts=counts),
        mean=observed.mean,
    )


def workload_from_observation(
    observation: Observation,
    planned: WorkloadProfile,
    *,
    observation_ref: str,
    observation_digest: str,
    name: str | None = None,
) -> WorkloadProfile:
    seen = {c.name: c for c in observation.classes}
    classes = []
    for cls in planned.classes:
        got = seen.get(cls.name)
        if got is None or not got.requests:
            classes.append(cls)  # no traffic observed: nothing to replace it with
            continue
        arrival = Arrival(
            basis=Basis.measured,
            mean_rps=max(got.mean_rps, 1e-6),
            peak_rps=max(got.peak_rps, got.mean_rps, 1e-6),
            peak_window_s=got.peak_window_s,
            interarrival_cv=got.interarrival_cv or cls.arrival.interarrival_cv,
        )
        classes.append(
            cls.model_copy(
                update={
                    "arrival": arrival,
                    "prompt_tokens": _distribution(got.prompt_tokens, cls.prompt_tokens),
                    "output_tokens": _distribution(got.output_tokens, cls.output_tokens),
                    "cancellation_rate": got.cancellation_share,
                    "joint_lengths": None,  # Prometheus keeps no pairing of the two
                }
            )
        )
    added = sorted(seen.keys() - {c.name for c in planned.classes})
    description = (
        f"Measured in production by observation {observation_ref} "
        f"({observation.window_start.isoformat()} to {observation.window_end.isoformat()}), "
        f"from workload {observation.workload}"
        + (f"; classes observed but not profiled, left out: {', '.join(added)}" if added else "")
    )
    return WorkloadProfile.model_validate(
        {
            **planned.model_dump(mode="json", exclude_none=True),
            "name": name or planned.name,
            "description": description,
            "measurement": TraceWindow(
                trace_ref=f"observation {observation_ref} ({observation.source.url})",
                trace_digest=observation_digest,
                window_start=observation.window_start,
                window_end=observation.window_end,
                requests=sum(c.requests for c in observation.classes),
            ).model_dump(mode="json"),
            # Validated as a whole below: model_copy above checks nothing.
            "classes": [c.model_dump(mode="json", exclude_none=True) for c in classes],
        }
    )
