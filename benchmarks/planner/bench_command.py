"""Benchmark: `capgate plan size` as a user runs it, against the planner's own time (issue 28).

    python -m benchmarks.planner.bench_command [--runs 5] [--fleet 1000] [--write]

Measures, each as the median of ``--runs`` runs (wall time), with the load average of the
machine stated (``os.getloadavg()`` before and after, other jobs share it):

1. ``capgate plan size chat-assistant-prod``, the worked example as scripts/demo.sh runs it
   (registered in a throwaway SQLite registry, its load test imported, so the planner is
   calibrated): a fresh process on a fresh copy of that registry each run, so every run
   recomputes (a second run on the same registry would reuse the stored result); then the
   same with ``--chart``, as the demo draws it;
2. the in-process ``recompute`` of the same inputs (read from that registry), the search
   alone, with the planner's workers as the command gets them (registry/planner/
   parallel.py: the second core only when the load average leaves it free), and again
   with both cores forced (``CAPGATE_PLANNER_WORKERS=2``);
3. the import of the modules the command loads, in a fresh process;
4. a synthetic fleet needing about ``--fleet`` ready replicas (benchmarks.planner.bench_fleet's
   workload) sized from a plan file (``capgate plan size FILE``: nothing stored) and in
   process.

Prints the table; ``--write`` puts it into docs/planner.md between the generated markers, so
no figure is copied by hand. Targets are for the 2-core reference machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.machine import reference_note, reference_seconds
from registry.planner.parallel import WORKERS_ENV

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "planner.md"
EXAMPLE = ROOT / "examples" / "chat-assistant"
START, END = "<!-- generated: command speed -->", "<!-- end generated: command speed -->"
PLAN = "chat-assistant-prod"

# What `capgate plan size` imports beyond the interpreter: its command module, the sizing
# service (storage, records) and the planner.
IMPORT_PROBE = (
    "import time; t = time.perf_counter(); "
    "import cli.main, cli.plan_size, cli.backend, registry.sizing.service, "
    "registry.planner.recomputation; print(time.perf_counter() - t)"
)


def capgate_command() -> list[str]:
    """The installed entry point beside this interpreter, as a user runs it; else the module."""
    script = Path(sys.executable).with_name("capgate")
    return [str(script)] if script.exists() else [sys.executable, "-m", "cli.main"]


@dataclass(frozen=True)
class Row:
    case: str
    samples: tuple[float, ...]
    target_s: float | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


def _run(args: Sequence[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*capgate_command(), *args], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"capgate {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done


def _timed(runs: int, once: Callable[[], object]) -> tuple[float, ...]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        once()
        samples.append(time.perf_counter() - start)
    return tuple(samples)


def register_example(env: dict[str, str]) -> None:
    """The worked example as scripts/demo.sh registers it, its load test measured 6 days ago."""
    _run(["db", "upgrade"], env)
    for kind in ("workload", "provider", "plan"):
        _run([kind, "submit", str(EXAMPLE / f"{kind}.yaml")], env)
    measured = (datetime.now(UTC) - timedelta(days=6)).strftime("%Y-%m-%dT00:00:00Z")
    load_test = EXAMPLE / "load-test"
    _run(
        [
            "evidence",
            "import",
            "--workload",
            "chat-assistant",
            "--provider",
            "llama31-8b-h100-vllm",
            "--plan",
            PLAN,
            "--replicas",
            "1",
            "--measured-at",
            measured,
            "--class",
            f"interactive={load_test / 'interactive.profile_export_aiperf.json'}",
            "--class",
            f"batch={load_test / 'batch.profile_export_aiperf.json'}",
            "--name",
            "chat-assistant-h100-mixed-2026-11",
        ],
        env,
    )


def register_fleet(env: dict[str, str], folder: Path, replicas: int) -> Path:
    """The synthetic fleet's workload and provider registered; its plan as a file."""
    from benchmarks.planner.bench_fleet import synthetic

    plan, workload, provider = synthetic(replicas)
    for kind, record in (("workload", workload), ("provider", provider)):
        path = folder / f"fleet-{kind}.json"
        path.write_text(json.dumps(record.model_dump(mode="json")), encoding="utf-8")
        _run([kind, "submit", str(path)], env)
    path = folder / "fleet-plan.json"
    path.write_text(json.dumps(plan.model_dump(mode="json")), encoding="utf-8")
    return path


def in_process_example(
    database_url: str, runs: int, workers: str | None = None
) -> tuple[float, ...]:
    """The planner's own time on the inputs `plan size` reads from the registry
    (``workers``: CAPGATE_PLANNER_WORKERS for these runs; None: as the environment says)."""
    from registry.gate.context import load_plan_context
    from registry.planner.recomputation import recompute
    from registry.staleness.thresholds import load_thresholds
    from registry.storage.database import Database

    with Database(database_url).reading() as session:
        context = load_plan_context(
            session, plan_ref=PLAN, now=datetime.now(UTC), limits=load_thresholds()
        )
    fresh = [item.model for item in context.evidence if item.freshness.fresh]
    assert fresh, "the example's load test should calibrate the recomputation"
    saved = os.environ.get(WORKERS_ENV)
    if workers is not None:
        os.environ[WORKERS_ENV] = workers
    try:
        return _timed(
            runs,
            lambda: recompute(
                context.plan, context.workload, context.provider, evidence=fresh, seed=0
            ),
        )
    finally:
        if saved is None:
            os.environ.pop(WORKERS_ENV, None)
        else:
            os.environ[WORKERS_ENV] = saved


def in_process_fleet(replicas: int, runs: int) -> tuple[float, ...]:
    from benchmarks.planner.bench_fleet import synthetic
    from registry.planner.recomputation import recompute

    plan, workload, provider = synthetic(replicas)
    return _timed(runs, lambda: recompute(plan, workload, provider, seed=0))


def measure(runs: int, fleet: int) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        pristine = folder / "pristine.db"
        work = folder / "registry.db"
        env = dict(os.environ, CAPGATE_DATABASE_URL=f"sqlite:///{pristine}")
        env.pop("CAPGATE_SERVER", None)
        register_example(env)
        fleet_plan = register_fleet(env, folder, fleet)
        run_env = dict(env, CAPGATE_DATABASE_URL=f"sqlite:///{work}")

        def size(*extra: str) -> Callable[[], object]:
            def once() -> object:
                shutil.copyfile(pristine, work)  # nothing stored yet: the run recomputes
                return _run(["plan", "size", PLAN, *extra], run_env)

            return once

        rows.append(
            Row(
                f"`capgate plan size {PLAN}` (worked example, calibrated)",
                _timed(runs, size()),
                2.0,
            )
        )
        rows.append(
            Row(
                f"`capgate plan size {PLAN} --chart FILE` (as the demo runs it)",
                _timed(runs, size("--chart", str(folder / "plan.png"))),
            )
        )
        rows.append(
            Row(
                "in-process `recompute` of the same inputs",
                in_process_example(env["CAPGATE_DATABASE_URL"], runs),
            )
        )
        rows.append(
            Row(
                f"the same on both cores, forced (`{WORKERS_ENV}=2`)",
                in_process_example(env["CAPGATE_DATABASE_URL"], runs, workers="2"),
            )
        )
        probe = [sys.executable, "-c", IMPORT_PROBE]
        imports = tuple(
            float(subprocess.run(probe, capture_output=True, text=True, check=True).stdout)
            for _ in range(runs)
        )
        rows.append(Row("import of the modules `plan size` loads (fresh process)", imports))
        rows.append(
            Row(
                f"`capgate plan size FILE`, synthetic fleet needing ~{fleet:,} replicas",
                _timed(runs, lambda: _run(["plan", "size", str(fleet_plan)], env)),
                5.0 if fleet >= 1000 else None,
            )
        )
        rows.append(
            Row(
                f"in-process `recompute` of that fleet ({fleet:,})",
                in_process_fleet(fleet, runs),
            )
        )
    return rows


def table(rows: Sequence[Row]) -> str:
    lines = ["| case | runs | median s | min s | max s | target |", "|---|---|---|---|---|---|"]
    for row in rows:
        target = f"< {row.target_s:g} s" if row.target_s is not None else ""
        lines.append(
            f"| {row.case} | {len(row.samples)} | **{row.median:.2f}** | "
            f"{min(row.samples):.2f} | {max(row.samples):.2f} | {target} |"
        )
    return "\n".join(lines)


def section(rows: Sequence[Row], load: tuple[float, float], when: str, reference: float) -> str:
    from registry.planner.version import PLANNER_VERSION

    return "\n".join(
        [
            f"Generated by `python -m benchmarks.planner.bench_command --write` on {when} "
            f"(`{PLANNER_VERSION}`, Python {platform.python_version()}, {os.cpu_count()} cores, "
            f"load average {load[0]:.2f} at the start and {load[1]:.2f} at the end: other "
            f"jobs share the machine; {reference_note(reference)}). Wall time, seed 0; "
            "a command is a fresh process, and "
            "the worked example's registry is a fresh copy each run, so every run recomputes. "
            "The planner runs its independent simulations on the second core only while the "
            "load average stays below the core count (registry/planner/parallel.py); "
            f"{_workers_note(load)}.",
            "",
            table(rows),
        ]
    )


def _workers_note(load: tuple[float, float]) -> str:
    forced = os.environ.get(WORKERS_ENV)
    if forced:
        return f"{WORKERS_ENV}={forced} was set for every run"
    cores = os.cpu_count() or 1
    if max(load) < cores:
        return "at this load the commands used both cores"
    if min(load) >= cores:
        return "at this load the commands ran in one process"
    return "at this load the commands used one or both cores as the load moved"


def render(text: str, generated: str) -> str:
    before, rest = text.split(START, 1)
    _, after = rest.split(END, 1)
    return f"{before}{START}\n{generated}\n{END}{after}"


def main(argv: Sequence[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--fleet", type=int, default=1000, help="ready replicas the fleet needs")
    parser.add_argument("--write", action="store_true", help="rewrite docs/planner.md's block")
    args = parser.parse_args(argv)
    reference = reference_seconds()
    start = os.getloadavg()[0]
    rows = measure(args.runs, args.fleet)
    load = (start, os.getloadavg()[0])
    generated = section(rows, load, datetime.now(UTC).strftime("%Y-%m-%d"), reference)
    print(generated)
    if args.write:
        DOC.write_text(render(DOC.read_text(encoding="utf-8"), generated), encoding="utf-8")
    return generated


if __name__ == "__main__":
    main()
