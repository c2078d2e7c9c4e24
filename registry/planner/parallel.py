"""Independent simulations on the machine's cores: forked workers, results in input order.

A recomputation runs dozens of seeded simulations, many of which do not depend on one
another (calibration's grid of fractions, the TP degrees' searches, the failure scenarios
and the load curve). ``ordered_map`` runs such a batch on forked worker processes. A
simulation is pure and seeded, so where it runs changes nothing: the results are the same
objects, bit for bit, as a loop would give, and they come back in the inputs' order.

Forked workers inherit the batch (the function and its inputs) instead of pickling it;
only the results travel back. The batch runs in the calling process instead when:

- the machine has no core to spare: one core, or a load average (over the last minute) of
  at least the number of cores. Linux shares the CPU between sessions (autogroups), not
  processes, so on a machine other jobs keep busy a second worker wins no CPU time and
  costs its fork and its copies; it only pays on a core nobody else wants;
- ``CAPGATE_PLANNER_WORKERS`` says otherwise: 1 (or 0) always in-process, N > 1 up to N
  workers whatever the load;
- the process runs other threads (an API server's request threads): forking a threaded
  process can copy a lock another thread holds, so it is never done;
- the call is already inside a worker (no nested pools), or the batch has one item.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

WORKERS_ENV = "CAPGATE_PLANNER_WORKERS"

T = TypeVar("T")
R = TypeVar("R")

# The batch the forked workers inherit; set only while a pool runs.
_BATCH: tuple[Callable[[Any], Any], Sequence[Any]] | None = None
_IN_WORKER = False


def workers() -> int:
    """Processes a batch may use: ``CAPGATE_PLANNER_WORKERS``, else the cores this process
    may run on when the machine has them to spare (module docstring), else 1."""
    text = os.environ.get(WORKERS_ENV, "").strip()
    if text:
        try:
            return max(1, int(text))
        except ValueError:
            return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average: do not guess
        return 1
    return cores if load < cores else 1


def _mark_worker() -> None:
    global _IN_WORKER
    _IN_WORKER = True


def _run_item(index: int) -> Any:
    assert _BATCH is not None
    fn, items = _BATCH
    # Progress reporters are inherited too: a worker reports its runs as the loop would
    # (the CLI's lines on the same stderr), so a long batch is not silent.
    return fn(items[index])


def ordered_map(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``[fn(x) for x in items]``, on up to ``workers()`` forked processes when it pays.

    ``fn`` must be pure (it may fill caches of its own process; those are discarded) and
    its results picklable. An exception in a worker is raised here, as the loop would.
    """
    global _BATCH
    n = min(workers(), len(items))
    if n < 2 or _IN_WORKER or _BATCH is not None or threading.active_count() > 1:
        return [fn(x) for x in items]
    # Imported here: a command whose batches all run in-process never loads multiprocessing.
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_all_start_methods, get_context

    if "fork" not in get_all_start_methods():  # Windows: workers would re-import everything
        return [fn(x) for x in items]
    _BATCH = (fn, items)
    try:
        with ProcessPoolExecutor(
            max_workers=n, mp_context=get_context("fork"), initializer=_mark_worker
        ) as pool:
            # One item per task, handed out as workers free up: the items' costs differ.
            return list(pool.map(_run_item, range(len(items))))
    finally:
        _BATCH = None
