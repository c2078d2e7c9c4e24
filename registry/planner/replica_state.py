"""One replica's state between scheduler steps: what runs, what waits, what its KV holds,
and whether it is idle, in a single step or in a decode stretch (registry/planner/
scheduler.py changes it; registry/planner/simulator.py reads it)."""

from __future__ import annotations

from collections import deque

IDLE = 0
SINGLE = 1
STRETCH = 2


# Priority-policy waiting entries: (priority, arrival, rid), the rid (the order requests
# were made in) breaking ties; FCFS uses a deque of rids.
PrioEntry = tuple[int, float, int]


class Replica:
    __slots__ = (
        "busy_time",
        "ctx",
        "dur",
        "fcfs",
        "finish_heap",
        "index",
        "k",
        "kv_area",
        "kv_peak",
        "kv_tokens",
        "line_b",
        "line_c",
        "line_m",
        "mode",
        "n_dec",
        "n_waiting",
        "pending",
        "pheap",
        "preemptions",
        "prefilling",
        "running",
        "slope",
        "start",
        "steps",
        "usage",
        "version",
        "wait_area",
        "wait_by_class",
        "wait_n",
        "waiting",
        "window_heap",
    )

    def __init__(self, index: int, n_classes: int, fcfs: bool) -> None:
        self.index = index
        self.fcfs = fcfs
        self.waiting: deque[int] = deque()
        self.n_waiting = 0
        self.wait_by_class = [0] * n_classes
        # Admission order, as a dict: completions remove from the middle in O(1).
        self.running: dict[int, None] = {}
        self.prefilling: list[int] = []
        self.n_dec = 0
        # KV the decoding sequences add per step: n_dec, or in pool tokens with sliding
        # windows (requests past their window add only to the full groups).
        self.slope = 0
        # (step at which a decoding request's context reaches the window, rid, its dstep).
        self.window_heap: list[tuple[int, int, int]] = []
        self.ctx = 0  # KV tokens the decoding sequences read per step (prefix hits too)
        self.kv_tokens = 0  # KV tokens held by all running requests
        self.steps = 0
        self.mode = IDLE
        self.version = 0
        self.start = 0.0
        self.k = 0
        # The stretch in flight: step i takes line_c + line_m + line_b * i (decode_terms),
        # and its k steps take dur in all.
        self.line_c = 0.0
        self.line_m = 0.0
        self.line_b = 0.0
        self.dur = 0.0
        self.pending: list[tuple[int, int]] = []
        self.finish_heap: list[tuple[int, int]] = []
        self.preemptions = 0
        self.kv_peak = 0.0
        self.busy_time = 0.0
        self.wait_area = 0.0
        self.kv_area = 0.0
        self.usage = 0.0
        self.wait_n = 0
        self.pheap: list[PrioEntry] = []
