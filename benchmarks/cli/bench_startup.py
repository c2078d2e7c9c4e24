"""Wall time of `capgate --help` and `capgate plan show` (local embedded registry).

Each command runs as a fresh process, as a user or a pipeline would run it; the
worked example is registered first in a throwaway SQLite registry.

    .venv/bin/python -m benchmarks.cli.bench_startup [--runs 20] [--write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.doc_blocks import Measurement, add_write_flag, publish, sqlite_version

ROOT = Path(__file__).resolve().parents[2]
CAPGATE = str(ROOT / ".venv" / "bin" / "capgate")


def timed(args: list[str], env: dict[str, str], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([CAPGATE, *args], env=env, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return samples


BLOCK = "cli-startup"
# The table's header: tests/docs checks that the page's block has it.
HEADER = "| command (local SQLite registry) | runs | median s | p90 s | min s | target s |"
TARGET_S = 0.3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    add_write_flag(parser, BLOCK)
    args = parser.parse_args()
    measurement = Measurement(BLOCK)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, CAPGATE_DATABASE_URL=f"sqlite:///{folder}/registry.db")
        env.pop("CAPGATE_SERVER", None)
        subprocess.run([CAPGATE, "db", "upgrade"], env=env, check=True, capture_output=True)
        for kind in ("workload", "provider", "plan"):
            path = ROOT / "examples" / "chat-assistant" / f"{kind}.yaml"
            subprocess.run(
                [CAPGATE, kind, "submit", str(path)], env=env, check=True, capture_output=True
            )
        for command in (["--help"], ["plan", "show", "chat-assistant-prod"]):
            samples = sorted(timed(command, env, args.runs))
            median = statistics.median(samples)
            met = "met" if median < TARGET_S else "**not met**"
            rows.append(
                f"| `capgate {' '.join(command)}` | {len(samples)} | {median:.3f} "
                f"| {samples[int(0.9 * (len(samples) - 1))]:.3f} | {samples[0]:.3f} "
                f"| < {TARGET_S:g}: {met} |"
            )
    table = "\n".join(
        [
            HEADER,
            "|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(table)
    if args.write:
        publish(
            measurement,
            table,
            f"{args.runs} fresh processes per command, median",
            [sqlite_version()],
        )


if __name__ == "__main__":
    main()
