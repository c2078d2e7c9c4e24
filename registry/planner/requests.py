"""The requests of one simulation run, stored as parallel lists (struct of arrays).

Lists indexed by request id are the cheapest per-request state Python offers; the event loop
touches millions of these fields per second of wall time.
"""

from __future__ import annotations

import math

NAN = math.nan


class Requests:
    """Every attempt is a request; a retry is a new request pointing at its original."""

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
        "order",
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
        self.state: list[int] = []
        self.replica: list[int] = []
        self.target: list[int] = []
        self.computed: list[int] = []
        self.gen: list[int] = []
        self.dstep: list[int] = []
        self.finish: list[int] = []
        self.kvbase: list[int] = []
        self.first_token: list[float] = []
        self.admitted: list[float] = []
        self.order: list[int] = []

    def add(
        self,
        *,
        arrival: float,
        origin: int,
        cls: int,
        prio: int,
        prompt: int,
        out: int,
        hit: int,
        attempt: int,
        cancelled: bool,
        order: int,
    ) -> int:
        rid = len(self.arrival)
        self.arrival.append(arrival)
        self.origin.append(rid if origin < 0 else origin)
        self.cls.append(cls)
        self.prio.append(prio)
        self.prompt.append(prompt)
        self.out.append(out)
        self.hit.append(hit)
        self.attempt.append(attempt)
        self.cancelled.append(cancelled)
        self.state.append(0)
        self.replica.append(-1)
        self.target.append(prompt)
        self.computed.append(0)
        self.gen.append(0)
        self.dstep.append(0)
        self.finish.append(-1)
        self.kvbase.append(0)
        self.first_token.append(NAN)
        self.admitted.append(NAN)
        self.order.append(order)
        return rid
