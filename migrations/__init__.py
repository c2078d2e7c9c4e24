"""Alembic environment and versions: the only way capgate's schema changes."""
