"""A local Prometheus holding the worked example's traffic, for the observe demo.

    python -m tests.support.prometheus_demo examples/chat-assistant/workload.yaml

Backfills two hours of the profile's classes, drawn as the planner draws them (at a
tenth of their rates, to stay small), under `namespace="assistant"`, and the same
traffic with every interactive prompt 30 % longer under `namespace="assistant-grown"`;
serves them on a free loopback port. Prints the URL, then the window's end (ISO), one per
line on stdout, and serves until it is stopped (SIGTERM or SIGINT stop Prometheus too).
Progress on stderr. scripts/demo_observe.sh runs it.
"""

from __future__ import annotations

import math
import signal
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import yaml

from registry.records.workload import WorkloadProfile
from tests.support.prometheus import (
    AS_CLAIMED,
    Dataset,
    classes_from_profile,
    find_binaries,
    grow_prompt_p99,
    prometheus_holding,
)


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)


def main() -> None:
    signal.signal(signal.SIGTERM, _stop)
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tests.support.prometheus_demo WORKLOAD.yaml")
    binaries = find_binaries()
    if binaries is None:
        sys.exit("prometheus absent: run scripts/ci/prometheus.sh")
    profile = WorkloadProfile.model_validate(yaml.safe_load(Path(sys.argv[1]).read_text()))
    end = math.floor((time.time() - 120) / 60) * 60
    base = Dataset(
        classes=classes_from_profile(profile, rate_scale=0.1, with_peak=False, latency=AS_CLAIMED),
        duration_s=7200,
        end=end,
        namespace="assistant",
        seed=3,
    )
    grown = replace(
        grow_prompt_p99(base, 1.3, classes=("interactive",)), namespace="assistant-grown"
    )
    print("prometheus_demo: generating and backfilling two hours of traffic", file=sys.stderr)
    with (
        tempfile.TemporaryDirectory(prefix="capgate-demo-prometheus-") as directory,
        prometheus_holding(binaries, (base, grown), Path(directory)) as server,
    ):
        print(server.url, flush=True)
        print(datetime.fromtimestamp(end, UTC).isoformat(), flush=True)
        while True:  # until SIGTERM / SIGINT, which unwind the server's context
            time.sleep(3600)


if __name__ == "__main__":
    main()
