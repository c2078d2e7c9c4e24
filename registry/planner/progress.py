"""Progress of a long recomputation: which stage, TP degree and candidate replica count.

The planner stays pure: it never writes anywhere by itself. It calls ``report`` on a
``Progress`` that the caller hands in, or the one the caller installed for the current
context with ``reporting`` (a ``ContextVar``, so concurrent recomputations in threads or
tasks never see each other's reporter, and nothing leaks between runs). Without either, a
report is a no-op. ``StderrProgress`` is the reporter the CLI installs: silent for the first
``after_s`` seconds (short runs print nothing), then one line per report on stderr, never on
stdout, so ``--json`` output stays clean.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol, TextIO


class Progress(Protocol):
    def report(self, stage: str, *, tp: int | None = None, replicas: int | None = None) -> None:
        """One step of the recomputation: ``stage`` (e.g. "sizing"), TP degree, candidate."""


class NoProgress:
    def report(self, stage: str, *, tp: int | None = None, replicas: int | None = None) -> None:
        return None


_CURRENT: ContextVar[Progress | None] = ContextVar("capgate_planner_progress", default=None)


def current() -> Progress:
    """The reporter installed for this context, or one that does nothing."""
    return _CURRENT.get() or NoProgress()


@contextmanager
def reporting(progress: Progress) -> Iterator[Progress]:
    """Install ``progress`` for recomputations run inside the ``with`` block."""
    token = _CURRENT.set(progress)
    try:
        yield progress
    finally:
        _CURRENT.reset(token)


class StderrProgress:
    """Progress lines on stderr for runs longer than ``after_s`` seconds.

    Lines look like ``capgate: sizing TP=1, trying 96 ready replicas (3.4 s)``. At most one
    line per ``every_s`` seconds, except that a new stage is always shown once the run is
    past ``after_s``; a final line is never printed (the command's own output follows).
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        after_s: float = 2.0,
        every_s: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._after = after_s
        self._every = every_s
        self._clock = clock
        self._start = clock()
        self._last_line = -float("inf")
        self._last_stage = ""

    def report(self, stage: str, *, tp: int | None = None, replicas: int | None = None) -> None:
        now = self._clock()
        elapsed = now - self._start
        if elapsed < self._after:
            self._last_stage = stage
            return
        if stage == self._last_stage and now - self._last_line < self._every:
            return
        self._last_stage = stage
        self._last_line = now
        parts = [stage]
        if tp is not None:
            parts.append(f"TP={tp}")
        if replicas is not None:
            parts.append(f"trying {replicas} ready replica{'s' if replicas != 1 else ''}")
        stream = self._stream if self._stream is not None else sys.stderr
        print(f"capgate: {', '.join(parts)} ({elapsed:.1f} s)", file=stream, flush=True)
