"""Alembic environment: runs migrations on the engine capgate itself would use."""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy import Connection, event

from registry.storage.database import create_db_engine
from registry.storage.models import Base

config = context.config


def _foreign_keys_off(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.execute("PRAGMA foreign_keys=OFF")


def _check_foreign_keys(connection: Connection) -> None:
    """Refuse to commit a migration that left a dangling reference (SQLite)."""
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise RuntimeError(f"the migration broke foreign keys: {broken[:5]}")


def run_migrations_online() -> None:
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database URL given to the migration environment")
    engine = create_db_engine(url)
    sqlite = engine.dialect.name == "sqlite"
    if sqlite:
        # Batch mode drops and renames a copied table, which SQLite refuses while other
        # tables' rows reference it with foreign keys enforced. The pragma cannot change
        # inside a transaction, so it is turned off on connect (after the engine's own
        # hook turned it on) and the keys are checked before the migration commits.
        event.listen(engine, "connect", _foreign_keys_off)
    try:
        with engine.connect() as connection:
            context.configure(
                connection=connection,
                target_metadata=Base.metadata,
                # SQLite cannot ALTER most things in place; batch mode copies the table.
                render_as_batch=sqlite,
                compare_type=True,
            )
            with context.begin_transaction():
                context.run_migrations()
                if sqlite:
                    _check_foreign_keys(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise RuntimeError("capgate runs migrations online only: `capgate db upgrade`")
run_migrations_online()
