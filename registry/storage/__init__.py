"""Persistence: ORM models, the database handle and unit of work, repositories."""
