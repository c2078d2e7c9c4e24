"""KV tokens a set of requests in flight holds, at the p99 of the sum of their contexts.

N requests hold the sum of N contexts (prompt plus output so far; counted here at the full
output, conservatively). Holding every one at its p99 context at once is a point no fleet
reaches; the sum of N contexts has its p99 near N x mean + z99 x sqrt(N) x sd (the normal
approximation of a sum). Pure arithmetic, no NumPy: the gate calls it on every check.
The moments are of what one request holds in the units of ``MemoryFit.kv_tokens``
(``scenarios.context_moments``): its context, or for a model with sliding-window layers
the share its full and sliding groups hold, the latter capped at the window.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from registry.planner.result import ContextMoments

# One-sided 99th percentile of the standard normal.
Z_P99 = 2.326


def p99_kv_tokens(counts: Mapping[str, float], moments: Mapping[str, ContextMoments]) -> int | None:
    """Tokens ``counts[class]`` requests of each class hold; None when a class has no moments."""
    mean = 0.0
    variance = 0.0
    for name, n in counts.items():
        m = moments.get(name)
        if m is None:
            return None
        mean += n * m.mean
        variance += n * m.sd**2
    return math.ceil(mean + Z_P99 * math.sqrt(variance))
