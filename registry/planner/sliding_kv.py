"""KV accounting in pool tokens for models with sliding-window layers.

vLLM's hybrid KV cache manager gives each group of layers its own block table from one
pool: a full-attention group holds every token of a request, a sliding group at most its
window (``SlidingWindowManager`` frees the blocks that fall out of it). A request of context
``c`` therefore holds ``full_groups x c + sliding_groups x min(c, window)`` pool tokens, and
a decoding request grows by ``full_groups + sliding_groups`` a step until its context reaches
the window, then by ``full_groups`` alone. The scheduler's ``Engine`` mixes this in; a model
without sliding layers never calls it.
"""

from __future__ import annotations

import heapq

from registry.planner.decode_stretch import MAX_STRETCH
from registry.planner.events import DECODE
from registry.planner.replica_state import Replica


class SlidingWindowKV:
    """What a request holds and adds in pool tokens, and when it passes its window."""

    window: int | None
    full_groups: int
    sliding_groups: int
    _target: list[int]
    _kvbase: list[int]
    _state: list[int]
    _dstep: list[int]
    _replica: list[int]

    def _cost(self, c0: int, c1: int) -> int:
        """Pool tokens a request adds growing its context from ``c0`` to ``c1``."""
        w = self.window
        assert w is not None
        return self.full_groups * (c1 - c0) + self.sliding_groups * (min(c1, w) - min(c0, w))

    def _decode_held(self, rid: int, done: int) -> tuple[int, int]:
        """Pool tokens a decoding request holds ``done`` steps after its prefill, and what
        it adds per step from there."""
        w = self.window
        assert w is not None
        c0 = self._target[rid]
        held = self._kvbase[rid] + self._cost(c0, c0 + done)
        slope = self.full_groups + (self.sliding_groups if c0 + done < w else 0)
        return held, slope

    def _window_steps(self, r: Replica) -> int:
        """Steps until the next decoding request reaches its window (stale entries
        dropped), or MAX_STRETCH."""
        heap = r.window_heap
        state = self._state
        dstep = self._dstep
        while heap:
            at, rid, d = heap[0]
            if state[rid] == DECODE and dstep[rid] == d and self._replica[rid] == r.index:
                return at - r.steps
            heapq.heappop(heap)
        return MAX_STRETCH

    def _pass_windows(self, r: Replica, steps: int) -> None:
        """Requests whose context reached the window by ``steps`` now grow the full groups
        only."""
        heap = r.window_heap
        state = self._state
        dstep = self._dstep
        while heap and heap[0][0] <= steps:
            _, rid, d = heapq.heappop(heap)
            if state[rid] == DECODE and dstep[rid] == d and self._replica[rid] == r.index:
                r.slope -= self.sliding_groups
