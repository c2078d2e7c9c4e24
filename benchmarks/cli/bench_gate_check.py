"""One `capgate gate check` in a pipeline, beside `opa eval` of the same policies on the
same input, measured side by side in one run (issue 13's pipeline-speed targets).

    .venv/bin/python -m benchmarks.cli.bench_gate_check [--runs 15] [--write]

A throwaway SQLite registry gets the worked example through a live `capgate` API server
(one uvicorn worker, an API token): workload, provider, plan and its load test, then one
check so the planner's result is stored. The input document of that decision is fetched
(`GET /v1/decisions/{id}/input`) and is what `opa eval` evaluates. Then, as fresh
processes and interleaved round by round so that machine noise falls on all alike:

- `opa eval -d policies/ -i input.json data.capgate.gate.decision` (the reference);
- `capgate gate check PLAN --server URL` (the thin client: one request);
- the same with `--manifests` on the example's manifests (read, then sent);
- `capgate gate check PLAN` on the same registry file (local, embedded engine);
- `capgate --help`;
- a bare Python importing the libraries a locally stored decision cannot do without
  (SQLAlchemy's ORM, pydantic, opa-py-wasm on wasmtime, cryptography's Ed25519): the
  floor under the local check, no capgate code at all.

capgate's own modules are byte-compiled first, as a wheel's are when pip installs it: an
editable install run under PYTHONDONTWRITEBYTECODE (set on some CI images) would
otherwise compile every module from source on every run and measure that instead.

Needs the OPA binary (CAPGATE_OPA_BINARY or the scripts/ci/opa.sh cache). Progress on
stderr; the table on stdout.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from benchmarks.doc_blocks import Measurement, add_write_flag, publish, sqlite_version
from benchmarks.gate.bench_decisions import CACHED_OPA, register_example
from benchmarks.registry.bench_submissions import api_server, sqlite_database
from registry.policy.bundle import policies_root

ROOT = Path(__file__).resolve().parents[2]
CAPGATE = str(ROOT / ".venv" / "bin" / "capgate")
PLAN = "chat-assistant-prod"
# The targets, as multiples of opa eval's median (and seconds for --help).
TARGETS = {"server": 2.0, "local": 4.0}
HELP_TARGET_S = 0.3
BLOCK = "gate-check-pipeline"
# The table's header: tests/docs checks that the page's block has it.
HEADER = "| command | runs | median s | min s | max s | x `opa eval` | target |"
FLOOR_IMPORTS = (
    "import sqlalchemy.orm, pydantic, opapywasm, wasmtime; "
    "from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey"
)


def run_once(command: list[str], env: dict[str, str], want: set[int]) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if result.returncode not in want:
        sys.exit(f"{' '.join(command[:4])} exited {result.returncode}: {result.stderr.strip()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    add_write_flag(parser, BLOCK)
    args = parser.parse_args()
    measurement = Measurement(BLOCK)
    binary = Path(os.environ.get("CAPGATE_OPA_BINARY") or CACHED_OPA)
    if not binary.is_file():
        sys.exit(f"no OPA binary at {binary} (run scripts/ci/opa.sh)")
    for package in ("cli", "registry", "policies"):
        compileall.compile_dir(ROOT / package, quiet=1)
    with sqlite_database() as url, api_server(url, workers=1) as server:
        print("registering the worked example through the API...", file=sys.stderr)
        register_example(server)
        with httpx.Client(base_url=server.url, headers=server.headers, timeout=60) as http:
            decision = http.post("/v1/gate/checks", json={"plan": PLAN}).json()
            if decision["outcome"] != "allow":
                sys.exit(f"the worked example should be allowed: {decision}")
            stored = http.get(f"/v1/decisions/{decision['id']}/input").json()
        folder = Path(url.removeprefix("sqlite:///")).parent
        input_file = folder / "input.json"
        input_file.write_text(json.dumps(stored["input"]))

        token = server.headers["Authorization"].removeprefix("Bearer ")
        env = dict(os.environ, CAPGATE_DATABASE_URL=url, CAPGATE_TOKEN=token)
        env.pop("CAPGATE_SERVER", None)
        commands = {
            "opa": [
                *(str(binary), "eval", "-d", str(policies_root())),
                *("-i", str(input_file), "data.capgate.gate.decision"),
            ],
            "server": [CAPGATE, "gate", "check", PLAN, "--server", server.url],
            "manifests": [
                *(CAPGATE, "gate", "check", PLAN, "--server", server.url),
                *("--manifests", str(ROOT / "examples" / "chat-assistant" / "k8s")),
            ],
            "local": [CAPGATE, "gate", "check", PLAN],
            "help": [CAPGATE, "--help"],
            "floor": [sys.executable, "-c", FLOOR_IMPORTS],
        }
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for command in commands.values():  # warm the page cache and .pyc files
            run_once(command, env, {0})
        for round_ in range(args.runs):
            print(f"round {round_ + 1}/{args.runs}", file=sys.stderr)
            for name, command in commands.items():
                samples[name].append(run_once(command, env, {0}))

    medians = {name: statistics.median(values) for name, values in samples.items()}
    opa = medians["opa"]
    labels = {
        "opa": "`opa eval` of the same policies on the same input",
        "server": "`capgate gate check PLAN --server URL` (thin client)",
        "manifests": "the same with `--manifests examples/chat-assistant/k8s` (its 3 manifests)",
        "local": "`capgate gate check PLAN` (local SQLite, embedded engine)",
        "help": "`capgate --help`",
        "floor": (
            "`python -c 'import sqlalchemy.orm, pydantic, opapywasm, wasmtime, "
            "cryptography (Ed25519)'`"
        ),
    }
    rows = []
    for name, values in samples.items():
        ratio = medians[name] / opa
        if name in TARGETS:
            met = "met" if ratio < TARGETS[name] else "**not met**"
            target = f"< {TARGETS[name]:g}x: {met}"
        elif name == "help":
            met = "met" if medians[name] < HELP_TARGET_S else "**not met**"
            target = f"< {HELP_TARGET_S} s: {met}"
        else:
            target = ""
        rows.append(
            f"| {labels[name]} | {len(values)} | {medians[name]:.3f} | {min(values):.3f} "
            f"| {max(values):.3f} | {ratio:.2f} | {target} |"
        )
    table = "\n".join(
        [
            HEADER,
            "|---|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(table)
    if args.write:
        answer = subprocess.run(
            [str(binary), "version"], capture_output=True, text=True, check=True
        )
        opa_version = answer.stdout.split("\n", 1)[0].removeprefix("Version: ").strip()
        publish(
            measurement,
            table,
            f"{args.runs} rounds of fresh processes interleaved (after one warm-up round), medians",
            [f"OPA {opa_version}", sqlite_version()],
        )


if __name__ == "__main__":
    main()
