"""CPU seconds spent by a benchmark's server processes and its database's backends.

Throughput on a shared machine follows the load average; the CPU a check costs does
not (much): read from /proc (Linux) for the API server's process tree and, on
PostgreSQL, for the backends serving the benchmark's own database (the server runs on
this machine). Elsewhere the figures are left out.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import create_engine, text

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, user + system CPU seconds) of a process, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK


def _tree(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = stat[0]
    found, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found.update(children)
        frontier += children
    return found


def _backends(database_url: str) -> set[int]:
    if not database_url.startswith("postgresql"):
        return set()
    engine = create_engine(database_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT pid FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
            return {int(row[0]) for row in rows}
    finally:
        engine.dispose()


class CpuMeter:
    """CPU seconds of the server tree and the database's backends between two reads."""

    def __init__(self, server_pid: int, database_url: str) -> None:
        self.server_pid = server_pid
        self.database_url = database_url
        self.available = Path(f"/proc/{server_pid}/stat").exists()

    def read(self) -> dict[int, float]:
        if not self.available:
            return {}
        pids = _tree(self.server_pid) | _backends(self.database_url)
        return {pid: stat[1] for pid in pids if (stat := _stat(pid)) is not None}

    @staticmethod
    def spent(before: dict[int, float], after: dict[int, float]) -> float:
        """CPU seconds between two reads (a process started meanwhile counts in full)."""
        return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())
