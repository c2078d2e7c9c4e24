"""The database handle and the unit of work: the one place that begins and commits.

Services receive a session (reads) or a `WriteContext` (writes) and never commit; the
`Database.write` runner owns the transaction, appends the audit events the work
reported, and commits once. A lost race on a version number rolls the whole unit back
and runs it again, so two submitters can never both get vN+1.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from registry.errors import Conflict, Unavailable
from registry.storage.schema_version import ensure_current

T = TypeVar("T")
log = logging.getLogger(__name__)

WRITE_ATTEMPTS = 8


@dataclass
class WriteContext:
    """What a write sees: its session, who asked, when, and the events it must leave."""

    session: Session
    principal: str
    now: datetime
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def record_event(self, action: str, payload: dict[str, Any]) -> None:
        """Ask the unit of work to append an audit event in this same transaction."""
        self.events.append((action, payload))


def _sqlite_engine(url: str) -> Engine:
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": 30})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Hand transaction control to the "begin" hook below (pysqlite would otherwise
        # start deferred transactions that fail to upgrade to a write lock under load).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # IMMEDIATE takes the write lock up front: writers queue instead of deadlocking.
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def create_db_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        return _sqlite_engine(url)
    return create_engine(url, pool_pre_ping=True)


class Database:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = create_db_engine(url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._schema_ok = False

    def check_schema(self) -> None:
        """Raise unless the database is reachable and at exactly this code's schema."""
        with self._unavailable_guard(), self.engine.connect() as connection:
            ensure_current(connection)

    def ensure_schema(self) -> None:
        """Refuse to work on an unmigrated database or one newer than this code."""
        if not self._schema_ok:
            self.check_schema()
            self._schema_ok = True

    @contextmanager
    def _unavailable_guard(self) -> Iterator[None]:
        try:
            yield
        except OperationalError as exc:
            raise Unavailable(
                f"cannot reach the registry database ({make_url(self.url).render_as_string()}): "
                f"{str(exc.orig).strip().splitlines()[0] if exc.orig else exc}"
            ) from None

    @contextmanager
    def reading(self) -> Iterator[Session]:
        """A read-only session; whatever it did is rolled back."""
        self.ensure_schema()
        with self._unavailable_guard(), self._sessions() as session:
            try:
                yield session
            finally:
                session.rollback()

    def write(
        self,
        work: Callable[[WriteContext], T],
        *,
        principal: str,
        now: Callable[[], datetime] | None = None,
    ) -> T:
        """Run `work` in one transaction with its audit events; commit or leave nothing."""
        from registry.audit.chain import append_event

        self.ensure_schema()
        clock = now or (lambda: datetime.now(UTC))
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            with self._unavailable_guard(), self._sessions() as session:
                try:
                    context = WriteContext(session=session, principal=principal, now=clock())
                    result = work(context)
                    for action, payload in context.events:
                        append_event(
                            session,
                            principal=principal,
                            action=action,
                            payload=payload,
                            at=context.now,
                        )
                    session.commit()
                    return result
                except IntegrityError:
                    # Another writer took the version or audit sequence number we
                    # computed; our whole unit is void, so run it again from the start.
                    session.rollback()
                    log.info("write lost a race (attempt %d), retrying", attempt)
                except BaseException:
                    session.rollback()
                    raise
        raise Conflict("concurrent writers kept taking the same version; try again")
