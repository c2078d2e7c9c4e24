"""How fast this machine runs Python right now, for the generated benchmark pages.

A shared machine's speed moves by a third or more from hour to hour (other guests on the
host, not the load average this machine sees), and every figure with it. Each page that
states wall or CPU times also states this reference, timed the same way before its runs:
a figure is comparable with another page's only at a like reference.
"""

from __future__ import annotations

import statistics
import time

LOOP = 10**7  # sum of i * i below LOOP: pure interpreter work, no I/O, no allocation churn


def reference_seconds(runs: int = 3) -> float:
    """The median CPU seconds of the reference loop (smaller: a faster machine)."""
    times = []
    for _ in range(runs):
        start = time.process_time()
        sum(i * i for i in range(LOOP))
        times.append(time.process_time() - start)
    return statistics.median(times)


def reference_note(seconds: float) -> str:
    return (
        f"machine speed reference {seconds:.2f} s (benchmarks/machine.py: the CPU time of "
        "one pure-Python loop, timed before the runs; smaller is faster)"
    )
