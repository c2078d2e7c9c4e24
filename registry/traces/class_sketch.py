"""One traffic class of a trace: gathered while the trace streams past (length sketches,
arrival-gap moments, per-window counts and in-flight requests, fed in chunks with numpy so
memory is bounded by the trace's shape, not its length), then summarised as the profile's
``TrafficClass``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from registry.errors import FieldProblem, InvalidInput
from registry.importers.stats import JointLengthSketch, LengthSketch
from registry.records.common import Basis, Distribution
from registry.records.workload import Arrival, ClassSLO, TrafficClass, UnknownShare
from registry.traces.prefix import PrefixReuse


@dataclass
class ClassSketch:
    """What one class's requests have shown so far; rows wait in the chunk buffers until
    ``flush`` folds them in (numpy over a chunk, not Python per row)."""

    prompt: LengthSketch = field(default_factory=LengthSketch)
    output: LengthSketch = field(default_factory=LengthSketch)
    joint: JointLengthSketch = field(default_factory=JointLengthSketch)
    count: int = 0
    last_t: float | None = None
    gap_n: int = 0
    gap_sum: float = 0.0
    gap_sq: float = 0.0
    windows: dict[int, int] = field(default_factory=dict)
    in_flight: list[float] = field(default_factory=list)
    concurrency: LengthSketch = field(default_factory=LengthSketch)
    cancelled: int = 0
    # chunk buffers
    t: list[float] = field(default_factory=list)
    p: list[float] = field(default_factory=list)
    o: list[float] = field(default_factory=list)
    lat: list[float] = field(default_factory=list)

    def flush(self, window_s: float) -> None:
        if not self.t:
            return
        t = np.asarray(self.t, dtype=np.float64)
        p = np.asarray(self.p, dtype=np.float64)
        o = np.asarray(self.o, dtype=np.float64)
        self.prompt.add_array(p)
        self.output.add_array(o)
        self.joint.add_arrays(p, o)
        prev = np.concatenate([[self.last_t], t]) if self.last_t is not None else t
        gaps = np.diff(prev)
        self.gap_n += int(gaps.size)
        self.gap_sum += float(gaps.sum())
        self.gap_sq += float(np.dot(gaps, gaps))
        self.last_t = float(t[-1])
        idx, cnt = np.unique(np.floor(t / window_s).astype(np.int64), return_counts=True)
        for k, c in zip(idx.tolist(), cnt.tolist(), strict=True):
            self.windows[k] = self.windows.get(k, 0) + c
        if self.lat:
            # In flight at each arrival, the arrival included: pop what ended before it.
            seen = np.empty(t.size, dtype=np.float64)
            heap = self.in_flight
            for j, (tj, lj) in enumerate(zip(self.t, self.lat, strict=True)):
                while heap and heap[0] <= tj:
                    heapq.heappop(heap)
                heapq.heappush(heap, tj + lj)
                seen[j] = len(heap)
            self.concurrency.add_array(seen)
        self.count += int(t.size)
        self.t, self.p, self.o, self.lat = [], [], [], []


def traffic_class(
    cls_name: str,
    acc: ClassSketch,
    *,
    span: float,
    window_s: float,
    slo: ClassSLO | Mapping[str, ClassSLO],
    priorities: Mapping[str, int] | None,
    latency_col: str | None,
    assumed_service_time_s: float | None,
    reuse: PrefixReuse | None,
    prefix_cache_tokens: int | None,
    cancel_col: str | None,
    unknown_why: Mapping[UnknownShare, str],
    notes: list[str],
    source: str,
) -> TrafficClass:
    """One class of the fitted profile from its sketch, once the whole trace has passed:
    arrival rates and their spread, lengths, concurrency (measured, or assumed from a constant
    service time), the prefix and cancellation shares where the trace states them, and the
    class's SLO (given, not measured). What was adjusted is said in ``notes``."""
    if acc.count < 2:
        raise InvalidInput(
            f"{source}: class {cls_name!r} has {acc.count} request; needs two or more",
            problems=[FieldProblem(loc=f"classes.{cls_name}", message="fewer than 2 requests")],
            source=source,
        )
    mean_rps = acc.count / span
    peak_rps = max(acc.windows.values()) / window_s
    if span < window_s:
        notes.append(f"{cls_name}: trace shorter than one {window_s:g} s window")
    if peak_rps < mean_rps:
        # A window cut short by the trace's end can undercount; the mean is a floor.
        notes.append(f"{cls_name}: peak raised to the mean rate (short last window)")
        peak_rps = mean_rps
    gap_mean = acc.gap_sum / acc.gap_n
    gap_var = max(acc.gap_sq / acc.gap_n - gap_mean**2, 0.0)
    cv = math.sqrt(gap_var) / gap_mean if gap_mean > 0 else 0.0
    concurrency: Distribution | None = None
    if acc.concurrency.count:
        base = acc.concurrency.distribution(with_histogram=False)
        if latency_col is None:
            concurrency = base.model_copy(
                update={
                    "basis": Basis.assumed,
                    "reason": (
                        f"in flight at each arrival if every request took "
                        f"{assumed_service_time_s:g} s; the trace has no completion times"
                    ),
                }
            )
            concurrency = Distribution.model_validate(concurrency.model_dump())
        else:
            concurrency = base
    class_slo = slo if isinstance(slo, ClassSLO) else slo.get(cls_name)
    if class_slo is None:
        raise InvalidInput(
            f"no SLO for class {cls_name!r}",
            problems=[FieldProblem(loc=f"slo.{cls_name}", message="missing")],
            source=source,
        )
    prefix_share: float | None = None
    if reuse is not None:
        prefix_share = round(
            reuse.classes[cls_name].share(bounded=prefix_cache_tokens is not None), 4
        )
    cancellation: float | None = None
    if cancel_col is not None:
        cancellation = round(acc.cancelled / acc.count, 4)
    return TrafficClass(
        name=cls_name,
        priority=(priorities or {}).get(cls_name, 0),
        arrival=Arrival(
            basis=Basis.measured,
            mean_rps=mean_rps,
            peak_rps=peak_rps,
            peak_window_s=float(window_s),
            # The schema needs > 0; exactly periodic arrivals are recorded as ~0.
            interarrival_cv=max(cv, 1e-9),
        ),
        prompt_tokens=acc.prompt.distribution(),
        output_tokens=acc.output.distribution(),
        concurrency=concurrency,
        prefix_cache_share=prefix_share,
        cancellation_rate=cancellation,
        unknown=dict(unknown_why),
        slo=class_slo,
        joint_lengths=acc.joint.joint_lengths(),
    )
