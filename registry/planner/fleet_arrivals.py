"""One class's arrival stream as a whole fleet receives it, drawn so that any group of the
fleet can be simulated alone (the fleet-scale reduction of registry/planner/search.py)."""

from __future__ import annotations

import numpy as np

from registry.planner.sampling import ClassStream, gamma_gaps

# Fleet arrivals beyond the pre-drawn stream are drawn in blocks, each from a generator of
# its own (seed, class, block), so the stream does not depend on the order of runs.
_BLOCK = 1 << 16


class FleetArrivals:
    """One class's arrival stream as the whole fleet receives it, at unit rate.

    It starts with the evaluator's pre-drawn stream (so an unthinned run is exactly the
    plain simulation) and is extended on demand by independently seeded blocks. Each fleet
    arrival carries a uniform that decides, with the same number for every fleet size,
    whether it falls in the simulated group.
    """

    def __init__(self, base: ClassStream, cv: float, seed: int, index: int) -> None:
        self.base = base
        self.cv = cv
        self.seed = seed
        self.index = index
        self.times = base.unit_times
        self.keep_u = np.empty(0)
        self._blocks = 0
        self._u_blocks = 0

    def _extend_times(self, n: int) -> None:
        while len(self.times) < n:
            rng = np.random.default_rng([self.seed, self.index, self._blocks, 0])
            gaps = gamma_gaps(self.cv, _BLOCK, rng)
            self.times = np.concatenate([self.times, self.times[-1] + np.cumsum(gaps)])
            self._blocks += 1

    def _extend_uniforms(self, n: int) -> None:
        parts = [self.keep_u]
        have = len(self.keep_u)
        while have < n:
            rng = np.random.default_rng([self.seed, self.index, self._u_blocks, 1])
            parts.append(rng.random(_BLOCK))
            have += _BLOCK
            self._u_blocks += 1
        self.keep_u = np.concatenate(parts)

    def group(self, share: float, n: int) -> ClassStream:
        """The first ``n`` arrivals falling to a group holding ``share`` of the fleet."""
        base = self.base
        n = min(n, len(base.prompt))
        if share >= 1.0:
            return base.head(n)
        need = int(n / share * 1.1) + 64
        while True:
            self._extend_uniforms(need)
            kept = np.flatnonzero(self.keep_u[:need] < share)
            if len(kept) >= n:
                break
            need *= 2
        kept = kept[:n]
        self._extend_times(int(kept[-1]) + 1)
        # Kept arrivals stay at their fleet times: in unit time of the group's own rate
        # (share x the fleet's) that is fleet unit time x share.
        return base.head(n, unit_times=self.times[kept] * share)
