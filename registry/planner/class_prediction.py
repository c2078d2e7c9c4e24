"""What one simulation predicts per traffic class (latency percentiles, shedding, SLO
verdicts), and the evaluation that carries it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from registry.planner.result import ClassPrediction
from registry.planner.sampling import ClassStream
from registry.planner.simulator import SimResult, percentile, percentiles
from registry.records.workload import WorkloadProfile

# The queue-deadline objective is a p99 too: at most 1% of a class's requests may be shed.
MAX_SHED_RATE = 0.01
# The latency percentiles predicted per class.
LEVELS = (50, 90, 99)


@dataclass
class Evaluation:
    sim: SimResult
    per_class: dict[str, ClassPrediction]
    slo_met: bool
    violations: list[str]
    # Replicas actually simulated: ``sim.replicas`` (the fleet) or fewer (FLEET_GROUP).
    simulated_replicas: int = 0


def served_mean(stream: ClassStream, lengths: NDArray[np.int64]) -> float:
    """Mean of ``lengths`` over the requests the engine serves (not the rejected ones)."""
    served = lengths[~stream.rejected]
    return float(np.mean(served)) if len(served) else 0.0


def _ms(v: float | None) -> float | None:
    return None if v is None else round(v * 1e3, 3)


def predict_classes(
    sim: SimResult, workload: WorkloadProfile, deadlines_s: Mapping[str, float]
) -> tuple[dict[str, ClassPrediction], bool, list[str]]:
    out: dict[str, ClassPrediction] = {}
    all_violations: list[str] = []
    for cls in workload.classes:
        st = sim.per_class[cls.name]
        slo = cls.slo
        pred = {
            f"{m}_p{q}_ms": _ms(value)
            for m in ("ttft", "tpot", "e2e")
            for q, value in zip(LEVELS, percentiles(getattr(st, m), LEVELS), strict=True)
        }
        queue99 = _ms(percentile(st.queue, 99))
        v: list[str] = []
        if st.completed == 0:
            v.append(f"{cls.name}: no request completed in the simulated window")
        for key, limit in (
            ("ttft_p99_ms", slo.ttft_p99_ms),
            ("tpot_p99_ms", slo.tpot_p99_ms),
            ("e2e_p99_ms", slo.e2e_p99_ms),
        ):
            value = pred[key]
            if value is not None and value > limit:
                v.append(f"{cls.name}: {key} {value:.0f} ms exceeds the SLO {limit:g} ms")
        if st.shed_rate > MAX_SHED_RATE:
            v.append(
                f"{cls.name}: {st.shed_rate:.1%} of requests shed after the "
                f"{deadlines_s[cls.name] * 1e3:g} ms queue deadline (at most 1% may be)"
            )
        if queue99 is not None and queue99 > slo.queue_deadline_ms:
            v.append(
                f"{cls.name}: queue_p99_ms {queue99:.0f} exceeds the queue deadline "
                f"{slo.queue_deadline_ms:g} ms"
            )
        out[cls.name] = ClassPrediction(
            requests=st.requests,
            completed=st.completed,
            cancelled=st.cancelled,
            shed=st.shed,
            retries=st.retries,
            shed_rate=round(st.shed_rate, 5),
            queue_p99_ms=queue99,
            slo_met=not v,
            violations=v,
            **pred,
        )
        all_violations.extend(v)
    return out, not all_violations, all_violations
