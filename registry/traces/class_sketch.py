"""One traffic class of a trace while it streams past: length sketches, arrival-gap moments,
per-window counts and in-flight requests, fed in chunks with numpy so memory is bounded by the
trace's shape, not its length.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from registry.importers.stats import JointLengthSketch, LengthSketch


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
