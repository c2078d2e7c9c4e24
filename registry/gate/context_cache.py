"""The gate's per-process cache of plan contexts: a repeated check reads no record.

A check's plan context (the plan, workload and provider versions, the evidence with what
its freshness is judged on, the waivers and their approvals, the production signal) and
the stored recomputation it reuses take nine statements and a pydantic validation of
every record to read. Records are never edited, only added, and so are staleness,
withdrawal and approval rows; every write records the rows it adds in its audit event
(registry.audit.rows). So a context read in a snapshot whose last event was `seq` still
holds while no event after `seq` recorded a row of those tables, which the gate asks of
its integrity guard's ledger (`Guard.rows_added_since`) once the check's integrity check
has walked every event up to its own snapshot. Then the entry is used: its evidence's
freshness judged again at the check's instant, and its recomputation reused only if the
evidence that calibrates it is still the same. Otherwise the check reads everything
again, as a check without the cache does.

A row edited in SQL is what it always was: the quarantine's (the check's sweep, or the
decision's own rows when no sweep is due: registry.audit.integrity). Only decisions and
recomputations are added without touching a context, so they alone leave it valid.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from registry.audit import rows as R
from registry.gate.context import LoadedPlan, PlanContext
from registry.policy.releases import ReleaseInForce
from registry.sizing.service import Sized, calibration_key, read_loaded_plan
from registry.staleness.rules import StalenessThresholds
from registry.storage.models import AuditEventRow

if TYPE_CHECKING:
    from registry.storage.database import Database

# The tables whose new rows can change a plan's context (every covered table but these two).
CONTEXT_TABLES = frozenset(R.COVERED_TABLES) - {R.DECISIONS, R.RECOMPUTATIONS}
SIZE = 64  # plans whose contexts a process keeps (the least recently used goes)


@dataclass(frozen=True)
class Entry:
    loaded: LoadedPlan
    sized: Sized
    seq: int  # the last event of the snapshot the context was read in
    # The policy release in force, read after `seq` for (engine revision, pinned release):
    # the release tables are among CONTEXT_TABLES, so an approval or a new release after
    # `seq` invalidates it with the rest of the entry.
    release_read: tuple[tuple[str, str | None], ReleaseInForce] | None = None

    def release(self, revision: str, pinned: str | None) -> ReleaseInForce | None:
        """The release in force kept for this revision and pin (None: not kept for it)."""
        if self.release_read is None or self.release_read[0] != (revision, pinned):
            return None
        return self.release_read[1]


@dataclass(frozen=True)
class Read:
    """What a check read (or found): its context, the stored recomputation it reuses
    (None: the planner must run), and the entry it came from or may fill."""

    context: PlanContext
    sized: Sized | None
    entry: Entry | None
    cached: bool


class PlanContexts:
    """One Database's cached contexts, keyed by the plan reference as asked."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str], Entry] = OrderedDict()

    def read(
        self, session: Session, *, plan_ref: str, now: datetime, limits: StalenessThresholds
    ) -> Read:
        """The context at `now` from the cache when an entry fits, else read in `session`
        (its entry is kept by `keep` once the check's integrity check passed)."""
        key = (plan_ref, limits.model_dump_json())
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
        if entry is not None:
            context = entry.loaded.at(now)
            # The recomputation rests on the fresh evidence: one that aged out of
            # freshness asks the registry for another.
            if calibration_key(context) == entry.sized.view.calibration_key:
                return Read(context, replace(entry.sized, context=context), entry, cached=True)
        seq = int(session.scalar(select(func.coalesce(func.max(AuditEventRow.seq), 0))) or 0)
        loaded, sized = read_loaded_plan(session, plan_ref=plan_ref, now=now, limits=limits)
        fill = Entry(loaded=loaded, sized=sized, seq=seq) if sized is not None else None
        return Read(loaded.context, sized, fill, cached=False)

    def entry(self, plan_ref: str, limits: StalenessThresholds) -> Entry | None:
        """The entry kept for the plan (None: none), as `read` would find it."""
        with self._lock:
            return self._entries.get((plan_ref, limits.model_dump_json()))

    def keep(self, plan_ref: str, limits: StalenessThresholds, entry: Entry) -> None:
        with self._lock:
            self._entries[(plan_ref, limits.model_dump_json())] = entry
            self._entries.move_to_end((plan_ref, limits.model_dump_json()))
            while len(self._entries) > SIZE:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_CACHES: weakref.WeakKeyDictionary[Database, PlanContexts] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def contexts_for(database: Database) -> PlanContexts:
    with _CACHES_LOCK:
        found = _CACHES.get(database)
        if found is None:
            found = _CACHES[database] = PlanContexts()
        return found
