"""Integrity beyond the event chain: every stored row against the event that wrote it.

The hash chain proves the events were not altered; it says nothing of the tables beside
it. So every write's event records the rows it stored (registry.audit.rows), and a
*ledger* built by walking the chain says what each covered table must hold. A row no
event recorded (inserted by hand), a recorded row that is gone (deleted), and a row
whose fields differ from its event (edited) are problems, each named with its table,
key and the fields that differ. Record content and recomputation results are also
re-hashed against their digests wherever they are read (registry.records.service,
registry.sizing.service).

The parts:

- `ledger`: what the audit trail says the covered tables hold, built by walking it;
- `compare`: stored rows against the ledger, both ways, with the messages that name
  each difference; `verify_registry` (`capgate audit verify`) runs it on every row of
  every covered table, O(events + rows);
- `guard`: what the gate runs on every check, incrementally, per Database object
  (`guard_for`); its module text says how;
- `sweep`: the guard's whole-registry check between two checks (the quarantine): the
  rows recorded since, and one fingerprint scan per table;
- `feeds`: the guard's check of the rows one decision rests on (when no sweep ran).

This module imports nothing (registry.audit's packages sit in the features layer).
"""
