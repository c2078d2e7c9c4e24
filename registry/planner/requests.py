"""The requests of one simulation run, stored as parallel lists (struct of arrays).

Lists indexed by request id are the cheapest per-request state Python offers; the event loop
touches millions of these fields per second of wall time.
"""

from __future__ import annotations

import math

NAN = math.nan


# Fields every new request starts with the same value in are grown this many at a time.
_GROW = 1024


class Requests:
    """Every attempt is a request; a retry is a new request pointing at its original.

    A request's id is its index, in the order of ``add`` (so also the order the priority
    queue breaks ties with). The fields set by ``add`` have exactly one entry per request;
    the scheduler's fields (state onwards), which every request starts with the same value
    in, are grown in blocks ahead of need, in place (the engine holds aliases of them).
    """

    __slots__ = (
        "admitted",
        "arrival",
        "attempt",
        "cancelled",
        "cls",
        "computed",
        "dstep",
        "finish",
        "first_token",
        "gen",
        "hit",
        "kvbase",
        "origin",
        "out",
        "prio",
        "prompt",
        "replica",
        "state",
        "target",
    )

    def __init__(self) -> None:
        self.arrival: list[float] = []
        self.origin: list[int] = []
        self.cls: list[int] = []
        self.prio: list[int] = []
        self.prompt: list[int] = []
        self.out: list[int] = []
        self.hit: list[int] = []
        self.attempt: list[int] = []
        self.cancelled: list[bool] = []
        self.target: list[int] = []
        self.state: list[int] = []
        self.replica: list[int] = []
        self.computed: list[int] = []
        self.gen: list[int] = []
        self.dstep: list[int] = []
        self.finish: list[int] = []
        self.kvbase: list[int] = []
        self.first_token: list[float] = []
        self.admitted: list[float] = []

    def _grow(self) -> None:
        self.state.extend([0] * _GROW)
        self.replica.extend([-1] * _GROW)
        self.computed.extend([0] * _GROW)
        self.gen.extend([0] * _GROW)
        self.dstep.extend([0] * _GROW)
        self.finish.extend([-1] * _GROW)
        self.kvbase.extend([0] * _GROW)
        self.first_token.extend([NAN] * _GROW)
        self.admitted.extend([NAN] * _GROW)

    def add(
        self,
        arrival: float,
        origin: int,
        cls: int,
        prio: int,
        prompt: int,
        out: int,
        hit: int,
        attempt: int,
        cancelled: bool,
    ) -> int:
        """A new request (``origin`` < 0: it is its own original); its id."""
        rid = len(self.arrival)
        if rid == len(self.state):  # the scheduler's fields are full
            self._grow()
        self.arrival.append(arrival)
        self.origin.append(rid if origin < 0 else origin)
        self.cls.append(cls)
        self.prio.append(prio)
        self.prompt.append(prompt)
        self.out.append(out)
        self.hit.append(hit)
        self.attempt.append(attempt)
        self.cancelled.append(cancelled)
        self.target.append(prompt)
        return rid
