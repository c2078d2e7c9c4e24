"""Alembic environment: runs migrations on the engine capgate itself would use."""

from __future__ import annotations

from alembic import context

from registry.storage.database import create_db_engine
from registry.storage.models import Base

config = context.config


def run_migrations_online() -> None:
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database URL given to the migration environment")
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            context.configure(
                connection=connection,
                target_metadata=Base.metadata,
                # SQLite cannot ALTER most things in place; batch mode copies the table.
                render_as_batch=connection.dialect.name == "sqlite",
                compare_type=True,
            )
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise RuntimeError("capgate runs migrations online only: `capgate db upgrade`")
run_migrations_online()
