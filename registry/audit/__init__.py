"""The audit trail: a hash chain of every write, appended by the unit of work."""
