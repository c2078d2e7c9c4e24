"""ORM models. The schema itself only ever changes through Alembic migrations.

Relationships are not mapped on purpose: every query is explicit in a repository, so
nothing loads lazily behind a caller's back.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Named constraints so that migrations on SQLite (batch mode) and PostgreSQL agree.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class RecordRow(Base):
    """One immutable version of a record: rows are inserted, never updated or deleted."""

    __tablename__ = "records"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(128))
    version: Mapped[int] = mapped_column(Integer)
    digest: Mapped[str] = mapped_column(String(71))
    # Canonical JSON text, byte for byte what the digest was computed over.
    content: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[str] = mapped_column(String(256))

    __table_args__ = (
        # The race guard: two writers computing the same next version cannot both commit.
        UniqueConstraint("kind", "name", "version", name="uq_records_kind_name_version"),
        UniqueConstraint("kind", "digest", name="uq_records_kind_digest"),
        Index("ix_records_kind_created_at", "kind", "created_at"),
    )


class RecordRefRow(Base):
    """A pinned reference from one record version to another (plan -> workload, ...)."""

    __tablename__ = "record_refs"

    record_id: Mapped[int] = mapped_column(ForeignKey("records.id"), primary_key=True)
    role: Mapped[str] = mapped_column(String(32), primary_key=True)
    target_id: Mapped[int] = mapped_column(ForeignKey("records.id"), index=True)


class AuditEventRow(Base):
    """Hash-chained audit trail: each event's hash covers the previous event's hash."""

    __tablename__ = "audit_events"

    # Assigned as previous + 1 inside the writing transaction; the primary key makes two
    # concurrent writers unable to fork the chain (one of them retries).
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    principal: Mapped[str] = mapped_column(String(256))
    action: Mapped[str] = mapped_column(String(64))
    payload: Mapped[str] = mapped_column(Text)
    prev_hash: Mapped[str] = mapped_column(String(71))
    hash: Mapped[str] = mapped_column(String(71), unique=True)
