"""Independent simulations on forked workers (registry/planner/parallel.py): the same
results, in the same order, as the in-process loop, and in-process whenever forking does not
pay or is not safe."""

from __future__ import annotations

import os
import threading

import pytest

from registry.planner import parallel
from registry.planner.parallel import WORKERS_ENV, ordered_map, workers
from registry.planner.recomputation import recompute
from tests.planner.test_recompute import _load


def _square_and_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def _force_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two workers, and this process taken as running no other thread: in the whole suite
    an earlier test may leave an idle thread behind (a server's, a library's), and the pool
    would then rightly stay in-process, leaving these tests nothing to test."""
    monkeypatch.setenv(WORKERS_ENV, "2")
    monkeypatch.setattr(parallel.threading, "active_count", lambda: 1)


def test_success_a_forced_pool_returns_the_results_in_input_order_from_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _force_workers(monkeypatch)
    out = ordered_map(_square_and_pid, list(range(7)))
    assert [value for value, _ in out] == [x * x for x in range(7)]
    assert os.getpid() not in {pid for _, pid in out}


def test_success_one_worker_runs_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WORKERS_ENV, "1")
    assert {pid for _, pid in ordered_map(_square_and_pid, [1, 2, 3])} == {os.getpid()}


def test_success_a_process_running_other_threads_never_forks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(WORKERS_ENV, "2")
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        pids = {pid for _, pid in ordered_map(_square_and_pid, [1, 2, 3])}
    finally:
        release.set()
        other.join()
    assert pids == {os.getpid()}


def _fails_on_three(x: int) -> int:
    if x == 3:
        raise ValueError(f"bad item {x}")
    return x


def test_fail_an_exception_in_a_worker_is_raised_to_the_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _force_workers(monkeypatch)
    with pytest.raises(ValueError, match="bad item 3"):
        ordered_map(_fails_on_three, [1, 2, 3, 4])
    # The batch is cleared: the next one runs normally.
    assert ordered_map(_fails_on_three, [1, 2]) == [1, 2]


@pytest.mark.parametrize(("load", "expected"), [(0.2, "cores"), (1.0, "cores"), (2.0, 1), (7.5, 1)])
def test_success_without_the_variable_workers_follow_the_spare_cores(
    monkeypatch: pytest.MonkeyPatch, load: float, expected: object
) -> None:
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda _pid: {0, 1})
    monkeypatch.setattr(parallel.os, "getloadavg", lambda: (load, load, load))
    assert workers() == (2 if expected == "cores" else expected)


@pytest.mark.parametrize(("text", "expected"), [("3", 3), ("0", 1), ("many", 1)])
def test_success_the_variable_sets_the_workers_whatever_the_load(
    monkeypatch: pytest.MonkeyPatch, text: str, expected: int
) -> None:
    monkeypatch.setenv(WORKERS_ENV, text)
    monkeypatch.setattr(parallel.os, "getloadavg", lambda: (9.0, 9.0, 9.0))
    assert workers() == expected


def test_success_the_calibrated_example_is_identical_on_workers_and_in_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Calibration's grid, the TP degrees' searches, the scenarios and the load curve all
    # run as batches here; every figure must be the in-process one, bit for bit.
    plan, wl, prov, ev = _load()
    monkeypatch.setenv(WORKERS_ENV, "1")
    alone = recompute(plan, wl, prov, evidence=[ev], seed=0)
    _force_workers(monkeypatch)
    pooled = recompute(plan, wl, prov, evidence=[ev], seed=0)
    assert alone.calibration.fitted
    assert len(alone.sizing.tp_options) > 1
    assert pooled.model_dump_json() == alone.model_dump_json()
