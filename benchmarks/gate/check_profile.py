"""Where one gate check's time goes: each stage's wall time and SQL statements.

The stages are the functions `registry.gate.service.check` calls, wrapped with a timer
for the benchmark's run only (nothing in the gate is changed): a stage's time excludes
the stages nested in it, so the rows add up to the check. Statements are counted with a
SQLAlchemy `before_cursor_execute` listener and charged to the innermost stage running.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event

# (label, module or class path, attribute): the stages in the order a check runs them.
STAGES: tuple[tuple[str, str, str], ...] = (
    ("saved checkpoint", "registry.gate.service", "enforce_saved_checkpoint"),
    (
        "quarantine (chain, new rows, sweep)",
        "registry.audit.integrity.guard:Guard",
        "check_registry",
    ),
    (
        "quarantine and the decision's rows (one snapshot)",
        "registry.audit.integrity.guard:Guard",
        "check_decision",
    ),
    ("policy release in force", "registry.gate.service", "release_for_decision"),
    (
        "plan context from the process's cache",
        "registry.gate.context_cache:PlanContexts",
        "read",
    ),
    ("load records (plan context, on a miss)", "registry.sizing.service", "load_plan"),
    ("stored recomputation (read, re-hash)", "registry.sizing.service", "_view"),
    ("integrity of the decision's rows", "registry.audit.integrity.guard:Guard", "check_feeds"),
    ("previous decision", "registry.gate.service", "_previous_decision"),
    ("assemble the input", "registry.gate.service", "gate_input"),
    ("decide (embedded Wasm)", "registry.policy.embedded:EmbeddedEngine", "decide"),
    ("chain check before append", "registry.audit.integrity.guard:Guard", "check_append"),
    ("sign the decision (DSSE)", "registry.attestation.store", "sign_envelope"),
    ("attestation (read back, statement)", "registry.gate.service", "attest_stored_decision"),
    ("append the audit event", "registry.audit.chain", "append_event"),
    ("store + commit (rest of the write)", "registry.storage.database:Database", "write"),
    ("decision views (answer and signed statement)", "registry.gate.service", "decision_view"),
)
OTHER = "other (sizing, waivers, sessions)"


@dataclass
class _Frame:
    label: str
    start: float
    children: float = 0.0


@dataclass
class Profile:
    """Per-stage exclusive seconds and statements, summed over `checks` checks."""

    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    statements: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    totals: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # this process's CPU seconds a check
    checks: int = 0
    _local: threading.local = field(default_factory=threading.local)

    def _stack(self) -> list[_Frame]:
        stack: list[_Frame] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    @contextmanager
    def span(self, label: str) -> Iterator[None]:
        stack = self._stack()
        frame = _Frame(label, time.perf_counter())
        stack.append(frame)
        try:
            yield
        finally:
            stack.pop()
            elapsed = time.perf_counter() - frame.start
            self.seconds[label] += elapsed - frame.children
            if stack:
                stack[-1].children += elapsed

    def statement(self) -> None:
        stack = self._stack()
        self.statements[stack[-1].label if stack else OTHER] += 1

    def rows(self) -> list[tuple[str, float, float, float]]:
        """(stage, ms per check, share of the check, statements per check)."""
        total = sum(self.seconds.values()) or 1.0
        order = [label for label, _, _ in STAGES] + [OTHER]
        return [
            (
                label,
                self.seconds[label] * 1000 / self.checks,
                self.seconds[label] / total,
                self.statements[label] / self.checks,
            )
            for label in order
            if label in self.seconds or label in self.statements
        ]

    @property
    def median_ms(self) -> float:
        return statistics.median(self.totals) * 1000

    @property
    def median_cpu_ms(self) -> float:
        return statistics.median(self.cpu) * 1000


def _resolve(path: str) -> Any:
    import importlib

    module, _, cls = path.partition(":")
    owner = importlib.import_module(module)
    return getattr(owner, cls) if cls else owner


def _wrap(profile: Profile, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        with profile.span(label):
            return function(*args, **kwargs)

    return timed


@contextmanager
def instrumented(profile: Profile, engine: Any) -> Iterator[None]:
    """The stages wrapped and statements counted on `engine` (a SQLAlchemy Engine)."""
    with ExitStack() as undo:
        for label, path, name in STAGES:
            owner = _resolve(path)
            original = getattr(owner, name, None)
            if original is None:
                continue  # a stage an older gate does not have (a before-and-after run)
            setattr(owner, name, _wrap(profile, label, original))
            undo.callback(setattr, owner, name, original)

        def count(*_: Any) -> None:
            profile.statement()

        event.listen(engine, "before_cursor_execute", count)
        undo.callback(event.remove, engine, "before_cursor_execute", count)
        yield


def profile_checks(database_url: str, plan: str, checks: int, warm: int = 3) -> Profile:
    """`checks` gate checks in this process, one after another, on a registry the API
    benchmark filled (a fresh Database, so the first `warm` checks walk the chain)."""
    from datetime import UTC, datetime

    from registry.gate.service import check
    from registry.policy.embedded import EmbeddedEngine
    from registry.staleness.thresholds import load_thresholds
    from registry.storage.database import Database

    database = Database(database_url)
    engine = EmbeddedEngine()
    limits = load_thresholds()

    def one() -> None:
        view = check(
            database, engine, plan_ref=plan, principal="bench", limits=limits, now=datetime.now(UTC)
        )
        if view.outcome.value != "allow":
            raise RuntimeError(f"the profiled check did not allow: {view}")

    for _ in range(warm):
        one()
    profile = Profile()
    with instrumented(profile, database.engine):
        for _ in range(checks):
            start, cpu = time.perf_counter(), time.process_time()
            with profile.span(OTHER):
                one()
            profile.totals.append(time.perf_counter() - start)
            profile.cpu.append(time.process_time() - cpu)
            profile.checks += 1
    database.engine.dispose()
    return profile
