"""The database handle and the unit of work: the one place that begins and commits.

Services receive a session (reads) or a `WriteContext` (writes) and never commit; the
`Database.write` runner owns the transaction, appends the audit events the work
reported, and commits once.

Writes are serialised registry-wide: every write appends to the one audit chain, so
two writes can never both proceed on the same head. On PostgreSQL each write's first
statement takes a transaction-level advisory lock (released by its commit or
rollback); on SQLite each write begins with `BEGIN IMMEDIATE`, which takes the file's
one write lock. Version and audit sequence numbers are therefore allocated by one
writer at a time. The unique constraints stay the last word: a writer that does not
take the lock (another tool, an older capgate) can still make a write lose a race,
and the lost unit is rolled back and run again with jittered exponential backoff,
within a time bound rather than a fixed number of attempts.

Reads never take the write lock: on SQLite they begin deferred transactions, which
in WAL mode neither block writers nor wait for them. A SQLite registry whose file,
directory or filesystem is not writable (or whose URL asks for `mode=ro`) is opened
read-only: it can be read, and every write is refused with one `Unavailable` line.
A file that stops being writable under a running process (its filesystem remounted
read-only) is reopened read-only when a connection fails on it, and writable again
once it is.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

from registry.errors import Conflict, Unavailable
from registry.storage.schema_version import ensure_current
from registry.storage.sqlite_reads import read_only_uri, sqlite_read_only_reason

if TYPE_CHECKING:
    from registry.audit.chain import ChainHead

T = TypeVar("T")
log = logging.getLogger(__name__)

# A write that keeps losing races (only possible beside writers that skip the write
# lock) is retried with jittered exponential backoff until this many seconds passed.
WRITE_RETRY_SECONDS = 30.0
BACKOFF_FIRST_SECONDS = 0.005
BACKOFF_MAX_SECONDS = 0.5
# The key of the registry-wide PostgreSQL advisory write lock ("capgate" in ASCII).
WRITE_LOCK_KEY = 0x63617067617465
# The execution option that marks a connection as a reader (deferred BEGIN on SQLite).
_READER = "capgate_reader"


@dataclass
class WriteContext:
    """What a write sees: its session, who asked, when, and the events it must leave."""

    session: Session
    principal: str
    now: datetime
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # The chain's last event when the work read it already (the gate's chain check, under
    # the write lock): its first event follows it without reading it again.
    head: ChainHead | None = None

    def record_event(self, action: str, payload: dict[str, Any]) -> None:
        """Ask the unit of work to append an audit event in this same transaction."""
        self.events.append((action, payload))


def _sqlite_settings(url: str) -> tuple[Path | None, bool]:
    """(the file, read-only?) of a SQLite URL; `?mode=ro` asks for read-only."""
    parsed = make_url(url)
    database = parsed.database
    path = Path(database).expanduser() if database and database != ":memory:" else None
    if path is not None and database and database.startswith("file:"):
        return None, False  # a URI the caller built itself: used as given
    asked = str(parsed.query.get("mode", "")).lower() == "ro"
    return path, asked or (path is not None and sqlite_read_only_reason(path) is not None)


def _sqlite_engine(url: str, *, read_only: bool, path: Path | None) -> Engine:
    if read_only and path is not None:
        uri = read_only_uri(path)
        engine = create_engine(
            "sqlite://",
            creator=lambda: sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=False),
            poolclass=NullPool,
        )
    else:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        plain = make_url(url)
        if "mode" in plain.query:
            plain = plain.difference_update_query(["mode"])
        engine = create_engine(plain, connect_args={"timeout": 30})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Hand transaction control to the "begin" hook below (pysqlite would otherwise
        # start deferred transactions that fail to upgrade to a write lock under load).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        if not read_only:
            # The journal mode is stored in the file: a read-only one keeps its own.
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        if read_only or connection.get_execution_options().get(_READER):
            # Deferred: a reader takes no write lock, and in WAL mode reads a snapshot
            # while writers commit beside it.
            connection.exec_driver_sql("BEGIN")
        else:
            # IMMEDIATE takes the write lock up front: writers queue instead of
            # deadlocking on a lock upgrade.
            connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def create_db_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path, read_only = _sqlite_settings(url)
        return _sqlite_engine(url, read_only=read_only, path=path)
    return create_engine(url, pool_pre_ping=True)


class Database:
    def __init__(self, url: str, *, read_only: bool | None = None) -> None:
        """`read_only=None` decides by itself: a SQLite file that cannot be written (or
        a `?mode=ro` URL) is opened read-only; True forces read-only on SQLite."""
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        self.read_only_reason: str | None = None
        # A SQLite file that stopped being writable under this running process (its
        # filesystem remounted read-only, say) is reopened read-only, and writable again
        # once it is: only then, never when read-only was asked for or found at start.
        self._path: Path | None = None
        self._turned_read_only = False
        if self.is_sqlite:
            path, detected = _sqlite_settings(url)
            self._path = path
            if read_only is None:
                read_only = detected
            if read_only:
                reason = sqlite_read_only_reason(path) if path is not None else None
                self.read_only_reason = reason or "it was opened read-only"
            self.engine = _sqlite_engine(url, read_only=bool(read_only), path=path)
        else:
            if read_only:
                self.read_only_reason = "it was opened read-only"
            self.engine = create_engine(url, pool_pre_ping=True)
        self._make_sessions()
        self._schema_ok = False

    def _make_sessions(self) -> None:
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._read_sessions = sessionmaker(
            self.engine.execution_options(**{_READER: True}), expire_on_commit=False
        )

    def _reopen(self, reason: str | None) -> None:
        """Swap in an engine for the file as it now is (in-flight sessions keep theirs)."""
        old = self.engine
        self.engine = _sqlite_engine(self.url, read_only=reason is not None, path=self._path)
        self.read_only_reason = reason
        self._turned_read_only = reason is not None
        self._make_sessions()
        old.dispose()

    def _reopen_if_turned_read_only(self) -> bool:
        """After a failure: was it a SQLite file that can no longer be written? Then
        reopen it read-only (reads go on) and say so."""
        if self._path is None or self.read_only_reason is not None:
            return False
        reason = sqlite_read_only_reason(self._path)
        if reason is None:
            return False
        log.warning("the registry database %s turned read-only (%s)", self._where(), reason)
        self._reopen(reason)
        return True

    def _reopen_if_writable_again(self) -> None:
        if (
            self._turned_read_only
            and self._path is not None
            and sqlite_read_only_reason(self._path) is None
        ):
            log.warning("the registry database %s is writable again", self._where())
            self._reopen(None)

    @property
    def read_only(self) -> bool:
        return self.read_only_reason is not None

    def check_schema(self) -> None:
        """Raise unless the database is reachable and at exactly this code's schema."""
        self._reopen_if_writable_again()
        with self._unavailable_guard():
            try:
                self._check_schema()
            except OperationalError:
                if not self._reopen_if_turned_read_only():
                    raise
                self._check_schema()

    def _check_schema(self) -> None:
        reader = self.engine.execution_options(**{_READER: True})
        with reader.connect() as connection:
            ensure_current(connection)

    def ensure_schema(self) -> None:
        """Refuse to work on an unmigrated database or one newer than this code."""
        if not self._schema_ok:
            self.check_schema()
            self._schema_ok = True

    def _where(self) -> str:
        return make_url(self.url).render_as_string()

    @contextmanager
    def _unavailable_guard(self) -> Iterator[None]:
        try:
            yield
        except OperationalError as exc:
            if self._reopen_if_turned_read_only():
                self._refuse_if_read_only()  # a write found it: refused by name
            cause = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
            # The database answered, but has no room: say so, not "cannot reach".
            full = "disk is full" in cause or "could not extend file" in cause
            what = (
                "the registry database is out of space"
                if full
                else "cannot reach the registry database"
            )
            raise Unavailable(f"{what} ({self._where()}): {cause}") from None

    @contextmanager
    def reading(self, *, snapshot: bool = False) -> Iterator[Session]:
        """A read-only session; whatever it did is rolled back. Takes no write lock.

        `snapshot`: every statement reads one snapshot (PostgreSQL's REPEATABLE READ,
        set with the BEGIN rather than by a statement of its own; SQLite's reads hold
        the database already)."""
        self.ensure_schema()
        level = (
            {"isolation_level": "REPEATABLE READ"}
            if snapshot and self.engine.dialect.name == "postgresql"
            else None
        )
        with self._unavailable_guard():
            session = self._read_sessions()
            try:
                # Open it now: a file that turned read-only shows here.
                session.connection(execution_options=level)
            except BaseException as exc:
                session.close()
                if not isinstance(exc, OperationalError) or not self._reopen_if_turned_read_only():
                    raise
                session = self._read_sessions()
        with self._unavailable_guard(), session:
            try:
                yield session
            finally:
                session.rollback()

    def _refuse_if_read_only(self) -> None:
        if self.read_only_reason is not None:
            raise Unavailable(
                f"the registry database ({self._where()}) is read-only "
                f"({self.read_only_reason}): writes are refused"
            )

    def _take_write_lock(self, session: Session) -> None:
        """Serialise writers (SQLite's BEGIN IMMEDIATE already did, on the first use)."""
        if self.engine.dialect.name == "postgresql":
            session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": WRITE_LOCK_KEY})

    def write(
        self,
        work: Callable[[WriteContext], T],
        *,
        principal: str,
        now: Callable[[], datetime] | None = None,
    ) -> T:
        """Run `work` in one transaction with its audit events; commit or leave nothing."""
        from registry.audit.chain import append_event

        self._reopen_if_writable_again()
        self._refuse_if_read_only()
        self.ensure_schema()
        clock = now or (lambda: datetime.now(UTC))
        deadline = time.monotonic() + WRITE_RETRY_SECONDS
        attempt = 0
        while True:
            attempt += 1
            with self._unavailable_guard(), self._sessions() as session:
                try:
                    self._take_write_lock(session)
                    context = WriteContext(session=session, principal=principal, now=clock())
                    result = work(context)
                    for index, (action, payload) in enumerate(context.events):
                        append_event(
                            session,
                            principal=principal,
                            action=action,
                            payload=payload,
                            at=context.now,
                            head=context.head if index == 0 else None,
                        )
                    session.commit()
                    return result
                except IntegrityError:
                    # Another writer (one that skipped the write lock) took the version
                    # or audit sequence number we computed; our whole unit is void.
                    session.rollback()
                    log.info("write lost a race (attempt %d), retrying", attempt)
                except BaseException:
                    session.rollback()
                    raise
            pause = min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2 ** (attempt - 1))
            pause = random.uniform(pause / 2, pause)  # jitter, not secrecy
            if time.monotonic() + pause > deadline:
                raise Conflict("concurrent writers kept taking the same version; try again")
            time.sleep(pause)
